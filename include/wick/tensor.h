// Tensor: a typed, strided view of a storage on one device.
//
// A Tensor is cheap to copy (it shares its storage). Views (narrow, transpose, permute, select,
// squeeze, unsqueeze, broadcast_as, reshape where the strides allow) never copy data; ops return
// new tensors, contiguous unless stated. Every op checks shapes, dtypes and devices first and
// throws a wick::Error subclass naming the op; nothing is written to an output on error.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/layout.h"
#include "wick/ops.h"
#include "wick/shape.h"

namespace wick {

class Storage;

struct Conv1dParams {
  int64_t stride = 1;
  int64_t padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  int64_t output_padding = 0;  // conv_transpose1d only
};

struct Conv2dParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
  std::array<int64_t, 2> output_padding{0, 0};  // conv_transpose2d only
};

struct Pool2dParams {
  std::array<int64_t, 2> kernel{2, 2};
  std::array<int64_t, 2> stride{2, 2};
  std::array<int64_t, 2> padding{0, 0};
  bool count_include_pad = true;  // avg_pool2d: divide by the full window, padding included
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, Layout layout, DType dtype, Device device);
  bool defined() const { return storage_ != nullptr; }
  // The address of the first element (on a GPU, device memory); nullptr when undefined. Work
  // queued on the device may still be writing it: synchronize() before reading it elsewhere.
  void* data_ptr() const;

  // ---- creation -------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype, const Device& device = Device::cpu());  // uninitialised
  static Tensor zeros(const Shape& shape, DType dtype, const Device& device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype, const Device& device = Device::cpu());
  static Tensor full(const Shape& shape, Scalar value, DType dtype, const Device& device = Device::cpu());
  // [start, end) in steps of `step` (any sign, not zero).
  static Tensor arange(double start, double end, double step, DType dtype, const Device& device = Device::cpu());
  // Copies numel(shape) contiguous row-major elements of `dtype` from host memory.
  static Tensor from_host(const void* data, const Shape& shape, DType dtype, const Device& device = Device::cpu());
  // Memory wick did not allocate, as a tensor of `device` without a copy: element (i0, i1, ...) at
  // data + sum(ik * strides[k]) elements (strides >= 0; host memory for the CPU, memory of that GPU
  // otherwise). `release` runs once, after the last tensor viewing it goes (not when this throws).
  // A read-only tensor refuses in-place writes and cannot be an op's output.
  static Tensor from_external(void* data, const Shape& shape, const Strides& strides, DType dtype, const Device& device,
                              std::function<void()> release, bool read_only = false);
  template <class T>
  static Tensor from_vector(const std::vector<T>& v, const Shape& shape, const Device& device = Device::cpu());
  // Uniform in [lo, up) and normal(mean, std) from the device's Philox4x32-10 generator.
  static Tensor rand_uniform(const Shape& shape, DType dtype, double lo, double up,
                             const Device& device = Device::cpu());
  static Tensor rand_normal(const Shape& shape, DType dtype, double mean, double std,
                            const Device& device = Device::cpu());

  // ---- properties -----------------------------------------------------------------------
  const Layout& layout() const { return layout_; }
  const Shape& shape() const { return layout_.shape(); }
  const Strides& strides() const { return layout_.strides(); }
  int64_t offset() const { return layout_.offset(); }
  size_t rank() const { return layout_.rank(); }
  int64_t numel() const { return layout_.numel(); }
  int64_t dim(int64_t i) const;  // negative i counts from the end
  DType dtype() const { return dtype_; }
  const Device& device() const { return device_; }
  bool is_contiguous() const { return layout_.is_contiguous(); }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  // "[2, 3] f32 cpu" (used in error messages)
  std::string str() const;

  // ---- transfer and copies --------------------------------------------------------------
  // Writes numel() elements, contiguous row-major, to host memory of at least `nbytes`.
  void to_host(void* dst, int64_t nbytes) const;
  template <class T>
  std::vector<T> to_vector() const;
  // A copy on `device` (a device or a handle: Note [Device handles] in wick/device.h), or *this
  // when that is this tensor's handle. Any source layout; the result is contiguous. Between two
  // handles of one GPU the copy is a strided copy on the target's stream; between GPUs a peer
  // copy where the hardware allows, else through host memory. The copy always waits for the
  // source's writer and keeps the source's memory until it ran, whatever event tracking says.
  //   non_blocking = false: returns when the copy is complete.
  //   non_blocking = true: the copy is queued and the call returns without waiting for it.
  //     To a GPU: the result is ready in the order of the target handle's stream (ops on it
  //     need no synchronisation); a host source may be modified or released at once (it is
  //     staged through page-locked memory). From a GPU to the CPU: the result's contents are
  //     valid only after source.device().synchronize(); neither read nor write it before. GPUs
  //     without peer access stage through host memory, and the host waits for that.
  Tensor to(const Device& device, bool non_blocking = false) const;
  Tensor to_dtype(DType dtype) const;  // between any two dtypes
  Tensor contiguous() const;           // copies only when not contiguous
  Tensor clone() const;                // always copies

  // ---- views (never copy) ---------------------------------------------------------------
  // Reshape copies only when the strides do not allow a view; one dim may be -1.
  Tensor reshape(const Shape& shape) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t len) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const;  // transpose of the last two dims
  Tensor permute(const Dims& order) const;
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor broadcast_as(const Shape& shape) const;
  Tensor expand(const Shape& shape) const;  // broadcast_as where -1 keeps a dim
  Tensor select(int64_t dim, int64_t index) const;
  Tensor flatten() const;  // reshape to 1-d

  // ---- in place -------------------------------------------------------------------------
  // Sets every element of this (possibly strided) view to `value`.
  void const_set(Scalar value);
  // copy_strided: copies `src` (broadcast to this shape, cast to this dtype, from any device) into
  // this view.
  void copy_from(const Tensor& src);

  // ---- elementwise ----------------------------------------------------------------------
  Tensor affine(double mul, double add) const;  // x * mul + add
  Tensor powf(double exponent) const;
  Tensor elu(double alpha) const;
  Tensor leaky_relu(double negative_slope = 0.01) const;  // x > 0 ? x : negative_slope * x
  Tensor clamp(Scalar lo, Scalar hi) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor neg() const;
  Tensor recip() const;
  Tensor sqr() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor ceil() const;
  Tensor floor() const;
  Tensor round() const;  // half away from zero
  Tensor sign() const;
  Tensor relu() const;
  Tensor gelu() const;  // tanh approximation
  Tensor gelu_erf() const;
  Tensor erf() const;
  Tensor silu() const;
  Tensor sigmoid() const;
  // Binary ops broadcast numpy-style; both operands have the same dtype and device.
  // Integers: add, sub, mul wrap modulo 2^bits; div truncates toward zero, x / 0 gives 0 and
  // INT64_MIN / -1 gives INT64_MIN (never a trap). maximum / minimum propagate NaN.
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor pow(const Tensor& o) const;
  Tensor silu_mul(const Tensor& o) const;  // silu(this) * o (SwiGLU), one op
  // Comparisons give u8 (1 or 0).
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  // this is the condition (an integer dtype; non-zero = true); broadcasts all three.
  Tensor where_cond(const Tensor& on_true, const Tensor& on_false) const;

  // ---- reductions and normalisation -----------------------------------------------------
  // Over any set of dims (an empty set means all dims). argmin/argmax give i64 indices into the
  // reduced dims flattened row-major; the first of equal values wins; NaN wins over numbers.
  Tensor sum(const Dims& dims, bool keepdim = false) const;
  Tensor mean(const Dims& dims, bool keepdim = false) const;
  Tensor min(const Dims& dims, bool keepdim = false) const;
  Tensor max(const Dims& dims, bool keepdim = false) const;
  Tensor argmin(const Dims& dims, bool keepdim = false) const;
  Tensor argmax(const Dims& dims, bool keepdim = false) const;
  Tensor softmax(int64_t dim = -1) const;
  Tensor log_softmax(int64_t dim = -1) const;
  // Over the last dim. `weight` (and `bias`) have shape [last dim]; an undefined tensor means none.
  Tensor rms_norm(const Tensor& weight, double eps) const;
  Tensor layer_norm(const Tensor& weight, const Tensor& bias, double eps) const;
  Tensor cumsum(int64_t dim = -1) const;
  // Sorts along `dim`; returns (values, i64 indices). Stable; NaN sorts as the largest value.
  std::pair<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;

  // ---- indexing (ids of an integer dtype; out-of-range ids throw IndexError) --------------
  Tensor index_select(const Tensor& ids, int64_t dim) const;
  Tensor gather(const Tensor& ids, int64_t dim) const;
  // Out of place: a copy of this with src's values written (or added) at ids along dim.
  Tensor scatter(const Tensor& ids, const Tensor& src, int64_t dim) const;
  Tensor scatter_add(const Tensor& ids, const Tensor& src, int64_t dim) const;
  Tensor index_add(const Tensor& ids, const Tensor& src, int64_t dim) const;

  // ---- linear algebra, conv, pooling, resampling ----------------------------------------
  // [..., M, K] @ [..., K, N] with broadcast batch dims; 1-d operands as in numpy.
  Tensor matmul(const Tensor& o) const;
  // x [N, C_in, L], w [C_out, C_in / groups, K]
  Tensor conv1d(const Tensor& w, const Conv1dParams& p = {}) const;
  // x [N, C_in, H, W], w [C_out, C_in / groups, KH, KW]
  Tensor conv2d(const Tensor& w, const Conv2dParams& p = {}) const;
  // x [N, C_in, L], w [C_in, C_out / groups, K]
  Tensor conv_transpose1d(const Tensor& w, const Conv1dParams& p = {}) const;
  // x [N, C_in, H, W], w [C_in, C_out / groups, KH, KW]
  Tensor conv_transpose2d(const Tensor& w, const Conv2dParams& p = {}) const;
  Tensor avg_pool2d(const Pool2dParams& p) const;
  Tensor max_pool2d(const Pool2dParams& p) const;
  Tensor upsample_nearest1d(int64_t out_len) const;
  Tensor upsample_nearest2d(int64_t out_h, int64_t out_w) const;
  Tensor upsample_bilinear2d(int64_t out_h, int64_t out_w, bool align_corners) const;

 private:
  std::shared_ptr<Storage> storage_;
  Layout layout_;
  DType dtype_ = DType::F32;
  Device device_;
};

