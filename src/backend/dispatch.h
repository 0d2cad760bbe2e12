// dtype dispatch, shared by the CPU and GPU backends and the conformance cases:
// wick::dispatch(dtype, [&]<class T>() { ... }) runs the lambda instantiated for the element type.
// dispatch_in<Mask> instantiates only the dtypes in Mask (a kFloatTypes-style bit mask), which keeps
// compile time down for ops defined on a subset; other dtypes throw.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick {

template <uint32_t Mask = kAllTypes, class F>
decltype(auto) dispatch_in(DType d, F&& f, const char* op = "dispatch") {
  switch (d) {
#define WICK_X(name, type, str)                                                               \
  case DType::name:                                                                           \
    if constexpr ((Mask & dtype_bit(DType::name)) != 0) return f.template operator()<type>(); \
    break;
    WICK_DTYPES(WICK_X)
#undef WICK_X
  }
  throw UnsupportedError(std::string("[") + op + "] dtype " + std::string(dtype_name(d)) + " is not supported");
}

template <class F>
decltype(auto) dispatch(DType d, F&& f, const char* op = "dispatch") {
  return dispatch_in<kAllTypes>(d, std::forward<F>(f), op);
}

// f.template operator()<U>() for U the unsigned integer of `bytes` bytes (1, 2, 4; 8 otherwise):
// for the ops that move elements without looking at them (copies, gathers, scatters), which are
// then instantiated per element size instead of per dtype.
template <class F>
decltype(auto) dispatch_bits(int64_t bytes, F&& f) {
  if (bytes == 1) return f.template operator()<uint8_t>();
  if (bytes == 2) return f.template operator()<uint16_t>();
  if (bytes == 4) return f.template operator()<uint32_t>();
  return f.template operator()<uint64_t>();
}

}  // namespace wick
