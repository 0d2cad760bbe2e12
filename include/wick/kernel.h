// User kernels: modules of device code compiled at run time (NVRTC on CUDA, hipRTC on ROCm) or
// loaded from a binary image, and CustomOp, which launches one of their kernels on wick tensors.
//
//   const char* src = R"(
//     extern "C" __global__ void axpb(float* y, const float* x, float a, float b, long long n) {
//       long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
//       if (i < n) y[i] = a * x[i] + b;
//     })";
//   wick::Module m = wick::compile_module(dev, "axpb", src);   // cached per device by name
//   wick::CustomOp axpb(m, "axpb");
//   Tensor x = ..., y = Tensor::empty(x.shape(), DType::F32, dev);
//   axpb(wick::LaunchConfig::linear(x.numel()), y, x, 2.0f, 1.0f, x.numel());
//
// One source serves both GPU builds when it keeps to the common syntax: extern "C" __global__
// functions, blockIdx / blockDim / threadIdx, built-in types (long long, not int64_t: neither
// compiler includes a standard header unless told to).
//
// Note [Kernel module cache]
// Modules are cached per device, keyed by name. compile_module and load_module return the cached
// module when the name is known and the request is the same (same source and options, or the same
// image bytes): no second compile, no second load, and the `hits` counter rises. Concurrent first
// requests for one name compile once; the others wait for that result. A request with a known name
// but a different source or image throws InvalidArgument rather than replacing the module: two
// parts of a program choosing the same name would otherwise swap each other's kernels unseen. To
// replace a module on purpose, evict_module(device, name) and compile again. A failed compile or
// load caches nothing.
//
// Ownership: a Module is a shared handle. The code stays loaded while the cache or any Module or
// CustomOp refers to it; unloading (after evict_module and the last handle) first waits for the
// device's queued work.
//
// Stream order: a launch is queued on the device's stream like every wick op (Note [GPU stream
// order] in src/gpu/gpu_backend.h), after the ops issued before it and before those issued after
// it, and returns without waiting. A tensor passed to a launch may be dropped right after the call:
// its memory returns to the pool stream-ordered, after the kernel.
//
// Arguments: a Tensor is passed as a device pointer to its first element (storage + offset); the
// kernel sees raw memory, so pass a contiguous tensor or pass its strides as int64 scalars.
// Scalars are passed by exact width: int32_t, int64_t (long long in the kernel), float, double;
// other C++ types do not compile (pick the width explicitly). Where the runtime reports the
// kernel's parameter sizes (CUDA with a 12.4+ driver) a count or size mismatch throws
// InvalidArgument; elsewhere the caller must match the kernel's signature.
//
// On the CPU device compile_module, load_module and compile_to_image throw UnsupportedError (its
// cache stays empty: module_cache_stats gives zeros). A build without the GPU backend cannot name a
// GPU device (Device::cuda() throws DeviceError).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/error.h"
#include "wick/tensor.h"

namespace wick {

// A run-time compilation failed; the message holds the compiler's log.
class CompileError : public Error {
 public:
  explicit CompileError(const std::string& msg) : Error(msg) {}
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  Dim3() = default;
  Dim3(uint32_t x_, uint32_t y_ = 1, uint32_t z_ = 1) : x(x_), y(y_), z(z_) {}  // NOLINT: implicit by design
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  uint32_t shared_bytes = 0;  // dynamic shared memory per block
  // One thread per element of n, `block` threads per block. Throws InvalidArgument when the grid
  // would need more than 2^31 - 1 blocks.
  static LaunchConfig linear(int64_t n, uint32_t block = 256);
};

// One argument of a kernel launch. Built implicitly from a Tensor or a scalar of exact width.
class KernelArg {
 public:
  enum class Kind : uint8_t { Tensor, I32, I64, F32, F64 };

