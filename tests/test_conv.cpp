// Conv, pooling, resampling and rope: what the conformance cases cannot say. Typed errors with
// messages naming the shapes, hand-checked small results, NaN in max_pool2d, align_corners, empty
// channel counts, and sizes large enough to take the multi-threaded paths.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

using testing::expect_error;

class Conv : public ::testing::TestWithParam<Device> {
 protected:
  Device dev() const { return GetParam(); }
  Tensor f32(const std::vector<float>& v, const Shape& s) const { return Tensor::from_vector(v, s, dev()); }
  Tensor f64(const std::vector<double>& v, const Shape& s) const { return Tensor::from_vector(v, s, dev()); }
  Tensor zeros(const Shape& s, DType d = DType::F32) const { return Tensor::zeros(s, d, dev()); }
  Tensor rand(const Shape& s, DType d = DType::F32) const { return Tensor::rand_uniform(s, d, -1, 1, dev()); }
};

void expect_values(const Tensor& t, const std::vector<float>& want, float tol = 1e-6f) {
  const std::vector<float> got = t.to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// ---- errors ---------------------------------------------------------------------------------

TEST_P(Conv, Conv1dErrors) {
  const Tensor x = zeros({2, 4, 10});
  const Tensor w = zeros({6, 2, 3});
  expect_error<ShapeError>([&] { zeros({4, 10}).conv1d(w); }, {"[conv1d]", "[4, 10] f32"});
  expect_error<ShapeError>([&] { x.conv1d(zeros({6, 4})); }, {"[conv1d]", "weight", "[6, 4] f32"});
  expect_error<DTypeError>(
      [&] {
        zeros({2, 4, 10}, DType::I64).conv1d(zeros({6, 4, 3}, DType::I64));
      },
      {"[conv1d]", "i64"});
  expect_error<DTypeError>([&] { x.conv1d(zeros({6, 4, 3}, DType::F64)); }, {"[conv1d]", "f32", "f64"});
  // groups 1: the weight must have all 4 input channels
  expect_error<ShapeError>([&] { x.conv1d(w); }, {"[conv1d]", "[6, 2, 3] f32", "[2, 4, 10] f32"});
  expect_error<ShapeError>([&] { x.conv1d(zeros({6, 1, 3}), {1, 0, 1, 3, 0}); }, {"[conv1d]", "divisible", "groups 3"});
  expect_error<ShapeError>([&] { x.conv1d(zeros({5, 2, 3}), {1, 0, 1, 2, 0}); }, {"[conv1d]", "output channels 5"});
  expect_error<InvalidArgument>([&] { x.conv1d(w, {1, 0, 1, 0, 0}); }, {"[conv1d]", "groups"});
  expect_error<InvalidArgument>([&] { x.conv1d(w, {0, 0, 1, 2, 0}); }, {"[conv1d]", "stride"});
  expect_error<InvalidArgument>([&] { x.conv1d(w, {1, -1, 1, 2, 0}); }, {"[conv1d]", "padding"});
  expect_error<InvalidArgument>([&] { x.conv1d(w, {1, 0, 0, 2, 0}); }, {"[conv1d]", "dilation"});
  // Kernel 3 dilated by 5 spans 11 > 10: output size floor(-1 / 1) + 1 = 0, an empty output (Note
  // [Conv output sizes]); dilated by 6 it spans 13: floor(-3 / 1) + 1 = -2, an error.
  EXPECT_EQ(x.conv1d(w, {1, 0, 5, 2, 0}).shape(), Shape({2, 6, 0}));
  expect_error<ShapeError>(
      [&] {
        x.conv1d(w, {1, 0, 6, 2, 0});
      },
      {"[conv1d]", "larger than the padded input", "output size -2", "[2, 4, 10] f32", "[6, 2, 3] f32"});
  EXPECT_EQ(x.conv1d(w, {1, 0, 4, 2, 0}).shape(), Shape({2, 6, 2}));  // span 9 fits
  expect_error<ShapeError>([&] { x.conv1d(zeros({6, 2, 0}), {1, 0, 1, 2, 0}); }, {"[conv1d]", "empty kernel"});
  expect_error<InvalidArgument>([&] { x.conv1d(Tensor()); }, {"[conv1d]", "weight"});
}

TEST_P(Conv, Conv2dErrors) {
  const Tensor x = zeros({1, 3, 5, 4});
  expect_error<ShapeError>([&] { zeros({3, 5, 4}).conv2d(zeros({2, 3, 2, 2})); }, {"[conv2d]", "[3, 5, 4] f32"});
  EXPECT_EQ(x.conv2d(zeros({2, 3, 2, 5})).shape(), Shape({1, 2, 4, 0}));  // kernel 5 on width 4: 0 columns
  expect_error<ShapeError>(
      [&] {
        x.conv2d(zeros({2, 3, 2, 6}));
      },
      {"[conv2d]", "width", "[1, 3, 5, 4] f32", "[2, 3, 2, 6] f32"});
  Conv2dParams p;
  p.padding = {0, 1};
  EXPECT_EQ(x.conv2d(zeros({2, 3, 2, 5}), p).shape(), Shape({1, 2, 4, 2}));
  p.stride = {1, 0};
  expect_error<InvalidArgument>([&] { x.conv2d(zeros({2, 3, 2, 2}), p); }, {"[conv2d]", "stride", "width"});
  expect_error<ShapeError>([&] { x.conv2d(zeros({2, 2, 2, 2})); }, {"[conv2d]", "[2, 2, 2, 2] f32"});
}

TEST_P(Conv, ConvTransposeErrors) {
  const Tensor x = zeros({1, 4, 5});
  Conv1dParams p{2, 0, 1, 1, 2};  // output_padding 2 is not below stride 2 or dilation 1
  expect_error<InvalidArgument>(
      [&] {
        x.conv_transpose1d(zeros({4, 2, 3}), p);
      },
      {"[conv_transpose1d]", "output_padding 2"});
  p.output_padding = 1;
  EXPECT_EQ(x.conv_transpose1d(zeros({4, 2, 3}), p).shape(), Shape({1, 2, 12}));
  p = {1, 0, 3, 1, 2};  // below dilation 3: allowed
  EXPECT_EQ(x.conv_transpose1d(zeros({4, 2, 3}), p).shape(), Shape({1, 2, 13}));
  // weight dim 0 must be C_in
  expect_error<ShapeError>(
      [&] {
        x.conv_transpose1d(zeros({3, 2, 3}));
      },
      {"[conv_transpose1d]", "[3, 2, 3] f32", "[1, 4, 5] f32"});
  expect_error<ShapeError>([&] { x.conv_transpose1d(zeros({4, 2, 3}), {1, 0, 1, 3, 0}); }, {"divisible", "groups 3"});
  // (2 - 1) * 1 - 2 * 1 + 0 + 0 + 1 = 0: an empty output, as in PyTorch.
  EXPECT_EQ(zeros({1, 4, 2}).conv_transpose1d(zeros({4, 2, 1}), {1, 1, 1, 1, 0}).shape(), Shape({1, 2, 0}));
  Conv2dParams p2;
  p2.padding = {1, 0};
  EXPECT_EQ(zeros({1, 4, 2, 3}).conv_transpose2d(zeros({4, 2, 1, 1}), p2).shape(), Shape({1, 2, 0, 3}));
  // (1 - 1) * 1 - 2 * 1 + 0 + 0 + 1 = -1
  expect_error<ShapeError>(
      [&] {
        zeros({1, 4, 1}).conv_transpose1d(zeros({4, 2, 1}), {1, 1, 1, 1, 0});
      },
      {"[conv_transpose1d]", "output size -1", "[1, 4, 1] f32"});
  expect_error<ShapeError>(
      [&] {
        zeros({1, 4, 2, 2}).conv_transpose2d(zeros({4, 2, 2}));
      },
      {"[conv_transpose2d]", "weight"});
  expect_error<DTypeError>(
      [&] {
        zeros({1, 4, 5}, DType::U8).conv_transpose1d(zeros({4, 2, 3}, DType::U8));
      },
      {"[conv_transpose1d]", "u8"});
}

TEST_P(Conv, PoolErrors) {
  const Tensor x = zeros({1, 2, 4, 4});
  Pool2dParams p;
  expect_error<ShapeError>([&] { zeros({2, 4, 4}).max_pool2d(p); }, {"[max_pool2d]", "[2, 4, 4] f32"});
  expect_error<DTypeError>([&] { zeros({1, 2, 4, 4}, DType::U8).avg_pool2d(p); }, {"[avg_pool2d]", "u8"});
  p.padding = {2, 0};  // more than half of kernel 2
  expect_error<InvalidArgument>([&] { x.avg_pool2d(p); }, {"[avg_pool2d]", "padding (2, 0)", "kernel (2, 2)"});
  p = Pool2dParams{};
  p.stride = {0, 1};
  expect_error<InvalidArgument>([&] { x.max_pool2d(p); }, {"[max_pool2d]", "stride (0, 1)"});
  // Kernel 5 on 4 rows: floor(-1 / 1) + 1 = 0 rows, an empty output; kernel 6 with stride 1:
  // floor(-2 / 1) + 1 = -1, an error.
  p = Pool2dParams{};
  p.kernel = {5, 2};
  p.stride = {1, 2};
  EXPECT_EQ(x.max_pool2d(p).shape(), Shape({1, 2, 0, 2}));
  EXPECT_EQ(x.avg_pool2d(p).shape(), Shape({1, 2, 0, 2}));
  p.kernel = {6, 2};
  expect_error<ShapeError>([&] { x.max_pool2d(p); },
                           {"[max_pool2d]", "kernel (6, 2)", "output size -1", "[1, 2, 4, 4] f32"});
}

TEST_P(Conv, ResampleErrors) {
  expect_error<ShapeError>([&] { zeros({2, 3}).upsample_nearest1d(4); }, {"[upsample_nearest1d]", "[2, 3] f32"});
  expect_error<InvalidArgument>(
      [&] {
        zeros({1, 2, 3}).upsample_nearest1d(0);
      },
      {"[upsample_nearest1d]", "output sizes"});
  expect_error<ShapeError>(
      [&] {
        zeros({1, 2, 0, 3}).upsample_nearest2d(2, 2);
      },
      {"[upsample_nearest2d]", "[1, 2, 0, 3] f32"});
  expect_error<InvalidArgument>(
      [&] {
        zeros({1, 2, 3, 3}).upsample_bilinear2d(2, -1, false);
      },
      {"[upsample_bilinear2d]"});
  expect_error<DTypeError>(
      [&] {
        zeros({1, 2, 3, 3}, DType::I64).upsample_bilinear2d(2, 2, true);
      },
      {"[upsample_bilinear2d]", "i64"});
  EXPECT_EQ(zeros({0, 2, 3, 3}).upsample_bilinear2d(5, 4, true).shape(), Shape({0, 2, 5, 4}));
}

TEST_P(Conv, RopeErrors) {
  const Tensor cs = zeros({3, 2});
  expect_error<ShapeError>([&] { rope(zeros({4}), cs, cs); }, {"[rope]", "[4] f32"});
  expect_error<ShapeError>([&] { rope(zeros({2, 3, 5}), cs, cs); }, {"[rope]", "even", "[2, 3, 5] f32"});
  expect_error<ShapeError>(
      [&] {
        rope_i(zeros({2, 3, 4}), zeros({3, 4}), cs);
      },
      {"[rope_i]", "[3, 2]", "cos [3, 4] f32"});
  expect_error<ShapeError>([&] { rope(zeros({2, 4, 4}), cs, cs); }, {"[rope]", "[4, 2]", "[2, 4, 4] f32"});
  expect_error<DTypeError>([&] { rope(zeros({2, 3, 4}), zeros({3, 2}, DType::F64), cs); }, {"[rope]", "f64"});
  expect_error<DTypeError>(
      [&] {
        rope(zeros({2, 3, 4}, DType::U32), zeros({3, 2}, DType::U32), zeros({3, 2}, DType::U32));
      },
      {"[rope]", "u32"});
  expect_error<InvalidArgument>([&] { rope(zeros({2, 3, 4}), Tensor(), cs); }, {"[rope]", "cos"});
}

TEST_P(Conv, DeviceMismatch) {
  if (dev().is_cpu()) GTEST_SKIP() << "needs a second device";
  const Tensor x = zeros({1, 2, 5});
  const Tensor w = Tensor::zeros({2, 2, 3}, DType::F32, Device::cpu());
  expect_error<DeviceError>([&] { x.conv1d(w); }, {"[conv1d]", "cpu"});
  expect_error<DeviceError>(
      [&] {
        rope(zeros({2, 4}), Tensor::zeros({2, 2}, DType::F32, Device::cpu()), zeros({2, 2}));
      },
      {"[rope]"});
}

// ---- hand-checked values --------------------------------------------------------------------

TEST_P(Conv, Conv1dByHand) {
  const Tensor x = f32({1, 2, 3, 4, 5}, {1, 1, 5});
  const Tensor w = f32({1, 0, -1}, {1, 1, 3});
  // out[i] = x[i-1] - x[i+1], zero padding
  expect_values(x.conv1d(w, {1, 1, 1, 1, 0}), {-2, -2, -2, -2, 4});
  // stride 2, dilation 2, no padding: out[i] = x[2i] - x[2i+4]
  expect_values(x.conv1d(w, {2, 0, 2, 1, 0}), {-4});
}

TEST_P(Conv, Conv2dDepthwiseByHand) {
  const Tensor x = f64({1, 2, 3, 4, 5, 6, 7, 8}, {1, 2, 2, 2});
  const Tensor w = f64({2, -3}, {2, 1, 1, 1});
  Conv2dParams p;
  p.groups = 2;
  const std::vector<double> got = x.conv2d(w, p).to_vector<double>();
  EXPECT_EQ(got, (std::vector<double>{2, 4, 6, 8, -15, -18, -21, -24}));
}

TEST_P(Conv, ConvTransposeOfDeltaIsKernel) {
  const Tensor w = f32({1, 2, 3, 4}, {1, 1, 4});
  expect_values(f32({1}, {1, 1, 1}).conv_transpose1d(w), {1, 2, 3, 4});
  // stride 2: each input element places the kernel 2 further on
  expect_values(f32({1, 0, 10}, {1, 1, 3}).conv_transpose1d(w, {2, 0, 1, 1, 0}), {1, 2, 3, 4, 10, 20, 30, 40});
  const Tensor w2 = rand({1, 2, 2, 3});
  const Tensor out = f32({1}, {1, 1, 1, 1}).conv_transpose2d(w2);
  EXPECT_EQ(out.shape(), Shape({1, 2, 2, 3}));
  expect_values(out, w2.to_vector<float>());
  // padding 1 crops one element from each end, output_padding 1 gives the last one back
  expect_values(f32({1}, {1, 1, 1}).conv_transpose1d(w, {2, 1, 1, 1, 0}), {2, 3});
  expect_values(f32({1}, {1, 1, 1}).conv_transpose1d(w, {2, 1, 1, 1, 1}), {2, 3, 4});
}

TEST_P(Conv, EmptyChannelsGiveZeros) {
  // No input channels: every output is an empty sum.
  const Tensor out = zeros({2, 0, 5}).conv1d(zeros({3, 0, 2}));
  EXPECT_EQ(out.shape(), Shape({2, 3, 4}));
  expect_values(out, std::vector<float>(24, 0.0f));
  const Tensor t = zeros({1, 0, 2, 2}).conv_transpose2d(zeros({0, 2, 1, 2}));
  EXPECT_EQ(t.shape(), Shape({1, 2, 2, 3}));
  expect_values(t, std::vector<float>(12, 0.0f));
  EXPECT_EQ(zeros({0, 4, 6}).conv1d(zeros({2, 4, 3})).shape(), Shape({0, 2, 4}));
}

TEST_P(Conv, AvgPoolCountIncludePad) {
  const Tensor x = f32({1, 1, 1, 1}, {1, 1, 2, 2});
  Pool2dParams p;
  p.kernel = {2, 2};
  p.stride = {1, 1};
  p.padding = {1, 1};
  expect_values(x.avg_pool2d(p), {0.25f, 0.5f, 0.25f, 0.5f, 1, 0.5f, 0.25f, 0.5f, 0.25f});
  p.count_include_pad = false;
  expect_values(x.avg_pool2d(p), std::vector<float>(9, 1.0f));
}

TEST_P(Conv, MaxPoolNaNAndPadding) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = f32({1, nan, 3, 4, -5, -6, -7, -8}, {1, 2, 2, 2});
  Pool2dParams p;
  const std::vector<float> got = x.max_pool2d(p).to_vector<float>();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(std::isnan(got[0]));
  EXPECT_EQ(got[1], -5);  // padding (none here) and zeros never win over negatives
  // Padded cells are never selected: an all-negative input stays negative.
  p.kernel = {3, 3};
  p.stride = {1, 1};
  p.padding = {1, 1};
  expect_values(Tensor::full({1, 1, 2, 3}, -5.0, DType::F32, dev()).max_pool2d(p), std::vector<float>(6, -5.0f));
  // NaN first in the window, a number later: NaN stays.
  const std::vector<float> n2 = f32({nan, 9, 1, 2}, {1, 1, 2, 2}).max_pool2d(Pool2dParams{}).to_vector<float>();
  EXPECT_TRUE(std::isnan(n2[0]));
}

