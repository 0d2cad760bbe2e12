// CPU unary elementwise ops: one switch generated from the op table's unary rows, each running
// its functor from backend/elementwise_math.h (exp, sigmoid, silu and gelu on f32 / bf16 / f16 run
// the vector kernels of simd.h instead). Binary ops and where_cond are in elementwise_binary.cpp.
#include <algorithm>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>

#include "backend/dispatch.h"
#include "backend/elementwise_math.h"
#include "cpu/cpu_backend.h"
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

// The vector kernels of simd.h for functor F: the f32 kernel and the operation of unary_bf16.
using VecFn = void (*)(const float*, float*, int64_t);
struct VectorOp {
  VecFn simd::Kernels::*f32;
  simd::Unary bf16;
};
template <class F>
constexpr std::optional<VectorOp> vector_op() {
  if constexpr (std::is_same_v<F, ew::Exp>) return VectorOp{&simd::Kernels::exp_f32, simd::Unary::Exp};
  if constexpr (std::is_same_v<F, ew::Sigmoid>) return VectorOp{&simd::Kernels::sigmoid_f32, simd::Unary::Sigmoid};
  if constexpr (std::is_same_v<F, ew::Silu>) return VectorOp{&simd::Kernels::silu_f32, simd::Unary::Silu};
  if constexpr (std::is_same_v<F, ew::Gelu>) return VectorOp{&simd::Kernels::gelu_f32, simd::Unary::Gelu};
  return std::nullopt;
}

// f32 / bf16 / f16 through a vector kernel on every layout: the kernel's results, not the scalar
// functor's, whatever the strides. bf16 goes through simd's unary_bf16 (widened, computed and
// rounded in one pass), f16 a block at a time widened to f32 and rounded once on the way back.
// Returns false for other dtypes.
bool vector_unary(const VectorOp& v, const TensorArg& src, const TensorArg& dst) {
  const VecFn fn = simd::kernels().*(v.f32);
  return dispatch_in<kFloatTypes>(
      src.dtype,
      [&]<class T>() {
        if constexpr (std::is_same_v<T, float>) {
          map_vec<T, T>(fn, dst, src);
          return true;
        } else if constexpr (std::is_same_v<T, bf16>) {
          const auto kernel = simd::kernels().unary_bf16;
          map_vec<T, T>([&](const T* in, T* out, int64_t n) { kernel(v.bf16, &in->bits, &out->bits, n); }, dst, src);
          return true;
        } else if constexpr (std::is_same_v<T, f16>) {
          const auto widen = simd::converter<float, T>();
          const auto narrow = simd::converter<T, float>();
          map_vec<T, T>(
              [&](const T* in, T* out, int64_t n) {
                constexpr int64_t kBlock = 512;
                float buf[kBlock];
                for (int64_t i = 0; i < n; i += kBlock) {
                  const int64_t m = std::min(kBlock, n - i);
                  widen(in + i, buf, m);
                  fn(buf, buf, m);
                  narrow(buf, out + i, m);
                }
              },
              dst, src);
          return true;
        } else {
          return false;
        }
      },
      "unary");
}

// One row of the op table: the vector kernel where there is one, else F on the dtypes in Mask.
template <uint32_t Mask, class F>
void unary_row(Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst) {
  if constexpr (constexpr auto v = vector_op<F>(); v.has_value()) {
    if (vector_unary(*v, src, dst)) return;
  }
  dispatch_in<Mask>(
      src.dtype, [&]<class T>() { apply<T>(ew::unary_functor<T, F>(p), src, dst); }, std::string(op_name(op)).c_str());
}

}  // namespace

void CpuBackend::unary(Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  switch (op) {
#define WICK_X(name, str, kind, mask, F) \
  case Op::name:                         \
    return unary_row<mask, ew::F>(op, p, src, dst);
    WICK_UNARY_OPS(WICK_X)
#undef WICK_X
    default:
      break;
  }
  throw UnsupportedError("[unary] " + std::string(op_name(op)) + " is not a unary elementwise op");
}

}  // namespace wick::cpu
