// The random-number kernels of simd.h: Philox4x32-10's words (philox) and their f32 values, uniform
// and normal (Note [CPU random]).
#include <cstdint>
#include <utility>

#include "cpu/simd_impl.h"

namespace wick::cpu::simd::detail {
namespace {

// Note [CPU random]
// rand and randn on the CPU (fill_random in cpu_backend.cpp) take Philox4x32-10's words from
// Kernels::philox, which runs the rounds of src/backend/philox.h for W consecutive counters at once
// (a lane per block), then turn them into f32 by uniform_f32 or normal_f32, a few hundred blocks
// at a time through a buffer in L1. A round's 32 x 32 -> 64-bit products go through the level's
// mul_even (PMULUDQ) for the even lanes and for the odd ones shifted down; the four words of the W
// blocks are interleaved into element order (word j of block b is element 4b + j) by two rounds of
// zips. Uniforms are philox::uniform_f32_of bit for bit (an exact conversion and scale, one fused
// multiply-add, std::fma a lane on the baseline, the clamp). Normals follow normal_f32_pair: the
// logarithm of Note [Box-Muller log], sine and cosine by Cephes' polynomials on [-pi/4, pi/4] after
// a reduction by multiples of pi/4 in three parts, an exact square root. The same bits on every
// level, within a few ulp of libm's (philox::normal_f32) and of the GPU's. The element's stream
// position is as in Note [Random streams]; these kernels only compute.

// hi, lo = the high and low words of a * m per lane (m's 64-bit lanes each hold the multiplier).
template <int W, class Ops>
WICK_INLINE void mulhilo_v(const typename Vec<W>::U& a, const typename Vec<W>::Q& m, typename Vec<W>::U& hi,
                           typename Vec<W>::U& lo, const Ops& ops) {
  using U = typename Vec<W>::U;
  using Q = typename Vec<W>::Q;
  const Q q = reinterpret_cast<Q>(a);
  const Q even = ops.mul_even(q, m), odd = ops.mul_even(q >> 32, m);
  lo = reinterpret_cast<U>((even & 0xffffffffu) | (odd << 32));
  hi = reinterpret_cast<U>((even >> 32) | (odd & 0xffffffff00000000u));
}

// The words of the W blocks ctr, ctr + 1, ... (philox::block: counter (low, high, 0, 0), round
// keys keys[2r], keys[2r + 1]) to w[0 .. 4W) in element order.
template <int W, class Ops>
WICK_INLINE void philox_block_v(const uint32_t* keys, uint64_t ctr, uint32_t* w, const Ops& ops) {
  using U = typename Vec<W>::U;
  using Q = typename Vec<W>::Q;
  U lane;
  for (int l = 0; l < W; ++l) lane[l] = static_cast<uint32_t>(l);
  const U base = U{} + static_cast<uint32_t>(ctr);
  U c0 = base + lane;
  U c1 = (U{} + static_cast<uint32_t>(ctr >> 32)) - reinterpret_cast<U>(c0 < base);  // the carry
  U c2 = U{}, c3 = U{};
  const Q m0 = Q{} + 0xD2511F53u, m1 = Q{} + 0xCD9E8D57u;
  for (int r = 0; r < 10; ++r) {
    U hi0, lo0, hi1, lo1;
    mulhilo_v<W>(c0, m0, hi0, lo0, ops);
    mulhilo_v<W>(c2, m1, hi1, lo1, ops);
    c0 = hi1 ^ c1 ^ keys[2 * r];
    c2 = hi0 ^ c3 ^ keys[2 * r + 1];
    c1 = lo1;
    c3 = lo0;
  }
  using S = std::make_index_sequence<W>;
  using S2 = std::make_index_sequence<W / 2>;
  const Q a0 = reinterpret_cast<Q>(zip<W, 0>(c0, c1, S())), a1 = reinterpret_cast<Q>(zip<W, 1>(c0, c1, S()));
  const Q b0 = reinterpret_cast<Q>(zip<W, 0>(c2, c3, S())), b1 = reinterpret_cast<Q>(zip<W, 1>(c2, c3, S()));
  store(w, zip<W / 2, 0>(a0, b0, S2()));
  store(w + W, zip<W / 2, 1>(a0, b0, S2()));
  store(w + 2 * W, zip<W / 2, 0>(a1, b1, S2()));
  store(w + 3 * W, zip<W / 2, 1>(a1, b1, S2()));
}

template <int W, class Ops>
WICK_INLINE void philox_v(const uint32_t* keys, uint64_t first, int64_t nblocks, uint32_t* words, const Ops& ops) {
  int64_t b = 0;
  for (; b + W <= nblocks; b += W) philox_block_v<W>(keys, first + static_cast<uint64_t>(b), words + 4 * b, ops);
  if (b < nblocks) {
    uint32_t tail[4 * W];
    philox_block_v<W>(keys, first + static_cast<uint64_t>(b), tail, ops);
    __builtin_memcpy(words + 4 * b, tail, static_cast<size_t>(nblocks - b) * 16);
  }
}

// philox::unit_f32 of each lane: its top 24 bits times 2^-24, exactly.
template <int W>
WICK_INLINE typename Vec<W>::F unit_v(const typename Vec<W>::U& w) {
  return __builtin_convertvector(reinterpret_cast<typename Vec<W>::I>(w >> 8), typename Vec<W>::F) *
         5.9604644775390625e-08f;
}

// f over the words w in steps of `step` (W or 2W) elements, the tail through zero-padded buffers
// (the same arithmetic for every element).
template <int W, int Step, class F>
WICK_INLINE void words_to_f32(const uint32_t* w, float* out, int64_t n, F f) {
  int64_t i = 0;
  for (; i + Step <= n; i += Step) f(w + i, out + i);
  if (i < n) {
    uint32_t wb[Step] = {};
    float ob[Step];
    __builtin_memcpy(wb, w + i, static_cast<size_t>(n - i) * 4);
    f(wb, ob);
    __builtin_memcpy(out + i, ob, static_cast<size_t>(n - i) * 4);
  }
}

template <int W, class Ops>
WICK_INLINE void uniform_v(const uint32_t* w, float* out, int64_t n, float lo, float span, float up, const Ops& ops) {
  using F = typename Vec<W>::F;
  using U = typename Vec<W>::U;
  const F lov = F{} + lo, spanv = F{} + span, upv = F{} + up;
  words_to_f32<W, W>(
      w, out, n, [&](const uint32_t* wp, float* op) __attribute__((always_inline)) {
        const F r = ops.fma(unit_v<W>(load<U>(wp)), spanv, lov);
        store(op, r < upv ? r : upv);  // fminf: up where r is NaN
      });
}

// log(u) for u in [2^-24, 1] (Note [Box-Muller log]).
template <int W, class Ops>
WICK_INLINE typename Vec<W>::F log_unit_v(const typename Vec<W>::F& u, const Ops& ops) {
  using F = typename Vec<W>::F;
  using I = typename Vec<W>::I;
  using U = typename Vec<W>::U;
  const U bits = reinterpret_cast<U>(u);
  const I e = reinterpret_cast<I>(bits - 0x3f3504f3u) >> 23;
  const F m = reinterpret_cast<F>(bits - (reinterpret_cast<U>(e) << 23));
  const F s = (m - 1.0f) / (m + 1.0f), s2 = s * s;
  const F p =
      ops.fma(ops.fma(ops.fma(s2, F{} + 1.0f / 9.0f, F{} + 1.0f / 7.0f), s2, F{} + 1.0f / 5.0f), s2, F{} + 1.0f / 3.0f);
  const F s_2 = s * 2.0f;
  return ops.fma(__builtin_convertvector(e, F), F{} + 0.693147180559945309f, ops.fma(s_2, s2 * p, s_2));
}

// sin(t) and cos(t) for t in [-pi, pi]: t = j pi/4 + x with j even and |x| <= pi/4 (pi/4 in three
// parts, each product by j exact), Cephes' sinf / cosf polynomials in x, swapped and negated by
// the quadrant j / 2 and the sign of t.
template <int W>
WICK_INLINE void sincos_v(const typename Vec<W>::F& t, typename Vec<W>::F& s, typename Vec<W>::F& c) {
  using F = typename Vec<W>::F;
  using I = typename Vec<W>::I;
  using U = typename Vec<W>::U;
  const U sign = reinterpret_cast<U>(t) & 0x80000000u;
  const F a = reinterpret_cast<F>(reinterpret_cast<U>(t) & 0x7fffffffu);
  const I j = (__builtin_convertvector(a * 1.27323954473516f, I) + 1) & ~1;
  const F y = __builtin_convertvector(j, F);
  const F x = ((a - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
  const F z = x * x;
  const F sp = ((z * -1.9515295891e-4f + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * x + x;
  const F cp =
      ((z * 2.443315711809948e-5f - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - z * 0.5f + 1.0f;
  const I q = j >> 1;
  const I swap = (q & 1) != 0;
  const F sr = swap ? cp : sp, cr = swap ? sp : cp;
  const U s_neg = (reinterpret_cast<U>((q & 2) != 0) & 0x80000000u) ^ sign;
  const U c_neg = reinterpret_cast<U>(((q + 1) & 2) != 0) & 0x80000000u;
  s = reinterpret_cast<F>(reinterpret_cast<U>(sr) ^ s_neg);
  c = reinterpret_cast<F>(reinterpret_cast<U>(cr) ^ c_neg);
}

// out[2p], out[2p + 1] = the normals of words w[2p], w[2p + 1] (philox::normal_f32_pair).
template <int W, class Ops>
WICK_INLINE void normal_v(const uint32_t* w, float* out, int64_t n, float mean, float std, const Ops& ops) {
  using F = typename Vec<W>::F;
  using U = typename Vec<W>::U;
  using S = std::make_index_sequence<W>;
  const F meanv = F{} + mean, stdv = F{} + std;
  words_to_f32<W, 2 * W>(
      w, out, n, [&](const uint32_t* wp, float* op) __attribute__((always_inline)) {
        const U x = load<U>(wp), y = load<U>(wp + W);
        const F u1 = 1.0f - unit_v<W>(unzip<W, 0>(x, y, S()));
        const F theta =
            ops.fma(F{} + 6.28318530717958647692f, unit_v<W>(unzip<W, 1>(x, y, S())), F{} - 3.14159265358979323846f);
        const F r = ops.sqrt(log_unit_v<W>(u1, ops) * -2.0f);
        F sn, cs;
        sincos_v<W>(theta, sn, cs);
        const F z0 = ops.fma(r * cs, stdv, meanv), z1 = ops.fma(r * sn, stdv, meanv);
        store(op, zip<W, 0>(z0, z1, S()));
        store(op + W, zip<W, 1>(z0, z1, S()));
      });
}

}  // namespace

// ---- the levels ------------------------------------------------------------------------------

#define WICK_RANDOM_LEVEL(suffix, W, ATTR, OPS)                                                                        \
  ATTR __attribute__((flatten)) void philox_##suffix(const uint32_t* keys, uint64_t first, int64_t nblocks,            \
                                                     uint32_t* words) {                                                \
    philox_v<W>(keys, first, nblocks, words, OPS{});                                                                   \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void uniform_##suffix(const uint32_t* w, float* out, int64_t n, float lo, float span,  \
                                                      float up) {                                                      \
    uniform_v<W>(w, out, n, lo, span, up, OPS{});                                                                      \
  }                                                                                                                    \
  ATTR                                                                                                                 \
      __attribute__((flatten)) void normal_##suffix(const uint32_t* w, float* out, int64_t n, float mean, float std) { \
    normal_v<W>(w, out, n, mean, std, OPS{});                                                                          \
  }

WICK_RANDOM_LEVEL(base, 4, , OpsBase)
#ifdef WICK_SIMD_X86
WICK_RANDOM_LEVEL(avx2, 8, WICK_AVX2, OpsAvx2)
WICK_RANDOM_LEVEL(avx512, 16, WICK_AVX512, OpsAvx512)
#endif

}  // namespace wick::cpu::simd::detail
