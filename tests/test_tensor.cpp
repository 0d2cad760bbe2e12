// Tensor creation, const_set, copies and their errors, and a tensor of more than 2^31 elements.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "cpu/simd.h"
#include "test_util.h"

namespace wick {
namespace {

template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "did not throw; expected a message with " << parts[0];
  } catch (const E& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(parts[0], 0), 0u) << "message does not start with " << parts[0] << ": " << m;
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << "'" << p << "' not in: " << m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

class Creation : public ::testing::TestWithParam<Device> {};

TEST_P(Creation, ShapesAndValues) {
  const Device d = GetParam();
  const Tensor s = Tensor::full({}, Scalar(2.5), DType::F32, d);
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>{2.5f});
  EXPECT_EQ(Tensor::zeros({2, 0, 3}, DType::I64, d).to_vector<int64_t>().size(), 0u);
  EXPECT_EQ(Tensor::ones({3}, DType::U32, d).to_vector<uint32_t>(), (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ(Tensor::ones({2}, DType::F8E4M3, d).to_vector<f8e4m3>()[1].bits, 0x38);
  EXPECT_EQ(Tensor::ones({2}, DType::BF16, d).to_vector<bf16>()[0].bits, 0x3f80);
  EXPECT_EQ(Tensor::full({2}, Scalar(-1), DType::I64, d).to_vector<int64_t>(), (std::vector<int64_t>{-1, -1}));
  EXPECT_EQ(Tensor::arange(0, 5, 1, DType::U8, d).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::arange(3, -3, -2, DType::I64, d).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, -1}));
  EXPECT_EQ(Tensor::arange(0, 1, 0.25, DType::F64, d).to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(Tensor::arange(1, 1, 1, DType::F32, d).numel(), 0);
  EXPECT_EQ(Tensor::arange(1, 0, 1, DType::F32, d).numel(), 0);
  // Integer arange above 2^53 steps exactly.
  const double big = 0x1p60;
  const auto a = Tensor::arange(big, big + 3 * 1024, 1024, DType::I64, d).to_vector<int64_t>();
  EXPECT_EQ(a, (std::vector<int64_t>{int64_t{1} << 60, (int64_t{1} << 60) + 1024, (int64_t{1} << 60) + 2048}));
  EXPECT_EQ(Tensor::arange(253, 258, 1, DType::U8, d).to_vector<uint8_t>(),
            (std::vector<uint8_t>{253, 254, 255, 255, 255}));
  EXPECT_EQ(Tensor::arange(1, -2, -1, DType::U32, d).to_vector<uint32_t>(), (std::vector<uint32_t>{1, 0, 0}));
  // Integral arguments far outside int64 go through f64 and saturate.
  EXPECT_EQ(Tensor::arange(1e30, 3e30, 1e30, DType::I64, d).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MAX, INT64_MAX}));
  EXPECT_EQ(Tensor::arange(-1e19, -0.5e19, 1e19, DType::I64, d).to_vector<int64_t>(),
            (std::vector<int64_t>{INT64_MIN}));
  const std::vector<double> v{1.5, -2, 3};
  const Tensor h = Tensor::from_vector(v, {3, 1}, d);
  EXPECT_EQ(h.shape(), (Shape{3, 1}));
  EXPECT_EQ(h.to_vector<double>(), v);
}

TEST_P(Creation, ConstSetIntoViews) {
  const Device d = GetParam();
  Tensor x = Tensor::arange(0, 24, 1, DType::I64, d).reshape({4, 6});
  Tensor col = x.select(1, 2);
  col.const_set(Scalar(-1));
  Tensor win = x.t().narrow(0, 4, 2).narrow(1, 1, 2);  // x[1:3, 4:6]
  win.const_set(Scalar(int64_t{1} << 62));
  const int64_t B = int64_t{1} << 62;
  EXPECT_EQ(x.to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, -1, 3, 4, 5, 6, 7, -1, 9, B, B, 12, 13, -1, 15, B, B, 18, 19, -1, 21, 22, 23}));
  // A stride-0 view (several elements, one location) is refused before anything is written, by
  // const_set and copy_from alike; a zero-size view writes nothing.
  Tensor r = Tensor::zeros({3}, DType::F32, d);
  Tensor bview = r.narrow(0, 1, 1).broadcast_as({5, 1});
  EXPECT_THROW(bview.const_set(Scalar(4.5)), InvalidArgument);
  EXPECT_THROW(bview.copy_from(Tensor::ones({5, 1}, DType::F32, d)), InvalidArgument);
  EXPECT_THROW(Tensor::zeros({1, 4}, DType::F32, d).expand({3, 4}).copy_from(Tensor::ones({3, 4}, DType::F32, d)),
               InvalidArgument);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  // A size-1 dim may have any stride.
  Tensor one = r.narrow(0, 2, 1).broadcast_as({1, 1});
  one.const_set(Scalar(4.5));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 0, 4.5f}));
  Tensor empty_view = r.narrow(0, 3, 0);
  empty_view.const_set(Scalar(9));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 0, 4.5f}));
}