TEST_P(Conv, MaxPoolIntegers) {
  const Tensor x = Tensor::from_vector<int64_t>({-9, -3, 7, INT64_MAX, -1, -2, INT64_MIN, 5}, {1, 2, 2, 2}, dev());
  EXPECT_EQ(x.max_pool2d(Pool2dParams{}).to_vector<int64_t>(), (std::vector<int64_t>{INT64_MAX, 5}));
  const Tensor u = Tensor::from_vector<uint8_t>({0, 255, 3, 4}, {1, 1, 2, 2}, dev());
  EXPECT_EQ(u.max_pool2d(Pool2dParams{}).to_vector<uint8_t>(), (std::vector<uint8_t>{255}));
}

TEST_P(Conv, UpsampleNearestByHand) {
  const Tensor x = Tensor::from_vector<int64_t>({10, 20, 30}, {1, 1, 3}, dev());
  // src = floor(i * 3 / 7)
  EXPECT_EQ(x.upsample_nearest1d(7).to_vector<int64_t>(), (std::vector<int64_t>{10, 10, 10, 20, 20, 30, 30}));
  EXPECT_EQ(x.upsample_nearest1d(2).to_vector<int64_t>(), (std::vector<int64_t>{10, 20}));
  const Tensor y = Tensor::from_vector<uint32_t>({1, 2, 3, 4}, {1, 1, 2, 2}, dev());
  EXPECT_EQ(y.upsample_nearest2d(3, 4).to_vector<uint32_t>(),
            (std::vector<uint32_t>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4}));
}

