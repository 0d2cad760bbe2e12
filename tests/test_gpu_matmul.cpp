// GPU matmul against the CPU backend, on the layouts and sizes that pick the GPU's distinct paths:
// transposed operands passed with BLAS transpose flags, broadcast batches (stride 0) in one
// strided-batched call, batch dims that do not merge (host loop), operands BLAS cannot describe
// (copied first), f8e4m3 through f16 + f32, the matrix-vector kernel (both orientations, 16-byte or
// element loads, short and long rows, batches, f16's rescaled operands with subnormals, infinities
// and NaN), and matrix-vector products along the matrix's unit stride (BLAS). The convolutions are
// in test_gpu_conv.cpp. Every test skips when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "gpu_compare.h"
#include "test_util.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace {

using wick::Device;
using wick::DType;
using wick::Scalar;
using wick::Shape;
using wick::Tensor;
using wick::testing::expect_close;
using wick::testing::kFloats;
using wick::testing::randu;

TEST(GpuMatmul, LayoutsAgreeWithCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : kFloats) {
      const std::string tn(wick::dtype_name(t));
      const Tensor a = randu({3, 37, 53}, t), b = randu({3, 53, 29}, t);
      const Tensor ga = a.to(d), gb = b.to(d);
      expect_close(ga.matmul(gb), a.matmul(b), 53, tn + " contiguous");
      // transposed operands: unit stride in the second-to-last dim (BLAS transpose flags)
      const Tensor at = randu({3, 53, 37}, t), bt = randu({3, 29, 53}, t);
      expect_close(at.to(d).t().matmul(bt.to(d).t()), at.t().matmul(bt.t()), 53, tn + " transposed");
      // broadcast batch: b shared by every batch (stride 0), one strided-batched call
      const Tensor b1 = randu({53, 29}, t);
      expect_close(ga.matmul(b1.to(d)), a.matmul(b1), 53, tn + " broadcast");
      // rank 5 with batch dims that do not merge (permuted), plus a narrowed matrix (ld > cols)
      const Tensor a5 = randu({2, 3, 4, 9, 16}, t), b5 = randu({4, 3, 2, 16, 11}, t);
      const Tensor a5v = a5.narrow(4, 2, 12), b5v = b5.permute({2, 1, 0, 3, 4}).narrow(3, 1, 12);
      expect_close(a5v.to(d).matmul(b5.to(d).permute({2, 1, 0, 3, 4}).narrow(3, 1, 12)), a5v.matmul(b5v), 12,
                   tn + " rank 5");
      // an operand BLAS cannot describe: stride 0 inside the matrix (a broadcast row)
      const Tensor row = randu({1, 53}, t);
      expect_close(row.to(d).broadcast_as({37, 53}).matmul(gb.narrow(0, 0, 1).reshape({53, 29})),
                   row.broadcast_as({37, 53}).matmul(b.narrow(0, 0, 1).reshape({53, 29})), 53, tn + " broadcast row");
    }
}

