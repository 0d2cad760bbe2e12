// Internal to the quantized mat-vec kernels of simd_quant.h (simd_quant*.cpp): the block decoders
// of every format written once over W f32 lanes, the tile kernel that runs them, and the interface
// between the per-level tiles and the driver in simd_quant.cpp.
//
// Note [Quantized mat-vec kernels]
// Each weight is decoded in registers to the f32 value of Codec<F>::dequantize_sub, bit for bit
// (the same integer code and f32 operations; -ffp-contract=off), and multiplied into f32 sums by
// FMA: the result is within f32 accumulation error of the exact dot product. A decoded vector
// serves every row of x (at 16 lanes the 4-bit codes are looked up among their sub-block's 16
// decoded values, one permute a vector). A tile kernel keeps the R * M vector sums of M rows of x
// (a compile-time count; missing rows are zero) and R rows of W (more for small M: independent FMA
// chains) in registers. x is copied into packed chunks of kQChunkFloats (L1-sized: the FMAs read x
// from L1); the rows of W pass over one chunk before the next, and per chunk and row the sums are
// folded into lanes (pairwise merges, all R * M at once) and added to out. The next rows of W are
// prefetched: the chunked walk reads short runs at the row stride, which the hardware prefetchers
// follow poorly.
#pragma once

#include <cstdint>
#include <utility>

#include "cpu/simd_impl.h"
#include "cpu/simd_quant.h"

