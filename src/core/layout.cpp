#include "wick/layout.h"

#include <algorithm>
#include <sstream>

#include "wick/error.h"

namespace wick {

std::string Dims::str() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < size(); ++i) os << (i ? ", " : "") << (*this)[i];
  os << ']';
  return os.str();
}

size_t normalize_dim(int64_t dim, size_t rank, const char* op) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r)
    throw ShapeError(std::string("[") + op + "] dim " + std::to_string(dim) + " out of range for rank " +
                     std::to_string(rank));
  return static_cast<size_t>(d);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw ShapeError(std::string("[") + op + "] shapes " + a.str() + " and " + b.str() + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Strides contiguous_strides(const Shape& shape) {
  Strides s(shape.size(), 1);
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= std::max<int64_t>(shape[i], 1);
  }
  return s;
}

Layout::Layout(Shape shape, int64_t offset) : shape_(std::move(shape)), offset_(offset) {
  for (int64_t d : shape_)
    if (d < 0) throw ShapeError("[layout] negative dim in shape " + shape_.str());
  strides_ = contiguous_strides(shape_);
  init_flags();
}

Layout::Layout(Shape shape, Strides strides, int64_t offset)
    : shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset) {
  if (shape_.size() != strides_.size())
    throw ShapeError("[layout] shape " + shape_.str() + " and strides " + strides_.str() + " differ in rank");
  for (int64_t d : shape_)
    if (d < 0) throw ShapeError("[layout] negative dim in shape " + shape_.str());
  init_flags();
}

// See Note [Contiguity].
void Layout::init_flags() {
  numel_ = shape_.numel();
  contiguous_ = true;
  if (numel_ == 0) return;
  int64_t expect = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expect) {
      contiguous_ = false;
      return;
    }
    expect *= shape_[i];
  }
}

int64_t Layout::min_index() const {
  if (numel_ == 0) return offset_;
  int64_t m = offset_;
  for (size_t i = 0; i < rank(); ++i)
    if (strides_[i] < 0) m += strides_[i] * (shape_[i] - 1);
  return m;
}

int64_t Layout::max_index_exclusive() const {
  if (numel_ == 0) return offset_;
  int64_t m = offset_;
  for (size_t i = 0; i < rank(); ++i)
    if (strides_[i] > 0) m += strides_[i] * (shape_[i] - 1);
  return m + 1;
}

Layout Layout::narrow(size_t dim, int64_t start, int64_t len) const {
  if (dim >= rank()) throw ShapeError("[narrow] dim " + std::to_string(dim) + " out of range for " + shape_.str());
  if (start < 0 || len < 0 || start > shape_[dim] || len > shape_[dim] - start)
    throw ShapeError("[narrow] start " + std::to_string(start) + " len " + std::to_string(len) +
                     " out of range for dim " + std::to_string(dim) + " of " + shape_.str());
  Shape s = shape_;
  s[dim] = len;
  return Layout(s, strides_, offset_ + (len > 0 ? start * strides_[dim] : 0));
}

Layout Layout::transpose(size_t d0, size_t d1) const {
  if (d0 >= rank() || d1 >= rank())
    throw ShapeError("[transpose] dims " + std::to_string(d0) + ", " + std::to_string(d1) + " out of range for " +
                     shape_.str());
  Shape s = shape_;
  Strides st = strides_;
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return Layout(s, st, offset_);
}