// The matrix-vector kernel (Note [GPU matrix-vector products] in src/gpu/kernels/matmul.cu) on
// the layouts that pick its variants; f64 and f8e4m3 run the same products through BLAS.
TEST(GpuMatmul, MatrixVectorAgreesWithCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : kFloats) {
      const std::string tn(wick::dtype_name(t));
      // k: one element, fewer than a 16-byte unit, odd, one unit, short rows (lane groups below a
      // warp), a guarded last round, several full rounds plus a partial one.
      for (const int64_t k : {1, 3, 7, 8, 24, 53, 64, 1000, 4104}) {
        const std::string kn = tn + " k " + std::to_string(k);
        for (const int64_t m : {1, 2, 67}) {
          const std::string mn = kn + " m " + std::to_string(m);
          const Tensor w = randu({m, k}, t), x = randu({k}, t);
          const Tensor gw = w.to(d), gx = x.to(d);
          // n == 1: W x, with x 1-d and as a column
          expect_close(gw.matmul(gx), w.matmul(x), k, mn + " W x");
          expect_close(gw.matmul(gx.reshape({k, 1})), w.matmul(x.reshape({k, 1})), k, mn + " W x column");
          // m == 1: x W^T (the decode product), rows of W read along k
          expect_close(gx.matmul(gw.t()), x.matmul(w.t()), k, mn + " x W^T");
          expect_close(gx.reshape({1, k}).matmul(gw.t()), x.reshape({1, k}).matmul(w.t()), k, mn + " x row W^T");
          // strided vectors: a column of a matrix (n == 1), a row of a transposed matrix (m == 1)
          const Tensor xs = randu({k, 3}, t);
          expect_close(gw.matmul(xs.to(d).narrow(1, 1, 1)), w.matmul(xs.narrow(1, 1, 1)), k, mn + " strided x");
          expect_close(xs.to(d).t().narrow(0, 2, 1).matmul(gw.t()), xs.t().narrow(0, 2, 1).matmul(w.t()), k,
                       mn + " strided x row");
          // misaligned rows (row stride k + 1, offset 1): element loads; misaligned x only
          const Tensor wm = randu({m, k + 1}, t).narrow(1, 1, k), xm = randu({k + 1}, t).narrow(0, 1, k);
          expect_close(wm.to(d).matmul(gx), wm.matmul(x), k, mn + " misaligned rows");
          expect_close(gx.matmul(wm.to(d).t()), x.matmul(wm.t()), k, mn + " misaligned rows, x W^T");
          expect_close(gw.matmul(xm.to(d)), w.matmul(xm), k, mn + " misaligned x");
          // rows 16-byte aligned at an offset (8 elements into a wider matrix)
          const Tensor wo = randu({m, k + 16}, t).narrow(1, 8, k);
          expect_close(wo.to(d).matmul(gx), wo.matmul(x), k, mn + " offset rows");
        }
      }
      // batches: merged batch dims (grid y), a broadcast vector, dims that do not merge (host
      // loop), a matrix shared by the batch (BLAS), attention-style q K^T over [batch, heads]
      const Tensor a3 = randu({3, 37, 64}, t), x3 = randu({3, 64, 1}, t), x1 = randu({64, 1}, t);
      expect_close(a3.to(d).matmul(x3.to(d)), a3.matmul(x3), 64, tn + " batched W x");
      expect_close(a3.to(d).matmul(x1.to(d)), a3.matmul(x1), 64, tn + " batched W, broadcast x");
      expect_close(x1.to(d).t().matmul(a3.to(d).transpose(1, 2)), x1.t().matmul(a3.transpose(1, 2)), 64,
                   tn + " broadcast x, batched W^T");
      expect_close(a3.narrow(0, 0, 1).reshape({37, 64}).to(d).matmul(x3.to(d)),
                   a3.narrow(0, 0, 1).reshape({37, 64}).matmul(x3), 64, tn + " shared W");
      const Tensor a5 = randu({2, 3, 4, 9, 16}, t), x5 = randu({4, 3, 2, 16, 1}, t);
      expect_close(a5.to(d).matmul(x5.to(d).permute({2, 1, 0, 3, 4})), a5.matmul(x5.permute({2, 1, 0, 3, 4})), 16,
                   tn + " rank 5");
      const Tensor q = randu({2, 4, 1, 32}, t), kc = randu({2, 4, 50, 32}, t);
      expect_close(q.to(d).matmul(kc.to(d).transpose(2, 3)), q.matmul(kc.transpose(2, 3)), 32, tn + " q K^T");
    }
}

// f16 operands are rescaled in the matrix-vector kernel: subnormals must keep their value, and an
// inf or NaN in either operand must reach the result as on the CPU (the lane redoes its sums).
TEST(GpuMatmul, MatrixVectorSpecialValues) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      const std::string tn(wick::dtype_name(t));
      for (const int64_t k : {40, 1000, 4104}) {
        const std::string kn = tn + " k " + std::to_string(k);
        // subnormal f16 (below 6.1e-5) in the matrix, then in the vector
        const Tensor tiny = Tensor::rand_uniform({33, k}, DType::F32, -1e-5, 1e-5).to_dtype(t);
        const Tensor big = Tensor::rand_uniform({k}, DType::F32, -1000, 1000).to_dtype(t);
        expect_close(tiny.to(d).matmul(big.to(d)), tiny.matmul(big), k, kn + " tiny W", 1e-2);
        const Tensor tiny_x = Tensor::rand_uniform({k}, DType::F32, -1e-5, 1e-5).to_dtype(t);
        const Tensor big_w = Tensor::rand_uniform({33, k}, DType::F32, -1000, 1000).to_dtype(t);
        expect_close(big_w.to(d).matmul(tiny_x.to(d)), big_w.matmul(tiny_x), k, kn + " tiny x", 1e-2);
        expect_close(tiny_x.to(d).matmul(big_w.to(d).t()), tiny_x.matmul(big_w.t()), k, kn + " tiny x, x W^T", 1e-2);
        // inf, -inf + inf (NaN) and NaN in rows of W; an inf in x reaches every row
        Tensor w = randu({33, k}, t);
        w.narrow(0, 2, 1).narrow(1, 5, 1).const_set(Scalar(INFINITY));
        w.narrow(0, 8, 1).narrow(1, 1, 1).const_set(Scalar(-INFINITY));
        w.narrow(0, 8, 1).narrow(1, k - 1, 1).const_set(Scalar(INFINITY));
        w.narrow(0, 20, 1).narrow(1, 17, 1).const_set(Scalar(NAN));
        const Tensor x = randu({k}, t);
        expect_close(w.to(d).matmul(x.to(d)), w.matmul(x), k, kn + " inf / nan in W");
        expect_close(x.to(d).matmul(w.to(d).t()), x.matmul(w.t()), k, kn + " inf / nan in W, x W^T");
        Tensor xi = randu({k}, t);
        xi.narrow(0, 11, 1).const_set(Scalar(-INFINITY));
        const Tensor wf = randu({33, k}, t);
        expect_close(wf.to(d).matmul(xi.to(d)), wf.matmul(xi), k, kn + " inf in x");
      }
    }
}

