// affine and clamp on every dtype. As the CPU backend (src/cpu/elementwise.cpp): floats compute in
// their compute type; integer affine computes in f64 and saturates (ew::AffineInt); integer clamp
// bounds arrive as int64 bit patterns (Note [Integer clamp bounds]).
#include <type_traits>

#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

bool unary_affine(const LaunchCtx& ctx, Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) {
  if (op == Op::Affine) {
    cpu::dispatch(
        src.dtype,
        [&]<class T>() {
          using C = compute_t<T>;
          if constexpr (std::is_integral_v<T>) {
            unary_map<T>(ctx, ew::AffineInt{p0, p1}, src, dst);
          } else {
            unary_map<T>(ctx, ew::Affine<C>{static_cast<C>(p0), static_cast<C>(p1)}, src, dst);
          }
        },
        ctx.op);
    return true;
  }
  if (op == Op::Clamp) {
    cpu::dispatch(
        src.dtype,
        [&]<class T>() {
          using C = compute_t<T>;
          if constexpr (std::is_integral_v<T>) {
            // Already saturated to T's range by the front end.
            const C lo = static_cast<C>(ew::clamp_bound_from_param(p0));
            const C hi = static_cast<C>(ew::clamp_bound_from_param(p1));
            unary_map<T>(ctx, ew::Clamp<C>{lo, hi}, src, dst);
          } else {
            unary_map<T>(ctx, ew::Clamp<C>{static_cast<C>(p0), static_cast<C>(p1)}, src, dst);
          }
        },
        ctx.op);
    return true;
  }
  return false;
}

}  // namespace wick::WICK_GPU_NS::kern
