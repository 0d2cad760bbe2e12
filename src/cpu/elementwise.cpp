// CPU unary elementwise ops. The math is in backend/elementwise_math.h (exp, sigmoid, silu and
// gelu on f32 / bf16 / f16 run the vector kernels of simd.h instead); binary ops and where_cond
// are in elementwise_binary.cpp.
#include <algorithm>
#include <iterator>
#include <limits>
#include <string>

#include "backend/elementwise_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/dispatch.h"
#include "cpu/elementwise_loops.h"
#include "cpu/simd.h"

namespace wick::cpu {

namespace {

// Loads in the compute type, applies f, rounds once to T.
template <class T, class F>
void apply(const F& f, const TensorArg& src, const TensorArg& dst) {
  using C = compute_t<T>;
  ew_loops::unary<T>([f](T v) { return convert<T>(f(convert<C>(v))); }, src, dst);
}

// An op without parameters, instantiated for the dtypes in Mask (the op table's row).
template <uint32_t Mask, class F>
void run(Op op, const TensorArg& src, const TensorArg& dst) {
  dispatch_in<Mask>(src.dtype, [&]<class T>() { apply<T>(F{}, src, dst); }, std::string(op_name(op)).c_str());
}

void affine(double mul, double add, const TensorArg& src, const TensorArg& dst) {
  dispatch(src.dtype, [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<T>) {
      apply<T>(ew::AffineInt{mul, add}, src, dst);
    } else {
      apply<T>(ew::Affine<C>{static_cast<C>(mul), static_cast<C>(add)}, src, dst);
    }
  });
}

void clamp(double p0, double p1, const TensorArg& src, const TensorArg& dst) {
  dispatch(src.dtype, [&]<class T>() {
    using C = compute_t<T>;
    if constexpr (std::is_integral_v<T>) {
      // See Note [Integer clamp bounds]: already saturated to T's range by the front end.
      const C lo = static_cast<C>(ew::clamp_bound_from_param(p0));
      const C hi = static_cast<C>(ew::clamp_bound_from_param(p1));
      apply<T>(ew::Clamp<C>{lo, hi}, src, dst);
    } else {
      apply<T>(ew::Clamp<C>{static_cast<C>(p0), static_cast<C>(p1)}, src, dst);
    }
  });
}

// The ops with vector kernels in simd.h: the f32 kernel, and the operation of unary_bf16.
using VecFn = void (*)(const float*, float*, int64_t);
struct VectorOp {
  Op op;
  VecFn simd::Kernels::*f32;
  simd::Unary bf16;
};
constexpr VectorOp kVectorOps[] = {{Op::Exp, &simd::Kernels::exp_f32, simd::Unary::Exp},
                                   {Op::Sigmoid, &simd::Kernels::sigmoid_f32, simd::Unary::Sigmoid},
                                   {Op::Silu, &simd::Kernels::silu_f32, simd::Unary::Silu},
                                   {Op::Gelu, &simd::Kernels::gelu_f32, simd::Unary::Gelu}};

// f32 / bf16 / f16 through a vector kernel on every layout: the kernel's results, not the scalar
// functor's, whatever the strides. bf16 goes through simd's unary_bf16 (widened, computed and
// rounded in one pass), f16 a block at a time widened to f32 and rounded once on the way back.
// Returns false for other dtypes and ops.
bool vector_unary(Op op, const TensorArg& src, const TensorArg& dst) {
  const VectorOp* v =
      std::find_if(std::begin(kVectorOps), std::end(kVectorOps), [op](const VectorOp& w) { return w.op == op; });
  if (v == std::end(kVectorOps)) return false;
  const VecFn fn = simd::kernels().*(v->f32);
  return dispatch_in<kFloatTypes>(src.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, float>) {
      map_vec<T, T>(fn, dst, src);
      return true;
    } else if constexpr (std::is_same_v<T, bf16>) {
      const auto kernel = simd::kernels().unary_bf16;
      map_vec<T, T>([&](const T* in, T* out, int64_t n) { kernel(v->bf16, &in->bits, &out->bits, n); }, dst, src);
      return true;
    } else if constexpr (std::is_same_v<T, f16>) {
      const auto widen = simd::converter<float, T>();
      const auto narrow = simd::converter<T, float>();
      map_vec<T, T>([&](const T* in, T* out, int64_t n) {
        constexpr int64_t kBlock = 512;
        float buf[kBlock];
        for (int64_t i = 0; i < n; i += kBlock) {
          const int64_t m = std::min(kBlock, n - i);
          widen(in + i, buf, m);
          fn(buf, buf, m);
          narrow(buf, out + i, m);
        }
      }, dst, src);
      return true;
    } else {
      return false;
    }
  }, "unary");
}

}  // namespace

