// Shape: any rank, int64 dims. A small vector with inline room for 8 dims; more spill to the heap.
// Every op builds several shapes and layouts (the output's, broadcast views, launch plans), so they
// must not cost a heap allocation each: with a std::vector inside, malloc and free were the largest
// part of wick's own host time per small op.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

namespace wick {

class Dims {
 public:
  static constexpr size_t kInline = 8;  // dims held without a heap allocation

  Dims() = default;
  Dims(std::initializer_list<int64_t> v) { assign(v.begin(), v.size()); }
  explicit Dims(const std::vector<int64_t>& v) { assign(v.data(), v.size()); }
  template <std::input_iterator It>
  Dims(It b, It e) {
    if constexpr (std::forward_iterator<It>) reserve(static_cast<size_t>(std::distance(b, e)));
    for (; b != e; ++b) push_back(static_cast<int64_t>(*b));
  }
  explicit Dims(size_t n, int64_t fill = 0) { resize(n, fill); }
  Dims(const Dims& o) { assign(o.data(), o.size_); }
  Dims(Dims&& o) noexcept { take(o); }
  Dims& operator=(const Dims& o) {
    if (this != &o) assign(o.data(), o.size_);
    return *this;
  }
  Dims& operator=(Dims&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  ~Dims() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t* data() { return heap_ ? heap_ : inline_; }
  const int64_t* data() const { return heap_ ? heap_ : inline_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t back() const { return data()[size_ - 1]; }
  int64_t& back() { return data()[size_ - 1]; }
  void push_back(int64_t x) {
    if (size_ == cap_) reserve(2 * cap_);
    data()[size_++] = x;
  }
  void insert(size_t at, int64_t x) {
    push_back(x);
    std::rotate(begin() + at, end() - 1, end());
  }
  void erase(size_t at) {
    std::copy(begin() + at + 1, end(), begin() + at);
    --size_;
  }
  void resize(size_t n, int64_t fill = 0) {
    reserve(n);
    if (n > size_) std::fill(begin() + size_, begin() + n, fill);
    size_ = static_cast<uint32_t>(n);
  }
  std::vector<int64_t> vec() const { return {begin(), end()}; }
  bool operator==(const Dims& o) const { return std::equal(begin(), end(), o.begin(), o.end()); }
  bool operator!=(const Dims& o) const { return !(*this == o); }

  // Product of all dims (1 for rank 0).
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : *this) n *= d;
    return n;
  }
  // "[2, 3, 4]"
  std::string str() const;

 private:
  void reserve(size_t n) {
    if (n <= cap_) return;
    auto* p = new int64_t[n];
    std::copy(begin(), end(), p);
    delete[] heap_;
    heap_ = p;
    cap_ = static_cast<uint32_t>(n);
  }
  void assign(const int64_t* p, size_t n) {
    reserve(n);
    std::copy(p, p + n, data());
    size_ = static_cast<uint32_t>(n);
  }
  void take(Dims& o) {  // *this holds no heap block
    size_ = o.size_;
    if (o.heap_) {
      heap_ = o.heap_;
      cap_ = o.cap_;
      o.heap_ = nullptr;
      o.cap_ = kInline;
    } else {
      std::copy(o.inline_, o.inline_ + o.size_, inline_);
    }
    o.size_ = 0;
  }
  void release() {
    delete[] heap_;
    heap_ = nullptr;
    cap_ = kInline;
    size_ = 0;
  }

  int64_t* heap_ = nullptr;  // the dims when more than kInline, else null
  uint32_t size_ = 0;
  uint32_t cap_ = kInline;
  int64_t inline_[kInline];  // the dims while they fit (only the first size_ are set)
};

using Shape = Dims;
using Strides = Dims;

// Normalises a possibly negative dim index against `rank`; throws ShapeError naming `op`.
size_t normalize_dim(int64_t dim, size_t rank, const char* op);

// numpy broadcasting of two shapes; throws ShapeError naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

}  // namespace wick
