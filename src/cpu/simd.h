// Vector kernels of the CPU backend, chosen at run time by what the processor has.
//
// The library is compiled for the baseline of its target (x86-64: SSE2), so the plain loops of the
// CPU backend cannot use AVX2 or AVX-512, and calls to libm's expf do not vectorise at all. The
// kernels here are contiguous loops over the hot conversions and exponentials, compiled three times
// (src/cpu/simd_*.cpp; the tables in simd.cpp): for the baseline, for AVX2 (with FMA and F16C) and
// for AVX-512F. One is picked on first use from CPUID (and the OS's saved-state support), lowered by
// WICK_CPU_ISA (base, avx2, avx512, avx512bf16 or amx) for tests and comparisons. The two levels above AVX-512F run the
// AVX-512F kernels here, rounding to bf16 with VCVTNEPS2BF16 (the same bits; Note [Vector exp and
// bf16 operations] in simd_impl.h), and add the bf16 GEMM of gemm_packed*.cpp, which matmul and conv
// use for bf16 in place of widening to f32 for OpenBLAS: Avx512Bf16 (AVX512_BF16 with BW and VL, on
// AMD processors) its VDPBF16PS kernel (Note [bf16 GEMM]), Amx (AMX-TILE and AMX-BF16 as well, on
// any vendor, with the OS's permission to use the tiles: see detect() in simd.cpp) its TDPBF16PS
// kernel (Note [AMX GEMM]). bf16 products come out differently at those levels (within f32
// accumulation's error, denormals flushed), everything else the same.
//
// Results are the same on every level, bit for bit: the conversions round to nearest even like
// the scalar types in wick/scalar_types.h (F16C and AVX-512 round the same way), and the
// exponentials run one algorithm with the same operations in the same order at every width (the
// compiler does not contract them into FMAs: the library builds in ISO C++ mode). The one
// exception: F16C quiets a signalling f16 NaN when widening it, the scalar path keeps its bits.
#pragma once

#include <cstdint>
#include <type_traits>

#include "wick/scalar_types.h"

namespace wick::cpu::simd {

enum class Isa : int { Base = 0, Avx2 = 1, Avx512 = 2, Avx512Bf16 = 3, Amx = 4 };

// The best level this processor and OS support.
Isa detected();
// The level in use: detected(), or lower where WICK_CPU_ISA asks for it.
Isa active();
const char* isa_name(Isa isa);

// A matrix-vector kernel of Kernels (dot_*, axpy_*, described there) over T arrays.
template <class T>
using MatVecFn = void (*)(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv,
                          float* out, int64_t ldo);

// The operations of Kernels::unary_bf16 and Kernels::arith_bf16.
enum class Unary : int { Exp, Sigmoid, Silu, Gelu };
enum class Arith : int { Add, Sub, Mul, Div };

// Contiguous kernels: n elements from `in` to `out` (which may be the same array).
struct Kernels {
  void (*f32_to_f16)(const float* in, uint16_t* out, int64_t n);
  void (*f16_to_f32)(const uint16_t* in, float* out, int64_t n);
  void (*f32_to_bf16)(const float* in, uint16_t* out, int64_t n);
  void (*bf16_to_f32)(const uint16_t* in, float* out, int64_t n);
  // exp(x); and x / (1 + exp(-k(x))) for sigmoid (x = 1), silu and gelu (tanh form), as in
  // backend/elementwise_math.h. Relative error within 2 ulp of the exact value (test_simd.cpp
  // measures it against f64), down to the subnormal range.
  void (*exp_f32)(const float* in, float* out, int64_t n);
  void (*sigmoid_f32)(const float* in, float* out, int64_t n);
  void (*silu_f32)(const float* in, float* out, int64_t n);
  void (*gelu_f32)(const float* in, float* out, int64_t n);
  // Row helpers of softmax, the norms and the min / max reductions. max_f32: the largest value,
  // NaN if any is NaN, -inf for n == 0 (the sign of a zero maximum may differ between levels);
  // min_f32 the same for the smallest, +inf for n == 0. sum16_f32: the sum of n <= 2048
  // values in 16 lanes (lane l adds elements l, l + 16, ...), the lanes added in halves (8, 4, 2,
  // 1), then the tail, exactly as lane_sum's blocks in row_loop.h. exp_sum16_f32: out[i] =
  // exp(in[i] + shift), as exp_f32 of the rounded sum (out may be in), and returns sum16_f32 of
  // out, computed in the same pass. scale_f32: x[i] *= s in place.
  float (*max_f32)(const float* x, int64_t n);
  float (*min_f32)(const float* x, int64_t n);
  float (*sum16_f32)(const float* x, int64_t n);
  float (*exp_sum16_f32)(const float* in, float* out, int64_t n, float shift);
  void (*scale_f32)(float* x, int64_t n, float s);
  // Rows of the norms. sumsq16_f32: as sum16_f32 over the squares (x[i] + shift)^2 (the sum and
  // the square each rounded to f32; shift -0.0f leaves every x[i] as it is). norm_f32: out[i] =
  // (in[i] + shift) * s, then * w[i] and + b[i] where w / b are not null, each step rounded (no
  // FMA), as the scalar loops of norm.cpp; out may be in.
  float (*sumsq16_f32)(const float* x, int64_t n, float shift);
  void (*norm_f32)(const float* in, float* out, int64_t n, float shift, float s, const float* w, const float* b);
  // exp_f32, sigmoid_f32, silu_f32 or gelu_f32 (op) of n bf16 values, each widened to f32 and its
  // result rounded once to bf16 (bf16::from_f32) in the same pass: the bits of the f32 kernel
  // between the converters (out may be in).
  void (*unary_bf16)(Unary op, const uint16_t* in, uint16_t* out, int64_t n);
  // bf16 arithmetic (CpuBackend::binary's add, sub, mul, div): out[i] = op(x[i * sx], y[i * sy])
  // in f32, rounded once to bf16 (bf16::from_f32), sx and sy each 1 or 0 (a broadcast value).
  void (*arith_bf16)(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out, int64_t n);
  // Writes nbytes bytes at dst (any alignment): byte k gets byte k % 8 of `pattern` as it lies in
  // memory, so an element of 1, 2, 4 or 8 bytes repeated to fill the 8 gives that element
  // repeated. stream: the 64-byte-aligned body goes through non-temporal stores, fenced before
  // the return (for buffers larger than the caches; see Note [CPU fill] in cpu_backend.cpp).
  void (*fill)(void* dst, int64_t nbytes, uint64_t pattern, bool stream);
  // Matrix-vector products over rows of bf16, f16 or f32 with unit stride along k, for nv vectors
  // x_j = x + j * ldx (f32): out[j * ldo + r] = sum_i a[r * lda + i] * x_j[i] for r < rows, i < k,
  // in f32 (0 for k == 0). Each product is rounded to f32 and added in sum16_f32's order (16 lanes,
  // their halves, then the tail), every output alone, so its bits do not depend on nv; see Note [Row
  // dot products] in simd_matvec.cpp. lda may be anything, 0 included.
  MatVecFn<uint16_t> dot_bf16, dot_f16;
  MatVecFn<float> dot_f32;
  // The same products over a matrix with unit stride along the rows: out[j * ldo + r] = sum_i
  // a[i * lda + r] * x_j[i], each output summing its products in the order of i (Note [Column dot
  // products]).
  MatVecFn<uint16_t> axpy_bf16, axpy_f16;
  MatVecFn<float> axpy_f32;
  // The random ops' words and their f32 values (Note [CPU random] in simd_random.cpp). philox: the
  // Philox4x32-10 blocks first, first + 1, ..., nblocks of them, under the round keys `keys`
  // (philox::Keys::k, 10 rounds x 2 words), block b's four words to words[4b .. 4b + 3]: the bits of
  // philox::block. uniform_f32: out[i] = philox::uniform_f32_of(w[i], lo, span, up), bit for bit.
  // normal_f32 (n even): out[2p], out[2p + 1] = the Box-Muller pair of w[2p], w[2p + 1] as
  // philox::normal_f32_pair computes it, with this file's logarithm, sine and cosine.
  void (*philox)(const uint32_t* keys, uint64_t first, int64_t nblocks, uint32_t* words);
  void (*uniform_f32)(const uint32_t* w, float* out, int64_t n, float lo, float span, float up);
  void (*normal_f32)(const uint32_t* w, float* out, int64_t n, float mean, float std);
  // dst[i * ldd + j] = src[j * lds + i] for i < rows, j < cols, elements of esize bytes (2, 4 or 8;
  // strides in elements): a block of a transposed copy (Note [CPU transpose] in simd_memory.cpp).
  void (*transpose)(const void* src, int64_t lds, void* dst, int64_t ldd, int64_t rows, int64_t cols, int esize);
};

// The kernels of one level; throws wick::UnsupportedError above detected().
const Kernels& kernels(Isa isa);
// The kernels of active().
const Kernels& kernels();

// The active level's conversion from In to Out over typed arrays, for the pairs it covers
// (f32 <-> f16, f32 <-> bf16); a null function pointer for the others.
static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "f16 / bf16 arrays are read as uint16_t arrays");

