// Reductions, normalisations, cumsum and sort: errors, NaN and tie rules, stability, empty
// sets and accuracy on long rows (what the conformance cases do not express).
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "cpu/simd.h"
#include "test_util.h"

namespace wick {
namespace {

constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class Reduce : public ::testing::TestWithParam<Device> {};

Tensor f32(const std::vector<float>& v, const Shape& s, const Device& d) { return Tensor::from_vector(v, s, d); }

TEST_P(Reduce, BadDimsThrowShapeError) {
  const Device d = GetParam();
  Tensor x = Tensor::zeros({2, 3, 4}, DType::F32, d);
  EXPECT_THROW(x.sum({3}), ShapeError);
  EXPECT_THROW(x.sum({-4}), ShapeError);
  EXPECT_THROW(x.max({1, 1}), ShapeError);
  EXPECT_THROW(x.argmin({0, -3}), ShapeError);  // -3 is dim 0 again
  EXPECT_THROW(x.softmax(3), ShapeError);
  EXPECT_THROW(x.log_softmax(-4), ShapeError);
  EXPECT_THROW(x.cumsum(5), ShapeError);
  EXPECT_THROW(x.sort(3), ShapeError);
  EXPECT_THROW(x.argsort(-4), ShapeError);
}

TEST_P(Reduce, DTypesOutsideTheTableThrowDTypeError) {
  const Device d = GetParam();
  Tensor i = Tensor::zeros({2, 3}, DType::I64, d);
  EXPECT_THROW(i.mean({}), DTypeError);
  EXPECT_THROW(i.softmax(), DTypeError);
  EXPECT_THROW(i.rms_norm(Tensor(), 1e-5), DTypeError);
  EXPECT_THROW(Tensor::zeros({2, 3}, DType::U8, d).layer_norm(Tensor(), Tensor(), 1e-5), DTypeError);
}

TEST_P(Reduce, ZeroSizeReducedSet) {
  const Device d = GetParam();
  Tensor x = Tensor::zeros({3, 0}, DType::F32, d);
  for (auto f : {&Tensor::min, &Tensor::max, &Tensor::argmin, &Tensor::argmax}) {
    try {
      (x.*f)({1}, false);
      ADD_FAILURE() << "no error";
    } catch (const ShapeError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("[3, 0]"), std::string::npos) << msg;
      EXPECT_EQ(msg.front(), '[') << msg;
    }
  }
  EXPECT_THROW(x.max({}), ShapeError);
  // A zero-size kept dim is fine: an empty result.
  Tensor m = x.max({0});
  EXPECT_EQ(m.shape(), Shape({0}));
  EXPECT_EQ(x.argmin({0}, true).shape(), Shape({1, 0}));
  // sum over nothing is 0, mean is NaN.
  EXPECT_EQ(x.sum({1}).to_vector<float>(), std::vector<float>(3, 0.f));
  for (float v : x.mean({1}).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(Tensor::zeros({0, 4}, DType::U8, d).sum({}).to_vector<uint8_t>(), std::vector<uint8_t>{0});
}

TEST_P(Reduce, KeepdimShapes) {
  const Device d = GetParam();
  Tensor x = Tensor::ones({2, 3, 4, 5}, DType::F32, d);
  EXPECT_EQ(x.sum({1, 3}, true).shape(), Shape({2, 1, 4, 1}));
  EXPECT_EQ(x.sum({1, 3}).shape(), Shape({2, 4}));
  EXPECT_EQ(x.sum({}).shape(), Shape({}));
  EXPECT_EQ(x.sum({}, true).shape(), Shape({1, 1, 1, 1}));
  EXPECT_EQ(x.sum({-1, 0}).to_vector<float>(), std::vector<float>(12, 10.f));
  // A rank-0 input: every op works on its one element.
  Tensor s = Tensor::full({}, 2.5, DType::F32, d);
  EXPECT_EQ(s.sum({}).to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_EQ(s.argmax({}).to_vector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_EQ(s.softmax().to_vector<float>(), std::vector<float>{1.f});
  EXPECT_EQ(s.cumsum(0).to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_EQ(s.argsort().to_vector<int64_t>(), std::vector<int64_t>{0});
}

TEST_P(Reduce, MinMaxPropagateNaN) {
  const Device d = GetParam();
  Tensor x = f32({1, kNaNf, 3, -1, 5, 2, 0, kNaNf}, {2, 4}, d);
  for (float v : x.max({1}).to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  const std::vector<float> m0 = x.min({0}).to_vector<float>();
  EXPECT_EQ(m0[0], 1.f);
  EXPECT_TRUE(std::isnan(m0[1]));
  EXPECT_EQ(m0[2], 0.f);
  EXPECT_TRUE(std::isnan(m0[3]));
  // NaN beats +inf and -inf
  Tensor y = f32({-kInf, kInf, kNaNf}, {3}, d);
  EXPECT_TRUE(std::isnan(y.max({}).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(y.min({}).to_vector<float>()[0]));
}

// A NaN anywhere in a row, in the unrolled body, the single-vector loop or the scalar tail of the
// CPU's vector kernels, and in rows that start misaligned: min and max give NaN, argmin / argmax
// its index; the rows without NaN give the exact extreme.
TEST_P(Reduce, MinMaxFindANaNAtEveryPosition) {
  const Device d = GetParam();
  const int64_t n = 1000;  // 15 unrolled blocks of 64, 2 vectors of 16, a tail of 8 (AVX-512)
  const std::vector<int64_t> at{0, 1, 15, 16, 63, 64, 500, 959, 960, 975, 976, 990, 991, 999};
  const int64_t rows = static_cast<int64_t>(at.size()) + 1;
  std::vector<float> h(static_cast<size_t>(rows * n));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>((i * 7919) % 1009) - 500.f;
  for (size_t r = 0; r < at.size(); ++r) h[r * n + static_cast<size_t>(at[r])] = kNaNf;
  float* last = h.data() + (rows - 1) * n;  // no NaN; extremes in the tail and the last vector
  last[997] = 1e6f;
  last[981] = -1e6f;
  Tensor x = f32(h, {rows, n}, d);
  for (int64_t start : {int64_t{0}, int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE("start " + std::to_string(start));
    Tensor v = x.narrow(1, start, n - start);
    const std::vector<float> mx = v.max({1}).to_vector<float>(), mn = v.min({1}).to_vector<float>();
    const std::vector<int64_t> amx = v.argmax({1}).to_vector<int64_t>(), amn = v.argmin({1}).to_vector<int64_t>();
    for (size_t r = 0; r < at.size(); ++r) {
      if (at[r] < start) continue;  // narrowed off
      EXPECT_TRUE(std::isnan(mx[r])) << "NaN at " << at[r];
      EXPECT_TRUE(std::isnan(mn[r])) << "NaN at " << at[r];
      EXPECT_EQ(amx[r], at[r] - start);
      EXPECT_EQ(amn[r], at[r] - start);
    }
    const size_t lr = static_cast<size_t>(rows - 1);
    EXPECT_EQ(mx[lr], 1e6f);
    EXPECT_EQ(mn[lr], -1e6f);
    EXPECT_EQ(amx[lr], 997 - start);
    EXPECT_EQ(amn[lr], 981 - start);
  }
  // Infinities are values, not NaN: a row of -inf has max -inf, +inf wins over everything else.
  Tensor inf = f32(std::vector<float>(100, -kInf), {100}, d);
  EXPECT_EQ(inf.max({}).to_vector<float>()[0], -kInf);
  EXPECT_EQ(inf.min({}).to_vector<float>()[0], -kInf);
  std::vector<float> hi(100, -kInf);
  hi[99] = kInf;
  EXPECT_EQ(f32(hi, {100}, d).max({}).to_vector<float>()[0], kInf);
}

TEST_P(Reduce, ArgFirstNaNWins) {
  const Device d = GetParam();
  Tensor x = f32({1, 7, kNaNf, 9, kNaNf, -3}, {6}, d);
  EXPECT_EQ(x.argmax({}).to_vector<int64_t>(), std::vector<int64_t>{2});
  EXPECT_EQ(x.argmin({}).to_vector<int64_t>(), std::vector<int64_t>{2});
  // Along dim 0 (the column path): per column, the first NaN row.
  Tensor c = f32({0, kNaNf, 5, kNaNf, 1, 2, 4, kNaNf, 9}, {3, 3}, d);
  EXPECT_EQ(c.argmax({0}).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 2}));
  EXPECT_EQ(c.argmin({0}).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
}

TEST_P(Reduce, ArgTiesGoToTheFirstIndex) {
  const Device d = GetParam();
  Tensor x = f32({1, 3, 3, 2, 0, 0}, {6}, d);
  EXPECT_EQ(x.argmax({}).to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(x.argmin({}).to_vector<int64_t>(), std::vector<int64_t>{4});
  // A long constant row: every lane and every split piece sees a tie.
  Tensor ones = Tensor::ones({200003}, DType::F32, d);
  EXPECT_EQ(ones.argmax({}).to_vector<int64_t>(), std::vector<int64_t>{0});
  EXPECT_EQ(ones.reshape({200003, 1}).argmin({0}).to_vector<int64_t>(), std::vector<int64_t>{0});
  // Over several dims the index is row-major over the reduced dims, in their original order.
  std::vector<float> v(2 * 3 * 2);
  std::iota(v.begin(), v.end(), 0.f);
  v[1 * 6 + 1 * 2 + 0] = 100;  // [1, 1, 0]
  Tensor t = f32(v, {2, 3, 2}, d);
  // reduce dims {0, 2} for each dim-1 index: flat index over (dim0, dim2) = i0 * 2 + i2
  EXPECT_EQ(t.argmax({2, 0}).to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 3}));
  EXPECT_EQ(t.argmax({2, 0}, true).shape(), Shape({1, 3, 1}));
  // integers
  Tensor u = Tensor::from_vector<uint8_t>({5, 9, 9, 1, 1}, {5}, d);
  EXPECT_EQ(u.argmax({}).to_vector<int64_t>(), std::vector<int64_t>{1});
  EXPECT_EQ(u.argmin({}).to_vector<int64_t>(), std::vector<int64_t>{3});
}

TEST_P(Reduce, IntegerSumsWrap) {
  const Device d = GetParam();
  Tensor u = Tensor::full({300}, 1, DType::U8, d);
  EXPECT_EQ(u.sum({}).to_vector<uint8_t>(), std::vector<uint8_t>{44});
  EXPECT_EQ(u.cumsum().to_vector<uint8_t>()[299], 44);
  Tensor w = Tensor::full({3}, int64_t{4000000000}, DType::U32, d);
  EXPECT_EQ(w.sum({}).to_vector<uint32_t>(), std::vector<uint32_t>{static_cast<uint32_t>(12000000000ull)});
  Tensor i = Tensor::from_vector<int64_t>({int64_t{1} << 60, int64_t{1} << 60, -(int64_t{1} << 61), 7}, {4}, d);
  EXPECT_EQ(i.sum({}).to_vector<int64_t>(), std::vector<int64_t>{7});
}

// Few long rows, which the GPU cuts into pieces of whole load batches (4096 f32, 8192 bf16; Note
// [GPU reductions]): the row's extreme at a piece's first or last element, in the short last piece
// and at either end of the row, for one row, three and 64; max and sum checked with argmax.
TEST_P(Reduce, FewLongRowsAtPieceEdges) {
  const Device d = GetParam();
  for (const DType dt : {DType::F32, DType::BF16})
    for (const int64_t rows : {1, 3, 64}) {
      const int64_t n = 128256;
      const int64_t at[] = {0, 4095, 4096, 8191, 8192, 16383, 126976, 126977, n - 1};
      Tensor x = Tensor::rand_uniform({rows, n}, DType::F32, -1, 1, d);
      std::vector<float> h = x.to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) h[static_cast<size_t>(r * n + at[r % 9])] = 2;
      x = Tensor::from_vector(h, {rows, n}, d).to_dtype(dt);
      h = x.to_dtype(DType::F32).to_vector<float>();  // the values as rounded to dt
      const std::vector<int64_t> am = x.argmax({1}).to_vector<int64_t>();
      const std::vector<float> mx = x.max({1}).to_dtype(DType::F32).to_vector<float>();
      const std::vector<float> sm = x.sum({1}).to_dtype(DType::F32).to_vector<float>();
      for (int64_t r = 0; r < rows; ++r) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < n; ++i) {
          ref += h[static_cast<size_t>(r * n + i)];
          mag += std::abs(h[static_cast<size_t>(r * n + i)]);
        }
        SCOPED_TRACE(std::string(dtype_name(dt)) + " row " + std::to_string(r) + " of " + std::to_string(rows));
        EXPECT_EQ(am[static_cast<size_t>(r)], at[r % 9]);
        EXPECT_EQ(mx[static_cast<size_t>(r)], 2.f);
        // f32 accumulation within 2e-6 of the sum of magnitudes (a piece left out is off by tens);
        // bf16 results are rounded once more, to 8 bits.
        EXPECT_NEAR(sm[static_cast<size_t>(r)], ref, 2e-6 * mag + (dt == DType::F32 ? 0 : std::abs(ref) / 128));
      }
    }
}

// f32 sums over long rows must not be a sequential chain: compare with an f64 sum.
TEST_P(Reduce, LongF32SumsAreAccurate) {
  const Device d = GetParam();
  const int64_t n = 1 << 20;
  Tensor x = Tensor::rand_uniform({n}, DType::F32, 0, 1, d);
  const std::vector<float> h = x.to_vector<float>();
  double ref = 0;
  for (float v : h) ref += v;
  const double got = x.sum({}).to_vector<float>()[0];
  EXPECT_NEAR(got, ref, 2e-6 * ref);  // a sequential f32 sum is off by about 1e-4 here
  EXPECT_NEAR(x.mean({}).to_vector<float>()[0], ref / static_cast<double>(n), 2e-6);
  // The same values summed over a leading dim (column path) and as two long rows (split path).
  const double got_cols = x.reshape({n / 4, 4}).sum({0}).sum({}).to_vector<float>()[0];
  EXPECT_NEAR(got_cols, ref, 2e-6 * ref);
  const std::vector<float> rows = x.reshape({2, n / 2}).sum({1}).to_vector<float>();
  EXPECT_NEAR(static_cast<double>(rows[0]) + rows[1], ref, 2e-6 * ref);
  // cumsum's last element is the whole sum.
  EXPECT_NEAR(x.cumsum().to_vector<float>()[n - 1], ref, 2e-6 * ref);
}

TEST_P(Reduce, LongColumnReductionsMatchRows) {
  const Device d = GetParam();
  Tensor x = Tensor::rand_normal({3001, 257}, DType::F32, 0, 1, d);
  const std::vector<float> h = x.to_vector<float>();
  const std::vector<float> s = x.sum({0}).to_vector<float>();
  const std::vector<float> mx = x.max({0}).to_vector<float>();
  const std::vector<int64_t> am = x.argmin({0}).to_vector<int64_t>();
  for (int64_t j = 0; j < 257; ++j) {
    double ref = 0;
    float best = -kInf;
    int64_t arg = 0;
    for (int64_t i = 0; i < 3001; ++i) {
      const float v = h[static_cast<size_t>(i * 257 + j)];
      ref += v;
      best = std::max(best, v);
      if (v < h[static_cast<size_t>(arg * 257 + j)]) arg = i;
    }
    EXPECT_NEAR(s[static_cast<size_t>(j)], ref, 1e-4) << j;
    EXPECT_EQ(mx[static_cast<size_t>(j)], best) << j;
    EXPECT_EQ(am[static_cast<size_t>(j)], arg) << j;
  }
}

TEST_P(Reduce, SoftmaxIsStable) {
  const Device d = GetParam();
  Tensor x = f32({1000, 1001, -1000, -1001}, {2, 2}, d);
  const std::vector<float> y = x.softmax().to_vector<float>();
  EXPECT_NEAR(y[0], 0.26894142f, 1e-6);
  EXPECT_NEAR(y[1], 0.73105858f, 1e-6);
  EXPECT_NEAR(y[2], 0.73105858f, 1e-6);
  const std::vector<float> l = x.log_softmax().to_vector<float>();
  EXPECT_NEAR(l[0], -1.31326169f, 1e-5);
  EXPECT_NEAR(l[1], -0.31326169f, 1e-5);
  // A NaN poisons its row only.
  const std::vector<float> z = f32({1, kNaNf, 2, 3}, {2, 2}, d).softmax().to_vector<float>();
  EXPECT_TRUE(std::isnan(z[0]) && std::isnan(z[1]));
  EXPECT_NEAR(z[2] + z[3], 1.f, 1e-6);
  // -inf entries get probability 0.
  const std::vector<float> m = f32({-kInf, 0, 0}, {3}, d).softmax().to_vector<float>();
  EXPECT_EQ(m[0], 0.f);
  EXPECT_NEAR(m[1], 0.5f, 1e-7);
}

TEST_P(Reduce, NormsCheckTheirParameters) {
  const Device d = GetParam();
  Tensor x = Tensor::ones({4, 8}, DType::F32, d);
  EXPECT_THROW(x.rms_norm(Tensor::ones({7}, DType::F32, d), 1e-5), ShapeError);
  EXPECT_THROW(x.rms_norm(Tensor::ones({1, 8}, DType::F32, d), 1e-5), ShapeError);
  EXPECT_THROW(x.rms_norm(Tensor::ones({8}, DType::F16, d), 1e-5), DTypeError);
  EXPECT_THROW(x.layer_norm(Tensor::ones({8}, DType::F32, d), Tensor::ones({9}, DType::F32, d), 1e-5), ShapeError);
  EXPECT_THROW(x.layer_norm(Tensor(), Tensor::ones({8}, DType::F64, d), 1e-5), DTypeError);
  EXPECT_THROW(x.rms_norm(Tensor(), -1), InvalidArgument);
  EXPECT_THROW(Tensor::full({}, 1.0, DType::F32, d).rms_norm(Tensor(), 1e-5), ShapeError);
  for (const Device& other : available_devices()) {
    if (!other.same_device(d)) {
      EXPECT_THROW(x.rms_norm(Tensor::ones({8}, DType::F32, other), 1e-5), DeviceError);
    }
  }
}

TEST_P(Reduce, LayerNormKeepsPrecisionWithALargeMean) {
  const Device d = GetParam();
  std::vector<float> v(1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 10000.f + static_cast<float>(i % 2 == 0 ? 1 : -1) * 0.5f;
  const std::vector<float> y = f32(v, {1, 1024}, d).layer_norm(Tensor(), Tensor(), 0).to_vector<float>();
  for (size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], i % 2 == 0 ? 1.f : -1.f, 1e-5) << i;
  const std::vector<float> r = f32({3, 4}, {2}, d).rms_norm(f32({2, -1}, {2}, d), 0).to_vector<float>();
  EXPECT_NEAR(r[0], 3 / std::sqrt(12.5) * 2, 1e-6);
  EXPECT_NEAR(r[1], -4 / std::sqrt(12.5), 1e-6);
}

TEST_P(Reduce, SortIsStableAndOrdersNaN) {
  const Device d = GetParam();
  Tensor x = f32({2, kNaNf, 1, 2, -kInf, kNaNf, kInf, 1}, {8}, d);
  auto [v, i] = x.sort();
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 2, 7, 0, 3, 6, 1, 5}));
  const std::vector<float> vv = v.to_vector<float>();
  EXPECT_EQ(vv[0], -kInf);
  EXPECT_EQ(vv[5], kInf);
  EXPECT_TRUE(std::isnan(vv[6]) && std::isnan(vv[7]));
  auto [dv, di] = x.sort(-1, true);
  EXPECT_EQ(di.to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 6, 0, 3, 2, 7, 4}));
  EXPECT_TRUE(std::isnan(dv.to_vector<float>()[0]));
  EXPECT_EQ(x.argsort(0, true).to_vector<int64_t>(), di.to_vector<int64_t>());
  // Integers, along dim 0 (a transposed view in the backend); ties keep input order.
  Tensor u = Tensor::from_vector<uint32_t>({3, 1, 1, 1, 3, 0}, {3, 2}, d);
  auto [uv, ui] = u.sort(0);
  EXPECT_EQ(uv.to_vector<uint32_t>(), (std::vector<uint32_t>{1, 0, 3, 1, 3, 1}));
  EXPECT_EQ(ui.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 0, 2, 1}));
  EXPECT_EQ(u.argsort(0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 1, 1, 2}));
  // A long row of few distinct keys: stability over many ties.
  std::vector<int64_t> keys(5000);
  for (size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<int64_t>((k * 7) % 3);
  const std::vector<int64_t> order = Tensor::from_vector(keys, {5000}, d).argsort().to_vector<int64_t>();
  for (size_t k = 1; k < order.size(); ++k) {
    const auto a = static_cast<size_t>(order[k - 1]), b = static_cast<size_t>(order[k]);
    ASSERT_TRUE(keys[a] < keys[b] || (keys[a] == keys[b] && a < b)) << k;
  }
}

