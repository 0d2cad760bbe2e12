// The kernels of simd.h. Each algorithm is written once over GCC / Clang vector types and
// instantiated inside three functions whose target attributes differ (baseline: 4 lanes, AVX2:
// 8 lanes, AVX-512F: 16 lanes; the AVX512_BF16 level adds its own bf16 roundings); only the f16
// conversions, the streaming stores and the level's operations (Ops: the widening loads, min / max,
// the exponent scaling, the narrowing; see "the levels' operations") use intrinsics. Helpers called
// from the target functions are always_inline and use no intrinsics (the operations carry their
// level's target attribute), so that no copy of them compiled for a wider ISA can be merged into
// baseline code by the linker.
#include "cpu/simd.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "wick/error.h"
#include "wick/scalar_types.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WICK_SIMD_X86 1
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

// Vector arguments of always_inline helpers: GCC notes that their ABI would differ between ISAs,
// which does not matter for functions that are never called out of line.
#pragma GCC diagnostic ignored "-Wpsabi"
#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports its own AVX-512 conversion intrinsics (an undefined pass-through operand) as
// possibly uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif




#define WICK_INLINE inline __attribute__((always_inline))

namespace wick::cpu::simd {
namespace {

template <int W>
struct Vec {
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int32_t I __attribute__((vector_size(4 * W)));
  typedef uint32_t U __attribute__((vector_size(4 * W)));
  typedef uint16_t H __attribute__((vector_size(2 * W)));
  typedef uint64_t Q __attribute__((vector_size(4 * W)));
};

template <class V>
WICK_INLINE V load(const void* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));
  return v;
}
template <class V>
WICK_INLINE void store(void* p, const V& v) {
  __builtin_memcpy(p, &v, sizeof(V));
}

// ---- the levels' operations ------------------------------------------------------------------
// Per level (Ops: OpsBase here; OpsAvx2, OpsAvx512 and OpsAvx512Bf16 with the level kernels below),
// the operations that the generic vector code cannot express or that GCC 12 compiles poorly: a fused
// multiply-add (the baseline has no FMA instruction: std::fma a lane), the square root and PMULUDQ
// (each 64-bit lane's product of the low halves of a and b) of the random kernels; min / max as
// x86's MINPS / MAXPS (a < b ? a : b, a > b ? a : b: b where either is NaN); scale(e, n) = e * 2^n
// for an integer n in [-150, 128] and e in [0.5, 2), rounded once (only a subnormal result
// rounds); narrow, the low 16 bits of each 32-bit lane; to_bf16, bf16::from_f32 of each lane; and
// bf16, the widening load of W bf16 values. Each gives the same bits at every level.
//
// Note [Vector exp and bf16 operations]
// The exponentials (exp_v, in exp, sigmoid, silu, gelu and softmax's exp_sum16) and the bf16
// conversions ran as generic vector code at every level, and GCC 12 compiled parts of them poorly
// at 16 lanes: exp's clamps as a compare and a masked move each instead of one MINPS / MAXPS, its
// scaling by 2^n as nine integer and float operations (two powers of two built from n), the
// narrowing of 16 lanes to 16 bits as two 8-lane packs and a permute, and the widening load as
// four shuffles. At AVX-512 the scaling is now one VSCALEFPS (e * 2^n rounded once, as the two
// exact powers give it: the same bits), the clamps one instruction each (all levels), the
// narrowing one VPMOVDW and the widening one VPMOVZXWD; exp went from 38 vector instructions per 16
// lanes to 26. At Avx512Bf16 and Amx, VCVTNEPS2BF16 rounds to bf16 (its rounding and NaN the same
// as bf16::from_f32; subnormal inputs, which it flushes, are rounded as below it, in a branch).
// bf16 arithmetic (add, sub, mul, div) and the bf16 exponentials run as one pass that widens,
// computes in f32 and rounds (arith_bf16, unary_bf16), where they went through f32 buffers in
// blocks of 512 (two or three passes, and the arithmetic itself in baseline SSE code). One core,
// data in L1, ns per element, before -> after:
//   Zen 4 (AVX512_BF16)        exp 0.440 -> 0.321, exp_sum16 0.488 -> 0.370, silu 0.517 -> 0.390;
//                              f32 -> bf16 0.125 -> 0.087 (AVX-512F) -> 0.059 (VCVTNEPS2BF16);
//                              bf16 -> f32 0.046 -> 0.034; bf16 add in blocks 0.213, in one pass 0.121
//   the GPU machine's Xeon     f32 -> bf16 0.157-0.160 (AVX-512F) -> 0.099-0.105 (VCVTNEPS2BF16);
//   (Amx)                      bf16 add in blocks 0.414-0.427, in one pass 0.166-0.170; bf16 silu in
//                              blocks 1.01-1.06, in one pass 0.95-0.99
// On Zen 4 the one-pass silu is the slower (0.53 against 0.50; two vectors a step in unary_v took
// it from 0.625 to 0.585 at AVX-512F); it is kept for the Xeon. The ops on the Xeon, 16 threads,
// `wick bench --llm`'s shapes, two runs of three rounds (medians of 500 calls) alternating with the
// build before and with torch 2.11, ms: softmax [32, 128, 128] bf16 0.073-0.094 -> 0.057-0.081
// (with Note [Softmax rows]' multiplication; torch 0.058-0.078), add [128, 2048] bf16 0.027-0.034
// -> 0.012-0.016 (torch 0.027-0.033), silu of [128, 8192] in [128, 16384] bf16 0.109-0.150 ->
// 0.079-0.105 (torch 0.100-0.118).

// e * 2^n as two exact powers of two (n = a + b, each half a normal power): e * 2^a is exact, the
// second product rounds once, where the result is subnormal.
template <int W>
WICK_INLINE typename Vec<W>::F scale_by_two_powers(const typename Vec<W>::F& e, const typename Vec<W>::F& n) {
  using F = typename Vec<W>::F;
  using I = typename Vec<W>::I;
  using U = typename Vec<W>::U;
  // (A NaN lane converts to some integer; its e is NaN, so the scale does not matter. The scale is
  // built in unsigned arithmetic, which wraps rather than overflows for such a lane.)
  const I ni = __builtin_convertvector(n, I);
  const I a = ni >> 1, b = ni - a;
  const F sa = reinterpret_cast<F>((reinterpret_cast<U>(a) + 127u) << 23);
  const F sb = reinterpret_cast<F>((reinterpret_cast<U>(b) + 127u) << 23);
  return e * sa * sb;
}

// bf16::from_f32 of each lane (Ops::to_bf16 below the AVX512_BF16 level): round to nearest even on
// the dropped 16 bits (a carry into the exponent gives inf when due); NaN keeps its top bits with
// the quiet bit set.
template <int W, class Ops>
WICK_INLINE typename Vec<W>::H round_bf16_v(const typename Vec<W>::F& x, const Ops& ops) {
  using U = typename Vec<W>::U;
  const U u = reinterpret_cast<U>(x);
  const U r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const U q = (u >> 16) | 0x40u;
  return ops.narrow((u & 0x7fffffffu) > 0x7f800000u ? q : r);
}

// The widening load of W bf16 values (OpsBase::bf16, and the matrix-vector kernels' at 4 lanes).
template <int W>
struct LoadBf16 {
  WICK_INLINE typename Vec<W>::F operator()(const uint16_t* p) const {
    using U = typename Vec<W>::U;
    return reinterpret_cast<typename Vec<W>::F>(__builtin_convertvector(load<typename Vec<W>::H>(p), U) << 16);
  }
};