void CpuBackend::unary(Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  switch (op) {
    case Op::Affine:
      return affine(p0, p1, src, dst);
    case Op::Clamp:
      return clamp(p0, p1, src, dst);
    case Op::Powf:
      return dispatch_in<kFloatTypes>(src.dtype, [&]<class T>() {
        using C = compute_t<T>;
        apply<T>(ew::Powf<C>{static_cast<C>(p0)}, src, dst);
      }, "powf");
    case Op::Elu:
      return dispatch_in<kFloatTypes>(src.dtype, [&]<class T>() {
        using C = compute_t<T>;
        apply<T>(ew::Elu<C>{static_cast<C>(p0)}, src, dst);
      }, "elu");
    case Op::Exp:
      if (vector_unary(op, src, dst)) return;
      return run<kFloatTypes, ew::Exp>(op, src, dst);
    case Op::Log:
      return run<kFloatTypes, ew::Log>(op, src, dst);
    case Op::Sin:
      return run<kFloatTypes, ew::Sin>(op, src, dst);
    case Op::Cos:
      return run<kFloatTypes, ew::Cos>(op, src, dst);
    case Op::Tanh:
      return run<kFloatTypes, ew::Tanh>(op, src, dst);
    case Op::Neg:
      return run<kSignedTypes, ew::Neg>(op, src, dst);
    case Op::Recip:
      return run<kFloatTypes, ew::Recip>(op, src, dst);
    case Op::Sqr:
      return run<kAllTypes, ew::Sqr>(op, src, dst);
    case Op::Sqrt:
      return run<kFloatTypes, ew::Sqrt>(op, src, dst);
    case Op::Abs:
      return run<kAllTypes, ew::Abs>(op, src, dst);
    case Op::Ceil:
      return run<kAllTypes, ew::Ceil>(op, src, dst);
    case Op::Floor:
      return run<kAllTypes, ew::Floor>(op, src, dst);
    case Op::Round:
      return run<kAllTypes, ew::Round>(op, src, dst);
    case Op::Sign:
      return run<kAllTypes, ew::Sign>(op, src, dst);
    case Op::Relu:
      return run<kAllTypes, ew::Relu>(op, src, dst);
    case Op::Gelu:
      if (vector_unary(op, src, dst)) return;
      return run<kFloatTypes, ew::Gelu>(op, src, dst);
    case Op::GeluErf:
      return run<kFloatTypes, ew::GeluErf>(op, src, dst);
    case Op::Erf:
      return run<kFloatTypes, ew::Erf>(op, src, dst);
    case Op::Silu:
      if (vector_unary(op, src, dst)) return;
      return run<kFloatTypes, ew::Silu>(op, src, dst);
    case Op::Sigmoid:
      if (vector_unary(op, src, dst)) return;
      return run<kFloatTypes, ew::Sigmoid>(op, src, dst);
    default:
      break;
  }
  throw UnsupportedError("[unary] " + std::string(op_name(op)) + " is not a unary elementwise op");
}

}  // namespace wick::cpu
