// Elementwise ops: errors and edge semantics the conformance cases do not express (wrap-around,
// division by zero, NaN, rounding of narrow floats, where_cond's condition dtypes).
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

class Elementwise : public ::testing::TestWithParam<Device> {};

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// A float tensor of dtype `dt` holding `v` (rounded to dt), and its values back as f32.
Tensor floats(const std::vector<float>& v, DType dt, const Device& d) {
  return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, d).to_dtype(dt);
}
std::vector<float> values(const Tensor& t) { return t.to_dtype(DType::F32).to_vector<float>(); }

template <class E, class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong error type: ") + e.what();
  }
  return "no error";
}

TEST_P(Elementwise, BinaryDTypeMismatchNamesBothOperands) {
  const Device d = GetParam();
  Tensor a = Tensor::zeros({2, 3}, DType::F32, d);
  Tensor b = Tensor::zeros({2, 3}, DType::F16, d);
  const std::string msg = error_of<DTypeError>([&] { a.add(b); });
  EXPECT_NE(msg.find("[add]"), std::string::npos) << msg;
  EXPECT_NE(msg.find(a.str()), std::string::npos) << msg;
  EXPECT_NE(msg.find(b.str()), std::string::npos) << msg;
  EXPECT_THROW(a.lt(b), DTypeError);
  EXPECT_THROW(b.maximum(a), DTypeError);
}

TEST_P(Elementwise, BinaryShapeMismatch) {
  const Device d = GetParam();
  Tensor a = Tensor::zeros({2, 3}, DType::F32, d);
  Tensor b = Tensor::zeros({4}, DType::F32, d);
  const std::string msg = error_of<ShapeError>([&] { a.mul(b); });
  EXPECT_NE(msg.find("[mul]"), std::string::npos) << msg;
  EXPECT_THROW(a.eq(b), ShapeError);
  EXPECT_THROW(Tensor::zeros({3, 2}, DType::F32, d).sub(a), ShapeError);
}

TEST_P(Elementwise, BinaryDeviceMismatch) {
  const Device d = GetParam();
  Device other = d;
  for (const Device& x : available_devices())
    if (!x.same_device(d)) other = x;
  if (other.same_device(d)) GTEST_SKIP() << "needs a second device";
  Tensor a = Tensor::zeros({2}, DType::F32, d);
  Tensor b = Tensor::zeros({2}, DType::F32, other);
  EXPECT_THROW(a.add(b), DeviceError);
  EXPECT_THROW(Tensor::zeros({2}, DType::U8, d).where_cond(b, b), DeviceError);
}

TEST_P(Elementwise, DTypesOutsideTheTableThrow) {
  const Device d = GetParam();
  Tensor u = Tensor::zeros({3}, DType::U8, d);
  Tensor i = Tensor::zeros({3}, DType::I64, d);
  EXPECT_THROW(u.neg(), DTypeError);
  EXPECT_THROW(i.exp(), DTypeError);
  EXPECT_THROW(i.sqrt(), DTypeError);
  EXPECT_THROW(u.pow(u), DTypeError);
  EXPECT_THROW(i.powf(2), DTypeError);
  EXPECT_THROW(i.elu(1), DTypeError);
  EXPECT_THROW(Tensor().exp(), InvalidArgument);
  EXPECT_THROW(Tensor::zeros({3}, DType::F32, d).add(Tensor()), InvalidArgument);
}