namespace wick::cpu::simd::detail {

// ---- the driver's interface ------------------------------------------------------------------

// Floats of the packed chunk of x: M rows of q_chunk_elems(...) each.
inline constexpr int64_t kQChunkFloats = 8192;

// Elements per row of a chunk for M rows of x: a whole number of blocks, at least one.
constexpr int64_t q_chunk_elems(int64_t block_elems, int m) {
  const int64_t c = kQChunkFloats / m / block_elems * block_elems;
  return c < block_elems ? block_elems : c;
}

// One chunk for a tile kernel: rows [0, rows) of W from w (each row's first block of the chunk, rows
// w_stride bytes apart), nb blocks each; x packed as M rows of q_chunk_elems(block, M) floats (rows
// past the real ones zero). out[i * ldo + r] for i < mp: the chunk's sum, added to what is there
// unless `first`.
struct QTileArgs {
  const uint8_t* w;
  int64_t w_stride, rows, nb;
  const float* xp;
  float* out;
  int64_t ldo;
  int mp;
  bool first;
};
using QTileFn = void (*)(const QTileArgs& a);

// A format's tiles at one level: tile[M] for M rows of x, null where M is not compiled (the driver
// pads to the next M that is).
struct QTiles {
  QTileFn tile[kQMatVecMaxRows + 1];
};

#ifdef WICK_SIMD_X86
// The levels' tables (simd_quant_avx2.cpp, simd_quant_avx512.cpp); null for a format without
// kernels.
const QTiles* qtiles_avx2(QFormat f);
const QTiles* qtiles_avx512(QFormat f);
#endif

// ---- generic helpers -------------------------------------------------------------------------

template <int N, class Fn, int... I>
WICK_INLINE void static_for_impl(Fn& fn, std::integer_sequence<int, I...>) {
  (fn(std::integral_constant<int, I>{}), ...);
}
// fn(integral_constant<int, i>) for i = 0 .. N - 1.
template <int N, class Fn>
WICK_INLINE void static_for(Fn&& fn) {
  static_for_impl<N>(fn, std::make_integer_sequence<int, N>{});
}

template <int W>
using FV = typename Vec<W>::F;
template <int W>
using IV = typename Vec<W>::I;
template <int W>
using UV = typename Vec<W>::U;

template <int W>
WICK_INLINE FV<W> to_f32(const IV<W>& i) {
  return __builtin_convertvector(i, FV<W>);
}

// Lane indices 0 .. W - 1.
template <int W>
WICK_INLINE UV<W> lane_index() {
  UV<W> v;
  for (int l = 0; l < W; ++l) v[l] = static_cast<uint32_t>(l);
  return v;
}

WICK_INLINE uint16_t q_u16(const uint8_t* p) {
  uint16_t v;
  __builtin_memcpy(&v, p, 2);
  return v;
}
WICK_INLINE uint32_t q_u32(const uint8_t* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

// ---- the decoders ----------------------------------------------------------------------------
// A decoder D: kElems / kBytes of a block, split in kSteps steps of kStep elements; prepare() puts
// the block's scales (kPrep floats) in p, vec<W, T, U>() gives vector U of step T (W values, bit
// for bit those of Codec<F>::dequantize_sub), whose elements start at offset<W, T, U>() in the
// block. Q: the level's operations: u8 / i8 (W bytes zero / sign extended to 32-bit lanes), lut
// (table[idx & 15] of a 16-float table in memory), fma, f16 (one f16 to f32); where kRegLut (16
// lanes: one VPERMPS), also lutv, the same from a table in a register. There the 4-bit formats look
// their codes up in the block's (or sub-block's) 16 decoded values, computed once per 32 elements
// as the codec computes each value: two operations a vector fewer than converting and scaling it.

struct DecBase {
  template <int W, int T, int U, int kStep>
  static constexpr int step_offset() {
    return T * kStep + U * W;
  }
};

// The low (U < 16 / W) or high nibbles of the 16 code bytes at qs: elements 0-15, then 16-31.
template <int W, int U, class Q>
WICK_INLINE IV<W> nibbles16(const Q& q, const uint8_t* qs) {
  constexpr int kHalf = 16 / W;
  const IV<W> c = q.u8(qs + (U % kHalf) * W);
  if constexpr (U < kHalf) {
    return c & 15;
  } else {
    return c >> 4;
  }
}

// The fifth bits (bit e of the u32 at qh, as 16) of the elements of vector U.
template <int W, int U>
WICK_INLINE IV<W> fifth_bits(const uint8_t* qh) {
  const UV<W> h = (UV<W>{} + q_u32(qh)) >> (lane_index<W>() + static_cast<uint32_t>(U * W));
  return reinterpret_cast<IV<W>>((h & 1u) << 4);
}

// Bits [b, b + n) of each lane, moved to bits [4, 4 + n): (v >> b & (2^n - 1)) << 4.
template <int B, int N, class V>
WICK_INLINE V bits_to_4(const V& v) {
  constexpr int kMask = ((1 << N) - 1) << 4;
  if constexpr (B <= 4) {
    return (v << (4 - B)) & kMask;
  } else {
    return (v >> (B - 4)) & kMask;
  }
}

#define WICK_QDEC_HEAD(E, B, STEP, PREP)                \
  static constexpr int kElems = E, kBytes = B;          \
  static constexpr int kStep = STEP, kSteps = E / STEP; \
  static constexpr int kPrep = PREP;                    \
  template <int W, int T, int U>                        \
  static constexpr int offset() {                       \
    return step_offset<W, T, U, STEP>();                \
  }

// Q8_0: d | i8 qs[32]: float(q) * d.
struct DecQ8_0 : DecBase {
  WICK_QDEC_HEAD(32, 34, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return to_f32<W>(q.i8(blk + 2 + U * W)) * p[0];
  }
};

// Q8_1: d | s | i8 qs[32]: float(q) * d.
struct DecQ8_1 : DecBase {
  WICK_QDEC_HEAD(32, 36, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return to_f32<W>(q.i8(blk + 4 + U * W)) * p[0];
  }
};

// The 16 codes of the 4-bit formats as floats: q, and q - 8 (Q4_0).
alignas(64) inline constexpr float kCodes16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
alignas(64) inline constexpr float kCodesQ4_0[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

// The nibble of vector U of a 32-element run for lut / lutv (which read the low four bits): the
// byte itself for the low nibbles (U < 16 / W), shifted down for the high ones.
template <int W, int U, class Q>
WICK_INLINE IV<W> nibble_index(const Q& q, const uint8_t* qs) {
  const IV<W> c = q.u8(qs + (U % (16 / W)) * W);
  if constexpr (U < 16 / W) {
    return c;
  } else {
    return c >> 4;
  }
}

// Q4_0: d | qs[16]: float(q - 8) * d.
struct DecQ4_0 : DecBase {
  WICK_QDEC_HEAD(32, 18, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    if constexpr (Q::kRegLut) {
      return q.lutv(nibble_index<W, U>(q, blk + 2), load<FV<W>>(kCodesQ4_0) * p[0]);
    } else {
      return to_f32<W>(nibbles16<W, U>(q, blk + 2) - 8) * p[0];
    }
  }
};

// Q4_1: d | m | qs[16]: float(q) * d + m.
struct DecQ4_1 : DecBase {
  WICK_QDEC_HEAD(32, 20, 32, 2)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
    p[1] = q.f16(blk + 2);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return to_f32<W>(nibbles16<W, U>(q, blk + 4)) * p[0] + p[1];
  }
};

// Q5_0: d | qh u32 | qs[16]: float((q | h << 4) - 16) * d.
struct DecQ5_0 : DecBase {
  WICK_QDEC_HEAD(32, 22, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return to_f32<W>((nibbles16<W, U>(q, blk + 6) | fifth_bits<W, U>(blk + 2)) - 16) * p[0];
  }
};

// Q5_1: d | m | qh u32 | qs[16]: float(q | h << 4) * d + m.
struct DecQ5_1 : DecBase {
  WICK_QDEC_HEAD(32, 24, 32, 2)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
    p[1] = q.f16(blk + 2);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return to_f32<W>(nibbles16<W, U>(q, blk + 8) | fifth_bits<W, U>(blk + 4)) * p[0] + p[1];
  }
};

// ggml's kvalues_iq4nl and kvalues_mxfp4 (the E2M1 values doubled) as floats, for Q::lut.
alignas(64) inline constexpr float kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                       1,    13,   25,  38,  53,  69,  89,  113};
alignas(64) inline constexpr float kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// IQ4_NL: d | qs[16]: d * kvalues_iq4nl[q].
struct DecIq4Nl : DecBase {
  WICK_QDEC_HEAD(32, 18, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    p[0] = q.f16(blk);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    if constexpr (Q::kRegLut) {
      return q.lutv(nibble_index<W, U>(q, blk + 2), p[0] * load<FV<W>>(kIq4nlValues));
    } else {
      return p[0] * q.lut(nibble_index<W, U>(q, blk + 2), kIq4nlValues);
    }
  }
};

