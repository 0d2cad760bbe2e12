#include "backend/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>

#include "wick/error.h"

namespace wick {

// ---- cross-stream use (Note [Cross-stream use]) ---------------------------------------------

namespace {

// Guards every StreamUses. Taken only when a second stream touches a storage.
std::mutex& tracking_mutex() {
  static std::mutex* mu = new std::mutex;  // never destroyed: Storages may die after static destructors
  return *mu;
}

bool tracking_from_env() {
  const char* v = std::getenv("WICK_EVENT_TRACKING");
  if (!v) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "false" || s == "OFF" || s == "FALSE");
}

std::atomic<bool>& tracking_flag() {
  static std::atomic<bool> on{tracking_from_env()};
  return on;
}

bool contains(const std::vector<Backend*>& v, const Backend* b) { return std::find(v.begin(), v.end(), b) != v.end(); }

}  // namespace

void set_event_tracking(bool on) { tracking_flag().store(on, std::memory_order_relaxed); }
bool event_tracking() { return tracking_flag().load(std::memory_order_relaxed); }

StreamUses& Storage::uses() {
  StreamUses* u = uses_.load(std::memory_order_acquire);
  if (!u) {
    u = new StreamUses;
    u->writer = backend_;
    uses_.store(u, std::memory_order_release);
  }
  return *u;
}

void Storage::use_on(Backend& runner) {
  if (&runner == backend_ && !uses_.load(std::memory_order_acquire)) return;  // one stream so far
  std::lock_guard<std::mutex> g(tracking_mutex());
  StreamUses& u = uses();
  if (&runner == u.writer || contains(u.readers, &runner)) return;  // already ordered after the write
  if (!u.written) u.written = u.writer->record_fence();
  runner.wait_fence(u.written);
  u.readers.push_back(&runner);
}

void Storage::before_write(Backend& writer) {
  if (&writer == backend_ && !uses_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> g(tracking_mutex());
  StreamUses& u = uses();
  for (Backend* r : u.readers)
    if (r != &writer) writer.wait_fence(r->record_fence());
  if (u.writer != &writer) writer.wait_fence(u.written ? u.written : u.writer->record_fence());
  u.readers.clear();
  u.written.reset();  // the next reader from another stream takes a fence after this write
  u.writer = &writer;
}

Storage::~Storage() {
  StreamUses* u = uses_.load(std::memory_order_acquire);
  if (u) {
    // The last reference is going: nobody else can touch u. Free after the other streams' uses.
    try {
      for (Backend* r : u->readers)
        if (r != backend_) backend_->wait_fence(r->record_fence());
      if (u->writer != backend_) backend_->wait_fence(u->writer->record_fence());
    } catch (...) {
      // Process exit (the runtime may be gone) or a device fault: the free below is best effort.
    }
    delete u;
  }
  if (data_ && !owner_) backend_->raw_free(data_);
}

TensorArg::TensorArg(const Tensor& t)
    : data(t.defined() ? t.storage()->data() : nullptr), dtype(t.dtype()), layout(t.layout()) {}

TensorArg::TensorArg(const Tensor& t, const Shape& shape)
    : data(t.defined() ? t.storage()->data() : nullptr), dtype(t.dtype()), layout(t.layout().broadcast_as(shape)) {}

std::shared_ptr<Storage> Backend::alloc(int64_t nbytes) {
  void* p = nbytes > 0 ? raw_alloc(nbytes) : nullptr;
  try {
    return std::make_shared<Storage>(this, p, nbytes);
  } catch (...) {
    if (p) raw_free(p);
    throw;
  }
}

void Runtime::set_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(rng_mu_);
  seed_ = seed;
  counter_ = 0;
}

RandomStream Runtime::take_random(uint64_t blocks) {
  std::lock_guard<std::mutex> g(rng_mu_);
  RandomStream rs{seed_, counter_};
  counter_ += blocks;
  return rs;
}

void copy_pairs(Backend& b, std::span<const TensorArg> srcs, std::span<const TensorArg> dsts) {
  for (size_t i = 0; i < srcs.size(); ++i) b.cast(srcs[i], dsts[i]);
}

std::shared_ptr<void> Runtime::timing_mark() {
  synchronize();
  return std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
}

