// The compare rows of the op table (eq, ne, lt, le, gt, ge) on every dtype, writing u8 1 / 0; IEEE in the compute type
// (NaN compares false except for ne), with the shared functors of backend/elementwise_math.h.
//
// One kernel per dtype serves all six: the comparison is a launch parameter (a branch every
// thread takes the same way, in a memory-bound loop), and gt / ge are lt / le with the operands
// swapped, which is the same IEEE predicate, NaN included. Six instantiations per dtype would
// cost compile time and nothing else.
#include <cstdint>
#include <type_traits>
#include <utility>

#include "backend/dispatch.h"
#include "backend/elementwise_math.h"
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
  wick::dispatch(
      a.dtype, [&]<class T>() { map<uint8_t, T, T>(ctx, CompareFn<T>{cmp}, dst, a, b); }, ctx.op);
}

// Each comparison functor as one of the four kernel predicates, with operands swapped or not.
template <class F>
constexpr std::pair<Cmp, bool> canonical() {
  if constexpr (std::is_same_v<F, ew::Eq>) return {Cmp::Eq, false};
  if constexpr (std::is_same_v<F, ew::Ne>) return {Cmp::Ne, false};
  if constexpr (std::is_same_v<F, ew::Lt>) return {Cmp::Lt, false};
  if constexpr (std::is_same_v<F, ew::Le>) return {Cmp::Le, false};
  if constexpr (std::is_same_v<F, ew::Gt>) return {Cmp::Lt, true};  // a > b is b < a
  if constexpr (std::is_same_v<F, ew::Ge>) return {Cmp::Le, true};  // a >= b is b <= a
  static_assert(std::is_same_v<F, ew::Eq> || std::is_same_v<F, ew::Ne> || std::is_same_v<F, ew::Lt> ||
                    std::is_same_v<F, ew::Le> || std::is_same_v<F, ew::Gt> || std::is_same_v<F, ew::Ge>,
                "a new comparison needs its predicate in CompareFn");
  return {Cmp::Eq, false};
}

template <class F>
void compare_row(const LaunchCtx& ctx, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  constexpr auto c = canonical<F>();
  if (c.second) return run(ctx, c.first, b, a, dst);
  return run(ctx, c.first, a, b, dst);
}

}  // namespace

bool compare_op(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  switch (op) {
#define WICK_X(name, str, kind, mask, F) \
  case Op::name:                         \
    return compare_row<ew::F>(ctx, a, b, dst), true;
    WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
    default:
      return false;
  }
}

}  // namespace wick::WICK_GPU_NS::kern