TEST_P(Conv, BilinearAlignCorners) {
  const Tensor x = f32({0, 1, 2, 3}, {1, 1, 2, 2});
  // Corners coincide: a 3x3 grid halfway between the pixels.
  expect_values(x.upsample_bilinear2d(3, 3, true), {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3});
  // Half-pixel centres: src = (dst + 0.5) / 2 - 0.5 -> -0.25 (clamped to 0), 0.25, 0.75, 1.25 (the
  // last pixel).
  expect_values(x.upsample_bilinear2d(4, 4, false),
                {0, 0.25f, 0.75f, 1, 0.5f, 0.75f, 1.25f, 1.5f, 1.5f, 1.75f, 2.25f, 2.5f, 2, 2.25f, 2.75f, 3});
  // One output pixel: align_corners reads the corner, half-pixel the centre.
  const Tensor z = f32({0, 1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 3, 3});
  expect_values(z.upsample_bilinear2d(1, 1, true), {0});
  expect_values(z.upsample_bilinear2d(1, 1, false), {4});
}

TEST_P(Conv, RopeByHand) {
  const Tensor x = f32({1, 2, 3, 4}, {1, 4});
  const Tensor c = f32({0, 1}, {1, 2});
  const Tensor s = f32({1, 0}, {1, 2});
  // half-split: pairs (x0, x2) rotated by 90 degrees, (x1, x3) unchanged
  expect_values(rope(x, c, s), {-3, 2, 1, 4});
  // interleaved: pairs (x0, x1) rotated, (x2, x3) unchanged
  expect_values(rope_i(x, c, s), {-2, 1, 3, 4});
  // bf16 computes in f32 and rounds once
  const Tensor xb = x.to_dtype(DType::BF16);
  expect_values(rope(xb, c.to_dtype(DType::BF16), s.to_dtype(DType::BF16)).to_dtype(DType::F32), {-3, 2, 1, 4});
}