TEST_P(Reduce, CumsumAlongLeadingDim) {
  const Device d = GetParam();
  Tensor x = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5, 6}, {3, 2}, d);
  EXPECT_EQ(x.cumsum(0).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 4, 6, 9, 12}));
  EXPECT_EQ(x.cumsum(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 3, 7, 5, 11}));
  EXPECT_EQ(x.cumsum(-2).shape(), Shape({3, 2}));
  const std::vector<float> h = f32({1, kNaNf, 2, 3}, {4}, d).cumsum().to_vector<float>();
  EXPECT_EQ(h[0], 1.f);
  EXPECT_TRUE(std::isnan(h[1]) && std::isnan(h[3]));
}

// The CPU's sort order on host values (Note [NaN order]): NaN last ascending, first descending,
// -0 equal to +0, ties in input order.
template <class T>
std::vector<int64_t> ref_order(const std::vector<T>& row, bool descending) {
  if constexpr (!std::is_arithmetic_v<T>) {  // bf16, f16, f8e4m3: the order of their (exact) f32 values
    std::vector<float> wide(row.size());
    std::transform(row.begin(), row.end(), wide.begin(), [](T x) { return static_cast<float>(x); });
    return ref_order(wide, descending);
  } else {
    std::vector<int64_t> order(row.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const T x = row[static_cast<size_t>(a)], y = row[static_cast<size_t>(b)];
      if constexpr (std::is_floating_point_v<T>) {
        if (descending) return std::isnan(x) ? !std::isnan(y) : (!std::isnan(y) && x > y);
        return std::isnan(y) ? !std::isnan(x) : (!std::isnan(x) && x < y);
      } else {
        return descending ? x > y : x < y;
      }
    });
    return order;
  }
}

