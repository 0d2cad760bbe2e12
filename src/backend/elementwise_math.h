// Per-element math of the elementwise ops, shared by the CPU loops and the GPU kernels.
//
// Each functor works on the compute type C of the element type T (compute_t<T>: f32 for the 8- and
// 16-bit floats, the type itself otherwise); the caller loads with convert<C>, and rounds the
// result once with convert<T>. Comparisons return bool. Nothing here allocates or touches memory,
// and everything is WICK_HOST_DEVICE so nvcc / hipcc compile the same code for kernels.
//
// Note [Integer elementwise semantics]
// Integer arithmetic never has undefined behaviour and never traps:
//   add, sub, mul, sqr, neg, abs   wrap modulo 2^bits (done in the unsigned type);
//   div                            truncates toward zero; x / 0 == 0; INT64_MIN / -1 == INT64_MIN;
//   affine                         computes x * mul + add in f64, then converts with saturation;
//   ceil, floor, round             identity; abs of an unsigned value is the identity;
//   sign                           -1, 0 or 1 (0 or 1 for unsigned).
// Floats follow IEEE: maximum / minimum propagate NaN, comparisons with NaN are false except ne.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "backend/op_params.h"
#include "wick/dtype.h"
#include "wick/scalar_types.h"

namespace wick::ew {

// ---- integer helpers: wrap-around arithmetic without signed overflow ------------------------

template <class C>
using wrap_t = std::make_unsigned_t<C>;

template <class C>
WICK_HOST_DEVICE inline C wrap_add(C a, C b) {
  return static_cast<C>(static_cast<wrap_t<C>>(static_cast<wrap_t<C>>(a) + static_cast<wrap_t<C>>(b)));
}
template <class C>
WICK_HOST_DEVICE inline C wrap_sub(C a, C b) {
  return static_cast<C>(static_cast<wrap_t<C>>(static_cast<wrap_t<C>>(a) - static_cast<wrap_t<C>>(b)));
}
template <class C>
WICK_HOST_DEVICE inline C wrap_mul(C a, C b) {
  // u8 operands promote to int; 255 * 255 still fits, and the cast back wraps.
  return static_cast<C>(static_cast<wrap_t<C>>(static_cast<wrap_t<C>>(a) * static_cast<wrap_t<C>>(b)));
}

// ---- unary ---------------------------------------------------------------------------------

struct Exp {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::exp(x);
  }
};
struct Log {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::log(x);
  }
};
struct Sin {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::sin(x);
  }
};
struct Cos {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::cos(x);
  }
};
struct Tanh {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::tanh(x);
  }
};
struct Sqrt {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::sqrt(x);
  }
};
struct Erf {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return std::erf(x);
  }
};
struct Recip {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return C(1) / x;
  }
};

struct Neg {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_sub(C(0), x);
    } else {
      return -x;
    }
  }
};

struct Sqr {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_mul(x, x);
    } else {
      return x * x;
    }
  }
};

struct Abs {
  template <class C>
  static constexpr bool kIdentity = std::is_unsigned_v<C>;
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (std::is_integral_v<C>) {
      return x < 0 ? wrap_sub(C(0), x) : x;  // |INT64_MIN| wraps to INT64_MIN
    } else {
      return std::fabs(x);
    }
  }
};

struct Ceil {
  template <class C>
  static constexpr bool kIdentity = std::is_integral_v<C>;
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x;
    } else {
      return std::ceil(x);
    }
  }
};
struct Floor {
  template <class C>
  static constexpr bool kIdentity = std::is_integral_v<C>;
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x;
    } else {
      return std::floor(x);
    }
  }
};
// Half away from zero, as std::round (not the banker's rounding of nearbyint).
struct Round {
  template <class C>
  static constexpr bool kIdentity = std::is_integral_v<C>;
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_integral_v<C>) {
      return x;
    } else {
      return std::round(x);
    }
  }
};

// -1, 0 or 1; NaN stays NaN, -0 gives 0.
struct Sign {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x != 0 ? C(1) : C(0);
    } else {
      if (x > C(0)) return C(1);
      if (x < C(0)) return C(-1);
      return x == C(0) ? C(0) : x;
    }
  }
};

// max(x, 0), written so that NaN passes through.
struct Relu {
  template <class C>
  static constexpr bool kIdentity = std::is_unsigned_v<C>;
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else {
      return x < C(0) ? C(0) : x;
    }
  }
};

// 0.5 x (1 + tanh(u)), u = sqrt(2 / pi) (x + 0.044715 x^3), computed as x / (1 + exp(-2u)) (the
// same function, since (1 + tanh(u)) / 2 = sigmoid(2u)): one exp, and no cancellation for x < 0.
struct Gelu {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    const C two_k = C(1.59576912160573071176);  // 2 sqrt(2 / pi)
    return x / (C(1) + std::exp(-two_k * (x + C(0.044715) * x * x * x)));
  }
};

// 0.5 x (1 + erf(x / sqrt(2)))
struct GeluErf {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));
  }
};

// 1 / (1 + exp(-x)): exp(-x) overflows to inf for very negative x, giving the right limit 0.
struct Sigmoid {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return C(1) / (C(1) + std::exp(-x));
  }
};
struct Silu {
  template <class C>
  WICK_HOST_DEVICE C operator()(C x) const {
    return x / (C(1) + std::exp(-x));
  }
};

// ---- unary with parameters -----------------------------------------------------------------
//
// A row functor with parameters (the UnaryParam rows of the op table) has `make<T>(params)`,
// which returns the per-element functor for element type T with its parameters converted once to
// the compute type C; unary_functor() below picks it. UnaryParams says which field is which.

