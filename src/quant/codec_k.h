// Block codecs of ggml's 256-element super-block formats: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_XS.
//
// quantize() gives the bytes of ggml's quantize_row_<f>_ref (IQ4_XS: quantize_iq4_xs without
// importance weights) and dequantize_sub() the values of dequantize_row_<f>, each evaluated in f32
// as ggml writes it (Note [Quantizer rounding] in codec.h): the same operations in the same order,
// the same int -> float conversions and integer truncations. The byte layout of each block is given
// by the kOff* constants of its codec (ggml-common.h's struct fields, in order).
//
// Element e of a super-block is in sub-block e / 32 and (for the 16-element scale formats) in scale
// group e / 16. The packed codes are not in element order: Q2_K/Q3_K put elements e, e + 32, e + 64,
// e + 96 of each 128 into the four bit pairs of one byte; Q4_K/Q5_K elements e, e + 32 of each 64
// into the two nibbles; Q6_K interleaves four 32-element runs of each 128 over ql and qh; IQ4_XS
// pairs elements e, e + 16 of each 32 in one byte.
//
// Non-finite inputs are not checked (as in ggml). nearest_int reads the mantissa bits of a sum, so a
// NaN there gives a code that depends on the NaN's payload, and GPU arithmetic returns a canonical
// NaN where x86 propagates the operand's: such blocks may differ between host and device.
#pragma once

#include <cmath>
#include <cstdint>

#include "quant/codec.h"

