#include "core/front.h"

namespace wick::front {

void check_defined(Op op, const Tensor& t, const char* what) {
  if (!t.defined()) throw InvalidArgument(op_tag(op) + what + " is an undefined tensor");
}

void before_write(Op op, const Tensor& t) {
  if (!t.defined()) return;
  if (t.storage()->read_only())
    throw InvalidArgument(op_tag(op) + "cannot write into " + t.str() + ": it is a view of read-only memory (a file)");
  // A zero stride on a dim of size > 1 makes several elements one location: the last writer would
  // win silently.
  for (size_t d = 0; d < t.rank(); ++d)
    if (t.strides()[d] == 0 && t.shape()[d] > 1)
      throw InvalidArgument(op_tag(op) + "cannot write into " + t.str() + ": dim " + std::to_string(d) + " of size " +
                            std::to_string(t.shape()[d]) +
                            " has stride 0 (a broadcast view: several elements share one location)");
  t.storage()->before_write(backend(t));
}

void check_op_dtype(Op op, const Tensor& t) {
  check_defined(op, t);
  if (!op_defined_for(op, t.dtype()))
    throw DTypeError(op_tag(op) + "not defined for dtype " + std::string(dtype_name(t.dtype())) + " (input " + t.str() +
                     ")");
  if (!backend(t).supports(op, t.dtype()))
    throw UnsupportedError(op_tag(op) + "dtype " + std::string(dtype_name(t.dtype())) + " is not implemented on " +
                           t.device().location() + " (input " + t.str() + ")");
}

void check_same_device(Op op, const Tensor& a, const Tensor& b) {
  if (a.device().same_device(b.device())) return;
  if (!a.device().same_gpu(b.device()))
    throw DeviceError(op_tag(op) + "operands on different devices: " + a.str() + " and " + b.str());
  // Two handles of one GPU: see Note [Cross-stream use].
  if (event_tracking() && b.defined()) b.storage()->use_on(backend(a));
}

void check_same_dtype(Op op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    throw DTypeError(op_tag(op) + "operands of different dtypes: " + a.str() + " and " + b.str());
}

void check_index_dtype(Op op, const Tensor& ids) {
  check_defined(op, ids, "ids");
  if (!is_int(ids.dtype()))
    throw DTypeError(op_tag(op) + "ids must have an integer dtype (" + dtype_names(kIntTypes) + "), got " + ids.str());
}

std::string dtype_names(uint32_t mask) {
  std::string s;
  for (DType d : kAllDTypes)
    if (mask & dtype_bit(d)) s += (s.empty() ? "" : ", ") + std::string(dtype_name(d));
  return s;
}

}  // namespace wick::front