Layout Layout::permute(const Dims& order) const {
  if (order.size() != rank())
    throw ShapeError("[permute] order " + order.str() + " does not match rank of " + shape_.str());
  std::vector<bool> seen(rank(), false);
  Shape s(rank());
  Strides st(rank());
  for (size_t i = 0; i < rank(); ++i) {
    const size_t d = normalize_dim(order[i], rank(), "permute");
    if (seen[d]) throw ShapeError("[permute] order " + order.str() + " repeats dim " + std::to_string(d));
    seen[d] = true;
    s[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Layout(s, st, offset_);
}

Layout Layout::select(size_t dim, int64_t index) const {
  if (dim >= rank()) throw ShapeError("[select] dim " + std::to_string(dim) + " out of range for " + shape_.str());
  if (index < 0 || index >= shape_[dim])
    throw IndexError("[select] index " + std::to_string(index) + " out of range for dim " + std::to_string(dim) +
                     " of size " + std::to_string(shape_[dim]));
  Shape s = shape_;
  Strides st = strides_;
  s.erase(dim);
  st.erase(dim);
  return Layout(s, st, offset_ + index * strides_[dim]);
}

Layout Layout::unsqueeze(size_t dim) const {
  if (dim > rank()) throw ShapeError("[unsqueeze] dim " + std::to_string(dim) + " out of range for " + shape_.str());
  Shape s = shape_;
  Strides st = strides_;
  const int64_t stride = dim < rank() ? strides_[dim] * shape_[dim] : 1;
  s.insert(dim, 1);
  st.insert(dim, stride);
  return Layout(s, st, offset_);
}

Layout Layout::squeeze(size_t dim) const {
  if (dim >= rank()) throw ShapeError("[squeeze] dim " + std::to_string(dim) + " out of range for " + shape_.str());
  if (shape_[dim] != 1)
    throw ShapeError("[squeeze] dim " + std::to_string(dim) + " of " + shape_.str() + " is not of size 1");
  Shape s = shape_;
  Strides st = strides_;
  s.erase(dim);
  st.erase(dim);
  return Layout(s, st, offset_);
}

Layout Layout::broadcast_as(const Shape& shape) const {
  if (shape == shape_) return *this;  // (the common case of elementwise ops: nothing to broadcast)
  if (shape.size() < rank())
    throw ShapeError("[broadcast_as] cannot broadcast " + shape_.str() + " to lower rank " + shape.str());
  for (int64_t d : shape)
    if (d < 0) throw ShapeError("[broadcast_as] negative dim in target shape " + shape.str() + " for " + shape_.str());
  const size_t lead = shape.size() - rank();
  Strides st(shape.size(), 0);
  for (size_t i = 0; i < rank(); ++i) {
    const int64_t have = shape_[i];
    const int64_t want = shape[lead + i];
    if (have == want) {
      st[lead + i] = strides_[i];
    } else if (have == 1) {
      st[lead + i] = 0;
    } else {
      throw ShapeError("[broadcast_as] cannot broadcast " + shape_.str() + " to " + shape.str());
    }
  }
  return Layout(shape, st, offset_);
}

bool Layout::try_reshape(const Shape& shape, Layout* out) const {
  if (shape.numel() != numel_) return false;
  if (contiguous_) {
    *out = Layout(shape, offset_);
    return true;
  }
  if (numel_ == 0) {
    *out = Layout(shape, offset_);
    return true;
  }
  // Walk the old dims (size-1 dims dropped) in chunks that are contiguous with each other; each
  // chunk must map onto a run of new dims with the same element count.
  std::vector<int64_t> od, os;
  for (size_t i = 0; i < rank(); ++i)
    if (shape_[i] != 1) {
      od.push_back(shape_[i]);
      os.push_back(strides_[i]);
    }
  Strides ns(shape.size(), 0);
  size_t oi = 0, ni = 0;
  while (ni < shape.size() && shape[ni] == 1) ns[ni++] = 1;
  while (oi < od.size()) {
    // one chunk of old dims: oi..oj, contiguous with each other
    size_t oj = oi;
    int64_t chunk = od[oi];
    while (oj + 1 < od.size() && os[oj] == os[oj + 1] * od[oj + 1]) {
      ++oj;
      chunk *= od[oj];
    }
    // consume new dims whose product equals chunk
    int64_t acc = 1;
    const size_t start = ni;
    while (ni < shape.size() && acc < chunk) {
      acc *= shape[ni];
      ++ni;
    }
    if (acc != chunk) return false;
    int64_t stride = os[oj];
    for (size_t k = ni; k-- > start;) {
      ns[k] = stride;
      stride *= shape[k];
    }
    while (ni < shape.size() && shape[ni] == 1) ns[ni++] = 1;
    oi = oj + 1;
  }
  if (ni != shape.size()) return false;
  *out = Layout(shape, ns, offset_);
  return true;
}

std::string Layout::str() const {
  return "shape " + shape_.str() + " strides " + strides_.str() + " offset " + std::to_string(offset_);
}

}  // namespace wick
