// Shared by the test files: the devices under test and small helpers.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "wick/tensor.h"

namespace wick::testing {

// Every device present: the CPU and each GPU of the backends built in.
inline std::vector<Device> test_devices() { return available_devices(); }

inline std::string device_param_name(const ::testing::TestParamInfo<Device>& info) {
  std::string s = info.param.location();
  for (char& c : s)
    if (c == ':') c = '_';
  return s;
}

}  // namespace wick::testing

// Instantiates a value-parameterised suite over every device present.
#define WICK_INSTANTIATE_DEVICES(suite) \
  INSTANTIATE_TEST_SUITE_P(Devices, suite, ::testing::ValuesIn(::wick::testing::test_devices()), \
                           ::wick::testing::device_param_name)