struct OpsBase {
  using F = Vec<4>::F;
  F fma(const F& a, const F& b, const F& c) const {
    F r;
    for (int l = 0; l < 4; ++l) r[l] = std::fma(a[l], b[l], c[l]);
    return r;
  }
  F sqrt(const F& x) const {
    F r;
    for (int l = 0; l < 4; ++l) r[l] = std::sqrt(x[l]);
    return r;
  }
  Vec<4>::Q mul_even(const Vec<4>::Q& a, const Vec<4>::Q& b) const {
#ifdef WICK_SIMD_X86
    return reinterpret_cast<Vec<4>::Q>(_mm_mul_epu32(reinterpret_cast<__m128i>(a), reinterpret_cast<__m128i>(b)));
#else
    return (a & 0xffffffffu) * (b & 0xffffffffu);
#endif
  }
#ifdef WICK_SIMD_X86
  F min(const F& a, const F& b) const { return _mm_min_ps(a, b); }
  F max(const F& a, const F& b) const { return _mm_max_ps(a, b); }
#else
  F min(const F& a, const F& b) const { return a < b ? a : b; }
  F max(const F& a, const F& b) const { return a > b ? a : b; }
#endif
  F scale(const F& e, const F& n) const { return scale_by_two_powers<4>(e, n); }
  Vec<4>::H narrow(const Vec<4>::U& u) const { return __builtin_convertvector(u, Vec<4>::H); }
  Vec<4>::H to_bf16(const F& x) const { return round_bf16_v<4>(x, *this); }
  F bf16(const uint16_t* p) const { return LoadBf16<4>{}(p); }
};

// ---- exp -------------------------------------------------------------------------------------
// exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a part exact in f32 times
// small n and a correction), e^r on |r| <= ln(2)/2 by the degree-7 polynomial 1 + r + r^2 P(r) of
// Cephes' expf. 2^n is applied exactly, with one rounding in the subnormal range (the level's
// Ops::scale), so that results between the largest f32 and the smallest subnormal come out right.
template <int W, class Ops>
WICK_INLINE typename Vec<W>::F exp_v(const typename Vec<W>::F& x_in, const Ops& ops) {
  using F = typename Vec<W>::F;
  // Beyond these, the result is inf or 0 anyway; clamping keeps n small. NaN passes through the
  // clamps (Ops::min / max return their second operand then) and propagates through the arithmetic.
  const F x = ops.max(F{} - 104.0f, ops.min(F{} + 89.0f, x_in));
  const F shifter = F{} + 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  F n = x * 1.44269504088896341f + shifter;
  n = n - shifter;
  F r = x - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  F p = F{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const F r2 = r * r;
  return ops.scale(r2 * p + r + 1.0f, n);  // n in [-150, 128]
}

// exp(x) (Unary::Exp), or x / (1 + exp(-k * g(x))) with g the identity (sigmoid numerator 1, silu
// x) or the gelu cubic.
template <int W, Unary A, class Ops>
WICK_INLINE typename Vec<W>::F act_v(const typename Vec<W>::F& x, const Ops& ops) {
  using F = typename Vec<W>::F;
  if constexpr (A == Unary::Exp) {
    return exp_v<W>(x, ops);
  } else if constexpr (A == Unary::Gelu) {
    const F z = (x + 0.044715f * x * x * x) * -1.59576912160573071176f;
    return x / (exp_v<W>(z, ops) + 1.0f);
  } else if constexpr (A == Unary::Silu) {
    return x / (exp_v<W>(-x, ops) + 1.0f);
  } else {
    return (F{} + 1.0f) / (exp_v<W>(-x, ops) + 1.0f);
  }
}

// Runs f over whole vectors of W elements of T, each loaded by ld (to f32 lanes) and stored by st,
// then the tail through a zero-padded vector (the same arithmetic for every element, wherever it
// sits).
template <int W, class T, class F, class Ld, class St>
WICK_INLINE void unary_v(const T* in, T* out, int64_t n, F f, Ld ld, St st) {
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    const auto a = f(ld(in + i)), b = f(ld(in + i + W));
    st(out + i, a);
    st(out + i + W, b);
  }
  for (; i + W <= n; i += W) st(out + i, f(ld(in + i)));
  if (i < n) {
    T buf[W] = {};
    __builtin_memcpy(buf, in + i, static_cast<size_t>(n - i) * sizeof(T));
    st(buf, f(ld(buf)));
    __builtin_memcpy(out + i, buf, static_cast<size_t>(n - i) * sizeof(T));
  }
}

template <int W, class F>
WICK_INLINE void unary_f32(const float* in, float* out, int64_t n, F f) {
  using V = typename Vec<W>::F;
  unary_v<W>(
      in, out, n, f, [](const float* p) __attribute__((always_inline)) { return load<V>(p); },
      [](float* p, const V& v) __attribute__((always_inline)) { store(p, v); });
}

// ---- row helpers -----------------------------------------------------------------------------

// Lane l of v rotated down by H lanes: lane l takes lane (l + H) mod W.
template <int W, int H, class V, std::size_t... I>
WICK_INLINE V rotate_lanes(const V& v, std::index_sequence<I...>) {
  return __builtin_shufflevector(v, v, ((I + H) % W)...);
}

// v's W lanes merged into lane 0 in halves: lane l with lane l + W / 2, then with l + W / 4, ...
template <int W, int H = W / 2, class V, class Merge>
WICK_INLINE void fold_lanes(V& v, Merge merge) {
  if constexpr (H >= 1) {
    v = merge(rotate_lanes<W, H>(v, std::make_index_sequence<W>()), v);
    fold_lanes<W, H / 2>(v, merge);
  }
}

// Note [Vector min / max]: kMinMaxU independent accumulators. One chain of dependent max
// instructions advances a vector per max latency (2 to 4 cycles): reduce.cpp's min / max row loop,
// built for the x86-64 baseline, did 4 floats per maxps latency, about 1 float a cycle on Intel,
// which is about a core's share of memory bandwidth on a 16-core Xeon, where the max of a row took
// 1.3 times its sum (in cache on one Zen 4 core: that loop 28 GB/s, the sum 76, this one 85). The
// select `v > acc ? v : acc` is one max instruction; it keeps acc when v is NaN, so acc never
// holds a NaN and NaN is tracked apart, tested once at the end instead of a branch or a blend per
// element: on 4 and 8 lanes the unordered self-compares OR-ed into an integer mask; on 16, kept
// as a float vector by a select on the compare (an AVX-512F compare gives a mask register; GCC 12
// compiled the integer form of this unrolled loop at 16 lanes into one compare per lane). The
// accumulator's lanes and the NaN tracker's are then folded in halves by shuffles (fold_lanes,
// log2 W steps each); a scalar loop over the lanes, a NaN test and a max each, cost about as much
// as the row's vectors for softmax's rows of 128: [32, 128, 128] f32 softmax on two Zen 4 cores
// 0.210 -> 0.203 ms (Note [Softmax row groups] in norm.cpp). The maximum is the same value; the
// sign of a zero maximum may come out otherwise than with the scalar loop, as between levels.
constexpr int kMinMaxU = 4;

