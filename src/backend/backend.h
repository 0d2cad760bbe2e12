// The backend interface: what every device implements.
//
// The front end (src/core) has already checked shapes, dtypes and devices, broadcast the inputs
// (stride-0 views) and allocated the outputs when it calls a backend method, so a backend method
// only computes. Inputs and outputs are TensorArgs: a base pointer of a storage plus a layout (any
// strides, offset in elements) and a dtype. Outputs allocated by the front end are contiguous, but
// a backend must accept any output layout (const_set and copies write into user views).
//
// Exceptions a backend may raise itself: IndexError for out-of-range ids (checked before anything
// is written), OutOfMemory from alloc, UnsupportedError for an op x dtype it does not implement.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/kernel.h"
#include "wick/layout.h"
#include "wick/memory.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace wick {

class Backend;

// A block of device memory. Freed through its backend when the last Tensor using it goes away.
class Storage {
 public:
  Storage(Backend* backend, void* data, int64_t nbytes) : backend_(backend), data_(data), nbytes_(nbytes) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }
  Backend& backend() const { return *backend_; }

 private:
  Backend* backend_;
  void* data_;
  int64_t nbytes_;
};

struct TensorArg {
  void* data = nullptr;  // base of the storage; element (i0, i1, ...) is at offset + sum(ik * stride_k)
  DType dtype = DType::F32;
  Layout layout;

  TensorArg() = default;
  TensorArg(void* d, DType t, Layout l) : data(d), dtype(t), layout(std::move(l)) {}
  explicit TensorArg(const Tensor& t);
  bool defined() const { return data != nullptr || layout.numel() == 0; }
  const Shape& shape() const { return layout.shape(); }
  int64_t numel() const { return layout.numel(); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data) + layout.offset();
  }
};

// A stream of counter-based random numbers: Philox4x32-10 keyed by `seed`, 128-bit block counter
// starting at `counter`. See Note [Random streams] in src/core/random.h.
struct RandomStream {
  uint64_t seed = 0;
  uint64_t counter = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Device device() const = 0;
  virtual DeviceInfo info() const = 0;
  virtual void synchronize() = 0;
  virtual bool supports_bf16() const { return true; }
  // Whether this backend implements op for dtype (the op table says whether it is defined at all).
  virtual bool implements(Op op, DType dtype) const = 0;

