// Random numbers: the Philox4x32-10 generator against the Random123 known answers, the stream
// bookkeeping (seeds, counters), ranges, statistics and independence from the thread count.
#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "backend/philox.h"
#include "test_util.h"

namespace wick {
namespace {

// ---- the generator --------------------------------------------------------------------------

// Known-answer vectors of Random123's kat_vectors file ("philox4x32 10": counter[4], key[2] ->
// output[4]).
TEST(Philox, KnownAnswers) {
  struct Kat {
    uint32_t ctr[4];
    uint32_t key[2];
    uint32_t out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    const philox::Block b = philox::block_raw(k.ctr, k.key);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(b.w[i], k.out[i]) << "word " << i << " of counter 0x" << std::hex << k.ctr[0];
  }
}

// block(seed, ctr) is the raw function with counter (ctr lo, ctr hi, 0, 0) and key (seed lo, hi).
TEST(Philox, BlockIsRawWithSeedAsKey) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{0xdeadbeefcafef00d}})
    for (uint64_t ctr : {uint64_t{0}, uint64_t{1}, uint64_t{0x123456789abcdef}}) {
      const uint32_t c[4] = {static_cast<uint32_t>(ctr), static_cast<uint32_t>(ctr >> 32), 0, 0};
      const uint32_t k[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
      const philox::Block a = philox::block(seed, ctr), b = philox::block_raw(c, k);
      for (int i = 0; i < 4; ++i) EXPECT_EQ(a.w[i], b.w[i]);
    }
}

TEST(Philox, UnitIntervalEnds) {
  EXPECT_EQ(philox::unit_f32(0), 0.0f);
  EXPECT_LT(philox::unit_f32(0xffffffffu), 1.0f);
  EXPECT_EQ(philox::unit_f32(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(philox::unit_f64(0, 0), 0.0);
  EXPECT_EQ(philox::unit_f64(0xffffffffu, 0xffffffffu), 1.0 - 0x1p-53);
}

// ---- streams --------------------------------------------------------------------------------

class Random : public ::testing::TestWithParam<Device> {};

template <class T>
std::vector<T> host(const Tensor& t) {
  return t.to(Device::cpu()).to_vector<T>();
}
std::vector<uint8_t> bytes(const Tensor& t) {
  const Tensor c = t.to(Device::cpu());
  std::vector<uint8_t> b(static_cast<size_t>(c.numel() * dtype_size(c.dtype())));
  c.to_host(b.data(), static_cast<int64_t>(b.size()));
  return b;
}
std::vector<double> values(const Tensor& t) {
  const Tensor f = t.to(Device::cpu()).to_dtype(DType::F64);
  return f.to_vector<double>();
}

TEST_P(Random, SameSeedSameNumbers) {
  const Device d = GetParam();
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3}) {
    d.set_seed(1234);
    const auto a = bytes(Tensor::rand_uniform({1001}, dt, -1, 1, d));
    const auto an = bytes(Tensor::rand_normal({333}, dt, 0, 1, d));
    const auto b = bytes(Tensor::rand_uniform({1001}, dt, -1, 1, d));  // the stream goes on
    d.set_seed(1234);
    EXPECT_EQ(bytes(Tensor::rand_uniform({1001}, dt, -1, 1, d)), a) << dtype_name(dt);
    EXPECT_EQ(bytes(Tensor::rand_normal({333}, dt, 0, 1, d)), an) << dtype_name(dt);
    EXPECT_EQ(bytes(Tensor::rand_uniform({1001}, dt, -1, 1, d)), b) << dtype_name(dt);
    EXPECT_NE(a, b) << dtype_name(dt);
    d.set_seed(1235);
    EXPECT_NE(bytes(Tensor::rand_uniform({1001}, dt, -1, 1, d)), a) << dtype_name(dt);
  }
}