template <int W, bool IsMax>
WICK_INLINE float minmax_v(const float* x, int64_t n) {
  using F = typename Vec<W>::F;
  using N = std::conditional_t<W == 16, F, typename Vec<W>::I>;  // the NaN tracker
  const float id = IsMax ? -__builtin_inff() : __builtin_inff();
  auto pick = [](const auto& v, const auto& acc) __attribute__((always_inline)) {
    return (IsMax ? v > acc : v < acc) ? v : acc;
  };
  auto track = [](N& nan, const F& v) __attribute__((always_inline)) {
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
// the last 16 one by one. vec(i) gives the W terms from i, one(i) term i. The halves were added
// through memory, a scalar add each, before fold_lanes took them (as max_f32's, Note [Vector min /
// max]): exp_sum16_f32 over rows of 128 on one Zen 4 core 0.438 -> 0.421 ns an element, bf16
// softmax [32, 128, 128] 0.373 -> 0.357 ms.
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
      n,
      [x, shift](int64_t i) __attribute__((always_inline)) {
        const F e = load<F>(x + i) + shift;
        return e * e;
      },
      [x, shift](int64_t i) __attribute__((always_inline)) {
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

// ---- fill ------------------------------------------------------------------------------------

// The pattern seen from byte offset o of the fill on (byte k of it is byte (o + k) % 8 of p).
WICK_INLINE uint64_t pattern_at(uint64_t p, int64_t o) {
  const int r = static_cast<int>(o & 7) * 8;
  if (r == 0) return p;
  if constexpr (std::endian::native == std::endian::little) return (p >> r) | (p << (64 - r));
  return (p << r) | (p >> (64 - r));
}

// 64 bytes of pattern q at p (any alignment).
template <int W>
WICK_INLINE void store64(char* p, uint64_t q) {
  using Q = typename Vec<W>::Q;
  const Q v = Q{} + q;
  for (int j = 0; j < 64; j += 4 * W) store(p + j, v);
}

// Streaming stores of pattern q over n bytes (a multiple of 64) at a 64-byte-aligned p, then a
// store fence; one per level, written with that level's intrinsics.
using StreamBody = void (*)(char* p, int64_t n, uint64_t q);

// An unaligned 64-byte store at each end, and whole aligned 64-byte blocks between them (the end
// stores overlap the body, writing the same bytes). Shorter fills go a byte at a time.
template <int W>
WICK_INLINE void fill_v(void* dst, int64_t nbytes, uint64_t pattern, StreamBody stream) {
  char* const p = static_cast<char*>(dst);
  if (nbytes < 64) {
    unsigned char b[8];
    __builtin_memcpy(b, &pattern, 8);
    for (int64_t k = 0; k < nbytes; ++k) p[k] = static_cast<char>(b[k & 7]);
    return;
  }
  const int64_t head = static_cast<int64_t>((64 - (reinterpret_cast<uintptr_t>(p) & 63)) & 63);
  const int64_t body = (nbytes - head) & ~int64_t{63};
  const uint64_t q = pattern_at(pattern, head);
  store64<W>(p, pattern);
  if (stream != nullptr) {
    stream(p + head, body, q);
  } else {
    for (int64_t i = 0; i < body; i += 64) store64<W>(p + head + i, q);
  }
  store64<W>(p + nbytes - 64, pattern_at(pattern, nbytes - 64));
}

#ifdef WICK_SIMD_X86
void stream_base(char* p, int64_t n, uint64_t q) {  // SSE2: part of the x86-64 baseline
  const __m128i v = _mm_set1_epi64x(static_cast<long long>(q));
  for (int64_t i = 0; i < n; i += 64)
    for (int j = 0; j < 64; j += 16) _mm_stream_si128(reinterpret_cast<__m128i*>(p + i + j), v);
  _mm_sfence();
}
constexpr StreamBody kStreamBase = stream_base;
#else
constexpr StreamBody kStreamBase = nullptr;
#endif

// ---- bf16 ------------------------------------------------------------------------------------
// The conversions, and the kernels that widen bf16, compute in f32 and round once in one pass (Note
// [Vector exp and bf16 operations]); Ops::to_bf16 gives bf16::from_f32's bits at every level.

template <int W, class Ops>
WICK_INLINE void f32_to_bf16_v(const float* in, uint16_t* out, int64_t n, const Ops& ops) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(out + i, ops.to_bf16(load<typename Vec<W>::F>(in + i)));
  for (; i < n; ++i) out[i] = bf16::from_f32(in[i]);
}

// Kernels::arith_bf16 with f on W lanes, and one lane at a time for the tail: one pass that widens,
// computes and rounds, the stride of each operand (1 or 0) a constant of its loop.
template <int W, class Op, class Ops>
WICK_INLINE void arith_bf16_v(Op f, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out,
                              int64_t n, const Ops& ops) {
  using F = typename Vec<W>::F;
  const float x0 = bf16::to_f32(x[0]), y0 = bf16::to_f32(y[0]);
  auto run = [&]<bool kX, bool kY>() __attribute__((always_inline)) {
    const F xs = F{} + x0, ys = F{} + y0;
    int64_t i = 0;
    for (; i + W <= n; i += W) store(out + i, ops.to_bf16(f(kX ? ops.bf16(x + i) : xs, kY ? ops.bf16(y + i) : ys)));
    for (; i < n; ++i) out[i] = bf16::from_f32(f(kX ? bf16::to_f32(x[i]) : x0, kY ? bf16::to_f32(y[i]) : y0));
  };
  if (sx == 1 && sy == 1) return run.template operator()<true, true>();
  if (sx == 1) return run.template operator()<true, false>();
  if (sy == 1) return run.template operator()<false, true>();
  run.template operator()<false, false>();
}

template <int W, class Ops>
WICK_INLINE void arith_bf16_op_v(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out,
                                 int64_t n, const Ops& ops) {
  if (n <= 0) return;
  // The one IEEE operation of ew::Add, Sub, Mul and Div on floats (elementwise_math.h), written
  // here as always_inline lambdas: GCC would compile the functors out of line for vector types.
  auto go = [&](auto f) __attribute__((always_inline)) { arith_bf16_v<W>(f, x, sx, y, sy, out, n, ops); };
  switch (op) {
    case Arith::Add:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a + b; });
    case Arith::Sub:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a - b; });
    case Arith::Mul:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a * b; });
    case Arith::Div:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a / b; });
  }
}

// Kernels::unary_bf16: act_v over bf16 values, widened and rounded in the same pass.
template <int W, class Ops>
WICK_INLINE void unary_bf16_v(Unary op, const uint16_t* in, uint16_t* out, int64_t n, const Ops& ops) {
  using F = typename Vec<W>::F;
  auto ld = [&](const uint16_t* p) __attribute__((always_inline)) { return ops.bf16(p); };
  auto st = [&](uint16_t* const p, const F& v) __attribute__((always_inline)) { store(p, ops.to_bf16(v)); };
  auto go = [&](auto f) __attribute__((always_inline)) { unary_v<W>(in, out, n, f, ld, st); };
  switch (op) {
    case Unary::Exp:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Exp>(x, ops); });
    case Unary::Sigmoid:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Sigmoid>(x, ops); });
    case Unary::Silu:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Silu>(x, ops); });
    case Unary::Gelu:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Gelu>(x, ops); });
  }
}

template <int W, class Ops>
WICK_INLINE void bf16_to_f32_v(const uint16_t* in, float* out, int64_t n, const Ops& ops) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(out + i, ops.bf16(in + i));
  for (; i < n; ++i) out[i] = bf16::to_f32(in[i]);
}

