// QTensor and the front ends of the quantized ops (wick/quant.h): argument checks, the row view the
// backends take (u8 [rows, row_bytes] with one row stride), then the backend call.
#include "wick/quant.h"

#include <cctype>
#include <cstdint>
#include <string>

#include "core/front.h"

namespace wick {

using front::backend;
using front::op_tag;

namespace {

std::string num(int64_t v) { return std::to_string(v); }
std::string fmt_name(QFormat f) { return std::string(qformat_name(f)); }

// The rows a QTensor of `shape` has: every dim but the last.
int64_t rows_of(const Shape& shape) {
  int64_t r = 1;
  for (size_t i = 0; i + 1 < shape.size(); ++i) r *= shape[i];
  return r;
}

// Throws ShapeError unless `shape` can hold blocks of `f`: rank >= 1, dims >= 0, the last dim a
// whole number of blocks, and its byte count representable.
void check_block_shape(const std::string& tag, QFormat f, const Shape& shape, const std::string& what) {
  const QFormatInfo& info = qformat_info(f);
  if (shape.size() == 0) throw ShapeError(tag + fmt_name(f) + " needs rank >= 1, got " + what);
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(tag + "negative dim in " + what);
  if (shape.back() % info.block_elems != 0)
    throw ShapeError(tag + "rows of " + fmt_name(f) + " are whole blocks of " + num(info.block_elems) +
                     " elements; the last dim of " + what + " is " + num(shape.back()));
  const int64_t row_bytes = shape.back() / info.block_elems * info.block_bytes;
  const int64_t rows = rows_of(shape);
  if (rows > 0 && row_bytes > INT64_MAX / rows) throw ShapeError(tag + what + " is too large for " + fmt_name(f));
}

// The byte shape of a QTensor of `shape`: the leading dims, then the row's bytes.
Shape byte_shape(QFormat f, const Shape& shape) {
  Shape s(shape.begin(), shape.end() - 1);
  s.push_back(shape.back() / qformat_info(f).block_elems * qformat_info(f).block_bytes);
  return s;
}

// The bytes as [rows, row_bytes] with one row stride (a view when the leading dims collapse).
Tensor rows_2d(const QTensor& q) { return q.bytes().reshape({q.rows(), q.row_bytes()}); }

std::string dim_error(const QTensor& q, int64_t dim) { return "dim " + num(dim) + " out of range for " + q.str(); }

}  // namespace

std::optional<QFormat> qformat_from_ggml(uint32_t ggml_type) {
  for (QFormat f : kAllQFormats)
    if (qformat_info(f).ggml_type == ggml_type) return f;
  return std::nullopt;
}

QFormat qformat_from_name(std::string_view name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (QFormat f : kAllQFormats)
    if (qformat_name(f) == lower) return f;
  std::string known;
  for (QFormat f : kAllQFormats) known += (known.empty() ? "" : ", ") + fmt_name(f);
  throw DTypeError("[quantize] unknown block format \"" + std::string(name) + "\" (known: " + known + ")");
}

// ---- QTensor ----------------------------------------------------------------------------------

QTensor QTensor::from_bytes(const Tensor& bytes, QFormat format, const Shape& shape) {
  const std::string tag = "[from_bytes] ";
  if (static_cast<int>(format) >= kNumQFormats)
    throw DTypeError(tag + "unknown block format id " + num(static_cast<int>(format)));
  if (!bytes.defined()) throw InvalidArgument(tag + "bytes is an undefined tensor");
  if (bytes.dtype() != DType::U8) throw DTypeError(tag + "bytes must be u8, got " + bytes.str());
  check_block_shape(tag, format, shape, "shape " + shape.str());
  const Shape bs = byte_shape(format, shape);
  if (bytes.shape() == bs) {
    if (bs.back() > 1 && bytes.strides().back() != 1)
      throw ShapeError(tag + "the bytes of a row must be contiguous, got strides " + bytes.strides().str() + " of " +
                       bytes.str());
    return QTensor(bytes, format, shape);
  }
  if (bytes.numel() != bs.numel())
    throw ShapeError(tag + fmt_name(format) + " " + shape.str() + " takes " + num(bs.numel()) + " bytes (" + bs.str() +
                     "), got " + bytes.str());
  if (!bytes.is_contiguous())
    throw ShapeError(tag + "bytes " + bytes.str() + " are not contiguous and not shaped " + bs.str());
  return QTensor(bytes.reshape(bs), format, shape);
}

int64_t QTensor::dim(int64_t i) const {
  const int64_t r = static_cast<int64_t>(rank());
  if (i < -r || i >= r) throw ShapeError("[dim] " + dim_error(*this, i));
  return shape_[static_cast<size_t>(i < 0 ? i + r : i)];
}

int64_t QTensor::rows() const { return rows_of(shape_); }
int64_t QTensor::row_bytes() const { return bytes_.defined() ? bytes_.shape().back() : 0; }

std::string QTensor::str() const {
  if (!defined()) return "(undefined)";
  return shape_.str() + " " + fmt_name(format_) + " " + device().location();
}

QTensor QTensor::to(const Device& device, bool non_blocking) const {
  return QTensor(bytes_.to(device, non_blocking), format_, shape_);
}

QTensor QTensor::narrow(int64_t d, int64_t start, int64_t len) const {
  const int64_t r = static_cast<int64_t>(rank());
  if (d < -r || d >= r) throw ShapeError("[narrow] " + dim_error(*this, d));
  if (d < 0) d += r;
  if (d == r - 1) throw ShapeError("[narrow] the last dim of " + str() + " holds whole rows of blocks; narrow rows");
  Tensor b = bytes_.narrow(d, start, len);
  Shape s = shape_;
  s[static_cast<size_t>(d)] = len;
  return QTensor(std::move(b), format_, std::move(s));
}

QTensor QTensor::select(int64_t d, int64_t index) const {
  const int64_t r = static_cast<int64_t>(rank());
  if (d < -r || d >= r) throw ShapeError("[select] " + dim_error(*this, d));
  if (d < 0) d += r;
  if (d == r - 1) throw ShapeError("[select] the last dim of " + str() + " holds whole rows of blocks; select rows");
  Tensor b = bytes_.select(d, index);
  Shape s;
  for (int64_t i = 0; i < r; ++i)
    if (i != d) s.push_back(shape_[static_cast<size_t>(i)]);
  return QTensor(std::move(b), format_, std::move(s));
}

QTensor QTensor::reshape(const Shape& shape) const {
  const std::string tag = "[reshape] ";
  if (!defined()) throw InvalidArgument(tag + "undefined quantized tensor");
  check_block_shape(tag, format_, shape, "shape " + shape.str());
  if (shape.back() != row_elems() || shape.numel() != numel())
    throw ShapeError(tag + "cannot reshape " + str() + " to " + shape.str() + " (rows keep their length)");
  return QTensor(bytes_.reshape(byte_shape(format_, shape)), format_, shape);
}

QTensor QTensor::contiguous() const { return QTensor(bytes_.contiguous(), format_, shape_); }

Tensor QTensor::dequantize(DType dtype) const {
  const Op op = Op::Dequantize;
  if (!defined()) throw InvalidArgument(op_tag(op) + "undefined quantized tensor");
  if (!op_defined_for(op, dtype))
    throw DTypeError(op_tag(op) + fmt_name(format_) + " decodes to " + front::dtype_names(kQuantFloatTypes) + ", not " +
                     std::string(dtype_name(dtype)) + " (input " + str() + ")");
  if (!backend(bytes_).supports(op, dtype))
    throw UnsupportedError(op_tag(op) + "not implemented on " + device().location() + " (input " + str() + ")");
  Tensor out = Tensor::empty(shape_, dtype, device());
  if (out.numel() > 0) {
    const Tensor src = rows_2d(*this);
    backend(bytes_).dequantize(TensorArg(src), format_, TensorArg(out.reshape({rows(), row_elems()})));
  }
  return out;
}

// ---- ops --------------------------------------------------------------------------------------

QTensor quantize(const Tensor& x, QFormat format) {
  const Op op = Op::Quantize;
  front::check_op_dtype(op, x);
  check_block_shape(op_tag(op), format, x.shape(), x.str());
  const Shape bs = byte_shape(format, x.shape());
  Tensor bytes = Tensor::empty(bs, DType::U8, x.device());
  const int64_t rows = rows_of(x.shape()), k = x.shape().back();
  if (bytes.numel() > 0) {
    const Tensor src = x.contiguous().reshape({rows, k});
    backend(x).quantize(TensorArg(src), format, TensorArg(bytes.reshape({rows, bs.back()})));
  }
  return QTensor::from_bytes(bytes, format, x.shape());
}

Tensor matmul(const Tensor& x, const QTensor& w) {
  const Op op = Op::QMatmul;
  front::check_op_dtype(op, x);
  if (!w.defined()) throw InvalidArgument(op_tag(op) + "weight is an undefined quantized tensor");
  front::check_same_device(op, x, w.bytes());
  if (w.rank() != 2) throw ShapeError(op_tag(op) + "weight must be [n, k], got " + w.str());
  if (x.rank() == 0) throw ShapeError(op_tag(op) + "x must have rank >= 1, got " + x.str());
  const int64_t n = w.dim(0), k = w.dim(1);
  if (x.dim(-1) != k)
    throw ShapeError(op_tag(op) + "cannot multiply " + x.str() + " by " + w.str() + " transposed: inner dims " +
                     num(x.dim(-1)) + " and " + num(k) + " differ");
  Shape out_shape(x.shape().begin(), x.shape().end() - 1);
  out_shape.push_back(n);
  Tensor out = front::new_like(x, out_shape, x.dtype());
  if (out.numel() == 0) return out;
  if (k == 0) {
    out.const_set(Scalar(0));
    return out;
  }
  const int64_t m = x.numel() / k;
  const Tensor xs = x.contiguous().reshape({m, k});
  backend(x).qmatmul(TensorArg(xs), TensorArg(rows_2d(w)), w.format(), TensorArg(out.reshape({m, n})));
  return out;
}

Tensor embedding(const Tensor& ids, const QTensor& w, DType dtype) {
  const Op op = Op::QEmbedding;
  front::check_index_dtype(op, ids);
  if (!w.defined()) throw InvalidArgument(op_tag(op) + "table is an undefined quantized tensor");
  front::check_same_device(op, w.bytes(), ids);
  if (w.rank() != 2) throw ShapeError(op_tag(op) + "table must be [vocab, dim], got " + w.str());
  if (!op_defined_for(op, dtype))
    throw DTypeError(op_tag(op) + "rows decode to " + front::dtype_names(kQuantFloatTypes) + ", not " +
                     std::string(dtype_name(dtype)));
  Tensor picked;
  try {
    picked = w.bytes().index_select(ids.flatten(), 0);
  } catch (const IndexError& e) {
    throw IndexError(op_tag(op) + "ids " + ids.str() + " out of range for the rows of " + w.str() + ": " + e.what());
  }
  const int64_t n = ids.numel();
  Tensor rows = QTensor::from_bytes(picked, w.format(), {n, w.dim(1)}).dequantize(dtype);
  Shape s = ids.shape();
  s.push_back(w.dim(1));
  return rows.reshape(s);
}

}  // namespace wick
