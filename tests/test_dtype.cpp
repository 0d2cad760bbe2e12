// Element type conversions, checked exhaustively against a reference written from the format
// definitions (sign * mantissa * 2^exp, and "nearest value in the sorted list of all finite values")
// rather than from bit tricks like include/wick/scalar_types.h.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

// ---- the reference --------------------------------------------------------------------------

// A binary float format with `ebits` exponent and `mbits` mantissa bits.
struct Format {
  const char* name;
  int ebits;
  int mbits;
  bool ieee_specials;  // all-ones exponent is inf (mantissa 0) / NaN; otherwise only S.1111.111 is NaN
  int bias() const { return (1 << (ebits - 1)) - 1; }
  uint32_t nbits() const { return 1u + static_cast<uint32_t>(ebits + mbits); }
  uint32_t sign_bit() const { return 1u << (ebits + mbits); }
};
constexpr Format kF16{"f16", 5, 10, true};
constexpr Format kBF16{"bf16", 8, 7, true};
constexpr Format kF8{"f8e4m3", 4, 3, false};

// The value of a bit pattern, from the definition.
double ref_decode(const Format& f, uint32_t bits) {
  const bool neg = (bits & f.sign_bit()) != 0;
  const uint32_t e = (bits >> f.mbits) & ((1u << f.ebits) - 1);
  const uint32_t m = bits & ((1u << f.mbits) - 1);
  const uint32_t emax = (1u << f.ebits) - 1;
  double v;
  if (f.ieee_specials && e == emax) {
    v = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!f.ieee_specials && e == emax && m == (1u << f.mbits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias() - f.mbits);  // subnormal: 0.m * 2^(1-bias)
  } else {
    v = std::ldexp(static_cast<double>(m + (1u << f.mbits)), static_cast<int>(e) - f.bias() - f.mbits);
  }
  return neg ? -v : v;
}

// All non-negative finite values of a format in increasing order, with their patterns, followed by
// one virtual entry just past the largest (the next value the exponent range would allow), whose
// pattern is "overflow". Rounding to nearest picks from this list.
struct Table {
  Format f;
  std::vector<double> v;
  std::vector<uint32_t> bits;
  uint32_t overflow_bits;  // inf for IEEE formats, NaN for f8e4m3
};

Table make_table(const Format& f) {
  Table t{f, {}, {}, 0};
  for (uint32_t b = 0; b < f.sign_bit(); ++b) {
    const double x = ref_decode(f, b);
    if (std::isfinite(x)) {
      t.v.push_back(x);
      t.bits.push_back(b);
    }
  }
  // Patterns of one sign increase with their value, so the list is sorted already; check it.
  for (size_t i = 1; i < t.v.size(); ++i) EXPECT_LT(t.v[i - 1], t.v[i]) << f.name;
  const double max = t.v.back();
  const double ulp = max - t.v[t.v.size() - 2];
  t.v.push_back(max + ulp);
  t.bits.push_back(t.bits.back() + 1);  // the parity of the next pattern decides ties at the edge
  t.overflow_bits = f.ieee_specials ? ((1u << f.ebits) - 1) << f.mbits : (1u << (f.ebits + f.mbits)) - 1;
  return t;
}

// Correctly rounded pattern of x (nearest, ties to the even pattern), searched in the table.
uint32_t ref_round(const Table& t, double x) {
  const Format& f = t.f;
  const uint32_t sign = std::signbit(x) ? f.sign_bit() : 0;
  if (std::isnan(x)) return sign | (f.ieee_specials ? t.overflow_bits | (1u << (f.mbits - 1)) : t.overflow_bits);
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | t.overflow_bits;
  const size_t last = t.v.size() - 1;  // the virtual entry
  if (a >= t.v[last]) return sign | t.overflow_bits;
  const size_t hi = static_cast<size_t>(std::lower_bound(t.v.begin(), t.v.end(), a) - t.v.begin());
  size_t pick;
  if (t.v[hi] == a) {
    pick = hi;
  } else {
    const size_t lo = hi - 1;
    const double dlo = a - t.v[lo], dhi = t.v[hi] - a;
    pick = dlo < dhi ? lo : dhi < dlo ? hi : ((t.bits[lo] & 1u) == 0 ? lo : hi);
  }
  if (pick == last) return sign | t.overflow_bits;
  return sign | t.bits[pick];
}