namespace wick::quant {

namespace kq {

// ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is quantized as all zero.
inline constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest, ties to even, for |v| < 2^22: adding 1.5 * 2^23 puts round(v) + 2^22 in the low
// 23 mantissa bits. Out of that range (and for NaN, inf) the result is whatever those bits hold.
WICK_HOST_DEVICE inline int nearest_int(float v) {
  const uint32_t bits = detail::f32_bits(v + 12582912.f);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

WICK_HOST_DEVICE inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

// ggml's make_qkx2_quants: codes L in [0, nmax] with x ~ scale * L - the_min (the_min >= 0), from a
// first guess over [min(x, 0), max x] and nstep + 1 trial inverse scales, each refitted by weighted
// least squares and kept when its weighted error (absolute if use_mad, else squared) is smaller.
WICK_HOST_DEVICE inline float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                                               float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                                               bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(clamp_int(l, 0, nmax));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? fabsf(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      const float fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
        diff = use_mad ? fabsf(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ggml's make_q3_quants with do_rmse: symmetric codes L in [0, 2 nmax) (offset nmax), refined by up
// to 5 passes of coordinate descent on the x^2-weighted fit; returns the least-squares scale.
WICK_HOST_DEVICE inline float make_q3_quants_rmse(int n, int nmax, const float* x, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = fabsf(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// ggml's make_qx_quants with rmse_type 1 and no importance weights: codes L in [0, 2 nmax) (offset
// nmax), the best x^2-weighted least-squares fit over 19 trial inverse scales -(nmax + 0.1 is) / max.
WICK_HOST_DEVICE inline float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L) {
  float max = 0;
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = fabsf(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  float scale = suml2 != 0.f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float w = x[i] * x[i];
      sumlx += w * x[i] * static_cast<float>(l);
      suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

// ggml's 4-bit scale/min packing of Q4_K and Q5_K (get_scale_min_k4): 8 6-bit scales and 8 6-bit
// mins in 12 bytes; bytes 0-3 scales 0-3 (+ high bits of scales 4-7), bytes 4-7 mins 0-3 (+ high bits
// of mins 4-7), bytes 8-11 the low nibbles of scales 4-7 (low) and mins 4-7 (high).
WICK_HOST_DEVICE inline void get_scale_min_k4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4));
  }
}

// Q3_K's 16 6-bit scales (stored + 32) in 12 bytes: low nibbles of scales 0-7 in bytes 0-7, of 8-15
// in their high nibbles; the top two bits of scale j in byte 8 + j % 4 at bit 2 (j / 4).
WICK_HOST_DEVICE inline int q3k_scale(const uint8_t* s, int j) {
  const int lo = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  return (lo | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// The scale part of quantize_row_q4_K_ref / q5_K_ref: f16 d, dmin and the 12 scale bytes at
// blk[0..16), and the codes L[256] in [0, nmax] recomputed from the rounded f16 d and dmin.
WICK_HOST_DEVICE inline void quantize_scale_min_k4(const float* x, int nmax, float rmin, int nstep, uint8_t* blk,
                                                   uint8_t* L) {
  uint8_t Laux[32];
  float weights[32];
  float mins[8];
  float scales[8];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xb = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xb[l] * xb[l];
    const float av_x = sqrtf(sum_x2 / 32.f);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + fabsf(xb[l]);
    scales[j] = make_qkx2_quants(32, nmax, xb, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f, nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t* s = blk + 4;
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping to 63.
    uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    if (ls > 63) ls = 63;
    if (lm > 63) lm = 63;
    if (j < 4) {
      s[j] = ls;
      s[j + 4] = lm;
    } else {
      s[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      s[j - 4] = static_cast<uint8_t>(s[j - 4] | ((ls >> 4) << 6));
      s[j - 0] = static_cast<uint8_t>(s[j - 0] | ((lm >> 4) << 6));
    }
  }
  store_f16(blk + 0, max_scale / 63.f);
  store_f16(blk + 2, max_min / 63.f);
  const float d_all = load_f16(blk + 0);
  const float dmin_all = load_f16(blk + 2);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    get_scale_min_k4(j, s, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.f) continue;  // keeps the codes of make_qkx2_quants
    const float dm = dmin_all * static_cast<float>(m);
    for (int ii = 0; ii < 32; ++ii) {
      L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
  }
}

// Q2_K / Q3_K code packing: byte 32 h + l of qs holds elements 128 h + l + 32 k at bits 2k, 2k + 1.
WICK_HOST_DEVICE inline void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < 256; j += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[j / 4 + l] =
          static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
    }
  }
}

}  // namespace kq

// Q2_K: 16 groups of 16, x ~ d * sc * q - dmin * m with 2-bit q and 4-bit sc, m.
template <>
struct Codec<QFormat::Q2_K> {
  static constexpr int kElems = 256, kBytes = 84;
  static constexpr int kOffScales = 0, kOffQs = 16, kOffD = 80, kOffDmin = 82;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    constexpr float kQ4Scale = 15.f;
    uint8_t L[256];
    uint8_t Laux[16];
    float weights[16];
    float mins[16];
    float scales[16];
    float max_scale = 0;
    float max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = fabsf(x[16 * j + l]);
      scales[j] = kq::make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    uint8_t* sc = blk + kOffScales;
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j) sc[j] = static_cast<uint8_t>(kq::nearest_int(iscale * scales[j]));
      store_f16(blk + kOffD, max_scale / kQ4Scale);
    } else {
      for (int j = 0; j < 16; ++j) sc[j] = 0;
      store_f16(blk + kOffD, 0.f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) {
        const int l = kq::nearest_int(iscale * mins[j]);
        sc[j] = static_cast<uint8_t>(sc[j] | (static_cast<unsigned>(l) << 4));
      }
      store_f16(blk + kOffDmin, max_min / kQ4Scale);
    } else {
      store_f16(blk + kOffDmin, 0.f);
    }
    const float d_all = load_f16(blk + kOffD);
    const float dmin_all = load_f16(blk + kOffDmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(sc[j] & 0xF);
      if (d == 0.f) continue;  // keeps the codes of make_qkx2_quants
      const float dm = dmin_all * static_cast<float>(sc[j] >> 4);
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<uint8_t>(kq::clamp_int(kq::nearest_int((x[16 * j + ii] + dm) / d), 0, 3));
      }
    }
    kq::pack_2bit(L, blk + kOffQs);
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    const float d = load_f16(blk + kOffD);
    const float dmin = load_f16(blk + kOffDmin);
    const uint8_t* q = blk + kOffQs + 32 * (sub / 4);
    const int shift = 2 * (sub % 4);
    for (int h = 0; h < 2; ++h) {
      const uint8_t sc = blk[kOffScales + 2 * sub + h];
      const float dl = d * static_cast<float>(sc & 0xF);
      const float ml = dmin * static_cast<float>(sc >> 4);
      for (int l = 0; l < 16; ++l) y[16 * h + l] = dl * static_cast<float>((q[16 * h + l] >> shift) & 3) - ml;
    }
  }
};