// MXFP4: E8M0 e | qs[16]: float(kvalues_mxfp4[q]) * 2^(e - 128) (subnormal for e < 2).
struct DecMxfp4 : DecBase {
  WICK_QDEC_HEAD(32, 17, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    const uint32_t e = blk[0];
    const uint32_t bits = e < 2 ? 0x00200000u << e : (e - 1) << 23;
    __builtin_memcpy(p, &bits, 4);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    if constexpr (Q::kRegLut) {
      return q.lutv(nibble_index<W, U>(q, blk + 1), load<FV<W>>(kMxfp4Values) * p[0]);
    } else {
      return q.lut(nibble_index<W, U>(q, blk + 1), kMxfp4Values) * p[0];
    }
  }
};

// Q4_K / Q5_K scales: p[s] = d * sc_s, p[8 + s] = dmin * m_s for the 8 sub-blocks, the 6-bit scales
// and mins unpacked from the 12 bytes at blk + 4 (ggml's get_scale_min_k4) four at a time in u32
// words: bytes 0-3 hold the low 6 bits of scales 0-3, bytes 4-7 of mins 0-3, bytes 8-11 the low
// nibbles of scales 4-7 (low) and mins 4-7 (high), whose top two bits are bits 6-7 of bytes 0-3 and
// 4-7.
template <int W, class Q>
WICK_INLINE void prepare_scale_min_k4(const Q& q, const uint8_t* blk, float* p) {
  using U4 = Vec<4>::U;
  const U4 s = load<U4>(blk + 4);  // (the fourth word is code bytes, unused)
  const U4 a = __builtin_shufflevector(s, s, 0, 2, 1, 2);
  const U4 b = __builtin_shufflevector(s, s, 0, 0, 1, 1);
  const U4 v = ((a >> U4{0, 0, 0, 4}) & U4{0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f}) |
               ((b >> 2) & U4{0, 0x30303030, 0, 0x30303030});
  alignas(16) uint8_t bytes[16];  // scales 0-7, mins 0-7
  store(bytes, v);
  const float d = q.f16(blk), dmin = q.f16(blk + 2);
  static_for<16 / W>([&](auto u) __attribute__((always_inline)) {
    const FV<W> f = to_f32<W>(q.u8(bytes + u * W));
    if constexpr (W == 16) {
      store(p, lane_index<16>() < 8u ? f * d : f * dmin);
    } else {
      store(p + u * W, f * (u == 0 ? d : dmin));
    }
  });
}