// ---- random numbers --------------------------------------------------------------------------
// Note [CPU random]
// rand and randn on the CPU (fill_random in cpu_backend.cpp) take Philox4x32-10's words from
// Kernels::philox, which runs the rounds of src/core/philox.h for W consecutive counters at once
// (a lane per block), then turn them into f32 by uniform_f32 or normal_f32, a few hundred blocks
// at a time through a buffer in L1. A round's 32 x 32 -> 64-bit products go through the level's
// mul_even (PMULUDQ, the products of the even 32-bit lanes), once for the even lanes and once for
// the odd ones shifted down; the four words of the W blocks, a vector each, are interleaved into
// element order (word j of block b is element 4b + j) by two rounds of zips. Uniforms are
// philox::uniform_f32_of bit for bit: an exact conversion and scale, one fused multiply-add (the
// baseline, without an FMA instruction, calls std::fma a lane), the clamp. Normals follow
// normal_f32_pair: the logarithm of Note [Box-Muller log] (its series, with an exact quotient),
// sine and cosine by Cephes' polynomials on [-pi/4, pi/4] after a reduction by multiples of pi/4
// in three parts, an exact square root. They come out the same on every level, and within a few
// ulp of libm's (the host's philox::normal_f32) and of the GPU's.
// (The element's stream position is as in Note [Random streams]; these kernels only compute.)
// Lent 16-core Xeon, `wick bench --device cpu`, three rounds alternating with the build before
// (scalar philox.h per block, libm's logf / sinf / cosf): rand f32 of 2^24 elements 11.96-12.49 ->
// 1.49-1.68 ms, randn 26.9-27.2 -> 2.81-2.93 ms (torch 161 and 152 ms in a run beside it). They
// stay bound by arithmetic (the ten rounds, Box-Muller), not by memory (0.41 ms at 164 GB/s).

// Lanes [H * N / 2, H * N / 2 + N / 2) of x and y interleaved: x's first, then y's, lane by lane.
template <int N, int H, class X, std::size_t... I>
WICK_INLINE X zip(const X& x, const X& y, std::index_sequence<I...>) {
  return __builtin_shufflevector(x, y, (I % 2 ? N + H * N / 2 + I / 2 : H * N / 2 + I / 2)...);
}
// The even (E = 0) or odd (E = 1) lanes of the 2N lanes x, y.
template <int N, int E, class X, std::size_t... I>
WICK_INLINE X unzip(const X& x, const X& y, std::index_sequence<I...>) {
  return __builtin_shufflevector(x, y, (2 * I + E)...);
}

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

// ---- transposes ------------------------------------------------------------------------------
// Note [CPU transpose]
// A same-type copy of a source transposed against a row-major dst (x.t().contiguous(); CpuBackend::
// cast's copy_transposed) goes tile by tile (strided.h's for_each_tile_block, 64 x 64) through
// `transpose`: blocks of L x L elements (L = the vector's lanes: W for 2- and 4-byte elements,
// W / 2 for 8-byte ones) are loaded as L vectors along the source's unit stride and transposed in
// registers by log2(L) rounds of zips, row k of the result zipping rows k / 2 and k / 2 + L / 2
// (a round rotates the bits of (row, lane) by one, so log2(L) of them swap row and lane), then
// stored as L vectors along dst's rows. The edges of a tile that leave no whole block go element
// by element; 1-byte elements and casts keep strided.h's map_transposed (a scalar pass through a
// buffer). Lent 16-core Xeon, `wick bench --device cpu`, two rounds against the build before
// (map_transposed): transpose_copy f32 4096 x 4096 4.46-5.03 -> 1.29-1.57 ms, against the
// contiguous copy's 0.66-0.96 in the same runs (torch 68.9 ms beside it).

// One L x L block of elements of V's lane type: dst[b * ldd + a] = src[a * lds + b].
template <class V, int L>
WICK_INLINE void transpose_block_v(const char* src, int64_t lds, char* dst, int64_t ldd) {
  constexpr int64_t es = sizeof(V) / L;
  using S = std::make_index_sequence<L>;
  V r[L];
  for (int a = 0; a < L; ++a) r[a] = load<V>(src + a * lds * es);
  for (int round = 1; round < L; round *= 2) {
    V t[L];
    for (int k = 0; k < L / 2; ++k) {
      t[2 * k] = zip<L, 0>(r[k], r[k + L / 2], S());
      t[2 * k + 1] = zip<L, 1>(r[k], r[k + L / 2], S());
    }
    for (int k = 0; k < L; ++k) r[k] = t[k];
  }
  for (int b = 0; b < L; ++b) store(dst + b * ldd * es, r[b]);
}

// dst[i * ldd + j] = src[j * lds + i] for i < rows, j < cols (strides in elements).
template <class V, int L>
WICK_INLINE void transpose_v(const void* src_v, int64_t lds, void* dst_v, int64_t ldd, int64_t rows, int64_t cols) {
  constexpr int64_t es = sizeof(V) / L;
  const char* src = static_cast<const char*>(src_v);
  char* dst = static_cast<char*>(dst_v);
  const int64_t rb = rows / L * L, cb = cols / L * L;
  for (int64_t j = 0; j < cb; j += L)
    for (int64_t i = 0; i < rb; i += L)
      transpose_block_v<V, L>(src + (j * lds + i) * es, lds, dst + (i * ldd + j) * es, ldd);
  for (int64_t i = 0; i < rows; ++i)  // the edges, element by element
    for (int64_t j = i < rb ? cb : 0; j < cols; ++j)
      __builtin_memcpy(dst + (i * ldd + j) * es, src + (j * lds + i) * es, es);
}

// ---- matrix-vector products ------------------------------------------------------------------

// A load of W f32 lanes, as the widening loads below (Load of the kernels).
template <int W>
struct LoadF32 {
  WICK_INLINE typename Vec<W>::F operator()(const float* p) const { return load<typename Vec<W>::F>(p); }
};