TEST_P(Elementwise, BroadcastShapesAndComparisonDType) {
  const Device d = GetParam();
  Tensor a = Tensor::ones({3, 1, 5}, DType::F32, d);
  Tensor b = Tensor::ones({4, 1}, DType::F32, d);
  Tensor s = a.add(b);
  EXPECT_EQ(s.shape(), Shape({3, 4, 5}));
  EXPECT_TRUE(s.is_contiguous());
  Tensor c = a.le(b);
  EXPECT_EQ(c.dtype(), DType::U8);
  EXPECT_EQ(c.shape(), Shape({3, 4, 5}));
  for (uint8_t v : c.to_vector<uint8_t>()) EXPECT_EQ(v, 1);
  // zero-size and rank 0
  EXPECT_EQ(Tensor::zeros({0, 5}, DType::F32, d).mul(Tensor::ones({5}, DType::F32, d)).shape(), Shape({0, 5}));
  Tensor r = Tensor::full(Shape{}, 2.0, DType::F64, d).add(Tensor::full(Shape{}, 3.0, DType::F64, d));
  EXPECT_EQ(r.rank(), 0u);
  EXPECT_EQ(r.to_vector<double>()[0], 5.0);
}

TEST_P(Elementwise, IntegerArithmeticWraps) {
  const Device d = GetParam();
  auto u8 = [&](std::vector<uint8_t> v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, d); };
  EXPECT_EQ(u8({200, 255}).add(u8({100, 1})).to_vector<uint8_t>(), (std::vector<uint8_t>{44, 0}));
  EXPECT_EQ(u8({3, 0}).sub(u8({5, 1})).to_vector<uint8_t>(), (std::vector<uint8_t>{254, 255}));
  EXPECT_EQ(u8({16, 200}).mul(u8({16, 3})).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 88}));
  EXPECT_EQ(u8({16, 255}).sqr().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1}));

  Tensor u32a = Tensor::from_vector(std::vector<uint32_t>{4000000000u, 1u}, {2}, d);
  Tensor u32b = Tensor::from_vector(std::vector<uint32_t>{1000000000u, 2u}, {2}, d);
  EXPECT_EQ(u32a.add(u32b).to_vector<uint32_t>(), (std::vector<uint32_t>{705032704u, 3u}));
  EXPECT_EQ(u32b.sub(u32a).to_vector<uint32_t>(), (std::vector<uint32_t>{1294967296u, 1u}));
  EXPECT_EQ(u32a.mul(u32a).to_vector<uint32_t>()[1], 1u);
  EXPECT_EQ(u32a.mul(u32a).to_vector<uint32_t>()[0], static_cast<uint32_t>(4000000000ull * 4000000000ull));

  Tensor ia = Tensor::from_vector(std::vector<int64_t>{kI64Max, kI64Min, 3037000500}, {3}, d);
  Tensor ib = Tensor::from_vector(std::vector<int64_t>{1, -1, 3037000500}, {3}, d);
  EXPECT_EQ(ia.add(ib).to_vector<int64_t>(), (std::vector<int64_t>{kI64Min, kI64Max, 6074001000}));
  EXPECT_EQ(ia.mul(ib).to_vector<int64_t>()[2], static_cast<int64_t>(3037000500ull * 3037000500ull));
  EXPECT_EQ(ia.neg().to_vector<int64_t>(), (std::vector<int64_t>{-kI64Max, kI64Min, -3037000500}));
  EXPECT_EQ(ia.abs().to_vector<int64_t>(), (std::vector<int64_t>{kI64Max, kI64Min, 3037000500}));
}

TEST_P(Elementwise, IntegerDivision) {
  const Device d = GetParam();
  Tensor a = Tensor::from_vector(std::vector<int64_t>{7, -7, 7, -7, 5, kI64Min, kI64Min, 0}, {8}, d);
  Tensor b = Tensor::from_vector(std::vector<int64_t>{2, 2, -2, -2, 0, -1, 1, 0}, {8}, d);
  EXPECT_EQ(a.div(b).to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3, 0, kI64Min, kI64Min, 0}));
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{7, 255, 9}, {3}, d);
  Tensor v = Tensor::from_vector(std::vector<uint8_t>{0, 2, 10}, {3}, d);
  EXPECT_EQ(u.div(v).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 127, 0}));
  Tensor w = Tensor::from_vector(std::vector<uint32_t>{4294967295u, 10u}, {2}, d);
  Tensor z = Tensor::from_vector(std::vector<uint32_t>{0u, 3u}, {2}, d);
  EXPECT_EQ(w.div(z).to_vector<uint32_t>(), (std::vector<uint32_t>{0u, 3u}));
  // a broadcast zero divisor
  EXPECT_EQ(a.div(Tensor::zeros(Shape{}, DType::I64, d)).to_vector<int64_t>(), std::vector<int64_t>(8, 0));
}

