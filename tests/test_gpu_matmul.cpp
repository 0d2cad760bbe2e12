// GPU matmul and convolutions against the CPU backend, on the layouts and sizes that pick the
// GPU's distinct paths: transposed operands passed with BLAS transpose flags, broadcast batches
// (stride 0) in one strided-batched call, batch dims that do not merge (host loop), operands BLAS
// cannot describe (copied first), f8e4m3 through f16 + f32, batched im2col over samples, groups
// batched instead of samples, and column buffers past the 1 GiB chunk limit. Every test skips
// when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
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
// `terms` products of values in [-1, 1].
void expect_close(const Tensor& gpu, const Tensor& cpu, int64_t terms, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  const std::vector<double> g = gpu.to(Device::cpu()).to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> c = cpu.to_dtype(DType::F64).to_vector<double>();
  const double acc_eps = cpu.dtype() == DType::F64 ? 1e-15 : 1.2e-7;
  const double atol = acc_eps * 4 * static_cast<double>(terms) + eps_of(cpu.dtype()) * 1e-2;
  const double rtol = eps_of(cpu.dtype()) * 1.01;
  for (size_t i = 0; i < c.size(); ++i)
    ASSERT_LE(std::abs(g[i] - c[i]), atol + rtol * std::abs(c[i]))
        << what << " at " << i << ": gpu " << g[i] << " cpu " << c[i];
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
    // The benchmark shape: one im2col for all 32 samples, one strided-batched GEMM.
    const Tensor x = randu({32, 64, 56, 56}, DType::F32), w = randu({64, 64, 3, 3}, DType::F32);
    Conv2dParams p;
    p.padding = {1, 1};
    expect_close(x.to(d).conv2d(w.to(d), p), x.conv2d(w, p), 64 * 9, "conv2d N32 C64 56x56");
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
