// The quantized mat-vec kernels of src/cpu/simd_quant.h on every level this processor runs,
// against an f64 reference over the scalar codecs' values (Codec<F>::dequantize_sub).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/simd.h"
#include "cpu/simd_quant.h"
#include "quant/codecs.h"
#include "wick/qformat.h"

namespace {

namespace simd = wick::cpu::simd;
using wick::QFormat;

// The formats with kernels above the baseline (every format).
constexpr QFormat kFormats[] = {QFormat::Q8_0,   QFormat::Q4_0,   QFormat::Q4_K, QFormat::Q5_K, QFormat::Q6_K,
                                QFormat::IQ4_XS, QFormat::MXFP4,  QFormat::Q4_1, QFormat::Q5_0, QFormat::Q5_1,
                                QFormat::Q8_1,   QFormat::IQ4_NL, QFormat::Q2_K, QFormat::Q3_K, QFormat::Q8_K};

std::vector<simd::Isa> levels() {
  std::vector<simd::Isa> v;
  for (int i = 0; i <= static_cast<int>(simd::detected()); ++i) v.push_back(static_cast<simd::Isa>(i));
  return v;
}

std::string where(QFormat f, simd::Isa isa) {
  return std::string(wick::qformat_name(f)) + " at " + simd::isa_name(isa);
}

// n rows of k elements in format f, rows `stride` bytes apart (the bytes past each row's blocks
// filled with 0xa5), quantized from random values whose magnitude varies from block to block.
std::vector<uint8_t> make_weights(QFormat f, int64_t n, int64_t k, int64_t stride, std::mt19937& rng) {
  const auto& info = wick::qformat_info(f);
  std::vector<uint8_t> w(static_cast<size_t>(n * stride), 0xa5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-6, 6);
  std::vector<float> vals(static_cast<size_t>(info.block_elems));
  wick::quant::dispatch_qformat(f, [&]<QFormat F>() {
    using C = wick::quant::Codec<F>;
    for (int64_t j = 0; j < n; ++j)
      for (int64_t b = 0; b < k / C::kElems; ++b) {
        const float scale = std::ldexp(1.0f, expo(rng));
        const bool shifted = rng() % 4 == 0;  // some blocks all of one sign (the min / offset terms)
        for (float& v : vals) v = scale * (shifted ? std::fabs(normal(rng)) + 0.5f : normal(rng));
        C::quantize(vals.data(), w.data() + j * stride + b * C::kBytes);
      }
  });
  return w;
}

// Row j of w decoded by the scalar codec.
std::vector<float> decode_row(QFormat f, const uint8_t* row, int64_t k) {
  std::vector<float> y(static_cast<size_t>(k));
  wick::quant::dispatch_qformat(f, [&]<QFormat F>() {
    using C = wick::quant::Codec<F>;
    for (int64_t b = 0; b < k / C::kElems; ++b)
      for (int s = 0; s < C::kElems / 32; ++s)
        C::dequantize_sub(row + b * C::kBytes, s, y.data() + b * C::kElems + 32 * s);
  });
  return y;
}

TEST(QuantSimd, KernelsPerLevel) {
  for (simd::Isa isa : levels())
    for (QFormat f : kFormats) {
      const bool expected = isa != simd::Isa::Base;
      EXPECT_EQ(simd::qmatvec_kernel(f, isa) != nullptr, expected) << where(f, isa);
    }
  if (simd::detected() < simd::Isa::Avx512) {
    EXPECT_THROW(simd::qmatvec_kernel(QFormat::Q8_0, simd::Isa::Avx512), std::exception);
  }
}

// A case: n rows of W (rows padded), x of kQMatVecMaxRows rows (strided) and the f64 reference of
// every output, sum_e x[i][e] * w[j][e] over the codec's values, with sum_e |x[i][e] w[j][e]|.
struct Case {
  QFormat f;
  int64_t n, k, stride, ldx;
  std::vector<uint8_t> w;
  std::vector<float> x;
  std::vector<double> exact, mag;  // [i * n + j]
};

Case make_case(QFormat f, int64_t k, std::mt19937& rng) {
  Case c{f, 41, k, 0, k + 5, {}, {}, {}, {}};
  const auto& info = wick::qformat_info(f);
  c.stride = k / info.block_elems * info.block_bytes + 37;
  c.w = make_weights(f, c.n, k, c.stride, rng);
  const int64_t m = simd::kQMatVecMaxRows;
  c.x.resize(static_cast<size_t>(m * c.ldx));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : c.x) v = normal(rng);
  c.exact.assign(static_cast<size_t>(m * c.n), 0.0);
  c.mag.assign(static_cast<size_t>(m * c.n), 0.0);
  for (int64_t j = 0; j < c.n; ++j) {
    const std::vector<float> wr = decode_row(f, c.w.data() + j * c.stride, k);
    for (int64_t i = 0; i < m; ++i) {
      double e = 0, a = 0;
      for (int64_t l = 0; l < k; ++l) {
        const double p = static_cast<double>(c.x[static_cast<size_t>(i * c.ldx + l)]) * wr[static_cast<size_t>(l)];
        e += p;
        a += std::fabs(p);
      }
      c.exact[static_cast<size_t>(i * c.n + j)] = e;
      c.mag[static_cast<size_t>(i * c.n + j)] = a;
    }
  }
  return c;
}

