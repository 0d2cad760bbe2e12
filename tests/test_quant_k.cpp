// The super-block codecs (src/quant/codec_k.h) against the test vectors of
// scripts/quantref/kquants.py: tests/data/quant/input.f32 (16 rows of 256 f32), NAME.q (the bytes of
// ggml's quantize_row_NAME_ref for each row) and NAME.deq.f32 (the values of dequantize_row_NAME).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "quant/codec_k.h"
#include "wick/qformat.h"

#ifndef WICK_TEST_DATA
#define WICK_TEST_DATA "tests/data"
#endif

namespace {

using wick::QFormat;
using wick::quant::Codec;

constexpr int kRows = 16;
constexpr int kCols = 256;

std::vector<uint8_t> read_bytes(const std::string& name) {
  const std::string path = std::string(WICK_TEST_DATA) + "/quant/" + name;
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    ADD_FAILURE() << "cannot open " << path;
    return out;
  }
  uint8_t buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

// Little-endian f32 file -> bit patterns.
std::vector<uint32_t> read_f32_bits(const std::string& name) {
  const std::vector<uint8_t> bytes = read_bytes(name);
  std::vector<uint32_t> out(bytes.size() / 4);
  for (size_t i = 0; i < out.size(); ++i) out[i] = wick::quant::load_u32(&bytes[4 * i]);
  return out;
}

std::vector<float> read_f32(const std::string& name) {
  const std::vector<uint32_t> bits = read_f32_bits(name);
  std::vector<float> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = wick::detail::f32_from_bits(bits[i]);
  return out;
}

std::string format_name(QFormat f) { return std::string(wick::qformat_name(f)); }

// fn.template operator()<F>() for each format of codec_k.h.
template <class Fn>
void for_each_k_format(Fn&& fn) {
  fn.template operator()<QFormat::Q2_K>();
  fn.template operator()<QFormat::Q3_K>();
  fn.template operator()<QFormat::Q4_K>();
  fn.template operator()<QFormat::Q5_K>();
  fn.template operator()<QFormat::Q6_K>();
  fn.template operator()<QFormat::Q8_K>();
  fn.template operator()<QFormat::IQ4_XS>();
}

// The sub-blocks decoded in a scrambled order, each into its own slot: a sub decodes on its own.
template <QFormat F>
void dequantize_block(const uint8_t* blk, float* y) {
  for (int k = 0; k < 8; ++k) {
    const int sub = (5 * k + 3) % 8;
    Codec<F>::dequantize_sub(blk, sub, y + 32 * sub);
  }
}

TEST(QuantK, FormatTable) {
  for_each_k_format([]<QFormat F>() {
    SCOPED_TRACE(format_name(F));
    EXPECT_EQ(Codec<F>::kElems, wick::qformat_info(F).block_elems);
    EXPECT_EQ(Codec<F>::kBytes, wick::qformat_info(F).block_bytes);
    EXPECT_EQ(Codec<F>::kElems, kCols);
  });
}

TEST(QuantK, NearestIntRoundsHalfToEven) {
  using wick::quant::kq::nearest_int;
  EXPECT_EQ(nearest_int(0.5f), 0);
  EXPECT_EQ(nearest_int(1.5f), 2);
  EXPECT_EQ(nearest_int(2.5f), 2);
  EXPECT_EQ(nearest_int(-2.5f), -2);
  EXPECT_EQ(nearest_int(-3.5f), -4);
  EXPECT_EQ(nearest_int(2.49999976f), 2);
  EXPECT_EQ(nearest_int(-0.0f), 0);
  EXPECT_EQ(nearest_int(4194303.f), 4194303);
  EXPECT_EQ(nearest_int(-4194303.f), -4194303);
}

TEST(QuantK, QuantizeMatchesReferenceBytes) {
  const std::vector<float> x = read_f32("input.f32");
  ASSERT_EQ(x.size(), size_t{kRows * kCols});
  for_each_k_format([&]<QFormat F>() {
    const std::string name = format_name(F);
    const std::vector<uint8_t> expected = read_bytes(name + ".q");
    ASSERT_EQ(expected.size(), size_t{kRows * Codec<F>::kBytes}) << name;
    for (int row = 0; row < kRows; ++row) {
      uint8_t got[Codec<F>::kBytes];
      Codec<F>::quantize(&x[row * kCols], got);
      const uint8_t* want = &expected[row * Codec<F>::kBytes];
      for (int i = 0; i < Codec<F>::kBytes; ++i) {
        if (got[i] != want[i]) {
          ADD_FAILURE() << name << " row " << row << " byte " << i << ": expected " << int{want[i]} << ", got "
                        << int{got[i]};
          break;  // the first differing byte of each row
        }
      }
    }
  });
}

TEST(QuantK, DequantizeMatchesReferenceValues) {
  for_each_k_format([&]<QFormat F>() {
    const std::string name = format_name(F);
    const std::vector<uint8_t> q = read_bytes(name + ".q");
    const std::vector<uint32_t> expected = read_f32_bits(name + ".deq.f32");
    ASSERT_EQ(q.size(), size_t{kRows * Codec<F>::kBytes}) << name;
    ASSERT_EQ(expected.size(), size_t{kRows * kCols}) << name;
    for (int row = 0; row < kRows; ++row) {
      float y[kCols];
      dequantize_block<F>(&q[row * Codec<F>::kBytes], y);
      for (int i = 0; i < kCols; ++i) {
        const uint32_t got = wick::detail::f32_bits(y[i]);
        const uint32_t want = expected[row * kCols + i];
        if (got != want) {
          ADD_FAILURE() << name << " row " << row << " element " << i << ": expected bits 0x" << std::hex << want
                        << ", got 0x" << got << std::dec << " (" << y[i] << ")";
          break;
        }
      }
    }
  });
}

// Limits of the relative RMS error on Gaussian data: about 10% above the error of uniform
// quantization with each format's step (e.g. Q4_K: 16 levels over the ~4.2 sigma range of 32
// elements, step / sqrt(12) ~ 0.07 sigma).
double round_trip_limit(QFormat f) {
  switch (f) {
    case QFormat::Q2_K:
      return 0.33;
    case QFormat::Q3_K:
      return 0.17;
    case QFormat::Q4_K:
      return 0.08;
    case QFormat::Q5_K:
      return 0.04;
    case QFormat::Q6_K:
      return 0.02;
    case QFormat::Q8_K:
      return 0.008;
    case QFormat::IQ4_XS:
      return 0.085;
    default:
      return 0;
  }
}

// Gaussian blocks at three scales, each scale's relative RMS error below the format's limit.
TEST(QuantK, RoundTripError) {
  for_each_k_format([]<QFormat F>() {
    const double limit = round_trip_limit(F);
    ASSERT_GT(limit, 0) << format_name(F);
    for (const float sigma : {1e-2f, 1.f, 1e2f}) {
      std::mt19937 rng(20260);
      std::normal_distribution<float> normal(0.f, sigma);
      double err2 = 0, sum2 = 0;
      for (int b = 0; b < 128; ++b) {
        float x[kCols], y[kCols];
        uint8_t q[Codec<F>::kBytes];
        for (float& v : x) v = normal(rng);
        Codec<F>::quantize(x, q);
        dequantize_block<F>(q, y);
        for (int i = 0; i < kCols; ++i) {
          ASSERT_TRUE(std::isfinite(y[i])) << format_name(F);
          err2 += double(y[i] - x[i]) * double(y[i] - x[i]);
          sum2 += double(x[i]) * double(x[i]);
        }
      }
      EXPECT_LT(std::sqrt(err2 / sum2), limit) << format_name(F) << " sigma " << sigma;
    }
  });
}

TEST(QuantK, ZeroBlockDecodesToZero) {
  for_each_k_format([]<QFormat F>() {
    const float x[kCols] = {};
    uint8_t q[Codec<F>::kBytes];
    float y[kCols];
    Codec<F>::quantize(x, q);
    dequantize_block<F>(q, y);
    for (int i = 0; i < kCols; ++i) ASSERT_EQ(y[i], 0.f) << format_name(F) << " element " << i;
  });
}

}  // namespace
