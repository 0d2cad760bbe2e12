// The GPU backend's fences (Note [Cross-stream use] in src/backend/backend.h), device-to-device and
// peer copies, and the stream-ordered host copies of Tensor::to(device, true).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <utility>

#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

// ---- fences ----------------------------------------------------------------------------------

std::shared_ptr<void> GpuBackend::record_fence() {
  enter("fence");
  auto e = std::make_shared<gpu::Event>(ordinal_, /*timing=*/false);
  e->record(stream_);
  return e;
}

void GpuBackend::wait_fence(const std::shared_ptr<void>& fence) {
  if (!fence) return;
  enter("fence");
  stream_.wait(*static_cast<const gpu::Event*>(fence.get()));
}

void GpuBackend::order_native_stream(void* stream) {
  enter("dlpack");
  if (stream == stream_.native()) return;  // one stream: already in order
  gpu::Event e(ordinal_, /*timing=*/false);
  e.record(stream_);
  gpu::stream_wait_native(stream, e);  // the wait is queued; the event may go now
}

void GpuBackend::fence_synchronize(const std::shared_ptr<void>& fence) {
  if (!fence) return;
  enter("fence");
  static_cast<const gpu::Event*>(fence.get())->synchronize();
}

void* GpuBackend::alloc_pinned(int64_t nbytes) {
  enter("alloc_pinned");
  return gpu::host_alloc_pinned(nbytes, ordinal_);
}

void GpuBackend::free_pinned(void* p) noexcept { gpu::host_free_pinned(p); }

void GpuBackend::copy_from_pinned_async(void* dst, const void* src, int64_t nbytes) {
  enter("from_host");
  gpu::memcpy_async(dst, src, nbytes, gpu::CopyKind::HostToDevice, stream_);
}

// ---- device to device ------------------------------------------------------------------------

namespace {

// Whether GPU `dst` can copy from GPU `src` directly; the first call for a pair enables peer
// access both ways (for the synchronous allocator and for both memory pools). Pairs without peer
// access are remembered too, so the question costs one lookup after the first time.
bool peer_ready(int dst, int src) {
  static std::mutex* mu = new std::mutex;
  static std::map<std::pair<int, int>, bool>* known = new std::map<std::pair<int, int>, bool>;
  std::lock_guard<std::mutex> g(*mu);
  const std::pair<int, int> key = std::minmax(dst, src);
  const auto it = known->find(key);
  if (it != known->end()) return it->second;
  const bool ok = gpu::can_access_peer(dst, src) && gpu::can_access_peer(src, dst);
  if (ok) {
    gpu::enable_peer_access(dst, src);
    gpu::enable_peer_access(src, dst);
    shared_state(src).pool.grant_access(dst);
    shared_state(dst).pool.grant_access(src);
  }
  (*known)[key] = ok;
  return ok;
}

}  // namespace

bool GpuBackend::copy_from_device(void* dst, Runtime& from, const void* src, int64_t nbytes) {
  // A backend of the other GPU build (CUDA and ROCm in one process) is not a GpuBackend here.
  const auto* f = dynamic_cast<const GpuBackend*>(&from);
  if (!f) return false;
  if (f->ordinal_ == ordinal_) {
    enter("copy");
    gpu::memcpy_async(dst, src, nbytes, gpu::CopyKind::DeviceToDevice, stream_);
    return true;
  }
  if (!peer_ready(ordinal_, f->ordinal_)) return false;
  enter("copy");
  gpu::memcpy_peer_async(dst, ordinal_, src, f->ordinal_, nbytes, stream_);
  return true;
}

// ---- stream-ordered host copies --------------------------------------------------------------
//
// Note [Pinned staging]
// A copy from pageable host memory is not asynchronous (the runtime stages it and may wait), and
// a copy into pageable memory returns only when it is done. The asynchronous copies therefore go
// through page-locked blocks: to the device, the host copies the source into a block and queues
// the DMA from it; to the host, the DMA fills a block and a host function queued after it copies
// the block into the destination. Either way a host function queued after the copy gives the
// block back, so a block is reused only after the copy that used it has run. Blocks are cached
// (size classes of powers of two, from 64 KiB) and freed by empty_cache.

namespace {

struct Block {
  void* data = nullptr;
  int64_t capacity = 0;
};

class StagingPool {
 public:
  Block take(int64_t nbytes, int device) {
    int64_t cap = int64_t{1} << 16;
    while (cap < nbytes) cap <<= 1;
    {
      std::lock_guard<std::mutex> g(mu_);
      const auto it = free_.find(cap);
      if (it != free_.end()) {
        const Block b{it->second, cap};
        free_.erase(it);
        return b;
      }
    }
    return Block{gpu::host_alloc_pinned(cap, device), cap};
  }
  // Runs in host functions: no runtime call.
  void give(const Block& b) {
    std::lock_guard<std::mutex> g(mu_);
    free_.emplace(b.capacity, b.data);
  }
  void release() {
    std::multimap<int64_t, void*> blocks;
    {
      std::lock_guard<std::mutex> g(mu_);
      blocks.swap(free_);
    }
    for (const auto& [cap, p] : blocks) gpu::host_free_pinned(p);
  }

