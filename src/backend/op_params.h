// The typed parameters of the backend ops, one struct per op family. Values that may be integers
// travel as Scalar (exact for every i64); the front end has validated every field.
#pragma once

#include <cstdint>

#include "wick/dtype.h"
#include "wick/qformat.h"

namespace wick {

// Parameters of the UnaryParam rows of the op table:
//   affine      a = mul, b = add
//   clamp       a = lo, b = hi (integer dtypes: already saturated to the dtype's range and rounded
//               inward by the front end, so lo and hi are exact values of the dtype)
//   powf        a = exponent
//   elu         a = alpha
//   leaky_relu  a = negative slope
// Unary rows without parameters ignore them.
struct UnaryParams {
  Scalar a;
  Scalar b;
};

struct ArangeParams {
  double start = 0;
  double step = 1;
};

// A stream of counter-based random numbers: Philox4x32-10 keyed by `seed`, 128-bit block counter
// starting at `counter`. See Note [Random streams] in src/backend/philox.h.
struct RandomStream {
  uint64_t seed = 0;
  uint64_t counter = 0;
};

// rand_uniform: a = lo, b = up (values in [lo, up)); rand_normal: a = mean, b = std.
struct RandomParams {
  double a = 0;
  double b = 1;
  RandomStream stream;
};

struct NormParams {
  double eps = 1e-5;
};

// attention_decode: the cache row of the new position (when no position tensor is given) and the
// factor of the scores.
struct AttentionParams {
  int64_t position = 0;
  double scale = 1;
};

}  // namespace wick