// Free-function forms.
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
// Copies `rows` rows of `cols` elements from src to dst, both contiguous; row r starts at element
// src_offset + r * src_stride of src (flat index) and dst_offset + r * dst_stride of dst.
void copy2d(const Tensor& src, Tensor& dst, int64_t rows, int64_t cols, int64_t src_stride, int64_t dst_stride,
            int64_t src_offset, int64_t dst_offset);
// Rotary embeddings for x [..., T, D] with cos, sin [T, D / 2].
// rope: half-split pairs (x[i], x[i + D/2]) as in Llama / GPT-NeoX; rope_i: interleaved pairs
// (x[2i], x[2i+1]) as in the original RoPE and GPT-J.
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin);
Tensor rope_i(const Tensor& x, const Tensor& cos, const Tensor& sin);
// Attention of one new position against a KV cache: a decoder's step, with the cache written
// first. q [H, D] is the new position's queries and k, v [KV, D] its key and value, all f32, with
// H a multiple of KV; k_cache and v_cache [KV, C, D] (f32, f16 or bf16, rows of unit stride) are
// written in place: row `position` of each KV head receives k and v rounded to the cache dtype.
// Returns [H, D] f32 where query head h, reading KV head j = h / (H / KV), is
//   sum_s softmax_s(scale * q_h . k_cache[j, s]) v_cache[j, s]   over s in [0, position].
// A position outside [0, C) raises IndexError. The tensor form takes an i32 tensor of one element,
// which may live on the device: inside a graph capture (wick/graph.h) it is read when the graph
// runs, so one recording serves every position; there it cannot be checked, and a replay with a
// position outside [0, C) writes nothing and returns zeros.
Tensor attention_decode(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache, const Tensor& v_cache,
                        int64_t position, double scale);
Tensor attention_decode(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& position, double scale);
inline Tensor where_cond(const Tensor& c, const Tensor& t, const Tensor& f) { return c.where_cond(t, f); }
inline Tensor matmul(const Tensor& a, const Tensor& b) { return a.matmul(b); }

inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& v, const Shape& shape, const Device& device) {
  if (static_cast<int64_t>(v.size()) != shape.numel())
    throw ShapeError("[from_host] " + std::to_string(v.size()) + " values for shape " + shape.str());
  return from_host(v.data(), shape, dtype_of<T>, device);
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  if (dtype_of<T> != dtype_)
    throw DTypeError("[to_host] asked for " + std::string(dtype_name(dtype_of<T>)) + " from a " + str() + " tensor");
  std::vector<T> out(static_cast<size_t>(numel()));
  to_host(out.data(), numel() * static_cast<int64_t>(sizeof(T)));
  return out;
}

}  // namespace wick