// Sorts `rows` rows of n values (h, row-major) laid out as [rows, n] (contiguous rows) and as
// [n, rows] sorted along dim 0 (strided input and outputs), both directions, against ref_order.
template <class T>
void expect_sorts_like_reference(const Device& d, const std::vector<T>& h, int64_t rows, int64_t n) {
  std::vector<T> ht(h.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) ht[static_cast<size_t>(i * rows + r)] = h[static_cast<size_t>(r * n + i)];
  const Tensor x = Tensor::from_vector(h, {rows, n}, d);
  const Tensor xt = Tensor::from_vector(ht, {n, rows}, d);
  for (bool desc : {false, true}) {
    auto [v, i] = x.sort(-1, desc);
    auto [vt, it] = xt.sort(0, desc);
    const std::vector<int64_t> iv = i.to_vector<int64_t>(), itv = it.to_vector<int64_t>();
    const std::vector<int64_t> av = x.argsort(-1, desc).to_vector<int64_t>();
    const std::vector<T> vv = v.to_vector<T>(), vtv = vt.to_vector<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<T> row(h.begin() + r * n, h.begin() + (r + 1) * n);
      const std::vector<int64_t> want = ref_order(row, desc);
      for (int64_t q = 0; q < n; ++q) {
        const size_t k = static_cast<size_t>(r * n + q), kt = static_cast<size_t>(q * rows + r);
        const int64_t w = want[static_cast<size_t>(q)];
        ASSERT_EQ(iv[k], w) << "n " << n << " row " << r << " pos " << q << " desc " << desc;
        ASSERT_EQ(av[k], w) << "argsort n " << n << " row " << r << " pos " << q << " desc " << desc;
        ASSERT_EQ(itv[kt], w) << "dim 0, n " << n << " row " << r << " pos " << q << " desc " << desc;
        // The values are the source elements themselves, bit for bit (-0 stays -0, NaN stays NaN).
        const T& src = row[static_cast<size_t>(w)];
        ASSERT_EQ(std::memcmp(&vv[k], &src, sizeof(T)), 0) << "n " << n << " pos " << q;
        ASSERT_EQ(std::memcmp(&vtv[kt], &src, sizeof(T)), 0) << "dim 0, n " << n << " pos " << q;
      }
    }
  }
}

// The sort tests' random numbers: a linear congruential stream.
struct SortRandom {
  uint32_t seed;
  uint32_t operator()() {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  }
};

// Random bit patterns of the dtypes with 32-bit sort keys, one element of each per draw: u32 and
// its bits as f32 (NaNs with payloads among them; keys differ in all four bytes), and every bit
// pattern of the narrow floats: NaNs with payloads and signs, infinities, zeros and subnormals of
// both signs (Note [GPU sort key digits] skips their constant low key digits).
struct SortBitPatterns {
  std::vector<uint32_t> u32;
  std::vector<float> f32;
  std::vector<bf16> hb;
  std::vector<f16> hh;
  std::vector<f8e4m3> h8;
  explicit SortBitPatterns(size_t size) : u32(size), f32(size), hb(size), hh(size), h8(size) {}
  void draw(size_t k, SortRandom& next) {
    u32[k] = next() << 8 ^ next();
    f32[k] = std::bit_cast<float>(u32[k]);
    hb[k] = bf16::from_bits(static_cast<uint16_t>(next() >> 8));
    hh[k] = f16::from_bits(static_cast<uint16_t>(next() >> 8));
    h8[k] = f8e4m3::from_bits(static_cast<uint8_t>(next() >> 16));
  }
  void expect_sorted(const Device& d, int64_t rows, int64_t n) const {
    expect_sorts_like_reference(d, u32, rows, n);
    expect_sorts_like_reference(d, f32, rows, n);
    expect_sorts_like_reference(d, hb, rows, n);
    expect_sorts_like_reference(d, hh, rows, n);
    expect_sorts_like_reference(d, h8, rows, n);
  }
};