const Table& table(const Format& f) {
  static const Table f16t = make_table(kF16), bf16t = make_table(kBF16), f8t = make_table(kF8);
  return f.mbits == 10 ? f16t : f.mbits == 7 ? bf16t : f8t;
}

// The implementation under test, by format.
uint32_t impl_from_f32(const Format& f, float x) {
  if (f.mbits == 10) return f16(x).bits;
  if (f.mbits == 7) return bf16(x).bits;
  return f8e4m3(x).bits;
}
uint32_t impl_from_f64(const Format& f, double x) {
  if (f.mbits == 10) return convert<f16>(x).bits;
  if (f.mbits == 7) return convert<bf16>(x).bits;
  return convert<f8e4m3>(x).bits;
}
float impl_to_f32(const Format& f, uint32_t b) {
  if (f.mbits == 10) return static_cast<float>(f16::from_bits(static_cast<uint16_t>(b)));
  if (f.mbits == 7) return static_cast<float>(bf16::from_bits(static_cast<uint16_t>(b)));
  return static_cast<float>(f8e4m3::from_bits(static_cast<uint8_t>(b)));
}

bool same_value(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Two patterns agree when both are NaN with the same sign, or equal.
bool same_pattern(const Format& f, uint32_t a, uint32_t b) {
  const bool na = std::isnan(ref_decode(f, a)), nb = std::isnan(ref_decode(f, b));
  if (na || nb) return na && nb && (a & f.sign_bit()) == (b & f.sign_bit());
  return a == b;
}

const Format kFormats[] = {kF16, kBF16, kF8};

// ---- (a) decoding every pattern -------------------------------------------------------------

TEST(DType, DecodeEveryPattern) {
  for (const Format& f : kFormats) {
    int bad = 0, nans = 0, infs = 0, subnormals = 0;
    for (uint32_t b = 0; b < (1u << f.nbits()); ++b) {
      const double want = ref_decode(f, b);
      const float got = impl_to_f32(f, b);
      if (std::isnan(want)) ++nans;
      if (std::isinf(want)) ++infs;
      if (((b >> f.mbits) & ((1u << f.ebits) - 1)) == 0 && (b & ((1u << f.mbits) - 1)) != 0) ++subnormals;
      if (!same_value(static_cast<double>(got), want) && bad++ < 5)
        ADD_FAILURE() << f.name << " pattern 0x" << std::hex << b << ": got " << got << ", expected " << want;
      // NaN keeps its sign bit when widened.
      if (std::isnan(want)) {
        EXPECT_EQ(std::signbit(got), (b & f.sign_bit()) != 0) << f.name << std::hex << b;
      }
    }
    EXPECT_EQ(bad, 0) << f.name;
    // The formats' shapes: f16 and bf16 have 2 infinities and 2 * (2^m - 1) NaNs, f8e4m3 2 NaNs.
    EXPECT_EQ(infs, f.ieee_specials ? 2 : 0) << f.name;
    EXPECT_EQ(nans, f.ieee_specials ? 2 * ((1 << f.mbits) - 1) : 2) << f.name;
    EXPECT_EQ(subnormals, 2 * ((1 << f.mbits) - 1)) << f.name;
  }
  // A few values from the definitions, spelled out.
  EXPECT_EQ(static_cast<float>(f16::from_bits(0x3c00)), 1.0f);
  EXPECT_EQ(static_cast<float>(f16::from_bits(0x7bff)), 65504.0f);
  EXPECT_EQ(static_cast<float>(f16::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x7f7f)), std::ldexp(255.0f, 120));
  EXPECT_EQ(static_cast<float>(f8e4m3::from_bits(0x7e)), 448.0f);
  EXPECT_EQ(static_cast<float>(f8e4m3::from_bits(0x01)), std::ldexp(1.0f, -9));
  EXPECT_EQ(static_cast<float>(f8e4m3::from_bits(0x78)), 256.0f);  // S.1111.000 is a number, not inf
  EXPECT_TRUE(std::isnan(static_cast<float>(f8e4m3::from_bits(0xff))));
}