// The row functor of a per-element functor Fn<C> whose one parameter is UnaryParams::a.
template <template <class> class Fn>
struct OneParam {
  template <class T>
  static Fn<compute_t<T>> make(const UnaryParams& p) {
    return {static_cast<compute_t<T>>(p.a.f)};
  }
};

template <class C>
struct PowfFn {
  C e;
  WICK_HOST_DEVICE C operator()(C x) const { return std::pow(x, e); }
};
struct Powf : OneParam<PowfFn> {};

// x > 0 ? x : alpha (exp(x) - 1); expm1 keeps the small negative x accurate.
template <class C>
struct EluFn {
  C alpha;
  WICK_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : alpha * std::expm1(x); }
};
struct Elu : OneParam<EluFn> {};

// x > 0 ? x : slope x; NaN stays NaN.
template <class C>
struct LeakyReluFn {
  C slope;
  WICK_HOST_DEVICE C operator()(C x) const { return x > C(0) ? x : x * slope; }
};
struct LeakyRelu : OneParam<LeakyReluFn> {};

// Bounds are in the compute type (integers exact); NaN stays NaN; lo > hi gives hi.
template <class C>
struct ClampFn {
  C lo, hi;
  WICK_HOST_DEVICE C operator()(C x) const {
    const C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};
// Integer bounds arrive exact and within T's range (the front end saturates and rounds them).
struct Clamp {
  template <class T>
  static ClampFn<compute_t<T>> make(const UnaryParams& p) {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<T>) {
      return {static_cast<C>(p.a.i), static_cast<C>(p.b.i)};
    } else {
      return {static_cast<C>(p.a.f), static_cast<C>(p.b.f)};
    }
  }
};

// a * b + c with two roundings, never contracted into an fma. nvcc and hip-clang contract
// a * b + c by default in device code and the CPU build does not (no fma in the baseline ISA), so
// the GPU kernels would otherwise differ from the CPU in the last bit; for integer affine the
// truncation that follows turns that bit into a different integer.
template <class C>
WICK_HOST_DEVICE inline C mul_add_unfused(C a, C b, C c) {
  static_assert(std::is_floating_point_v<C>);
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<C, float>) {
    return __fadd_rn(__fmul_rn(a, b), c);
  } else {
    return __dadd_rn(__dmul_rn(a, b), c);
  }
#else
  {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
    return a * b + c;
  }
#endif
}

// Floats: x * mul + add in the compute type.
template <class C>
struct AffineFn {
  C mul, add;
  WICK_HOST_DEVICE C operator()(C x) const { return mul_add_unfused(x, mul, add); }
};

// Integers: in f64, then converted to C with saturation (NaN -> 0), see Note [Integer elementwise
// semantics]. Returns a double: the caller's convert<T> saturates.
struct AffineIntFn {
  double mul, add;
  template <class C>
  WICK_HOST_DEVICE double operator()(C x) const {
    return mul_add_unfused(static_cast<double>(x), mul, add);
  }
};

struct Affine {
  template <class T>
  static auto make(const UnaryParams& p) {
    if constexpr (std::is_integral_v<T>) {
      return AffineIntFn{p.a.f, p.b.f};
    } else {
      using C = compute_t<T>;
      return AffineFn<C>{static_cast<C>(p.a.f), static_cast<C>(p.b.f)};
    }
  }
};

// The per-element functor of row functor F for element type T: F::make<T>(params) for rows with
// parameters, F itself otherwise.
template <class T, class F>
auto unary_functor(const UnaryParams& p) {
  if constexpr (requires { F::template make<T>(p); }) {
    return F::template make<T>(p);
  } else {
    return F{};
  }
}

// Whether row functor F leaves every value of T unchanged (F::kIdentity<C>), so that a backend
// may copy instead of running it.
template <class F, class T>
constexpr bool is_identity() {
  if constexpr (requires { F::template kIdentity<compute_t<T>>; }) {
    return F::template kIdentity<compute_t<T>>;
  } else {
    return false;
  }
}

// ---- binary --------------------------------------------------------------------------------

struct Add {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_add(a, b);
    } else {
      return a + b;
    }
  }
};
struct Sub {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_sub(a, b);
    } else {
      return a - b;
    }
  }
};
struct Mul {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return wrap_mul(a, b);
    } else {
      return a * b;
    }
  }
};
struct Div {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == C(0)) return C(0);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1)) return wrap_sub(C(0), a);  // INT64_MIN / -1 wraps to INT64_MIN
      }
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};
// NaN in either operand gives NaN (a NaN `a` fails no test and is returned; a NaN `b` makes the
// comparison false, which returns b).
struct Maximum {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return a > b ? a : b;
    } else {
      return (a > b || a != a) ? a : b;
    }
  }
};
struct Minimum {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      return a < b ? a : b;
    } else {
      return (a < b || a != a) ? a : b;
    }
  }
};
struct Pow {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    return std::pow(a, b);
  }
};
// silu(a) * b: the gated unit of a SwiGLU MLP, one pass instead of two.
struct SiluMul {
  template <class C>
  WICK_HOST_DEVICE C operator()(C a, C b) const {
    return Silu{}(a)*b;
  }
};

// Comparisons: IEEE semantics in the compute type (NaN compares false except for ne).
struct Eq {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a == b;
  }
};
struct Ne {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a != b;
  }
};
struct Lt {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a < b;
  }
};
struct Le {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a <= b;
  }
};
struct Gt {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a > b;
  }
};
struct Ge {
  template <class C>
  WICK_HOST_DEVICE bool operator()(C a, C b) const {
    return a >= b;
  }
};

}  // namespace wick::ew
