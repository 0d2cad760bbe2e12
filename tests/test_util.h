// Shared by the test files: the devices under test and small helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "wick/tensor.h"

namespace wick::testing {

// A fresh folder under the system's temporary folder (unique per process and object), removed with
// everything in it at the end.
class TempDir {
 public:
  explicit TempDir(const std::string& tag) {
    static std::atomic<int> n{0};
    path_ = std::filesystem::temp_directory_path() /
            ("wick_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

// Runs f and expects an E whose message holds every one of `parts`.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "did not throw; expected a message with " << parts[0];
  } catch (const E& e) {
    const std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

// Random values of dtype d, never all zero (integers drawn away from 0).
inline Tensor random_tensor(const Shape& s, DType d) {
  switch (d) {
    case DType::U8:
      return Tensor::rand_uniform(s, DType::F32, 1, 255).to_dtype(d);
    case DType::U32:
      return Tensor::rand_uniform(s, DType::F64, 1, 4e9).to_dtype(d);
    case DType::I32:
      return Tensor::rand_uniform(s, DType::F64, -2e9, 2e9).to_dtype(d);
    case DType::I64:
      return Tensor::rand_uniform(s, DType::F64, -9e15, 9e15).to_dtype(d);
    default:
      return Tensor::rand_normal(s, DType::F32, 0.5, 2).to_dtype(d);
  }
}

// Writes `bytes` to `path`, creating its folders.
inline void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

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

// A tensor's values on the host as f32 (from any device and float dtype).
inline std::vector<float> host(const Tensor& t) { return t.to(Device::cpu()).to_dtype(DType::F32).to_vector<float>(); }

// a and b hold the same values, element for element (compared as f32).
inline void expect_same(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = host(a), y = host(b);
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], y[i]) << "at " << i;
}

// The error allowed to a sum of k products with exact value `want` and products' magnitudes summing
// to `mag`: rounded to its type (half_ulp relative, or half_min, half the type's smallest
// subnormal, absolute where the result is subnormal) after f32 accumulation (k + 2 roundings of
// `mag` at most).
inline double sum_error_bound(double want, double mag, int64_t k, double half_ulp, double half_min = 0) {
  return half_ulp * std::abs(want) + half_min + (static_cast<double>(k) + 2) * 0x1p-24 * mag * (1 + half_ulp);
}

// c, sums of k products each, against their exact values `want` (f64) within sum_error_bound.
inline void expect_sums_close(const Tensor& c, const Tensor& want, const Tensor& mag, int64_t k) {
  const Device cpu = Device::cpu();
  ASSERT_EQ(c.shape(), want.shape());
  const std::vector<double> w = want.to(cpu).to_vector<double>(), m = mag.to(cpu).to_vector<double>();
  const std::vector<double> got = c.to(cpu).to_dtype(DType::F64).to_vector<double>();
  const double half_ulp = c.dtype() == DType::BF16 ? 0x1p-8 : c.dtype() == DType::F16 ? 0x1p-11 : 0x1p-24;
  const double half_min = c.dtype() == DType::BF16 ? 0x1p-134 : c.dtype() == DType::F16 ? 0x1p-25 : 0x1p-150;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - w[i]), sum_error_bound(w[i], m[i], k, half_ulp, half_min)) << "element " << i;
}

// c, computed as a @ b, against the product of the same (rounded) inputs in f64.
inline void expect_product_close(const Tensor& c, const Tensor& a, const Tensor& b) {
  const Device cpu = Device::cpu();
  const Tensor a64 = a.to(cpu).to_dtype(DType::F64), b64 = b.to(cpu).to_dtype(DType::F64);
  expect_sums_close(c, a64.matmul(b64), a64.abs().matmul(b64.abs()), a.dim(-1));
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