// Matrix-vector products whose matrix has unit stride along the outputs, which gemv_kernel does not
// take (BLAS runs them): x W with W row-major (m == 1, the decode step's probabilities @ V) and A x
// with A column-major (n == 1) for 1 to 4100 terms and 8 to 4104 outputs, batches (merged, a
// broadcast x, dims that do not merge), misaligned outputs, then inf and NaN in W and in x.
TEST(GpuMatmul, MatrixAlongTheOutputsTimesVectorAgreesWithCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : kFloats) {
      const std::string tn(wick::dtype_name(t));
      for (const int64_t k : {1, 5, 64, 1000, 4100}) {
        for (const int64_t n : {8, 136, 4104}) {
          const std::string kn = tn + " k " + std::to_string(k) + " n " + std::to_string(n);
          const Tensor x = randu({k}, t), w = randu({k, n}, t);
          const Tensor gx = x.to(d), gw = w.to(d);
          expect_close(gx.matmul(gw), x.matmul(w), k, kn + " x W");
          expect_close(gx.reshape({1, k}).matmul(gw), x.reshape({1, k}).matmul(w), k, kn + " x row W");
          // A x with A [n, k] column-major (A = W^T), x 1-d and a strided column
          expect_close(gw.t().matmul(gx), w.t().matmul(x), k, kn + " W^T x");
          const Tensor xs = randu({k, 3}, t);
          expect_close(gw.t().matmul(xs.to(d).narrow(1, 2, 1)), w.t().matmul(xs.narrow(1, 2, 1)), k,
                       kn + " W^T strided x");
          // outputs one element off alignment: BLAS
          const Tensor wm = randu({k, n + 1}, t).narrow(1, 1, n);
          expect_close(gx.matmul(wm.to(d)), x.matmul(wm), k, kn + " misaligned W");
        }
      }
      // attention's probabilities @ V over heads, a broadcast x, batch dims that do not merge
      const Tensor p = randu({32, 1, 4096}, t), v = randu({32, 4096, 128}, t);
      expect_close(p.to(d).matmul(v.to(d)), p.matmul(v), 4096, tn + " p V");
      const Tensor x1 = randu({1, 1, 300}, t), w3 = randu({3, 300, 64}, t);
      expect_close(x1.to(d).matmul(w3.to(d)), x1.matmul(w3), 300, tn + " broadcast x");
      const Tensor x5 = randu({2, 3, 1, 77}, t), w5 = randu({3, 2, 77, 40}, t);
      expect_close(x5.to(d).matmul(w5.to(d).transpose(0, 1)), x5.matmul(w5.transpose(0, 1)), 77, tn + " rank 4");
      if (t == DType::F64 || t == DType::F8E4M3) continue;
      for (const int64_t k : {40, 4100}) {
        const std::string kn = tn + " k " + std::to_string(k);
        Tensor w = randu({k, 64}, t);
        w.narrow(0, 5, 1).narrow(1, 2, 1).const_set(Scalar(INFINITY));
        w.narrow(0, 1, 1).narrow(1, 8, 1).const_set(Scalar(-INFINITY));
        w.narrow(0, k - 1, 1).narrow(1, 8, 1).const_set(Scalar(INFINITY));
        w.narrow(0, 17, 1).narrow(1, 20, 1).const_set(Scalar(NAN));
        const Tensor x = randu({k}, t);
        expect_close(x.to(d).matmul(w.to(d)), x.matmul(w), k, kn + " inf / nan in W");
        Tensor xi = randu({k}, t);
        xi.narrow(0, 11, 1).const_set(Scalar(-INFINITY));
        const Tensor wf = randu({k, 64}, t);
        expect_close(xi.to(d).matmul(wf.to(d)), xi.matmul(wf), k, kn + " inf in x");
      }
    }
}

TEST(GpuMatmul, EmptySums) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : kFloats) {
      const Tensor c = Tensor::zeros({2, 3, 0}, t, d).matmul(Tensor::zeros({2, 0, 4}, t, d));
      ASSERT_EQ(c.shape(), Shape({2, 3, 4}));
      for (double v : c.to(Device::cpu()).to_dtype(DType::F64).to_vector<double>()) EXPECT_EQ(v, 0.0);
      EXPECT_EQ(Tensor::zeros({0, 5}, t, d).matmul(Tensor::zeros({5, 4}, t, d)).shape(), Shape({0, 4}));
    }
}

}  // namespace
