// Helpers shared by the op front ends in src/core: argument checks with uniform error messages.
#pragma once

#include <string>

#include "backend/backend.h"
#include "wick/tensor.h"

namespace wick::front {

inline Backend& backend(const Tensor& t) { return backend_for(t.device()); }
// Built with += : GCC 12 at -O3 warns falsely (-Wrestrict) on "literal" + std::string&&.
inline std::string op_tag(Op op) {
  std::string s = "[";
  s += op_name(op);
  s += "] ";
  return s;
}

// Throws unless t is defined.
void check_defined(Op op, const Tensor& t, const char* what = "input");
// Throws DTypeError unless the op table defines op for t's dtype, and UnsupportedError unless t's
// device implements it.
void check_op_dtype(Op op, const Tensor& t);
// Throws DeviceError unless the two tensors are on the same GPU (any handles of it) or both on the
// CPU. The op runs on a's handle: when b is on another handle, a's stream is made to wait for b's
// producer (Note [Cross-stream use] in backend/backend.h), so `a` must be the tensor whose
// backend the op calls.
void check_same_device(Op op, const Tensor& a, const Tensor& b);
// Before an in-place write of t by op (on t's handle): throws InvalidArgument when t is a view of
// read-only memory (a file mapping) or has a zero stride on a dim of size > 1 (a broadcast view),
// else waits for other streams' uses of its storage.
void before_write(Op op, const Tensor& t);
// Throws DTypeError unless the two tensors share dtype.
void check_same_dtype(Op op, const Tensor& a, const Tensor& b);
// Throws DTypeError unless ids has an integer dtype (kIntTypes).
void check_index_dtype(Op op, const Tensor& ids);
// The names of the dtypes in a mask, comma separated ("u8, u32, i64"), for error messages.
std::string dtype_names(uint32_t mask);

// A new contiguous tensor on the same device as `like`.
inline Tensor new_like(const Tensor& like, const Shape& shape, DType dtype) {
  return Tensor::empty(shape, dtype, like.device());
}

}  // namespace wick::front
