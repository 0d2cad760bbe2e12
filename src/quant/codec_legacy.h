// Block codecs of ggml's 32-element formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, IQ4_NL, MXFP4.
//
// quantize() gives the bytes of ggml's quantize_row_<f>_ref and dequantize_sub() the values of
// dequantize_row_<f> (Q8_1, which ggml never dequantizes: q * d), each evaluated in f32 as ggml
// writes it (Note [Quantizer rounding] in codec.h). Byte layouts (ggml-common.h):
//   Q4_0   d f16 | qs[16]            Q4_1  d f16 | m f16 | qs[16]
//   Q5_0   d f16 | qh u32 | qs[16]   Q5_1  d f16 | m f16 | qh u32 | qs[16]
//   Q8_0   d f16 | i8 qs[32]         Q8_1  d f16 | s f16 | i8 qs[32]
//   IQ4_NL d f16 | qs[16]            MXFP4 e E8M0 | qs[16]
// The 4-bit formats put element j in the low nibble of qs[j] and element j + 16 in its high nibble;
// bit j of qh is the fifth bit of element j.
//
// Non-finite inputs are not checked, as in ggml; what ggml's formulas do with them is reproduced
// where it is defined by more than IEEE arithmetic:
//  - float -> integer conversions of NaN or out-of-range values are those of x86-64 (cvttss2si:
//    INT32_MIN, then the low bits), where C leaves them undefined;
//  - a NaN scale is stored as ggml's f32 -> f16 stores any NaN, sign | 0x7e00, with the sign x86
//    gives it: set where the formula creates the NaN (IQ4_NL's d, Q8_1's s = 0 * inf: x86's
//    default NaN is negative), clear where it carries a NaN input through fabsf (Q8's amax). GPUs
//    create positive NaNs, so the sign is fixed per case rather than read from the NaN.
// IQ4_NL blocks whose largest magnitude is below 1e-15 are the one place where ggml's reference
// reads codes it never wrote (left over from the previous block, or uninitialised); they get the code of the table
// value nearest zero, as ggml's quantize_iq4_nl and its GPU quantizer write.
#pragma once

#include <cmath>
#include <cstdint>

#include "quant/codec.h"

namespace wick::quant {

namespace lq {

// f16 NaN encodings (see the header comment).
inline constexpr uint16_t kNanCreated = 0xfe00;
inline constexpr uint16_t kNanCarried = 0x7e00;

// The conversion of a float to a C integer type as x86-64 compiles it: truncation toward zero when
// the value fits in int32, else INT32_MIN (NaN included); narrower types then keep the low bits.
WICK_HOST_DEVICE inline int32_t trunc_i32_x86(float v) {
  if (v >= -2147483648.0f && v < 2147483648.0f) return static_cast<int32_t>(v);
  return static_cast<int32_t>(0x80000000u);
}
WICK_HOST_DEVICE inline uint8_t trunc_u8_x86(float v) { return static_cast<uint8_t>(trunc_i32_x86(v)); }
WICK_HOST_DEVICE inline int8_t trunc_i8_x86(float v) { return static_cast<int8_t>(trunc_i32_x86(v)); }

// A scale as ggml stores it: f16 rounded to nearest even, or the NaN encoding `nan`.
WICK_HOST_DEVICE inline void store_scale(uint8_t* p, float v, uint16_t nan) {
  if (v != v) {
    store_u16(p, nan);
  } else {
    store_f16(p, v);
  }
}

WICK_HOST_DEVICE inline int min_int(int a, int b) { return a < b ? a : b; }

// Packs codes q[0 .. 32) two to a byte, element j low and j + 16 high, each code first and-ed with
// `mask`: ggml masks the 5-bit codes (0x0f) but ORs the 4-bit ones as they are (0xff).
WICK_HOST_DEVICE inline void pack_nibbles(const uint8_t* q, uint8_t* qs, int mask) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & mask) | ((q[j + 16] & mask) << 4));
}
// The fifth bits of codes q[0 .. 32), bit j for element j.
WICK_HOST_DEVICE inline uint32_t fifth_bits(const uint8_t* q) {
  uint32_t qh = 0;
  for (int j = 0; j < 32; ++j) qh |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  return qh;
}
// Code of element j (0 <= j < 32) from packed nibbles.
WICK_HOST_DEVICE inline int nibble(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0x0f) : (qs[j - 16] >> 4); }

// The 5-bit codes of Q5_0/Q5_1: Q4's nibble-pair rule plus bit j of qh.
WICK_HOST_DEVICE inline int code5(const uint8_t* qs, uint32_t qh, int j) {
  return nibble(qs, j) | static_cast<int>(((qh >> j) & 1u) << 4);
}

