// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011) and the
// mapping from element index to random words that every backend uses.
//
// Note [Random streams]
// A call that fills n elements reserves a run of 128-bit block counters from its device
// (Backend::take_random). Element i reads block (start + i / per_block): per_block is 4 for
// f32/f16/bf16/f8 (one 32-bit word each for uniforms, two Box-Muller pairs of words for normals)
// and 2 for f64 (two words each for uniforms, one pair of 64-bit uniforms for normals). The result
// of an element depends only on (seed, counter, i), never on threads or launch shape, so the CPU,
// CUDA and ROCm give the same uniform bits.
// Uniforms use explicit fma so that no compiler contraction changes the rounding.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "wick/dtype.h"
#include "wick/scalar_types.h"

namespace wick::philox {

struct Block {
  uint32_t w[4];
};

WICK_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
#if defined(__CUDA_ARCH__)
  // One widening multiply (IMAD.WIDE.U32) split into its halves in PTX: through a uint64_t product
  // in C++ nvcc keeps the whole round in 64-bit registers (masks and 64-bit xors), and __umulhi
  // plus a * b cost two multiplies. (Clang's AMDGPU backend already turns the product into
  // v_mul_hi_u32 / v_mul_lo_u32.)
  asm("{\n\t.reg .u64 p;\n\tmul.wide.u32 p, %2, %3;\n\tmov.b64 {%1, %0}, p;\n\t}"
      : "=r"(*hi), "=r"(*lo)
      : "r"(a), "r"(b));
#else
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
#endif
}

// The round keys of a 64-bit key: round r adds r times the Weyl constants to its halves. A call's
// stream keeps them (Uniform, Normal below), so a GPU thread does not redo the 20 additions per block:
// kernels get the stream by value and their xors read the keys from the parameter bank.
struct Keys {
  uint32_t k[10][2];
};
WICK_HOST_DEVICE inline Keys keys(const uint32_t key_in[2]) {
  Keys ks{};
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int r = 0; r < 10; ++r) {
    ks.k[r][0] = k0;
    ks.k[r][1] = k1;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return ks;
}
WICK_HOST_DEVICE inline Keys seed_keys(uint64_t seed) {
  const uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  return keys(k);
}

// Ten rounds of Philox4x32 on a full 128-bit counter.
WICK_HOST_DEVICE inline Block rounds(const uint32_t ctr_in[4], const Keys& ks) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#pragma unroll  // the keys then stay in the parameter bank
#endif
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(0xD2511F53u, c0, &hi0, &lo0);
    mulhilo(0xCD9E8D57u, c2, &hi1, &lo1);
    const uint32_t n0 = hi1 ^ c1 ^ ks.k[r][0], n2 = hi0 ^ c3 ^ ks.k[r][1];
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
  }
  return Block{{c0, c1, c2, c3}};
}
WICK_HOST_DEVICE inline Block block_raw(const uint32_t ctr_in[4], const uint32_t key_in[2]) {
  return rounds(ctr_in, keys(key_in));
}

// Block number `ctr` of the stream keyed by `seed`: counter (ctr low, ctr high, 0, 0), key (seed
// low, seed high).
WICK_HOST_DEVICE inline Block block(const Keys& ks, uint64_t ctr) {
  const uint32_t c[4] = {static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), 0u, 0u};
  return rounds(c, ks);
}
WICK_HOST_DEVICE inline Block block(uint64_t seed, uint64_t ctr) { return block(seed_keys(seed), ctr); }

// [0, 1) from 24 / 53 random bits.
WICK_HOST_DEVICE inline float unit_f32(uint32_t w) { return static_cast<float>(w >> 8) * 5.9604644775390625e-08f; }
WICK_HOST_DEVICE inline double unit_f64(uint32_t hi, uint32_t lo) {
  return static_cast<double>(((static_cast<uint64_t>(hi) << 32) | lo) >> 11) * 1.1102230246251565e-16;
}

