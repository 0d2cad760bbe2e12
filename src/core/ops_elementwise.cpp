// Front ends of the elementwise ops: checks, broadcasting, output allocation. The backends compute
// (CpuBackend: src/cpu/elementwise*.cpp; math in src/backend/elementwise_math.h).
#include <cmath>
#include <limits>

#include "backend/dispatch.h"
#include "core/front.h"

namespace wick {

namespace {

Tensor unary_op(Op op, const Tensor& x, const UnaryParams& p = {}) {
  front::check_op_dtype(op, x);
  Tensor out = front::new_like(x, x.shape(), x.dtype());
  if (out.numel() > 0) front::backend(x).unary(op, p, TensorArg(x), TensorArg(out));
  return out;
}

bool is_comparison(Op op) {
  return op == Op::Eq || op == Op::Ne || op == Op::Lt || op == Op::Le || op == Op::Gt || op == Op::Ge;
}

Tensor binary_op(Op op, const Tensor& a, const Tensor& b) {
  front::check_op_dtype(op, a);
  front::check_defined(op, b, "other operand");
  front::check_same_device(op, a, b);
  front::check_same_dtype(op, a, b);
  const Shape s = broadcast_shapes(a.shape(), b.shape(), std::string(op_name(op)).c_str());
  Tensor out = front::new_like(a, s, is_comparison(op) ? DType::U8 : a.dtype());
  if (out.numel() > 0) front::backend(a).binary(op, TensorArg(a, s), TensorArg(b, s), TensorArg(out));
  return out;
}

// An integer clamp bound from a Scalar: integers saturate to T's range; a fractional bound moves
// inward (ceil for lo, floor for hi), so the result stays within [lo, hi] whenever lo <= hi. The
// backend receives it as an exact integer Scalar (UnaryParams).
template <class T>
int64_t int_bound(Scalar s, bool is_lo) {
  constexpr int64_t kMin = static_cast<int64_t>(std::numeric_limits<T>::lowest());
  constexpr int64_t kMax = static_cast<int64_t>(std::numeric_limits<T>::max());
  if (s.is_int) return s.i < kMin ? kMin : (s.i > kMax ? kMax : s.i);
  return static_cast<int64_t>(convert<T>(is_lo ? std::ceil(s.f) : std::floor(s.f)));
}

}  // namespace

Tensor Tensor::affine(double mul, double add) const { return unary_op(Op::Affine, *this, {mul, add}); }
Tensor Tensor::powf(double exponent) const { return unary_op(Op::Powf, *this, {exponent, {}}); }
Tensor Tensor::elu(double alpha) const { return unary_op(Op::Elu, *this, {alpha, {}}); }
Tensor Tensor::leaky_relu(double negative_slope) const { return unary_op(Op::LeakyRelu, *this, {negative_slope, {}}); }

Tensor Tensor::clamp(Scalar lo, Scalar hi) const {
  front::check_defined(Op::Clamp, *this);
  UnaryParams p{lo, hi};
  if (is_int(dtype()))
    dispatch_in<kIntTypes>(
        dtype(),
        [&]<class T>() {
          p = {int_bound<T>(lo, true), int_bound<T>(hi, false)};
        },
        "clamp");
  return unary_op(Op::Clamp, *this, p);
}

Tensor Tensor::exp() const { return unary_op(Op::Exp, *this); }
Tensor Tensor::log() const { return unary_op(Op::Log, *this); }
Tensor Tensor::sin() const { return unary_op(Op::Sin, *this); }
Tensor Tensor::cos() const { return unary_op(Op::Cos, *this); }
Tensor Tensor::tanh() const { return unary_op(Op::Tanh, *this); }
Tensor Tensor::neg() const { return unary_op(Op::Neg, *this); }
Tensor Tensor::recip() const { return unary_op(Op::Recip, *this); }
Tensor Tensor::sqr() const { return unary_op(Op::Sqr, *this); }
Tensor Tensor::sqrt() const { return unary_op(Op::Sqrt, *this); }
Tensor Tensor::abs() const { return unary_op(Op::Abs, *this); }
Tensor Tensor::ceil() const { return unary_op(Op::Ceil, *this); }
Tensor Tensor::floor() const { return unary_op(Op::Floor, *this); }
Tensor Tensor::round() const { return unary_op(Op::Round, *this); }
Tensor Tensor::sign() const { return unary_op(Op::Sign, *this); }
Tensor Tensor::relu() const { return unary_op(Op::Relu, *this); }
Tensor Tensor::gelu() const { return unary_op(Op::Gelu, *this); }
Tensor Tensor::gelu_erf() const { return unary_op(Op::GeluErf, *this); }
Tensor Tensor::erf() const { return unary_op(Op::Erf, *this); }
Tensor Tensor::silu() const { return unary_op(Op::Silu, *this); }
Tensor Tensor::sigmoid() const { return unary_op(Op::Sigmoid, *this); }

Tensor Tensor::add(const Tensor& o) const { return binary_op(Op::Add, *this, o); }
Tensor Tensor::sub(const Tensor& o) const { return binary_op(Op::Sub, *this, o); }
Tensor Tensor::mul(const Tensor& o) const { return binary_op(Op::Mul, *this, o); }
Tensor Tensor::div(const Tensor& o) const { return binary_op(Op::Div, *this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return binary_op(Op::Maximum, *this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return binary_op(Op::Minimum, *this, o); }
Tensor Tensor::pow(const Tensor& o) const { return binary_op(Op::Pow, *this, o); }
Tensor Tensor::silu_mul(const Tensor& o) const { return binary_op(Op::SiluMul, *this, o); }
Tensor Tensor::eq(const Tensor& o) const { return binary_op(Op::Eq, *this, o); }
Tensor Tensor::ne(const Tensor& o) const { return binary_op(Op::Ne, *this, o); }
Tensor Tensor::lt(const Tensor& o) const { return binary_op(Op::Lt, *this, o); }
Tensor Tensor::le(const Tensor& o) const { return binary_op(Op::Le, *this, o); }
Tensor Tensor::gt(const Tensor& o) const { return binary_op(Op::Gt, *this, o); }
Tensor Tensor::ge(const Tensor& o) const { return binary_op(Op::Ge, *this, o); }

Tensor Tensor::where_cond(const Tensor& on_true, const Tensor& on_false) const {
  constexpr Op op = Op::WhereCond;
  front::check_defined(op, *this, "condition");
  if (!is_int(dtype()))
    throw DTypeError("[where_cond] condition must have an integer dtype (" + front::dtype_names(kIntTypes) + "), got " +
                     str());
  front::check_defined(op, on_true, "on_true");
  front::check_defined(op, on_false, "on_false");
  // The op runs on on_true's handle (its output's), so on_true comes first.
  front::check_same_device(op, on_true, *this);
  front::check_same_device(op, on_true, on_false);
  front::check_op_dtype(op, on_true);
  front::check_same_dtype(op, on_true, on_false);
  const char* name = "where_cond";
  const Shape s = broadcast_shapes(broadcast_shapes(shape(), on_true.shape(), name), on_false.shape(), name);
  Tensor out = front::new_like(on_true, s, on_true.dtype());
  if (out.numel() > 0)
    front::backend(on_true).where_cond(TensorArg(*this, s), TensorArg(on_true, s), TensorArg(on_false, s),
                                       TensorArg(out));
  return out;
}

}  // namespace wick