// ---- sizes that take the threaded paths -----------------------------------------------------

// A convolution's operand shapes, parameters and dtype, for the sweeps below.
struct ConvCase {
  Shape x, w;
  std::array<int64_t, 2> stride, padding, dilation, output_padding;
  int64_t groups;
  DType dtype;
  Conv2dParams params() const {
    Conv2dParams p;
    p.stride = stride;
    p.padding = padding;
    p.dilation = dilation;
    p.output_padding = output_padding;
    p.groups = groups;
    return p;
  }
  std::string name() const { return x.str() + " * " + w.str() + " " + std::string(dtype_name(dtype)); }
};

// Checks out = conv2d(x, w, p) against direct loops in f64, each element within 1e-5 of the sum
// of its terms' magnitudes (f32 and f64 inputs: the values are read as f64).
void expect_conv2d_direct(const Tensor& x, const Tensor& w, const Conv2dParams& p, const Tensor& out,
                          const std::string& what) {
  const int64_t n = x.shape()[0], ci = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t co = w.shape()[0], cg = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3];
  const int64_t oh = (h + 2 * p.padding[0] - p.dilation[0] * (kh - 1) - 1) / p.stride[0] + 1;
  const int64_t ow = (wd + 2 * p.padding[1] - p.dilation[1] * (kw - 1) - 1) / p.stride[1] + 1;
  ASSERT_EQ(out.shape(), Shape({n, co, oh, ow})) << what;
  const std::vector<double> xv = x.to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> wv = w.to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> ov = out.to_dtype(DType::F64).to_vector<double>();
  const int64_t cog = co / p.groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < co; ++o)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double acc = 0, mag = 0;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t ih = y * p.stride[0] - p.padding[0] + i * p.dilation[0];
                const int64_t iw = z * p.stride[1] - p.padding[1] + j * p.dilation[1];
                if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
                const double t = xv[static_cast<size_t>(((b * ci + (o / cog) * cg + c) * h + ih) * wd + iw)] *
                                 wv[static_cast<size_t>(((o * cg + c) * kh + i) * kw + j)];
                acc += t;
                mag += std::abs(t);
              }
          ASSERT_NEAR(ov[static_cast<size_t>(((b * co + o) * oh + y) * ow + z)], acc, 1e-5 * mag + 1e-6)
              << what << " at " << b << " " << o << " " << y << " " << z;
        }
}

