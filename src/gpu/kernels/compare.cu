// Comparisons eq, ne, lt, le, gt, ge on every dtype, writing u8 1 / 0; IEEE in the compute type
// (NaN compares false except for ne), with the shared functors of backend/elementwise_math.h.
//
// One kernel per dtype serves all six: the comparison is a launch parameter (a branch every
// thread takes the same way, in a memory-bound loop), and gt / ge are lt / le with the operands
// swapped, which is the same IEEE predicate, NaN included. Six instantiations per dtype would
// cost compile time and nothing else.
#include <cstdint>

#include "backend/elementwise_math.h"
#include "cpu/dispatch.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

enum class Cmp : uint8_t { Eq, Ne, Lt, Le };

template <class T>
struct CompareFn {
  Cmp cmp;
  __device__ uint8_t operator()(int64_t, T a, T b) const {
    using C = compute_t<T>;
    const C x = convert<C>(a), y = convert<C>(b);
    bool r;
    switch (cmp) {
      case Cmp::Eq:
        r = ew::Eq{}(x, y);
        break;
      case Cmp::Ne:
        r = ew::Ne{}(x, y);
        break;
      case Cmp::Lt:
        r = ew::Lt{}(x, y);
        break;
      default:
        r = ew::Le{}(x, y);
        break;
    }
    return r ? uint8_t{1} : uint8_t{0};
  }
};

void run(const LaunchCtx& ctx, Cmp cmp, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  cpu::dispatch(
      a.dtype, [&]<class T>() { map<uint8_t, T, T>(ctx, CompareFn<T>{cmp}, dst, a, b); }, ctx.op);
}

}  // namespace

bool compare(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  switch (op) {
    case Op::Eq:
      return run(ctx, Cmp::Eq, a, b, dst), true;
    case Op::Ne:
      return run(ctx, Cmp::Ne, a, b, dst), true;
    case Op::Lt:
      return run(ctx, Cmp::Lt, a, b, dst), true;
    case Op::Le:
      return run(ctx, Cmp::Le, a, b, dst), true;
    case Op::Gt:  // a > b is b < a
      return run(ctx, Cmp::Lt, b, a, dst), true;
    case Op::Ge:  // a >= b is b <= a
      return run(ctx, Cmp::Le, b, a, dst), true;
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
