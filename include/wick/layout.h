// Layout = shape + strides + offset, all int64 and counted in elements.
//
// Note [Contiguity]
// A layout is contiguous (row-major) when, for every dim i with shape[i] > 1,
//   strides[i] == prod(shape[i+1:]).
// Dims of size 1 may have any stride, and a layout with a zero-size dim is contiguous. The flag is
// computed once, when the layout is built, and the views below keep it up to date.
#pragma once

#include <cstdint>
#include <string>

#include "wick/shape.h"

namespace wick {

class Layout {
 public:
  Layout() = default;
  // Contiguous row-major layout of `shape` starting at `offset`.
  explicit Layout(Shape shape, int64_t offset = 0);
  Layout(Shape shape, Strides strides, int64_t offset);

  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t stride(size_t i) const { return strides_[i]; }
  int64_t numel() const { return numel_; }
  bool is_contiguous() const { return contiguous_; }

  // Smallest and one-past-largest element index this layout touches (offset included); both equal
  // `offset` when numel() == 0. Negative strides are not produced by wick's views.
  int64_t min_index() const;
  int64_t max_index_exclusive() const;

  // Views. Each returns a new layout over the same storage or throws ShapeError naming `op`.
  Layout narrow(size_t dim, int64_t start, int64_t len) const;
  Layout transpose(size_t d0, size_t d1) const;
  Layout permute(const Dims& order) const;
  Layout select(size_t dim, int64_t index) const;  // drops `dim`
  Layout unsqueeze(size_t dim) const;
  Layout squeeze(size_t dim) const;
  Layout broadcast_as(const Shape& shape) const;  // numpy rules; broadcast dims get stride 0
  // Reshape without copying; returns false when the strides do not allow it.
  bool try_reshape(const Shape& shape, Layout* out) const;

  std::string str() const;  // "shape [2, 3] strides [3, 1] offset 0"

 private:
  void init_flags();
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
  int64_t numel_ = 1;
  bool contiguous_ = true;
};

Strides contiguous_strides(const Shape& shape);

}  // namespace wick
