// softmax, log_softmax and the norms (rms_norm, layer_norm): stability, parameter checks, short
// and long rows on every device, and the CPU's row groups and split rows bit for bit.
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

}  // namespace
}  // namespace wick