// Row lengths around the GPU's tile sizes (1, 2, not powers of two, longer than shared memory, many
// tiles of the long-row radix sort with a partial last one; one row of 100003 takes its small tiles,
// scanned by the scatter for 32-bit keys and by chunks for 64-bit ones), few distinct keys
// (stability), NaN, infinities and zeros of both signs.
TEST_P(Reduce, SortMatchesTheReferenceOnManyRowLengths) {
  const Device d = GetParam();
  const float fpool[] = {kNaNf, -0.f, 0.f, 1.5f, -1.5f, kInf, -kInf, 3.f, -kNaNf, 1e-30f, -2.f};
  const double dpool[] = {std::nan(""), -0.0, 0.0, 1.5, -1.5, 1e300, -1e300, 3.0, -std::nan(""), 4e-320};
  SortRandom next{12345};
  for (int64_t n : {1, 2, 3, 1000, 5000, 20000, 32768, 70000, 100003, 200003}) {
    const int64_t rows = n == 100003 ? 1 : n > 5000 ? 2 : 3;
    std::vector<float> f(static_cast<size_t>(rows * n));
    std::vector<double> g(f.size());
    std::vector<int64_t> i64(f.size());
    std::vector<uint8_t> u8(f.size());
    SortBitPatterns bits(f.size());
    for (size_t k = 0; k < f.size(); ++k) {
      f[k] = fpool[next() % std::size(fpool)];
      g[k] = dpool[next() % std::size(dpool)];
      i64[k] = static_cast<int64_t>(next() % 7) - 3 + (next() % 2 ? std::numeric_limits<int64_t>::min() / 2 : 0);
      u8[k] = static_cast<uint8_t>(next() % 5 * 60);
      bits.draw(k, next);
    }
    expect_sorts_like_reference(d, f, rows, n);
    expect_sorts_like_reference(d, g, rows, n);
    expect_sorts_like_reference(d, i64, rows, n);
    expect_sorts_like_reference(d, u8, rows, n);
    if (n >= 1000) bits.expect_sorted(d, rows, n);
  }
  // f16 keys: sort through the compute type, ties from rounding.
  std::vector<float> h(4099);
  for (size_t k = 0; k < h.size(); ++k) h[k] = static_cast<float>(next() % 2000) / 7.f - 140.f;
  h[7] = kNaNf;
  h[100] = -0.f;
  const Tensor x = f32(h, {4099}, d).to_dtype(DType::F16);
  const std::vector<float> back = x.to_dtype(DType::F32).to_vector<float>();
  for (bool desc : {false, true}) EXPECT_EQ(x.argsort(0, desc).to_vector<int64_t>(), ref_order(back, desc)) << desc;
}

// Rows of up to 32768 on a GPU with more rows than multiprocessors take the one-block radix sort
// (Note [GPU radix sort]): row lengths that fill its blocks exactly and that pad them, every dtype
// with 32-bit keys, NaN payloads, zeros of both signs and few distinct keys (stability).
TEST_P(Reduce, SortOfManyRowsOfOneBlock) {
  const Device d = GetParam();
  const int64_t rows = d.is_cpu() ? 3 : d.info().multiprocessors + 3;
  SortRandom next{777};
  const float fpool[] = {kNaNf, -0.f, 0.f, 1.5f, -1.5f, kInf, -kInf, -kNaNf};
  for (int64_t n : {4097, 20000, 32768}) {
    const auto size = static_cast<size_t>(rows * n);
    std::vector<float> few(size);
    std::vector<uint8_t> u8(size);
    SortBitPatterns bits(size);
    for (size_t k = 0; k < size; ++k) {
      few[k] = fpool[next() % std::size(fpool)];
      u8[k] = static_cast<uint8_t>(next());
      bits.draw(k, next);
    }
    expect_sorts_like_reference(d, few, rows, n);
    expect_sorts_like_reference(d, u8, rows, n);
    bits.expect_sorted(d, rows, n);
  }
}

// One row of over 500 tiles of the GPU's long-row radix sort, whose scan runs in many chunks, the
// last one partial (Note [GPU long-row radix sort]): 32-bit and 64-bit keys, and f16 (three
// passes, Note [GPU sort key digits]), with ties.
TEST_P(Reduce, SortOfOneVeryLongRow) {
  const Device d = GetParam();
  const int64_t n = (int64_t{1} << 21) + 12345;
  std::vector<float> f(static_cast<size_t>(n));
  std::vector<double> g(f.size());
  std::vector<f16> h(f.size());
  uint32_t seed = 99;
  for (size_t k = 0; k < f.size(); ++k) {
    seed = seed * 1664525u + 1013904223u;
    f[k] = static_cast<float>(seed >> 12) / 1024.f - 2048.f;  // about 2^20 distinct values: ties
    g[k] = static_cast<double>(seed) * (k % 2 ? 1e-3 : -1e-3);
    h[k] = f16::from_bits(static_cast<uint16_t>(seed >> 16));
  }
  expect_sorts_like_reference(d, f, 1, n);
  expect_sorts_like_reference(d, g, 1, n);
  expect_sorts_like_reference(d, h, 1, n);
}

// cumsum over long rows (split across blocks on a GPU), many rows, adjacent rows (a cumsum over a
// leading dim), a transposed view, and integer wrap-around.
TEST_P(Reduce, CumsumOnLongRowsAndViews) {
  const Device d = GetParam();
  for (int64_t rows : {1, 3}) {
    const int64_t n = 100003;
    std::vector<float> h(static_cast<size_t>(rows * n));
    std::vector<uint8_t> u(h.size());
    std::vector<int64_t> w(h.size());
    for (size_t k = 0; k < h.size(); ++k) {
      h[k] = static_cast<float>((k * 7919) % 2001) / 1000.f - 1.f;
      u[k] = static_cast<uint8_t>(k * 31);
      w[k] = static_cast<int64_t>(k % 3 == 0 ? uint64_t{0x7000000000000001} * (k % 5) : k);
    }
    const std::vector<float> y = f32(h, {rows, n}, d).cumsum().to_vector<float>();
    const std::vector<uint8_t> uy = Tensor::from_vector(u, {rows, n}, d).cumsum().to_vector<uint8_t>();
    const std::vector<int64_t> wy = Tensor::from_vector(w, {rows, n}, d).cumsum().to_vector<int64_t>();
    // The same rows as the columns of [n, rows], summed along dim 0 (strided rows).
    std::vector<float> ht(h.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < n; ++i) ht[static_cast<size_t>(i * rows + r)] = h[static_cast<size_t>(r * n + i)];
    const std::vector<float> yt = f32(ht, {n, rows}, d).cumsum(0).to_vector<float>();
    for (int64_t r = 0; r < rows; ++r) {
      double acc = 0;
      uint8_t uacc = 0;
      uint64_t wacc = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(r * n + i);
        acc += h[k];
        uacc = static_cast<uint8_t>(uacc + u[k]);
        wacc += static_cast<uint64_t>(w[k]);
        ASSERT_NEAR(y[k], acc, 1e-4) << r << " " << i;
        ASSERT_NEAR(yt[static_cast<size_t>(i * rows + r)], acc, 1e-4) << r << " " << i;
        ASSERT_EQ(uy[k], uacc) << r << " " << i;
        ASSERT_EQ(wy[k], static_cast<int64_t>(wacc)) << r << " " << i;
      }
    }
  }
  // Many short rows side by side (dim 0 of [37, 5000]), and fewer (of a narrowed [37, 3000]).
  std::vector<float> h(37 * 5000);
  for (size_t k = 0; k < h.size(); ++k) h[k] = static_cast<float>(k % 13) - 6.f;
  const Tensor x = f32(h, {37, 5000}, d);
  const std::vector<float> c0 = x.cumsum(0).to_vector<float>();
  const std::vector<float> c1 = x.narrow(1, 0, 3000).cumsum(0).to_vector<float>();
  for (int64_t j = 0; j < 5000; ++j) {
    float acc = 0;
    for (int64_t i = 0; i < 37; ++i) {
      acc += h[static_cast<size_t>(i * 5000 + j)];
      ASSERT_EQ(c0[static_cast<size_t>(i * 5000 + j)], acc) << i << " " << j;
      if (j < 3000) {
        ASSERT_EQ(c1[static_cast<size_t>(i * 3000 + j)], acc) << i << " " << j;
      }
    }
  }
}