// Note [Row dot products]
// out[j * ldo + r] = sum_i a[r * lda + i] * x_j[i] (simd.h), the matrix-vector products of matmul
// without a widened copy of the matrix. Each product is rounded to f32, then added (no FMA: the
// baseline has none, and one fused level would give other bits). The order is sum16_v's over the
// products: lane l (of 16) adds the products of elements l, l + 16, ... of the whole blocks of 16,
// the tail (k % 16 elements) goes in order into one more sum, then the lanes are added in halves (8,
// 4, 2, 1) and the tail last. A level holds the 16 lanes in 16 / W vectors, so every level adds the
// same numbers in the same order. R rows at a time: the loads of x are shared and the R * 16 / W
// sums are independent chains, which hides the add latency (one row in 16 lanes would wait on one
// chain); and G vectors at a time (kDotVecs), which share the loads of the rows, so that a product
// of a few vectors (a batch of tokens against a weight) reads the matrix from memory once rather
// than once per vector. Every output is its own sum in the order above, whatever R, G and nv: the
// bits of a row's product with x_j do not depend on the other vectors. Each group prefetches the
// next one into L2 as it goes (locality 2: prefetcht1): the hardware's prefetchers, which follow
// one stream well, lag on R short rows at once. Rows of 1024 bf16 from DRAM on one Zen 4 core: 10
// GB/s without, 11.5 prefetching into L1 (which evicts the rows being read, f32 ones most), 19 to
// 23 into L2; a sum over one stream runs at 17 to 20. Load gives W widened elements of a row;
// Scalar one element (for the tail).
template <int W, int R, int G, class T, class Load, class Scalar>
WICK_INLINE void dot_block_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, float* out,
                             int64_t ldo, int64_t r, Load ld, Scalar sc) {
  using F = typename Vec<W>::F;
  constexpr int kV = 16 / W;
  const int64_t k16 = k / 16 * 16;
  F acc[R][G][kV] = {};
  const T* row[R];
  for (int q = 0; q < R; ++q) row[q] = a + (r + q) * lda;
  const int64_t ahead = r + 2 * R <= rows ? R * lda : 0;  // (none past the last group)
  for (int64_t i = 0; i < k16; i += 16) {
    for (int q = 0; q < R; ++q) __builtin_prefetch(row[q] + ahead + i, 0, 2);
    for (int v = 0; v < kV; ++v) {
      F xv[G];
      for (int g = 0; g < G; ++g) xv[g] = load<F>(x + g * ldx + i + v * W);
      for (int q = 0; q < R; ++q) {
        const F av = ld(row[q] + i + v * W);
        for (int g = 0; g < G; ++g) acc[q][g][v] += av * xv[g];
      }
    }
  }
  for (int q = 0; q < R; ++q)
    for (int g = 0; g < G; ++g) {
      float lane[16];
      for (int v = 0; v < kV; ++v) store(lane + v * W, acc[q][g][v]);
      float tail = 0;
      for (int64_t i = k16; i < k; ++i) tail += sc(row[q][i]) * x[g * ldx + i];
      for (int w = 8; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
      out[g * ldo + r + q] = lane[0] + tail;
    }
}

template <int W, int R, int G, class T, class Load, class Scalar>
WICK_INLINE void dot_rows_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv,
                            float* out, int64_t ldo, Load ld, Scalar sc) {
  int64_t r = 0;
  for (; r + R <= rows; r += R) {
    int64_t j = 0;
    for (; j + G <= nv; j += G) dot_block_v<W, R, G>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
    for (; j < nv; ++j) dot_block_v<W, R, 1>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
  }
  for (; r < rows; ++r)
    for (int64_t j = 0; j < nv; ++j)
      dot_block_v<W, 1, 1>(a, lda, rows, k, x + j * ldx, ldx, out + j * ldo, ldo, r, ld, sc);
}

// Note [Column dot products]
// The other orientation of the matrix-vector products: out[j * ldo + r] = sum_i a[i * lda + r] *
// x_j[i] (simd.h), a matrix with unit stride along its rows r, as x @ W for W stored [k, n]. The W
// lanes of a vector are W outputs, each summing its products in the order of i from 0 (each product
// rounded to f32, then added to the sum, which starts at 0), so any split into vectors, and the
// scalar loop of the last rows, gives every output the same bits. kAxpyU vectors of outputs at a
// time share the broadcast x_j[i] and are independent chains; a block reads a run of kAxpyU * W
// elements of each of the k rows of a, a strided walk that the hardware prefetchers follow poorly,
// so the run kAxpyAhead rows on is prefetched into L2 (32768 x 1024 bf16 from DRAM read as 1024
// outputs on one Zen 4 core: 7 GB/s with 4 vectors and no prefetch, 9.5 with 8, 10.5 prefetching 8
// rows ahead, 14 at 32, 16 to 19 at 64). G vectors x_j at a time (kAxpyVecs) share each load of the
// block. With more vectors than G, the block's rows go in chunks, each widened to f32 into a small
// contiguous buffer (kAxpyChunkBytes, in L1) over which every group then passes, the sums kept in
// memory between chunks (they go on from the same f32 values, in the same order): the matrix comes
// from memory once for all the vectors and is widened once, and the groups' passes do not walk its
// rows at their stride (which, at a power of two, maps every row's run to the same few L1 sets).
constexpr int kAxpyU = 8;
constexpr int64_t kAxpyAhead = 64;
constexpr int64_t kAxpyChunkBytes = 16384;
constexpr int kAxpyBatch = 16;  // vectors whose sums a block keeps at once

// The sums of G vectors (x_j = x + j * ldx) over `count` rows of a block of kAxpyU * W columns, its
// rows ldp apart from p, going on from `sums` (G runs of kAxpyU * W) unless `first`, and stored
// back there. pf, where not null: the block's run in the matrix row of p's first row, rows lda apart
// and pf_rows of them, prefetched kAxpyAhead rows ahead of the row being read (at most the last).
template <int W, int G, class P, class T, class Load>
WICK_INLINE void axpy_block_v(const P* p, int64_t ldp, int64_t count, const T* pf, int64_t lda, int64_t pf_rows,
                              const float* x, int64_t ldx, float* sums, bool first, Load ld) {
  using F = typename Vec<W>::F;
  F acc[G][kAxpyU];
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < kAxpyU; ++u) acc[g][u] = first ? F{} : load<F>(sums + (g * kAxpyU + u) * W);
  for (int64_t i = 0; i < count; ++i) {
    if (pf) {
      const char* ahead = reinterpret_cast<const char*>(pf + std::min(i + kAxpyAhead, pf_rows - 1) * lda);
      for (size_t b = 0; b < kAxpyU * W * sizeof(T); b += 64) __builtin_prefetch(ahead + b, 0, 2);
    }
    F xv[G];
    for (int g = 0; g < G; ++g) xv[g] = F{} + x[g * ldx + i];
    for (int u = 0; u < kAxpyU; ++u) {
      const F av = ld(p + i * ldp + u * W);
      for (int g = 0; g < G; ++g) acc[g][u] += av * xv[g];
    }
  }
  for (int g = 0; g < G; ++g)
    for (int u = 0; u < kAxpyU; ++u) store(sums + (g * kAxpyU + u) * W, acc[g][u]);
}

// axpy_block_v for nj vectors: G at a time, then the rest one by one.
template <int W, int G, class P, class T, class Load>
WICK_INLINE void axpy_groups_v(const P* p, int64_t ldp, int64_t count, const T* pf, int64_t lda, int64_t pf_rows,
                               const float* x, int64_t ldx, int64_t nj, float* sums, bool first, Load ld) {
  constexpr int64_t kRun = kAxpyU * W;
  int64_t j = 0;
  for (; j + G <= nj; j += G)
    axpy_block_v<W, G>(p, ldp, count, pf, lda, pf_rows, x + j * ldx, ldx, sums + j * kRun, first, ld);
  for (; j < nj; ++j) axpy_block_v<W, 1>(p, ldp, count, pf, lda, pf_rows, x + j * ldx, ldx, sums + j * kRun, first, ld);
}

