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

#include <atomic>
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

// Note [Cross-stream use]
// Every GPU handle (Note [Device handles] in wick/device.h) has its own stream, and a storage
// belongs to the handle that allocated it: its memory is allocated and freed stream-ordered on
// that handle's stream. When another handle of the same GPU (or Tensor::to, from any GPU) uses it,
// three orders matter, and wick keeps them with events, never blocking the host:
//   - read after write: the user's stream waits for a fence recorded on the writer's stream after
//     the last write (Storage::use_on);
//   - write after read: an in-place write waits for every other stream that read the storage since
//     the last write (Storage::before_write);
//   - free after use: the owner's stream waits for every other stream that used the storage before
//     the memory goes back to the pool (~Storage).
// Fences are recorded lazily, when the first use by another stream asks for one: a fence taken then
// on the writer's stream comes after the write, since the host issued the write first. Until a
// second stream touches a storage it carries no bookkeeping (a null pointer) and nothing is
// recorded, so single-stream programs pay nothing. The front end calls use_on from
// front::check_same_device (the op's runner is its first tensor) and before_write before in-place
// writes; set_event_tracking(false) makes check_same_device skip use_on.
struct StreamUses {
  Backend* writer = nullptr;      // the stream of the last write (the owner until another writes)
  std::shared_ptr<void> written;  // fence after that write; null until a reader asks for it
  std::vector<Backend*> readers;  // other streams that waited for `written` and read since
};

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

  // Note [Cross-stream use]: orders a read by `runner` after the last write, and a later write or
  // the free after that read. Costs one comparison when runner is the only stream involved.
  void use_on(Backend& runner);
  // Before `writer` writes in place: waits for the other streams' reads and write.
  void before_write(Backend& writer);

 private:
  StreamUses& uses();  // created on first need; caller holds the tracking mutex

  Backend* backend_;
  void* data_;
  int64_t nbytes_;
  std::atomic<StreamUses*> uses_{nullptr};
};

struct TensorArg {
  void* data = nullptr;  // base of the storage; element (i0, i1, ...) is at offset + sum(ik * stride_k)
  DType dtype = DType::F32;
  Layout layout;

  TensorArg() = default;
  TensorArg(void* d, DType t, Layout l) : data(d), dtype(t), layout(std::move(l)) {}
  explicit TensorArg(const Tensor& t);
  // t broadcast to `shape` (Layout::broadcast_as), without an intermediate Tensor.
  TensorArg(const Tensor& t, const Shape& shape);
  bool defined() const { return data != nullptr || layout.numel() == 0; }
  const Shape& shape() const { return layout.shape(); }
  int64_t numel() const { return layout.numel(); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data) + layout.offset();
  }
};

// A rope table (cos or sin, [T, D/2]) seen along x [..., T, D] of rank `rank`: stride 0 on every
// leading dim but T, the table's own strides on T and on the last dim.
inline Strides rope_table_strides(const TensorArg& table, size_t rank) {
  Strides s(rank, 0);
  s[rank - 2] = table.layout.stride(0);
  s[rank - 1] = table.layout.stride(1);
  return s;
}

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

  // ---- streams and transfers (Note [Cross-stream use]) ----
  // A fence after everything queued so far on this backend's stream; nullptr on backends that
  // run synchronously (the CPU), whose work is done when the call returns.
  virtual std::shared_ptr<void> record_fence() { return nullptr; }
  // Makes work queued later on this backend wait for `fence` (from a backend of the same kind,
  // any ordinal) without blocking the host. A null fence is already reached.
  virtual void wait_fence(const std::shared_ptr<void>& fence) { (void)fence; }
  // Queues on this backend a copy of nbytes from src, memory of `from` (the same kind of device,
  // possibly another ordinal), to dst in this device's memory. The caller has ordered it after
  // the source's writer and keeps src alive until it ran. False when the two devices cannot copy
  // directly (no peer access): the caller then stages through host memory.
  virtual bool copy_from_device(void* dst, Backend& from, const void* src, int64_t nbytes) {
    (void)dst, (void)from, (void)src, (void)nbytes;
    return false;
  }
  // Stream-ordered host copies (Tensor::to(device, true)). copy_from_host_async may return before
  // the copy ran, but src may be reused at once. copy_to_host_async may return before dst is
  // written; dst is valid after synchronize(), and `keep` (dst's storage) lives until then. The
  // defaults copy synchronously.
  virtual void copy_from_host_async(void* dst, const void* src, int64_t nbytes) { copy_from_host(dst, src, nbytes); }
  virtual void copy_to_host_async(void* dst, const void* src, int64_t nbytes, std::shared_ptr<Storage> keep) {
    (void)keep;
    copy_to_host(dst, src, nbytes);
  }

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
  // srcs[i] copied into dsts[i], pair by pair of one dtype and shape, the dsts not overlapping (cat's
  // inputs into their slices of the output). The default runs one copy per pair.
  virtual void copy_batch(std::span<const TensorArg> srcs, std::span<const TensorArg> dsts);

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

// The backend of a device handle; throws DeviceError when wick was built without it or it is
// absent.
Backend& backend_for(const Device& device);
// Makes the backend of a new handle `id` of GPU (kind, ordinal) (Device::new_stream).
void add_gpu_handle(DeviceKind kind, int ordinal, uint32_t id);
// Whether handle `id` of GPU (kind, ordinal) exists (id 0 does when the GPU does).
bool gpu_handle_exists(DeviceKind kind, int ordinal, uint32_t id);

// Registration of GPU backends (each GPU build provides these; see backend_for in backend.cpp).
struct GpuBackendProvider {
  const char* name;  // "cuda" / "rocm"
  int (*device_count)();
  Backend* (*get)(int ordinal);  // the default handle, made on first use, never destroyed
  // A new handle of GPU `ordinal` with its own stream, sharing the default handle's memory pool;
  // never destroyed (Storages of static Tensors may outlive static destructors).
  Backend* (*create)(int ordinal, uint32_t id);
};

}  // namespace wick
