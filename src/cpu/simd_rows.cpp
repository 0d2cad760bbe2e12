// The row kernels of simd.h behind softmax, the norms and the min / max reductions: max_f32 and
// min_f32 (Note [Vector min / max]), the sums in 16 lanes (sum16_f32, sumsq16_f32, exp_sum16_f32)
// and the scalings of a row (scale_f32, norm_f32).
#include <cstdint>
#include <type_traits>

#include "cpu/simd_impl.h"

namespace wick::cpu::simd::detail {
namespace {

// Note [Vector min / max]
// kMinMaxU independent accumulators: one chain of dependent max instructions advances a vector per
// max latency, slower than memory delivers a row. The select `v > acc ? v : acc` is one max
// instruction; it keeps acc when v is NaN, so acc never holds a NaN and NaN is tracked apart, tested
// once at the end instead of a branch or a blend per element: on 4 and 8 lanes the unordered
// self-compares OR-ed into an integer mask; on 16 kept as a float vector by a select on the compare
// (an AVX-512F compare gives a mask register; GCC 12 compiles the integer form at 16 lanes into one
// compare per lane). The accumulator's lanes and the NaN tracker's are then folded in halves by
// shuffles (fold_lanes, log2 W steps each), not by a scalar loop over the lanes, which costs about
// as much as a short row's vectors. The maximum is the same value at every level; the sign of a
// zero maximum may differ from the scalar loop's, as between levels.
constexpr int kMinMaxU = 4;

template <int W, bool IsMax>
WICK_INLINE float minmax_v(const float* x, int64_t n) {
  using F = typename Vec<W>::F;
  using N = std::conditional_t<W == 16, F, typename Vec<W>::I>;  // the NaN tracker
  const float id = IsMax ? -__builtin_inff() : __builtin_inff();
  auto pick = [](const auto& v, const auto& acc) __attribute__((always_inline)) {
    return (IsMax ? v > acc : v < acc) ? v : acc;
  };
  auto track = [](N & nan, const F& v) __attribute__((always_inline)) {
    if constexpr (W == 16) {
      nan = v != v ? v : nan;
    } else {
      nan |= v != v;
    }
  };
  F acc[kMinMaxU];
  for (int u = 0; u < kMinMaxU; ++u) acc[u] = F{} + id;
  N nan = N{};
  int64_t i = 0;
  for (; i + kMinMaxU * W <= n; i += kMinMaxU * W)
    for (int u = 0; u < kMinMaxU; ++u) {
      const F v = load<F>(x + i + u * W);
      track(nan, v);
      acc[u] = pick(v, acc[u]);
    }
  for (; i + W <= n; i += W) {
    const F v = load<F>(x + i);
    track(nan, v);
    acc[0] = pick(v, acc[0]);
  }
  for (int u = 1; u < kMinMaxU; ++u) acc[0] = pick(acc[u], acc[0]);
  // The lanes folded in halves: lane 0 ends with the pick of all lanes, and the NaN tracker's lane
  // 0 with a NaN (16 lanes: NaN lanes are added in) or a set bit.
  auto either = [](const N& a, const N& b) __attribute__((always_inline)) {
    if constexpr (W == 16) {
      return a + b;
    } else {
      return a | b;
    }
  };
  fold_lanes<W>(acc[0], pick);
  fold_lanes<W>(nan, either);
  float r = pick(acc[0][0], id);
  bool any_nan = W == 16 ? nan[0] != nan[0] : nan[0] != 0;
  for (; i < n; ++i) {
    any_nan |= x[i] != x[i];
    r = pick(x[i], r);
  }
  return any_nan ? __builtin_nanf("") : r;
}

// The sum of n terms in 16 lanes as 16 / W vectors, so that every width adds in the same order:
// lane l adds terms l, l + 16, ..., the lanes are added in halves (8, 4, 2, 1), then the terms past
// the last 16 one by one. vec(i) gives the W terms from i, one(i) term i. The halves are folded by
// shuffles, as max_f32's (Note [Vector min / max]).
template <int W, class Vec16, class One>
WICK_INLINE float lanes16_v(int64_t n, Vec16 vec, One one) {
  using F = typename Vec<W>::F;
  constexpr int kV = 16 / W;
  F acc[kV] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int v = 0; v < kV; ++v) acc[v] += vec(i + v * W);
  float tail = 0;
  for (; i < n; ++i) tail += one(i);
  // The halves: those above W as whole vectors, then W's lanes by shuffles (fold_lanes: lane l
  // takes lane l + H, the same sums as lane[l] += lane[l + H]).
  for (int v = kV / 2; v >= 1; v /= 2)
    for (int u = 0; u < v; ++u) acc[u] += acc[u + v];
  fold_lanes<W>(
      acc[0], [](const F& a, const F& b) __attribute__((always_inline)) { return a + b; });
  return acc[0][0] + tail;
}

// The sum of x in lanes16_v's order.
template <int W>
WICK_INLINE float sum16_v(const float* x, int64_t n) {
  using F = typename Vec<W>::F;
  return lanes16_v<W>(
      n, [x](int64_t i) __attribute__((always_inline)) { return load<F>(x + i); },
      [x](int64_t i) __attribute__((always_inline)) { return x[i]; });
}

// The sum of (x[i] + shift)^2 in lanes16_v's order, each sum and square rounded to f32.
template <int W>
WICK_INLINE float sumsq16_v(const float* x, int64_t n, float shift) {
  using F = typename Vec<W>::F;
  return lanes16_v<W>(
      n, [ x, shift ](int64_t i) __attribute__((always_inline)) {
        const F e = load<F>(x + i) + shift;
        return e * e;
      },
      [ x, shift ](int64_t i) __attribute__((always_inline)) {
        const float e = x[i] + shift;
        return e * e;
      });
}

// out[i] = exp(in[i] + shift) (exp_v of the f32 sum), returning their sum in sum16_v's order, each
// 16 summed while in registers (Note [Softmax rows] in norm.cpp).
template <int W, class Ops>
WICK_INLINE float exp_sum16_v(const float* in, float* out, int64_t n, float shift, const Ops& ops) {
  using F = typename Vec<W>::F;
  auto f = [&](const F& x) __attribute__((always_inline)) { return exp_v<W>(x + shift, ops); };
  const int64_t body = n / 16 * 16;
  unary_f32<W>(in + body, out + body, n - body, f);  // the tail, which lanes16_v adds from out
  return lanes16_v<W>(
      n,
      [&](int64_t i) __attribute__((always_inline)) {
        const F e = f(load<F>(in + i));
        store(out + i, e);
        return e;
      },
      [out](int64_t i) __attribute__((always_inline)) { return out[i]; });
}

template <int W>
WICK_INLINE void norm_v(const float* in, float* out, int64_t n, float shift, float s, const float* w, const float* b) {
  using F = typename Vec<W>::F;
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    F v = (load<F>(in + i) + shift) * s;
    if (w) v = v * load<F>(w + i);
    if (b) v = v + load<F>(b + i);
    store(out + i, v);
  }
  for (; i < n; ++i) {
    float v = (in[i] + shift) * s;
    if (w) v = v * w[i];
    if (b) v = v + b[i];
    out[i] = v;
  }
}