TEST_P(Elementwise, IntegerUnarySemantics) {
  const Device d = GetParam();
  Tensor u = Tensor::from_vector(std::vector<uint8_t>{0, 1, 200}, {3}, d);
  EXPECT_EQ(u.sign().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(u.abs().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200}));
  EXPECT_EQ(u.round().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200}));
  EXPECT_EQ(u.relu().to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200}));
  // affine: computed in f64, converted with saturation (and truncation toward zero)
  EXPECT_EQ(u.affine(2, 0).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 2, 255}));
  EXPECT_EQ(u.affine(-1, 0.5).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0}));
  Tensor i = Tensor::from_vector(std::vector<int64_t>{-5, 0, 9, kI64Min, kI64Max}, {5}, d);
  EXPECT_EQ(i.sign().to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 1, -1, 1}));
  EXPECT_EQ(i.relu().to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 9, 0, kI64Max}));
  EXPECT_EQ(i.affine(0.5, 0).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 4, kI64Min / 2, kI64Max / 2 + 1}));
  // clamp bounds stay exact for i64 and saturate for narrower types
  EXPECT_EQ(i.clamp(kI64Min + 1, kI64Max - 1).to_vector<int64_t>(),
            (std::vector<int64_t>{-5, 0, 9, kI64Min + 1, kI64Max - 1}));
  EXPECT_EQ(i.clamp(int64_t{-1}, int64_t{3}).to_vector<int64_t>(), (std::vector<int64_t>{-1, 0, 3, -1, 3}));
  EXPECT_EQ(u.clamp(int64_t{-5}, int64_t{300}).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200}));
  EXPECT_EQ(u.clamp(1.5, 150.9).to_vector<uint8_t>(), (std::vector<uint8_t>{2, 2, 150}));
  Tensor w = Tensor::from_vector(std::vector<uint32_t>{0u, 4000000000u}, {2}, d);
  EXPECT_EQ(w.clamp(int64_t{-1}, int64_t{1} << 40).to_vector<uint32_t>(), (std::vector<uint32_t>{0u, 4000000000u}));
  EXPECT_EQ(w.clamp(int64_t{7}, int64_t{9}).to_vector<uint32_t>(), (std::vector<uint32_t>{7u, 9u}));
}

TEST_P(Elementwise, MaximumMinimumPropagateNaN) {
  const Device d = GetParam();
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::F8E4M3}) {
    Tensor a = floats({kNaNf, 1, kNaNf, -2}, dt, d);
    Tensor b = floats({1, kNaNf, kNaNf, 3}, dt, d);
    for (const Tensor& r : {a.maximum(b), b.maximum(a), a.minimum(b), b.minimum(a)}) {
      const std::vector<float> v = values(r);
      EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2])) << dtype_name(dt);
    }
    EXPECT_EQ(values(a.maximum(b))[3], 3.0f) << dtype_name(dt);
    EXPECT_EQ(values(a.minimum(b))[3], -2.0f) << dtype_name(dt);
  }
}

TEST_P(Elementwise, ComparisonsWithNaN) {
  const Device d = GetParam();
  for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::F8E4M3}) {
    Tensor a = floats({kNaNf, kNaNf, 1, 1}, dt, d);
    Tensor b = floats({kNaNf, 1, kNaNf, 1}, dt, d);
    const std::string n(dtype_name(dt));
    EXPECT_EQ(a.eq(b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 1})) << n;
    EXPECT_EQ(a.ne(b).to_vector<uint8_t>(), (std::vector<uint8_t>{1, 1, 1, 0})) << n;
    EXPECT_EQ(a.lt(b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0})) << n;
    EXPECT_EQ(a.le(b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 1})) << n;
    EXPECT_EQ(a.gt(b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 0})) << n;
    EXPECT_EQ(a.ge(b).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 0, 1})) << n;
  }
}

