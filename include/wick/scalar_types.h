// Host (and device) scalar types for the 16- and 8-bit floats: bf16, f16 and f8e4m3.
//
// Each is a struct holding the raw bits. Conversions round to nearest even, once (from f64 through
// an f32 rounded to odd, which cannot cause a second rounding);
// NaN, infinities and subnormals follow the hardware formats:
//   f16     IEEE binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; inf and NaN.
//   bf16    the top 16 bits of an IEEE binary32: 1 sign, 8 exponent, 7 mantissa bits; inf and NaN.
//   f8e4m3  OCP FP8 E4M3 ("fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities,
//           NaN is S.1111.111, largest finite 448. Conversion is non-saturating (as CUDA's
//           __NV_NOSAT and PyTorch's float8_e4m3fn): anything that rounds above 448, and +-inf,
//           becomes NaN.
// The functions are constexpr and marked WICK_HOST_DEVICE so that GPU kernels can use them too.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define WICK_HOST_DEVICE __host__ __device__
#else
#define WICK_HOST_DEVICE
#endif

namespace wick {

namespace detail {

// HIP's device pass has no device std::memcpy; the builtin is the same bit copy.
WICK_HOST_DEVICE inline uint32_t f32_bits(float f) {
#if defined(__HIP_DEVICE_COMPILE__)
  return __builtin_bit_cast(uint32_t, f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
WICK_HOST_DEVICE inline float f32_from_bits(uint32_t u) {
#if defined(__HIP_DEVICE_COMPILE__)
  return __builtin_bit_cast(float, u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// Rounds the f32 bit pattern `u` (sign cleared) to a narrower float with `man` mantissa bits,
// exponent bias `bias` and minimum normal exponent 1 - bias. Returns the magnitude bits of the
// narrow format (exponent << man | mantissa), or `overflow` when the result is too large for a
// finite value of the narrow format (the caller decides what overflow means: inf or NaN).
// `max_bits` is the largest finite magnitude encoding. NaN is handled by the caller.
WICK_HOST_DEVICE inline uint32_t round_f32_to_narrow(uint32_t u, int man, int bias, uint32_t max_bits,
                                                     uint32_t overflow) {
  const int exp32 = static_cast<int>(u >> 23);                 // biased by 127; 0 for zero/subnormal f32
  if (exp32 == 0xff) return overflow;                          // infinity
  const int e = exp32 - 127;                                   // unbiased exponent of the f32 value
  uint32_t mant = (u & 0x7fffffu) | (exp32 ? 0x800000u : 0u);  // 24-bit significand
  int exp_narrow = e + bias;                                   // biased narrow exponent if normal
  int shift = 23 - man;                                        // bits dropped for a normal result
  if (exp_narrow <= 0) {                                       // subnormal in the narrow format
    shift += 1 - exp_narrow;
    exp_narrow = 0;
    if (shift > 31) return 0;  // rounds to zero (even far below half the smallest subnormal)
  }
  if (exp32 == 0) {
    // f32 subnormals are far below every narrow format's smallest subnormal.
    return 0;
  }
  const uint32_t kept = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  uint32_t r = kept;
  if (rem > half || (rem == half && (kept & 1u))) r += 1;
  // For a normal result `r` still holds the implicit bit; fold it into the exponent. A carry out
  // of the significand increments the exponent naturally through the addition.
  uint32_t bits;
  if (exp_narrow == 0) {
    bits = r;  // subnormal; a carry into bit `man` makes it the smallest normal, which is right
  } else {
    bits = (static_cast<uint32_t>(exp_narrow) << man) + (r - (1u << man));
  }
  if (bits > max_bits) return overflow;
  return bits;
}

// f64 -> f32 rounding to odd: truncate, then set the lowest bit when the result is inexact.
// Rounding to odd first and then to nearest even into a format with at least two fewer mantissa
// bits gives the correctly rounded result, so f64 -> bf16/f16/f8 rounds once, not twice.
WICK_HOST_DEVICE inline float f64_to_f32_round_odd(double d) {
  float f = static_cast<float>(d);
  if (!(d == d)) return f;
  uint32_t u = f32_bits(f);
  const double back = static_cast<double>(f);
  const bool away = (d >= 0) ? (back > d) : (back < d);
  if (away) u -= 1;  // one step toward zero (|f| > 0 here, so no underflow of the bits)
  if (static_cast<double>(f32_from_bits(u)) != d) u |= 1u;
  return f32_from_bits(u);
}

// An integer magnitude -> f32 rounded to odd (24 significant bits, the dropped bits folded into the
// lowest kept one), for the same reason: int64 -> bf16 must not round twice through f32.
WICK_HOST_DEVICE inline float u64_to_f32_round_odd(uint64_t m) {
  int width = 0;
  for (uint64_t t = m; t; t >>= 1) ++width;
  if (width <= 24) return static_cast<float>(m);  // exact
  const int drop = width - 24;
  uint64_t kept = m >> drop;
  if (m & ((uint64_t{1} << drop) - 1)) kept |= 1u;
  // kept < 2^24 and is exact in f32; scaling by a power of two is exact too.
  float f = static_cast<float>(kept);
  for (int i = 0; i < drop; ++i) f *= 2.0f;
  return f;
}
WICK_HOST_DEVICE inline float i64_to_f32_round_odd(int64_t v) {
  const uint64_t m = v < 0 ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  const float f = u64_to_f32_round_odd(m);
  return v < 0 ? -f : f;
}

}  // namespace detail

struct f16 {
  uint16_t bits = 0;
  f16() = default;
  WICK_HOST_DEVICE static f16 from_bits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
  WICK_HOST_DEVICE explicit f16(float f) : bits(from_f32(f)) {}
  WICK_HOST_DEVICE explicit f16(double d) : bits(from_f32(detail::f64_to_f32_round_odd(d))) {}
  WICK_HOST_DEVICE explicit operator float() const { return to_f32(bits); }
  WICK_HOST_DEVICE explicit operator double() const { return to_f32(bits); }

  WICK_HOST_DEVICE static uint16_t from_f32(float f) {
    const uint32_t u = detail::f32_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x1ffu));  // NaN
#if defined(__CUDA_ARCH__)
    // The hardware conversion (round to nearest even, IEEE subnormals, overflow to inf) gives the
    // bits of the code below for every non-NaN input, in one instruction instead of about twenty;
    // NaN keeps the branch above, since the hardware returns one canonical NaN.
    uint16_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    return static_cast<uint16_t>(sign | detail::round_f32_to_narrow(a, 10, 15, 0x7bffu, 0x7c00u));
#endif
  }
  WICK_HOST_DEVICE static float to_f32(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t e = (h >> 10) & 0x1fu;
    uint32_t m = h & 0x3ffu;
    if (e == 0x1f) return detail::f32_from_bits(sign | 0x7f800000u | (m << 13));
#if defined(__CUDA_ARCH__)
    // The GPUs' widening is exact for every finite f16 (subnormals included), in one instruction
    // instead of the exponent branches below; inf and NaN keep the line above, which keeps a NaN's
    // payload.
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
#elif defined(__HIP_DEVICE_COMPILE__)
    return static_cast<float>(__builtin_bit_cast(_Float16, h));  // v_cvt_f32_f16, exact likewise
#endif
    if (e != 0) return detail::f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return detail::f32_from_bits(sign);
    // subnormal: value = m * 2^-24; normalise
    int shift = 0;
    while (!(m & 0x400u)) {
      m <<= 1;
      ++shift;
    }
    return detail::f32_from_bits(sign | (static_cast<uint32_t>(113 - shift) << 23) | ((m & 0x3ffu) << 13));
  }
};

struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  WICK_HOST_DEVICE static bf16 from_bits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
  WICK_HOST_DEVICE explicit bf16(float f) : bits(from_f32(f)) {}
  WICK_HOST_DEVICE explicit bf16(double d) : bits(from_f32(detail::f64_to_f32_round_odd(d))) {}
  WICK_HOST_DEVICE explicit operator float() const { return to_f32(bits); }
  WICK_HOST_DEVICE explicit operator double() const { return to_f32(bits); }

  WICK_HOST_DEVICE static uint16_t from_f32(float f) {
    const uint32_t u = detail::f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    // The hardware conversion rounds to nearest even, keeps subnormals and overflows to inf: the
    // bits of the code below for every non-NaN input, in one instruction instead of five.
    uint16_t h;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
#else
    // Round to nearest even on the dropped 16 bits; overflow carries into inf naturally.
    const uint32_t lsb = (u >> 16) & 1u;
    return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
#endif
  }
  WICK_HOST_DEVICE static float to_f32(uint16_t h) { return detail::f32_from_bits(static_cast<uint32_t>(h) << 16); }
};

// H::from_f32(lo) | H::from_f32(hi) << 16 for H = f16 or bf16: on NVIDIA GPUs from sm_80 on, one
// instruction for a pair without NaN (the hardware gives a NaN no payload), else two conversions.
template <class H>
WICK_HOST_DEVICE inline uint32_t pack2(float lo, float hi) {
  static_assert(std::is_same_v<H, f16> || std::is_same_v<H, bf16>);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (!(lo != lo || hi != hi)) {
    uint32_t r;
    if constexpr (std::is_same_v<H, bf16>)
      asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
  }
#endif
  return H::from_f32(lo) | static_cast<uint32_t>(H::from_f32(hi)) << 16;
}

struct f8e4m3 {
  uint8_t bits = 0;
  f8e4m3() = default;
  WICK_HOST_DEVICE static f8e4m3 from_bits(uint8_t b) {
    f8e4m3 h;
    h.bits = b;
    return h;
  }
  WICK_HOST_DEVICE explicit f8e4m3(float f) : bits(from_f32(f)) {}
  WICK_HOST_DEVICE explicit f8e4m3(double d) : bits(from_f32(detail::f64_to_f32_round_odd(d))) {}
  WICK_HOST_DEVICE explicit operator float() const { return to_f32(bits); }
  WICK_HOST_DEVICE explicit operator double() const { return to_f32(bits); }

  WICK_HOST_DEVICE static uint8_t from_f32(float f) {
    const uint32_t u = detail::f32_bits(f);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);  // NaN
    return static_cast<uint8_t>(sign | detail::round_f32_to_narrow(a, 3, 7, 0x7eu, 0x7fu));
  }
  WICK_HOST_DEVICE static float to_f32(uint8_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x80u) << 24;
    const uint32_t e = (h >> 3) & 0xfu;
    uint32_t m = h & 0x7u;
    if (e == 0xf && m == 0x7) return detail::f32_from_bits(sign | 0x7fc00000u);
    if (e != 0) return detail::f32_from_bits(sign | ((e + 120u) << 23) | (m << 20));
    if (m == 0) return detail::f32_from_bits(sign);
    int shift = 0;
    while (!(m & 0x8u)) {
      m <<= 1;
      ++shift;
    }
    return detail::f32_from_bits(sign | (static_cast<uint32_t>(121 - shift) << 23) | ((m & 0x7u) << 20));
  }
};

}  // namespace wick