template <int W>
WICK_INLINE void scale_v(float* x, int64_t n, float s) {
  using F = typename Vec<W>::F;
  const F sv = F{} + s;
  int64_t i = 0;
  for (; i + W <= n; i += W) store(x + i, load<F>(x + i) * sv);
  for (; i < n; ++i) x[i] *= s;
}

}  // namespace

// ---- the levels ------------------------------------------------------------------------------

#define WICK_ROWS_LEVEL(suffix, W, ATTR, OPS)                                                                   \
  ATTR float max_##suffix(const float* x, int64_t n) { return minmax_v<W, true>(x, n); }                        \
  ATTR float min_##suffix(const float* x, int64_t n) { return minmax_v<W, false>(x, n); }                       \
  ATTR float sum16_##suffix(const float* x, int64_t n) { return sum16_v<W>(x, n); }                             \
  ATTR __attribute__((flatten)) float exp_sum16_##suffix(const float* in, float* out, int64_t n, float shift) { \
    return exp_sum16_v<W>(in, out, n, shift, OPS{});                                                            \
  }                                                                                                             \
  ATTR void scale_##suffix(float* x, int64_t n, float s) { scale_v<W>(x, n, s); }                               \
  ATTR float sumsq16_##suffix(const float* x, int64_t n, float shift) { return sumsq16_v<W>(x, n, shift); }     \
  ATTR void norm_##suffix(const float* in, float* out, int64_t n, float shift, float s, const float* w,         \
                          const float* b) {                                                                     \
    norm_v<W>(in, out, n, shift, s, w, b);                                                                      \
  }

WICK_ROWS_LEVEL(base, 4, , OpsBase)
#ifdef WICK_SIMD_X86
WICK_ROWS_LEVEL(avx2, 8, WICK_AVX2, OpsAvx2)
WICK_ROWS_LEVEL(avx512, 16, WICK_AVX512, OpsAvx512)
#endif

}  // namespace wick::cpu::simd::detail