template <int W, int G, class T, class Load, class Scalar>
WICK_INLINE void axpy_rows_v(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv,
                             float* out, int64_t ldo, Load ld, Scalar sc) {
  using F = typename Vec<W>::F;
  constexpr int64_t kRun = kAxpyU * W;
  constexpr int64_t kChunk = kAxpyChunkBytes / (kRun * 4);
  int64_t r = 0;
  for (; r + kRun <= rows; r += kRun) {
    for (int64_t j0 = 0; j0 < nv; j0 += kAxpyBatch) {
      const int64_t nj = std::min<int64_t>(kAxpyBatch, nv - j0);
      const float* xb = x + j0 * ldx;
      alignas(64) float sums[kAxpyBatch * kRun];
      if (nj <= G) {  // one pass over the matrix as it is
        axpy_groups_v<W, G>(a + r, lda, k, a + r, lda, k, xb, ldx, nj, sums, true, ld);
      } else {
        alignas(64) float chunk[kChunk * kRun];
        for (int64_t i0 = 0; i0 == 0 || i0 < k; i0 += kChunk) {  // (one empty pass for k == 0: sums of 0)
          const int64_t count = std::min(kChunk, k - i0);
          for (int64_t i = 0; i < count; ++i) {
            const T* row = a + (i0 + i) * lda + r;
            const char* ahead = reinterpret_cast<const char*>(a + std::min(i0 + i + kAxpyAhead, k - 1) * lda + r);
            for (size_t b = 0; b < kRun * sizeof(T); b += 64) __builtin_prefetch(ahead + b, 0, 2);
            for (int u = 0; u < kAxpyU; ++u) store(chunk + i * kRun + u * W, ld(row + u * W));
          }
          axpy_groups_v<W, G>(chunk, kRun, count, static_cast<const T*>(nullptr), 0, 1, xb + i0, ldx, nj, sums, i0 == 0,
                              LoadF32<W>{});
        }
      }
      for (int64_t j = 0; j < nj; ++j) std::copy_n(sums + j * kRun, kRun, out + (j0 + j) * ldo + r);
    }
  }
  for (int64_t j = 0; j < nv; ++j) {
    const float* xj = x + j * ldx;
    float* oj = out + j * ldo;
    int64_t c = r;
    for (; c + W <= rows; c += W) {
      F acc = {};
      for (int64_t i = 0; i < k; ++i) acc += ld(a + i * lda + c) * (F{} + xj[i]);
      store(oj + c, acc);
    }
    for (; c < rows; ++c) {
      float acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += sc(a[i * lda + c]) * xj[i];
      oj[c] = acc;
    }
  }
}

// Rows at a time: 2 on the baseline, whose 16 registers hold 4 vectors of sums per row; 4 above.
// Vectors at a time: 4 at 16 lanes (16 of AVX-512's 32 registers hold sums), 2 at 8 (8 of AVX2's
// 16), 1 on the baseline. The column kernel: kAxpyU vectors of sums per x_j, 2 x_j at 16 lanes.
template <int W>
constexpr int kDotRows = W == 4 ? 2 : 4;
template <int W>
constexpr int kDotVecs = W == 16  ? 4
                         : W == 8 ? 2
                                  : 1;
template <int W>
constexpr int kAxpyVecs = W == 16 ? 2 : 1;

// The scalar widening of one element, for the generic formats.
struct ScalarBf16 {
  WICK_INLINE float operator()(uint16_t h) const {
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    __builtin_memcpy(&f, &u, 4);
    return f;
  }
};
struct ScalarF16 {
  WICK_INLINE float operator()(uint16_t h) const { return f16::to_f32(h); }
};
struct ScalarF32 {
  WICK_INLINE float operator()(float f) const { return f; }
};
// The baseline has no f16 conversion instruction: lane by lane, as f16_to_f32_base.
struct LoadF16Base {
  WICK_INLINE Vec<4>::F operator()(const uint16_t* p) const {
    float f[4];
    for (int l = 0; l < 4; ++l) f[l] = f16::to_f32(p[l]);
    return load<Vec<4>::F>(f);
  }
};

// The kernels Kernels::dot_* and axpy_* of one type at W lanes, with the level's loads.
#define WICK_DOT(T, suffix, W, ATTR, LOAD, SCALAR)                                                                   \
  ATTR __attribute__((flatten)) void dot_##suffix(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x,  \
                                                  int64_t ldx, int64_t nv, float* out, int64_t ldo) {                \
    dot_rows_v<W, kDotRows<W>, kDotVecs<W>>(a, lda, rows, k, x, ldx, nv, out, ldo, LOAD{}, SCALAR{});                \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void axpy_##suffix(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, \
                                                   int64_t ldx, int64_t nv, float* out, int64_t ldo) {               \
    axpy_rows_v<W, kAxpyVecs<W>>(a, lda, rows, k, x, ldx, nv, out, ldo, LOAD{}, SCALAR{});                           \
  }

// ---- the levels ------------------------------------------------------------------------------

// The kernels that round to bf16 at W lanes, with the level's Ops::to_bf16 (WICK_SIMD_LEVEL's, and
// those of the AVX512_BF16 level).
#define WICK_BF16_KERNELS(suffix, W, ATTR, OPS)                                                                      \
  ATTR __attribute__((flatten)) void unary_bf16_##suffix(Unary op, const uint16_t* in, uint16_t* out, int64_t n) {   \
    unary_bf16_v<W>(op, in, out, n, OPS{});                                                                          \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void f32_to_bf16_##suffix(const float* in, uint16_t* out, int64_t n) {               \
    f32_to_bf16_v<W>(in, out, n, OPS{});                                                                             \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void arith_bf16_##suffix(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, \
                                                         int64_t sy, uint16_t* out, int64_t n) {                     \
    arith_bf16_op_v<W>(op, x, sx, y, sy, out, n, OPS{});                                                             \
  }

#define WICK_SIMD_LEVEL(suffix, W, ATTR, OPS)                                                                          \
  WICK_BF16_KERNELS(suffix, W, ATTR, OPS)                                                                              \
  ATTR __attribute__((flatten)) void exp_##suffix(const float* in, float* out, int64_t n) {                            \
    unary_f32<W>(                                                                                                      \
        in, out, n, [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Exp>(x, OPS{}); }); \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void sigmoid_##suffix(const float* in, float* out, int64_t n) {                        \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Sigmoid>(x, OPS{}); });         \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void silu_##suffix(const float* in, float* out, int64_t n) {                           \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Silu>(x, OPS{}); });            \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void gelu_##suffix(const float* in, float* out, int64_t n) {                           \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Gelu>(x, OPS{}); });            \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void bf16_to_f32_##suffix(const uint16_t* in, float* out, int64_t n) {                 \
    bf16_to_f32_v<W>(in, out, n, OPS{});                                                                               \
  }                                                                                                                    \
  ATTR float max_##suffix(const float* x, int64_t n) { return minmax_v<W, true>(x, n); }                               \
  ATTR float min_##suffix(const float* x, int64_t n) { return minmax_v<W, false>(x, n); }                              \
  ATTR float sum16_##suffix(const float* x, int64_t n) { return sum16_v<W>(x, n); }                                    \
  ATTR __attribute__((flatten)) float exp_sum16_##suffix(const float* in, float* out, int64_t n, float shift) {        \
    return exp_sum16_v<W>(in, out, n, shift, OPS{});                                                                   \
  }                                                                                                                    \
  ATTR void scale_##suffix(float* x, int64_t n, float s) { scale_v<W>(x, n, s); }                                      \
  ATTR float sumsq16_##suffix(const float* x, int64_t n, float shift) { return sumsq16_v<W>(x, n, shift); }            \
  ATTR void norm_##suffix(const float* in, float* out, int64_t n, float shift, float s, const float* w,                \
                          const float* b) {                                                                            \
    norm_v<W>(in, out, n, shift, s, w, b);                                                                             \
  }                                                                                                                    \
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
  }                                                                                                                    \
  ATTR void transpose_##suffix(const void* src, int64_t lds, void* dst, int64_t ldd, int64_t rows, int64_t cols,       \
                               int esize) {                                                                            \
    if (esize == 2) return transpose_v<Vec<W>::H, W>(src, lds, dst, ldd, rows, cols);                                  \
    if (esize == 4) return transpose_v<Vec<W>::U, W>(src, lds, dst, ldd, rows, cols);                                  \
    transpose_v<Vec<W>::Q, W / 2>(src, lds, dst, ldd, rows, cols);                                                     \
  }