// ggml's kvalues_mxfp4: the E2M1 values doubled, codes 0-7 positive {0, 1, 2, 3, 4, 6, 8, 12} and
// 8-15 their negatives (code 8 is 0).
WICK_HOST_DEVICE constexpr int mxfp4_value(int i) {
  const int mag = static_cast<int>((0xc8643210u >> (4 * (i & 7))) & 0xfu);
  return (i & 8) ? -mag : mag;
}
static_assert([] {
  const int kTable[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  for (int i = 0; i < 16; ++i) {
    if (mxfp4_value(i) != kTable[i]) return false;
  }
  return true;
}());

// ggml's E8M0 -> f32 halved (MXFP4's values are doubled): 2^(e - 128), subnormal for e < 2.
WICK_HOST_DEVICE inline float e8m0_half(uint8_t e) {
  return detail::f32_from_bits(e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23);
}

// floorf(log2f(a)) for finite a > 0, with log2f correctly rounded (glibc's log2f gives the same
// floor for every float; GPU log2f is not correctly rounded, so this works on the bits). For
// a = m 2^k, m in [1, 2), it is k unless k + log2(m) rounds to k + 1: when 1 - log2(m) is below
// half the spacing of the floats between k and k + 1 next to k + 1, 2^(s - 24) with
// s = floor(log2(span)), span = k if k + 1 > 0 else -(k + 1). That holds for exactly the top
// kTop[s] mantissas (counted in high precision), and for none when s < 1.
WICK_HOST_DEVICE inline int floor_log2_rounded(float a) {
  const uint32_t u = detail::f32_bits(a);
  int k = static_cast<int>(u >> 23) - 127;
  uint32_t mant = u & 0x7fffffu;
  if ((u >> 23) == 0) {  // subnormal: normalise
    k = -126;
    mant = u;
    while (!(mant & 0x800000u)) {
      mant <<= 1;
      --k;
    }
    mant &= 0x7fffffu;
  }
  const int next = k + 1;
  const int span = next > 0 ? next - 1 : -next;
  int s = -1;  // floor(log2(span)); -1 for span 0
  for (int v = span; v != 0; v >>= 1) ++s;
  if (s < 1) return k;
  constexpr uint64_t kTop = 0x582c160b05020100ull;  // kTop[s] = byte s: 0, 1, 2, 5, 11, 22, 44, 88
  return mant >= 0x800000u - static_cast<uint32_t>((kTop >> (8 * s)) & 0xffu) ? next : k;
}

// ggml's MXFP4 shared exponent (uint8_t)(floorf(log2f(amax)) - 2 + 127), 0 for amax = 0; the
// conversion is x86's, so an inf amax gives 0 and one below 2^-125 wraps around to e >= 232.
WICK_HOST_DEVICE inline uint8_t mxfp4_exponent(float amax) {
  if (!(amax > 0.0f)) return 0;
  if (amax > 3.40282347e38f) return 0;
  return static_cast<uint8_t>(floor_log2_rounded(amax) - 2 + 127);
}

// ggml's best_index_mxfp4: the code whose value * d is nearest x, the first one on ties.
WICK_HOST_DEVICE inline int mxfp4_best_index(float x, float d) {
  int best = 0;
  float best_err = fabsf(static_cast<float>(mxfp4_value(0)) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = fabsf(static_cast<float>(mxfp4_value(i)) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return best;
}

// Q8_0/Q8_1: the scale d = amax / 127 and the codes roundf(x * (1 / d)). ggml's MAX(amax, |x|) keeps |x|
// unless amax > |x|, so a NaN element resets the running max to the next element's magnitude.
WICK_HOST_DEVICE inline float quantize_q8(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = fabsf(x[j]);
    amax = amax > a ? amax : a;
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 32; ++j) q[j] = trunc_i8_x86(roundf(x[j] * id));
  return d;
}

// The first element of largest magnitude (ggml's "max" of Q4_0/Q5_0/IQ4_NL); 0 when none exceeds 0.
WICK_HOST_DEVICE inline float signed_absmax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (amax < fabsf(x[j])) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  return max;
}

// Q4_0/Q5_0 (levels = 8 / 16): d = max / -levels and codes
// min(2 levels - 1, (int8)(x * (1 / d) + levels + 0.5)).
template <int kLevels>
WICK_HOST_DEVICE inline void quantize_symmetric(const float* x, uint8_t* blk, uint8_t* q) {
  const float d = signed_absmax(x) / -static_cast<float>(kLevels);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(blk, d);  // max is an element, never NaN
  for (int j = 0; j < 32; ++j) {
    const int8_t t = trunc_i8_x86(x[j] * id + (static_cast<float>(kLevels) + 0.5f));
    q[j] = static_cast<uint8_t>(min_int(2 * kLevels - 1, t));
  }
}

// Q4_1/Q5_1 (levels = 16 / 32): d = (max - min) / (levels - 1), m = min and codes
// (x - min) / d + 0.5 truncated, Q4_1 clamped to 15 (Q5_1 is not clamped in ggml).
template <int kLevels>
WICK_HOST_DEVICE inline void quantize_affine(const float* x, uint8_t* blk, uint8_t* q) {
  float min = 3.40282347e38f, max = -3.40282347e38f;
  for (int j = 0; j < 32; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / static_cast<float>(kLevels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(blk, d);  // never NaN: max >= -FLT_MAX and min <= FLT_MAX, so max - min is not inf - inf
  store_f16(blk + 2, min);
  for (int j = 0; j < 32; ++j) {
    const float v = (x[j] - min) * id + 0.5f;
    if constexpr (kLevels == 16) {
      q[j] = static_cast<uint8_t>(min_int(15, trunc_i8_x86(v)));
    } else {
      q[j] = trunc_u8_x86(v);
    }
  }
}

}  // namespace lq

template <>
struct Codec<QFormat::Q4_0> {
  static constexpr int kElems = 32, kBytes = 18;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    lq::quantize_symmetric<8>(x, blk, q);
    lq::pack_nibbles(q, blk + 2, 0xff);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(lq::nibble(blk + 2, j) - 8) * d;
  }
};

template <>
struct Codec<QFormat::Q4_1> {
  static constexpr int kElems = 32, kBytes = 20;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    lq::quantize_affine<16>(x, blk, q);
    lq::pack_nibbles(q, blk + 4, 0xff);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    const float m = load_f16(blk + 2);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(lq::nibble(blk + 4, j)) * d + m;
  }
};

