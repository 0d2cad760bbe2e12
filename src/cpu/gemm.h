// Strided GEMMs for the CPU backend (matmul, and conv lowered to matmul): OpenBLAS underneath, and
// wick's own kernels (gemm_packed*.cpp) for bf16 on AVX512_BF16 and AMX and for f32 on AVX-512.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "backend/backend.h"
#include "cpu/simd.h"
#include "wick/scalar_types.h"

namespace wick::cpu {

// Below this many multiply-adds OpenBLAS runs a GEMM on one thread (its GEMM_MULTITHREAD_THRESHOLD
// default), so many small GEMMs are spread over threads by their callers instead.
inline constexpr double kSmallGemm = 65536.0 * 4;

// A matrix of `rows` x `cols` elements: element (r, c) at p[r * rs + c * cs]. Strides may be any
// non-negative values, 0 included.
template <class T>
struct MatRef {
  T* p;
  int64_t rows, cols;
  int64_t rs, cs;
};

// c = a @ b + beta * c for f32 or f64 (a: M x K, b: K x N, c: M x N). Operands that are row- or
// column-major with a unit stride (transposed views included) go to BLAS as they are, with a
// transpose flag and their leading dimension; only layouts BLAS cannot express (no unit stride,
// overlapping rows, sizes beyond BLAS's int) are copied. K == 0 gives beta * c (0 for beta == 0,
// whatever c held). c must not overlap a or b.
void gemm(MatRef<const float> a, MatRef<const float> b, MatRef<float> c, float beta = 0);
void gemm(MatRef<const double> a, MatRef<const double> b, MatRef<double> c, double beta = 0);

// A b operand whose elements are made where the packed GEMMs pack them, such as a convolution's
// im2col matrix, which then never exists whole: rows(k0, kk, j0, cols, out, ld) writes elements
// (k0 + i, j0 + j) for i < kk and j < cols to out[i * ld + j]. Called from several threads at once.
template <class T>
class MatSource {
 public:
  virtual void rows(int64_t k0, int64_t kk, int64_t j0, int64_t cols, T* out, int64_t ld) const = 0;

 protected:
  ~MatSource() = default;
};

// One product of a batched GEMM: c = a @ b. Where b_source is set, b's elements come from it and b
// gives only the shape (b.p is not read).
template <class T>
struct GemmOf {
  MatRef<const T> a, b;
  MatRef<T> c;
  const MatSource<T>* b_source = nullptr;
};
using Bf16Gemm = GemmOf<bf16>;
using F32Gemm = GemmOf<float>;

// c = a @ b for `count` products of one shape (a: M x K, b: K x N) and one set of strides,
// product(i) giving the i-th (called from one thread), accumulated in f32 and rounded once to bf16
// by the kernel of level isa: VDPBF16PS at Isa::Avx512Bf16, the AMX tiles' TDPBF16PS at Isa::Amx
// (Note [bf16 GEMM] in gemm_packed_bf16.cpp, Note [AMX GEMM] in gemm_packed_amx.cpp: the order of
// the sums, denormals). Any strides; an a or b that several products share (the same pointer, or
// for b the same source: broadcast batches) is packed once. Either all products have a b_source or
// none. K == 0 gives zeros. c must not overlap a or b. Throws wick::UnsupportedError for an isa
// below Avx512Bf16 or above simd::detected().
void gemm_bf16(int64_t count, const std::function<Bf16Gemm(int64_t)>& product, simd::Isa isa);

// Whether gemm_bf16 at level isa reads product g's b as it lies, unpacked: b = W^T of a weight W
// stored [n, k] (unit stride along k) against a few rows of a, at Isa::Amx with W's rows 64-byte
// aligned (the packed GEMM's bits: Note [AMX GEMM with the weight in place] in gemm_packed_amx.cpp),
// at Isa::Avx512Bf16 by dot products of W's rows (Note [bf16 dot products of a weight's rows] in
// gemm_packed_bf16.cpp).
bool bf16_weight_as_is(const Bf16Gemm& g, simd::Isa isa);

// The same for f32 with wick's AVX-512 kernel (Note [f32 GEMM] in gemm_packed_f32.cpp), at Isa::Avx512
// and above: each output one chain of fused multiply-adds in increasing k. Throws
// wick::UnsupportedError for an isa below Avx512 or above simd::detected().
void gemm_f32(int64_t count, const std::function<F32Gemm(int64_t)>& product, simd::Isa isa);

// f32 products of at least this many multiply-adds run on gemm_f32 from Isa::Avx512 up (matmul and
// the forward convolutions); smaller ones on OpenBLAS (Note [f32 GEMM]).
inline constexpr double kOwnF32Min = 2.0 * 1024 * 1024;

// CpuBackend::conv2d and conv_transpose2d (which pass simd::active()) with their GEMMs chosen for
// level isa, at most simd::detected(), as matmul_at; the 1-d convolutions run through them with a
// height of 1.
void conv2d_at(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p, simd::Isa isa);
void conv_transpose2d_at(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p,
                         simd::Isa isa);

// CpuBackend::matmul (which passes simd::active()) with its GEMM chosen for level isa, at most
// simd::detected(): bf16 through gemm_bf16 at Isa::Avx512Bf16 and above (its kernel for isa);
// f32, and f16 and bf16 below that widened to f32, through gemm_f32 at Isa::Avx512 and above and
// OpenBLAS below (matrix-vector products keep the active level's kernels). Tests run every level
// through it.
void matmul_at(const TensorArg& a, const TensorArg& b, const TensorArg& dst, simd::Isa isa);

// The BLAS library's build, the core type it picked and its thread count, for DeviceInfo.
std::string blas_details();
// Replaces a pre-AVX OpenBLAS core on a vector-capable processor (Note [OpenBLAS core selection] in
// matmul.cpp); called once, before the first BLAS call.
void select_blas_core();

}  // namespace wick::cpu
