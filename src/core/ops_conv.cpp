// Front ends of conv, pooling, resampling and rope: argument checks, output shapes, allocation.
// Output sizes follow Note [Conv output sizes] in src/backend/conv_math.h.
#include <string>

#include "backend/conv_math.h"
#include "core/front.h"

namespace wick {

using front::backend;
using front::op_tag;

namespace {

std::string num(int64_t v) { return std::to_string(v); }

template <size_t R>
std::string arr(const std::array<int64_t, R>& a) {
  std::string s = "(";
  for (size_t i = 0; i < R; ++i) s += (i ? ", " : "") + num(a[i]);
  return s + ")";
}

void check_rank(Op op, const Tensor& t, size_t rank, const char* what, const char* layout) {
  if (t.rank() != rank)
    throw ShapeError(op_tag(op) + what + " must be " + std::to_string(rank) + "-d " + layout + ", got " + t.str());
}

// Checks shared by the four convolutions: both operands defined, same dtype and device, the
// dtype in the table, ranks.
void check_conv_operands(Op op, const Tensor& x, const Tensor& w, size_t rank, const char* x_layout,
                         const char* w_layout) {
  front::check_defined(op, x, "input");
  front::check_defined(op, w, "weight");
  front::check_op_dtype(op, x);
  front::check_same_dtype(op, x, w);
  front::check_same_device(op, x, w);
  check_rank(op, x, rank, "input", x_layout);
  check_rank(op, w, rank, "weight", w_layout);
}

// The per-axis parameters of a conv, validated; `axis` is "" for 1-d and " (dim h)" etc. for 2-d.
struct Axis {
  int64_t in, k, s, p, d, op;
};

void check_axis_params(Op op, const Axis& a, bool transposed, const std::string& axis) {
  if (a.s < 1) throw InvalidArgument(op_tag(op) + "stride must be >= 1, got " + num(a.s) + axis);
  if (a.d < 1) throw InvalidArgument(op_tag(op) + "dilation must be >= 1, got " + num(a.d) + axis);
  if (a.p < 0) throw InvalidArgument(op_tag(op) + "padding must be >= 0, got " + num(a.p) + axis);
  if (!transposed) return;
  if (a.op < 0 || (a.op >= a.s && a.op >= a.d))
    throw InvalidArgument(op_tag(op) + "output_padding " + num(a.op) + " must be >= 0 and smaller than stride " +
                          num(a.s) + " or dilation " + num(a.d) + axis);
}

// Output size along one axis (0: an empty output), or a ShapeError naming both operands where it
// is negative (Note [Conv output sizes]).
int64_t conv_axis_out(Op op, const Axis& a, bool transposed, const std::string& axis, const Tensor& x,
                      const Tensor& w) {
  if (a.k < 1) throw ShapeError(op_tag(op) + "weight " + w.str() + " has an empty kernel" + axis);
  if (!transposed) {
    const int64_t padded = a.in + 2 * a.p, span = a.d * (a.k - 1) + 1;
    const int64_t out = convmath::conv_out_size(a.in, a.k, a.s, a.p, a.d);
    if (out < 0)
      throw ShapeError(op_tag(op) + "kernel size " + num(a.k) + " (dilated " + num(span) +
                       ") is larger than the padded input size " + num(padded) + axis + " by more than stride " +
                       num(a.s) + " (output size " + num(out) + "): input " + x.str() + ", weight " + w.str());
    return out;
  }
  const int64_t out = convmath::conv_transpose_out_size(a.in, a.k, a.s, a.p, a.d, a.op);
  if (a.in < 1 || out < 0)
    throw ShapeError(
        op_tag(op) +
        (a.in < 1 ? "input size " + num(a.in) + " is not positive" : "output size " + num(out) + " is negative") +
        axis + " for input " + x.str() + ", weight " + w.str() + ", stride " + num(a.s) + ", padding " + num(a.p) +
        ", dilation " + num(a.d) + ", output_padding " + num(a.op));
  return out;
}

// Channel checks; returns C_out. Forward: w [C_out, C_in/g, ...]; transposed: w [C_in, C_out/g, ...].
int64_t conv_channels(Op op, const Tensor& x, const Tensor& w, int64_t groups, bool transposed) {
  const int64_t c_in = x.dim(1);
  if (groups < 1) throw InvalidArgument(op_tag(op) + "groups must be >= 1, got " + num(groups));
  if (c_in % groups != 0)
    throw ShapeError(op_tag(op) + "input channels " + num(c_in) + " are not divisible by groups " + num(groups) +
                     ": input " + x.str());
  if (!transposed) {
    const int64_t c_out = w.dim(0);
    if (c_out % groups != 0)
      throw ShapeError(op_tag(op) + "output channels " + num(c_out) + " are not divisible by groups " + num(groups) +
                       ": weight " + w.str());
    if (w.dim(1) != c_in / groups)
      throw ShapeError(op_tag(op) + "weight " + w.str() + " needs dim 1 = input channels / groups = " +
                       num(c_in / groups) + " for input " + x.str() + " and groups " + num(groups));
    return c_out;
  }
  if (w.dim(0) != c_in)
    throw ShapeError(op_tag(op) + "weight " + w.str() + " needs dim 0 = input channels " + num(c_in) + " for input " +
                     x.str());
  return w.dim(1) * groups;
}

void check_pool_params(Op op, const Tensor& x, const Pool2dParams& p) {
  for (int i = 0; i < 2; ++i) {
    if (p.kernel[i] < 1 || p.stride[i] < 1 || p.padding[i] < 0)
      throw InvalidArgument(op_tag(op) + "need kernel >= 1, stride >= 1, padding >= 0; got kernel " + arr(p.kernel) +
                            ", stride " + arr(p.stride) + ", padding " + arr(p.padding));
    if (p.padding[i] > p.kernel[i] / 2)
      throw InvalidArgument(op_tag(op) + "padding " + arr(p.padding) + " must be at most half of kernel " +
                            arr(p.kernel));
    const int64_t out = convmath::pool_out_size(x.dim(2 + i), p.kernel[i], p.stride[i], p.padding[i]);
    if (out < 0)
      throw ShapeError(op_tag(op) + "kernel " + arr(p.kernel) + " is larger than the padded input " + x.str() +
                       " by more than stride " + arr(p.stride) + " (padding " + arr(p.padding) + ", output size " +
                       num(out) + ")");
  }
}

Tensor pool2d(Op op, const Tensor& x, const Pool2dParams& p) {
  front::check_op_dtype(op, x);
  check_rank(op, x, 4, "input", "[N, C, H, W]");
  check_pool_params(op, x, p);
  const Shape out_shape{x.dim(0), x.dim(1), convmath::pool_out_size(x.dim(2), p.kernel[0], p.stride[0], p.padding[0]),
                        convmath::pool_out_size(x.dim(3), p.kernel[1], p.stride[1], p.padding[1])};
  Tensor out = front::new_like(x, out_shape, x.dtype());
  if (out.numel() == 0) return out;
  if (op == Op::AvgPool2d) {
    backend(x).avg_pool2d(TensorArg(x), TensorArg(out), p);
  } else {
    backend(x).max_pool2d(TensorArg(x), TensorArg(out), p);
  }
  return out;
}

// Resampling: spatial input sizes and output sizes must be positive (N and C may be 0).
void check_resample(Op op, const Tensor& x, size_t rank, const char* layout, std::initializer_list<int64_t> out) {
  front::check_op_dtype(op, x);
  check_rank(op, x, rank, "input", layout);
  for (size_t d = 2; d < rank; ++d)
    if (x.dim(static_cast<int64_t>(d)) < 1)
      throw ShapeError(op_tag(op) + "spatial input sizes must be positive, got " + x.str());
  for (int64_t o : out)
    if (o < 1) throw InvalidArgument(op_tag(op) + "output sizes must be positive, got " + num(o) + " for " + x.str());
}

Tensor rope_front(Op op, const Tensor& x, const Tensor& cos, const Tensor& sin) {
  front::check_defined(op, x, "input");
  front::check_defined(op, cos, "cos");
  front::check_defined(op, sin, "sin");
  front::check_op_dtype(op, x);
  front::check_same_dtype(op, x, cos);
  front::check_same_dtype(op, x, sin);
  front::check_same_device(op, x, cos);
  front::check_same_device(op, x, sin);
  if (x.rank() < 2) throw ShapeError(op_tag(op) + "input must be [..., T, D] with rank >= 2, got " + x.str());
  const int64_t t = x.dim(-2), d = x.dim(-1);
  if (d % 2 != 0) throw ShapeError(op_tag(op) + "last dim D must be even, got " + x.str());
  const Shape cs{t, d / 2};
  if (cos.shape() != cs || sin.shape() != cs)
    throw ShapeError(op_tag(op) + "cos and sin must be [T, D/2] = " + cs.str() + " for input " + x.str() +
                     ", got cos " + cos.str() + ", sin " + sin.str());
  Tensor out = front::new_like(x, x.shape(), x.dtype());
  if (out.numel() > 0) backend(x).rope(TensorArg(x), TensorArg(cos), TensorArg(sin), TensorArg(out), op == Op::RopeI);
  return out;
}

}  // namespace

Tensor Tensor::conv1d(const Tensor& w, const Conv1dParams& p) const {
  constexpr Op op = Op::Conv1d;
  check_conv_operands(op, *this, w, 3, "[N, C_in, L]", "[C_out, C_in / groups, K]");
  const Axis a{dim(2), w.dim(2), p.stride, p.padding, p.dilation, 0};
  check_axis_params(op, a, false, "");
  const int64_t c_out = conv_channels(op, *this, w, p.groups, false);
  const int64_t l_out = conv_axis_out(op, a, false, "", *this, w);
  Tensor out = front::new_like(*this, {dim(0), c_out, l_out}, dtype());
  if (out.numel() > 0) backend(*this).conv1d(TensorArg(*this), TensorArg(w), TensorArg(out), p);
  return out;
}

Tensor Tensor::conv2d(const Tensor& w, const Conv2dParams& p) const {
  constexpr Op op = Op::Conv2d;
  check_conv_operands(op, *this, w, 4, "[N, C_in, H, W]", "[C_out, C_in / groups, KH, KW]");
  const Axis ah{dim(2), w.dim(2), p.stride[0], p.padding[0], p.dilation[0], 0};
  const Axis aw{dim(3), w.dim(3), p.stride[1], p.padding[1], p.dilation[1], 0};
  check_axis_params(op, ah, false, " (height)");
  check_axis_params(op, aw, false, " (width)");
  const int64_t c_out = conv_channels(op, *this, w, p.groups, false);
  const int64_t h_out = conv_axis_out(op, ah, false, " (height)", *this, w);
  const int64_t w_out = conv_axis_out(op, aw, false, " (width)", *this, w);
  Tensor out = front::new_like(*this, {dim(0), c_out, h_out, w_out}, dtype());
  if (out.numel() > 0) backend(*this).conv2d(TensorArg(*this), TensorArg(w), TensorArg(out), p);
  return out;
}

Tensor Tensor::conv_transpose1d(const Tensor& w, const Conv1dParams& p) const {
  constexpr Op op = Op::ConvTranspose1d;
  check_conv_operands(op, *this, w, 3, "[N, C_in, L]", "[C_in, C_out / groups, K]");
  const Axis a{dim(2), w.dim(2), p.stride, p.padding, p.dilation, p.output_padding};
  check_axis_params(op, a, true, "");
  const int64_t c_out = conv_channels(op, *this, w, p.groups, true);
  const int64_t l_out = conv_axis_out(op, a, true, "", *this, w);
  Tensor out = front::new_like(*this, {dim(0), c_out, l_out}, dtype());
  if (out.numel() > 0) backend(*this).conv_transpose1d(TensorArg(*this), TensorArg(w), TensorArg(out), p);
  return out;
}

Tensor Tensor::conv_transpose2d(const Tensor& w, const Conv2dParams& p) const {
  constexpr Op op = Op::ConvTranspose2d;
  check_conv_operands(op, *this, w, 4, "[N, C_in, H, W]", "[C_in, C_out / groups, KH, KW]");
  const Axis ah{dim(2), w.dim(2), p.stride[0], p.padding[0], p.dilation[0], p.output_padding[0]};
  const Axis aw{dim(3), w.dim(3), p.stride[1], p.padding[1], p.dilation[1], p.output_padding[1]};
  check_axis_params(op, ah, true, " (height)");
  check_axis_params(op, aw, true, " (width)");
  const int64_t c_out = conv_channels(op, *this, w, p.groups, true);
  const int64_t h_out = conv_axis_out(op, ah, true, " (height)", *this, w);
  const int64_t w_out = conv_axis_out(op, aw, true, " (width)", *this, w);
  Tensor out = front::new_like(*this, {dim(0), c_out, h_out, w_out}, dtype());
  if (out.numel() > 0) backend(*this).conv_transpose2d(TensorArg(*this), TensorArg(w), TensorArg(out), p);
  return out;
}

Tensor Tensor::avg_pool2d(const Pool2dParams& p) const { return pool2d(Op::AvgPool2d, *this, p); }

Tensor Tensor::max_pool2d(const Pool2dParams& p) const { return pool2d(Op::MaxPool2d, *this, p); }

Tensor Tensor::upsample_nearest1d(int64_t out_len) const {
  check_resample(Op::UpsampleNearest1d, *this, 3, "[N, C, L]", {out_len});
  Tensor out = front::new_like(*this, {dim(0), dim(1), out_len}, dtype());
  if (out.numel() > 0) backend(*this).upsample_nearest1d(TensorArg(*this), TensorArg(out));
  return out;
}

Tensor Tensor::upsample_nearest2d(int64_t out_h, int64_t out_w) const {
  check_resample(Op::UpsampleNearest2d, *this, 4, "[N, C, H, W]", {out_h, out_w});
  Tensor out = front::new_like(*this, {dim(0), dim(1), out_h, out_w}, dtype());
  if (out.numel() > 0) backend(*this).upsample_nearest2d(TensorArg(*this), TensorArg(out));
  return out;
}

Tensor Tensor::upsample_bilinear2d(int64_t out_h, int64_t out_w, bool align_corners) const {
  check_resample(Op::UpsampleBilinear2d, *this, 4, "[N, C, H, W]", {out_h, out_w});
  Tensor out = front::new_like(*this, {dim(0), dim(1), out_h, out_w}, dtype());
  if (out.numel() > 0) backend(*this).upsample_bilinear2d(TensorArg(*this), TensorArg(out), align_corners);
  return out;
}

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin) { return rope_front(Op::Rope, x, cos, sin); }

Tensor rope_i(const Tensor& x, const Tensor& cos, const Tensor& sin) { return rope_front(Op::RopeI, x, cos, sin); }

}  // namespace wick