template <>
struct Codec<QFormat::Q5_0> {
  static constexpr int kElems = 32, kBytes = 22;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    lq::quantize_symmetric<16>(x, blk, q);
    store_u32(blk + 2, lq::fifth_bits(q));
    lq::pack_nibbles(q, blk + 6, 0x0f);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    const uint32_t qh = load_u32(blk + 2);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(lq::code5(blk + 6, qh, j) - 16) * d;
  }
};

template <>
struct Codec<QFormat::Q5_1> {
  static constexpr int kElems = 32, kBytes = 24;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    lq::quantize_affine<32>(x, blk, q);
    store_u32(blk + 4, lq::fifth_bits(q));
    lq::pack_nibbles(q, blk + 8, 0x0f);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    const float m = load_f16(blk + 2);
    const uint32_t qh = load_u32(blk + 4);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(lq::code5(blk + 8, qh, j)) * d + m;
  }
};

template <>
struct Codec<QFormat::Q8_0> {
  static constexpr int kElems = 32, kBytes = 34;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    int8_t q[32];
    const float d = lq::quantize_q8(x, q);
    lq::store_scale(blk, d, lq::kNanCarried);
    for (int j = 0; j < 32; ++j) blk[2 + j] = static_cast<uint8_t>(q[j]);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(blk[2 + j])) * d;
  }
};

// s = sum(q) * d with the unrounded f32 d, rounded to f16 once from that f32 product.
template <>
struct Codec<QFormat::Q8_1> {
  static constexpr int kElems = 32, kBytes = 36;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    int8_t q[32];
    const float d = lq::quantize_q8(x, q);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      blk[4 + j] = static_cast<uint8_t>(q[j]);
      sum += q[j];
    }
    lq::store_scale(blk, d, lq::kNanCarried);
    // NaN here is d's (carried) or 0 * inf (created).
    lq::store_scale(blk + 2, static_cast<float>(sum) * d, d != d ? lq::kNanCarried : lq::kNanCreated);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(blk[4 + j])) * d;
  }
};

// ggml's quantize_row_iq4_nl_ref runs its search with ntry = -1: one pass with d = max / -127 picks
// the codes, and the stored scale is their weighted least-squares fit (weights x^2), with no trial
// scales and no re-pick of the codes for the fitted scale.
template <>
struct Codec<QFormat::IQ4_NL> {
  static constexpr int kElems = 32, kBytes = 18;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float ax = fabsf(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    if (amax < 1e-15f) {  // ggml's GROUP_MAX_EPS
      store_f16(blk, 0.0f);
      for (int j = 0; j < 16; ++j) blk[2 + j] = 0x88;  // code 8: the value 1, nearest 0
      return;
    }
    const float d0 = max / static_cast<float>(iq4nl_value(0));
    const float id = 1.0f / d0;
    float sumqx = 0.0f, sumq2 = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const int l = iq4nl_best_index(id * x[j]);
      q[j] = static_cast<uint8_t>(l);
      const float v = static_cast<float>(iq4nl_value(l));
      const float w = x[j] * x[j];
      sumqx += w * v * x[j];
      sumq2 += w * v * v;
    }
    const float d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    lq::store_scale(blk, d, lq::kNanCreated);  // NaN only from inf - inf or inf / inf
    lq::pack_nibbles(q, blk + 2, 0xff);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = load_f16(blk);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(iq4nl_value(lq::nibble(blk + 2, j)));
  }
};

template <>
struct Codec<QFormat::MXFP4> {
  static constexpr int kElems = 32, kBytes = 17;
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t q[32];
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (amax < fabsf(x[j])) amax = fabsf(x[j]);
    }
    const uint8_t e = lq::mxfp4_exponent(amax);
    const float d = lq::e8m0_half(e);
    blk[0] = e;
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(lq::mxfp4_best_index(x[j], d));
    lq::pack_nibbles(q, blk + 1, 0xff);
  }
  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int /*sub*/, float* y) {
    const float d = lq::e8m0_half(blk[0]);
    for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(lq::mxfp4_value(lq::nibble(blk + 1, j))) * d;
  }
};

}  // namespace wick::quant
