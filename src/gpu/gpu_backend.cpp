// The GPU backend's device, memory and creation entry points (host code; kernels in kernels/*.cu).
#include "gpu/gpu_backend.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace wick::WICK_GPU_NS {

GpuShared::GpuShared(int ordinal)
    : props(gpu::device_properties(ordinal)),
      pool(ordinal),
      cache_limit(props.total_memory > 0 ? std::min(kBlockCacheMax, props.total_memory / 8) : kBlockCacheMax) {}

GpuBackend::GpuBackend(int ordinal, uint32_t id, GpuShared& shared)
    : ordinal_(ordinal), id_(id), shared_(shared), props_(shared.props), stream_(ordinal) {
  auto cache = std::make_unique<BlockCache>();
  cache->stream = &stream_;
  std::lock_guard<std::mutex> g(shared_.mu);
  cache_ = cache.get();
  shared_.caches.push_back(std::move(cache));
}

Device GpuBackend::device() const {
  if (id_ != 0) return Device::handle(kDeviceKind, ordinal_, id_);
  return kDeviceKind == DeviceKind::Cuda ? Device::cuda(ordinal_) : Device::rocm(ordinal_);
}

std::string GpuBackend::location() const {
  std::string s = std::string(kBackendName) + ":" + std::to_string(ordinal_);
  if (id_ != 0) {
    s += '#';  // built with += : GCC 12 warns falsely (-Wrestrict) on "#" + std::string&&
    s += std::to_string(id_);
  }
  return s;
}

kern::LaunchCtx GpuBackend::enter(const char* op) const {
  gpu::set_device(ordinal_);
  // Launchers take the handle for its scratch memory and pinned slots: that is work on the
  // device, not a change of this object, whence the const_cast.
  return kern::LaunchCtx{stream_.native(), props_.multiprocessors,       ordinal_, op, props_.shared_per_block_optin,
                         props_.warp_size, const_cast<GpuBackend*>(this)};
}

DeviceInfo GpuBackend::info() const {
  DeviceInfo i;
  i.name = props_.name;
  i.architecture = props_.architecture;
  i.multiprocessors = props_.multiprocessors;
  i.warp_size = props_.warp_size;
  gpu::memory_info(ordinal_, &i.free_memory, &i.total_memory);
  return i;
}

void GpuBackend::synchronize() {
  refuse_in_capture("synchronize");
  enter("synchronize");
  stream_.synchronize("synchronize");
}

// Every op of the table, for every dtype the table allows: the GPU has no gaps (tests/test_gpu_runtime.cpp
// checks this against the CPU backend, and `wick check` measures it).

// ---- memory ----------------------------------------------------------------------------------

namespace {

// Sizes are rounded up to whole 32-bit words: the sub-word atomics of scatter_add / index_add
// (kernels/index.cuh) update the aligned word that holds an element.
int64_t padded_bytes(int64_t nbytes) { return (nbytes + 3) & ~int64_t{3}; }

}  // namespace

void* GpuBackend::raw_alloc(int64_t nbytes) {
  {
    void* p = nullptr;
    std::lock_guard<std::mutex> g(shared_.mu);
    if (arena_alloc(nbytes, &p)) return p;
  }
  const int64_t padded = padded_bytes(nbytes);
  const int cls = shared_.pool.stream_ordered() ? blocks::class_of(padded) : -1;
  const auto record = [&](void* p) {  // caller holds shared_.mu
    shared_.sizes[p] = nbytes;
    shared_.in_use += nbytes;
    shared_.peak = std::max(shared_.peak, shared_.in_use);
    return p;
  };
  if (cls >= 0) {  // Note [GPU block cache]
    std::lock_guard<std::mutex> g(shared_.mu);
    auto& list = cache_->free[static_cast<size_t>(cls)];
    if (!list.empty()) {
      void* p = list.back();
      list.pop_back();
      cache_->bytes -= blocks::class_bytes(cls);
      return record(p);
    }
  }
  // A block from the cache needs no runtime call; the pool and the fallbacks below do.
  gpu::set_device(ordinal_);
  const int64_t request = cls >= 0 ? blocks::class_bytes(cls) : padded;
  // Larger than the device: out of memory, whatever error code the runtime would pick for it.
  void* p = nbytes <= props_.total_memory ? shared_.pool.allocate(request, stream_) : nullptr;
  if (!p && nbytes <= props_.total_memory) {
    // Blocks cached in this pool cannot serve a larger request; give them back and retry once.
    drain_block_caches();
    stream_.synchronize("alloc");
    shared_.pool.trim(0);
    p = shared_.pool.allocate(request, stream_);
  }
  if (!p) {
    int64_t free_bytes = 0, total = 0;
    gpu::memory_info(ordinal_, &free_bytes, &total);
    int64_t held = 0;
    {
      std::lock_guard<std::mutex> g(shared_.mu);
      held = shared_.in_use;
    }
    throw OutOfMemory("[alloc] cannot allocate " + std::to_string(nbytes) + " bytes on " + location() + ": " +
                      std::to_string(free_bytes) + " bytes free of " + std::to_string(total) + " (wick tensors hold " +
                      std::to_string(held) + " bytes)");
  }
  std::lock_guard<std::mutex> g(shared_.mu);
  return record(p);
}