// Q4_K: d | dmin | scales[12] | qs[128]: d sc_s * float(q) - dmin m_s per sub-block s; a step is the
// sub-block pair of 32 code bytes (low nibbles sub-block 2T, high ones 2T + 1).
struct DecQ4K : DecBase {
  WICK_QDEC_HEAD(256, 144, 64, 16)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    prepare_scale_min_k4<W>(q, blk, p);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    constexpr int kV = 32 / W, kS = 2 * T + U / kV;
    const IV<W> c = q.u8(blk + 16 + 32 * T + (U % kV) * W);
    if constexpr (Q::kRegLut) {
      return q.lutv(U < kV ? c : c >> 4, load<FV<W>>(kCodes16) * p[kS] - p[8 + kS]);
    } else {
      return to_f32<W>(U < kV ? (c & 15) : (c >> 4)) * p[kS] - p[8 + kS];
    }
  }
};

// Q5_K: Q4_K with qh[32] before the codes: the fifth bit of element l of sub-block s is bit s of
// qh[l].
struct DecQ5K : DecBase {
  WICK_QDEC_HEAD(256, 176, 64, 16)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    prepare_scale_min_k4<W>(q, blk, p);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    constexpr int kV = 32 / W, kS = 2 * T + U / kV;
    const IV<W> c = q.u8(blk + 48 + 32 * T + (U % kV) * W);
    const IV<W> h = q.u8(blk + 16 + (U % kV) * W);
    const IV<W> code = (U < kV ? (c & 15) : (c >> 4)) | bits_to_4<kS, 1>(h);
    return to_f32<W>(code) * p[kS] - p[8 + kS];
  }
};

// Q6_K: ql[128] | qh[64] | i8 scales[16] | d: (d * sc_g) * float(q - 32) per group g of 16. Element
// l of sub-block 4n + j (j < 4) takes nibble j / 2 of ql[64 n + 32 (j % 2) + l] and bits 2j, 2j + 1
// of qh[32 n + l]; a step is the sub-block pair (4n + j, 4n + j + 2) that shares those bytes.
struct DecQ6K : DecBase {
  static constexpr int kElems = 256, kBytes = 210, kStep = 64, kSteps = 4, kPrep = 16;
  template <int T, int Half>
  static constexpr int sub() {
    return 4 * (T / 2) + T % 2 + 2 * Half;
  }
  template <int W, int T, int U>
  static constexpr int offset() {
    return 32 * sub<T, U / (32 / W)>() + (U % (32 / W)) * W;
  }
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    const float d = q.f16(blk + 208);
    static_for<16 / W>([&](auto v) __attribute__((always_inline)) {
      store(p + v * W, d * to_f32<W>(q.i8(blk + 192 + v * W)));
    });
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    constexpr int kV = 32 / W, kHalf = U / kV, kJ = T % 2, kS = sub<T, kHalf>();
    constexpr int kG = 2 * kS + (U % kV) * W / 16;
    const IV<W> c = q.u8(blk + 64 * (T / 2) + 32 * kJ + (U % kV) * W);
    const IV<W> h = q.u8(blk + 128 + 32 * (T / 2) + (U % kV) * W);
    const IV<W> code = kHalf == 0 ? ((c & 15) | bits_to_4<2 * kJ, 2>(h)) : ((c >> 4) | bits_to_4<2 * kJ + 4, 2>(h));
    return p[kG] * to_f32<W>(code - 32);
  }
};

