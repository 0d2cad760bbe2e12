// The CPU's vector kernels (src/cpu/simd.h) on every level this processor runs: conversions bit
// for bit against the scalar types, exponentials against f64, and every level against the
// baseline one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/philox.h"
#include "cpu/simd.h"
#include "tests/test_util.h"
#include "wick/error.h"
#include "wick/scalar_types.h"
#include "wick/tensor.h"

namespace {

using wick::bf16;
using wick::f16;
namespace simd = wick::cpu::simd;
namespace philox = wick::philox;

std::vector<simd::Isa> levels() {
  std::vector<simd::Isa> v;
  for (int i = 0; i <= static_cast<int>(simd::detected()); ++i) v.push_back(static_cast<simd::Isa>(i));
  return v;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// f32 inputs for the narrowing conversions: random bit patterns (every exponent, NaNs included),
// exact ties and near-ties of both formats' rounding, and the special values. An odd count, so the
// vector loops leave a tail.
std::vector<float> narrowing_inputs() {
  std::mt19937 rng(7);
  std::vector<float> v;
  for (int i = 0; i < 400001; ++i) v.push_back(from_bits(static_cast<uint32_t>(rng())));
  for (uint32_t h = 0; h < 0x10000; h += 3) {
    const float f = f16::to_f32(static_cast<uint16_t>(h));
    const uint32_t b = bits(f);
    for (uint32_t d : {0x1000u, 0x0fffu, 0x1001u}) v.push_back(from_bits(b + d));          // f16 half-ulp ties
    for (uint32_t d : {0x8000u, 0x7fffu, 0x8001u}) v.push_back(from_bits((h << 16) + d));  // bf16 ties
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 65504.0f, 65520.0f, 65519.99f,
                  5.96e-8f, 2.98e-8f, 2.99e-8f, 3.4028235e38f, 1e-45f, -1e-45f})
    v.push_back(f);
  v.push_back(from_bits(0x7f800001u));  // signalling NaN
  v.push_back(from_bits(0xffbfffffu));
  return v;
}

TEST(CpuSimd, ReportsLevels) {
  std::printf("cpu simd: detected %s, active %s\n", simd::isa_name(simd::detected()), simd::isa_name(simd::active()));
  EXPECT_LE(static_cast<int>(simd::active()), static_cast<int>(simd::detected()));
  for (simd::Isa isa : {simd::Isa::Avx512, simd::Isa::Avx512Bf16, simd::Isa::Amx}) {
    if (simd::detected() < isa) {
      EXPECT_THROW(simd::kernels(isa), wick::UnsupportedError);
    }
  }
}

TEST(CpuSimd, NarrowingMatchesScalarTypesBitForBit) {
  const std::vector<float> in = narrowing_inputs();
  const int64_t n = static_cast<int64_t>(in.size());
  for (simd::Isa isa : levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    const simd::Kernels& k = simd::kernels(isa);
    std::vector<uint16_t> h(in.size()), b(in.size());
    k.f32_to_f16(in.data(), h.data(), n);
    k.f32_to_bf16(in.data(), b.data(), n);
    int bad_h = 0, bad_b = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      if (h[i] != f16::from_f32(in[i]) && bad_h++ < 5)
        ADD_FAILURE() << "f16 of bits 0x" << std::hex << bits(in[i]) << ": 0x" << h[i] << " want 0x"
                      << f16::from_f32(in[i]);
      if (b[i] != bf16::from_f32(in[i]) && bad_b++ < 5)
        ADD_FAILURE() << "bf16 of bits 0x" << std::hex << bits(in[i]) << ": 0x" << b[i] << " want 0x"
                      << bf16::from_f32(in[i]);
    }
    EXPECT_EQ(bad_h, 0);
    EXPECT_EQ(bad_b, 0);
  }
}