// More kept dims than one GPU launch describes (they cannot be merged once permuted).
TEST_P(Reduce, CumsumAndSortOverManyKeptDims) {
  const Device d = GetParam();
  Shape shape(10, 2);
  shape.push_back(33);
  Tensor x = Tensor::rand_normal(shape, DType::F32, 0, 1, d);
  Dims order = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 10};
  Tensor v = x.permute(order);
  Tensor c = v.contiguous();
  EXPECT_EQ(v.cumsum(-1).to_vector<float>(), c.cumsum(-1).to_vector<float>());
  EXPECT_EQ(v.argsort(-1, true).to_vector<int64_t>(), c.argsort(-1, true).to_vector<int64_t>());
  EXPECT_EQ(v.sort(-1).first.to_vector<float>(), c.sort(-1).first.to_vector<float>());
}

// ---- sizes and layouts that take the GPU's other paths (Note [GPU reductions]) ------------------

// f64 / exact references of `rows` lines of n elements of a host matrix, element (i, j) at
// h[i * row_stride + j * elem_stride].
struct RowRef {
  std::vector<double> sum;
  std::vector<float> max;
  std::vector<int64_t> argmin, argmax;
};
RowRef row_ref(const std::vector<float>& h, int64_t rows, int64_t n, int64_t row_stride, int64_t elem_stride = 1) {
  RowRef r;
  for (int64_t i = 0; i < rows; ++i) {
    auto at = [&](int64_t j) { return h[static_cast<size_t>(i * row_stride + j * elem_stride)]; };
    double s = 0;
    int64_t lo = 0, hi = 0;
    for (int64_t j = 0; j < n; ++j) {
      s += at(j);
      if (at(j) < at(lo)) lo = j;
      if (at(j) > at(hi)) hi = j;
    }
    r.sum.push_back(s);
    r.max.push_back(at(hi));
    r.argmin.push_back(lo);
    r.argmax.push_back(hi);
  }
  return r;
}

void expect_rows(const Tensor& x, const RowRef& r, double rel) {
  const std::vector<float> s = x.sum({-1}).to_vector<float>();
  const std::vector<float> m = x.max({-1}).to_vector<float>();
  const std::vector<int64_t> a = x.argmin({-1}).to_vector<int64_t>();
  ASSERT_EQ(s.size(), r.sum.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_NEAR(s[i], r.sum[i], rel * std::abs(r.sum[i]) + 1e-3) << i;
    EXPECT_EQ(m[i], r.max[i]) << i;
    EXPECT_EQ(a[i], r.argmin[i]) << i;
  }
}

TEST_P(Reduce, RowsMuchLongerThanABlock) {
  const Device d = GetParam();
  const int64_t n = 100003;  // odd: most rows start misaligned
  Tensor x = Tensor::rand_uniform({5, n}, DType::F32, 0, 1, d);
  expect_rows(x, row_ref(x.to_vector<float>(), 5, n, n), 2e-6);
  // One long row alone: split over blocks.
  Tensor one = x.narrow(0, 2, 1);
  expect_rows(one, row_ref(one.to_vector<float>(), 1, n, n), 2e-6);
}

TEST_P(Reduce, NarrowedMisalignedView) {
  const Device d = GetParam();
  Tensor base = Tensor::rand_uniform({9, 4001}, DType::F32, -1, 1, d);
  Tensor x = base.narrow(1, 3, 3997).narrow(0, 1, 7);  // offset 4004: no row is 16-byte aligned
  const std::vector<float> h = base.to_vector<float>();
  std::vector<float> v;
  for (int64_t i = 1; i < 8; ++i)
    for (int64_t j = 3; j < 4000; ++j) v.push_back(h[static_cast<size_t>(i * 4001 + j)]);
  expect_rows(x, row_ref(v, 7, 3997, 3997), 2e-6);
  // The same view reduced over dim 0 (the column path) and over both dims.
  const std::vector<float> c = x.sum({0}).to_vector<float>();
  for (int64_t j = 0; j < 3997; j += 97) {
    double s = 0;
    for (int64_t i = 0; i < 7; ++i) s += v[static_cast<size_t>(i * 3997 + j)];
    EXPECT_NEAR(c[static_cast<size_t>(j)], s, 1e-5) << j;
  }
  double all = 0;
  for (float f : v) all += f;
  EXPECT_NEAR(x.sum({}).to_vector<float>()[0], all, 1e-3);
  // u8 through an odd offset: the vector loads start after a scalar head.
  Tensor u = Tensor::full({3, 1000}, 1, DType::U8, d).narrow(1, 5, 993);
  EXPECT_EQ(u.sum({1}).to_vector<uint8_t>(), std::vector<uint8_t>(3, static_cast<uint8_t>(993 % 256)));
  EXPECT_EQ(u.sum({}).to_vector<uint8_t>(), std::vector<uint8_t>{static_cast<uint8_t>((3 * 993) % 256)});
}

TEST_P(Reduce, FullReductionOfTenMillion) {
  const Device d = GetParam();
  const int64_t n = 10000019;
  Tensor x = Tensor::rand_uniform({n}, DType::F32, 0, 1, d);
  const std::vector<float> h = x.to_vector<float>();
  double ref = 0;
  float mn = kInf;
  int64_t am = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = h[static_cast<size_t>(i)];
    ref += v;
    if (v < mn) {
      mn = v;
      am = i;
    }
  }
  EXPECT_NEAR(x.sum({}).to_vector<float>()[0], ref, 2e-6 * ref);
  EXPECT_NEAR(x.mean({}).to_vector<float>()[0], ref / static_cast<double>(n), 2e-6);
  EXPECT_EQ(x.min({}).to_vector<float>()[0], mn);
  EXPECT_EQ(x.argmin({}).to_vector<int64_t>()[0], am);
  // Exact integer sums: i64 arange, and a u8 sum that wraps.
  Tensor a = Tensor::arange(0, static_cast<double>(n), 1, DType::I64, d);
  EXPECT_EQ(a.sum({}).to_vector<int64_t>()[0], n * (n - 1) / 2);
  EXPECT_EQ(a.argmax({}).to_vector<int64_t>()[0], n - 1);
  EXPECT_EQ(Tensor::full({n}, 3, DType::U8, d).sum({}).to_vector<uint8_t>()[0], static_cast<uint8_t>((3 * n) % 256));
}

TEST_P(Reduce, TallMatrixOverDim0) {
  const Device d = GetParam();
  const int64_t rows = 200003, cols = 5;
  Tensor x = Tensor::rand_uniform({rows, cols}, DType::F32, -1, 1, d);
  const RowRef r = row_ref(x.to_vector<float>(), cols, rows, 1, cols);
  const std::vector<float> s = x.sum({0}).to_vector<float>();
  EXPECT_EQ(x.max({0}).to_vector<float>(), r.max);
  EXPECT_EQ(x.argmax({0}).to_vector<int64_t>(), r.argmax);
  for (size_t j = 0; j < s.size(); ++j) EXPECT_NEAR(s[j], r.sum[j], 1e-3) << j;
  // A constant column: every split piece ties, the first row wins.
  EXPECT_EQ(Tensor::ones({rows, 3}, DType::BF16, d).argmin({0}).to_vector<int64_t>(), std::vector<int64_t>(3, 0));
}

// The column path (reductions over dim 0) reads its rows in blocks of 8: a NaN in every row
// position of a block and past the last whole block, repeated extremes (the first row wins) and
// exact small-integer sums, for the float dtypes and i64, against a reference that walks each
// column row by row.
TEST_P(Reduce, ColumnPathInEveryRowOfABlock) {
  const Device d = GetParam();
  const int64_t rows = 45, cols = 47;  // column j < rows holds a NaN at row j in the NaN case
  std::vector<float> h(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      h[static_cast<size_t>(i * cols + j)] = static_cast<float>((i * 31 + j * 17) % 97 - 48);
  for (int64_t j = 0; j < cols; ++j) {  // each column's extremes twice, 9 and 1 rows apart
    const int64_t a = (j * 7) % rows, b = (j * 5 + 2) % rows;
    for (int64_t r : {a, (a + 9) % rows}) h[static_cast<size_t>(r * cols + j)] = 100;
    for (int64_t r : {b, (b + 1) % rows}) h[static_cast<size_t>(r * cols + j)] = -100;
  }
  std::vector<float> with_nan = h;
  for (int64_t j = 0; j < rows; ++j) with_nan[static_cast<size_t>(j * cols + j)] = kNaNf;
  for (bool nan : {false, true}) {
    const std::vector<float>& v = nan ? with_nan : h;
    std::vector<double> sum(static_cast<size_t>(cols), 0);
    std::vector<float> mx(static_cast<size_t>(cols), -kInf), mn(static_cast<size_t>(cols), kInf);
    std::vector<int64_t> amx(static_cast<size_t>(cols), -1), amn(static_cast<size_t>(cols), -1);
    for (int64_t j = 0; j < cols; ++j) {
      const size_t c = static_cast<size_t>(j);
      for (int64_t i = 0; i < rows; ++i) {
        const float x = v[static_cast<size_t>(i * cols + j)];
        sum[c] += x;
        if (std::isnan(mx[c])) continue;  // the first NaN decides max, min and both args
        if (std::isnan(x)) {
          mx[c] = mn[c] = x;
          amx[c] = amn[c] = i;
          continue;
        }
        if (x > mx[c]) mx[c] = x, amx[c] = i;
        if (x < mn[c]) mn[c] = x, amn[c] = i;
      }
    }
    for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I64}) {
      if (nan && dt == DType::I64) continue;
      SCOPED_TRACE(std::string(dtype_name(dt)) + (nan ? " with NaN" : ""));
      const Tensor x = f32(v, {rows, cols}, d).to_dtype(dt);
      const std::vector<float> s = x.sum({0}).to_dtype(DType::F32).to_vector<float>();
      const std::vector<float> gmx = x.max({0}).to_dtype(DType::F32).to_vector<float>();
      const std::vector<float> gmn = x.min({0}).to_dtype(DType::F32).to_vector<float>();
      const std::vector<int64_t> gamx = x.argmax({0}).to_vector<int64_t>(), gamn = x.argmin({0}).to_vector<int64_t>();
      for (size_t c = 0; c < static_cast<size_t>(cols); ++c) {
        if (std::isnan(sum[c])) {
          EXPECT_TRUE(std::isnan(s[c]) && std::isnan(gmx[c]) && std::isnan(gmn[c])) << c;
        } else {
          // the sums are integers below 2^12: exact in every dtype but bf16 (8 bits)
          EXPECT_NEAR(s[c], sum[c], dt == DType::BF16 ? std::abs(sum[c]) / 128 : 0) << c;
          EXPECT_EQ(gmx[c], mx[c]) << c;
          EXPECT_EQ(gmn[c], mn[c]) << c;
        }
        EXPECT_EQ(gamx[c], amx[c]) << c;
        EXPECT_EQ(gamn[c], amn[c]) << c;
      }
    }
  }
}