// Q3_K: 16 groups of 16, x ~ d * (sc - 32) * (q - 4) with 3-bit q (2 bits in qs, the third in hmask)
// and 6-bit sc.
template <>
struct Codec<QFormat::Q3_K> {
  static constexpr int kElems = 256, kBytes = 110;
  static constexpr int kOffHmask = 0, kOffQs = 32, kOffScales = 96, kOffD = 108;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = kq::make_q3_quants_rmse(16, 4, x + 16 * j, L + 16 * j);
      const float scale = fabsf(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    uint8_t* s = blk + kOffScales;
    for (int j = 0; j < 12; ++j) s[j] = 0;
    if (max_scale != 0.f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml stores nearest_int into an int8_t before clamping.
        const int8_t l8 = static_cast<int8_t>(kq::nearest_int(iscale * scales[j]));
        const int l = kq::clamp_int(l8, -32, 31) + 32;
        if (j < 8) {
          s[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          s[j - 8] = static_cast<uint8_t>(s[j - 8] | ((l & 0xF) << 4));
        }
        s[j % 4 + 8] = static_cast<uint8_t>(s[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      store_f16(blk + kOffD, 1 / iscale);
    } else {
      store_f16(blk + kOffD, 0.f);
    }
    const float d_all = load_f16(blk + kOffD);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(kq::q3k_scale(s, j));
      if (d == 0.f) continue;  // keeps the codes of make_q3_quants
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(kq::clamp_int(kq::nearest_int(x[16 * j + ii] / d), -4, 3) + 4);
      }
    }
    // The third bit of element j goes to hmask[j % 32], bit j / 32.
    uint8_t* hmask = blk + kOffHmask;
    for (int j = 0; j < 32; ++j) hmask[j] = 0;
    uint8_t U[256];
    for (int j = 0; j < 256; ++j) {
      int l = L[j];
      if (l > 3) {
        hmask[j % 32] = static_cast<uint8_t>(hmask[j % 32] | (1u << (j / 32)));
        l -= 4;
      }
      U[j] = static_cast<uint8_t>(l);
    }
    kq::pack_2bit(U, blk + kOffQs);
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    const float d_all = load_f16(blk + kOffD);
    const uint8_t* q = blk + kOffQs + 32 * (sub / 4);
    const uint8_t* hm = blk + kOffHmask;
    const int shift = 2 * (sub % 4);
    for (int h = 0; h < 2; ++h) {
      const float dl = d_all * static_cast<float>(kq::q3k_scale(blk + kOffScales, 2 * sub + h));
      for (int l = 0; l < 16; ++l) {
        const int i = 16 * h + l;
        const int v = ((q[i] >> shift) & 3) - (((hm[i] >> sub) & 1) ? 0 : 4);
        y[i] = dl * static_cast<float>(v);
      }
    }
  }
};

// Q4_K: 8 sub-blocks of 32, x ~ d * sc * q - dmin * m with 4-bit q and 6-bit sc, m.
template <>
struct Codec<QFormat::Q4_K> {
  static constexpr int kElems = 256, kBytes = 144;
  static constexpr int kOffD = 0, kOffDmin = 2, kOffScales = 4, kOffQs = 16;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t L[256];
    kq::quantize_scale_min_k4(x, 15, -1.f, 20, blk, L);
    uint8_t* q = blk + kOffQs;
    for (int j = 0; j < 256; j += 64) {
      for (int l = 0; l < 32; ++l) q[l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
      q += 32;
    }
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    uint8_t sc, m;
    kq::get_scale_min_k4(sub, blk + kOffScales, &sc, &m);
    const float d = load_f16(blk + kOffD) * static_cast<float>(sc);
    const float dm = load_f16(blk + kOffDmin) * static_cast<float>(m);
    const uint8_t* q = blk + kOffQs + 32 * (sub / 2);
    const int shift = 4 * (sub % 2);
    for (int l = 0; l < 32; ++l) y[l] = d * static_cast<float>((q[l] >> shift) & 0xF) - dm;
  }
};

// Q5_K: Q4_K with a fifth code bit: element e's in qh[e % 32], bit e / 32.
template <>
struct Codec<QFormat::Q5_K> {
  static constexpr int kElems = 256, kBytes = 176;
  static constexpr int kOffD = 0, kOffDmin = 2, kOffScales = 4, kOffQh = 16, kOffQs = 48;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    uint8_t L[256];
    kq::quantize_scale_min_k4(x, 31, -0.5f, 15, blk, L);
    uint8_t* qh = blk + kOffQh;
    uint8_t* ql = blk + kOffQs;
    for (int j = 0; j < 32; ++j) qh[j] = 0;
    for (int n = 0; n < 256; n += 64) {
      const int bit = n / 32;
      for (int j = 0; j < 32; ++j) {
        int l1 = L[n + j];
        if (l1 > 15) {
          l1 -= 16;
          qh[j] = static_cast<uint8_t>(qh[j] | (1u << bit));
        }
        int l2 = L[n + j + 32];
        if (l2 > 15) {
          l2 -= 16;
          qh[j] = static_cast<uint8_t>(qh[j] | (2u << bit));
        }
        ql[j] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      ql += 32;
    }
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    uint8_t sc, m;
    kq::get_scale_min_k4(sub, blk + kOffScales, &sc, &m);
    const float d = load_f16(blk + kOffD) * static_cast<float>(sc);
    const float dm = load_f16(blk + kOffDmin) * static_cast<float>(m);
    const uint8_t* ql = blk + kOffQs + 32 * (sub / 2);
    const uint8_t* qh = blk + kOffQh;
    const int shift = 4 * (sub % 2);
    for (int l = 0; l < 32; ++l) {
      const int v = ((ql[l] >> shift) & 0xF) + (((qh[l] >> sub) & 1) ? 16 : 0);
      y[l] = d * static_cast<float>(v) - dm;
    }
  }
};

// Q6_K: 16 groups of 16, x ~ d * sc * (q - 32) with 6-bit q (4 bits in ql, 2 in qh) and int8 sc.
template <>
struct Codec<QFormat::Q6_K> {
  static constexpr int kElems = 256, kBytes = 210;
  static constexpr int kOffQl = 0, kOffQh = 128, kOffScales = 192, kOffD = 208;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    int8_t L[256];
    float scales[16];
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      const float scale = kq::make_qx_quants_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
      scales[ib] = scale;
      const float abs_scale = fabsf(scale);
      if (abs_scale > max_abs_scale) {
        max_abs_scale = abs_scale;
        max_scale = scale;
      }
    }
    if (max_abs_scale < kq::kGroupMaxEps) {
      for (int i = 0; i < kBytes; ++i) blk[i] = 0;
      return;
    }
    const float iscale = -128.f / max_scale;
    store_f16(blk + kOffD, 1 / iscale);
    int8_t* sc = reinterpret_cast<int8_t*>(blk + kOffScales);
    for (int ib = 0; ib < 16; ++ib) {
      const int l = kq::nearest_int(iscale * scales[ib]);
      sc[ib] = static_cast<int8_t>(l < 127 ? l : 127);
    }
    const float d_all = load_f16(blk + kOffD);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(sc[j]);
      if (d == 0.f) continue;  // keeps the codes of make_qx_quants
      for (int ii = 0; ii < 16; ++ii) {
        L[16 * j + ii] = static_cast<int8_t>(kq::clamp_int(kq::nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
      }
    }
    uint8_t* ql = blk + kOffQl;
    uint8_t* qh = blk + kOffQh;
    for (int j = 0; j < 256; j += 128) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l + 0], q2 = L[j + l + 32], q3 = L[j + l + 64], q4 = L[j + l + 96];
        ql[l + 0] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
      ql += 64;
      qh += 32;
    }
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    const float d = load_f16(blk + kOffD);
    const int n = sub / 4, k = sub % 4;
    const uint8_t* ql = blk + kOffQl + 64 * n + 32 * (k & 1);
    const uint8_t* qh = blk + kOffQh + 32 * n;
    const int shift_l = 4 * (k >> 1);
    const int shift_h = 2 * k;
    for (int l = 0; l < 32; ++l) {
      const int sc = static_cast<int8_t>(blk[kOffScales + 2 * sub + l / 16]);
      const int q = (((ql[l] >> shift_l) & 0xF) | (((qh[l] >> shift_h) & 3) << 4)) - 32;
      y[l] = d * static_cast<float>(sc) * static_cast<float>(q);
    }
  }
};

