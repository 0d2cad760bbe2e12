#include "backend/backend.h"

#include <chrono>
#include <string>

#include "cpu/cpu_backend.h"

namespace wick {

Storage::~Storage() {
  if (data_) backend_->raw_free(data_);
}

TensorArg::TensorArg(const Tensor& t)
    : data(t.defined() ? t.storage()->data() : nullptr), dtype(t.dtype()), layout(t.layout()) {}

std::shared_ptr<Storage> Backend::alloc(int64_t nbytes) {
  void* p = nbytes > 0 ? raw_alloc(nbytes) : nullptr;
  try {
    return std::make_shared<Storage>(this, p, nbytes);
  } catch (...) {
    if (p) raw_free(p);
    throw;
  }
}

void Backend::set_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(rng_mu_);
  seed_ = seed;
  counter_ = 0;
}

RandomStream Backend::take_random(uint64_t blocks) {
  std::lock_guard<std::mutex> g(rng_mu_);
  RandomStream rs{seed_, counter_};
  counter_ += blocks;
  return rs;
}

std::shared_ptr<void> Backend::timing_mark() {
  synchronize();
  return std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
}

double Backend::timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop) {
  using Point = std::chrono::steady_clock::time_point;
  return std::chrono::duration<double, std::milli>(*static_cast<Point*>(stop.get()) -
                                                   *static_cast<Point*>(start.get()))
      .count();
}

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

Backend& backend_for(const Device& device) {
  if (device.is_cpu()) return cpu::backend();
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
  return *p->get(device.ordinal());
}

}  // namespace wick