WICK_SIMD_LEVEL(base, 4, , OpsBase)

void fill_base(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<4>(dst, nbytes, pattern, stream ? kStreamBase : nullptr);
}

void f32_to_f16_base(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16::from_f32(in[i]);
}
void f16_to_f32_base(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16::to_f32(in[i]);
}

WICK_DOT(uint16_t, bf16_base, 4, , LoadBf16<4>, ScalarBf16)
WICK_DOT(uint16_t, f16_base, 4, , LoadF16Base, ScalarF16)
WICK_DOT(float, f32_base, 4, , LoadF32<4>, ScalarF32)

constexpr Kernels kBase{
    f32_to_f16_base, f16_to_f32_base, f32_to_bf16_base, bf16_to_f32_base, exp_base,       sigmoid_base, silu_base,
    gelu_base,       max_base,        min_base,         sum16_base,       exp_sum16_base, scale_base,   sumsq16_base,
    norm_base,       unary_bf16_base, arith_bf16_base,  fill_base,        dot_bf16_base,  dot_f16_base, dot_f32_base,
    axpy_bf16_base,  axpy_f16_base,   axpy_f32_base,    philox_base,      uniform_base,   normal_base,  transpose_base};

#ifdef WICK_SIMD_X86
#define WICK_AVX2 __attribute__((target("avx2,fma,f16c")))
#define WICK_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))

// The widening loads above the baseline (Ops::bf16, and the matrix-vector kernels' Load): bf16 by a
// zero extension and a shift (GCC 12 compiles the generic LoadBf16 at 8 and 16 lanes into several
// shuffles a vector), f16 (LoadF16Avx2 / Avx512 below) through F16C / AVX-512F. Like the Ops they
// carry their level's target and are not always_inline (an always_inline call is checked in the
// generic code itself, which has no target); the kernels (flatten) inline them.
struct LoadBf16Avx2 {
  WICK_AVX2 Vec<8>::F operator()(const uint16_t* p) const {
    return _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))), 16));
  }
};
struct LoadBf16Avx512 {
  WICK_AVX512 Vec<16>::F operator()(const uint16_t* p) const {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  }
};

// The operations of OpsBase at 8 and 16 lanes.
struct OpsAvx2 {
  using F = Vec<8>::F;
  WICK_AVX2 F fma(const F& a, const F& b, const F& c) const { return _mm256_fmadd_ps(a, b, c); }
  WICK_AVX2 F sqrt(const F& x) const { return _mm256_sqrt_ps(x); }
  WICK_AVX2 Vec<8>::Q mul_even(const Vec<8>::Q& a, const Vec<8>::Q& b) const {
    return reinterpret_cast<Vec<8>::Q>(_mm256_mul_epu32(reinterpret_cast<__m256i>(a), reinterpret_cast<__m256i>(b)));
  }
  WICK_AVX2 F min(const F& a, const F& b) const { return _mm256_min_ps(a, b); }
  WICK_AVX2 F max(const F& a, const F& b) const { return _mm256_max_ps(a, b); }
  WICK_AVX2 F scale(const F& e, const F& n) const { return scale_by_two_powers<8>(e, n); }
  WICK_AVX2 Vec<8>::H narrow(const Vec<8>::U& u) const { return __builtin_convertvector(u, Vec<8>::H); }
  WICK_AVX2 Vec<8>::H to_bf16(const F& x) const { return round_bf16_v<8>(x, *this); }
  WICK_AVX2 F bf16(const uint16_t* p) const { return LoadBf16Avx2{}(p); }
};
struct OpsAvx512 {
  using F = Vec<16>::F;
  WICK_AVX512 F fma(const F& a, const F& b, const F& c) const { return _mm512_fmadd_ps(a, b, c); }
  WICK_AVX512 F sqrt(const F& x) const { return _mm512_sqrt_ps(x); }
  WICK_AVX512 Vec<16>::Q mul_even(const Vec<16>::Q& a, const Vec<16>::Q& b) const {
    return reinterpret_cast<Vec<16>::Q>(_mm512_mul_epu32(reinterpret_cast<__m512i>(a), reinterpret_cast<__m512i>(b)));
  }
  WICK_AVX512 F min(const F& a, const F& b) const { return _mm512_min_ps(a, b); }
  WICK_AVX512 F max(const F& a, const F& b) const { return _mm512_max_ps(a, b); }
  // VSCALEFPS: e * 2^floor(n), rounded once.
  WICK_AVX512 F scale(const F& e, const F& n) const { return _mm512_scalef_ps(e, n); }
  WICK_AVX512 Vec<16>::H narrow(const Vec<16>::U& u) const {
    return reinterpret_cast<Vec<16>::H>(_mm512_cvtepi32_epi16(reinterpret_cast<__m512i>(u)));
  }
  WICK_AVX512 Vec<16>::H to_bf16(const F& x) const { return round_bf16_v<16>(x, *this); }
  WICK_AVX512 F bf16(const uint16_t* p) const { return LoadBf16Avx512{}(p); }
};

WICK_SIMD_LEVEL(avx2, 8, WICK_AVX2, OpsAvx2)
WICK_SIMD_LEVEL(avx512, 16, WICK_AVX512, OpsAvx512)

// The AVX512_BF16 level (with BW and VL, as detect() requires): OpsAvx512's operations, bf16 rounded
// by VCVTNEPS2BF16 (Note [Vector exp and bf16 operations]).
#define WICK_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
struct OpsAvx512Bf16 : OpsAvx512 {
  // The instruction rounds to nearest even and quiets NaN as bf16::from_f32 does, but takes a
  // subnormal input as zero (DAZ), whatever MXCSR says: lanes with a zero exponent and a nonzero
  // mantissa are rounded as OpsAvx512 rounds them, in a branch that ordinary data never takes.
  WICK_AVX512BF16 Vec<16>::H to_bf16(const F& x) const {
    const __m512i u = reinterpret_cast<__m512i>(x);
    __m256i h = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(x));
    const __mmask16 sub = _mm512_mask_test_epi32_mask(_mm512_testn_epi32_mask(u, _mm512_set1_epi32(0x7f800000)), u,
                                                      _mm512_set1_epi32(0x007fffff));
    if (sub != 0) h = _mm256_mask_blend_epi16(sub, h, reinterpret_cast<__m256i>(OpsAvx512::to_bf16(x)));
    return reinterpret_cast<Vec<16>::H>(h);
  }
};
WICK_BF16_KERNELS(avx512bf16, 16, WICK_AVX512BF16, OpsAvx512Bf16)

WICK_AVX2 void stream_avx2(char* p, int64_t n, uint64_t q) {
  const __m256i v = _mm256_set1_epi64x(static_cast<long long>(q));
  for (int64_t i = 0; i < n; i += 64) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p + i), v);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(p + i + 32), v);
  }
  _mm_sfence();
}
WICK_AVX512 void stream_avx512(char* p, int64_t n, uint64_t q) {
  const __m512i v = _mm512_set1_epi64(static_cast<long long>(q));
  for (int64_t i = 0; i < n; i += 64) _mm512_stream_si512(reinterpret_cast<__m512i*>(p + i), v);
  _mm_sfence();
}
WICK_AVX2 void fill_avx2(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<8>(dst, nbytes, pattern, stream ? stream_avx2 : nullptr);
}
WICK_AVX512 void fill_avx512(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<16>(dst, nbytes, pattern, stream ? stream_avx512 : nullptr);
}

