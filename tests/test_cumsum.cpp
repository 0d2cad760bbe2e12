// cumsum: along a leading dim, long rows and views, many kept dims, and the CPU's parallel scan of
// few long rows against a wider reference.
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

#include "reduce_test_util.h"
#include "test_util.h"

namespace wick {
namespace {

using namespace testing;  // wick::testing: the Reduce suite and its helpers

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

}  // namespace
}  // namespace wick
