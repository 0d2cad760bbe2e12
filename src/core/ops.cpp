#include "wick/ops.h"

#include "backend/backend.h"

namespace wick {

bool supports(Op op, DType d, const Device& device) {
  return op_defined_for(op, d) && backend_for(device).supports(op, d);
}

bool parse_op(std::string_view name, Op* out) {
  for (const OpInfo& info : kOpTable)
    if (info.name == name) {
      *out = info.op;
      return true;
    }
  return false;
}

bool parse_dtype(std::string_view name, DType* out) {
  for (DType d : kAllDTypes)
    if (dtype_name(d) == name) {
      *out = d;
      return true;
    }
  return false;
}

}  // namespace wick