TEST_P(Conv, LargeConv2dMatchesDirectLoops) {
  // Big enough planes that im2col splits its rows across threads.
  const int64_t n = 2, ci = 8, co = 6, h = 70, wd = 64, k = 3, g = 2;
  const Tensor x = rand({n, ci, h, wd});
  const Tensor w = rand({co, ci / g, k, k});
  Conv2dParams p;
  p.padding = {1, 1};
  p.stride = {2, 1};
  p.groups = g;
  const Tensor out = x.transpose(2, 3).contiguous().transpose(2, 3).conv2d(w, p);  // a strided input
  expect_conv2d_direct(x, w, p, out, "strided input");
}

// Shapes whose im2col rows are long (64 or more input channels x the kernel), so that the CPU cuts
// each sample's output pixels into several blocks that start and end inside output rows (Note [CPU
// conv blocks]): strides, dilations, uneven padding, groups, the 1x1 kernel read in place, f64.
TEST_P(Conv, BlockedConv2dMatchesDirectLoops) {
  const ConvCase cases[] = {
      {{3, 64, 13, 29}, {10, 64, 3, 3}, {1, 2}, {1, 2}, {2, 1}, {0, 0}, 1, DType::F32},
      {{2, 64, 21, 17}, {12, 16, 3, 2}, {2, 1}, {0, 1}, {1, 2}, {0, 0}, 4, DType::F32},
      {{1, 96, 30, 31}, {7, 96, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, DType::F32},
      {{2, 72, 11, 23}, {5, 72, 3, 3}, {1, 1}, {2, 0}, {1, 1}, {0, 0}, 1, DType::F64},
  };
  for (const ConvCase& c : cases) {
    const Tensor x = rand(c.x, c.dtype), w = rand(c.w, c.dtype);
    expect_conv2d_direct(x, w, c.params(), x.conv2d(w, c.params()), c.name());
  }
  // The 1x1 kernel on channels narrowed out of a wider tensor (not contiguous: copied first).
  const Tensor xw = rand({2, 100, 9, 40}), w1 = rand({6, 80, 1, 1});
  const Tensor xn = xw.narrow(1, 10, 80);
  expect_conv2d_direct(xn, w1, Conv2dParams{}, xn.conv2d(w1), "narrowed 1x1");
}

// Checks out = conv_transpose2d(x, w, p) against scattering every product in f64, each element
// within 1e-5 of the sum of its terms' magnitudes.
void expect_conv_transpose2d_scatter(const Tensor& x, const Tensor& w, const Conv2dParams& p, const Tensor& out,
                                     const std::string& what) {
  const int64_t n = x.shape()[0], ci = x.shape()[1], h = x.shape()[2], wd = x.shape()[3];
  const int64_t cog = w.shape()[1], kh = w.shape()[2], kw = w.shape()[3], co = cog * p.groups, cg = ci / p.groups;
  const int64_t oh = (h - 1) * p.stride[0] - 2 * p.padding[0] + p.dilation[0] * (kh - 1) + p.output_padding[0] + 1;
  const int64_t ow = (wd - 1) * p.stride[1] - 2 * p.padding[1] + p.dilation[1] * (kw - 1) + p.output_padding[1] + 1;
  ASSERT_EQ(out.shape(), Shape({n, co, oh, ow})) << what;
  const std::vector<double> xv = x.to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> wv = w.to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> ov = out.to_dtype(DType::F64).to_vector<double>();
  std::vector<double> ref(ov.size(), 0.0), mag(ov.size(), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t c = 0; c < ci; ++c)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t z = 0; z < wd; ++z)
          for (int64_t o = 0; o < cog; ++o)
            for (int64_t i = 0; i < kh; ++i)
              for (int64_t j = 0; j < kw; ++j) {
                const int64_t a = y * p.stride[0] - p.padding[0] + i * p.dilation[0];
                const int64_t e = z * p.stride[1] - p.padding[1] + j * p.dilation[1];
                if (a < 0 || a >= oh || e < 0 || e >= ow) continue;
                const size_t at = static_cast<size_t>(((b * co + c / cg * cog + o) * oh + a) * ow + e);
                const double t = xv[static_cast<size_t>(((b * ci + c) * h + y) * wd + z)] *
                                 wv[static_cast<size_t>(((c * cog + o) * kh + i) * kw + j)];
                ref[at] += t;
                mag[at] += std::abs(t);
              }
  for (size_t i = 0; i < ov.size(); ++i) ASSERT_NEAR(ov[i], ref[i], 1e-5 * mag[i] + 1e-6) << what << " at " << i;
}

