// Tensor basics: creation, transfer, views, const_set and copies.
#include "wick/tensor.h"

#include <cmath>
#include <cstring>

#include "core/front.h"

namespace wick {

using front::backend;
using front::op_tag;

Tensor::Tensor(std::shared_ptr<Storage> storage, Layout layout, DType dtype, Device device)
    : storage_(std::move(storage)), layout_(std::move(layout)), dtype_(dtype), device_(device) {}

int64_t Tensor::dim(int64_t i) const {
  const int64_t r = static_cast<int64_t>(rank());
  if (i < -r || i >= r) throw ShapeError("[dim] dim " + std::to_string(i) + " out of range for " + str());
  return shape()[static_cast<size_t>(i < 0 ? i + r : i)];
}

std::string Tensor::str() const {
  if (!defined()) return "(undefined)";
  return shape().str() + " " + std::string(dtype_name(dtype_)) + " " + device_.location();
}

// ---- creation -------------------------------------------------------------------------------

namespace {
void check_shape(Op op, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(op_tag(op) + "negative dim in shape " + shape.str());
}
int64_t checked_nbytes(Op op, const Shape& shape, DType dtype) {
  check_shape(op, shape);
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > INT64_MAX / d) throw OutOfMemory(op_tag(op) + "shape " + shape.str() + " overflows int64");
    n *= d;
  }
  if (n > INT64_MAX / dtype_size(dtype)) throw OutOfMemory(op_tag(op) + "shape " + shape.str() + " overflows int64");
  return n * dtype_size(dtype);
}
}  // namespace

Tensor Tensor::empty(const Shape& shape, DType dtype, const Device& device) {
  const int64_t nbytes = checked_nbytes(Op::AllocUninit, shape, dtype);  // before Layout checks the shape
  Backend& b = backend_for(device);
  return Tensor(b.alloc(nbytes), Layout(shape), dtype, device);
}

Tensor Tensor::full(const Shape& shape, Scalar value, DType dtype, const Device& device) {
  check_shape(Op::Full, shape);
  Tensor t = empty(shape, dtype, device);
  t.const_set(value);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, const Device& device) {
  check_shape(Op::Zeros, shape);
  return full(shape, Scalar(0), dtype, device);
}

Tensor Tensor::ones(const Shape& shape, DType dtype, const Device& device) {
  check_shape(Op::Ones, shape);
  return full(shape, Scalar(1), dtype, device);
}

Tensor Tensor::arange(double start, double end, double step, DType dtype, const Device& device) {
  if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(end))
    throw InvalidArgument("[arange] start " + std::to_string(start) + ", end " + std::to_string(end) + ", step " +
                          std::to_string(step) + ": need finite values and a non-zero step");
  const double n = std::ceil((end - start) / step);
  // Checked before the conversion to int64, which is undefined for values out of its range.
  if (!(n < 0x1p62))
    throw OutOfMemory("[arange] start " + std::to_string(start) + ", end " + std::to_string(end) + ", step " +
                      std::to_string(step) + " would make " + std::to_string(n) + " elements");
  const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  Tensor t = empty({count}, dtype, device);
  if (count > 0) backend(t).arange(TensorArg(t), ArangeParams{start, step});
  return t;
}

Tensor Tensor::from_host(const void* data, const Shape& shape, DType dtype, const Device& device) {
  const int64_t nbytes = checked_nbytes(Op::FromHost, shape, dtype);
  if (nbytes > 0 && !data)
    throw InvalidArgument("[from_host] null data for " + shape.str() + " " + std::string(dtype_name(dtype)) + " " +
                          device.location());
  Tensor t = empty(shape, dtype, device);
  if (nbytes > 0) backend(t).copy_from_host(t.storage_->data(), data, nbytes);
  return t;
}

namespace {
// Checked before anything is allocated or drawn from the device's stream.
void check_rand_args(Op op, const Shape& shape, DType dtype, const Device& device) {
  check_shape(op, shape);
  if (!op_defined_for(op, dtype))
    throw DTypeError(op_tag(op) + "not defined for dtype " + std::string(dtype_name(dtype)) + " (shape " + shape.str() +
                     " on " + device.location() + "); use a float dtype");
}
}  // namespace

// See Note [Random streams] in src/backend/philox.h for how elements map to Philox blocks.
Tensor Tensor::rand_uniform(const Shape& shape, DType dtype, double lo, double up, const Device& device) {
  check_rand_args(Op::RandUniform, shape, dtype, device);
  // The kernels compute lo + u * (up - lo) in f64 (f64) or f32 (the other floats), so the span
  // must be finite in that type, or u = 0 would give inf * 0 = NaN.
  const double span = up - lo;
  const bool span_ok = dtype == DType::F64
                           ? std::isfinite(span)
                           : std::isfinite(static_cast<float>(span)) && std::isfinite(static_cast<float>(lo)) &&
                                 std::isfinite(static_cast<float>(up));
  if (!(lo <= up) || !std::isfinite(lo) || !std::isfinite(up) || !span_ok)
    throw InvalidArgument("[rand_uniform] need finite lo <= up with a finite up - lo in the compute type, got lo " +
                          std::to_string(lo) + ", up " + std::to_string(up) + " for " + shape.str() + " " +
                          std::string(dtype_name(dtype)) + " " + device.location());
  Tensor t = empty(shape, dtype, device);
  front::check_op_dtype(Op::RandUniform, t);  // UnsupportedError when the device lacks it
  const uint64_t n = static_cast<uint64_t>(t.numel());
  Backend& b = backend(t);
  const uint64_t per_block = dtype == DType::F64 ? 2 : 4;
  const RandomStream rs = b.take_random((n + per_block - 1) / per_block);
  if (n > 0) b.rand_uniform(TensorArg(t), RandomParams{lo, up, rs});
  return t;
}