  // ---- memory ----
  virtual void* raw_alloc(int64_t nbytes) = 0;  // throws OutOfMemory
  virtual void raw_free(void* p) = 0;
  std::shared_ptr<Storage> alloc(int64_t nbytes);
  // Contiguous byte copies between host memory and this device's memory.
  virtual void copy_from_host(void* dst, const void* src, int64_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, int64_t nbytes) = 0;
  // Allocator statistics (include/wick/memory.h); backends without them report zeros.
  virtual MemoryStats memory_stats() { return {}; }
  virtual void reset_peak_memory() {}
  virtual void empty_cache() {}
  // Timing marks (wick/timing.h): an opaque point in the device's queue, and the milliseconds
  // between two marks, waiting for the second. The default reads a steady clock after synchronize().
  virtual std::shared_ptr<void> timing_mark();
  virtual double timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop);

  // ---- random generator state (per device) ----
  void set_seed(uint64_t seed);
  // Reserves `blocks` Philox blocks of this device's stream and returns where they start.
  RandomStream take_random(uint64_t blocks);

  // ---- creation ----
  virtual void const_set(const TensorArg& dst, Scalar value) = 0;
  virtual void arange(const TensorArg& dst, double start, double step) = 0;
  virtual void rand_uniform(const TensorArg& dst, double lo, double up, RandomStream rs) = 0;
  virtual void rand_normal(const TensorArg& dst, double mean, double std, RandomStream rs) = 0;

  // ---- elementwise ----
  // op is one of the unary rows of the table or Affine (p0 = mul, p1 = add), Powf (p0), Elu (p0),
  // Clamp (p0 = lo, p1 = hi). src and dst have the same shape and dtype. For Clamp on an integer
  // dtype p0 / p1 carry int64 bit patterns: see Note [Integer clamp bounds] in
  // backend/elementwise_math.h.
  virtual void unary(Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) = 0;
  // Add ... Pow, Eq ... Ge. a and b have dst's shape (broadcast already); comparisons write u8.
  virtual void binary(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) = 0;
  virtual void where_cond(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) = 0;
  // Copy with conversion between any dtypes (equal dtypes: copy_strided). Same shape.
  virtual void cast(const TensorArg& src, const TensorArg& dst) = 0;

  // ---- reductions ----
  // Reduces the last `n_reduced` dims of src into dst, whose shape is src's leading dims.
  // op: Sum, Mean, Min, Max, ArgMin, ArgMax (the last two write i64).
  virtual void reduce(Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) = 0;
  // Over the last dim.
  virtual void softmax(const TensorArg& src, const TensorArg& dst, bool log) = 0;
  virtual void rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps) = 0;
  virtual void layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst,
                          double eps) = 0;
  virtual void cumsum(const TensorArg& src, const TensorArg& dst) = 0;
  // values may be undefined (argsort); indices are i64.
  virtual void sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) = 0;

  // ---- indexing ----
  virtual void index_select(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) = 0;
  virtual void gather(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) = 0;
  // In place into dst (the front end passes a fresh copy): dst[... ids[i] ...] = / += src[... i ...]
  virtual void scatter(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim, bool add) = 0;
  // dst.index_select(ids, dim) += src
  virtual void index_add(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim) = 0;

  // ---- matmul, conv, pooling, resampling ----
  // a [batch..., M, K], b [batch..., K, N] (same batch shape, possibly stride 0), dst [batch..., M, N].
  virtual void matmul(const TensorArg& a, const TensorArg& b, const TensorArg& dst) = 0;
  virtual void conv1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) = 0;
  virtual void conv2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) = 0;
  virtual void conv_transpose1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                                const Conv1dParams& p) = 0;
  virtual void conv_transpose2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                                const Conv2dParams& p) = 0;
  virtual void avg_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) = 0;
  virtual void max_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) = 0;
  virtual void upsample_nearest1d(const TensorArg& x, const TensorArg& dst) = 0;
  virtual void upsample_nearest2d(const TensorArg& x, const TensorArg& dst) = 0;
  virtual void upsample_bilinear2d(const TensorArg& x, const TensorArg& dst, bool align_corners) = 0;
  // x [..., T, D], cos/sin [T, D/2]
  virtual void rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst,
                    bool interleaved) = 0;

  // ---- user kernel modules (wick/kernel.h; the cache is src/core/kernel.cpp) ----
  // The defaults (backend_module.cpp) throw UnsupportedError: only GPU backends run device code.
  // Compiles `source` for this device's own architecture into a loadable image; CompileError
  // carrying the compiler's log.
  virtual std::vector<uint8_t> compile_module_image(const std::string& name, const std::string& source,
                                                    const std::vector<std::string>& options);
  // Loads an image (FormatError when it is none for this device). Releasing the handle waits for
  // the device's queued work, then unloads.
  virtual std::shared_ptr<void> load_module_image(const std::string& name, std::span<const uint8_t> image);
  // The kernel `kernel` of a loaded module, or nullptr when it has none; *param_sizes receives the
  // byte size of each parameter, or nothing when the runtime cannot tell.
  virtual void* module_kernel(const std::shared_ptr<void>& module, const std::string& kernel,
                              std::vector<size_t>* param_sizes);
  // Queues `kernel` on this device's stream; args[i] points at the i-th parameter's value.
  virtual void launch_module_kernel(void* kernel, const LaunchConfig& config, void** args, const char* op);

 private:
  std::mutex rng_mu_;
  uint64_t seed_ = 299792458;
  uint64_t counter_ = 0;
};

// The backend of a device; throws DeviceError when wick was built without it or it is absent.
Backend& backend_for(const Device& device);

// Registration of GPU backends (each GPU build provides these; see src/backend/registry.cpp).
struct GpuBackendProvider {
  const char* name;  // "cuda" / "rocm"
  int (*device_count)();
  Backend* (*get)(int ordinal);
};

}  // namespace wick
