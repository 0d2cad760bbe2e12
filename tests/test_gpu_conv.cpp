// GPU convolutions against the CPU backend, on the layouts and sizes that pick the GPU's distinct
// paths: the implicit-GEMM conv (partial tiles, groups, strided inputs, transposed at stride 1), the
// tiled and Winograd kernels, batched im2col over samples, groups batched instead of samples, and
// column buffers past the 1 GiB chunk limit. Every test skips when no GPU is present.
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

using wick::Conv1dParams;
using wick::Conv2dParams;
using wick::Device;
using wick::DType;
using wick::Shape;
using wick::Tensor;
using wick::testing::expect_close;
using wick::testing::kFloats;
using wick::testing::randu;

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