// Contiguous const_set fills bytes in a pattern of the element size (1, 2, 4, 8 bytes): windows
// that start at several small offsets and end anywhere, and a 72 MiB one (streamed where the
// last-level cache is 32 MiB or less: Note [CPU fill]), each element equal to a one-element
// full() and nothing outside written.
TEST_P(Creation, ConstSetContiguousEveryElementSize) {
  const Device d = GetParam();
  for (DType dt : kAllDTypes) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    const Scalar value = dt == DType::U8    ? Scalar(165)
                         : dt == DType::U32 ? Scalar(int64_t{0x89abcdef})
                         : dt == DType::I64 ? Scalar(int64_t{-0x123456789abcde})
                                            : Scalar(-1.2345678);
    const std::vector<unsigned char> one = testing::bytes_of(Tensor::full({1}, value, dt, d));
    const size_t es = one.size();
    const bool big_too = dt == DType::U8 || dt == DType::F16 || dt == DType::F32 || dt == DType::F64;
    std::vector<int64_t> lengths{1, 7, 31, 63, 64, 65, 100, 1000, 100003};
    if (big_too) lengths.push_back((int64_t{72} << 20) / static_cast<int64_t>(es) + 3);  // > 2x a 32 MiB LLC
    for (int64_t n : lengths)
      for (int64_t start : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{5}}) {
        if (n > 100003 && start != 3) continue;
        Tensor base = Tensor::zeros({start + n + 2}, dt, d);
        base.narrow(0, start, n).const_set(value);
        const std::vector<unsigned char> b = testing::bytes_of(base);
        size_t bad = b.size();
        for (size_t i = 0; i < b.size() && bad == b.size(); ++i) {
          const int64_t e = static_cast<int64_t>(i / es);
          if (b[i] != (e >= start && e < start + n ? one[i % es] : 0)) bad = i;
        }
        ASSERT_EQ(bad, b.size()) << "wrong byte; n " << n << " start " << start;
      }
  }
}

TEST_P(Creation, CopiesAndTransfers) {
  const Device d = GetParam();
  const Tensor x = Tensor::arange(0, 12, 1, DType::F32, d).reshape({3, 4});
  Tensor dst = Tensor::zeros({4, 3}, DType::F64, d);
  dst.copy_from(x.t());  // strided source, dtype conversion
  EXPECT_EQ(dst.to_vector<double>(), (std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11}));
  Tensor rows = Tensor::zeros({2, 4}, DType::F32, d);
  rows.copy_from(x.select(0, 1));  // broadcast source
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{4, 5, 6, 7, 4, 5, 6, 7}));
  Tensor big = Tensor::zeros({3, 5}, DType::F32, d);
  Tensor part = big.narrow(1, 1, 3);
  part.copy_from(Tensor::ones({3, 3}, DType::U8, d));
  EXPECT_EQ(big.to_vector<float>(), (std::vector<float>{0, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 1, 1, 0}));
  Tensor bad = Tensor::zeros({2, 3}, DType::F32, d);
  expect_error<ShapeError>([&] { bad.copy_from(x); }, {"[copy_strided]", "[3, 4] f32", "[2, 3] f32"});
  EXPECT_EQ(bad.to_vector<float>(), std::vector<float>(6, 0.0f));  // untouched
  // to_host of a strided view gives its elements row-major; to() round trips.
  std::vector<float> host(3);
  x.select(1, 1).to_host(host.data(), 12);
  EXPECT_EQ(host, (std::vector<float>{1, 5, 9}));
  EXPECT_EQ(x.to(Device::cpu()).to(d).to_vector<float>(), x.to_vector<float>());
  const Tensor c = x.clone();
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_EQ(c.to_vector<float>(), x.to_vector<float>());
}