// Every finite pattern survives the trip to f32 and back (both zeros included).
TEST(DType, RoundTripEveryFinitePattern) {
  for (const Format& f : kFormats)
    for (uint32_t b = 0; b < (1u << f.nbits()); ++b) {
      const double v = ref_decode(f, b);
      if (std::isnan(v)) continue;
      ASSERT_EQ(impl_from_f32(f, impl_to_f32(f, b)), b) << f.name << " 0x" << std::hex << b;
    }
}

// ---- (b) rounding f32 -----------------------------------------------------------------------

// Values that probe every rounding decision: each value, each midpoint between neighbours and one
// f32 ulp either side of it, the same below the smallest subnormal and past the largest finite
// value, for both signs.
std::vector<float> probes(const Table& t) {
  std::vector<float> out;
  auto add = [&](double d) {
    const float x = static_cast<float>(d);
    if (static_cast<double>(x) != d) return;  // only f32-exact probes (midpoints of f16/bf16/f8 all are)
    for (float s : {x, std::nextafter(x, -INFINITY), std::nextafter(x, INFINITY)}) {
      out.push_back(s);
      out.push_back(-s);
    }
  };
  for (size_t i = 0; i < t.v.size(); ++i) {
    add(t.v[i]);
    if (i + 1 < t.v.size()) add((t.v[i] + t.v[i + 1]) / 2);
  }
  add(t.v[1] / 4);  // a quarter of the smallest subnormal
  add(t.v.back() * 4);
  for (float s : {INFINITY, -INFINITY, std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), 0.0f, -0.0f})
    out.push_back(s);
  return out;
}

TEST(DType, F32RoundingAgainstNearestValueSearch) {
  std::mt19937 rng(12345);
  for (const Format& f : kFormats) {
    const Table& t = table(f);
    std::vector<float> xs = probes(t);
    // Random f32s: any bit pattern, and uniformly over the format's range.
    std::uniform_real_distribution<double> in_range(-t.v.back(), t.v.back());
    for (int i = 0; i < 300000; ++i) {
      uint32_t u = static_cast<uint32_t>(rng());
      float x;
      std::memcpy(&x, &u, 4);
      xs.push_back(x);
      xs.push_back(static_cast<float>(in_range(rng)));
    }
    int bad = 0;
    for (float x : xs) {
      const uint32_t want = ref_round(t, static_cast<double>(x));
      const uint32_t got = impl_from_f32(f, x);
      if (!same_pattern(f, got, want) && bad++ < 5)
        ADD_FAILURE() << f.name << " from f32 " << x << " (0x" << std::hex <<
            [&] {
              uint32_t u;
              std::memcpy(&u, &x, 4);
              return u;
            }() << "): got 0x"
                      << got << ", expected 0x" << want;
    }
    EXPECT_EQ(bad, 0) << f.name << " over " << xs.size() << " inputs";
  }
}