template <class Out, class In>
void (*converter())(const In*, Out*, int64_t) {
  if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, f16>) {
    return [](const float* in, f16* out, int64_t n) { kernels().f32_to_f16(in, &out->bits, n); };
  } else if constexpr (std::is_same_v<In, float> && std::is_same_v<Out, bf16>) {
    return [](const float* in, bf16* out, int64_t n) { kernels().f32_to_bf16(in, &out->bits, n); };
  } else if constexpr (std::is_same_v<In, f16> && std::is_same_v<Out, float>) {
    return [](const f16* in, float* out, int64_t n) { kernels().f16_to_f32(&in->bits, out, n); };
  } else if constexpr (std::is_same_v<In, bf16> && std::is_same_v<Out, float>) {
    return [](const bf16* in, float* out, int64_t n) { kernels().bf16_to_f32(&in->bits, out, n); };
  } else {
    return nullptr;
  }
}

// A Kernels member over uint16_t arrays, called on f16 / bf16 arrays.
template <class T, auto Member>
void call_on_bits(const T* a, int64_t lda, int64_t rows, int64_t k, const float* x, int64_t ldx, int64_t nv, float* out,
                  int64_t ldo) {
  (kernels().*Member)(&a->bits, lda, rows, k, x, ldx, nv, out, ldo);
}

// The active level's matrix-vector products over T matrices (bf16, f16, f32): Kernels::dot_* for a
// matrix with unit stride along k (cols false), axpy_* for one with unit stride along the rows
// (cols true). A null function pointer for the other types.
template <class T>
MatVecFn<T> matvec_kernel(bool cols) {
  if constexpr (std::is_same_v<T, bf16>) {
    return cols ? call_on_bits<T, &Kernels::axpy_bf16> : call_on_bits<T, &Kernels::dot_bf16>;
  } else if constexpr (std::is_same_v<T, f16>) {
    return cols ? call_on_bits<T, &Kernels::axpy_f16> : call_on_bits<T, &Kernels::dot_f16>;
  } else if constexpr (std::is_same_v<T, float>) {
    return cols ? kernels().axpy_f32 : kernels().dot_f32;
  } else {
    return nullptr;
  }
}

}  // namespace wick::cpu::simd
