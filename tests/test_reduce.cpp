// Reductions (sum, mean, min, max, argmin, argmax, ...): errors, NaN and tie rules, empty sets,
// accuracy on long rows, and the sizes and layouts that take the GPU's other paths (what the
// conformance cases do not express). The Reduce suite's instantiation over the devices is here; its
// other tests are in test_softmax_norm.cpp, test_sort.cpp and test_cumsum.cpp.
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
#include "reduce_test_util.h"
#include "test_util.h"

namespace wick {
namespace {

using namespace testing;  // wick::testing: the Reduce suite and its helpers

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

WICK_INSTANTIATE_DEVICES(Reduce);

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