TEST(DType, OverflowAndNaNRules) {
  // f16 / bf16 overflow to inf; the tie at max + ulp/2 goes to inf (the even pattern).
  EXPECT_EQ(f16(65519.0f).bits, 0x7bff);
  EXPECT_EQ(f16(65520.0f).bits, 0x7c00);
  EXPECT_EQ(f16(-1e6f).bits, 0xfc00);
  EXPECT_EQ(bf16(std::numeric_limits<float>::max()).bits, 0x7f80);
  EXPECT_EQ(bf16(-INFINITY).bits, 0xff80);
  // f8e4m3 is non-saturating: the tie at 464 rounds to 448 (even), above it and inf give NaN.
  EXPECT_EQ(f8e4m3(464.0f).bits, 0x7e);
  EXPECT_EQ(f8e4m3(std::nextafter(464.0f, INFINITY)).bits, 0x7f);
  EXPECT_EQ(f8e4m3(-500.0f).bits, 0xff);
  EXPECT_EQ(f8e4m3(INFINITY).bits, 0x7f);
  EXPECT_EQ(f8e4m3(-INFINITY).bits, 0xff);
  // NaN stays NaN with its sign; f16 / bf16 keep the top payload bits and are quiet.
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  for (float n : {qnan, -qnan}) {
    EXPECT_TRUE(std::isnan(static_cast<float>(f16(n))));
    EXPECT_TRUE(std::isnan(static_cast<float>(bf16(n))));
    EXPECT_TRUE(std::isnan(static_cast<float>(f8e4m3(n))));
    EXPECT_EQ(std::signbit(static_cast<float>(f16(n))), std::signbit(n));
    EXPECT_EQ(std::signbit(static_cast<float>(bf16(n))), std::signbit(n));
    EXPECT_EQ(std::signbit(static_cast<float>(f8e4m3(n))), std::signbit(n));
  }
  float snan;
  const uint32_t snan_bits = 0x7f800001u;  // signalling, payload only in the lowest bit
  std::memcpy(&snan, &snan_bits, 4);
  EXPECT_EQ(bf16(snan).bits & 0x7fc0, 0x7fc0);  // must not become inf (0x7f80)
  EXPECT_EQ(f16(snan).bits & 0x7e00, 0x7e00);
  // Underflow keeps the sign of zero.
  EXPECT_EQ(f16(-1e-30f).bits, 0x8000);
  EXPECT_EQ(f8e4m3(-1e-30f).bits, 0x80);
  EXPECT_EQ(bf16(-1e-45f).bits, 0x8000);
}

// ---- (c) f64 rounds once --------------------------------------------------------------------

TEST(DType, F64RoundsOnceNotThroughF32) {
  std::mt19937_64 rng(7);
  for (const Format& f : kFormats) {
    const Table& t = table(f);
    int double_round_cases = 0, bad = 0;
    std::vector<double> xs;
    for (size_t i = 0; i + 1 < t.v.size(); ++i) {
      const double mid = (t.v[i] + t.v[i + 1]) / 2;
      // Just above / below a midpoint by less than half an f32 ulp: f32 rounds these onto the
      // midpoint, and the tie then goes to even - the wrong way for one of the two.
      const double tiny = std::max(mid, 1e-300) * 0x1p-40;
      for (double x : {mid + tiny, mid - tiny, mid, mid * (1 + 0x1p-30), mid * (1 - 0x1p-30)}) {
        xs.push_back(x);
        xs.push_back(-x);
      }
    }
    std::uniform_real_distribution<double> in_range(-t.v.back(), t.v.back());
    for (int i = 0; i < 200000; ++i) {
      xs.push_back(in_range(rng));
      const uint64_t u = rng();
      double d;
      std::memcpy(&d, &u, 8);
      xs.push_back(d);
    }
    for (double x : xs) {
      const uint32_t want = ref_round(t, x);
      const uint32_t twice = ref_round(t, static_cast<double>(static_cast<float>(x)));
      if (!same_pattern(f, want, twice)) ++double_round_cases;
      const uint32_t got = impl_from_f64(f, x);
      if (!same_pattern(f, got, want) && bad++ < 5)
        ADD_FAILURE() << f.name << " from f64 " << x << ": got 0x" << std::hex << got << ", expected 0x" << want;
      // The constructor from double is the same conversion.
      const uint32_t ctor = f.mbits == 10 ? f16(x).bits : f.mbits == 7 ? bf16(x).bits : f8e4m3(x).bits;
      if (!same_pattern(f, ctor, want) && bad++ < 5)
        ADD_FAILURE() << f.name << " ctor from f64 " << x << ": got 0x" << std::hex << ctor;
    }
    EXPECT_EQ(bad, 0) << f.name;
    // The probes really contain inputs where going through f32 gives a different answer.
    EXPECT_GT(double_round_cases, 100) << f.name;
  }
  // One spelled out: 1 + 2^-11 + 2^-40 is just above the midpoint of 1 and 1 + 2^-10 in f16. Through
  // f32 it becomes the midpoint itself, which ties to 1.
  const double x = 1 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(f16(static_cast<float>(x)).bits, 0x3c00);
  EXPECT_EQ(convert<f16>(x).bits, 0x3c01);
}

