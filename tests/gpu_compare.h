// Shared by the GPU-against-CPU tests of matmul and the convolutions (test_gpu_matmul.cpp,
// test_gpu_conv.cpp): random operands and the comparison of a GPU result with the CPU's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "wick/tensor.h"

namespace wick::testing {

inline constexpr DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::F8E4M3};

// Relative precision of one rounding to `t`.
inline double eps_of(DType t) {
  switch (t) {
    case DType::F64:
      return 1e-15;
    case DType::F32:
      return 1.2e-7;
    case DType::F16:
      return 1e-3;
    case DType::BF16:
      return 8e-3;
    default:
      return 0.125;
  }
}

// GPU result vs CPU result of the same op on the same inputs. Both round an f32 (f64) sum once;
// the sums' order differs, so allow a few roundings of the output plus accumulation error over
// `terms` products of values in [-1, 1] (times `scale`, the largest product's magnitude). An inf or
// NaN on the CPU must be the same on the GPU.
inline void expect_close(const Tensor& gpu, const Tensor& cpu, int64_t terms, const std::string& what,
                         double scale = 1) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  const std::vector<double> g = gpu.to(Device::cpu()).to_dtype(DType::F64).to_vector<double>();
  const std::vector<double> c = cpu.to_dtype(DType::F64).to_vector<double>();
  const double acc_eps = cpu.dtype() == DType::F64 ? 1e-15 : 1.2e-7;
  const double atol = (acc_eps * 4 * static_cast<double>(terms) + eps_of(cpu.dtype()) * 1e-2) * scale;
  const double rtol = eps_of(cpu.dtype()) * 1.01;
  for (size_t i = 0; i < c.size(); ++i) {
    if (std::isnan(c[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << what << " at " << i << ": gpu " << g[i] << " cpu nan";
      continue;
    }
    if (std::isinf(c[i])) {
      ASSERT_EQ(g[i], c[i]) << what << " at " << i;
      continue;
    }
    ASSERT_LE(std::abs(g[i] - c[i]), atol + rtol * std::abs(c[i]))
        << what << " at " << i << ": gpu " << g[i] << " cpu " << c[i];
  }
}

inline Tensor randu(const Shape& s, DType t) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(t); }

}  // namespace wick::testing
