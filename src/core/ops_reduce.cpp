// Front ends of the reductions, normalisations, scan and sort.
//
// Reductions: the reduced dims (in increasing order, so that argmin/argmax index them flattened
// row-major) are permuted to the end of a view and the backend reduces the last n of them.
// Last-dim ops on another dim get transposed views of the input and of the freshly allocated
// output, so the backend always works on the last dim.
#include <algorithm>
#include <string>
#include <vector>

#include "core/front.h"

namespace wick {
namespace {

bool needs_elements(Op op) { return op == Op::Min || op == Op::Max || op == Op::ArgMin || op == Op::ArgMax; }

std::string dims_str(const std::vector<size_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

// Normalised reduced dims, increasing; an empty `dims` means all dims.
std::vector<size_t> reduced_dims(Op op, const Tensor& x, const Dims& dims) {
  std::vector<size_t> out;
  const std::string t = front::op_tag(op);
  if (dims.empty()) {
    for (size_t d = 0; d < x.rank(); ++d) out.push_back(d);
    return out;
  }
  std::vector<bool> seen(x.rank(), false);
  for (int64_t d : dims) {
    const int64_t r = static_cast<int64_t>(x.rank());
    if (d < -r || d >= r)
      throw ShapeError(t + "dim " + std::to_string(d) + " out of range for input " + x.str() + " (dims " + dims.str() +
                       ")");
    const size_t nd = static_cast<size_t>(d < 0 ? d + r : d);
    if (seen[nd]) throw ShapeError(t + "dim " + std::to_string(d) + " repeated in dims " + dims.str());
    seen[nd] = true;
    out.push_back(nd);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Tensor reduce_op(Op op, const Tensor& x, const Dims& dims, bool keepdim) {
  front::check_op_dtype(op, x);
  const std::vector<size_t> red = reduced_dims(op, x, dims);
  std::vector<bool> is_red(x.rank(), false);
  for (size_t d : red) is_red[d] = true;
  Dims order;
  Shape out_shape, keep_shape;
  int64_t reduced_count = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (is_red[d]) {
      reduced_count *= x.shape()[d];
      keep_shape.push_back(1);
    } else {
      order.push_back(static_cast<int64_t>(d));
      out_shape.push_back(x.shape()[d]);
      keep_shape.push_back(x.shape()[d]);
    }
  }
  for (size_t d : red) order.push_back(static_cast<int64_t>(d));
  if (needs_elements(op) && reduced_count == 0)
    throw ShapeError(front::op_tag(op) + "cannot reduce over zero elements: dims " + dims_str(red) + " of input " +
                     x.str());
  const DType out_dtype = (op == Op::ArgMin || op == Op::ArgMax) ? DType::I64 : x.dtype();
  Tensor out = front::new_like(x, out_shape, out_dtype);
  if (out.numel() > 0)
    front::backend(x).reduce(op, TensorArg(x.permute(order)), static_cast<int>(red.size()), TensorArg(out));
  return keepdim ? out.reshape(keep_shape) : out;
}

// The dim of a last-dim op; a rank-0 input is treated as [1] (dim 0 or -1).
size_t last_dim_op_dim(Op op, const Tensor& x, int64_t dim) {
  const int64_t r = static_cast<int64_t>(std::max<size_t>(x.rank(), 1));
  if (dim < -r || dim >= r)
    throw ShapeError(front::op_tag(op) + "dim " + std::to_string(dim) + " out of range for input " + x.str());
  return static_cast<size_t>(dim < 0 ? dim + r : dim);
}

// A view of t (shaped like the op's input) with `dim` last; a rank-0 tensor becomes [1].
Tensor dim_last(const Tensor& t, size_t dim) {
  if (t.rank() == 0) return t.reshape({1});
  return t.transpose(static_cast<int64_t>(dim), static_cast<int64_t>(t.rank()) - 1);
}

Tensor softmax_op(Op op, const Tensor& x, int64_t dim) {
  front::check_op_dtype(op, x);
  const size_t d = last_dim_op_dim(op, x, dim);
  Tensor out = front::new_like(x, x.shape(), x.dtype());
  if (out.numel() > 0)
    front::backend(x).softmax(TensorArg(dim_last(x, d)), TensorArg(dim_last(out, d)), op == Op::LogSoftmax);
  return out;
}

// Checks a [D] parameter of a norm (undefined = none).
void check_param(Op op, const Tensor& x, const Tensor& p, const char* what) {
  if (!p.defined()) return;
  front::check_same_device(op, x, p);
  if (p.dtype() != x.dtype())
    throw DTypeError(front::op_tag(op) + what + " " + p.str() + " must have the input's dtype (input " + x.str() + ")");
  if (p.rank() != 1 || p.shape()[0] != x.shape().back())
    throw ShapeError(front::op_tag(op) + what + " " + p.str() + " must have shape [" +
                     std::to_string(x.shape().back()) + "] for input " + x.str());
}

void check_norm(Op op, const Tensor& x, double eps) {
  front::check_op_dtype(op, x);
  if (x.rank() == 0) throw ShapeError(front::op_tag(op) + "needs an input of rank >= 1, got " + x.str());
  if (!(eps >= 0)) throw InvalidArgument(front::op_tag(op) + "eps must be >= 0, got " + std::to_string(eps));
}

}  // namespace

Tensor Tensor::sum(const Dims& dims, bool keepdim) const { return reduce_op(Op::Sum, *this, dims, keepdim); }
Tensor Tensor::mean(const Dims& dims, bool keepdim) const { return reduce_op(Op::Mean, *this, dims, keepdim); }
Tensor Tensor::min(const Dims& dims, bool keepdim) const { return reduce_op(Op::Min, *this, dims, keepdim); }
Tensor Tensor::max(const Dims& dims, bool keepdim) const { return reduce_op(Op::Max, *this, dims, keepdim); }
Tensor Tensor::argmin(const Dims& dims, bool keepdim) const { return reduce_op(Op::ArgMin, *this, dims, keepdim); }
Tensor Tensor::argmax(const Dims& dims, bool keepdim) const { return reduce_op(Op::ArgMax, *this, dims, keepdim); }

Tensor Tensor::softmax(int64_t dim) const { return softmax_op(Op::Softmax, *this, dim); }
Tensor Tensor::log_softmax(int64_t dim) const { return softmax_op(Op::LogSoftmax, *this, dim); }

Tensor Tensor::rms_norm(const Tensor& weight, double eps) const {
  check_norm(Op::RmsNorm, *this, eps);
  check_param(Op::RmsNorm, *this, weight, "weight");
  Tensor out = front::new_like(*this, shape(), dtype());
  if (out.numel() > 0)
    front::backend(*this).rms_norm(TensorArg(*this), TensorArg(weight), TensorArg(out), NormParams{eps});
  return out;
}

Tensor Tensor::layer_norm(const Tensor& weight, const Tensor& bias, double eps) const {
  check_norm(Op::LayerNorm, *this, eps);
  check_param(Op::LayerNorm, *this, weight, "weight");
  check_param(Op::LayerNorm, *this, bias, "bias");
  Tensor out = front::new_like(*this, shape(), dtype());
  if (out.numel() > 0)
    front::backend(*this).layer_norm(TensorArg(*this), TensorArg(weight), TensorArg(bias), TensorArg(out),
                                     NormParams{eps});
  return out;
}

Tensor Tensor::cumsum(int64_t dim) const {
  front::check_op_dtype(Op::Cumsum, *this);
  const size_t d = last_dim_op_dim(Op::Cumsum, *this, dim);
  Tensor out = front::new_like(*this, shape(), dtype());
  if (out.numel() > 0) front::backend(*this).cumsum(TensorArg(dim_last(*this, d)), TensorArg(dim_last(out, d)));
  return out;
}

std::pair<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  front::check_op_dtype(Op::Sort, *this);
  const size_t d = last_dim_op_dim(Op::Sort, *this, dim);
  Tensor values = front::new_like(*this, shape(), dtype());
  Tensor indices = front::new_like(*this, shape(), DType::I64);
  if (numel() > 0)
    front::backend(*this).sort(TensorArg(dim_last(*this, d)), TensorArg(dim_last(values, d)),
                               TensorArg(dim_last(indices, d)), descending);
  return {values, indices};
}

Tensor Tensor::argsort(int64_t dim, bool descending) const {
  front::check_op_dtype(Op::Argsort, *this);
  const size_t d = last_dim_op_dim(Op::Argsort, *this, dim);
  Tensor indices = front::new_like(*this, shape(), DType::I64);
  if (numel() > 0)
    front::backend(*this).sort(TensorArg(dim_last(*this, d)), TensorArg(), TensorArg(dim_last(indices, d)), descending);
  return indices;
}

}  // namespace wick