// Q8_K: f32 d = max / -127 (max the value of largest magnitude), int8 q, and the sums of each 16 q.
template <>
struct Codec<QFormat::Q8_K> {
  static constexpr int kElems = 256, kBytes = 292;
  static constexpr int kOffD = 0, kOffQs = 4, kOffBsums = 260;

  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    float max = 0;
    float amax = 0;
    for (int j = 0; j < 256; ++j) {
      const float ax = fabsf(x[j]);
      if (ax > amax) {
        amax = ax;
        max = x[j];
      }
    }
    int8_t* qs = reinterpret_cast<int8_t*>(blk + kOffQs);
    if (amax == 0.f) {
      // ggml leaves bsums unwritten here; with all q zero their value is 0.
      store_f32(blk + kOffD, 0.f);
      for (int j = 0; j < 256; ++j) qs[j] = 0;
      for (int j = 0; j < 16; ++j) store_u16(blk + kOffBsums + 2 * j, 0);
      return;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < 256; ++j) {
      const int v = kq::nearest_int(iscale * x[j]);
      qs[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int ii = 0; ii < 16; ++ii) sum += qs[16 * j + ii];
      store_u16(blk + kOffBsums + 2 * j, static_cast<uint16_t>(sum));
    }
    store_f32(blk + kOffD, 1 / iscale);
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    const float d = load_f32(blk + kOffD);
    const uint8_t* qs = blk + kOffQs + 32 * sub;
    for (int l = 0; l < 32; ++l) y[l] = d * static_cast<float>(static_cast<int8_t>(qs[l]));
  }
};

