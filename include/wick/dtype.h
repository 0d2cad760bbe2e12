// Element types. The set is candle's: u8, u32, i64, bf16, f16, f32, f64, f8e4m3.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "wick/scalar_types.h"

namespace wick {

// X(enum name, C++ type, printable name)
#define WICK_DTYPES(X)      \
  X(U8, uint8_t, "u8")      \
  X(U32, uint32_t, "u32")   \
  X(I64, int64_t, "i64")    \
  X(BF16, bf16, "bf16")     \
  X(F16, f16, "f16")        \
  X(F32, float, "f32")      \
  X(F64, double, "f64")     \
  X(F8E4M3, f8e4m3, "f8e4m3")

enum class DType : uint8_t {
#define WICK_X(name, type, str) name,
  WICK_DTYPES(WICK_X)
#undef WICK_X
};

inline constexpr int kNumDTypes = 8;
inline constexpr DType kAllDTypes[kNumDTypes] = {DType::U8,  DType::U32, DType::I64, DType::BF16,
                                                 DType::F16, DType::F32, DType::F64, DType::F8E4M3};

constexpr std::string_view dtype_name(DType d) {
  switch (d) {
#define WICK_X(name, type, str) \
  case DType::name:             \
    return str;
    WICK_DTYPES(WICK_X)
#undef WICK_X
  }
  return "?";
}

constexpr int64_t dtype_size(DType d) {
  switch (d) {
#define WICK_X(name, type, str) \
  case DType::name:             \
    return static_cast<int64_t>(sizeof(type));
    WICK_DTYPES(WICK_X)
#undef WICK_X
  }
  return 0;
}

constexpr bool is_float(DType d) { return d == DType::BF16 || d == DType::F16 || d == DType::F32 || d == DType::F64 || d == DType::F8E4M3; }
constexpr bool is_int(DType d) { return !is_float(d); }
constexpr bool is_signed(DType d) { return d != DType::U8 && d != DType::U32; }

// Parses "f32", "bf16", ...; returns false when the name is unknown.
bool parse_dtype(std::string_view name, DType* out);

template <class T>
struct DTypeOf;
#define WICK_X(name, type, str)                        \
  template <>                                          \
  struct DTypeOf<type> {                               \
    static constexpr DType value = DType::name;        \
  };
WICK_DTYPES(WICK_X)
#undef WICK_X
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

template <class T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, bf16> || std::is_same_v<T, f16> || std::is_same_v<T, f8e4m3>;
template <class T>
inline constexpr bool is_float_v = is_reduced_float_v<T> || std::is_floating_point_v<T>;

// The type float ops compute in: f32 for the 8/16-bit floats and f32, f64 for f64, the type itself
// for integers.
template <class T>
using compute_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

namespace detail {
// f64 -> f32 rounding to odd: truncate, then set the lowest bit when the result is inexact.
// Rounding to odd first and then to nearest even into a format with at least two fewer mantissa
// bits gives the correctly rounded result, so f64 -> bf16/f16/f8 rounds once, not twice.
WICK_HOST_DEVICE inline float f64_to_f32_round_odd(double d) {
  float f = static_cast<float>(d);
  if (!(d == d)) return f;
  uint32_t u = f32_bits(f);
  const double back = static_cast<double>(f);
  const bool away = (d >= 0) ? (back > d) : (back < d);
  if (away) u -= 1;  // one step toward zero (|f| > 0 here, so no underflow of the bits)
  if (static_cast<double>(f32_from_bits(u)) != d) u |= 1u;
  return f32_from_bits(u);
}
// Integer -> f32 rounding to odd (see above), for integer -> bf16/f16/f8 in one rounding: a plain
// int -> float cast rounds to nearest first and can turn a value just above a tie of the narrow
// format into the tie itself (u32 2^30 + 2^22 + 1 became bf16 2^30, not 2^30 + 2^23).
template <class I>
WICK_HOST_DEVICE inline float int_to_f32_round_odd(I v) {
  bool neg = false;
  if constexpr (std::is_signed_v<I>) neg = v < 0;
  uint64_t m = neg ? uint64_t{0} - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (m < (uint64_t{1} << 53)) return f64_to_f32_round_odd(neg ? -static_cast<double>(m) : static_cast<double>(m));
  int shift = 0;  // keep 53 bits and fold the dropped ones into a sticky bit: still round-to-odd
  while ((m >> shift) >= (uint64_t{1} << 53)) ++shift;
  const uint64_t kept = (m >> shift) | ((m & ((uint64_t{1} << shift) - 1)) != 0 ? 1u : 0u);
  const double d = static_cast<double>(kept) * static_cast<double>(uint64_t{1} << shift);
  return f64_to_f32_round_odd(neg ? -d : d);
}
}  // namespace detail

// Conversion between any two element types, through the compute type.
template <class To, class From>
WICK_HOST_DEVICE inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_reduced_float_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (is_reduced_float_v<To>) {
    if constexpr (std::is_same_v<From, double>) {
      // Round once, from f64: going through f32 first would round twice.
      return To(detail::f64_to_f32_round_odd(v));
    } else if constexpr (std::is_integral_v<From>) {
      return To(detail::int_to_f32_round_odd(v));
    } else {
      return To(static_cast<float>(v));
    }
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    // Float to int: NaN -> 0, saturate at the type's range, truncate toward zero (the behaviour
    // is defined for every input, unlike a plain C++ cast).
    if (!(v == v)) return To(0);
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::lowest());
    constexpr From hi = static_cast<From>(std::numeric_limits<To>::max());
    if (v <= lo) return std::numeric_limits<To>::lowest();
    if (v >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace wick

namespace wick {

// A value to fill with: kept as an integer when given as one, so that every i64 / u32 value is
// exact, and as a double otherwise.
struct Scalar {
  double f = 0;
  int64_t i = 0;
  bool is_int = false;
  Scalar() = default;
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Scalar(T v) : f(static_cast<double>(v)), i(static_cast<int64_t>(v)), is_int(true) {}  // NOLINT
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : f(static_cast<double>(v)), i(0), is_int(false) {}  // NOLINT
  // The value as element type T (integers exact; floats rounded once).
  template <class T>
  T as() const {
    if constexpr (std::is_integral_v<T>) {
      return is_int ? static_cast<T>(i) : convert<T>(f);
    } else {
      return convert<T>(is_int ? static_cast<double>(i) : f);
    }
  }
};

}  // namespace wick
