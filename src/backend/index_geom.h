// Host-side geometry of the index family shared by the CPU and GPU backends: how index_select,
// gather and scatter become strided loops over three operands (Note [Index kernels] in
// src/cpu/index.cpp), and the error both backends raise for an id out of range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/layout.h"
#include "wick/ops.h"

namespace wick::indexing {

// The dtypes ids may have.
inline constexpr uint32_t kIdTypes = kIntTypes;

// The strides of the indexed operand: s with stride 0 at `dim`, where the id supplies the coordinate.
inline Strides with_zero_at(Strides s, size_t dim) {
  s[dim] = 0;
  return s;
}

// Strides of 1-D ids laid along `dim` of a rank-`rank` iteration (0 elsewhere): index_select's ids.
inline Strides ids_along(size_t rank, size_t dim, int64_t stride) {
  Strides s(rank, 0);
  s[dim] = stride;
  return s;
}

// The element offset (the layout's own offset excluded) of row-major position `pos` of `l`.
inline int64_t offset_of_position(const Layout& l, int64_t pos) {
  int64_t off = 0;
  for (size_t d = l.rank(); d-- > 0;) {
    const int64_t n = l.dim(d);
    off += (pos % n) * l.stride(d);
    pos /= n;
  }
  return off;
}

// The IndexError for id `value` outside [0, size) of dim `dim`, on `device` ("cpu", "cuda:0").
inline IndexError out_of_range(const char* op, int64_t value, int dim, int64_t size, const std::string& device) {
  return IndexError(std::string("[") + op + "] index " + std::to_string(value) + " out of range for dim " +
                    std::to_string(dim) + " of size " + std::to_string(size) + " (" + device + ")");
}

}  // namespace wick::indexing