TEST_P(Creation, Errors) {
  const Device d = GetParam();
  const std::string loc = d.location();
  expect_error<ShapeError>([&] { (void)Tensor::zeros({2, -1}, DType::F32, d); }, {"[zeros]", "[2, -1]"});
  expect_error<ShapeError>([&] { (void)Tensor::ones({-3}, DType::F32, d); }, {"[ones]", "[-3]"});
  expect_error<ShapeError>([&] { (void)Tensor::full({-3}, Scalar(1), DType::F32, d); }, {"[full]", "[-3]"});
  expect_error<ShapeError>([&] { (void)Tensor::empty({4, -3}, DType::F32, d); }, {"[alloc_uninit]", "[4, -3]"});
  expect_error<ShapeError>([&] { (void)Tensor::from_host(nullptr, {-1}, DType::F32, d); }, {"[from_host]", "[-1]"});
  expect_error<ShapeError>([&] { (void)Tensor::rand_uniform({-1}, DType::F32, 0, 1, d); }, {"[rand_uniform]", "[-1]"});
  expect_error<OutOfMemory>(
      [&] {
        (void)Tensor::zeros({int64_t{1} << 40, int64_t{1} << 40}, DType::F32, d);
      },
      {"[alloc_uninit]", "overflows"});
  expect_error<OutOfMemory>([&] { (void)Tensor::zeros({int64_t{1} << 52}, DType::F64, d); }, {"[alloc", loc});
  expect_error<InvalidArgument>([&] { (void)Tensor::arange(0, 10, 0, DType::F32, d); }, {"[arange]", "step 0"});
  expect_error<InvalidArgument>([&] { (void)Tensor::arange(0, NAN, 1, DType::F32, d); }, {"[arange]"});
  expect_error<InvalidArgument>([&] { (void)Tensor::arange(0, INFINITY, 1, DType::F32, d); }, {"[arange]"});
  expect_error<OutOfMemory>([&] { (void)Tensor::arange(0, 1e300, 1e-300, DType::F32, d); }, {"[arange]", "elements"});
  expect_error<InvalidArgument>(
      [&] {
        (void)Tensor::from_host(nullptr, {2, 3}, DType::U8, d);
      },
      {"[from_host]", "null", "[2, 3] u8 " + loc});
  EXPECT_EQ(Tensor::from_host(nullptr, {0, 3}, DType::U8, d).numel(), 0);  // nothing to read
  const Tensor x = Tensor::ones({2, 3}, DType::F32, d);
  std::vector<float> small(5, -7.0f);
  expect_error<InvalidArgument>([&] { x.to_host(small.data(), 20); },
                                {"[to_host]", "20 bytes", "[2, 3] f32 " + loc, "24 bytes"});
  EXPECT_EQ(small, std::vector<float>(5, -7.0f));  // nothing written
  expect_error<InvalidArgument>([&] { x.to_host(nullptr, 24); }, {"[to_host]", "null"});
  expect_error<DTypeError>([&] { (void)x.to_vector<double>(); }, {"[to_host]", "f64", "[2, 3] f32 " + loc});
  expect_error<DTypeError>([&] { (void)x.to_vector<f16>(); }, {"[to_host]", "f16"});
  expect_error<InvalidArgument>([&] { Tensor().to_host(small.data(), 20); }, {"[to_host]", "undefined"});
  expect_error<InvalidArgument>([&] { Tensor().const_set(Scalar(1)); }, {"[const_set]", "undefined"});
  expect_error<InvalidArgument>([&] { (void)Tensor::rand_uniform({2}, DType::F32, 1, 0, d); },
                                {"[rand_uniform]", "lo 1", "up 0", loc});
  expect_error<DTypeError>([&] { (void)Tensor::rand_uniform({2}, DType::I64, 0, 1, d); }, {"[rand_uniform]", "i64"});
  expect_error<DTypeError>([&] { (void)Tensor::rand_normal({2}, DType::U32, 0, 1, d); }, {"[rand_normal]", "u32"});
  expect_error<ShapeError>(
      [&] {
        (void)Tensor::from_vector(std::vector<float>{1, 2}, {3}, d);
      },
      {"[from_host]", "[3]"});
}