// IQ4_XS: d | scales_h u16 | scales_l[4] | qs[128]: dl_s * kvalues_iq4nl[q], dl_s = d * float(ls_s -
// 32) with ls_s nibble s of scales_l and bits 2s, 2s + 1 of scales_h on top; byte j of a sub-block's
// 16 holds elements j (low) and j + 16.
struct DecIq4Xs : DecBase {
  WICK_QDEC_HEAD(256, 136, 32, 8)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    const float d = q.f16(blk);
    const UV<8> s = lane_index<8>();
    const UV<8> ls =
        (((UV<8>{} + q_u32(blk + 4)) >> (s * 4)) & 15) | ((((UV<8>{} + q_u16(blk + 2)) >> (s * 2)) & 3) << 4);
    store(p, d * to_f32<8>(reinterpret_cast<IV<8>>(ls) - 32));
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    if constexpr (Q::kRegLut) {
      return q.lutv(nibble_index<W, U>(q, blk + 8 + 16 * T), p[T] * load<FV<W>>(kIq4nlValues));
    } else {
      return p[T] * q.lut(nibble_index<W, U>(q, blk + 8 + 16 * T), kIq4nlValues);
    }
  }
};

// Q2_K: scales[16] | qs[64] | d | dmin: (d * (sc & 15)) * float(q) - dmin * (sc >> 4) per group of
// 16; element l of sub-block s has bits 2 (s % 4) of qs[32 (s / 4) + l].
struct DecQ2K : DecBase {
  WICK_QDEC_HEAD(256, 84, 32, 32)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    const float d = q.f16(blk + 80), dmin = q.f16(blk + 82);
    static_for<16 / W>([&](auto v) __attribute__((always_inline)) {
      const IV<W> c = q.u8(blk + v * W);
      store(p + v * W, d * to_f32<W>(c & 15));
      store(p + 16 + v * W, dmin * to_f32<W>(c >> 4));
    });
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    constexpr int kG = 2 * T + U * W / 16;
    const IV<W> c = q.u8(blk + 16 + 32 * (T / 4) + U * W);
    return p[kG] * to_f32<W>((c >> (2 * (T % 4))) & 3) - p[16 + kG];
  }
};

// Q3_K: hmask[32] | qs[64] | scales[12] | d: (d * (sc - 32)) * float(q - 4 + 4 h) per group of 16,
// the 2-bit q as in Q2_K, h bit s of hmask[l]; the 6-bit scales as ggml packs them (low nibbles of
// 0-7 in bytes 0-7, of 8-15 in their high nibbles, top bits of scale g at bits 2 (g / 4) of byte
// 8 + g % 4).
struct DecQ3K : DecBase {
  WICK_QDEC_HEAD(256, 110, 32, 16)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    const float d = q.f16(blk + 108);
    const uint8_t* s = blk + 96;
    typedef uint8_t B16 __attribute__((vector_size(16)));
    typedef uint8_t B8 __attribute__((vector_size(8)));
    const B8 lo8 = load<B8>(s);
    const B16 lo = __builtin_shufflevector(lo8 & 15, lo8 >> 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const Vec<4>::U hs = (Vec<4>::U{} + q_u32(s + 8)) >> Vec<4>::U{0, 2, 4, 6};  // byte b of word w: bits 2w, 2w + 1
    alignas(16) uint8_t sc[16];                                                  // scale g = 4 w + b, + 32
    store(sc, lo | ((reinterpret_cast<B16>(hs) & 3) << 4));
    static_for<16 / W>([&](auto u)
                           __attribute__((always_inline)) { store(p + u * W, d * to_f32<W>(q.u8(sc + u * W) - 32)); });
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    constexpr int kG = 2 * T + U * W / 16;
    const IV<W> c = q.u8(blk + 32 + 32 * (T / 4) + U * W);
    const IV<W> h = q.u8(blk + U * W);
    const IV<W> code = ((c >> (2 * (T % 4))) & 3) + (((h >> T) & 1) << 2) - 4;
    return p[kG] * to_f32<W>(code);
  }
};