// Softmax and the norms on rows of length 1 and on rows longer than the cached path holds.
TEST_P(Reduce, LastDimOpsOnShortAndLongRows) {
  const Device d = GetParam();
  Tensor one = Tensor::rand_uniform({6, 1}, DType::F32, -3, 3, d);
  EXPECT_EQ(one.softmax().to_vector<float>(), std::vector<float>(6, 1.f));
  EXPECT_EQ(one.log_softmax().to_vector<float>(), std::vector<float>(6, 0.f));

  const int64_t n = 70000;
  Tensor x = Tensor::rand_uniform({3, n}, DType::F32, -4, 4, d);
  std::vector<float> h = x.to_vector<float>();
  const std::vector<float> y = x.softmax().to_vector<float>();
  const std::vector<float> ly = x.log_softmax().to_vector<float>();
  const std::vector<float> rn = x.rms_norm(Tensor(), 1e-5).to_vector<float>();
  const std::vector<float> ln = x.layer_norm(Tensor(), Tensor(), 1e-5).to_vector<float>();
  for (int64_t r = 0; r < 3; ++r) {
    const float* p = h.data() + r * n;
    double m = -kInf, sum = 0, sq = 0, mean = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, p[i]);
    for (int64_t i = 0; i < n; ++i) {
      sum += std::exp(p[i] - m);
      sq += static_cast<double>(p[i]) * p[i];
      mean += p[i];
    }
    mean /= static_cast<double>(n);
    double var = 0;
    for (int64_t i = 0; i < n; ++i) var += (p[i] - mean) * (p[i] - mean);
    var /= static_cast<double>(n);
    for (int64_t i = 0; i < n; i += 101) {
      const size_t k = static_cast<size_t>(r * n + i);
      const double e = std::exp(p[i] - m) / sum;
      ASSERT_NEAR(y[k], e, 1e-5 * e) << r << " " << i;
      ASSERT_NEAR(ly[k], p[i] - m - std::log(sum), 1e-4) << r << " " << i;
      ASSERT_NEAR(rn[k], p[i] / std::sqrt(sq / static_cast<double>(n) + 1e-5), 1e-5) << r << " " << i;
      ASSERT_NEAR(ln[k], (p[i] - mean) / std::sqrt(var + 1e-5), 1e-5) << r << " " << i;
    }
  }
  // The NaN / inf rules hold on long rows too: a NaN or a +inf poisons its row, -inf gets 0, and a
  // row of only -inf is NaN.
  h[5] = kNaNf;
  h[static_cast<size_t>(n + 7)] = kInf;
  for (int64_t i = 0; i < n; ++i) h[static_cast<size_t>(2 * n + i)] = i % 2 ? -kInf : 0.f;
  const std::vector<float> z = f32(h, {3, n}, d).softmax().to_vector<float>();
  EXPECT_TRUE(std::isnan(z[0]) && std::isnan(z[static_cast<size_t>(n - 1)]));
  EXPECT_TRUE(std::isnan(z[static_cast<size_t>(n)]) && std::isnan(z[static_cast<size_t>(2 * n - 1)]));
  EXPECT_EQ(z[static_cast<size_t>(2 * n + 1)], 0.f);
  EXPECT_NEAR(z[static_cast<size_t>(2 * n)], 2.0 / static_cast<double>(n), 1e-10);
  const std::vector<float> w = Tensor::full({2, n}, -kInf, DType::F32, d).softmax().to_vector<float>();
  EXPECT_TRUE(std::isnan(w[0]) && std::isnan(w[static_cast<size_t>(2 * n - 1)]));
}

// Few long rows, which the GPU cuts into chunks of a block each (Note [GPU split softmax]), against
// a double reference: one row and a few, vector and strided rows (a narrowed and a transposed
// view), bf16, log_softmax, chunks of only -inf beside finite ones, and the row counts around the
// split's limits.
TEST_P(Reduce, SoftmaxOfFewLongRows) {
  const Device d = GetParam();
  auto check = [&](const Tensor& x, const char* what) {
    SCOPED_TRACE(std::string(what) + " " + x.str());
    const Tensor xc = x.to_dtype(DType::F32).contiguous();
    const std::vector<float> h = xc.to_vector<float>();
    const int64_t n = x.dim(-1), rows = x.numel() / n;
    const bool bf = x.dtype() == DType::BF16;
    const std::vector<float> y = x.softmax().to_dtype(DType::F32).to_vector<float>();
    const std::vector<float> ly = x.log_softmax().to_dtype(DType::F32).to_vector<float>();
    for (int64_t r = 0; r < rows; ++r) {
      const float* p = h.data() + r * n;
      double m = -kInf, sum = 0;
      for (int64_t i = 0; i < n; ++i) m = std::max<double>(m, p[i]);
      for (int64_t i = 0; i < n; ++i) sum += std::exp(p[i] - m);
      for (int64_t i = 0; i < n; i += 7) {
        const size_t k = static_cast<size_t>(r * n + i);
        const double e = std::exp(p[i] - m) / sum, l = p[i] - m - std::log(sum);
        ASSERT_NEAR(y[k], e, (bf ? 8e-3 : 2e-5) * e + 1e-30) << r << " " << i;
        ASSERT_NEAR(ly[k], l, bf ? 0.05 + 8e-3 * std::abs(l) : 2e-4) << r << " " << i;
      }
    }
  };
  const int64_t v = 128256;
  check(Tensor::rand_uniform({1, v}, DType::F32, -8, 8, d), "one row");
  check(Tensor::rand_uniform({3, 5, 40000}, DType::F32, -8, 8, d), "kept dims");
  check(Tensor::rand_uniform({2, 40001}, DType::F32, -8, 8, d).narrow(1, 1, 40000), "narrowed, misaligned");
  check(Tensor::rand_uniform({20000, 3}, DType::F32, -8, 8, d).t(), "transposed");
  check(Tensor::rand_uniform({2, 50000}, DType::BF16, -8, 8, d), "bf16");
  check(Tensor::rand_uniform({2, 50000}, DType::F64, -8, 8, d), "f64");
  for (int64_t rows : {64, 131, 132, 133, 300})
    check(Tensor::rand_uniform({rows, 20000}, DType::F32, -8, 8, d), "rows");
  check(Tensor::rand_uniform({200, 100000}, DType::F32, -8, 8, d), "rows too long to hold");
  // The first 60000 of each row -inf: whole chunks of nothing beside chunks of values.
  std::vector<float> h(static_cast<size_t>(2 * v));
  for (size_t i = 0; i < h.size(); ++i) h[i] = i % static_cast<size_t>(v) < 60000 ? -kInf : static_cast<float>(i % 13);
  const Tensor x = f32(h, {2, v}, d);
  const std::vector<float> y = x.softmax().to_vector<float>();
  double sum = 0;
  for (int64_t i = 60000; i < v; ++i) sum += std::exp(static_cast<double>(i % 13) - 12);
  for (int64_t i = 0; i < v; i += 11) {
    const double want = i < 60000 ? 0.0 : std::exp(static_cast<double>(i % 13) - 12) / sum;
    ASSERT_NEAR(y[static_cast<size_t>(i)], want, 2e-5 * want) << i;
  }
}