WICK_INSTANTIATE_DEVICES(Creation);

// simd.h's fill kernel on every level this processor runs, with and without streaming stores:
// starts at every offset in a 64-byte line, lengths around the vector and line sizes, each byte
// the pattern's byte at its distance from the start, and the guard bytes around untouched.
TEST(CpuFillKernel, EveryLevelAlignmentAndLength) {
  namespace simd = cpu::simd;
  const unsigned char pat[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
  uint64_t pattern = 0;
  std::memcpy(&pattern, pat, 8);
  const int64_t lengths[] = {0, 1, 5, 8, 15, 63, 64, 65, 100, 127, 128, 129, 191, 192, 1000, 4096 + 37};
  std::vector<unsigned char> buf(4096 + 37 + 256);
  for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    const simd::Kernels& k = simd::kernels(isa);
    for (bool stream : {false, true})
      for (int64_t n : lengths)
        for (int64_t off = 0; off < 72; ++off) {
          std::fill(buf.begin(), buf.end(), 0xee);
          unsigned char* base = buf.data() + ((64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64);
          k.fill(base + off, n, pattern, stream);
          for (int64_t i = -off; i < n + 64; ++i) {
            const unsigned char want = i >= 0 && i < n ? pat[i % 8] : 0xee;
            ASSERT_EQ(base[off + i], want)
                << simd::isa_name(isa) << " stream " << stream << " n " << n << " off " << off << " at " << i;
          }
        }
  }
}

// More than 2^31 elements: indices and offsets must be 64-bit all the way through.
TEST(LargeTensor, BeyondTwoToThe31) {
  const auto t0 = std::chrono::steady_clock::now();
  const int64_t two31 = int64_t{1} << 31;
  const int64_t n = two31 + (int64_t{1} << 24);  // ~2.16e9 bytes of u8
  Tensor big;
  try {
    big = Tensor::zeros({n}, DType::U8);
  } catch (const OutOfMemory& e) {
    GTEST_SKIP() << "not enough memory for the large-tensor test: " << e.what();
  }
  // A window that straddles element 2^31.
  Tensor win = big.narrow(0, two31 - 1000, 2000);
  win.const_set(Scalar(7));
  const auto around = big.narrow(0, two31 - 1100, 2200).to_vector<uint8_t>();
  for (int64_t i = 0; i < 2200; ++i) ASSERT_EQ(around[static_cast<size_t>(i)], (i >= 100 && i < 2100) ? 7 : 0) << i;
  // A strided view past 2^31: as [n / 64, 64], a column window of rows around 2^31 / 64.
  Tensor grid = big.reshape({n / 64, 64});
  EXPECT_EQ(grid.storage(), big.storage());
  Tensor block = grid.narrow(0, two31 / 64 + 100, 3).narrow(1, 5, 4);
  block.const_set(Scalar(9));
  const auto rows = grid.narrow(0, two31 / 64 + 100, 3).to_vector<uint8_t>();
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t cc = 0; cc < 64; ++cc)
      ASSERT_EQ(rows[static_cast<size_t>(r * 64 + cc)], (cc >= 5 && cc < 9) ? 9 : 0) << r << " " << cc;
  // A transposed view whose elements lie beyond 2^31.
  const auto col = grid.t().select(0, 6).narrow(0, two31 / 64 + 99, 5).to_vector<uint8_t>();
  EXPECT_EQ(col, (std::vector<uint8_t>{0, 9, 9, 9, 0}));
  // A cast of a slice beyond 2^31 (flat index two31 + 6400 + 5 is row two31/64 + 100, column 5).
  const auto f = big.narrow(0, two31 + 6400, 12).to_dtype(DType::F32).to_vector<float>();
  EXPECT_EQ(f, (std::vector<float>{0, 0, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0}));
  // The last element, and a select far out.
  Tensor last = big.narrow(0, n - 1, 1);
  last.const_set(Scalar(200));
  EXPECT_EQ(big.narrow(0, n - 3, 3).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 0, 200}));
  EXPECT_EQ(big.select(0, n - 1).to_vector<uint8_t>(), std::vector<uint8_t>{200});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 60) << "the large-tensor test is meant to take a few seconds";
}

}  // namespace
}  // namespace wick