// After set_seed(k) the counter is 0, and each call takes ceil(n / per_block) blocks: 4 uniforms
// per block (2 for f64), 4 normals per block (2 for f64).
TEST_P(Random, StreamPositions) {
  const Device d = GetParam();
  d.set_seed(77);
  const auto u1 = host<float>(Tensor::rand_uniform({7}, DType::F32, 0, 1, d));      // blocks 0, 1
  const auto u2 = host<double>(Tensor::rand_uniform({3}, DType::F64, 0, 1, d));     // blocks 2, 3
  const auto n1 = host<float>(Tensor::rand_normal({5}, DType::F32, 0, 1, d));       // blocks 4, 5
  const auto u3 = host<float>(Tensor::rand_uniform({2, 3}, DType::F32, -3, 5, d));  // blocks 6, 7
  const philox::Keys k77 = philox::seed_keys(77);
  for (uint64_t i = 0; i < 7; ++i) EXPECT_EQ(u1[i], philox::uniform_f32(k77, 0, i, 0.0f, 1.0f, 1.0f)) << i;
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(u2[i], philox::uniform_f64(k77, 2, i, 0.0, 1.0)) << i;
  for (uint64_t i = 0; i < 5; ++i) EXPECT_NEAR(n1[i], philox::normal_f32(k77, 4, i, 0.0f, 1.0f), 1e-5) << i;
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(u3[i], philox::uniform_f32(k77, 6, i, -3.0f, 8.0f, 5.0f)) << i;
  // Word w of block b is element 4b + w: the first uniform is the top 24 bits of word 0.
  EXPECT_EQ(u1[0], static_cast<float>(philox::block(77, 0).w[0] >> 8) * 0x1p-24f);
  EXPECT_EQ(u1[5], static_cast<float>(philox::block(77, 1).w[1] >> 8) * 0x1p-24f);
  // Zero elements take no blocks.
  d.set_seed(5);
  (void)Tensor::rand_uniform({0, 4}, DType::F32, 0, 1, d);
  EXPECT_EQ(host<float>(Tensor::rand_uniform({1}, DType::F32, 0, 1, d))[0],
            philox::uniform_f32(philox::seed_keys(5), 0, 0, 0.0f, 1.0f, 1.0f));
}

template <class T>
void check_range(const Device& d, double lo, double up, int64_t n) {
  const Tensor t = Tensor::rand_uniform({n}, dtype_of<T>, lo, up, d);
  ASSERT_EQ(t.numel(), n);
  ASSERT_EQ(t.dtype(), dtype_of<T>);
  // Rounding is monotone, so every value is at least lo rounded to T, and below up (Note [Uniform
  // upper bound]) unless no value of T lies in [lo, up): then it is lo rounded to T.
  const double rlo = convert<double>(convert<T>(lo));
  int bad = 0;
  for (double v : values(t))
    if (!(v >= rlo && (v < up || v == rlo)) && bad++ < 3)
      ADD_FAILURE() << dtype_name(dtype_of<T>) << " [" << lo << ", " << up << "): value " << v;
}

// Rounding the f32 uniform to a narrow type used to carry it onto up itself (hundreds of ones in a
// million f16 draws in [0, 1), 3% of f8e4m3's); f32 itself reaches 101 from [100, 101).
TEST_P(Random, UniformNeverReturnsUp) {
  const Device d = GetParam();
  d.set_seed(11);
  const int64_t n = 1 << 20;
  const std::pair<DType, std::array<double, 2>> cases[] = {
      {DType::F16, {0, 1}},     {DType::BF16, {0, 1}},   {DType::F8E4M3, {0, 1}},  {DType::F16, {100, 101}},
      {DType::F32, {100, 101}}, {DType::BF16, {-3, -2}}, {DType::F8E4M3, {-1, 0}}, {DType::F16, {-1, 0}}};
  for (const auto& [dt, r] : cases) {
    const std::vector<double> v = values(Tensor::rand_uniform({n}, dt, r[0], r[1], d));
    const int64_t at_up = std::count(v.begin(), v.end(), r[1]);
    const int64_t outside = std::count_if(v.begin(), v.end(), [&](double x) { return !(x >= r[0] && x < r[1]); });
    EXPECT_EQ(at_up, 0) << dtype_name(dt) << " [" << r[0] << ", " << r[1] << ")";
    EXPECT_EQ(outside, 0) << dtype_name(dt) << " [" << r[0] << ", " << r[1] << ")";
    // The values that used to round onto up now sit just below it: the top of the range is hit.
    EXPECT_GT(*std::max_element(v.begin(), v.end()), r[0] + 0.9 * (r[1] - r[0])) << dtype_name(dt);
  }
}