// Q8_K: f32 d | i8 qs[256] | bsums: d * float(q).
struct DecQ8K : DecBase {
  WICK_QDEC_HEAD(256, 292, 32, 1)
  template <int W, class Q>
  static WICK_INLINE void prepare(const Q& q, const uint8_t* blk, float* p) {
    __builtin_memcpy(p, blk, 4);
  }
  template <int W, int T, int U, class Q>
  static WICK_INLINE FV<W> vec(const Q& q, const uint8_t* blk, const float* p) {
    return p[0] * to_f32<W>(q.i8(blk + 4 + 32 * T + U * W));
  }
};

#undef WICK_QDEC_HEAD

// fn.template operator()<D>() for the decoder of f.
template <class Fn>
decltype(auto) dispatch_qdecoder(QFormat f, Fn&& fn) {
  switch (f) {
    case QFormat::Q4_0:
      return fn.template operator()<DecQ4_0>();
    case QFormat::Q4_1:
      return fn.template operator()<DecQ4_1>();
    case QFormat::Q5_0:
      return fn.template operator()<DecQ5_0>();
    case QFormat::Q5_1:
      return fn.template operator()<DecQ5_1>();
    case QFormat::Q8_0:
      return fn.template operator()<DecQ8_0>();
    case QFormat::Q8_1:
      return fn.template operator()<DecQ8_1>();
    case QFormat::Q2_K:
      return fn.template operator()<DecQ2K>();
    case QFormat::Q3_K:
      return fn.template operator()<DecQ3K>();
    case QFormat::Q4_K:
      return fn.template operator()<DecQ4K>();
    case QFormat::Q5_K:
      return fn.template operator()<DecQ5K>();
    case QFormat::Q6_K:
      return fn.template operator()<DecQ6K>();
    case QFormat::Q8_K:
      return fn.template operator()<DecQ8K>();
    case QFormat::IQ4_NL:
      return fn.template operator()<DecIq4Nl>();
    case QFormat::IQ4_XS:
      return fn.template operator()<DecIq4Xs>();
    case QFormat::MXFP4:
      return fn.template operator()<DecMxfp4>();
  }
  return fn.template operator()<DecQ8_0>();  // not reached
}

// ---- the folds of the sums -------------------------------------------------------------------

// Lane q of merge(x, y) for items of L lanes: the first half of the result holds x's items, the
// second y's, each item's L lanes added in pairs (lane l with l + L / 2; Hi picks the second).
template <int W, int L, int Hi>
constexpr int merge_lane(int q) {
  const int half = q / (W / 2), qq = q % (W / 2);
  return half * W + (qq / (L / 2)) * L + qq % (L / 2) + Hi * (L / 2);
}
template <int W, int L, class F, int... I>
WICK_INLINE F merge_items(const F& x, const F& y, std::integer_sequence<int, I...>) {
  return __builtin_shufflevector(x, y, merge_lane<W, L, 0>(I)...) +
         __builtin_shufflevector(x, y, merge_lane<W, L, 1>(I)...);
}

// v[0 .. N): vectors of W / L items of L lanes each (item i of the sequence in vector i / (W / L)).
// Merges pairs until every item is one lane: item i then in lane i % W of v[i / W]. An odd last
// vector merges with itself (its copies land after every real item).
template <int W, int L, int N, class F>
WICK_INLINE void fold_items(F* v) {
  if constexpr (L > 1) {
    static_for<N / 2>([&](auto p) __attribute__((always_inline)) {
      v[p] = merge_items<W, L>(v[2 * p], v[2 * p + 1], std::make_integer_sequence<int, W>{});
    });
    if constexpr (N % 2 == 1) v[N / 2] = merge_items<W, L>(v[N - 1], v[N - 1], std::make_integer_sequence<int, W>{});
    fold_items<W, L / 2, (N + 1) / 2>(v);
  }
}

// ---- the tile kernel -------------------------------------------------------------------------