// rms_norm (weight), layer_norm (weight and bias) and softmax on row lengths around the GPU's light
// rows (Note [GPU light rows]: up to 512 16-byte vectors, softmax and layer_norm only up to a
// warp's), in f32 and bf16, against a double reference on the rounded inputs; a row count that
// leaves the last block part full, a weight with stride 2 (not vectors: the held kernel), and a
// NaN in a short softmax row.
TEST_P(Reduce, NormsAroundTheLightRowLimits) {
  const Device d = GetParam();
  const int64_t rows = 37;
  for (const DType dt : {DType::F32, DType::BF16}) {
    const bool bf = dt == DType::BF16;
    const double tol = bf ? 8e-3 : 2e-5;
    for (const int64_t n : {8, 64, 128, 256, 264, 2048, 4096, 4104}) {
      for (const bool strided_weight : {false, true}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n) + (strided_weight ? " strided w" : ""));
        const Tensor x = Tensor::rand_uniform({rows, n}, dt, -3, 3, d);
        const Tensor w = strided_weight ? Tensor::rand_uniform({n, 2}, dt, 0.5, 1.5, d).select(1, 0)
                                        : Tensor::rand_uniform({n}, dt, 0.5, 1.5, d);
        const Tensor b = Tensor::rand_uniform({n}, dt, -1, 1, d);
        const auto host = [](const Tensor& t) { return t.to_dtype(DType::F32).contiguous().to_vector<float>(); };
        const std::vector<float> h = host(x), hw = host(w), hb = host(b);
        const std::vector<float> rn = host(x.rms_norm(w, 1e-5)), ln = host(x.layer_norm(w, b, 1e-5));
        const std::vector<float> sm = host(x.softmax());
        for (int64_t r = 0; r < rows; ++r) {
          const float* p = h.data() + r * n;
          double sq = 0, mean = 0, m = -kInf, z = 0, var = 0;
          for (int64_t i = 0; i < n; ++i) {
            sq += static_cast<double>(p[i]) * p[i];
            mean += p[i];
            m = std::max<double>(m, p[i]);
          }
          mean /= static_cast<double>(n);
          for (int64_t i = 0; i < n; ++i) {
            var += (p[i] - mean) * (p[i] - mean);
            z += std::exp(p[i] - m);
          }
          var /= static_cast<double>(n);
          for (int64_t i = 0; i < n; ++i) {
            const size_t k = static_cast<size_t>(r * n + i), j = static_cast<size_t>(i);
            const double want_rn = p[i] / std::sqrt(sq / static_cast<double>(n) + 1e-5) * hw[j];
            const double want_ln = (p[i] - mean) / std::sqrt(var + 1e-5) * hw[j] + hb[j];
            const double want_sm = std::exp(p[i] - m) / z;
            ASSERT_NEAR(rn[k], want_rn, tol * (std::abs(want_rn) + 1e-2)) << r << " " << i;
            ASSERT_NEAR(ln[k], want_ln, tol * (std::abs(want_ln) + 1e-1)) << r << " " << i;
            ASSERT_NEAR(sm[k], want_sm, tol * want_sm + 1e-30) << r << " " << i;
          }
        }
      }
    }
  }
  // A NaN poisons its short row only.
  std::vector<float> h(static_cast<size_t>(4 * 64));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i % 7);
  h[70] = kNaNf;
  const std::vector<float> y = f32(h, {4, 64}, d).softmax().to_vector<float>();
  for (size_t i = 0; i < y.size(); ++i) EXPECT_EQ(std::isnan(y[i]), i / 64 == 1) << i;
}

WICK_INSTANTIATE_DEVICES(Reduce);

// The CPU's softmax of fewer rows than threads runs each row's chunks in parallel (Note [Softmax
// of few long rows]); the same rows among as many rows as threads run one row per thread. Both
// give the same bits, NaN, -inf and +inf rows included.
TEST(CpuSoftmax, FewLongRowsGiveTheBitsOfOneRowPerThread) {
  const Device cpu = Device::cpu();
  for (int64_t n : {32768, 40001, 128256}) {
    SCOPED_TRACE(n);
    Tensor few = Tensor::rand_uniform({3, n}, DType::F32, -8, 8, cpu);
    std::vector<float> h = few.to_vector<float>();
    h[static_cast<size_t>(n + 5)] = kNaNf;
    for (int64_t i = 0; i < n; ++i) h[static_cast<size_t>(2 * n + i)] = i < n / 2 ? -kInf : (i % 5 ? 1.f : kInf);
    few = f32(h, {3, n}, cpu);
    // The same three rows, repeated to 256 rows: one row per thread.
    const Tensor many = few.unsqueeze(0).broadcast_as({86, 3, n}).contiguous().reshape({258, n});
    for (bool log : {false, true}) {
      const Tensor b = log ? many.log_softmax() : many.softmax();
      for (int64_t r = 0; r < 3; ++r) {  // one row (fewer than any team of threads), then all three
        const Tensor x = r < 2 ? few.narrow(0, r, 1) : few;
        const Tensor a = log ? x.log_softmax() : x.softmax();
        EXPECT_EQ(testing::bytes_of(a), testing::bytes_of(b.narrow(0, r < 2 ? r : 0, x.dim(0)))) << log << " " << r;
      }
    }
  }
}

// Frees a [rows, n] block of 171s, which the next output of that size and dtype is likely to get
// (the CPU allocator keeps freed blocks): an element an op fails to write is then wrong, not the
// value an earlier run of the same op left there.
void poison_next_output(int64_t rows, int64_t n, DType dt) { (void)Tensor::full({rows, n}, 171, dt); }

// The same [rows, n] values in several layouts: contiguous, narrowed (a misaligned start and a row
// stride past n), with a stride of 2 along the rows, rows with unit stride between them (a
// transposed copy), and, for 6 rows, kept dims [2, 3] whose strides are permuted.
std::vector<std::pair<std::string, Tensor>> row_layouts(const Tensor& x) {
  const int64_t rows = x.dim(0), n = x.dim(1);
  const Tensor pad = x.narrow(1, 0, 1);
  std::vector<std::pair<std::string, Tensor>> v = {{"contiguous", x},
                                                   {"narrowed", cat({pad, x, pad, pad}, 1).narrow(1, 1, n)},
                                                   {"stride 2", cat({x.unsqueeze(2), x.unsqueeze(2)}, 2).select(2, 1)},
                                                   {"transposed", x.t().contiguous().t()}};
  if (rows == 6) v.emplace_back("permuted", x.reshape({2, 3, n}).permute({1, 0, 2}).contiguous().permute({1, 0, 2}));
  return v;
}

// Short softmax rows run pass by pass over groups of up to 16 rows (Note [Softmax row groups]):
// against a double reference, and every row bit for bit as the same row alone (a group of one), for
// lengths that make groups of 16, of a few and of one, row counts that leave a part group, at 1 and
// 3 threads, in every row layout, with rows holding a NaN, a +inf, only -inf, or -inf among values.
TEST(CpuSoftmax, ShortRowGroupsAgainstF64AndTheRowsAlone) {
  const Device cpu = Device::cpu();
  const int saved = omp_get_max_threads();
  for (DType dt : {DType::F32, DType::BF16, DType::F16, DType::F64}) {
    for (int64_t n : {1, 3, 17, 128, 129, 1000, 2049}) {
      for (int64_t rows : {6, 35}) {
        std::vector<float> h = Tensor::rand_uniform({rows, n}, DType::F32, -8, 8, cpu).to_vector<float>();
        auto at = [&](int64_t r, int64_t i) -> float& { return h[static_cast<size_t>(r * n + i)]; };
        at(1, n / 2) = kNaNf;
        at(2, n - 1) = kInf;
        for (int64_t i = 0; i < n; ++i) at(3, i) = -kInf;
        for (int64_t i = 1; i < n; i += 2) at(4, i) = -kInf;
        const Tensor x = f32(h, {rows, n}, cpu).to_dtype(dt);
        const std::vector<double> xv = x.to_dtype(DType::F64).to_vector<double>();
        const double rel = dt == DType::F64 ? 1e-13 : dt == DType::F32 ? 2e-6 : dt == DType::F16 ? 2e-3 : 8e-3;
        const double abs = dt == DType::F16 ? 1e-7 : 1e-300;  // f16 results below 6e-8 are 0 or subnormal
        for (bool log : {false, true}) {
          std::vector<std::vector<unsigned char>> alone;
          for (int64_t r = 0; r < rows; ++r) {
            const Tensor row = x.narrow(0, r, 1);
            alone.push_back(testing::bytes_of(log ? row.log_softmax() : row.softmax()));
          }
          for (int threads : {1, 3}) {
            omp_set_num_threads(threads);
            for (const auto& [name, v] : row_layouts(x)) {
              SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n) + " rows " + std::to_string(rows) +
                           " " + name + (log ? " log" : "") + " threads " + std::to_string(threads));
              poison_next_output(rows, n, dt);
              const Tensor y = (log ? v.log_softmax() : v.softmax()).reshape({rows, n});
              const std::vector<double> yv = y.to_dtype(DType::F64).to_vector<double>();
              for (int64_t r = 0; r < rows; ++r) {
                ASSERT_EQ(testing::bytes_of(y.narrow(0, r, 1)), alone[static_cast<size_t>(r)]) << "row " << r;
                const double* p = xv.data() + r * n;
                double m = -kInf, sum = 0;
                bool nan = false;
                for (int64_t i = 0; i < n; ++i) {
                  nan |= std::isnan(p[i]) || p[i] == kInf;
                  m = std::max(m, p[i]);
                }
                nan |= m == -kInf;  // a row of only -inf
                for (int64_t i = 0; i < n && !nan; ++i) sum += std::exp(p[i] - m);
                for (int64_t i = 0; i < n; ++i) {
                  const double got = yv[static_cast<size_t>(r * n + i)];
                  if (nan) {
                    ASSERT_TRUE(std::isnan(got)) << r << " " << i;
                    continue;
                  }
                  const double e = std::exp(p[i] - m) / sum, l = p[i] - m - std::log(sum);
                  if (log && p[i] == -kInf) {
                    ASSERT_EQ(got, -kInf) << r << " " << i;
                  } else if (log) {
                    ASSERT_NEAR(got, l, 4 * rel * (std::abs(l) + 1)) << r << " " << i;
                  } else {
                    ASSERT_NEAR(got, e, rel * e + abs) << r << " " << i;
                  }
                }
              }
            }
          }
          omp_set_num_threads(saved);
        }
      }
    }
  }
}