Tensor Tensor::rand_normal(const Shape& shape, DType dtype, double mean, double std, const Device& device) {
  check_rand_args(Op::RandNormal, shape, dtype, device);
  if (!(std >= 0) || !std::isfinite(mean) || !std::isfinite(std))
    throw InvalidArgument("[rand_normal] need finite mean and std >= 0, got mean " + std::to_string(mean) + ", std " +
                          std::to_string(std) + " for " + shape.str() + " " + std::string(dtype_name(dtype)) + " " +
                          device.location());
  Tensor t = empty(shape, dtype, device);
  front::check_op_dtype(Op::RandNormal, t);
  const uint64_t n = static_cast<uint64_t>(t.numel());
  Backend& b = backend(t);
  const uint64_t per_block = dtype == DType::F64 ? 2 : 4;  // Note [Random streams]
  const RandomStream rs = b.take_random((n + per_block - 1) / per_block);
  if (n > 0) b.rand_normal(TensorArg(t), RandomParams{mean, std, rs});
  return t;
}

// ---- transfer -------------------------------------------------------------------------------

void Tensor::to_host(void* dst, int64_t nbytes) const {
  front::check_defined(Op::ToHost, *this);
  const int64_t need = numel() * dtype_size(dtype_);
  if (nbytes < need)
    throw InvalidArgument("[to_host] buffer of " + std::to_string(nbytes) + " bytes is too small for " + str() + " (" +
                          std::to_string(need) + " bytes)");
  if (need == 0) return;
  if (!dst) throw InvalidArgument("[to_host] null destination for " + str());
  const Tensor c = contiguous();
  backend(c).copy_to_host(dst, static_cast<const char*>(c.storage_->data()) + c.offset() * dtype_size(dtype_), need);
}

Tensor Tensor::to(const Device& device, bool non_blocking) const {
  front::check_defined(Op::CopyStrided, *this);
  if (device.same_device(device_)) return *this;
  if (device.same_gpu(device_)) {
    // Another handle of the same GPU: one strided copy on the target's stream, after the writer.
    Tensor out = empty(shape(), dtype_, device);
    if (numel() > 0) {
      Backend& b = backend(out);
      storage_->use_on(b);
      b.cast(TensorArg(*this), TensorArg(out));
      if (!non_blocking) b.synchronize();
    }
    return out;
  }
  const Tensor c = contiguous();
  const int64_t nbytes = numel() * dtype_size(dtype_);
  Tensor out = empty(shape(), dtype_, device);
  if (nbytes == 0) return out;
  const void* src = static_cast<const char*>(c.storage_->data()) + c.offset() * dtype_size(dtype_);
  void* dst = out.storage_->data();
  if (device_.is_cpu()) {
    Backend& b = backend(out);
    non_blocking ? b.copy_from_host_async(dst, src, nbytes) : b.copy_from_host(dst, src, nbytes);
    return out;
  }
  if (device.is_cpu()) {
    Backend& b = backend(c);  // on the source's stream, after its writer
    non_blocking ? b.copy_to_host_async(dst, src, nbytes, out.storage_) : b.copy_to_host(dst, src, nbytes);
    return out;
  }
  Backend& b = backend(out);
  if (device.kind() == device_.kind()) {
    c.storage_->use_on(b);  // waits for the writer; c's memory stays until the copy ran
    if (b.copy_from_device(dst, backend(c), src, nbytes)) {
      if (!non_blocking) b.synchronize();
      return out;
    }
  }
  // No direct path (no peer access, or CUDA and ROCm devices): through host memory.
  std::vector<char> host(static_cast<size_t>(nbytes));
  backend(c).copy_to_host(host.data(), src, nbytes);
  b.copy_from_host(dst, host.data(), nbytes);
  return out;
}

Tensor Tensor::to_dtype(DType dtype) const {
  front::check_op_dtype(Op::ToDType, *this);
  Tensor out = front::new_like(*this, shape(), dtype);
  if (numel() > 0) backend(*this).cast(TensorArg(*this), TensorArg(out));
  return out;
}

Tensor Tensor::contiguous() const {
  front::check_defined(Op::CopyStrided, *this);
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  front::check_defined(Op::CopyStrided, *this);
  Tensor out = front::new_like(*this, shape(), dtype_);
  if (numel() > 0) backend(*this).cast(TensorArg(*this), TensorArg(out));
  return out;
}