// Uniform element i of a call whose stream starts at block `start`, computed in f32 (for every
// float type but f64) or f64; the caller rounds to the element type. In f64, lo + u * span with
// u <= 1 - 2^-53 stays at or below up without a clamp.
// `lo`, `up` are the bounds rounded to f32 and `span` is (up - lo) rounded to f32: both roundings
// can carry lo + u * span past `up`, so the result is clamped to it (never below lo: u, span >= 0).
WICK_HOST_DEVICE inline float uniform_f32_of(uint32_t w, float lo, float span, float up) {
  return fminf(fmaf(unit_f32(w), span, lo), up);
}
WICK_HOST_DEVICE inline double uniform_f64_of(const Block& b, unsigned k, double lo, double span) {
  return fma(unit_f64(b.w[2 * k], b.w[2 * k + 1]), span, lo);
}
WICK_HOST_DEVICE inline float uniform_f32(const Keys& ks, uint64_t start, uint64_t i, float lo, float span, float up) {
  return uniform_f32_of(block(ks, start + i / 4).w[i % 4], lo, span, up);
}
WICK_HOST_DEVICE inline double uniform_f64(const Keys& ks, uint64_t start, uint64_t i, double lo, double span) {
  return uniform_f64_of(block(ks, start + i / 2), static_cast<unsigned>(i % 2), lo, span);
}

// Normals by Box-Muller: radius r = sqrt(-2 log u1) with u1 in (0, 1] (a finite log), angle
// theta = 2 pi u2 - pi in [-pi, pi); the pair is (r cos(theta), r sin(theta)). In f32, block k gives
// elements 4k .. 4k + 3: words (0, 1) the first pair, words (2, 3) the second. In f64, block k gives
// elements 2k, 2k + 1 from two 53-bit uniforms. normal_*_block gives a whole block and normal_* one
// element, with the same expressions, so a kernel computing blocks gives the bits of one computing
// elements.
//
// On a GPU the f32 sine, cosine and square root are the hardware's (__sincosf: absolute error about
// 2^-21 on [-pi, pi), which is why theta is centred; sqrt.approx: about 2^-23 relative), a few
// instructions instead of a range reduction each and a Newton step: randn f32 is bound by its
// arithmetic (the Philox rounds and Box-Muller), not by memory. The host functions here use
// std::log / std::sin / std::cos / std::sqrt; the CPU backend computes the same expressions in its
// vector kernels with its own logarithm, sine and cosine (Note [CPU random] in src/cpu/simd_random.cpp).
// So the normals of the CPU, of the GPU and of these host functions agree to a few 1e-7 times r,
// not bit for bit.
//
// Note [Box-Muller log]
// The GPU's logf spends half its instructions on cases u1 never takes (denormals, 0, infinities,
// NaN), so the GPU takes the logarithm of u1 in [2^-24, 1] itself: u1 = m 2^e with m in
// [sqrt(1/2), sqrt(2)) (from the bits, no branch), log m = 2 atanh(s) with s = (m - 1) / (m + 1),
// |s| <= 0.172, from the series 2 (s + s^3/3 + s^5/5 + s^7/7 + s^9/9) (the next term is 2e-9 of the
// sum), plus e log 2. m - 1 is exact, so u1 near 1 keeps its relative accuracy. Over all 2^24
// values u1 takes, with an exact quotient, the result is within 1.7 ulp of the true logarithm
// (max relative error 1.5e-7); the GPU's quotient (__fdividef) adds up to 2 ulp to s. randn is
// bound by this arithmetic, so the instructions saved here (and the Philox rounds' multiplies done
// as one widening multiply each, mulhilo) are its time.
WICK_HOST_DEVICE inline void sincos_f32(float t, float* s, float* c) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  __sincosf(t, s, c);
#else
  *s = std::sin(t);
  *c = std::cos(t);
#endif
}
WICK_HOST_DEVICE inline float sqrt_f32(float x) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#elif defined(__HIP_DEVICE_COMPILE__)
  return __builtin_amdgcn_sqrtf(x);
#else
  return std::sqrt(x);