  KernelArg(const Tensor& t) : kind_(Kind::Tensor), tensor_(t) {}  // NOLINT: implicit by design
  KernelArg(int32_t v) : kind_(Kind::I32) { value_.i32 = v; }      // NOLINT
  KernelArg(int64_t v) : kind_(Kind::I64) { value_.i64 = v; }      // NOLINT
  KernelArg(float v) : kind_(Kind::F32) { value_.f32 = v; }        // NOLINT
  KernelArg(double v) : kind_(Kind::F64) { value_.f64 = v; }       // NOLINT
  // Any other type (bool, unsigned, long long, size_t, ...): choose one of the widths above.
  template <class T>
  KernelArg(T) = delete;

  Kind kind() const { return kind_; }
  const Tensor& tensor() const { return tensor_; }
  // The scalar's bytes (not meaningful for a tensor) and the size the kernel parameter must have.
  const void* scalar() const { return &value_; }
  size_t size() const;

 private:
  Kind kind_;
  Tensor tensor_;
  union {
    int32_t i32;
    int64_t i64;
    float f32;
    double f64;
  } value_{};
};

// A loaded module of device code on one device. Cheap to copy (a shared handle).
class Module {
 public:
  struct Impl;  // src/core/kernel.cpp
  Module() = default;
  explicit Module(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  const std::string& name() const;
  const Device& device() const;
  bool has_kernel(const std::string& kernel) const;
  // The same loaded module (a cache hit returns the same one).
  bool operator==(const Module& o) const { return impl_ == o.impl_; }
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// Compiles `source` for the device's own architecture and loads it, or returns the cached module
// of that name (Note [Kernel module cache]). `options` go to the compiler as they are (e.g.
// "-DBLOCK=128"). CompileError with the log when the source does not compile.
Module compile_module(const Device& device, const std::string& name, const std::string& source,
                      const std::vector<std::string>& options = {});
// Loads a binary image (cubin, fatbin or PTX text on CUDA; code object on ROCm), or returns the
// cached module of that name. FormatError when the image is not loadable on the device.
Module load_module(const Device& device, const std::string& name, std::span<const uint8_t> image);
// Compiles without loading or caching: the image load_module takes, for the device's architecture.
std::vector<uint8_t> compile_to_image(const Device& device, const std::string& name, const std::string& source,
                                      const std::vector<std::string>& options = {});
// Drops `name` from the device's cache; handles already given out stay valid. False if absent.
bool evict_module(const Device& device, const std::string& name);

struct ModuleCacheStats {
  int64_t hits = 0;      // compile_module / load_module requests served from the cache
  int64_t loads = 0;     // images loaded onto the device (by load_module and by compile_module)
  int64_t compiles = 0;  // run-time compilations (compile_module misses and compile_to_image)
  int64_t modules = 0;   // modules in the cache now
};
// Counters since the process started; zeros on a device whose cache was never used.
ModuleCacheStats module_cache_stats(const Device& device);

// A kernel of a module, looked up once, launched on wick tensors:
//   CustomOp op(m, "axpb");
//   op(LaunchConfig{{blocks}, {256}}, y, x, 2.0f, 1.0f, n);
class CustomOp {
 public:
  // InvalidArgument when the module has no kernel of that name.
  CustomOp(const Module& module, const std::string& kernel);

  template <class... Args>
  void operator()(const LaunchConfig& config, const Args&... args) const {
    const std::array<KernelArg, sizeof...(Args)> list{KernelArg(args)...};
    launch(config, std::span<const KernelArg>(list.data(), list.size()));
  }
  // Checks every tensor argument (defined, on the module's device) and the parameter sizes where
  // known, then queues the kernel on the device's stream. DeviceError for a tensor elsewhere,
  // InvalidArgument for the rest.
  void launch(const LaunchConfig& config, std::span<const KernelArg> args) const;

  const Module& module() const { return module_; }
  const std::string& kernel() const { return kernel_; }

 private:
  Module module_;
  std::string kernel_;
  void* fn_ = nullptr;               // valid while module_ holds the code
  std::vector<size_t> param_sizes_;  // empty: unknown
};

// One-off launch: CustomOp(module, kernel)(config, args...).
template <class... Args>
void launch(const Module& module, const std::string& kernel, const LaunchConfig& config, const Args&... args) {
  CustomOp(module, kernel)(config, args...);
}

}  // namespace wick