// f16 through F16C / AVX-512F, rounding to nearest even (the immediate), whatever MXCSR says.
WICK_AVX2 void f32_to_f16_avx2(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = f16::from_f32(in[i]);
}
WICK_AVX2 void f16_to_f32_avx2(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16::to_f32(in[i]);
}
WICK_AVX512 void f32_to_f16_avx512(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  f32_to_f16_avx2(in + i, out + i, n - i);
}
WICK_AVX512 void f16_to_f32_avx512(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  f16_to_f32_avx2(in + i, out + i, n - i);
}

// The f16 loads of the matrix-vector kernels (see LoadBf16Avx2).
struct LoadF16Avx2 {
  WICK_AVX2 Vec<8>::F operator()(const uint16_t* p) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct LoadF16Avx512 {
  WICK_AVX512 Vec<16>::F operator()(const uint16_t* p) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
WICK_DOT(uint16_t, bf16_avx2, 8, WICK_AVX2, LoadBf16Avx2, ScalarBf16)
WICK_DOT(uint16_t, f16_avx2, 8, WICK_AVX2, LoadF16Avx2, ScalarF16)
WICK_DOT(float, f32_avx2, 8, WICK_AVX2, LoadF32<8>, ScalarF32)
WICK_DOT(uint16_t, bf16_avx512, 16, WICK_AVX512, LoadBf16Avx512, ScalarBf16)
WICK_DOT(uint16_t, f16_avx512, 16, WICK_AVX512, LoadF16Avx512, ScalarF16)
WICK_DOT(float, f32_avx512, 16, WICK_AVX512, LoadF32<16>, ScalarF32)

constexpr Kernels kAvx2{
    f32_to_f16_avx2, f16_to_f32_avx2, f32_to_bf16_avx2, bf16_to_f32_avx2, exp_avx2,       sigmoid_avx2, silu_avx2,
    gelu_avx2,       max_avx2,        min_avx2,         sum16_avx2,       exp_sum16_avx2, scale_avx2,   sumsq16_avx2,
    norm_avx2,       unary_bf16_avx2, arith_bf16_avx2,  fill_avx2,        dot_bf16_avx2,  dot_f16_avx2, dot_f32_avx2,
    axpy_bf16_avx2,  axpy_f16_avx2,   axpy_f32_avx2,    philox_avx2,      uniform_avx2,   normal_avx2,  transpose_avx2};
constexpr Kernels kAvx512{f32_to_f16_avx512, f16_to_f32_avx512, f32_to_bf16_avx512, bf16_to_f32_avx512, exp_avx512,
                          sigmoid_avx512,    silu_avx512,       gelu_avx512,        max_avx512,         min_avx512,
                          sum16_avx512,      exp_sum16_avx512,  scale_avx512,       sumsq16_avx512,     norm_avx512,
                          unary_bf16_avx512, arith_bf16_avx512, fill_avx512,        dot_bf16_avx512,    dot_f16_avx512,
                          dot_f32_avx512,    axpy_bf16_avx512,  axpy_f16_avx512,    axpy_f32_avx512,    philox_avx512,
                          uniform_avx512,    normal_avx512,     transpose_avx512};

// The Avx512Bf16 and Amx levels: the AVX-512F kernels, with the bf16 roundings of OpsAvx512Bf16.
constexpr Kernels kAvx512Bf16 = [] {
  Kernels k = kAvx512;
  k.f32_to_bf16 = f32_to_bf16_avx512bf16;
  k.unary_bf16 = unary_bf16_avx512bf16;
  k.arith_bf16 = arith_bf16_avx512bf16;
  return k;
}();

// Whether the AMX tiles can multiply bf16 here: AMX-TILE and AMX-BF16 (CPUID leaf 7, sub-leaf 0,
// EDX bits 24 and 22), their state enabled by the OS (XCR0 bits 17 and 18, XTILECFG and
// XTILEDATA), and on Linux the process's permission to use the tile data, which the kernel grants
// on request (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18) and which must be held
// before the first tile instruction of any thread (without it that instruction faults). The
// permission is the process's, asked for once here (detect() runs once); a refusal (a kernel before
// 5.16, or a thread's alternate signal stack too small for the tile state) leaves the level out.
bool amx_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0) return false;  // (else XGETBV faults)
  unsigned xcr0 = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0 & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return true;
#endif
}

Isa detect() {
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // (every AVX-512F processor has F16C; AVX512_BF16 by CPUID leaf 7, sub-leaf 1, EAX bit 5, which
    // older compilers do not name in __builtin_cpu_supports)
    const bool bf16 = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0 &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    // The bf16 GEMM with AMX tiles (Note [AMX GEMM]) on any processor that has them (Intel's Xeons
    // from Sapphire Rapids on).
    if (bf16 && amx_usable()) return Isa::Amx;
    // Its VDPBF16PS kernel pays where that instruction runs at twice the f32 FMA rate, as on AMD's
    // Zen 4; on an Intel Xeon (family 6 model 207) one core ran it at 59 GFLOP/s against sgemm's
    // 103 (Note [bf16 GEMM]), so Intel processors without AMX stay at Avx512.
    if (bf16 && __builtin_cpu_is("amd")) return Isa::Avx512Bf16;
    return Isa::Avx512;
  }
  // (F16C by CPUID leaf 1: older Clangs do not know the name in __builtin_cpu_supports.)
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return Isa::Avx2;
  return Isa::Base;
}
#else
Isa detect() { return Isa::Base; }
#endif

Isa from_env(Isa best) {
  const char* e = std::getenv("WICK_CPU_ISA");
  if (e == nullptr || *e == '\0') return best;
  const std::string s(e);
  Isa want = best;
  if (s == "base") want = Isa::Base;
  else if (s == "avx2") want = Isa::Avx2;
  else if (s == "avx512") want = Isa::Avx512;
  else if (s == "avx512bf16") want = Isa::Avx512Bf16;
  else if (s == "amx") want = Isa::Amx;
  return static_cast<int>(want) < static_cast<int>(best) ? want : best;
}

}  // namespace

Isa detected() {
  static const Isa isa = detect();
  return isa;
}

Isa active() {
  static const Isa isa = from_env(detected());
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Amx:
      return "amx";
    case Isa::Avx512Bf16:
      return "avx512bf16";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Base:
      break;
  }
  return "base";
}

const Kernels& kernels(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected()))
    throw UnsupportedError(std::string("[cpu simd] ") + isa_name(isa) + " kernels requested; this cpu supports " +
                           isa_name(detected()));
#ifdef WICK_SIMD_X86
  if (isa >= Isa::Avx512Bf16) return kAvx512Bf16;  // (and the bf16 GEMM of gemm_packed.cpp)
  if (isa == Isa::Avx512) return kAvx512;
  if (isa == Isa::Avx2) return kAvx2;
#endif
  return kBase;
}

const Kernels& kernels() {
  static const Kernels& k = kernels(active());
  return k;
}

}  // namespace wick::cpu::simd