// Integers wider than f32's 24 bits round once into the narrow floats as well.
TEST(DType, IntegersRoundOnce) {
  std::mt19937_64 rng(11);
  const Table& t = table(kBF16);
  int bad = 0;
  for (int i = 0; i < 100000; ++i) {
    const int shift = static_cast<int>(rng() % 60);
    const int64_t v = static_cast<int64_t>(rng() >> (4 + shift)) * ((i & 1) ? -1 : 1);
    // The exact value is v; long double on x86 holds 64-bit integers exactly.
    const long double exact = static_cast<long double>(v);
    // The reference rounds the nearest double below/above; compare with a search on exact values.
    const uint32_t got = convert<bf16>(v).bits;
    const double g = ref_decode(kBF16, got);
    // got must be a nearest value: no finite bf16 is strictly closer to v.
    const size_t hi = static_cast<size_t>(std::lower_bound(t.v.begin(), t.v.end(), std::fabs(g)) - t.v.begin());
    for (size_t k : {hi - 1, hi + 1}) {
      if (k >= t.v.size() - 1) continue;
      const long double alt = std::signbit(g) ? -t.v[k] : t.v[k];
      if (std::fabs(static_cast<long double>(g) - exact) > std::fabs(alt - exact) && bad++ < 5)
        ADD_FAILURE() << "bf16 from i64 " << v << " gave " << g << ", but " << static_cast<double>(alt) << " is nearer";
    }
  }
  EXPECT_EQ(bad, 0);
  // 2^24 + 2^16 + 1: f32 rounds it to 2^24 + 2^16 (a bf16 tie, which goes down to 2^24); the
  // correct bf16 is 2^24 + 2^17.
  const int64_t v = (int64_t{1} << 24) + (int64_t{1} << 16) + 1;
  EXPECT_EQ(static_cast<double>(convert<double>(convert<bf16>(v))), 16908288.0);
  EXPECT_EQ(static_cast<double>(convert<double>(convert<bf16>(static_cast<uint32_t>(v)))), 16908288.0);
  EXPECT_EQ(static_cast<double>(convert<double>(convert<bf16>(-v))), -16908288.0);
  // Scalar ints go the same way.
  EXPECT_EQ(static_cast<float>(Scalar(v).as<bf16>()), 16908288.0f);
  // i64 -> f32 and f64 are the C++ conversions (correctly rounded).
  EXPECT_EQ(convert<double>(int64_t{(int64_t{1} << 62) + 1}), 0x1p62);
  EXPECT_EQ(convert<float>(int64_t{(int64_t{1} << 40) + (int64_t{1} << 16) + 1}), 0x1p40f + 0x1p17f);
}

// ---- (d) float -> int saturates, NaN -> 0 ---------------------------------------------------

