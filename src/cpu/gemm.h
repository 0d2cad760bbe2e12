// One strided GEMM for the CPU backend (matmul, and conv lowered to matmul): OpenBLAS underneath.
#pragma once

#include <cstdint>
#include <string>

namespace wick::cpu {

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

// The BLAS library's build, the core type it picked and its thread count, for DeviceInfo.
std::string blas_details();
// Replaces a pre-AVX OpenBLAS core on a vector-capable processor (Note [OpenBLAS core selection] in
// matmul.cpp); called once, before the first BLAS call.
void select_blas_core();

}  // namespace wick::cpu