TEST(CpuSimd, WideningMatchesScalarTypes) {
  std::vector<uint16_t> in(0x10000 + 5);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint16_t>(i * 40503u);  // every pattern
  const int64_t n = static_cast<int64_t>(in.size());
  for (simd::Isa isa : levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    const simd::Kernels& k = simd::kernels(isa);
    std::vector<float> h(in.size()), b(in.size());
    k.f16_to_f32(in.data(), h.data(), n);
    k.bf16_to_f32(in.data(), b.data(), n);
    int bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const float hw = f16::to_f32(in[i]);
      // F16C quiets a signalling NaN; any NaN is accepted for a NaN input (simd.h).
      const bool h_ok = std::isnan(hw) ? std::isnan(h[i]) : bits(h[i]) == bits(hw);
      const bool b_ok = bits(b[i]) == bits(bf16::to_f32(in[i]));
      if ((!h_ok || !b_ok) && bad++ < 5) ADD_FAILURE() << "pattern 0x" << std::hex << in[i];
    }
    EXPECT_EQ(bad, 0);
  }
}

// Distance in representable f32 values (same sign; 0 and -0 are one apart, which is fine here).
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    const int64_t u = bits(f) & 0x7fffffffu;
    return std::signbit(f) ? -u : u;
  };
  return std::llabs(key(a) - key(b));
}

std::vector<float> exp_inputs() {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> wide(-110.0f, 95.0f), narrow(-12.0f, 12.0f);
  std::vector<float> v;
  for (int i = 0; i < 200003; ++i) v.push_back(i % 2 ? wide(rng) : narrow(rng));
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, 88.72f, 88.73f, -87.33f, -87.34f, -103.27f, -103.98f,
                  -104.5f, 89.5f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 0.34657f, -0.34657f})
    v.push_back(f);
  return v;
}

// f64 references of simd.h's functions, rounded once to f32.
float ref(int which, float xf) {
  const double x = xf, k = 1.59576912160573071176;
  switch (which) {
    case 0:
      return static_cast<float>(std::exp(x));
    case 1:
      return static_cast<float>(1.0 / (1.0 + std::exp(-x)));
    case 2:
      return static_cast<float>(x / (1.0 + std::exp(-x)));
    default:
      return static_cast<float>(x / (1.0 + std::exp(-k * (x + 0.044715 * x * x * x))));
  }
}

TEST(CpuSimd, ExponentialsWithinTwoUlpOfF64) {
  const std::vector<float> in = exp_inputs();
  const int64_t n = static_cast<int64_t>(in.size());
  const char* names[] = {"exp", "sigmoid", "silu", "gelu"};
  std::vector<std::vector<float>> base(4);
  for (simd::Isa isa : levels()) {
    const simd::Kernels& k = simd::kernels(isa);
    void (*fns[])(const float*, float*, int64_t) = {k.exp_f32, k.sigmoid_f32, k.silu_f32, k.gelu_f32};
    for (int w = 0; w < 4; ++w) {
      SCOPED_TRACE(std::string(simd::isa_name(isa)) + " " + names[w]);
      std::vector<float> out(in.size());
      fns[w](in.data(), out.data(), n);
      int bad = 0;
      int64_t worst = 0;
      for (size_t i = 0; i < in.size(); ++i) {
        const float want = ref(w, in[i]);
        const double x = in[i];
        bool ok;
        if (std::isnan(want)) {
          ok = std::isnan(out[i]);
        } else if (std::isinf(x)) {
          ok = out[i] == want;
        } else if (w >= 2 && (w == 3 ? -1.59576912160573071176 * (x + 0.044715 * x * x * x) : -x) > 88.0) {
          // silu / gelu far out on the negative side: exp(-k(x)) leaves the f32 range before the
          // quotient does, so the result is 0 where the exact one is below 3e-37 (the scalar
          // functors of elementwise_math.h do the same).
          ok = std::fabs(out[i] - want) <= 3e-37f;
        } else if (std::fabs(want) < 1.2e-38f) {
          // Subnormal results: one more rounding after the scaling.
          ok = std::fabs(out[i] - want) <= 2.4e-38f;
        } else if (w == 3) {
          // gelu: the cubic is rounded in f32 (a few ulp) before exp, whose relative condition
          // is |k z|; allow 4 ulp of z through it on top of 2 ulp.
          const double z = 1.59576912160573071176 * std::fabs(x + 0.044715 * x * x * x);
          ok = std::fabs(static_cast<double>(out[i]) - want) <= std::fabs(want) * (0x1p-22 + 0x1p-21 * z);
        } else {
          const int64_t u = ulps(out[i], want);
          worst = std::max(worst, u);
          ok = u <= 2;
        }
        if (!ok && bad++ < 5) ADD_FAILURE() << names[w] << "(" << in[i] << ") = " << out[i] << ", f64 gives " << want;
      }
      EXPECT_EQ(bad, 0);
      if (w < 3)
        std::printf("%s %s: worst %lld ulp over %lld inputs\n", simd::isa_name(isa), names[w],
                    static_cast<long long>(worst), static_cast<long long>(n));
      if (isa == simd::Isa::Base) {
        base[w] = out;
      } else {
        // The same algorithm at every width: the same bits.
        int diff = 0;
        for (size_t i = 0; i < in.size(); ++i)
          if (!(std::isnan(out[i]) && std::isnan(base[w][i])) && bits(out[i]) != bits(base[w][i])) ++diff;
        EXPECT_EQ(diff, 0) << "elements that differ from the baseline level";
      }
    }
  }
}