TEST(DType, FloatToIntSaturates) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(convert<uint8_t>(300.0f), 255);
  EXPECT_EQ(convert<uint8_t>(255.9f), 255);
  EXPECT_EQ(convert<uint8_t>(254.9f), 254);
  EXPECT_EQ(convert<uint8_t>(-5.0f), 0);
  EXPECT_EQ(convert<uint8_t>(nan), 0);
  EXPECT_EQ(convert<uint8_t>(INFINITY), 255);
  EXPECT_EQ(convert<uint8_t>(-INFINITY), 0);
  EXPECT_EQ(convert<uint32_t>(4294967296.0), 4294967295u);
  EXPECT_EQ(convert<uint32_t>(4294967295.0), 4294967295u);
  EXPECT_EQ(convert<uint32_t>(4294967294.5), 4294967294u);
  EXPECT_EQ(convert<uint32_t>(4e9f), 4000000000u);
  EXPECT_EQ(convert<uint32_t>(-1.0), 0u);
  EXPECT_EQ(convert<uint32_t>(std::numeric_limits<double>::quiet_NaN()), 0u);
  EXPECT_EQ(convert<int64_t>(9.3e18), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(convert<int64_t>(-9.3e18), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(convert<int64_t>(0x1p63), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(convert<int64_t>(-0x1p63), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(convert<int64_t>(std::nextafter(0x1p63, 0.0)), int64_t{0x7ffffffffffffc00});
  EXPECT_EQ(convert<int64_t>(std::nextafter(0x1p63f, 0.0f)), int64_t{0x7fffff8000000000});
  EXPECT_EQ(convert<int64_t>(-2.9), -2);
  EXPECT_EQ(convert<int64_t>(2.9f), 2);
  EXPECT_EQ(convert<int64_t>(nan), 0);
  EXPECT_EQ(convert<int64_t>(INFINITY), std::numeric_limits<int64_t>::max());
  // The narrow floats go through f32.
  EXPECT_EQ(convert<uint8_t>(f16::from_bits(0x7c00)), 255);        // inf
  EXPECT_EQ(convert<int64_t>(f16::from_bits(0xfc00)), INT64_MIN);  // -inf
  EXPECT_EQ(convert<uint32_t>(bf16::from_bits(0x7fc0)), 0u);       // NaN
  EXPECT_EQ(convert<int64_t>(f8e4m3::from_bits(0xff)), 0);         // NaN
  EXPECT_EQ(convert<int64_t>(f8e4m3::from_bits(0xfe)), -448);
  EXPECT_EQ(convert<uint8_t>(f8e4m3::from_bits(0x7e)), 255);  // 448 saturates
  EXPECT_EQ(convert<uint8_t>(bf16(-0.5f)), 0);
  // Through the cast op on a tensor.
  const std::vector<float> in{300.0f, -5.0f, nan, INFINITY, -INFINITY, 2.9f, -2.9f, 4e9f};
  const Tensor x = Tensor::from_vector(in, {8});
  EXPECT_EQ(x.to_dtype(DType::U8).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 0, 0, 255, 0, 2, 0, 255}));
  EXPECT_EQ(x.to_dtype(DType::U32).to_vector<uint32_t>(),
            (std::vector<uint32_t>{300, 0, 0, 4294967295u, 0, 2, 0, 4000000000u}));
  EXPECT_EQ(x.to_dtype(DType::I64).to_vector<int64_t>(),
            (std::vector<int64_t>{300, -5, 0, INT64_MAX, INT64_MIN, 2, -2, 4000000000}));
}

TEST(DType, I32) {
  EXPECT_EQ(dtype_name(DType::I32), "i32");
  EXPECT_EQ(dtype_size(DType::I32), 4);
  EXPECT_TRUE(is_int(DType::I32));
  EXPECT_TRUE(is_signed(DType::I32));
  EXPECT_EQ(dtype_of<int32_t>, DType::I32);
  DType parsed{};
  ASSERT_TRUE(parse_dtype("i32", &parsed));
  EXPECT_EQ(parsed, DType::I32);
  // In every mask of its kind; the dtypes before it keep their bits.
  EXPECT_NE(kIntTypes & dtype_bit(DType::I32), 0u);
  EXPECT_NE(kSignedTypes & dtype_bit(DType::I32), 0u);
  EXPECT_EQ(kFloatTypes & dtype_bit(DType::I32), 0u);
  EXPECT_EQ(static_cast<int>(DType::F8E4M3), 7);
  // Conversions saturate at the i32 range, truncate toward zero and send NaN to 0.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> in{3e9f, -3e9f, nan, INFINITY, -2.9f, 2.9f, -2147483648.0f, 123456.0f};
  const Tensor x = Tensor::from_vector(in, {8});
  EXPECT_EQ(x.to_dtype(DType::I32).to_vector<int32_t>(),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, 0, INT32_MAX, -2, 2, INT32_MIN, 123456}));
  // Integer to integer wraps modulo 2^32, as NumPy's and PyTorch's casts do.
  const Tensor big =
      Tensor::from_vector(std::vector<int64_t>{(int64_t{1} << 40) + 5, -(int64_t{1} << 40) - 3, int64_t{1} << 31}, {3});
  EXPECT_EQ(big.to_dtype(DType::I32).to_vector<int32_t>(), (std::vector<int32_t>{5, -3, INT32_MIN}));
  // i32 -> f32 rounds once (2^24 + 1 is not an f32; round to nearest even gives 2^24).
  const Tensor odd = Tensor::from_vector(std::vector<int32_t>{(1 << 24) + 1, INT32_MAX, INT32_MIN}, {3});
  EXPECT_EQ(odd.to_dtype(DType::F32).to_vector<float>(),
            (std::vector<float>{16777216.0f, 2147483648.0f, -2147483648.0f}));
  EXPECT_EQ(Scalar(int64_t{5000000000}).as<int32_t>(), INT32_MAX);
  EXPECT_EQ(Scalar(-2.5).as<int32_t>(), -2);
}