// expect_conv_transpose2d_scatter over random inputs of each case on d.
template <size_t N>
void expect_transposed_cases(const ConvCase (&cases)[N], const Device& d) {
  for (const ConvCase& c : cases) {
    const Tensor x = Tensor::rand_uniform(c.x, c.dtype, -1, 1, d), w = Tensor::rand_uniform(c.w, c.dtype, -1, 1, d);
    expect_conv_transpose2d_scatter(x, w, c.params(), x.conv_transpose2d(w, c.params()), c.name());
  }
}

TEST_P(Conv, LargeConvTranspose2dMatchesScatter) {
  // Output planes of 12k elements per channel: col2im splits the channels across threads.
  const Tensor x = rand({2, 6, 40, 50});
  const Tensor w = rand({6, 8, 3, 2});
  Conv2dParams p;
  p.stride = {3, 2};
  p.padding = {1, 0};
  p.output_padding = {2, 1};
  expect_conv_transpose2d_scatter(x, w, p, x.conv_transpose2d(w, p), "stride 3x2");
}

// Shapes for the CPU's blocks of output channels (Note [CPU conv blocks]): many blocks, groups with
// strides, dilation and output padding, the 1x1 kernel written in place, an odd channel count in
// f64, and fewer blocks than threads (one GEMM per sample and group).
TEST_P(Conv, BlockedConvTranspose2dMatchesScatter) {
  const ConvCase cases[] = {
      {{2, 16, 23, 23}, {16, 64, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0}, 1, DType::F32},
      {{2, 32, 9, 13}, {32, 12, 3, 2}, {2, 1}, {1, 0}, {1, 2}, {1, 0}, 4, DType::F32},
      {{3, 24, 17, 19}, {24, 40, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, 1, DType::F32},
      {{2, 8, 10, 7}, {8, 33, 3, 3}, {2, 2}, {1, 2}, {1, 1}, {1, 0}, 1, DType::F64},
      {{1, 4, 30, 20}, {4, 2, 2, 3}, {1, 2}, {0, 1}, {2, 1}, {0, 1}, 1, DType::F32},
  };
  expect_transposed_cases(cases, dev());
}

// Transposed convolutions run as one forward convolution per output phase (Note [Transposed conv
// phases]): phases without taps (a kernel narrower than the stride; a dilation sharing a factor with
// it), 1x1 phases, 2x2 phases over 64 channels (the GPU's implicit GEMM), 3x3 ones over 32 -> 64
// channels (its Winograd kernel), groups, padding past the kernel and output padding.
TEST_P(Conv, TransposedPhasesMatchScatter) {
  const ConvCase cases[] = {
      {{2, 3, 5, 4}, {3, 2, 2, 2}, {3, 3}, {0, 0}, {1, 1}, {2, 1}, 1, DType::F32},
      {{2, 4, 6, 5}, {4, 3, 3, 3}, {2, 2}, {0, 1}, {2, 2}, {1, 0}, 2, DType::F32},
      {{2, 16, 7, 9}, {16, 8, 4, 4}, {4, 4}, {0, 0}, {1, 1}, {0, 0}, 1, DType::F32},
      {{2, 64, 6, 7}, {64, 64, 4, 4}, {2, 2}, {1, 1}, {1, 1}, {0, 0}, 1, DType::F32},
      {{2, 32, 5, 6}, {32, 64, 6, 6}, {2, 2}, {2, 2}, {1, 1}, {1, 1}, 1, DType::F32},
      {{1, 6, 5, 7}, {6, 4, 3, 5}, {2, 3}, {3, 4}, {1, 2}, {1, 2}, 1, DType::F64},
  };
  expect_transposed_cases(cases, dev());
}

TEST_P(Conv, LargePoolAndUpsampleMatchLoops) {
  const int64_t n = 3, c = 8, h = 64, w = 48;
  const Tensor x = rand({n, c, h, w});
  const std::vector<float> xv = x.to_vector<float>();
  Pool2dParams p;
  p.kernel = {3, 3};
  p.stride = {2, 2};
  p.padding = {1, 1};
  const std::vector<float> mx = x.max_pool2d(p).to_vector<float>();
  const int64_t oh = (h + 2 - 3) / 2 + 1, ow = (w + 2 - 3) / 2 + 1;
  ASSERT_EQ(mx.size(), static_cast<size_t>(n * c * oh * ow));
  for (int64_t pl = 0; pl < n * c; ++pl)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t z = 0; z < ow; ++z) {
        float m = -INFINITY;
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 3; ++j) {
            const int64_t ih = 2 * y - 1 + i, iw = 2 * z - 1 + j;
            if (ih >= 0 && ih < h && iw >= 0 && iw < w)
              m = std::max(m, xv[static_cast<size_t>((pl * h + ih) * w + iw)]);
          }
        ASSERT_EQ(mx[static_cast<size_t>((pl * oh + y) * ow + z)], m);
      }
  const std::vector<float> up = x.upsample_nearest2d(2 * h, 2 * w).to_vector<float>();
  for (int64_t pl = 0; pl < n * c; ++pl)
    for (int64_t y = 0; y < 2 * h; ++y)
      for (int64_t z = 0; z < 2 * w; ++z)
        ASSERT_EQ(up[static_cast<size_t>((pl * 2 * h + y) * 2 * w + z)],
                  xv[static_cast<size_t>((pl * h + y / 2) * w + z / 2)]);
}