#endif
}
// log(u) for u in [2^-24, 1], u1 of Box-Muller (Note [Box-Muller log]).
WICK_HOST_DEVICE inline float log_unit_f32(float u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  // u = m 2^e with m in [sqrt(1/2), sqrt(2)): the bits less those of sqrt(1/2), shifted, give e.
  const uint32_t bits = detail::f32_bits(u);
  const int e = static_cast<int>(bits - 0x3f3504f3u) >> 23;
  const float m = detail::f32_from_bits(bits - (static_cast<uint32_t>(e) << 23));
  const float s = __fdividef(m - 1.0f, m + 1.0f), s2 = s * s;
  const float p = fmaf(fmaf(fmaf(s2, 1.0f / 9.0f, 1.0f / 7.0f), s2, 1.0f / 5.0f), s2, 1.0f / 3.0f);
  return fmaf(static_cast<float>(e), 0.693147180559945309f, fmaf(2.0f * s, s2 * p, 2.0f * s));
#else
  return std::log(u);
#endif
}
WICK_HOST_DEVICE inline void normal_f32_pair(uint32_t w1, uint32_t w2, float mean, float std, float out[2]) {
  const float u1 = 1.0f - unit_f32(w1);
  const float theta = fmaf(6.28318530717958647692f, unit_f32(w2), -3.14159265358979323846f);
  const float r = sqrt_f32(-2.0f * log_unit_f32(u1));
  float s, c;
  sincos_f32(theta, &s, &c);
  out[0] = fmaf(r * c, std, mean);
  out[1] = fmaf(r * s, std, mean);
}
WICK_HOST_DEVICE inline void normal_f32_block(const Block& b, float mean, float std, float out[4]) {
  normal_f32_pair(b.w[0], b.w[1], mean, std, out);
  normal_f32_pair(b.w[2], b.w[3], mean, std, out + 2);
}
WICK_HOST_DEVICE inline float normal_f32(const Keys& ks, uint64_t start, uint64_t i, float mean, float std) {
  const Block b = block(ks, start + i / 4);
  const unsigned k = static_cast<unsigned>(i % 4) & ~1u;
  float z[2];
  normal_f32_pair(b.w[k], b.w[k + 1], mean, std, z);
  return z[i % 2];
}
WICK_HOST_DEVICE inline void normal_f64_block(const Block& b, double mean, double std, double out[2]) {
  const double u1 = 1.0 - unit_f64(b.w[0], b.w[1]);
  const double theta = fma(6.28318530717958647692, unit_f64(b.w[2], b.w[3]), -3.14159265358979323846);
  const double r = ::sqrt(-2.0 * ::log(u1));
  out[0] = fma(r * ::cos(theta), std, mean);
  out[1] = fma(r * ::sin(theta), std, mean);
}
WICK_HOST_DEVICE inline double normal_f64(const Keys& ks, uint64_t start, uint64_t i, double mean, double std) {
  double z[2];
  normal_f64_block(block(ks, start + i / 2), mean, std, z);
  return z[i % 2];
}

// The largest value of T below `up`, or lo rounded to T where no value of T lies in [lo, up) (host
// only: it runs once per call). T is a float type whose values are all exact in double.
template <class T>
T largest_below(double lo, double up) {
  const T low = convert<T>(lo);
  T t = convert<T>(up);
  for (int guard = 0; guard < 4 && static_cast<double>(t) >= up; ++guard) {
    if constexpr (std::is_same_v<T, double>) {
      t = std::nextafter(t, -INFINITY);
    } else if constexpr (std::is_same_v<T, float>) {
      t = std::nextafterf(t, -INFINITY);
    } else {  // a narrow type: one step of its sign-magnitude bit pattern towards -infinity
      using Bits = decltype(t.bits);
      constexpr auto kSign = static_cast<Bits>(Bits{1} << (8 * sizeof(Bits) - 1));
      const Bits b = t.bits;
      const Bits next = static_cast<double>(t) == 0 ? static_cast<Bits>(kSign | 1)  // below zero
                        : (b & kSign)               ? static_cast<Bits>(b + 1)      // a larger magnitude
                                                    : static_cast<Bits>(b - 1);
      t = T::from_bits(next);
    }
  }
  return static_cast<double>(t) < static_cast<double>(low) ? low : t;
}

// Note [Uniform upper bound]
// A uniform is computed in f32 (f64 for f64) and rounded once to T, and rounding can carry it onto
// `up` itself: over a million f16 draws in [0, 1), hundreds land on 1. Every value at or above up
// becomes the largest T below up (`top`), so the range is [lo, up) in every dtype, the same bits on
// every device; where no value of T lies in [lo, up), top is lo rounded to T. up_cut is up rounded up to f32: for a T
// that is f32 or narrower, float(v) >= up_cut exactly when v >= up.

