// The block codecs of the GGML formats, written once for the host and the GPUs.
//
// Codec<F> for each QFormat F (include/wick/qformat.h) provides
//   static constexpr int kElems, kBytes;   elements and bytes of one block (the format table's)
//   static void quantize(const float* x, uint8_t* blk);
//       one block from x[0 .. kElems): the bytes of ggml's quantize_row_<f>_ref for that block
//   static void dequantize_sub(const uint8_t* blk, int sub, float* y);
//       elements [32 sub, 32 sub + 32) of the block into y[0 .. 32), 0 <= sub < kElems / 32
// all WICK_HOST_DEVICE. Blocks sit packed in a row (Q4_0's are 18 bytes, MXFP4's 17), so a block
// pointer is only byte aligned: multi-byte fields are read and written bytewise, little-endian.
//
// Note [Quantizer rounding]: the CPU and GPU quantizers must give the same bytes, and those of
// ggml's reference formulas evaluated as written (the gguf Python package does the same in NumPy).
// The codecs therefore use only correctly rounded operations (+ - * /, sqrtf, fabsf, the f16
// conversions of scalar_types.h) and the files that instantiate them are compiled without FMA
// contraction (-ffp-contract=off; nvcc --fmad=false): a fused a * b + c rounds once where the
// formula rounds twice. Rounding to an integer is ggml's: nearest_int (ties to even, through the
// 1.5 * 2^23 trick) or roundf (ties away from zero), each where ggml uses it.
#pragma once

#include <cstdint>

#include "wick/qformat.h"
#include "wick/scalar_types.h"

namespace wick::quant {

template <QFormat F>
struct Codec;

WICK_HOST_DEVICE inline uint16_t load_u16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
WICK_HOST_DEVICE inline void store_u16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
WICK_HOST_DEVICE inline uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}
WICK_HOST_DEVICE inline void store_u32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
WICK_HOST_DEVICE inline float load_f16(const uint8_t* p) { return f16::to_f32(load_u16(p)); }
WICK_HOST_DEVICE inline void store_f16(uint8_t* p, float v) { store_u16(p, f16::from_f32(v)); }
WICK_HOST_DEVICE inline float load_f32(const uint8_t* p) { return detail::f32_from_bits(load_u32(p)); }
WICK_HOST_DEVICE inline void store_f32(uint8_t* p, float v) { store_u32(p, detail::f32_bits(v)); }

// The 16 non-linear levels of IQ4_NL and IQ4_XS, ggml's kvalues_iq4nl {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13,
// 25, 38, 53, 69, 89, 113} as int8 bytes, little-endian, eight to a word (registers only, no table in GPU local
// memory).
WICK_HOST_DEVICE constexpr int iq4nl_value(int i) {
  constexpr uint64_t kLo = 0xf6eaddcfbfad9881ull;
  constexpr uint64_t kHi = 0x7159453526190d01ull;
  const uint64_t w = i < 8 ? kLo : kHi;
  return static_cast<int8_t>(static_cast<uint8_t>(w >> (8 * (i & 7))));
}
static_assert([] {
  const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int i = 0; i < 16; ++i) {
    if (iq4nl_value(i) != kTable[i]) return false;
  }
  return true;
}());

// ggml's best_index_int8 over the IQ4_NL table: the clamped ends, then a bisection and the nearer
// of the two bracketing values, ties to the upper one. A NaN falls through to code 15.
WICK_HOST_DEVICE inline int iq4nl_best_index(float x) {
  if (x <= static_cast<float>(iq4nl_value(0))) return 0;
  if (x >= static_cast<float>(iq4nl_value(15))) return 15;
  int ml = 0, mu = 15;
  while (mu - ml > 1) {
    const int mav = (ml + mu) / 2;
    if (x < static_cast<float>(iq4nl_value(mav))) {
      mu = mav;
    } else {
      ml = mav;
    }
  }
  return x - static_cast<float>(iq4nl_value(mu - 1)) < static_cast<float>(iq4nl_value(mu)) - x ? mu - 1 : mu;
}

}  // namespace wick::quant