// max_pool2d against a plain loop, byte for byte: each window's winner is its first element, taken
// over by a larger value or by a NaN, in row-major order. Random values with many ties (signed zeros
// included: -0 first stays -0) and NaNs of different signs and payloads, some first in their window,
// some later. On the GPU the unpadded windows that tile their rows take the row kernel (Note [GPU
// max_pool rows] in src/gpu/kernels/pool.cu), 16, 8 or 4 bytes of output per thread depending on
// out_w and the alignment (2-wide windows with 16-byte rows: one 16-byte load per window row); the
// others take the per-element kernel.
TEST_P(Conv, MaxPoolRowsMatchLoop) {
  struct Case {
    Shape shape;  // of the tensor made; `view` then takes x from it
    std::array<int64_t, 2> kernel, stride, padding;
    int view;  // 0: as made, 1: narrowed to W 57 from 0, 2: narrowed along W from 1, 3: H and W transposed,
               // 4: narrowed to W 32 from 2
  };
  const std::vector<Case> cases = {
      // the row kernel
      {{3, 10, 16, 32}, {2, 2}, {2, 2}, {0, 0}, 0},  // f32 4, bf16 / f16 8, u8 8 outputs per thread
      {{1, 2, 9, 24}, {3, 3}, {3, 3}, {0, 0}, 0},
      {{2, 2, 12, 16}, {3, 2}, {2, 2}, {0, 0}, 0},  // rows overlap, columns tile; row 11 unread
      {{2, 1, 5, 18}, {2, 3}, {1, 3}, {0, 0}, 0},
      {{1, 3, 6, 64}, {2, 2}, {2, 2}, {0, 0}, 1},  // in_w 57, out_w 28: f32 4, bf16 / f16 4, u8 4 per thread
      {{1, 2, 7, 62}, {3, 3}, {3, 3}, {0, 0}, 0},  // in_w 62, out_w 20, H stride 62: f32 2 per thread
      {{1, 2, 8, 34}, {2, 2}, {2, 2}, {0, 0}, 4},  // rows 2 elements off: narrower loads (f32, 16-bit)
      // the per-element kernel
      {{1, 2, 8, 16}, {2, 2}, {2, 2}, {1, 1}, 0},  // padding
      {{1, 2, 8, 16}, {2, 2}, {1, 1}, {0, 0}, 0},  // overlapping columns
      {{1, 2, 8, 17}, {2, 2}, {2, 2}, {0, 0}, 2},  // rows start one element off
      {{1, 2, 16, 8}, {2, 2}, {2, 2}, {0, 0}, 3},  // W stride 8
      {{1, 2, 6, 14}, {2, 2}, {2, 2}, {0, 0}, 0},  // out_w 7
  };
  const auto nan_bits = [](uint32_t u) { return std::bit_cast<float>(u); };
  const std::vector<float> nans = {nan_bits(0x7fc00000u), nan_bits(0xffc00000u), nan_bits(0x7fc00001u),
                                   nan_bits(0xffe00000u)};
  const std::vector<float> values = {-2, -1, -0.5f, -0.0f, 0.0f, 0.5f, 1, 2};
  std::mt19937 rng(2024);
  for (const DType dt : {DType::F32, DType::BF16, DType::F16, DType::U8}) {
    for (const Case& k : cases) {
      const bool is_float = dt != DType::U8;
      std::vector<float> v(static_cast<size_t>(k.shape.numel()));
      for (float& e : v) {
        const uint32_t r = rng();
        if (is_float && r % 8 == 0) {
          e = nans[(r >> 3) % nans.size()];
        } else {
          e = is_float ? values[(r >> 3) % values.size()] : static_cast<float>((r >> 3) % 6);
        }
      }
      Tensor x = f32(v, k.shape).to_dtype(dt);
      if (k.view == 1) x = x.narrow(3, 0, 57);
      if (k.view == 2) x = x.narrow(3, 1, k.shape[3] - 1);
      if (k.view == 3) x = x.transpose(2, 3);
      if (k.view == 4) x = x.narrow(3, 2, 32);
      Pool2dParams p;
      p.kernel = k.kernel;
      p.stride = k.stride;
      p.padding = k.padding;
      const Tensor out = x.max_pool2d(p);
      const std::string what = std::string(dtype_name(dt)) + " case " + std::to_string(&k - cases.data());
      // The loop reads x's elements as contiguous bytes and compares their f32 values (exact for these
      // dtypes; NaN stays NaN).
      const Tensor xc = x.contiguous();
      const std::vector<unsigned char> xb = testing::bytes_of(xc), ob = testing::bytes_of(out);
      const std::vector<float> xv = xc.to_dtype(DType::F32).to_vector<float>();
      const int64_t n = xc.shape()[0] * xc.shape()[1], h = xc.shape()[2], w = xc.shape()[3];
      const int64_t oh = out.shape()[2], ow = out.shape()[3], es = dtype_size(dt);
      ASSERT_EQ(oh, (h + 2 * k.padding[0] - k.kernel[0]) / k.stride[0] + 1) << what;
      ASSERT_EQ(ow, (w + 2 * k.padding[1] - k.kernel[1]) / k.stride[1] + 1) << what;
      for (int64_t pl = 0; pl < n; ++pl)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t z = 0; z < ow; ++z) {
            int64_t best = -1;
            for (int64_t i = 0; i < k.kernel[0]; ++i)
              for (int64_t j = 0; j < k.kernel[1]; ++j) {
                const int64_t ih = y * k.stride[0] - k.padding[0] + i, iw = z * k.stride[1] - k.padding[1] + j;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                const int64_t e = (pl * h + ih) * w + iw;
                const float c = xv[static_cast<size_t>(e)];
                if (best < 0 || c > xv[static_cast<size_t>(best)] || std::isnan(c)) best = e;
              }
            const int64_t o = (pl * oh + y) * ow + z;
            ASSERT_EQ(std::memcmp(&ob[static_cast<size_t>(o * es)], &xb[static_cast<size_t>(best * es)],
                                  static_cast<size_t>(es)),
                      0)
                << what << " at " << pl << " " << y << " " << z;
          }
    }
  }
}

WICK_INSTANTIATE_DEVICES(Conv);

}  // namespace
}  // namespace wick
