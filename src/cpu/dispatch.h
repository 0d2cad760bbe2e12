// dtype dispatch: dispatch(dtype, [&]<class T>() { ... }) runs the lambda instantiated for the
// element type. dispatch_in<Mask> instantiates only the dtypes in Mask (a kFloatTypes-style bit
// mask), which keeps compile time down for ops defined on a subset; other dtypes throw.
#pragma once

#include <string>

#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/ops.h"

namespace wick::cpu {

template <uint32_t Mask = kAllTypes, class F>
decltype(auto) dispatch_in(DType d, F&& f, const char* op = "dispatch") {
  switch (d) {
#define WICK_X(name, type, str)                                                   \
  case DType::name:                                                               \
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

}  // namespace wick::cpu