TEST_P(Elementwise, FloatUnaryEdgeValues) {
  const Device d = GetParam();
  const float inf = std::numeric_limits<float>::infinity();
  Tensor x = floats({kNaNf, -0.0f, 0.0f, -3.0f, 2.0f}, DType::F32, d);
  const std::vector<float> s = values(x.sign());
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_EQ(s[1], 0.0f);
  EXPECT_EQ(s[2], 0.0f);
  EXPECT_EQ(s[3], -1.0f);
  EXPECT_EQ(s[4], 1.0f);
  EXPECT_TRUE(std::isnan(values(x.relu())[0]));
  EXPECT_EQ(values(x.relu())[3], 0.0f);
  EXPECT_TRUE(std::isnan(values(x.clamp(-1.0, 1.0))[0]));
  // round: half away from zero
  EXPECT_EQ(values(floats({0.5f, 1.5f, 2.5f, -0.5f, -2.5f}, DType::F32, d).round()),
            (std::vector<float>{1, 2, 3, -1, -3}));
  // sigmoid / silu / exp at the ends of the range
  EXPECT_EQ(values(floats({-inf, inf, -200}, DType::F32, d).sigmoid()), (std::vector<float>{0, 1, 0}));
  EXPECT_EQ(values(floats({-inf, 0}, DType::F32, d).exp()), (std::vector<float>{0, 1}));
  EXPECT_EQ(values(floats({0}, DType::F32, d).log())[0], -inf);
  EXPECT_EQ(values(floats({0, -0.0f}, DType::F32, d).recip()), (std::vector<float>{inf, -inf}));
}

TEST_P(Elementwise, NarrowFloatsRoundTheComputedResultOnce) {
  const Device d = GetParam();
  // bf16: 1 + 3 * 2^-8 = 1.01171875 is halfway between 1.0078125 and 1.015625: even wins.
  EXPECT_EQ(values(floats({1}, DType::BF16, d).add(floats({0.01171875f}, DType::BF16, d)))[0], 1.015625f);
  // bf16: 1 + 2^-8 is halfway between 1 and 1.0078125: even (1) wins
  EXPECT_EQ(values(floats({1}, DType::BF16, d).add(floats({0.00390625f}, DType::BF16, d)))[0], 1.0f);
  // exp(1) in f32 then one rounding: bf16 2.71875, f16 2.71875, f8 2.75
  EXPECT_EQ(values(floats({1}, DType::BF16, d).exp())[0], 2.71875f);
  EXPECT_EQ(values(floats({1}, DType::F16, d).exp())[0], 2.71875f);
  EXPECT_EQ(values(floats({1}, DType::F8E4M3, d).exp())[0], 2.75f);
  // f16: 2048 + 1 is a tie (ulp 2): 2048; 2048 + 3 = 2051 is a tie too: 2052
  EXPECT_EQ(values(floats({2048, 2048}, DType::F16, d).add(floats({1, 3}, DType::F16, d))),
            (std::vector<float>{2048, 2052}));
  // f8e4m3: 1 + 0.0625 ties to 1; 1 + 0.1875 ties to 1.25; 240 * 2 = 480 and 300 + 300 overflow to NaN
  // (non-saturating, as the format's conversion)
  const std::vector<float> f8 =
      values(floats({1, 1, 240, 300}, DType::F8E4M3, d).add(floats({0.0625f, 0.1875f, 240, 300}, DType::F8E4M3, d)));
  EXPECT_EQ(f8[0], 1.0f);
  EXPECT_EQ(f8[1], 1.25f);
  EXPECT_TRUE(std::isnan(f8[2]));
  EXPECT_TRUE(std::isnan(f8[3]));
  // 1.125 * 1.125 = 1.265625 rounds to 1.25 in f8 (3 mantissa bits); computed in f32, rounded once
  EXPECT_EQ(values(floats({1.125f}, DType::F8E4M3, d).sqr())[0], 1.25f);
}