// bf16 values for the bf16 kernels: both exponentials' ranges, values whose products and
// quotients are subnormal or overflow, subnormals, and the special values. An odd count.
std::vector<uint16_t> bf16_inputs() {
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> narrow(-12.0f, 12.0f), wide(-110.0f, 95.0f), mant(1.0f, 2.0f);
  std::vector<uint16_t> v;
  for (int i = 0; i < 3001; ++i) {
    float f = i % 3 == 0   ? narrow(rng)
              : i % 3 == 1 ? wide(rng)
                           : mant(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 250) - 132);
    if (rng() % 2) f = -f;
    v.push_back(bf16::from_f32(f));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float f : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-39f, -3e-40f, 3e38f, 1.0f})
    v.push_back(bf16::from_f32(f));
  return v;
}

// unary_bf16 and arith_bf16 on every level: the bits of the f32 kernels between the converters (the
// baseline's), and of bf16::from_f32 of the f32 operation, for lengths around the vector widths
// (tails), in place, and with each operand of the arithmetic a broadcast value; nothing past n is
// written.
TEST(CpuSimd, Bf16KernelsAgainstTheF32KernelsAndConverters) {
  const std::vector<uint16_t> in = bf16_inputs();
  const simd::Kernels& base = simd::kernels(simd::Isa::Base);
  const simd::Unary ops[] = {simd::Unary::Exp, simd::Unary::Sigmoid, simd::Unary::Silu, simd::Unary::Gelu};
  void (*const f32[])(const float*, float*, int64_t) = {base.exp_f32, base.sigmoid_f32, base.silu_f32, base.gelu_f32};
  auto same = [](uint16_t a, uint16_t b) {
    const bool na = std::isnan(bf16::to_f32(a)), nb = std::isnan(bf16::to_f32(b));
    return na || nb ? na && nb : a == b;
  };
  for (simd::Isa isa : levels()) {
    const simd::Kernels& k = simd::kernels(isa);
    for (int64_t n : {0, 1, 15, 16, 17, 31, 33, 100, 1027, 3010}) {
      SCOPED_TRACE(std::string(simd::isa_name(isa)) + " n " + std::to_string(n));
      const uint16_t* x = in.data();
      const uint16_t* y = in.data() + (in.size() - static_cast<size_t>(n));  // other values beside x's
      for (int u = 0; u < 4; ++u) {
        std::vector<float> w(static_cast<size_t>(n));
        std::vector<uint16_t> want(static_cast<size_t>(n)), got(static_cast<size_t>(n) + 1, 0x1234);
        base.bf16_to_f32(x, w.data(), n);
        f32[u](w.data(), w.data(), n);
        base.f32_to_bf16(w.data(), want.data(), n);
        k.unary_bf16(ops[u], x, got.data(), n);
        std::vector<uint16_t> in_place(x, x + n);
        k.unary_bf16(ops[u], in_place.data(), in_place.data(), n);
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const size_t j = static_cast<size_t>(i);
          if ((!same(got[j], want[j]) || !same(in_place[j], want[j])) && bad++ < 5)
            ADD_FAILURE() << "unary op " << u << " of 0x" << std::hex << x[i] << ": 0x" << got[j] << " want 0x"
                          << want[j];
        }
        EXPECT_EQ(got.back(), 0x1234);
      }
      const simd::Arith ariths[] = {simd::Arith::Add, simd::Arith::Sub, simd::Arith::Mul, simd::Arith::Div};
      for (int a = 0; a < 4; ++a) {
        for (int64_t sx : {1, 0}) {
          for (int64_t sy : {1, 0}) {
            std::vector<uint16_t> got(static_cast<size_t>(n) + 1, 0x1234);
            k.arith_bf16(ariths[a], x, sx, y, sy, got.data(), n);
            int bad = 0;
            for (int64_t i = 0; i < n; ++i) {
              const float p = bf16::to_f32(x[i * sx]), q = bf16::to_f32(y[i * sy]);
              const float r = a == 0 ? p + q : a == 1 ? p - q : a == 2 ? p * q : p / q;
              const uint16_t want = bf16::from_f32(r);
              if (!same(got[static_cast<size_t>(i)], want) && bad++ < 5)
                ADD_FAILURE() << "arith op " << a << " strides " << sx << sy << " at " << i << ": 0x" << std::hex
                              << got[static_cast<size_t>(i)] << " want 0x" << want;
            }
            EXPECT_EQ(got.back(), 0x1234);
          }
        }
      }
    }
  }
}