void GpuBackend::raw_free(void* p) {
  if (!p) return;
  std::shared_ptr<GraphArena> arena;  // dropped after the lock: it may free its memory
  {
    std::lock_guard<std::mutex> g(shared_.mu);
    if (arena_free(p, &arena)) return;
    const auto it = shared_.sizes.find(p);
    if (it != shared_.sizes.end()) {
      const int64_t nbytes = it->second;
      shared_.in_use -= nbytes;
      shared_.sizes.erase(it);
      const int cls = shared_.pool.stream_ordered() ? blocks::class_of(padded_bytes(nbytes)) : -1;
      if (cls >= 0 && cache_->bytes + blocks::class_bytes(cls) <= shared_.cache_limit) {  // Note [GPU block cache]
        cache_->free[static_cast<size_t>(cls)].push_back(p);
        cache_->bytes += blocks::class_bytes(cls);
        return;
      }
    }
  }
  try {
    gpu::set_device(ordinal_);
  } catch (...) {
    // Process exit: the runtime may be gone; the free below is best effort and never throws.
  }
  shared_.pool.deallocate(p, stream_);  // stream-ordered: see Note [GPU stream order]
}

void GpuBackend::drain_block_caches() {
  std::vector<std::pair<const gpu::Stream*, std::vector<void*>>> drained;
  {
    std::lock_guard<std::mutex> g(shared_.mu);
    for (const auto& cache : shared_.caches) {
      std::vector<void*> held;
      for (auto& list : cache->free) {
        held.insert(held.end(), list.begin(), list.end());
        list.clear();
      }
      cache->bytes = 0;
      if (!held.empty()) drained.emplace_back(cache->stream, std::move(held));
    }
  }
  for (const auto& [stream, held] : drained) {
    for (void* b : held) shared_.pool.deallocate(b, *stream);
    stream->synchronize("empty_cache");
  }
}

void GpuBackend::copy_from_host(void* dst, const void* src, int64_t nbytes) {
  refuse_in_capture("from_host");
  enter("from_host");
  gpu::memcpy_sync(dst, src, nbytes, gpu::CopyKind::HostToDevice, stream_);
}

void GpuBackend::copy_to_host(void* dst, const void* src, int64_t nbytes) {
  refuse_in_capture("to_host");
  enter("to_host");
  gpu::memcpy_sync(dst, src, nbytes, gpu::CopyKind::DeviceToHost, stream_);
}

MemoryStats GpuBackend::memory_stats() {
  enter("memory_stats");
  MemoryStats s;
  s.reserved = shared_.pool.stream_ordered() ? shared_.pool.reserved() : 0;
  std::lock_guard<std::mutex> g(shared_.mu);
  s.in_use = shared_.in_use;
  s.peak = shared_.peak;
  s.allocations = static_cast<int64_t>(shared_.sizes.size());
  if (!shared_.pool.stream_ordered()) s.reserved = shared_.in_use;  // the synchronous fallback caches nothing
  return s;
}

void GpuBackend::reset_peak_memory() {
  std::lock_guard<std::mutex> g(shared_.mu);
  shared_.peak = shared_.in_use;
}

void GpuBackend::empty_cache() {
  refuse_in_capture("empty_cache");
  enter("empty_cache");
  drain_block_caches();
  stream_.synchronize("empty_cache");
  shared_.pool.trim(0);
  release_staging();
}

std::shared_ptr<void> GpuBackend::timing_mark() {
  enter("timer");
  auto e = std::make_shared<gpu::Event>(ordinal_);
  e->record(stream_);
  return e;
}

double GpuBackend::timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop) {
  enter("timer");
  const auto* b = static_cast<const gpu::Event*>(stop.get());
  b->synchronize();
  return b->elapsed_ms(*static_cast<const gpu::Event*>(start.get()));
}

// ---- creation and copies ---------------------------------------------------------------------

// ---- provider --------------------------------------------------------------------------------

namespace {

int count() {
  static const int n = gpu::device_count();
  return n;
}

std::mutex& provider_mutex() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}

// Never destroyed, like the backends: Storages held by static Tensors may be freed after static
// destructors ran. Caller holds provider_mutex().
GpuShared& shared_locked(int ordinal) {
  static std::vector<GpuShared*>* all = new std::vector<GpuShared*>(static_cast<size_t>(count()), nullptr);
  GpuShared*& s = (*all)[static_cast<size_t>(ordinal)];
  if (!s) s = new GpuShared(ordinal);
  return *s;
}

Backend* get(int ordinal) {
  static std::vector<GpuBackend*>* backends = new std::vector<GpuBackend*>(static_cast<size_t>(count()), nullptr);
  std::lock_guard<std::mutex> g(provider_mutex());
  GpuBackend*& b = (*backends)[static_cast<size_t>(ordinal)];
  if (!b) b = new GpuBackend(ordinal, 0, shared_locked(ordinal));
  return b;
}

Backend* create(int ordinal, uint32_t id) {
  std::lock_guard<std::mutex> g(provider_mutex());
  return new GpuBackend(ordinal, id, shared_locked(ordinal));
}

}  // namespace

GpuShared& shared_state(int ordinal) {
  std::lock_guard<std::mutex> g(provider_mutex());
  return shared_locked(ordinal);
}

const GpuBackendProvider& provider() {
  static const GpuBackendProvider p{kBackendName, &count, &get, &create};
  return p;
}

}  // namespace wick::WICK_GPU_NS

namespace wick {
const GpuBackendProvider& WICK_GPU_PROVIDER() { return WICK_GPU_NS::provider(); }
}  // namespace wick