TEST_P(Elementwise, WhereCondEveryConditionDType) {
  const Device d = GetParam();
  Tensor t = Tensor::from_vector(std::vector<float>{1, 2, 3, 4}, {4}, d);
  Tensor f = Tensor::from_vector(std::vector<float>{-1, -2, -3, -4}, {4}, d);
  const std::vector<float> want = {-1, 2, 3, -4};
  // non-zero values with the low byte / low 32 bits clear must still count as true
  EXPECT_EQ(Tensor::from_vector(std::vector<uint8_t>{0, 1, 255, 0}, {4}, d).where_cond(t, f).to_vector<float>(), want);
  EXPECT_EQ(
      Tensor::from_vector(std::vector<uint32_t>{0, 256, 4294967295u, 0}, {4}, d).where_cond(t, f).to_vector<float>(),
      want);
  EXPECT_EQ(
      Tensor::from_vector(std::vector<int64_t>{0, -1, int64_t{1} << 40, 0}, {4}, d).where_cond(t, f).to_vector<float>(),
      want);
  // broadcast condition and scalar branch, values of every width copied bit for bit
  Tensor c = Tensor::from_vector(std::vector<uint8_t>{1, 0}, {2, 1}, d);
  Tensor r = c.where_cond(t, Tensor::full(Shape{}, 9.0, DType::F32, d));
  EXPECT_EQ(r.shape(), Shape({2, 4}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 9, 9, 9, 9}));
  Tensor ti = Tensor::from_vector(std::vector<int64_t>{kI64Min, kI64Max}, {2}, d);
  Tensor fi = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2}, d);
  EXPECT_EQ(Tensor::from_vector(std::vector<uint8_t>{1, 1}, {2}, d).where_cond(ti, fi).to_vector<int64_t>(),
            (std::vector<int64_t>{kI64Min, kI64Max}));
  Tensor nb = floats({kNaNf, 1}, DType::BF16, d);
  EXPECT_TRUE(std::isnan(values(Tensor::ones({2}, DType::U32, d).where_cond(nb, nb))[0]));
}

TEST_P(Elementwise, WhereCondErrors) {
  const Device d = GetParam();
  Tensor t = Tensor::zeros({4}, DType::F32, d);
  EXPECT_THROW(Tensor::zeros({4}, DType::F32, d).where_cond(t, t), DTypeError);
  EXPECT_THROW(Tensor::zeros({4}, DType::U8, d).where_cond(t, Tensor::zeros({4}, DType::F64, d)), DTypeError);
  EXPECT_THROW(Tensor::zeros({3}, DType::U8, d).where_cond(t, t), ShapeError);
  EXPECT_THROW(Tensor::zeros({4}, DType::U8, d).where_cond(t, Tensor::zeros({2, 3}, DType::F32, d)), ShapeError);
  EXPECT_EQ(Tensor::zeros({0, 4}, DType::I64, d).where_cond(t, t).shape(), Shape({0, 4}));
}

TEST_P(Elementwise, StridedAndLargeInputs) {
  const Device d = GetParam();
  // A transposed view, and a size big enough to be split over threads and within rows.
  const int64_t n = 300, m = 700;
  std::vector<float> v(static_cast<size_t>(n * m));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) - 500.0f;
  Tensor a = Tensor::from_vector(v, {n, m}, d);
  Tensor at = a.t();
  Tensor s = at.add(at);
  const std::vector<float> got = s.to_vector<float>();
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(got[static_cast<size_t>(i * n + j)], 2 * v[static_cast<size_t>(j * m + i)]) << i << "," << j;
  const std::vector<float> neg = a.neg().to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) ASSERT_EQ(neg[i], -v[i]) << i;
}

WICK_INSTANTIATE_DEVICES(Elementwise);

