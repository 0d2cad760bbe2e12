// Helpers shared by the op front ends in src/core: argument checks with uniform error messages.
#pragma once

#include <string>

#include "backend/backend.h"
#include "wick/tensor.h"

namespace wick::front {

inline Backend& backend(const Tensor& t) { return backend_for(t.device()); }
// Built by appending: `"[" + std::string(...)` trips a g++ 12 -Wrestrict false positive under -O3.
inline std::string op_tag(Op op) {
  std::string s(1, '[');
  s += op_name(op);
  s += "] ";
  return s;
}

// Throws unless t is defined.
void check_defined(Op op, const Tensor& t, const char* what = "input");
// Throws DTypeError unless the op table defines op for t's dtype, and UnsupportedError unless t's
// device implements it.
void check_op_dtype(Op op, const Tensor& t);
// Throws DeviceError / DTypeError unless the two tensors share device / dtype.
void check_same_device(Op op, const Tensor& a, const Tensor& b);
void check_same_dtype(Op op, const Tensor& a, const Tensor& b);
// Throws DTypeError unless ids is u8, u32 or i64.
void check_index_dtype(Op op, const Tensor& ids);

// A new contiguous tensor on the same device as `like`.
inline Tensor new_like(const Tensor& like, const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, like.device());
}

}  // namespace wick::front
