// Shared by the reduction tests (test_reduce.cpp, test_softmax_norm.cpp, test_sort.cpp and
// test_cumsum.cpp): the Reduce suite, one test body per device present (instantiated once, in
// test_reduce.cpp), and the helpers its files share.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace wick::testing {

class Reduce : public ::testing::TestWithParam<Device> {};

inline constexpr float kNaNf = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

inline Tensor f32(const std::vector<float>& v, const Shape& s, const Device& d) { return Tensor::from_vector(v, s, d); }

// Frees a [rows, n] block of 171s, which the next output of that size and dtype is likely to get
// (the CPU allocator keeps freed blocks): an element an op fails to write is then wrong, not the
// value an earlier run of the same op left there.
inline void poison_next_output(int64_t rows, int64_t n, DType dt) { (void)Tensor::full({rows, n}, 171, dt); }

// The same [rows, n] values in several layouts: contiguous, narrowed (a misaligned start and a row
// stride past n), with a stride of 2 along the rows, rows with unit stride between them (a
// transposed copy), and, for 6 rows, kept dims [2, 3] whose strides are permuted.
inline std::vector<std::pair<std::string, Tensor>> row_layouts(const Tensor& x) {
  const int64_t rows = x.dim(0), n = x.dim(1);
  const Tensor pad = x.narrow(1, 0, 1);
  std::vector<std::pair<std::string, Tensor>> v = {{"contiguous", x},
                                                   {"narrowed", cat({pad, x, pad, pad}, 1).narrow(1, 1, n)},
                                                   {"stride 2", cat({x.unsqueeze(2), x.unsqueeze(2)}, 2).select(2, 1)},
                                                   {"transposed", x.t().contiguous().t()}};
  if (rows == 6) v.emplace_back("permuted", x.reshape({2, 3, n}).permute({1, 0, 2}).contiguous().permute({1, 0, 2}));
  return v;
}

}  // namespace wick::testing
