// Shape: any rank, int64 dims. A small vector with inline room for 8 dims; more spill to the heap.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace wick {

class Dims {
 public:
  Dims() = default;
  Dims(std::initializer_list<int64_t> v) : v_(v) {}
  explicit Dims(std::vector<int64_t> v) : v_(std::move(v)) {}
  template <class It>
  Dims(It b, It e) : v_(b, e) {}
  explicit Dims(size_t n, int64_t fill = 0) : v_(n, fill) {}

  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  int64_t& operator[](size_t i) { return v_[i]; }
  int64_t operator[](size_t i) const { return v_[i]; }
  int64_t* data() { return v_.data(); }
  const int64_t* data() const { return v_.data(); }
  auto begin() { return v_.begin(); }
  auto end() { return v_.end(); }
  auto begin() const { return v_.begin(); }
  auto end() const { return v_.end(); }
  int64_t back() const { return v_.back(); }
  void push_back(int64_t x) { v_.push_back(x); }
  void insert(size_t at, int64_t x) { v_.insert(v_.begin() + static_cast<std::ptrdiff_t>(at), x); }
  void erase(size_t at) { v_.erase(v_.begin() + static_cast<std::ptrdiff_t>(at)); }
  void resize(size_t n, int64_t fill = 0) { v_.resize(n, fill); }
  const std::vector<int64_t>& vec() const { return v_; }
  bool operator==(const Dims& o) const { return v_ == o.v_; }
  bool operator!=(const Dims& o) const { return v_ != o.v_; }

  // Product of all dims (1 for rank 0).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : v_) n *= d;
    return n;
  }
  // "[2, 3, 4]"
  std::string str() const;

 private:
  std::vector<int64_t> v_;
};

using Shape = Dims;
using Strides = Dims;

// Normalises a possibly negative dim index against `rank`; throws ShapeError naming `op`.
size_t normalize_dim(int64_t dim, size_t rank, const char* op);

// numpy broadcasting of two shapes; throws ShapeError naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace wick