// ---- views ----------------------------------------------------------------------------------

namespace {
// A dim index (negative counts from the end) checked against `rank`; the error names the tensor.
size_t view_dim(const Tensor& t, int64_t d, size_t rank, const char* op) {
  const int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r)
    throw ShapeError(std::string("[") + op + "] dim " + std::to_string(d) + " out of range for " + t.str());
  return static_cast<size_t>(d < 0 ? d + r : d);
}
}  // namespace

Tensor Tensor::reshape(const Shape& shape_in) const {
  Shape s = shape_in;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw ShapeError("[reshape] more than one -1 in " + shape_in.str());
      infer = static_cast<int>(i);
    } else if (s[i] < 0) {
      throw ShapeError("[reshape] negative dim in " + shape_in.str());
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw ShapeError("[reshape] cannot reshape " + str() + " to " + shape_in.str());
    s[static_cast<size_t>(infer)] = numel() / known;
  }
  if (s.numel() != numel()) throw ShapeError("[reshape] cannot reshape " + str() + " to " + shape_in.str());
  Layout l;
  if (layout_.try_reshape(s, &l)) return Tensor(storage_, l, dtype_, device_);
  const Tensor c = clone();
  return Tensor(c.storage_, Layout(s), dtype_, device_);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t len) const {
  return Tensor(storage_, layout_.narrow(view_dim(*this, d, rank(), "narrow"), start, len), dtype_, device_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return Tensor(storage_,
                layout_.transpose(view_dim(*this, d0, rank(), "transpose"), view_dim(*this, d1, rank(), "transpose")),
                dtype_, device_);
}

Tensor Tensor::t() const {
  if (rank() < 2) throw ShapeError("[transpose] t() needs rank >= 2, got " + str());
  return transpose(-2, -1);
}

Tensor Tensor::permute(const Dims& order) const { return Tensor(storage_, layout_.permute(order), dtype_, device_); }

Tensor Tensor::squeeze(int64_t d) const {
  return Tensor(storage_, layout_.squeeze(view_dim(*this, d, rank(), "squeeze")), dtype_, device_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  return Tensor(storage_, layout_.unsqueeze(view_dim(*this, d, rank() + 1, "unsqueeze")), dtype_, device_);
}

Tensor Tensor::broadcast_as(const Shape& s) const { return Tensor(storage_, layout_.broadcast_as(s), dtype_, device_); }

Tensor Tensor::expand(const Shape& s_in) const {
  Shape s = s_in;
  const size_t lead = s.size() >= rank() ? s.size() - rank() : 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1 && i >= lead) s[i] = shape()[i - lead];
    if (s[i] < 0) throw ShapeError("[expand] cannot expand " + str() + " to " + s_in.str());
  }
  return broadcast_as(s);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  const size_t dd = view_dim(*this, d, rank(), "select");
  const int64_t size = shape()[dd];
  if (index < -size || index >= size)
    throw IndexError("[select] index " + std::to_string(index) + " out of range for dim " + std::to_string(dd) +
                     " of " + str());
  return Tensor(storage_, layout_.select(dd, index < 0 ? index + size : index), dtype_, device_);
}

Tensor Tensor::flatten() const { return reshape({numel()}); }

// ---- in place -------------------------------------------------------------------------------

void Tensor::const_set(Scalar value) {
  front::check_op_dtype(Op::ConstSet, *this);
  if (numel() == 0) return;
  front::before_write(Op::ConstSet, *this);
  backend(*this).const_set(TensorArg(*this), value);
}

void Tensor::copy_from(const Tensor& src_in) {
  front::check_defined(Op::CopyStrided, *this, "destination");
  front::check_defined(Op::CopyStrided, src_in, "source");
  // Another handle of this GPU: read in place (ordered like any op's operand), no copy first.
  Tensor src = src_in.device().same_gpu(device_) ? src_in : src_in.to(device_);
  front::check_same_device(Op::CopyStrided, *this, src);
  if (src.shape() != shape()) {
    try {
      src = src.broadcast_as(shape());
    } catch (const ShapeError&) {
      throw ShapeError("[copy_strided] source " + src_in.str() + " does not broadcast to destination " + str());
    }
  }
  if (numel() == 0) return;
  // A source that shares bytes with this view (x.copy_from(x.t()), a shifted window of the same
  // rows) would be read after some of its elements were written: copy it out first, unless it is
  // this very view.
  const Layout& sl = src.layout();
  const bool same_view = src.dtype() == dtype_ && sl.offset() == layout_.offset() && sl.strides() == layout_.strides();
  if (src.storage() == storage_ && !same_view) {
    const int64_t se = dtype_size(src.dtype()), de = dtype_size(dtype_);
    if (sl.min_index() * se < layout_.max_index_exclusive() * de &&
        layout_.min_index() * de < sl.max_index_exclusive() * se)
      src = src.clone();
  }
  front::before_write(Op::CopyStrided, *this);
  backend(*this).cast(TensorArg(src), TensorArg(*this));
}

}  // namespace wick