// A call's uniform or normal stream as one object, walked the same way by every backend:
// operator()(i) gives element i (the strided paths), block(k, out) the kPer elements of block k,
// i.e. elements [kPer * k, kPer * k + kPer) (the contiguous paths, one Philox block per group);
// both use the expressions above, so either way gives the same bits. T is the element type: f32
// math, rounded once to T, for every float type but f64.
template <class T>
struct Uniform {
  static constexpr int kPer = std::is_same_v<T, double> ? 2 : 4;
  Keys ks;
  uint64_t counter;
  double lo, span, up;
  float lo_f, span_f, up_f, up_cut;
  T top;
  Uniform(uint64_t seed_, uint64_t counter_, double lo_, double up_)
      : ks(seed_keys(seed_)),
        counter(counter_),
        lo(lo_),
        span(up_ - lo_),
        up(up_),
        lo_f(static_cast<float>(lo_)),
        span_f(static_cast<float>(up_ - lo_)),
        up_f(static_cast<float>(up_)),
        up_cut(static_cast<double>(static_cast<float>(up_)) < up_ ? std::nextafterf(static_cast<float>(up_), INFINITY)
                                                                  : static_cast<float>(up_)),
        top(largest_below<T>(lo_, up_)) {}
  // v, or top where v reached up (Note [Uniform upper bound]).
  WICK_HOST_DEVICE T below_up(T v) const {
    if constexpr (std::is_same_v<T, double>)
      return v < up ? v : top;
    else
      return static_cast<float>(v) < up_cut ? v : top;
  }
  WICK_HOST_DEVICE T operator()(int64_t i) const {
    if constexpr (std::is_same_v<T, double>)
      return below_up(uniform_f64(ks, counter, static_cast<uint64_t>(i), lo, span));
    else
      return below_up(convert<T>(uniform_f32(ks, counter, static_cast<uint64_t>(i), lo_f, span_f, up_f)));
  }
  WICK_HOST_DEVICE void block(uint64_t k, T (&out)[kPer]) const { values(philox::block(ks, counter + k), out); }
  // The kPer elements of the block whose words are b.
  WICK_HOST_DEVICE void values(const Block& b, T (&out)[kPer]) const {
    for (int j = 0; j < kPer; ++j) {
      if constexpr (std::is_same_v<T, double>)
        out[j] = below_up(uniform_f64_of(b, static_cast<unsigned>(j), lo, span));
      else
        out[j] = below_up(convert<T>(uniform_f32_of(b.w[j], lo_f, span_f, up_f)));
    }
  }
};

template <class T>
struct Normal {
  static constexpr int kPer = std::is_same_v<T, double> ? 2 : 4;
  Keys ks;
  uint64_t counter;
  double mean, std;
  float mean_f, std_f;
  Normal(uint64_t seed_, uint64_t counter_, double mean_, double std_)
      : ks(seed_keys(seed_)),
        counter(counter_),
        mean(mean_),
        std(std_),
        mean_f(static_cast<float>(mean_)),
        std_f(static_cast<float>(std_)) {}
  WICK_HOST_DEVICE T operator()(int64_t i) const {
    if constexpr (std::is_same_v<T, double>)
      return normal_f64(ks, counter, static_cast<uint64_t>(i), mean, std);
    else
      return convert<T>(normal_f32(ks, counter, static_cast<uint64_t>(i), mean_f, std_f));
  }
  WICK_HOST_DEVICE void block(uint64_t k, T (&out)[kPer]) const { values(philox::block(ks, counter + k), out); }
  WICK_HOST_DEVICE void values(const Block& b, T (&out)[kPer]) const {
    if constexpr (std::is_same_v<T, double>) {
      normal_f64_block(b, mean, std, out);
    } else {
      float z[4];
      normal_f32_block(b, mean_f, std_f, z);
      for (int j = 0; j < 4; ++j) out[j] = convert<T>(z[j]);
    }
  }
};

}  // namespace wick::philox
