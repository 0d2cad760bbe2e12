// GPU matmul and convolutions against the CPU backend, on the layouts and sizes that pick the
// GPU's distinct paths: transposed operands passed with BLAS transpose flags, broadcast batches
// (stride 0) in one strided-batched call, batch dims that do not merge (host loop), operands BLAS
// cannot describe (copied first), f8e4m3 through f16 + f32, the matrix-vector kernel (both
// orientations, 16-byte or element loads, short and long rows, batches, f16's rescaled operands
// with subnormals, infinities and NaN), matrix-vector products along the matrix's unit stride
// (BLAS), the implicit-GEMM conv (partial tiles, groups, strided inputs, transposed at stride 1),
// batched im2col over samples, groups batched instead of samples, and column buffers past the 1 GiB
// chunk limit. Every test skips when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "test_util.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace {

using wick::Conv1dParams;
using wick::Conv2dParams;
using wick::Device;
using wick::DType;
using wick::Scalar;
using wick::Shape;
using wick::Tensor;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3};

// Relative precision of one rounding to `t`.
double eps_of(DType t) {
  switch (t) {
    case DType::F64:
      return 1e-15;
    case DType::F32:
      return 1.2e-7;
    case DType::F16:
      return 1e-3;
    case DType::BF16:
      return 8e-3;
    default:
      return 0.125;
  }
}

// GPU result vs CPU result of the same op on the same inputs. Both round an f32 (f64) sum once;
// the sums' order differs, so allow a few roundings of the output plus accumulation error over
// `terms` products of values in [-1, 1] (times `scale`, the largest product's magnitude). An inf or
// NaN on the CPU must be the same on the GPU.
void expect_close(const Tensor& gpu, const Tensor& cpu, int64_t terms, const std::string& what, double scale = 1) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  const std::vector<double> g = gpu.to(Device::cpu()).to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> c = cpu.to_dtype(DType::F64).to_vector<double>();
  const double acc_eps = cpu.dtype() == DType::F64 ? 1e-15 : 1.2e-7;
  const double atol = (acc_eps * 4 * static_cast<double>(terms) + eps_of(cpu.dtype()) * 1e-2) * scale;
  const double rtol = eps_of(cpu.dtype()) * 1.01;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << what << " at " << i << ": gpu " << g[i] << " cpu nan";
      continue;
    }
    if (std::isinf(c[i])) {
      ASSERT_EQ(g[i], c[i]) << what << " at " << i;
      continue;
    }
    ASSERT_LE(std::abs(g[i] - c[i]), atol + rtol * std::abs(c[i]))
        << what << " at " << i << ": gpu " << g[i] << " cpu " << c[i];
  }
}

Tensor randu(const Shape& s, DType t) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(t); }

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

TEST(GpuConv, Conv2dBatchedAgreesWithCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    // The benchmark shape (the implicit GEMM; in bf16 on tensor cores where there are some).
    for (DType t : {DType::F32, DType::BF16}) {
      const Tensor x = randu({32, 64, 56, 56}, t), w = randu({64, 64, 3, 3}, t);
      Conv2dParams p;
      p.padding = {1, 1};
      expect_close(x.to(d).conv2d(w.to(d), p), x.conv2d(w, p), 64 * 9,
                   std::string(wick::dtype_name(t)) + " conv2d N32 C64 56x56");
    }
  }
}