 private:
  std::mutex mu_;
  std::multimap<int64_t, void*> free_;
};

StagingPool& staging() {
  static StagingPool* pool = new StagingPool;  // never destroyed: host functions may run late
  return *pool;
}

// What a host function queued after an asynchronous copy finishes.
struct HostCopy {
  Block block;
  void* dst = nullptr;  // host destination, for copies to the host
  int64_t nbytes = 0;
  std::shared_ptr<Storage> keep;  // dst's storage, alive until the copy is done
};

void finish_host_copy(void* arg) {
  auto* job = static_cast<HostCopy*>(arg);
  if (job->dst) std::memcpy(job->dst, job->block.data, static_cast<size_t>(job->nbytes));
  staging().give(job->block);
  delete job;  // may free the destination's storage: host memory, no runtime call
}

// Queues the host function that finishes `job` after the copy just queued on `stream`.
void queue_finish(const gpu::Stream& stream, HostCopy* job) {
  try {
    gpu::launch_host_func(stream, &finish_host_copy, job);
  } catch (...) {
    try {
      stream.synchronize("copy");  // the copy has run: finish here
      finish_host_copy(job);
    } catch (...) {
      // The stream faulted: the copy may still touch the block, so it stays out of the pool.
    }
    throw;
  }
}

}  // namespace

void release_staging() { staging().release(); }

void GpuBackend::copy_from_host_async(void* dst, const void* src, int64_t nbytes) {
  refuse_in_capture("from_host");  // the recording would copy from a staging block reused since
  enter("from_host");
  auto* job = new HostCopy{staging().take(nbytes, ordinal_), nullptr, nbytes, nullptr};
  std::memcpy(job->block.data, src, static_cast<size_t>(nbytes));
  try {
    gpu::memcpy_async(dst, job->block.data, nbytes, gpu::CopyKind::HostToDevice, stream_);
  } catch (...) {
    staging().give(job->block);  // nothing was queued
    delete job;
    throw;
  }
  queue_finish(stream_, job);
}

void GpuBackend::copy_to_host_async(void* dst, const void* src, int64_t nbytes, std::shared_ptr<Storage> keep) {
  refuse_in_capture("to_host");
  enter("to_host");
  auto* job = new HostCopy{staging().take(nbytes, ordinal_), dst, nbytes, std::move(keep)};
  try {
    gpu::memcpy_async(job->block.data, src, nbytes, gpu::CopyKind::DeviceToHost, stream_);
  } catch (...) {
    staging().give(job->block);
    delete job;
    throw;
  }
  queue_finish(stream_, job);
}

// ---- pinned slots ----------------------------------------------------------------------------

PinnedSlots::PinnedSlots(GpuBackend& b, int count) : s_(b.stream()), count_(count) {
  b.refuse_in_capture("index check");  // the host would wait for a kernel that is only recorded
  const Block blk = staging().take(count * static_cast<int64_t>(sizeof(unsigned long long)), b.ordinal());
  slots_ = static_cast<unsigned long long*>(blk.data);
  capacity_ = blk.capacity;
  // Written before the kernel is queued: the launch orders these stores before the kernel's.
  for (int i = 0; i < count; ++i) slots_[i] = kPending;
}

PinnedSlots::~PinnedSlots() {
  try {
    if (!read_) s_.synchronize("result");  // a kernel queued to write the slots may still do so
    staging().give(Block{slots_, capacity_});
  } catch (...) {
    // A faulted stream: a kernel may still write the block, so it stays out of the pool.
  }
}

unsigned long long PinnedSlots::wait_least(const char* op) {
  unsigned long long least = kPending;
  for (int i = 0; i < count_; ++i) {
    const std::atomic_ref<unsigned long long> slot(slots_[i]);
    unsigned long long v = slot.load(std::memory_order_acquire);
    // The stream is asked now and then (a few microseconds apart) whether it has faulted, or has
    // finished without writing the slot, which would be a bug in the kernel.
    for (unsigned spin = 1; v == kPending; ++spin) {
      if (spin % 1024 == 0 && s_.query(op)) {
        v = slot.load(std::memory_order_acquire);
        if (v == kPending)
          throw DeviceError(std::string("[") + op + "] a kernel finished without posting its result (" + kBackendName +
                            ":" + std::to_string(s_.device()) + ")");
        break;
      }
      v = slot.load(std::memory_order_acquire);
    }
    least = std::min(least, v);
  }
  read_ = true;
  return least;
}

}  // namespace wick::WICK_GPU_NS