// bf16 add / sub / mul / div and exp / sigmoid / silu / gelu on the CPU take one pass that widens,
// computes in f32 and rounds once (simd's arith_bf16 and unary_bf16): on odd sizes (vector tails),
// a row-major view of every other column block (silu of a fused projection's first half), a
// transposed view and broadcast operands, against bf16::from_f32 of the f32 arithmetic bit for
// bit, the f32 kernels rounded once bit for bit, and an f64 reference.
TEST(CpuElementwise, Bf16OnePassOpsAgainstF32AndF64) {
  const Device cpu = Device::cpu();
  const Tensor wide = Tensor::rand_uniform({37, 2 * 45 + 3}, DType::F32, -9, 9, cpu).to_dtype(DType::BF16);
  const Tensor other = Tensor::rand_uniform({37, 45}, DType::F32, -9, 9, cpu).to_dtype(DType::BF16);
  const std::vector<std::pair<std::string, Tensor>> xs = {
      {"contiguous", wide.narrow(1, 0, 45).contiguous()},
      {"first half of each row", wide.narrow(1, 0, 45)},
      {"transposed", wide.narrow(1, 3, 37).t().contiguous().t()},
      {"long", Tensor::rand_uniform({70001}, DType::F32, -9, 9, cpu).to_dtype(DType::BF16)}};
  for (const auto& [name, x] : xs) {
    SCOPED_TRACE(name);
    const std::vector<float> xv = values(x.contiguous());
    const Tensor x32 = x.to_dtype(DType::F32);
    for (int op = 0; op < 4; ++op) {
      auto f = [op](const Tensor& v) {
        return op == 0 ? v.exp() : op == 1 ? v.sigmoid() : op == 2 ? v.silu() : v.gelu();
      };
      const Tensor y = f(x);
      EXPECT_EQ(testing::bytes_of(y), testing::bytes_of(f(x32).to_dtype(DType::BF16))) << "op " << op;
      const std::vector<float> yv = values(y);
      for (size_t i = 0; i < xv.size(); ++i) {
        const double v = xv[i], k = 1.59576912160573071176;
        const double want = op == 0   ? std::exp(v)
                            : op == 1 ? 1 / (1 + std::exp(-v))
                            : op == 2 ? v / (1 + std::exp(-v))
                                      : v / (1 + std::exp(-k * (v + 0.044715 * v * v * v)));
        ASSERT_NEAR(yv[i], want, std::abs(want) * 0x1p-8 + 1e-30) << "op " << op << " x " << v;
      }
    }
    if (name == "long") continue;
    const std::vector<std::pair<std::string, Tensor>> ys = {
        {"tensor", other.narrow(0, 0, x.dim(0)).narrow(1, 0, x.dim(1))},
        {"scalar", other.narrow(0, 5, 1).narrow(1, 7, 1)},
        {"row", other.narrow(0, 2, 1).narrow(1, 0, x.dim(1))}};
    for (const auto& [yname, y] : ys) {
      SCOPED_TRACE(yname);
      const std::vector<float> yb = values(y.broadcast_as(x.shape()).contiguous());
      for (int op = 0; op < 4; ++op) {
        for (bool swap : {false, true}) {
          const Tensor& a = swap ? y : x;
          const Tensor& b = swap ? x : y;
          const Tensor r = op == 0 ? a.add(b) : op == 1 ? a.sub(b) : op == 2 ? a.mul(b) : a.div(b);
          const std::vector<float> rv = values(r);
          for (size_t i = 0; i < xv.size(); ++i) {
            const float p = swap ? yb[i] : xv[i], q = swap ? xv[i] : yb[i];
            const float want = bf16::to_f32(bf16::from_f32(op == 0   ? p + q
                                                           : op == 1 ? p - q
                                                           : op == 2 ? p * q
                                                                     : p / q));
            ASSERT_EQ(rv[i], want) << "op " << op << " swap " << swap << " at " << i;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace wick
