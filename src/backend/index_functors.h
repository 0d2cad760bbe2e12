// Per-element math of the index family (scatter_add, index_add), shared by the CPU loops and the GPU
// kernels. Host-only headers stay out of here (see DESIGN principle 4).
#pragma once

#include <cstdint>

#include "wick/dtype.h"

namespace wick {

// a + b in T's own arithmetic, with the rounding and overflow rules every backend must agree on:
// integers wrap (two's complement, computed unsigned so that i64 overflow is defined), the 8/16-bit
// floats add in f32 and round once, f32 and f64 add natively.
struct AddWrap {
  template <class T>
  WICK_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else if constexpr (is_reduced_float_v<T>) {
      return T(static_cast<float>(a) + static_cast<float>(b));
    } else {
      return a + b;
    }
  }
};

// The value scatter writes: the new one replaces the old.
struct Assign {
  template <class T>
  WICK_HOST_DEVICE T operator()(T, T b) const {
    return b;
  }
};

}  // namespace wick