TEST(GpuConv, ParametersDtypesAndLayouts) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : kFloats) {
      const std::string tn(wick::dtype_name(t));
      // NHWC storage seen as NCHW (channels innermost), stride, padding, dilation, groups
      const Tensor xs = randu({3, 9, 11, 6}, t);
      const Tensor x = xs.permute({0, 3, 1, 2});
      const Tensor w = randu({4, 3, 3, 2}, t);
      Conv2dParams p;
      p.stride = {2, 1};
      p.padding = {1, 2};
      p.dilation = {1, 2};
      p.groups = 2;
      expect_close(xs.to(d).permute({0, 3, 1, 2}).conv2d(w.to(d), p), x.conv2d(w, p), 18, tn + " conv2d");
      // depthwise: more groups than samples, batched over the groups
      const Tensor xd = randu({2, 8, 7, 7}, t), wd = randu({8, 1, 3, 3}, t);
      Conv2dParams pd;
      pd.groups = 8;
      pd.padding = {1, 1};
      expect_close(xd.to(d).conv2d(wd.to(d), pd), xd.conv2d(wd, pd), 9, tn + " depthwise");
      // pointwise 1x1 reads the input in place (narrowed channels)
      const Tensor xp = randu({2, 10, 5, 6}, t).narrow(1, 2, 6), wp = randu({5, 6, 1, 1}, t);
      expect_close(xp.to(d).conv2d(wp.to(d)), xp.conv2d(wp), 6, tn + " pointwise");
      // transposed: stride, padding, dilation, output_padding, groups
      const Tensor xt = randu({2, 4, 5, 6}, t), wt = randu({4, 3, 3, 2}, t);
      Conv2dParams pt;
      pt.stride = {2, 3};
      pt.padding = {1, 0};
      pt.dilation = {2, 1};
      pt.output_padding = {1, 2};
      pt.groups = 2;
      expect_close(xt.to(d).conv_transpose2d(wt.to(d), pt), xt.conv_transpose2d(wt, pt), 2 * 6, tn + " transpose2d");
      // 1-d, transposed input layout
      const Tensor x1 = randu({3, 13, 4}, t).transpose(1, 2), w1 = randu({6, 4, 3}, t);
      Conv1dParams p1;
      p1.stride = 2;
      p1.padding = 2;
      p1.dilation = 2;
      expect_close(x1.to(d).conv1d(w1.to(d), p1), x1.conv1d(w1, p1), 12, tn + " conv1d");
      const Tensor w1t = randu({4, 5, 3}, t);
      Conv1dParams p1t;
      p1t.stride = 3;
      p1t.padding = 1;
      p1t.output_padding = 2;
      expect_close(x1.to(d).conv_transpose1d(w1t.to(d), p1t), x1.conv_transpose1d(w1t, p1t), 12,
                   tn + " conv_transpose1d");
    }
}

TEST(GpuConv, ImplicitGemmShapes) {
  // 32 to 64 output channels per group, a K (c_in/groups * kh * kw) of 32 and input channels per
  // group in whole 16-byte vectors: the implicit-GEMM kernel for f32 (and bf16 / f16 on tensor-core
  // GPUs). Pixel and output channel counts that do not fill the 128 x 64 tiles, K not a multiple of
  // its 16 / 32-row steps, groups, channels-last inputs read in place, NCHW ones read in place (f32)
  // or copied (16-bit).
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : {DType::F32, DType::BF16, DType::F16}) {
      const std::string tn(wick::dtype_name(t));
      const Tensor xs = randu({3, 13, 11, 32}, t);  // NHWC storage seen as NCHW: read in place
      const Tensor x = xs.permute({0, 3, 1, 2}), w = randu({80, 16, 3, 3}, t);
      Conv2dParams p;
      p.stride = {2, 1};
      p.padding = {1, 2};
      p.dilation = {1, 2};
      p.groups = 2;
      expect_close(xs.to(d).permute({0, 3, 1, 2}).conv2d(w.to(d), p), x.conv2d(w, p), 144, tn + " grouped conv2d");
      const Tensor x2 = randu({2, 48, 9, 17}, t), w2 = randu({56, 48, 3, 3}, t);
      Conv2dParams p2;
      p2.padding = {1, 1};
      expect_close(x2.to(d).conv2d(w2.to(d), p2), x2.conv2d(w2, p2), 432, tn + " conv2d 56 channels");
      // transposed at stride 1: a forward conv with negated padding and dilation
      const Tensor xt = randu({2, 40, 7, 9}, t), wt = randu({40, 36, 3, 3}, t);
      Conv2dParams pt;
      pt.padding = {1, 0};
      pt.dilation = {2, 1};
      expect_close(xt.to(d).conv_transpose2d(wt.to(d), pt), xt.conv_transpose2d(wt, pt), 360, tn + " transpose2d");
      // transposed at stride 2: the four phases of a 4x4 kernel in one launch, and those of a 3x3 one
      // with output padding (2 and 1 taps per dim)
      const Tensor xs2 = randu({2, 48, 6, 5}, t), w4 = randu({48, 40, 4, 4}, t), w3 = randu({48, 40, 3, 3}, t);
      Conv2dParams ps2;
      ps2.stride = {2, 2};
      ps2.padding = {1, 1};
      expect_close(xs2.to(d).conv_transpose2d(w4.to(d), ps2), xs2.conv_transpose2d(w4, ps2), 192,
                   tn + " transpose2d k4 s2");
      ps2.output_padding = {1, 1};
      expect_close(xs2.to(d).conv_transpose2d(w3.to(d), ps2), xs2.conv_transpose2d(w3, ps2), 192,
                   tn + " transpose2d k3 s2");
      // the same in one launch with groups, and in 1-d (two phases)
      const Tensor xg = randu({2, 64, 5, 6}, t), wg = randu({64, 32, 4, 4}, t);
      Conv2dParams pg;
      pg.stride = {2, 2};
      pg.padding = {1, 1};
      pg.groups = 2;
      expect_close(xg.to(d).conv_transpose2d(wg.to(d), pg), xg.conv_transpose2d(wg, pg), 128,
                   tn + " grouped transpose2d k4 s2");
      const Tensor xl = randu({3, 48, 20}, t), wl = randu({48, 40, 4}, t);
      Conv1dParams pl;
      pl.stride = 2;
      pl.padding = 1;
      expect_close(xl.to(d).conv_transpose1d(wl.to(d), pl), xl.conv_transpose1d(wl, pl), 96, tn + " transpose1d k4 s2");
      const Tensor x1 = randu({2, 50, 64}, t).transpose(1, 2), w1 = randu({48, 64, 5}, t);
      Conv1dParams p1;
      p1.stride = 2;
      p1.padding = 2;
      expect_close(x1.to(d).conv1d(w1.to(d), p1), x1.conv1d(w1, p1), 320, tn + " conv1d");
      // An NCHW view with a channel slice and H and W swapped: f32 reads it in place with 4-byte copies,
      // 16-bit types copy it to channels-last first.
      const Tensor xv = randu({2, 70, 10, 12}, t), wv = randu({40, 64, 3, 3}, t);
      auto view = [](const Tensor& v) { return v.narrow(1, 3, 64).transpose(2, 3); };
      expect_close(view(xv.to(d)).conv2d(wv.to(d), p2), view(xv).conv2d(wv, p2), 576, tn + " conv2d of a view");
    }
}