// Rows of W per tile for M rows of x: more where M alone gives few independent FMA chains.
constexpr int q_tile_rows(int m) { return m <= 2 ? 4 : m <= 4 ? 2 : 1; }

// Rows of W ahead of the ones being read that are prefetched (into L2).
constexpr int64_t kQAheadRows = 4;

// Rows [r, r + R) of the tile: the chunk's sums of M rows of x with R rows of W.
template <int W, class D, int M, int R, class Q>
WICK_INLINE void qtile_rows_v(const Q& q, const QTileArgs& a, int64_t r) {
  using F = FV<W>;
  constexpr int64_t kC = q_chunk_elems(D::kElems, M);
  constexpr int kV = D::kStep / W;
  F acc[R * M];
  static_for<R * M>([&](auto n) __attribute__((always_inline)) { acc[n] = F{}; });
  const int64_t ws = a.w_stride, nb = a.nb;
  const uint8_t* row = a.w + r * ws;
  const uint8_t* pf = r + R + kQAheadRows <= a.rows ? row + kQAheadRows * ws : nullptr;
  const float* xb = a.xp;
  for (int64_t b = 0; b < nb; ++b, row += D::kBytes, xb += D::kElems) {
    if (pf != nullptr) {
      for (int rr = 0; rr < R; ++rr)
        for (int o = 0; o < D::kBytes; o += 64) __builtin_prefetch(pf + rr * ws + o, 0, 2);
      pf += D::kBytes;
    }
    float prep[R][D::kPrep];
    static_for<R>([&](auto rr) __attribute__((always_inline)) { D::template prepare<W>(q, row + rr * ws, prep[rr]); });
    // The scales are read back from memory (a broadcast load each), not kept in registers and
    // broadcast by shuffles: an opaque pointer to them.
    const float* pv = &prep[0][0];
    asm volatile("" : "+r"(pv) : : "memory");
    static_for<D::kSteps>([&](auto t) __attribute__((always_inline)) {
      static_for<R>([&](auto rr) __attribute__((always_inline)) {
        static_for<kV>([&](auto u) __attribute__((always_inline)) {
          const F y = D::template vec<W, t, u>(q, row + rr * ws, pv + rr * D::kPrep);
          constexpr int kOff = D::template offset<W, t, u>();
          static_for<M>([&](auto i) __attribute__((always_inline)) {
            acc[rr * M + i] = q.fma(y, load<F>(xb + i * kC + kOff), acc[rr * M + i]);
          });
        });
      });
    });
  }
  fold_items<W, W, R * M>(acc);
  float sums[(R * M + W - 1) / W * W];
  static_for<(R * M + W - 1) / W>([&](auto v) __attribute__((always_inline)) { store(sums + v * W, acc[v]); });
  for (int rr = 0; rr < R; ++rr)
    for (int i = 0; i < a.mp; ++i) {
      float* o = a.out + i * a.ldo + r + rr;
      *o = (a.first ? 0.0f : *o) + sums[rr * M + i];
    }
}

template <int W, class D, int M, class Q>
WICK_INLINE void qtile_v(const Q& q, const QTileArgs& a) {
  constexpr int kR = q_tile_rows(M);
  int64_t r = 0;
  for (; r + kR <= a.rows; r += kR) qtile_rows_v<W, D, M, kR>(q, a, r);
  if constexpr (kR > 1)
    for (; r < a.rows; ++r) qtile_rows_v<W, D, M, 1>(q, a, r);
}

// The tiles of one level: QT<D, M> its tile kernel for decoder D and M rows of x, compiled for the
// M of Ms (ascending).
template <template <class, int> class QT, int... Ms>
struct QTileTable {
  template <class D>
  static constexpr QTiles make() {
    QTiles t{};
    ((t.tile[Ms] = &QT<D, Ms>::run), ...);
    return t;
  }
  static const QTiles* get(QFormat f) {
    return dispatch_qdecoder(f, []<class D>() -> const QTiles* {
      static constexpr QTiles kTiles = make<D>();
      return &kTiles;
    });
  }
};

}  // namespace wick::cpu::simd::detail