double Runtime::timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop) {
  using Point = std::chrono::steady_clock::time_point;
  return std::chrono::duration<double, std::milli>(*static_cast<Point*>(stop.get()) - *static_cast<Point*>(start.get()))
      .count();
}

void Runtime::begin_capture() { throw UnsupportedError("[graph] " + device().str() + " does not record graphs"); }

std::shared_ptr<void> Runtime::end_capture(bool discard) {
  if (discard) return nullptr;
  throw UnsupportedError("[graph] " + device().str() + " does not record graphs");
}

void Runtime::launch_graph(const std::shared_ptr<void>&) {
  throw UnsupportedError("[graph] " + device().str() + " does not record graphs");
}

// The CPU backend, defined by src/cpu (the interface layer names no backend's header).
Backend& cpu_backend();

#if defined(WICK_HAVE_CUDA)
const GpuBackendProvider& cuda_provider();
#endif
#if defined(WICK_HAVE_ROCM)
const GpuBackendProvider& rocm_provider();
#endif

// nullptr when this build has no backend of that kind.
const GpuBackendProvider* gpu_provider(DeviceKind kind) {
#if defined(WICK_HAVE_CUDA)
  if (kind == DeviceKind::Cuda) return &cuda_provider();
#endif
#if defined(WICK_HAVE_ROCM)
  if (kind == DeviceKind::Rocm) return &rocm_provider();
#endif
  (void)kind;
  return nullptr;
}

namespace {

// The handles made by Device::new_stream, by id (ids are small and dense: one counter).
struct HandleEntry {
  DeviceKind kind = DeviceKind::Cpu;
  int ordinal = 0;
  Backend* backend = nullptr;
};
struct HandleRegistry {
  std::mutex mu;
  std::vector<HandleEntry> by_id;
};

HandleRegistry& handles() {
  static HandleRegistry* r = new HandleRegistry;  // never destroyed, like the backends
  return *r;
}

Backend* find_handle(DeviceKind kind, int ordinal, uint32_t id) {
  HandleRegistry& r = handles();
  std::lock_guard<std::mutex> g(r.mu);
  if (id >= r.by_id.size()) return nullptr;
  const HandleEntry& e = r.by_id[id];
  return e.backend && e.kind == kind && e.ordinal == ordinal ? e.backend : nullptr;
}

}  // namespace

Backend& backend_for(const Device& device) {
  if (device.is_cpu()) return cpu_backend();
  const char* name = device.kind() == DeviceKind::Cuda ? "cuda" : "rocm";
  const GpuBackendProvider* p = gpu_provider(device.kind());
  if (!p)
    throw DeviceError(std::string("[device] ") + device.location() + ": wick was built without the " + name +
                      " backend; configure with -DWICK_" + (device.kind() == DeviceKind::Cuda ? "CUDA" : "ROCM") +
                      "=ON to build it");
  const int n = p->device_count();
  if (device.ordinal() < 0 || device.ordinal() >= n)
    throw DeviceError(std::string("[device] ") + device.location() + ": no such device (" + std::to_string(n) + " " +
                      name + " device" + (n == 1 ? "" : "s") + " present)");
  if (device.id() == 0) return *p->get(device.ordinal());
  Backend* b = find_handle(device.kind(), device.ordinal(), device.id());
  if (!b) throw DeviceError("[device] " + device.location() + ": no such handle (make one with Device::new_stream())");
  return *b;
}

void add_gpu_handle(DeviceKind kind, int ordinal, uint32_t id) {
  const GpuBackendProvider* p = gpu_provider(kind);
  if (!p) throw DeviceError("[device] no GPU backend of this kind in this build");
  Backend* b = p->create(ordinal, id);
  HandleRegistry& r = handles();
  std::lock_guard<std::mutex> g(r.mu);
  if (r.by_id.size() <= id) r.by_id.resize(id + 1);
  r.by_id[id] = HandleEntry{kind, ordinal, b};
}

bool gpu_handle_exists(DeviceKind kind, int ordinal, uint32_t id) {
  const GpuBackendProvider* p = gpu_provider(kind);
  if (!p || ordinal < 0 || ordinal >= p->device_count()) return false;
  return id == 0 || find_handle(kind, ordinal, id) != nullptr;
}

}  // namespace wick