TEST(GpuConv, TiledShapes) {
  // 16-bit convolutions at stride 1 with at most 3 x 3 taps over NCHW inputs whose rows are whole
  // 16-byte vectors: the tiled kernel on tensor-core GPUs (Note [GPU tiled conv]), else the paths
  // before it. Tiles of 8, 16 and 32 columns that overhang the output, halos in and past the
  // padding, a chunk of input channels cut short, output channels beyond one 64-channel tile and
  // not filling the last, groups, kernels of 1 to 3 taps per dim, and views of larger tensors.
  WICK_REQUIRE_GPU(devs);
  struct Case {
    Shape x, w;
    std::array<int64_t, 2> pad;
    int64_t groups;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{2, 32, 24, 40}, {48, 32, 3, 3}, {1, 1}, 1, "16-column tiles"},
      {{3, 20, 13, 8}, {64, 20, 3, 3}, {1, 1}, 1, "8-column tiles, a short chunk"},
      {{1, 48, 12, 32}, {40, 48, 3, 3}, {1, 1}, 1, "32-column tiles"},
      {{2, 24, 17, 16}, {80, 24, 3, 3}, {0, 0}, 1, "no padding, two channel tiles"},
      {{2, 16, 8, 40}, {136, 16, 3, 3}, {1, 2}, 1, "two columns of padding, three channel tiles"},
      {{2, 16, 12, 24}, {56, 16, 3, 3}, {2, 0}, 1, "padding past the kernel"},
      {{2, 32, 14, 16}, {32, 32, 1, 3}, {0, 1}, 1, "1x3"},
      {{2, 32, 14, 16}, {32, 32, 3, 1}, {1, 0}, 1, "3x1"},
      {{2, 32, 14, 16}, {48, 32, 2, 2}, {1, 0}, 1, "2x2"},
      {{2, 32, 14, 16}, {48, 32, 1, 1}, {0, 0}, 1, "1x1"},
      {{2, 48, 14, 16}, {64, 24, 3, 3}, {1, 1}, 2, "groups"},
      {{1, 128, 16, 24}, {32, 128, 3, 3}, {1, 1}, 1, "eight chunks"},
  };
  for (const Device& d : devs)
    for (DType t : {DType::BF16, DType::F16}) {
      const std::string tn(wick::dtype_name(t));
      for (const Case& c : cases) {
        const Tensor x = randu(c.x, t), w = randu(c.w, t);
        Conv2dParams p;
        p.padding = c.pad;
        p.groups = c.groups;
        const int64_t terms = c.w[1] * c.w[2] * c.w[3];
        expect_close(x.to(d).conv2d(w.to(d), p), x.conv2d(w, p), terms, tn + " " + c.what);
      }
      // x a view: rows 1.. and columns ..39 of a [2, 40, 15, 48] tensor, channels 8..39
      const Tensor big = randu({2, 40, 15, 48}, t), w = randu({56, 32, 3, 3}, t);
      const Tensor xv = big.narrow(1, 8, 32).narrow(2, 1, 14).narrow(3, 0, 40);
      Conv2dParams p;
      p.padding = {1, 1};
      expect_close(big.to(d).narrow(1, 8, 32).narrow(2, 1, 14).narrow(3, 0, 40).conv2d(w.to(d), p), xv.conv2d(w, p),
                   288, tn + " view");
    }
}

