// The unary rows of the op table on the GPU, generated from WICK_UNARY_OPS: each row runs its
// functor (backend/elementwise_math.h, shared with the CPU) through the strided map of map.cuh,
// instantiated only for the dtypes of its row. Where the functor is the identity on a dtype
// (ceil of an integer, abs of an unsigned one: ew::is_identity) the op is a same-dtype copy, so
// those dtypes are not instantiated a second time. unary_<part>.cu instantiate one part each.
#pragma once

#include <cstdint>

#include "gpu/kernels/elementwise.cuh"

namespace wick::WICK_GPU_NS::kern {

template <uint32_t Mask, class F>
void unary_row(const LaunchCtx& ctx, const UnaryParams& p, const TensorArg& src, const TensorArg& dst) {
  wick::dispatch_in<Mask>(
      src.dtype,
      [&]<class T>() {
        if constexpr (ew::is_identity<F, T>()) {
          cast(ctx, src, dst);
        } else {
          unary_map<T>(ctx, ew::unary_functor<T, F>(p), src, dst);
        }
      },
      ctx.op);
}

template <int Part>
bool unary_part(const LaunchCtx& ctx, Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst) {
  switch (op) {
#define WICK_X(name, str, kind, mask, F)                              \
  case Op::name:                                                      \
    if constexpr (static_cast<int>(Op::name) % kUnaryParts == Part) { \
      unary_row<mask, ew::F>(ctx, p, src, dst);                       \
      return true;                                                    \
    } else {                                                          \
      return false;                                                   \
    }
    WICK_UNARY_OPS(WICK_X)
#undef WICK_X
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
