// The 32-element GGML block codecs (src/quant/codec_legacy.h) against the test vectors of
// scripts/quantref/legacy.py (tests/data/quant: input.f32, NAME.q, NAME.deq.f32), plus round-trip
// error bounds, zero blocks, the block sizes and ggml's (x86-64) bytes for non-finite inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "quant/codec_legacy.h"
#include "wick/qformat.h"

#ifndef WICK_TEST_DATA
#define WICK_TEST_DATA "tests/data"
#endif

namespace {

using wick::QFormat;
using wick::quant::Codec;

constexpr int kRows = 16, kCols = 256;

// fn.template operator()<F>() for each format of codec_legacy.h.
template <class Fn>
void for_each_format(Fn&& fn) {
  fn.template operator()<QFormat::Q4_0>();
  fn.template operator()<QFormat::Q4_1>();
  fn.template operator()<QFormat::Q5_0>();
  fn.template operator()<QFormat::Q5_1>();
  fn.template operator()<QFormat::Q8_0>();
  fn.template operator()<QFormat::Q8_1>();
  fn.template operator()<QFormat::IQ4_NL>();
  fn.template operator()<QFormat::MXFP4>();
}

template <QFormat F>
std::string name_of() {
  return std::string(wick::qformat_name(F));
}

std::vector<uint8_t> read_bytes(const std::string& file) {
  const std::string path = std::string(WICK_TEST_DATA) + "/quant/" + file;
  std::vector<uint8_t> out;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.insert(out.end(), buf, buf + n);
  std::fclose(f);
  return out;
}

// Little-endian f32 file contents (the hosts wick runs on are little-endian).
std::vector<float> read_f32(const std::string& file) {
  const std::vector<uint8_t> b = read_bytes(file);
  std::vector<float> out(b.size() / 4);
  if (!out.empty()) std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

bool same_value(float a, float b) { return bits_of(a) == bits_of(b) || (std::isnan(a) && std::isnan(b)); }

std::string hex(const uint8_t* p, int n) {
  std::string s;
  char buf[3];
  for (int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", p[i]);
    s += buf;
  }
  return s;
}

TEST(QuantLegacy, SizesMatchFormatTable) {
  for_each_format([]<QFormat F>() {
    EXPECT_EQ(Codec<F>::kElems, wick::qformat_info(F).block_elems) << name_of<F>();
    EXPECT_EQ(Codec<F>::kBytes, wick::qformat_info(F).block_bytes) << name_of<F>();
    EXPECT_EQ(Codec<F>::kElems, 32) << name_of<F>();
  });
}

TEST(QuantLegacy, QuantizeMatchesVectors) {
  const std::vector<float> x = read_f32("input.f32");
  ASSERT_EQ(x.size(), size_t{kRows * kCols}) << "missing " WICK_TEST_DATA "/quant/input.f32";
  for_each_format([&]<QFormat F>() {
    using C = Codec<F>;
    const std::string name = name_of<F>();
    const std::vector<uint8_t> expected = read_bytes(name + ".q");
    constexpr int kBlocks = kCols / C::kElems;
    ASSERT_EQ(expected.size(), size_t{kRows * kBlocks * C::kBytes}) << "missing or short " << name << ".q";
    int bad_blocks = 0;
    for (int r = 0; r < kRows; ++r) {
      for (int b = 0; b < kBlocks; ++b) {
        uint8_t got[C::kBytes];
        C::quantize(&x[r * kCols + b * C::kElems], got);
        const uint8_t* want = &expected[(r * kBlocks + b) * C::kBytes];
        for (int i = 0; i < C::kBytes; ++i) {
          if (got[i] != want[i]) {
            if (++bad_blocks <= 8) {
              ADD_FAILURE() << name << " row " << r << " block " << b << " byte " << i << ": expected 0x"
                            << hex(want + i, 1) << ", got 0x" << hex(got + i, 1) << " (block expected "
                            << hex(want, C::kBytes) << ", got " << hex(got, C::kBytes) << ")";
            }
            break;
          }
        }
      }
    }
    EXPECT_EQ(bad_blocks, 0) << name << ": blocks whose bytes differ";
  });
}

TEST(QuantLegacy, DequantizeMatchesVectors) {
  for_each_format([&]<QFormat F>() {
    using C = Codec<F>;
    const std::string name = name_of<F>();
    const std::vector<uint8_t> q = read_bytes(name + ".q");
    const std::vector<float> expected = read_f32(name + ".deq.f32");
    constexpr int kBlocks = kCols / C::kElems;
    ASSERT_EQ(q.size(), size_t{kRows * kBlocks * C::kBytes}) << "missing or short " << name << ".q";
    ASSERT_EQ(expected.size(), size_t{kRows * kCols}) << "missing or short " << name << ".deq.f32";
    int bad = 0;
    for (int r = 0; r < kRows; ++r) {
      for (int b = 0; b < kBlocks; ++b) {
        float y[32];
        C::dequantize_sub(&q[(r * kBlocks + b) * C::kBytes], 0, y);
        for (int j = 0; j < 32; ++j) {
          const float want = expected[r * kCols + b * 32 + j];
          if (!same_value(y[j], want) && ++bad <= 8) {
            ADD_FAILURE() << name << " row " << r << " block " << b << " element " << j << ": expected " << want
                          << " (0x" << std::hex << bits_of(want) << "), got " << y[j] << " (0x" << bits_of(y[j])
                          << std::dec << ")";
          }
        }
      }
    }
    EXPECT_EQ(bad, 0) << name << ": elements whose bits differ";
  });
}

TEST(QuantLegacy, ZeroBlockDecodesToZero) {
  for_each_format([]<QFormat F>() {
    using C = Codec<F>;
    const float x[32] = {};
    uint8_t blk[C::kBytes];
    C::quantize(x, blk);
    float y[32];
    C::dequantize_sub(blk, 0, y);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.0f) << name_of<F>() << " element " << j;
  });
}

// |x - y| for each element of random blocks against a bound of the format: the rounding step of
// its codes (from the f32 scale ggml computes) plus the change that storing the scale (and min)
// as f16 makes, with a relative slack of 1e-4 for the f32 roundings of the formulas.
template <QFormat F>
void check_round_trip(const float* x, const uint8_t* blk, const float* y) {
  using wick::quant::load_f16;
  float amax = 0.0f, vmax = 0.0f, lo = x[0], hi = x[0];
  for (int j = 0; j < 32; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
    lo = std::fmin(lo, x[j]);
    hi = std::fmax(hi, x[j]);
  }
  for (int j = 0; j < 32; ++j) {
    double bound = 0;
    if constexpr (F == QFormat::Q4_0 || F == QFormat::Q5_0) {
      // codes q - L in [-L, L - 1] for x / d in [-L, L] (d = max / -L): the top half-step clamps.
      constexpr double kL = F == QFormat::Q4_0 ? 8 : 16;
      const double d = vmax / -kL;
      const double t = d != 0 ? x[j] / d : 0;
      const double step = t > kL - 0.5 ? t - (kL - 1) : 0.5;
      bound = step * std::fabs(d) + kL * std::fabs(d - load_f16(blk));
    } else if constexpr (F == QFormat::Q4_1 || F == QFormat::Q5_1) {
      constexpr double kSteps = F == QFormat::Q4_1 ? 15 : 31;
      const double d = (static_cast<double>(hi) - lo) / kSteps;
      bound = 0.5 * d + kSteps * std::fabs(d - load_f16(blk)) + std::fabs(lo - load_f16(blk + 2));
    } else if constexpr (F == QFormat::Q8_0 || F == QFormat::Q8_1) {
      const double d = amax / 127.0;
      bound = 0.5 * d + 127 * std::fabs(d - load_f16(blk));
    } else if constexpr (F == QFormat::IQ4_NL) {
      // codes nearest x / d0 (d0 = max / -127); the stored scale is the refit, whatever it is.
      const int kTable[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
      const double d0 = vmax / -127.0;
      double dist = 1e30;
      for (int v : kTable) dist = std::fmin(dist, std::fabs(x[j] / d0 - v));
      bound = dist * std::fabs(d0) + 127 * std::fabs(d0 - load_f16(blk));
    } else if constexpr (F == QFormat::MXFP4) {
      // the nearest of the values {0, 1, 2, 3, 4, 6, 8, 12} * d (either sign); products are exact.
      const int kDoubled[8] = {0, 1, 2, 3, 4, 6, 8, 12};
      const double d = wick::quant::lq::e8m0_half(blk[0]);
      bound = 1e30;
      for (int v : kDoubled) bound = std::fmin(bound, std::fabs(std::fabs(x[j]) - v * d));
      if (j == 0) {
        EXPECT_GE(amax, 8 * d * (1 - 0x1p-16)) << "mxfp4 exponent too large for amax " << amax;
        EXPECT_LT(amax, 16 * d) << "mxfp4 exponent too small for amax " << amax;
      }
    }
    bound = bound * (1 + 1e-4) + 1e-6 * amax;
    EXPECT_LE(std::fabs(static_cast<double>(x[j]) - y[j]), bound)
        << name_of<F>() << " element " << j << " x " << x[j] << " y " << y[j];
  }
}

TEST(QuantLegacy, RoundTripErrorBounds) {
  std::mt19937 rng(20261128);
  for_each_format([&]<QFormat F>() {
    using C = Codec<F>;
    const float scales[] = {1e-6f, 1e-3f, 1.0f, 300.0f, 1e4f};
    for (float scale : scales) {
      for (float offset : {0.0f, 3.0f}) {
        std::normal_distribution<float> normal(offset, 1.0f);
        for (int b = 0; b < 200; ++b) {
          float x[32];
          for (float& v : x) v = normal(rng) * scale;
          uint8_t blk[C::kBytes];
          C::quantize(x, blk);
          float y[32];
          C::dequantize_sub(blk, 0, y);
          check_round_trip<F>(x, blk, y);
          if (::testing::Test::HasFailure()) return;
        }
      }
    }
  });
}

// ggml's reference compiled for x86-64 on blocks of {0.5, -1, 0.25, 2} repeated, with a NaN or an
// inf put in: the NaN encodings of the scales and the x86 float -> int conversions.
TEST(QuantLegacy, NonFiniteInputsAsGgmlX86) {
  struct Case {
    QFormat f;
    const char* nan_at_31;
    const char* inf_at_5;
    const char* all_inf;
  };
  const Case cases[] = {
      {QFormat::Q4_0, "00b466cc770066cc770066cc770066cc7700", "00fc88888888888088888888888888888888",
       "00fc00000000000000000000000000000000"},
      {QFormat::Q4_1, "663200bc880066ff880066ff880066ff8800660f", "007c00bc00000000000000000000000000000000",
       "007c007c00000000000000000000000000000000"},
      {QFormat::Q5_0, "00b022222222cc88ee00cc88ee00cc88ee00cc88ee00", "00fcdfffffff00000000000000000000000000000000",
       "00fc0000000000000000000000000000000000000000"},
      {QFormat::Q5_1, "322e00bc999999190000ddff0000ddff0000ddff0000dd0f",
       "007c00bc0000000000000000000000000000000000000000", "007c007c0000000000000000000000000000000000000000"},
      {QFormat::Q8_0, "007e0000000000000000000000000000000000000000000000000000000000000000",
       "007c0000000000000000000000000000000000000000000000000000000000000000",
       "007c0000000000000000000000000000000000000000000000000000000000000000"},
      {QFormat::Q8_1, "007e007e0000000000000000000000000000000000000000000000000000000000000000",
       "007c00fe0000000000000000000000000000000000000000000000000000000000000000",
       "007c00fe0000000000000000000000000000000000000000000000000000000000000000"},
      {QFormat::IQ4_NL, "000055dd770055dd770055dd770055dd77f0", "00fe88888888888f88888888888888888888",
       "00feffffffffffffffffffffffffffffffff"},
      {QFormat::MXFP4, "7e22cc116622cc116622cc116622cc1106", "0000000000000000000000000000000000",
       "0000000000000000000000000000000000"},
  };
  const float kPattern[4] = {0.5f, -1.0f, 0.25f, 2.0f};
  float base[32];
  for (int j = 0; j < 32; ++j) base[j] = kPattern[j % 4];
  for_each_format([&]<QFormat F>() {
    using C = Codec<F>;
    const Case* c = nullptr;
    for (const Case& k : cases) {
      if (k.f == F) c = &k;
    }
    ASSERT_NE(c, nullptr);
    auto bytes_of = [](const float* x) {
      uint8_t blk[C::kBytes];
      C::quantize(x, blk);
      return hex(blk, C::kBytes);
    };
    float x[32];
    std::memcpy(x, base, sizeof x);
    x[31] = NAN;
    EXPECT_EQ(bytes_of(x), c->nan_at_31) << name_of<F>() << ": NaN at 31";
    std::memcpy(x, base, sizeof x);
    x[5] = INFINITY;
    EXPECT_EQ(bytes_of(x), c->inf_at_5) << name_of<F>() << ": inf at 5";
    for (float& v : x) v = INFINITY;
    EXPECT_EQ(bytes_of(x), c->all_inf) << name_of<F>() << ": all inf";
  });
}

}  // namespace