TEST(DType, ScalarConversions) {
  // Integers are kept exact and saturate into narrower integer types.
  EXPECT_EQ(Scalar((int64_t{1} << 62) + 1).as<int64_t>(), (int64_t{1} << 62) + 1);
  EXPECT_EQ(Scalar(4000000000u).as<uint32_t>(), 4000000000u);
  EXPECT_EQ(Scalar(int64_t{4000000000}).as<uint32_t>(), 4000000000u);
  EXPECT_EQ(Scalar(300).as<uint8_t>(), 255);
  EXPECT_EQ(Scalar(-1).as<uint8_t>(), 0);
  EXPECT_EQ(Scalar(-1).as<uint32_t>(), 0u);
  EXPECT_EQ(Scalar(int64_t{1} << 40).as<uint32_t>(), 4294967295u);
  EXPECT_EQ(Scalar(-7).as<int64_t>(), -7);
  EXPECT_EQ(Scalar(INT64_MIN).as<int64_t>(), INT64_MIN);
  // Doubles round once.
  EXPECT_EQ(Scalar(1 + 0x1p-11 + 0x1p-40).as<f16>().bits, 0x3c01);
  EXPECT_EQ(Scalar(2.5).as<int64_t>(), 2);
  EXPECT_EQ(Scalar(1e30).as<int64_t>(), INT64_MAX);
  EXPECT_EQ(Scalar(-0.0).as<double>(), 0.0);
  EXPECT_TRUE(std::signbit(Scalar(-0.0).as<float>()));
}

// ---- (e) cross-check with the compiler's _Float16 -------------------------------------------

#if defined(__FLT16_MAX__)
TEST(DType, F16AgreesWithCompilerFloat16) {
  for (uint32_t b = 0; b < 65536; ++b) {
    _Float16 h;
    const uint16_t b16 = static_cast<uint16_t>(b);
    std::memcpy(&h, &b16, 2);
    const float want = static_cast<float>(h);
    ASSERT_TRUE(same_value(static_cast<double>(static_cast<float>(f16::from_bits(b16))), static_cast<double>(want)))
        << std::hex << b;
  }
  std::mt19937 rng(99);
  std::vector<float> xs = probes(table(kF16));
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    float x;
    std::memcpy(&x, &u, 4);
    xs.push_back(x);
  }
  for (float x : xs) {
    const _Float16 h = static_cast<_Float16>(x);
    uint16_t want;
    std::memcpy(&want, &h, 2);
    ASSERT_TRUE(same_pattern(kF16, f16(x).bits, want)) << x << " 0x" << std::hex << f16(x).bits << " vs 0x" << want;
  }
}
#endif

}  // namespace
}  // namespace wick
