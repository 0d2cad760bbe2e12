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

int64_t Tensor::dim(int64_t i) const { return shape()[normalize_dim(i, rank(), "dim")]; }

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
  Backend& b = backend_for(device);
  return Tensor(b.alloc(checked_nbytes(Op::AllocUninit, shape, dtype)), Layout(shape), dtype, device);
}

Tensor Tensor::full(const Shape& shape, Scalar value, DType dtype, const Device& device) {
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
  const int64_t count = n > 0 ? static_cast<int64_t>(n) : 0;
  Tensor t = empty({count}, dtype, device);
  if (count > 0) backend(t).arange(TensorArg(t), start, step);
  return t;
}

Tensor Tensor::from_host(const void* data, const Shape& shape, DType dtype, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  const int64_t nbytes = t.numel() * dtype_size(dtype);
  if (nbytes > 0) {
    if (!data) throw InvalidArgument("[from_host] null data for shape " + shape.str());
    backend(t).copy_from_host(t.storage_->data(), data, nbytes);
  }
  return t;
}

// See Note [Random streams] in src/core/philox.h for how elements map to Philox blocks.
Tensor Tensor::rand_uniform(const Shape& shape, DType dtype, double lo, double up, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  front::check_op_dtype(Op::RandUniform, t);
  if (!(lo <= up) || !std::isfinite(lo) || !std::isfinite(up))
    throw InvalidArgument("[rand_uniform] need finite lo <= up, got lo " + std::to_string(lo) + ", up " +
                          std::to_string(up));
  const uint64_t n = static_cast<uint64_t>(t.numel());
  Backend& b = backend(t);
  const uint64_t per_block = dtype == DType::F64 ? 2 : 4;
  const RandomStream rs = b.take_random((n + per_block - 1) / per_block);
  if (n > 0) b.rand_uniform(TensorArg(t), lo, up, rs);
  return t;
}

Tensor Tensor::rand_normal(const Shape& shape, DType dtype, double mean, double std, const Device& device) {
  Tensor t = empty(shape, dtype, device);
  front::check_op_dtype(Op::RandNormal, t);
  if (!(std >= 0) || !std::isfinite(mean) || !std::isfinite(std))
    throw InvalidArgument("[rand_normal] need finite mean and std >= 0, got mean " + std::to_string(mean) + ", std " +
                          std::to_string(std));
  const uint64_t n = static_cast<uint64_t>(t.numel());
  Backend& b = backend(t);
  const RandomStream rs = b.take_random((n + 1) / 2);
  if (n > 0) b.rand_normal(TensorArg(t), mean, std, rs);
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
  const Tensor c = contiguous();
  backend(c).copy_to_host(dst, static_cast<const char*>(c.storage_->data()) + c.offset() * dtype_size(dtype_), need);
}

Tensor Tensor::to(const Device& device) const {
  front::check_defined(Op::CopyStrided, *this);
  if (device.same_device(device_)) return *this;
  const Tensor c = contiguous();
  const int64_t nbytes = numel() * dtype_size(dtype_);
  Tensor out = empty(shape(), dtype_, device);
  if (nbytes == 0) return out;
  const void* src = static_cast<const char*>(c.storage_->data()) + c.offset() * dtype_size(dtype_);
  if (device_.is_cpu()) {
    backend(out).copy_from_host(out.storage_->data(), src, nbytes);
  } else if (device.is_cpu()) {
    backend(c).copy_to_host(out.storage_->data(), src, nbytes);
  } else {
    // GPU to GPU through host memory; the GPU backend can replace this with a peer copy.
    std::vector<char> host(static_cast<size_t>(nbytes));
    backend(c).copy_to_host(host.data(), src, nbytes);
    backend(out).copy_from_host(out.storage_->data(), host.data(), nbytes);
  }
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
  return Tensor(storage_, layout_.narrow(normalize_dim(d, rank(), "narrow"), start, len), dtype_, device_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  return Tensor(storage_,
                layout_.transpose(normalize_dim(d0, rank(), "transpose"), normalize_dim(d1, rank(), "transpose")),
                dtype_, device_);
}

Tensor Tensor::t() const {
  if (rank() < 2) throw ShapeError("[transpose] t() needs rank >= 2, got " + str());
  return transpose(-2, -1);
}

Tensor Tensor::permute(const Dims& order) const { return Tensor(storage_, layout_.permute(order), dtype_, device_); }

Tensor Tensor::squeeze(int64_t d) const {
  return Tensor(storage_, layout_.squeeze(normalize_dim(d, rank(), "squeeze")), dtype_, device_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  return Tensor(storage_, layout_.unsqueeze(normalize_dim(d, rank() + 1, "unsqueeze")), dtype_, device_);
}

Tensor Tensor::broadcast_as(const Shape& s) const { return Tensor(storage_, layout_.broadcast_as(s), dtype_, device_); }

Tensor Tensor::expand(const Shape& s_in) const {
  Shape s = s_in;
  const size_t lead = s.size() >= rank() ? s.size() - rank() : 0;
  for (size_t i = lead; i < s.size(); ++i)
    if (s[i] == -1) s[i] = shape()[i - lead];
  return broadcast_as(s);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  const size_t dd = normalize_dim(d, rank(), "select");
  if (index < 0) index += shape()[dd];
  return Tensor(storage_, layout_.select(dd, index), dtype_, device_);
}

Tensor Tensor::flatten() const { return reshape({numel()}); }

// ---- in place -------------------------------------------------------------------------------

void Tensor::const_set(Scalar value) {
  front::check_op_dtype(Op::ConstSet, *this);
  if (numel() > 0) backend(*this).const_set(TensorArg(*this), value);
}

void Tensor::copy_from(const Tensor& src_in) {
  front::check_defined(Op::CopyStrided, *this, "destination");
  front::check_defined(Op::CopyStrided, src_in, "source");
  Tensor src = src_in.to(device_);
  if (src.shape() != shape()) {
    try {
      src = src.broadcast_as(shape());
    } catch (const ShapeError&) {
      throw ShapeError("[copy_strided] source " + src_in.str() + " does not broadcast to destination " + str());
    }
  }
  if (numel() > 0) backend(*this).cast(TensorArg(src), TensorArg(*this));
}

}  // namespace wick