TEST(CpuSimd, InPlaceAndShortLengths) {
  for (simd::Isa isa : levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    const simd::Kernels& k = simd::kernels(isa);
    for (int64_t n : {0, 1, 3, 15, 16, 17, 33}) {
      std::vector<float> x(static_cast<size_t>(n) + 1, 0.0f);
      for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i) - 2.0f;
      x.back() = 123.0f;  // past the end: untouched
      std::vector<float> want(x);
      for (int64_t i = 0; i < n; ++i) want[static_cast<size_t>(i)] = ref(0, x[static_cast<size_t>(i)]);
      k.exp_f32(x.data(), x.data(), n);
      for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(ulps(x[i], want[i]), 2) << "n " << n << " i " << i;
      EXPECT_EQ(x.back(), 123.0f);
    }
  }
}

TEST(CpuSimd, RowHelpers) {
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 100.0f);
  for (int64_t n : {0, 1, 7, 15, 16, 17, 100, 2047, 2048}) {
    std::vector<float> x(static_cast<size_t>(n));
    for (float& v : x) v = d(rng);
    // The reference order of sum16_f32 (simd.h), in scalar code.
    float lane[16] = {};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
      for (int l = 0; l < 16; ++l) lane[l] += x[static_cast<size_t>(i + l)];
    float tail = 0;
    for (; i < n; ++i) tail += x[static_cast<size_t>(i)];
    for (int w = 8; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
    const float want_sum = lane[0] + tail;
    float sq[16] = {};
    int64_t q = 0;
    for (; q + 16 <= n; q += 16)
      for (int l = 0; l < 16; ++l) sq[l] += x[static_cast<size_t>(q + l)] * x[static_cast<size_t>(q + l)];
    float sq_tail = 0;
    for (; q < n; ++q) sq_tail += x[static_cast<size_t>(q)] * x[static_cast<size_t>(q)];
    for (int w = 8; w > 0; w /= 2)
      for (int l = 0; l < w; ++l) sq[l] += sq[l + w];
    const float want_sumsq = sq[0] + sq_tail;
    std::vector<float> wt(x.size()), bs(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      wt[j] = 0.5f + static_cast<float>(j % 7);
      bs[j] = -1.0f + static_cast<float>(j % 5);
    }
    float want_max = -std::numeric_limits<float>::infinity();
    for (float v : x) want_max = std::max(want_max, v);
    const simd::Kernels& base = simd::kernels(simd::Isa::Base);
    for (simd::Isa isa : levels()) {
      SCOPED_TRACE(std::string(simd::isa_name(isa)) + " n " + std::to_string(n));
      const simd::Kernels& k = simd::kernels(isa);
      EXPECT_EQ(bits(k.sum16_f32(x.data(), n)), bits(want_sum));
      EXPECT_EQ(k.max_f32(x.data(), n), want_max);
      {
        // exp_sum16_f32 against its definition at the base level: exp_f32 of the shifted values,
        // then sum16_f32 of those; in place too. The shift keeps most values in exp's normal range.
        const float shift = n > 0 ? -want_max : 0.0f;
        std::vector<float> shifted(x), want_e(x.size()), e(x.size(), -7.0f), in_place(x);
        for (float& v : shifted) v = v + shift;
        base.exp_f32(shifted.data(), want_e.data(), n);
        const float want = base.sum16_f32(want_e.data(), n);
        EXPECT_EQ(bits(k.exp_sum16_f32(x.data(), e.data(), n, shift)), bits(want));
        EXPECT_EQ(bits(k.exp_sum16_f32(in_place.data(), in_place.data(), n, shift)), bits(want));
        for (size_t j = 0; j < x.size(); ++j) {
          EXPECT_EQ(bits(e[j]), bits(want_e[j])) << j;
          EXPECT_EQ(bits(in_place[j]), bits(want_e[j])) << j;
        }
      }
      std::vector<float> y(x);
      k.scale_f32(y.data(), n, 0.3f);
      for (size_t j = 0; j < y.size(); ++j) EXPECT_EQ(bits(y[j]), bits(x[j] * 0.3f));
      EXPECT_EQ(bits(k.sumsq16_f32(x.data(), n, -0.0f)), bits(want_sumsq));
      {
        // With a shift: as the plain sum of squares over the shifted values, stored first.
        std::vector<float> shifted(x);
        for (float& v : shifted) v = v + -1.25f;
        EXPECT_EQ(bits(k.sumsq16_f32(x.data(), n, -1.25f)), bits(base.sumsq16_f32(shifted.data(), n, -0.0f)));
      }
      for (int mode = 0; mode < 3; ++mode) {  // scale only, scale and weight, scale weight and bias
        for (float shift : {-0.0f, 2.5f}) {
          std::vector<float> out(x.size(), -9.0f);
          y = x;
          const float* w = mode > 0 ? wt.data() : nullptr;
          const float* b = mode > 1 ? bs.data() : nullptr;
          k.norm_f32(x.data(), out.data(), n, shift, 0.3f, w, b);
          k.norm_f32(y.data(), y.data(), n, shift, 0.3f, w, b);
          for (size_t j = 0; j < y.size(); ++j) {
            float v = (x[j] + shift) * 0.3f;
            if (mode > 0) v = v * wt[j];
            if (mode > 1) v = v + bs[j];
            EXPECT_EQ(bits(out[j]), bits(v)) << "mode " << mode << " shift " << shift;
            EXPECT_EQ(bits(y[j]), bits(v)) << "in place, mode " << mode << " shift " << shift;
          }
        }
      }
      if (n > 0) {
        std::vector<float> z(x);
        z[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::quiet_NaN();
        EXPECT_TRUE(std::isnan(k.max_f32(z.data(), n)));
        z[static_cast<size_t>(n / 2)] = std::numeric_limits<float>::infinity();
        EXPECT_EQ(k.max_f32(z.data(), n), std::numeric_limits<float>::infinity());
      }
    }
  }
}

// The matrix-vector kernels against their documented order, in scalar code, on every level: dot_*
// (Note [Row dot products]) as sum16_f32 over the products, axpy_* (Note [Column dot products]) in
// the order of k, each output on its own whatever the number of vectors taken together (1, and
// counts that leave part groups, pass several chunks of the column kernel and its batch of 16).
// Values over 2^20 of range, so that another order would give other bits.
TEST(CpuSimd, MatrixVectorKernelsFollowTheirOrder) {
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto value = [&] { return std::ldexp(nd(rng), static_cast<int>(rng() % 21) - 10); };
  for (int type = 0; type < 3; ++type) {  // bf16, f16, f32
    auto widen = [type](float v) {
      return type == 0 ? bf16::to_f32(bf16::from_f32(v)) : type == 1 ? f16::to_f32(f16::from_f32(v)) : v;
    };
    for (int64_t k : {0, 1, 7, 15, 16, 17, 33, 100, 1000}) {
      for (int64_t rows : {1, 2, 3, 5, 9, 31, 70, 260}) {
        for (int64_t nv : {1, 3, 6, 17}) {
          if (rows == 260 && nv != 6) continue;  // (one size that holds two column runs of 128 f32)
          for (bool cols : {false, true}) {
            // dot: rows of k with a gap (lda = k + 3); axpy: k rows of `rows` outputs (lda = rows + 2);
            // vectors k + 1 apart, outputs rows + 4 apart
            const int64_t lda = cols ? rows + 2 : k + 3, ldx = k + 1, ldo = rows + 4;
            const int64_t size = cols ? k * lda : rows * lda;
            std::vector<float> a(static_cast<size_t>(size)), x(static_cast<size_t>(nv * ldx));
            for (float& v : a) v = widen(value());
            for (float& v : x) v = value();
            std::vector<uint16_t> a16(a.size());
            for (size_t i = 0; i < a.size(); ++i) a16[i] = type == 0 ? bf16::from_f32(a[i]) : f16::from_f32(a[i]);
            std::vector<float> want(static_cast<size_t>(nv * ldo), -1.0f);
            for (int64_t j = 0; j < nv; ++j)
              for (int64_t r = 0; r < rows; ++r) {
                auto at = [&](int64_t i) { return a[static_cast<size_t>(cols ? i * lda + r : r * lda + i)]; };
                auto xj = [&](int64_t i) { return x[static_cast<size_t>(j * ldx + i)]; };
                float acc = 0;
                if (cols) {
                  for (int64_t i = 0; i < k; ++i) acc += at(i) * xj(i);
                } else {
                  float lane[16] = {};
                  int64_t i = 0;
                  for (; i + 16 <= k; i += 16)
                    for (int l = 0; l < 16; ++l) lane[l] += at(i + l) * xj(i + l);
                  for (; i < k; ++i) acc += at(i) * xj(i);
                  for (int w = 8; w > 0; w /= 2)
                    for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
                  acc = lane[0] + acc;
                }
                want[static_cast<size_t>(j * ldo + r)] = acc;
              }
            for (simd::Isa isa : levels()) {
              SCOPED_TRACE(std::string(simd::isa_name(isa)) + " type " + std::to_string(type) + " k " +
                           std::to_string(k) + " rows " + std::to_string(rows) + " vectors " + std::to_string(nv) +
                           (cols ? " axpy" : " dot"));
              const simd::Kernels& kn = simd::kernels(isa);
              std::vector<float> got(want.size(), -1.0f);
              if (type == 2) {
                (cols ? kn.axpy_f32 : kn.dot_f32)(a.data(), lda, rows, k, x.data(), ldx, nv, got.data(), ldo);
              } else if (type == 1) {
                (cols ? kn.axpy_f16 : kn.dot_f16)(a16.data(), lda, rows, k, x.data(), ldx, nv, got.data(), ldo);
              } else {
                (cols ? kn.axpy_bf16 : kn.dot_bf16)(a16.data(), lda, rows, k, x.data(), ldx, nv, got.data(), ldo);
              }
              for (size_t i = 0; i < want.size(); ++i)  // (the gaps between outputs untouched: -1)
                ASSERT_EQ(bits(got[i]), bits(want[i]))
                    << "vector " << i / static_cast<size_t>(ldo) << " row " << i % static_cast<size_t>(ldo);
            }
          }
        }
      }
    }
  }
}

// The random kernels (Note [CPU random]) on every level: Philox words and uniforms bit for bit
// against philox.h, across the carry into a counter's high word and its wrap at 2^64, with
// partial vectors; normals against f64 Box-Muller of the same two f32 uniforms, the same bits on
// every level.
TEST(CpuSimd, RandomKernels) {
  const philox::Keys ks = philox::seed_keys(0x0123456789abcdefull);
  const uint64_t firsts[] = {0, 5, 0xfffffff3ull, 0x1fffffffeull, ~uint64_t{0} - 6};
  for (simd::Isa isa : levels()) {
    const simd::Kernels& kn = simd::kernels(isa);
    for (uint64_t first : firsts)
      for (int64_t nb : {1, 3, 4, 15, 16, 17, 100}) {
        SCOPED_TRACE(std::string(simd::isa_name(isa)) + " first " + std::to_string(first) + " blocks " +
                     std::to_string(nb));
        std::vector<uint32_t> w(static_cast<size_t>(4 * nb + 1), 0xdeadbeefu);
        kn.philox(&ks.k[0][0], first, nb, w.data());
        for (int64_t b = 0; b < nb; ++b) {
          const philox::Block want = philox::block(ks, first + static_cast<uint64_t>(b));
          for (int j = 0; j < 4; ++j) ASSERT_EQ(w[static_cast<size_t>(4 * b + j)], want.w[j]) << "block " << b;
        }
        ASSERT_EQ(w.back(), 0xdeadbeefu) << "a word past the blocks";
      }
  }

  std::mt19937 rng(21);
  std::vector<uint32_t> words;
  for (int i = 0; i < 200001; ++i) words.push_back(static_cast<uint32_t>(rng()));
  // the ends of both uniforms: 0 and 1 - 2^-24 (u1 = 2^-24, the largest radius; u1 = 1, radius 0),
  // and angles at -pi, -pi/2, 0, pi/2 and just under pi
  for (uint32_t e : {0u, 0xffffffffu, 0x100u, 0xffu, 0x40000000u, 0x80000000u, 0xc0000000u, 0xffffff00u})
    for (uint32_t f : {0u, 0xffffffffu, 0x40000000u, 0x80000000u, 0xc0000000u, 0x7fffff00u}) {
      words.push_back(e);
      words.push_back(f);
    }
  words.push_back(0x12345678u);  // an odd count for the uniforms
  const int64_t n = static_cast<int64_t>(words.size());
  struct Range {
    double lo, up;
  };
  std::vector<float> base_u, base_n;
  for (simd::Isa isa : levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    const simd::Kernels& kn = simd::kernels(isa);
    for (const Range& r : {Range{0, 1}, Range{-3, 5}, Range{-1e38, 3e38}, Range{2.5, 2.5}, Range{-1e-40, 1e-40}}) {
      const float lo = static_cast<float>(r.lo), span = static_cast<float>(r.up - r.lo), up = static_cast<float>(r.up);
      std::vector<float> got(words.size());
      kn.uniform_f32(words.data(), got.data(), n, lo, span, up);
      for (size_t i = 0; i < words.size(); ++i)
        ASSERT_EQ(bits(got[i]), bits(philox::uniform_f32_of(words[i], lo, span, up)))
            << "word " << words[i] << " in [" << r.lo << ", " << r.up << ")";
    }
    const float mean = 0.5f, sd = 2.0f;
    const int64_t pairs = n / 2;
    std::vector<float> got(static_cast<size_t>(2 * pairs));
    kn.normal_f32(words.data(), got.data(), 2 * pairs, mean, sd);
    double worst = 0;
    for (int64_t p = 0; p < pairs; ++p) {
      const uint32_t w1 = words[static_cast<size_t>(2 * p)], w2 = words[static_cast<size_t>(2 * p + 1)];
      const double u1 = 1.0f - philox::unit_f32(w1);
      const double theta = std::fma(6.28318530717958647692f, philox::unit_f32(w2), -3.14159265358979323846f);
      const double rad = std::sqrt(-2.0 * std::log(u1));
      const double want[2] = {rad * std::cos(theta) * sd + mean, rad * std::sin(theta) * sd + mean};
      for (int h = 0; h < 2; ++h) {
        // Units of 2^-24 of the radius times sd (and of the mean, which the last rounding adds).
        const double err = std::fabs(got[static_cast<size_t>(2 * p + h)] - want[h]) / ((rad * sd + mean) * 0x1p-24);
        worst = std::max(worst, err);
        ASSERT_LE(err, 8.0) << "words " << w1 << ", " << w2 << ": " << got[static_cast<size_t>(2 * p + h)]
                            << ", f64 gives " << want[h];
      }
    }
    std::printf("%s normals: worst %.2f units of 2^-24 (radius x std + mean) over %lld\n", simd::isa_name(isa), worst,
                static_cast<long long>(2 * pairs));
    std::vector<float> all_u(words.size());
    kn.uniform_f32(words.data(), all_u.data(), n, -3.0f, 8.0f, 5.0f);
    if (isa == simd::Isa::Base) {
      base_u = all_u;
      base_n = got;
    } else {
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(bits(got[i]), bits(base_n[i])) << "normal " << i;
      for (size_t i = 0; i < all_u.size(); ++i) ASSERT_EQ(bits(all_u[i]), bits(base_u[i])) << "uniform " << i;
    }
  }
}

// The transpose kernel (Note [CPU transpose]) on every level, for each element size, on sizes with
// and without whole blocks and strides with gaps: every element moved, nothing else written.
TEST(CpuSimd, TransposeKernel) {
  std::mt19937 rng(31);
  for (simd::Isa isa : levels()) {
    const simd::Kernels& kn = simd::kernels(isa);
    for (int es : {2, 4, 8})
      for (int64_t rows : {1, 7, 8, 16, 33, 64})
        for (int64_t cols : {1, 5, 16, 17, 64}) {
          SCOPED_TRACE(std::string(simd::isa_name(isa)) + " " + std::to_string(es) + "-byte, " + std::to_string(rows) +
                       " x " + std::to_string(cols));
          const int64_t lds = rows + 3, ldd = cols + 2;  // src: cols runs of rows elements
          std::vector<unsigned char> src(static_cast<size_t>(cols * lds * es)),
              dst(static_cast<size_t>(rows * ldd * es));
          for (auto& b : src) b = static_cast<unsigned char>(rng());
          for (auto& b : dst) b = 0xa5;
          kn.transpose(src.data(), lds, dst.data(), ldd, rows, cols, es);
          for (int64_t i = 0; i < rows; ++i)
            for (int64_t j = 0; j < ldd; ++j)
              for (int e = 0; e < es; ++e) {
                const unsigned char want =
                    j < cols ? src[static_cast<size_t>((j * lds + i) * es + e)] : static_cast<unsigned char>(0xa5);
                ASSERT_EQ(dst[static_cast<size_t>((i * ldd + j) * es + e)], want)
                    << "element (" << i << ", " << j << ")";
              }
        }
  }
}

// The ops built on these kernels give the same bits for an element whatever the layout: a
// transposed or narrowed view goes through the kernel too (staged), not through a scalar path.
TEST(CpuSimd, OpsGiveTheSameBitsOnEveryLayout) {
  using wick::DType;
  using wick::Tensor;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const Tensor x = Tensor::rand_uniform({67, 45}, DType::F32, -12.0, 12.0).to_dtype(dt);
    const Tensor xt = x.t();                   // transposed view
    const Tensor xn = x.narrow(1, 3, 40).t();  // narrowed, then transposed
    const Tensor xs = x.narrow(0, 1, 33);      // rows with a gap: strided
    for (int op = 0; op < 4; ++op) {
      auto f = [op](const Tensor& v) {
        switch (op) {
          case 0:
            return v.exp();
          case 1:
            return v.sigmoid();
          case 2:
            return v.silu();
          default:
            return v.gelu();
        }
      };
      SCOPED_TRACE(std::string(wick::dtype_name(dt)) + " op " + std::to_string(op));
      EXPECT_EQ(wick::testing::bytes_of(f(xt)), wick::testing::bytes_of(f(xt.contiguous())));
      EXPECT_EQ(wick::testing::bytes_of(f(xn)), wick::testing::bytes_of(f(xn.contiguous())));
      EXPECT_EQ(wick::testing::bytes_of(f(xs)), wick::testing::bytes_of(f(xs.contiguous())));
    }
  }
}

}  // namespace