TEST_P(Random, UniformRange) {
  const Device d = GetParam();
  d.set_seed(3);
  const double ranges[][2] = {{0, 1},      {-2, 3},          {0.1, 0.1000001}, {-1e-3, 1e-3}, {5, 5},
                              {-448, 448}, {1e10, 1e10 + 1}, {-0.3, -0.2},     {100, 1000}};
  for (const auto& r : ranges)
    for (int64_t n : {1, 3, 5, 4099}) {
      check_range<float>(d, r[0], r[1], n);
      check_range<double>(d, r[0], r[1], n);
      check_range<f16>(d, r[0], r[1], n);
      check_range<bf16>(d, r[0], r[1], n);
      // f8e4m3 is non-saturating: past 448 every value is NaN, so only ranges inside it.
      if (std::fabs(r[0]) <= 448 && std::fabs(r[1]) <= 448) check_range<f8e4m3>(d, r[0], r[1], n);
    }
  // Narrow ranges at random places, where rounding lo and up - lo to f32 could push a value out.
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<double> where(-1e3, 1e3), width(0, 1e-4);
  for (int i = 0; i < 200; ++i) {
    const double lo = where(rng), up = lo + width(rng) * std::fabs(lo);
    check_range<float>(d, lo, up, 64);
    check_range<double>(d, lo, up, 64);
  }
  // The whole f64 range that keeps up - lo finite.
  check_range<double>(d, -1e307, 1e307, 1001);
  check_range<float>(d, -1e38, 1e38, 1001);
}

// Mean and variance of U(lo, up) for n = 1e6: the sample mean has standard error
// (up - lo) / sqrt(12 n); 6 standard errors is a bound a correct generator practically never hits.
TEST_P(Random, UniformStatistics) {
  const Device d = GetParam();
  d.set_seed(2024);
  const int64_t n = 1000000;
  const double lo = -1.5, up = 2.5, w = up - lo;
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const std::vector<double> v = values(Tensor::rand_uniform({n}, dt, lo, up, d));
    double s = 0, s2 = 0, below_mid = 0;
    for (double x : v) {
      s += x;
      if (x < (lo + up) / 2) ++below_mid;
    }
    const double mean = s / static_cast<double>(n);
    for (double x : v) s2 += (x - mean) * (x - mean);
    const double var = s2 / static_cast<double>(n - 1);
    // bf16 rounding moves values by up to 2^-7 relative; allow for that bias in the mean.
    const double bias = dt == DType::BF16 ? 0.01 : dt == DType::F16 ? 1e-3 : 0;
    EXPECT_NEAR(mean, (lo + up) / 2, 6 * w / std::sqrt(12.0 * n) + bias) << dtype_name(dt);
    EXPECT_NEAR(var, w * w / 12, 0.01 * w * w / 12 + 2 * bias) << dtype_name(dt);
    EXPECT_NEAR(below_mid / static_cast<double>(n), 0.5, 0.003 + bias) << dtype_name(dt);
  }
}

