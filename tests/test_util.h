// Shared by the test files: the devices under test and small helpers.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wick/tensor.h"

namespace wick::testing {

// Every device present: the CPU and each GPU of the backends built in.
inline std::vector<Device> test_devices() { return available_devices(); }

// The GPUs present (default handles), possibly none.
inline std::vector<Device> gpu_devices() {
  std::vector<Device> out;
  for (const Device& d : available_devices())
    if (d.is_gpu()) out.push_back(d);
  return out;
}

// A tensor's elements as contiguous bytes, for bit-exact comparisons.
inline std::vector<unsigned char> bytes_of(const Tensor& t) {
  std::vector<unsigned char> b(static_cast<size_t>(t.numel() * dtype_size(t.dtype())));
  t.to_host(b.data(), static_cast<int64_t>(b.size()));
  return b;
}

inline std::string device_param_name(const ::testing::TestParamInfo<Device>& info) {
  std::string s = info.param.location();
  for (char& c : s)
    if (c == ':') c = '_';
  return s;
}

}  // namespace wick::testing

// Binds the GPUs present to `var`, or skips the test with a message when there are none.
#define WICK_REQUIRE_GPU(var)                                             \
  const std::vector<::wick::Device> var = ::wick::testing::gpu_devices(); \
  if (var.empty()) GTEST_SKIP() << "no GPU present (or wick built without WICK_CUDA / WICK_ROCM)"

// Instantiates a value-parameterised suite over every device present.
#define WICK_INSTANTIATE_DEVICES(suite)                                                          \
  INSTANTIATE_TEST_SUITE_P(Devices, suite, ::testing::ValuesIn(::wick::testing::test_devices()), \
                           ::wick::testing::device_param_name)
