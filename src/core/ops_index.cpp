// Front ends of the index family: index_select, gather, scatter, scatter_add, index_add, matmul,
// cat and copy2d. They check arguments, shape and allocate the outputs; the backends compute.
#include <limits>
#include <string>
#include <vector>

#include "core/front.h"

namespace wick {

using front::backend;
using front::op_tag;

namespace {

std::string num(int64_t v) { return std::to_string(v); }

// The checks every indexing op shares: value dtype for the op, id dtype, one device.
size_t check_index_args(Op op, const Tensor& self, const Tensor& ids, int64_t dim) {
  front::check_op_dtype(op, self);
  front::check_index_dtype(op, ids);
  front::check_same_device(op, self, ids);
  return normalize_dim(dim, self.rank(), std::string(op_name(op)).c_str());
}

void check_rank(Op op, const Tensor& t, size_t rank, const char* what, const Tensor& self) {
  if (t.rank() != rank)
    throw ShapeError(op_tag(op) + what + " " + t.str() + " must have rank " + num(static_cast<int64_t>(rank)) +
                     " (input " + self.str() + ")");
}

// Out-of-place scatter / scatter_add: a fresh copy of self that the backend writes into.
Tensor scatter_impl(Op op, const Tensor& self, const Tensor& ids, const Tensor& src, int64_t dim) {
  const size_t d = check_index_args(op, self, ids, dim);
  front::check_defined(op, src, "src");
  front::check_same_device(op, self, src);
  front::check_same_dtype(op, self, src);
  check_rank(op, ids, self.rank(), "ids", self);
  check_rank(op, src, self.rank(), "src", self);
  for (size_t i = 0; i < self.rank(); ++i)
    if (ids.shape()[i] > src.shape()[i] || (i != d && ids.shape()[i] > self.shape()[i]))
      throw ShapeError(op_tag(op) + "ids " + ids.str() + " larger than src " + src.str() + " or input " + self.str() +
                       " at dim " + num(static_cast<int64_t>(i)));
  Tensor out = self.clone();
  if (ids.numel() > 0)
    backend(self).scatter(TensorArg(out), TensorArg(ids), TensorArg(src), static_cast<int>(d), op == Op::ScatterAdd);
  return out;
}

}  // namespace

Tensor Tensor::index_select(const Tensor& ids, int64_t dim) const {
  const Op op = Op::IndexSelect;
  const size_t d = check_index_args(op, *this, ids, dim);
  check_rank(op, ids, 1, "ids", *this);
  Shape s = shape();
  s[d] = ids.numel();
  Tensor out = front::new_like(*this, s, dtype());
  if (ids.numel() > 0)
    backend(*this).index_select(TensorArg(*this), TensorArg(ids), static_cast<int>(d), TensorArg(out));
  return out;
}

Tensor Tensor::gather(const Tensor& ids, int64_t dim) const {
  const Op op = Op::Gather;
  const size_t d = check_index_args(op, *this, ids, dim);
  check_rank(op, ids, rank(), "ids", *this);
  for (size_t i = 0; i < rank(); ++i)
    if (i != d && ids.shape()[i] > shape()[i])
      throw ShapeError(op_tag(op) + "ids " + ids.str() + " larger than input " + str() + " at dim " +
                       num(static_cast<int64_t>(i)));
  Tensor out = front::new_like(*this, ids.shape(), dtype());
  if (ids.numel() > 0) backend(*this).gather(TensorArg(*this), TensorArg(ids), static_cast<int>(d), TensorArg(out));
  return out;
}

// With repeated targets along dim, which of the values written there survives is unspecified.
Tensor Tensor::scatter(const Tensor& ids, const Tensor& src, int64_t dim) const {
  return scatter_impl(Op::Scatter, *this, ids, src, dim);
}

Tensor Tensor::scatter_add(const Tensor& ids, const Tensor& src, int64_t dim) const {
  return scatter_impl(Op::ScatterAdd, *this, ids, src, dim);
}

Tensor Tensor::index_add(const Tensor& ids, const Tensor& src, int64_t dim) const {
  const Op op = Op::IndexAdd;
  const size_t d = check_index_args(op, *this, ids, dim);
  front::check_defined(op, src, "src");
  front::check_same_device(op, *this, src);
  front::check_same_dtype(op, *this, src);
  check_rank(op, ids, 1, "ids", *this);
  check_rank(op, src, rank(), "src", *this);
  for (size_t i = 0; i < rank(); ++i)
    if (i == d ? src.shape()[i] != ids.numel() : src.shape()[i] != shape()[i])
      throw ShapeError(op_tag(op) + "src " + src.str() + " does not fit input " + str() + " with ids " + ids.str() +
                       " along dim " + num(static_cast<int64_t>(d)));
  Tensor out = clone();
  if (ids.numel() > 0) backend(*this).index_add(TensorArg(out), TensorArg(ids), TensorArg(src), static_cast<int>(d));
  return out;
}

Tensor Tensor::matmul(const Tensor& o) const {
  const Op op = Op::Matmul;
  front::check_op_dtype(op, *this);
  front::check_defined(op, o, "other");
  front::check_same_device(op, *this, o);
  front::check_same_dtype(op, *this, o);
  if (rank() == 0 || o.rank() == 0)
    throw ShapeError(op_tag(op) + "operands must have rank >= 1, got " + str() + " and " + o.str());
  // numpy: a 1-d left operand is a row [1, K], a 1-d right operand a column [K, 1]; the added dim
  // is dropped from the result.
  const Tensor a = rank() == 1 ? unsqueeze(0) : *this;
  const Tensor b = o.rank() == 1 ? o.unsqueeze(1) : o;
  const int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  if (b.dim(-2) != k)
    throw ShapeError(op_tag(op) + "cannot multiply " + str() + " by " + o.str() + ": inner dims " + num(k) + " and " +
                     num(b.dim(-2)) + " differ");
  const Shape ab(a.shape().begin(), a.shape().end() - 2);
  const Shape bb(b.shape().begin(), b.shape().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(ab, bb, "matmul");
  } catch (const ShapeError&) {
    throw ShapeError(op_tag(op) + "batch dims of " + str() + " and " + o.str() + " do not broadcast");
  }
  Shape as = batch, bs = batch, out_shape = batch;
  as.push_back(m);
  as.push_back(k);
  bs.push_back(k);
  bs.push_back(n);
  out_shape.push_back(m);
  out_shape.push_back(n);
  Tensor out = front::new_like(*this, out_shape, dtype());
  if (out.numel() > 0) {
    if (k == 0) {
      out.const_set(Scalar(0));
    } else {
      backend(*this).matmul(TensorArg(a, as), TensorArg(b, bs), TensorArg(out));
    }
  }
  if (o.rank() == 1) out = out.squeeze(-1);
  if (rank() == 1) out = out.squeeze(-2 + (o.rank() == 1 ? 1 : 0));
  return out;
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  const Op op = Op::Cat;
  if (tensors.empty()) throw InvalidArgument(op_tag(op) + "no tensors to concatenate");
  const Tensor& first = tensors[0];
  front::check_op_dtype(op, first);
  const size_t d = normalize_dim(dim, first.rank(), "cat");
  Shape s = first.shape();
  s[d] = 0;
  for (const Tensor& t : tensors) {
    front::check_defined(op, t);
    front::check_same_device(op, first, t);
    front::check_same_dtype(op, first, t);
    bool ok = t.rank() == first.rank();
    for (size_t i = 0; ok && i < t.rank(); ++i) ok = i == d || t.shape()[i] == first.shape()[i];
    if (!ok)
      throw ShapeError(op_tag(op) + "shapes " + first.str() + " and " + t.str() + " differ outside dim " +
                       num(static_cast<int64_t>(d)));
    s[d] += t.shape()[d];
  }
  Tensor out = Tensor::empty(s, first.dtype(), first.device());
  std::vector<TensorArg> srcs, dsts;
  int64_t at = 0;
  for (const Tensor& t : tensors) {
    const int64_t len = t.shape()[d];
    if (t.numel() > 0) {
      srcs.emplace_back(t);
      dsts.emplace_back(out.narrow(static_cast<int64_t>(d), at, len));
    }
    at += len;
  }
  if (!srcs.empty()) backend(out).copy_batch(srcs, dsts);
  return out;
}

namespace {
// Whether [offset, offset + (rows - 1) * stride + cols) lies in [0, numel), without overflow.
bool rows_fit(int64_t rows, int64_t cols, int64_t stride, int64_t offset, int64_t numel) {
  if (rows == 0 || cols == 0) return offset <= numel;
  if (offset > numel || cols > numel - offset) return false;
  const int64_t room = numel - offset - cols;  // what (rows - 1) * stride may span
  return stride == 0 || rows - 1 <= room / stride;
}
}  // namespace

// Rows of dst may not overlap (dst_stride >= cols when rows > 1): the rows are written in parallel.
void copy2d(const Tensor& src, Tensor& dst, int64_t rows, int64_t cols, int64_t src_stride, int64_t dst_stride,
            int64_t src_offset, int64_t dst_offset) {
  const Op op = Op::Copy2d;
  front::check_op_dtype(op, src);
  front::check_defined(op, dst, "destination");
  front::check_same_device(op, dst, src);  // runs on dst's handle
  front::check_same_dtype(op, src, dst);
  const std::string args = "rows " + num(rows) + ", cols " + num(cols) + ", src_stride " + num(src_stride) +
                           ", dst_stride " + num(dst_stride) + ", src_offset " + num(src_offset) + ", dst_offset " +
                           num(dst_offset);
  if (!src.is_contiguous() || !dst.is_contiguous())
    throw ShapeError(op_tag(op) + "src " + src.str() + " and dst " + dst.str() + " must be contiguous");
  if (rows < 0 || cols < 0 || src_stride < 0 || dst_stride < 0 || src_offset < 0 || dst_offset < 0)
    throw ShapeError(op_tag(op) + "negative argument: " + args);
  if (rows > 1 && cols > 0 && dst_stride < cols) throw ShapeError(op_tag(op) + "destination rows overlap: " + args);
  if (!rows_fit(rows, cols, src_stride, src_offset, src.numel()))
    throw ShapeError(op_tag(op) + args + " reaches past the end of src " + src.str());
  if (!rows_fit(rows, cols, dst_stride, dst_offset, dst.numel()))
    throw ShapeError(op_tag(op) + args + " reaches past the end of dst " + dst.str());
  if (rows == 0 || cols == 0) return;
  const Tensor s(src.storage(), Layout({rows, cols}, {src_stride, 1}, src.offset() + src_offset), src.dtype(),
                 src.device());
  const Tensor t(dst.storage(), Layout({rows, cols}, {dst_stride, 1}, dst.offset() + dst_offset), dst.dtype(),
                 dst.device());
  front::before_write(op, dst);
  backend(dst).cast(TensorArg(s), TensorArg(t));
}

}  // namespace wick