TEST_P(Random, NormalStatistics) {
  const Device d = GetParam();
  d.set_seed(99);
  const int64_t n = 1000001;  // odd: the last Box-Muller pair is half used
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    const double mu = -0.75, sigma = 2.5;
    const std::vector<double> v = values(Tensor::rand_normal({n}, dt, mu, sigma, d));
    double s = 0, s2 = 0, s4 = 0, within1 = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x));
      s += x;
      if (std::fabs(x - mu) < sigma) ++within1;
    }
    const double mean = s / static_cast<double>(n);
    for (double x : v) {
      s2 += (x - mean) * (x - mean);
      s4 += std::pow((x - mean) / sigma, 4);
    }
    const double sd = std::sqrt(s2 / static_cast<double>(n - 1));
    EXPECT_NEAR(mean, mu, 6 * sigma / std::sqrt(static_cast<double>(n))) << dtype_name(dt);
    EXPECT_NEAR(sd, sigma, 0.01 * sigma) << dtype_name(dt);
    EXPECT_NEAR(within1 / static_cast<double>(n), 0.682689, 0.003) << dtype_name(dt);
    EXPECT_NEAR(s4 / static_cast<double>(n), 3.0, 0.05) << dtype_name(dt);  // kurtosis of a normal
  }
  // std 0 gives the mean exactly.
  for (double x : values(Tensor::rand_normal({17}, DType::F32, 1.25, 0, d))) EXPECT_EQ(x, 1.25);
  // The narrow types stay finite and near the mean.
  for (DType dt : {DType::BF16, DType::F8E4M3}) {
    const std::vector<double> v = values(Tensor::rand_normal({10001}, dt, 1, 0.5, d));
    double s = 0;
    for (double x : v) {
      ASSERT_TRUE(std::isfinite(x)) << dtype_name(dt);
      s += x;
    }
    EXPECT_NEAR(s / 10001.0, 1.0, 0.05) << dtype_name(dt);
  }
}

// The values depend on (seed, counter, element), never on how the loop is split over threads.
TEST(RandomCpu, IndependentOfThreadCount) {
  const int saved = omp_get_max_threads();
  std::vector<std::vector<uint8_t>> runs;
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::vector<uint8_t> all;
    Device::cpu().set_seed(31337);
    for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3}) {
      for (const Tensor& t : {Tensor::rand_uniform({100003}, dt, -4, 4), Tensor::rand_normal({50001}, dt, 0, 3)}) {
        const auto b = bytes(t);
        all.insert(all.end(), b.begin(), b.end());
      }
    }
    runs.push_back(all);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST_P(Random, Errors) {
  const Device d = GetParam();
  for (DType dt : {DType::U8, DType::U32, DType::I64}) {
    try {
      (void)Tensor::rand_uniform({3}, dt, 0, 1, d);
      ADD_FAILURE() << "rand_uniform on " << dtype_name(dt) << " did not throw";
    } catch (const DTypeError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("[rand_uniform]", 0), 0u) << m;
      EXPECT_NE(m.find(std::string(dtype_name(dt))), std::string::npos) << m;
    }
    EXPECT_THROW((void)Tensor::rand_normal({3}, dt, 0, 1, d), DTypeError);
  }
  try {
    (void)Tensor::rand_uniform({3}, DType::F32, 2, 1, d);
    ADD_FAILURE() << "lo > up did not throw";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("[rand_uniform]", 0), 0u) << m;
    EXPECT_NE(m.find("lo 2"), std::string::npos) << m;
  }
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F32, NAN, 1, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F32, 0, INFINITY, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F64, -1.7e308, 1.7e308, d), InvalidArgument);  // span inf
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F32, -3e38, 3e38, d), InvalidArgument);        // in f32
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F16, 0, 1e39, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_normal({3}, DType::F32, 0, -1, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_normal({3}, DType::F32, NAN, 1, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_uniform({3, -1}, DType::F32, 0, 1, d), ShapeError);
  EXPECT_THROW((void)Tensor::rand_normal({-2}, DType::F32, 0, 1, d), ShapeError);
  // A failed call takes nothing from the stream.
  d.set_seed(8);
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::F32, 2, 1, d), InvalidArgument);
  EXPECT_THROW((void)Tensor::rand_uniform({3}, DType::U8, 0, 1, d), DTypeError);
  EXPECT_EQ(host<float>(Tensor::rand_uniform({1}, DType::F32, 0, 1, d))[0],
            philox::uniform_f32(philox::seed_keys(8), 0, 0, 0.0f, 1.0f, 1.0f));
}

WICK_INSTANTIATE_DEVICES(Random);

}  // namespace
}  // namespace wick
