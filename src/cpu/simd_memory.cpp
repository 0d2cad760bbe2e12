// The memory kernels of simd.h: fill (a byte pattern, optionally through streaming stores) and
// transpose (a block of a transposed copy, Note [CPU transpose]).
#include <bit>
#include <cstdint>
#include <utility>

#include "cpu/simd_impl.h"

namespace wick::cpu::simd::detail {
namespace {

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
// buffer).

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

}  // namespace

// ---- the levels ------------------------------------------------------------------------------

#define WICK_TRANSPOSE_LEVEL(suffix, W, ATTR)                                                                    \
  ATTR void transpose_##suffix(const void* src, int64_t lds, void* dst, int64_t ldd, int64_t rows, int64_t cols, \
                               int esize) {                                                                      \
    if (esize == 2) return transpose_v<Vec<W>::H, W>(src, lds, dst, ldd, rows, cols);                            \
    if (esize == 4) return transpose_v<Vec<W>::U, W>(src, lds, dst, ldd, rows, cols);                            \
    transpose_v<Vec<W>::Q, W / 2>(src, lds, dst, ldd, rows, cols);                                               \
  }

WICK_TRANSPOSE_LEVEL(base, 4, )

void fill_base(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<4>(dst, nbytes, pattern, stream ? kStreamBase : nullptr);
}

#ifdef WICK_SIMD_X86
WICK_TRANSPOSE_LEVEL(avx2, 8, WICK_AVX2)
WICK_TRANSPOSE_LEVEL(avx512, 16, WICK_AVX512)

namespace {
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
}  // namespace
WICK_AVX2 void fill_avx2(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<8>(dst, nbytes, pattern, stream ? stream_avx2 : nullptr);
}
WICK_AVX512 void fill_avx512(void* dst, int64_t nbytes, uint64_t pattern, bool stream) {
  fill_v<16>(dst, nbytes, pattern, stream ? stream_avx512 : nullptr);
}
#endif

}  // namespace wick::cpu::simd::detail