// A cumsum of fewer rows than threads cuts the rows into chunks scanned in parallel (Note [Parallel
// cumsum]). At 1 thread (the serial scan), 2, 3 and 16 (up to 12 chunks a row), rows with uneven
// chunks (n prime), exactly two least chunks long, and one element short of splitting: every
// element against a long double reference, integers exactly with wrap-around, in every row layout,
// and rows with a NaN and infinities part way along.
TEST(CpuCumsum, FewLongRowsInChunksAgainstAWiderReference) {
  const Device cpu = Device::cpu();
  const int saved = omp_get_max_threads();
  for (int64_t n : {16383, 16384, 100003}) {
    for (int64_t rows : {1, 3, 6}) {
      std::vector<float> h = Tensor::rand_uniform({rows, n}, DType::F32, -1, 1, cpu).to_vector<float>();
      if (rows > 1) {  // the last row: +inf, then -inf (NaN from there on) in later chunks
        h[static_cast<size_t>((rows - 1) * n + n / 3)] = kInf;
        h[static_cast<size_t>((rows - 1) * n + 2 * n / 3)] = -kInf;
      }
      if (rows > 2) h[static_cast<size_t>(n + 3 * n / 4)] = kNaNf;  // row 1: a NaN in its last chunk
      std::vector<int64_t> w(h.size());
      std::vector<uint8_t> u(h.size());
      for (size_t k = 0; k < h.size(); ++k) {
        w[k] = static_cast<int64_t>((k + 1) * 0x9E3779B97F4A7C15ull);  // wraps around many times
        u[k] = static_cast<uint8_t>(k * 31 + 7);
      }
      for (DType dt : {DType::F32, DType::F64, DType::BF16, DType::I64, DType::U8}) {
        const bool integral = dt == DType::I64 || dt == DType::U8;
        const Tensor x = dt == DType::I64  ? Tensor::from_vector(w, {rows, n}, cpu)
                         : dt == DType::U8 ? Tensor::from_vector(u, {rows, n}, cpu)
                                           : f32(h, {rows, n}, cpu).to_dtype(dt);
        // The reference: exact running sums of the integers (mod 2^64), the floats' in long double,
        // with the running sum of magnitudes for the accumulators' error.
        const std::vector<double> xv = integral ? std::vector<double>() : x.to_dtype(DType::F64).to_vector<double>();
        std::vector<long double> ref(h.size()), mag(h.size());
        std::vector<uint64_t> iref(h.size());
        for (int64_t r = 0; r < rows; ++r) {
          long double acc = 0, m = 0;
          uint64_t iacc = 0;
          for (int64_t i = 0; i < n; ++i) {
            const size_t k = static_cast<size_t>(r * n + i);
            if (integral) {
              iacc += dt == DType::I64 ? static_cast<uint64_t>(w[k]) : u[k];
              iref[k] = dt == DType::I64 ? iacc : iacc & 0xff;
            } else {
              acc += xv[k];
              m += std::isfinite(xv[k]) ? std::abs(xv[k]) : 0;
              ref[k] = acc;
              mag[k] = m;
            }
          }
        }
        // Accumulator error allowed per unit of the magnitudes' sum (f64 running sums for f32 and
        // f64, f32 for bf16: far above what they make, far below a misplaced chunk start), and the
        // result's own rounding.
        const double acc_err = dt == DType::BF16 ? 1e-6 : 1e-12;
        const double round = dt == DType::BF16 ? 4e-3 : dt == DType::F32 ? 6e-8 : 2e-16;
        for (int threads : {1, 2, 3, 16}) {
          // 16 threads (up to 12 chunks a row) for two dtypes: teams larger than the machine are slow.
          if (threads == 16 && dt != DType::F32 && dt != DType::I64) continue;
          omp_set_num_threads(threads);
          for (const auto& [name, v] : row_layouts(x)) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + " n " + std::to_string(n) + " rows " + std::to_string(rows) +
                         " " + name + " threads " + std::to_string(threads));
            poison_next_output(rows, n, dt);
            const Tensor y = v.cumsum().reshape({rows, n});
            if (integral) {  // u8 results widen exactly
              const std::vector<int64_t> yv = y.to_dtype(DType::I64).to_vector<int64_t>();
              for (size_t k = 0; k < yv.size(); ++k) ASSERT_EQ(static_cast<uint64_t>(yv[k]), iref[k]) << k;
              continue;
            }
            const std::vector<double> yv = y.to_dtype(DType::F64).to_vector<double>();
            for (size_t k = 0; k < yv.size(); ++k) {
              const double want = static_cast<double>(ref[k]);
              if (std::isnan(want)) {
                ASSERT_TRUE(std::isnan(yv[k])) << k;
              } else if (std::isinf(want)) {
                ASSERT_EQ(yv[k], want) << k;
              } else {
                ASSERT_NEAR(yv[k], want, round * std::abs(want) + acc_err * static_cast<double>(mag[k])) << k;
              }
            }
          }
        }
        omp_set_num_threads(saved);
      }
    }
  }
}

// simd.h's min_f32 / max_f32 on every level this processor runs, against a scalar loop: every
// length up to a few unrolled blocks, a NaN at every position, infinities, and the empty row.
TEST(CpuMinMaxKernels, EveryLevelLengthAndNaNPosition) {
  namespace simd = cpu::simd;
  std::vector<float> x(1100);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 2003) * 0.25f - 250.f;
  for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    SCOPED_TRACE(simd::isa_name(isa));
    const simd::Kernels& k = simd::kernels(isa);
    EXPECT_EQ(k.max_f32(x.data(), 0), -kInf);
    EXPECT_EQ(k.min_f32(x.data(), 0), kInf);
    for (int64_t n = 1; n <= static_cast<int64_t>(x.size()); n += n < 300 ? 1 : 37) {
      for (int64_t off : {int64_t{0}, int64_t{1}}) {
        if (off + n > static_cast<int64_t>(x.size())) continue;
        const float* p = x.data() + off;
        const float want_max = *std::max_element(p, p + n), want_min = *std::min_element(p, p + n);
        ASSERT_EQ(k.max_f32(p, n), want_max) << n << " " << off;
        ASSERT_EQ(k.min_f32(p, n), want_min) << n << " " << off;
      }
    }
    for (int64_t n : {1, 2, 5, 16, 17, 63, 64, 65, 127, 128, 200}) {
      std::vector<float> z(x.begin(), x.begin() + n);
      for (int64_t i = 0; i < n; ++i) {
        z[static_cast<size_t>(i)] = kNaNf;
        ASSERT_TRUE(std::isnan(k.max_f32(z.data(), n))) << n << " " << i;
        ASSERT_TRUE(std::isnan(k.min_f32(z.data(), n))) << n << " " << i;
        z[static_cast<size_t>(i)] = kInf;
        ASSERT_EQ(k.max_f32(z.data(), n), kInf) << n << " " << i;
        z[static_cast<size_t>(i)] = -kInf;
        ASSERT_EQ(k.min_f32(z.data(), n), -kInf) << n << " " << i;
        z[static_cast<size_t>(i)] = x[static_cast<size_t>(i)];
      }
    }
  }
}

}  // namespace
}  // namespace wick