TEST(GpuConv, WinogradShapes) {
  // f32 3x3 at stride 1 with at least 16 input and 48 output channels per group: the Winograd kernel
  // (Note [GPU Winograd conv]). Odd output sizes (partial 2x2 tiles), input channels not a multiple of
  // its 8-channel steps, output channels over one 64-channel tile, groups, padding 0 to 2 and
  // asymmetric, inputs and weights in other layouts, transposed convolutions at stride 1 (flipped taps).
  WICK_REQUIRE_GPU(devs);
  const DType t = DType::F32;
  for (const Device& d : devs) {
    const Tensor x = randu({2, 20, 13, 11}, t), w = randu({100, 20, 3, 3}, t);
    Conv2dParams p;
    p.padding = {1, 1};
    expect_close(x.to(d).conv2d(w.to(d), p), x.conv2d(w, p), 180, "100 channels, odd sizes");
    // weights as a permuted view
    const Tensor wv = randu({3, 3, 20, 100}, t).permute({3, 2, 0, 1});
    expect_close(x.to(d).conv2d(wv.to(d), p), x.conv2d(wv, p), 180, "permuted weights");
    const Tensor xg = randu({3, 32, 9, 10}, t), wg = randu({96, 16, 3, 3}, t);
    Conv2dParams pg;
    pg.padding = {0, 2};
    pg.groups = 2;
    expect_close(xg.to(d).conv2d(wg.to(d), pg), xg.conv2d(wg, pg), 144, "groups, padding 0 / 2");
    // NHWC storage seen as NCHW, padding 2 (an output larger than the input)
    const Tensor xs = randu({2, 7, 9, 24}, t), ws = randu({64, 24, 3, 3}, t);
    Conv2dParams p2;
    p2.padding = {2, 2};
    expect_close(xs.to(d).permute({0, 3, 1, 2}).conv2d(ws.to(d), p2), xs.permute({0, 3, 1, 2}).conv2d(ws, p2), 216,
                 "channels-last input");
    // a channel slice with H and W swapped
    const Tensor xv = randu({2, 70, 10, 12}, t), wc = randu({64, 64, 3, 3}, t);
    auto view = [](const Tensor& v) { return v.narrow(1, 3, 64).transpose(2, 3); };
    expect_close(view(xv.to(d)).conv2d(wc.to(d), p), view(xv).conv2d(wc, p), 576, "view input");
    // transposed at stride 1, padding 0, 1 and 2
    const Tensor xt = randu({2, 48, 10, 7}, t), wt = randu({48, 56, 3, 3}, t);
    for (const int64_t pad : {0, 1, 2}) {
      Conv2dParams pt;
      pt.padding = {pad, 2 - pad};
      expect_close(xt.to(d).conv_transpose2d(wt.to(d), pt), xt.conv_transpose2d(wt, pt), 432,
                   "transposed, padding " + std::to_string(pad));
    }
  }
}

TEST(GpuConv, ColumnBuffersPastTheChunkLimit) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    // 12 samples x 576 rows x 40000 pixels x 4 bytes = 1.1 GB of columns: two chunks.
    const Tensor x = randu({12, 64, 200, 200}, DType::F32), w = randu({2, 64, 3, 3}, DType::F32);
    Conv2dParams p;
    p.padding = {1, 1};
    expect_close(x.to(d).conv2d(w.to(d), p), x.conv2d(w, p), 64 * 9, "conv2d chunked");
    // transposed: 30 samples x 576 rows x 16384 pixels x 4 bytes = 1.1 GB
    const Tensor xt = randu({30, 2, 128, 128}, DType::F32), wt = randu({2, 64, 3, 3}, DType::F32);
    Conv2dParams pt;
    pt.padding = {1, 1};
    expect_close(xt.to(d).conv_transpose2d(wt.to(d), pt), xt.conv_transpose2d(wt, pt), 2 * 9,
                 "conv_transpose2d chunked");
  }
}

}  // namespace
