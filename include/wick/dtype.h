// Element types: candle's set (u8, u32, i64, bf16, f16, f32, f64, f8e4m3) and i32. A row's position is
// its enum value and its bit in the op table's dtype masks: new dtypes are appended.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "wick/scalar_types.h"

namespace wick {

// X(enum name, C++ type, printable name)
#define WICK_DTYPES(X)        \
  X(U8, uint8_t, "u8")        \
  X(U32, uint32_t, "u32")     \
  X(I64, int64_t, "i64")      \
  X(BF16, bf16, "bf16")       \
  X(F16, f16, "f16")          \
  X(F32, float, "f32")        \
  X(F64, double, "f64")       \
  X(F8E4M3, f8e4m3, "f8e4m3") \
  X(I32, int32_t, "i32")

enum class DType : uint8_t {
#define WICK_X(name, type, str) name,
  WICK_DTYPES(WICK_X)
#undef WICK_X
};

inline constexpr int kNumDTypes = 0
#define WICK_X(name, type, str) +1
    WICK_DTYPES(WICK_X)
#undef WICK_X
    ;
inline constexpr DType kAllDTypes[kNumDTypes] = {
#define WICK_X(name, type, str) DType::name,
    WICK_DTYPES(WICK_X)
#undef WICK_X
};

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

// Parses "f32", "bf16", ...; returns false when the name is unknown.
bool parse_dtype(std::string_view name, DType* out);

template <class T>
struct DTypeOf;
#define WICK_X(name, type, str)                 \
  template <>                                   \
  struct DTypeOf<type> {                        \
    static constexpr DType value = DType::name; \
  };
WICK_DTYPES(WICK_X)
#undef WICK_X
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

template <class T>
inline constexpr bool is_reduced_float_v =
    std::is_same_v<T, bf16> || std::is_same_v<T, f16> || std::is_same_v<T, f8e4m3>;
template <class T>
inline constexpr bool is_float_v = is_reduced_float_v<T> || std::is_floating_point_v<T>;

// Properties of a dtype, read off its C++ type in the table.
constexpr bool is_float(DType d) {
  switch (d) {
#define WICK_X(name, type, str) \
  case DType::name:             \
    return is_float_v<type>;
    WICK_DTYPES(WICK_X)
#undef WICK_X
  }
  return false;
}
constexpr bool is_int(DType d) { return !is_float(d); }
constexpr bool is_signed(DType d) {
  switch (d) {
#define WICK_X(name, type, str) \
  case DType::name:             \
    return is_float_v<type> || std::is_signed_v<type>;
    WICK_DTYPES(WICK_X)
#undef WICK_X
  }
  return false;
}

// The type float ops compute in: f32 for the 8/16-bit floats and f32, f64 for f64, the type itself
// for integers.
template <class T>
using compute_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

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
    } else if constexpr (std::is_integral_v<From> && std::is_signed_v<From>) {
      // Integers wider than 24 bits do not fit f32 either: round to odd there too.
      return To(detail::i64_to_f32_round_odd(static_cast<int64_t>(v)));
    } else if constexpr (std::is_integral_v<From>) {
      return To(detail::u64_to_f32_round_odd(static_cast<uint64_t>(v)));
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

// An int64 value as integer type T, saturating at T's range.
template <class T>
WICK_HOST_DEVICE inline T saturate_int(int64_t i) {
  if constexpr (std::is_signed_v<T>) {
    if (i < static_cast<int64_t>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  } else {
    if (i < 0) return T(0);
  }
  if (i > 0 && static_cast<uint64_t>(i) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(i);
}

// A value to fill with: kept as an integer when given as one, so that every i64 / u32 value is
// exact, and as a double otherwise. Converting to an integer type saturates at the type's range
// (like float -> int conversion: full(u8, 300) is 255, full(u32, -1) is 0); converting to a float
// type rounds once.
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
      if (!is_int) return convert<T>(f);
      return saturate_int<T>(i);
    } else {
      return is_int ? convert<T>(i) : convert<T>(f);
    }
  }
};

}  // namespace wick