// IQ4_XS: 8 sub-blocks of 32, x ~ d * (ls - 32) * kvalues_iq4nl[q] with 4-bit q and 6-bit ls (low
// nibbles in scales_l, top two bits of sub-block ib at bit 2 ib of scales_h).
template <>
struct Codec<QFormat::IQ4_XS> {
  static constexpr int kElems = 256, kBytes = 136;
  static constexpr int kOffD = 0, kOffScalesH = 2, kOffScalesL = 4, kOffQs = 8;

  // quantize_row_iq4_nl_impl(256, 32, ..., no importance weights, ntry 7); its sigma2 only weighs
  // importance weights, so it is not computed.
  WICK_HOST_DEVICE static void quantize(const float* x, uint8_t* blk) {
    constexpr int kNtry = 7;
    const float v0 = static_cast<float>(iq4nl_value(0));
    uint8_t L[256];
    float weight[32];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const float* xb = x + 32 * ib;
      for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
      float amax = 0, max = 0;
      for (int j = 0; j < 32; ++j) {
        const float ax = fabsf(xb[j]);
        if (ax > amax) {
          amax = ax;
          max = xb[j];
        }
      }
      if (amax < kq::kGroupMaxEps) {
        scales[ib] = 0;
        continue;
      }
      float d = -max / v0;
      float id = 1 / d;
      float sumqx = 0, sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = static_cast<float>(iq4nl_value(iq4nl_best_index(id * xb[j])));
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
      float best = d * sumqx;
      for (int itry = -kNtry; itry <= kNtry; ++itry) {
        id = static_cast<float>(itry + iq4nl_value(0)) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
          const float q = static_cast<float>(iq4nl_value(iq4nl_best_index(id * xb[j])));
          const float w = weight[j];
          sumqx += w * q * xb[j];
          sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          d = sumqx / sumq2;
          best = d * sumqx;
        }
      }
      scales[ib] = d;
      const float abs_d = fabsf(d);
      if (abs_d > amax_scale) {
        amax_scale = abs_d;
        max_scale = d;
      }
    }
    // The codes use the f32 d, not its stored f16 rounding. With max_scale 0, d is -0.
    const float d = -max_scale / 32.f;
    store_f16(blk + kOffD, d);
    const float id = d != 0.f ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    uint8_t* scales_l = blk + kOffScalesL;
    for (int ib = 0; ib < 8; ++ib) {
      int l = kq::clamp_int(kq::nearest_int(id * scales[ib]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0.f ? 1 / dl : 0.f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(iq4nl_best_index(idl * x[32 * ib + j]));
      l += 32;
      const int l_l = l & 0xF;
      const int l_h = l >> 4;
      if (ib % 2 == 0) {
        scales_l[ib / 2] = static_cast<uint8_t>(l_l);
      } else {
        scales_l[ib / 2] = static_cast<uint8_t>(scales_l[ib / 2] | (l_l << 4));
      }
      scales_h = static_cast<uint16_t>(scales_h | (l_h << (2 * ib)));
    }
    store_u16(blk + kOffScalesH, scales_h);
    uint8_t* q4 = blk + kOffQs;
    for (int i = 0; i < 8; ++i) {
      for (int j = 0; j < 16; ++j) q4[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
    }
  }

  WICK_HOST_DEVICE static void dequantize_sub(const uint8_t* blk, int sub, float* y) {
    const float d = load_f16(blk + kOffD);
    const int scales_h = load_u16(blk + kOffScalesH);
    const int ls = ((blk[kOffScalesL + sub / 2] >> (4 * (sub % 2))) & 0xF) | (((scales_h >> (2 * sub)) & 3) << 4);
    const float dl = d * static_cast<float>(ls - 32);
    const uint8_t* qs = blk + kOffQs + 16 * sub;
    for (int j = 0; j < 16; ++j) {
      y[j + 0] = dl * static_cast<float>(iq4nl_value(qs[j] & 0xF));
      y[j + 16] = dl * static_cast<float>(iq4nl_value(qs[j] >> 4));
    }
  }
};

}  // namespace wick::quant