// The kernel on rows [j0, j1) of the case's W and its first m rows of x, out strided: within f32
// accumulation error (k 2^-24 sum |x w|) of the reference; the outputs outside rows [0, m) x
// columns [j0, j1) keep their sentinel.
void check_matvec(const Case& c, simd::Isa isa, int64_t m, int64_t j0, int64_t j1) {
  const simd::QMatVecFn fn = simd::qmatvec_kernel(c.f, isa);
  ASSERT_NE(fn, nullptr) << where(c.f, isa);
  const int64_t ldo = c.n + 7;
  const float sentinel = -1234.5f;
  std::vector<float> out(static_cast<size_t>((m + 1) * ldo), sentinel);
  fn(c.w.data(), c.stride, j0, j1, c.k, c.x.data(), c.ldx, m, out.data(), ldo);
  for (int64_t i = 0; i < m + 1; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      const float got = out[static_cast<size_t>(i * ldo + j)];
      if (i >= m || j < j0 || j >= j1) {
        ASSERT_EQ(got, sentinel) << where(c.f, isa) << " wrote outside: i " << i << " j " << j;
        continue;
      }
      const size_t r = static_cast<size_t>(i * c.n + j);
      const double tol = static_cast<double>(c.k) * std::ldexp(1.0, -24) * c.mag[r] + 1e-30;
      ASSERT_NEAR(got, c.exact[r], tol) << where(c.f, isa) << " k " << c.k << " m " << m << " i " << i << " j " << j;
    }
}

TEST(QuantSimd, MatchesScalarCodecs) {
  std::mt19937 rng(11);
  for (QFormat f : kFormats)
    for (int64_t k : {int64_t{256}, int64_t{4096 + 256}}) {
      const Case c = make_case(f, k, rng);
      for (simd::Isa isa : levels()) {
        if (isa == simd::Isa::Base) continue;
        for (int64_t m : {1, 2, 3, 8, 16}) check_matvec(c, isa, m, 3, 38);
      }
    }
}

// Every row count 1-16 (tiles padded with zero rows of x, passes over the rows of x at the levels
// whose tiles stop below 16), odd row ranges, and k of one chunk and of several.
TEST(QuantSimd, EveryRowCount) {
  std::mt19937 rng(12);
  for (QFormat f : {QFormat::Q8_0, QFormat::Q4_K, QFormat::IQ4_XS})
    for (int64_t k : {int64_t{256}, int64_t{8192 + 256}}) {
      const Case c = make_case(f, k, rng);
      for (simd::Isa isa : levels()) {
        if (isa == simd::Isa::Base) continue;
        for (int64_t m = 1; m <= simd::kQMatVecMaxRows; ++m) check_matvec(c, isa, m, m % 5, c.n - m % 3);
        check_matvec(c, isa, 4, 7, 8);    // one row
        check_matvec(c, isa, 16, 9, 16);  // fewer rows than a tile's group
        check_matvec(c, isa, 3, 5, 5);    // none
      }
    }
}

// x one-hot in each row: every output is one decoded weight, bit for bit the codec's value.
TEST(QuantSimd, DecodesLikeTheCodecs) {
  std::mt19937 rng(13);
  const int64_t k = 256, n = 9, m = 16;
  for (simd::Isa isa : levels()) {
    if (isa == simd::Isa::Base) continue;
    for (QFormat f : kFormats) {
      const simd::QMatVecFn fn = simd::qmatvec_kernel(f, isa);
      const auto& info = wick::qformat_info(f);
      const int64_t stride = k / info.block_elems * info.block_bytes;
      const std::vector<uint8_t> w = make_weights(f, n, k, stride, rng);
      std::vector<std::vector<float>> rows;
      for (int64_t j = 0; j < n; ++j) rows.push_back(decode_row(f, w.data() + j * stride, k));
      for (int64_t e0 = 0; e0 < k; e0 += m) {
        std::vector<float> x(static_cast<size_t>(m * k), 0.0f), out(static_cast<size_t>(m * n));
        for (int64_t i = 0; i < m; ++i) x[static_cast<size_t>(i * k + e0 + i)] = 1.0f;
        fn(w.data(), stride, 0, n, k, x.data(), k, m, out.data(), n);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(out[static_cast<size_t>(i * n + j)], rows[static_cast<size_t>(j)][static_cast<size_t>(e0 + i)])
                << where(f, isa) << " element " << e0 + i << " row " << j;
      }
    }
  }
}

// The entry point: the active level's kernel, or false with nothing written (m too large, or no
// kernel at the baseline).
TEST(QuantSimd, EntryPoint) {
  std::mt19937 rng(14);
  const int64_t k = 256, n = 4;
  const std::vector<uint8_t> w = make_weights(QFormat::Q4_K, n, k, 144, rng);
  std::vector<float> x(static_cast<size_t>(17 * k), 0.5f), out(17 * n, -7.0f);
  EXPECT_FALSE(simd::qmatvec_f32(QFormat::Q4_K, w.data(), 144, 0, n, k, x.data(), k, 17, out.data(), n));
  for (float v : out) EXPECT_EQ(v, -7.0f);
  const bool has = simd::qmatvec_kernel(QFormat::Q4_K, simd::active()) != nullptr;
  EXPECT_EQ(simd::qmatvec_f32(QFormat::Q4_K, w.data(), 144, 0, n, k, x.data(), k, 2, out.data(), n), has);
  if (has) {
    for (int64_t j = 0; j < n; ++j) {
      const std::vector<float> wr = decode_row(QFormat::Q4_K, w.data() + j * 144, k);
      double exact = 0;
      for (float v : wr) exact += 0.5 * v;
      EXPECT_NEAR(out[static_cast<size_t>(j)], exact, 1e-4 * (1 + std::fabs(exact)));
    }
  }
  // k == 0: zeros.
  std::vector<float> z(8, -7.0f);
  if (has) {
    EXPECT_TRUE(simd::qmatvec_f32(QFormat::Q4_K, w.data(), 144, 0, 4, 0, x.data(), k, 2, z.data(), 4));
    for (float v : z) EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
