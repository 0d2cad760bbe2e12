// Internal to wick's packed GEMMs (gemm.h's gemm_bf16 and gemm_f32): the blocking constants, the
// target attributes of the levels, the register helpers several kernels share, and the kernels and
// packers that the driver (gemm_packed.cpp) runs, defined in gemm_packed_bf16.cpp (VDPBF16PS),
// gemm_packed_amx.cpp (AMX tiles) and gemm_packed_f32.cpp (AVX-512F).
#pragma once

#include <cstdint>
#include <vector>

#include "cpu/gemm.h"
#include "wick/scalar_types.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WICK_PACKED_GEMM 1
#include <immintrin.h>
#endif

#if defined(__GNUC__) && !defined(__clang__)
// GCC 12 reports its own AVX-512 intrinsics (an undefined pass-through operand) as possibly
// uninitialised, or (in a few inlined uses) uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(WICK_PACKED_GEMM)
namespace wick::cpu::packed {

// The tiles of the VDPBF16PS and f32 kernels (Note [bf16 GEMM], Note [f32 GEMM]) and the blocking
// of the driver (Note [Packed GEMM blocking]).
constexpr int kMR = 14;
constexpr int kNV = 2;  // 16-lane vectors across a tile
constexpr int kNR = 16 * kNV;
constexpr int64_t kKcMax = 128;  // k-pairs of a k block (bf16)
constexpr int64_t kMcPanels = 8;
constexpr int64_t kNcPanels = 8;
constexpr int64_t kPackBytes = int64_t{32} << 20;
constexpr int64_t kPackChunk = 8;                      // k steps a block packs across its panels of b at a time
constexpr int64_t kSourceChunk = 64;                   // k steps of b asked of a MatSource at a time
constexpr int64_t kSourceABytes = int64_t{512} << 10;  // packed a of a block's rows for one k block, b from a source
// The AMX kernel's tiles (Note [AMX GEMM]).
constexpr int kAmxMR = 32;
constexpr int64_t kAmxPairs = 16;   // k-pairs per tile
constexpr int64_t kF32KcMax = 256;  // steps of a k block (f32)
static_assert(kKcMax % kAmxPairs == 0 && kAmxMR >= kMR);
// The unpacked paths of gemm_bf16 (Note [AMX GEMM with the weight in place], Note [bf16 dot
// products of a weight's rows]).
constexpr int64_t kInPlaceMaxRows = 128;  // rows of a
constexpr int64_t kDotMaxRows = 64;       // rows of a
constexpr int64_t kDotMinK = 256;         // below, the lanes' final sums take a large share of the time

#define WICK_AVX512 __attribute__((target("avx512f,avx2,fma,f16c")))
#define WICK_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define WICK_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))
#define WICK_INLINE __attribute__((always_inline)) inline

// The first R rows of a kMR x kNR tile of f32 sums in registers: loaded from c (row stride ldc)
// where `add`, else 0; stored back to c.
template <int R = kMR>
using Acc = __m512[R][kNV];
template <int R>
WICK_AVX512 WICK_INLINE void load_acc(Acc<R>& acc, const float* c, int64_t ldc, bool add) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) acc[r][v] = add ? _mm512_loadu_ps(c + r * ldc + 16 * v) : _mm512_setzero_ps();
}
template <int R>
WICK_AVX512 WICK_INLINE void store_acc(const Acc<R>& acc, float* c, int64_t ldc) {
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < kNV; ++v) _mm512_storeu_ps(c + r * ldc + 16 * v, acc[r][v]);
}

// The first n (<= 16) lanes.
WICK_INLINE __mmask16 lanes16(int64_t n) {
  return static_cast<__mmask16>(n >= 16 ? 0xffffu : n <= 0 ? 0u : (1u << n) - 1);
}

// Transposes the 16 x 16 block r in registers: r[i][j] becomes r[j][i].
WICK_AVX512 WICK_INLINE void transpose16(__m512 (&r)[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {  // per 128-bit lane: (r_i[0], r_i+1[0], r_i[1], r_i+1[1]), (.. [2], .. [3])
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + c]: per 128-bit lane, element c of rows i..i+3
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int c = 0; c < 4; ++c) {  // column 4 * lane + c: that lane of u[c], u[4 + c], u[8 + c], u[12 + c]
    const __m512 x0 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 x1 = _mm512_shuffle_f32x4(u[c], u[4 + c], _MM_SHUFFLE(3, 1, 3, 1));
    const __m512 y0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(2, 0, 2, 0));
    const __m512 y1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], _MM_SHUFFLE(3, 1, 3, 1));
    r[c] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + c] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(2, 0, 2, 0));
    r[8 + c] = _mm512_shuffle_f32x4(x0, y0, _MM_SHUFFLE(3, 1, 3, 1));
    r[12 + c] = _mm512_shuffle_f32x4(x1, y1, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

inline const uint16_t* storage(const bf16* p) { return &p->bits; }
inline const float* storage(const float* p) { return p; }

// ---- the kernels and packers of each scheme ------------------------------------------------------
// (Documented where they are defined.)

// VDPBF16PS (gemm_packed_bf16.cpp).
WICK_BF16 void tile_kernel(const uint16_t* a, const uint16_t* b, int64_t kp, float* c, int64_t ldc, bool add);
WICK_BF16 void store_tile(const float* c, int64_t ldc, int64_t mr, int64_t nr, bf16* d, int64_t rs, int64_t cs);
template <int R>  // instantiated for kMR and kNR
WICK_BF16 void pack_panel(const uint16_t* src, int64_t lanes, int64_t k, int64_t sl, int64_t sk, int64_t kpad,
                          uint16_t* out);
void bf16_row_dots(const std::vector<Bf16Gemm>& prods);

// AMX (gemm_packed_amx.cpp).
WICK_AMX void tiles_begin();
WICK_AMX void tiles_end();
WICK_AMX void amx_kernel(const uint16_t* a, const uint16_t* b, int64_t kp, float* c, int64_t ldc, bool add);
WICK_BF16 void pack_rows(const uint16_t* src, int64_t rows, int64_t k, int64_t sr, int64_t sk, int64_t kpad,
                         uint16_t* out);
void amx_gemm_in_place(const std::vector<Bf16Gemm>& all);

// f32 (gemm_packed_f32.cpp).
template <int R>  // instantiated for kMR
WICK_AVX512 void f32_kernel_rows(const float* a, const float* b, int64_t ks, float* c, int64_t ldc, bool add);
void f32_kernel_part(const float* a, const float* b, int64_t ks, float* c, int64_t ldc, bool add, int64_t rows);
template <int R>  // instantiated for kMR and kNR
WICK_AVX512 void pack_f32(const float* src, int64_t lanes, int64_t k, int64_t sl, int64_t sk, int64_t kpad, float* out);
WICK_AVX512 void store_f32(const float* c, int64_t ldc, int64_t mr, int64_t nr, float* d, int64_t rs, int64_t cs);

}  // namespace wick::cpu::packed
#endif
