// sort and argsort: stability, NaN order, and row lengths and counts around each of the GPU's sorts,
// against a reference order on the host.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "reduce_test_util.h"
#include "test_util.h"

namespace wick {
namespace {

using namespace testing;  // wick::testing: the Reduce suite and its helpers

TEST_P(Reduce, SortIsStableAndOrdersNaN) {
  const Device d = GetParam();
  Tensor x = f32({2, kNaNf, 1, 2, -kInf, kNaNf, kInf, 1}, {8}, d);
  auto [v, i] = x.sort();
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 2, 7, 0, 3, 6, 1, 5}));
  const std::vector<float> vv = v.to_vector<float>();
  EXPECT_EQ(vv[0], -kInf);
  EXPECT_EQ(vv[5], kInf);
  EXPECT_TRUE(std::isnan(vv[6]) && std::isnan(vv[7]));
  auto [dv, di] = x.sort(-1, true);
  EXPECT_EQ(di.to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 6, 0, 3, 2, 7, 4}));
  EXPECT_TRUE(std::isnan(dv.to_vector<float>()[0]));
  EXPECT_EQ(x.argsort(0, true).to_vector<int64_t>(), di.to_vector<int64_t>());
  // Integers, along dim 0 (a transposed view in the backend); ties keep input order.
  Tensor u = Tensor::from_vector<uint32_t>({3, 1, 1, 1, 3, 0}, {3, 2}, d);
  auto [uv, ui] = u.sort(0);
  EXPECT_EQ(uv.to_vector<uint32_t>(), (std::vector<uint32_t>{1, 0, 3, 1, 3, 1}));
  EXPECT_EQ(ui.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 0, 0, 2, 1}));
  EXPECT_EQ(u.argsort(0, true).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 2, 1, 1, 2}));
  // A long row of few distinct keys: stability over many ties.
  std::vector<int64_t> keys(5000);
  for (size_t k = 0; k < keys.size(); ++k) keys[k] = static_cast<int64_t>((k * 7) % 3);
  const std::vector<int64_t> order = Tensor::from_vector(keys, {5000}, d).argsort().to_vector<int64_t>();
  for (size_t k = 1; k < order.size(); ++k) {
    const auto a = static_cast<size_t>(order[k - 1]), b = static_cast<size_t>(order[k]);
    ASSERT_TRUE(keys[a] < keys[b] || (keys[a] == keys[b] && a < b)) << k;
  }
}

// The CPU's sort order on host values (Note [NaN order]): NaN last ascending, first descending,
// -0 equal to +0, ties in input order.
template <class T>
std::vector<int64_t> ref_order(const std::vector<T>& row, bool descending) {
  if constexpr (!std::is_arithmetic_v<T>) {  // bf16, f16, f8e4m3: the order of their (exact) f32 values
    std::vector<float> wide(row.size());
    std::transform(row.begin(), row.end(), wide.begin(), [](T x) { return static_cast<float>(x); });
    return ref_order(wide, descending);
  } else {
    std::vector<int64_t> order(row.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const T x = row[static_cast<size_t>(a)], y = row[static_cast<size_t>(b)];
      if constexpr (std::is_floating_point_v<T>) {
        if (descending) return std::isnan(x) ? !std::isnan(y) : (!std::isnan(y) && x > y);
        return std::isnan(y) ? !std::isnan(x) : (!std::isnan(x) && x < y);
      } else {
        return descending ? x > y : x < y;
      }
    });
    return order;
  }
}

// Sorts `rows` rows of n values (h, row-major) laid out as [rows, n] (contiguous rows) and as
// [n, rows] sorted along dim 0 (strided input and outputs), both directions, against ref_order.
template <class T>
void expect_sorts_like_reference(const Device& d, const std::vector<T>& h, int64_t rows, int64_t n) {
  std::vector<T> ht(h.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) ht[static_cast<size_t>(i * rows + r)] = h[static_cast<size_t>(r * n + i)];
  const Tensor x = Tensor::from_vector(h, {rows, n}, d);
  const Tensor xt = Tensor::from_vector(ht, {n, rows}, d);
  for (bool desc : {false, true}) {
    auto [v, i] = x.sort(-1, desc);
    auto [vt, it] = xt.sort(0, desc);
    const std::vector<int64_t> iv = i.to_vector<int64_t>(), itv = it.to_vector<int64_t>();
    const std::vector<int64_t> av = x.argsort(-1, desc).to_vector<int64_t>();
    const std::vector<T> vv = v.to_vector<T>(), vtv = vt.to_vector<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<T> row(h.begin() + r * n, h.begin() + (r + 1) * n);
      const std::vector<int64_t> want = ref_order(row, desc);
      for (int64_t q = 0; q < n; ++q) {
        const size_t k = static_cast<size_t>(r * n + q), kt = static_cast<size_t>(q * rows + r);
        const int64_t w = want[static_cast<size_t>(q)];
        ASSERT_EQ(iv[k], w) << "n " << n << " row " << r << " pos " << q << " desc " << desc;
        ASSERT_EQ(av[k], w) << "argsort n " << n << " row " << r << " pos " << q << " desc " << desc;
        ASSERT_EQ(itv[kt], w) << "dim 0, n " << n << " row " << r << " pos " << q << " desc " << desc;
        // The values are the source elements themselves, bit for bit (-0 stays -0, NaN stays NaN).
        const T& src = row[static_cast<size_t>(w)];
        ASSERT_EQ(std::memcmp(&vv[k], &src, sizeof(T)), 0) << "n " << n << " pos " << q;
        ASSERT_EQ(std::memcmp(&vtv[kt], &src, sizeof(T)), 0) << "dim 0, n " << n << " pos " << q;
      }
    }
  }
}

// The sort tests' random numbers: a linear congruential stream.
struct SortRandom {
  uint32_t seed;
  uint32_t operator()() {
    seed = seed * 1664525u + 1013904223u;
    return seed >> 8;
  }
};

// Random bit patterns of the dtypes with 32-bit sort keys, one element of each per draw: u32 and
// its bits as f32 (NaNs with payloads among them; keys differ in all four bytes), and every bit
// pattern of the narrow floats: NaNs with payloads and signs, infinities, zeros and subnormals of
// both signs (Note [GPU sort key digits] skips their constant low key digits).
struct SortBitPatterns {
  std::vector<uint32_t> u32;
  std::vector<float> f32;
  std::vector<bf16> hb;
  std::vector<f16> hh;
  std::vector<f8e4m3> h8;
  explicit SortBitPatterns(size_t size) : u32(size), f32(size), hb(size), hh(size), h8(size) {}
  void draw(size_t k, SortRandom& next) {
    u32[k] = next() << 8 ^ next();
    f32[k] = std::bit_cast<float>(u32[k]);
    hb[k] = bf16::from_bits(static_cast<uint16_t>(next() >> 8));
    hh[k] = f16::from_bits(static_cast<uint16_t>(next() >> 8));
    h8[k] = f8e4m3::from_bits(static_cast<uint8_t>(next() >> 16));
  }
  void expect_sorted(const Device& d, int64_t rows, int64_t n) const {
    expect_sorts_like_reference(d, u32, rows, n);
    expect_sorts_like_reference(d, f32, rows, n);
    expect_sorts_like_reference(d, hb, rows, n);
    expect_sorts_like_reference(d, hh, rows, n);
    expect_sorts_like_reference(d, h8, rows, n);
  }
};

// Row lengths around the GPU's tile sizes (1, 2, not powers of two, longer than shared memory, many
// tiles of the long-row radix sort with a partial last one; one row of 100003 takes its small tiles,
// scanned by the scatter for 32-bit keys and by chunks for 64-bit ones), few distinct keys
// (stability), NaN, infinities and zeros of both signs.
TEST_P(Reduce, SortMatchesTheReferenceOnManyRowLengths) {
  const Device d = GetParam();
  const float fpool[] = {kNaNf, -0.f, 0.f, 1.5f, -1.5f, kInf, -kInf, 3.f, -kNaNf, 1e-30f, -2.f};
  const double dpool[] = {std::nan(""), -0.0, 0.0, 1.5, -1.5, 1e300, -1e300, 3.0, -std::nan(""), 4e-320};
  SortRandom next{12345};
  for (int64_t n : {1, 2, 3, 1000, 5000, 20000, 32768, 70000, 100003, 200003}) {
    const int64_t rows = n == 100003 ? 1 : n > 5000 ? 2 : 3;
    std::vector<float> f(static_cast<size_t>(rows * n));
    std::vector<double> g(f.size());
    std::vector<int64_t> i64(f.size());
    std::vector<uint8_t> u8(f.size());
    SortBitPatterns bits(f.size());
    for (size_t k = 0; k < f.size(); ++k) {
      f[k] = fpool[next() % std::size(fpool)];
      g[k] = dpool[next() % std::size(dpool)];
      i64[k] = static_cast<int64_t>(next() % 7) - 3 + (next() % 2 ? std::numeric_limits<int64_t>::min() / 2 : 0);
      u8[k] = static_cast<uint8_t>(next() % 5 * 60);
      bits.draw(k, next);
    }
    expect_sorts_like_reference(d, f, rows, n);
    expect_sorts_like_reference(d, g, rows, n);
    expect_sorts_like_reference(d, i64, rows, n);
    expect_sorts_like_reference(d, u8, rows, n);
    if (n >= 1000) bits.expect_sorted(d, rows, n);
  }
  // f16 keys: sort through the compute type, ties from rounding.
  std::vector<float> h(4099);
  for (size_t k = 0; k < h.size(); ++k) h[k] = static_cast<float>(next() % 2000) / 7.f - 140.f;
  h[7] = kNaNf;
  h[100] = -0.f;
  const Tensor x = f32(h, {4099}, d).to_dtype(DType::F16);
  const std::vector<float> back = x.to_dtype(DType::F32).to_vector<float>();
  for (bool desc : {false, true}) EXPECT_EQ(x.argsort(0, desc).to_vector<int64_t>(), ref_order(back, desc)) << desc;
}

// Rows of up to 32768 on a GPU with more rows than multiprocessors take the one-block radix sort
// (Note [GPU radix sort]): row lengths that fill its blocks exactly and that pad them, every dtype
// with 32-bit keys, NaN payloads, zeros of both signs and few distinct keys (stability).
TEST_P(Reduce, SortOfManyRowsOfOneBlock) {
  const Device d = GetParam();
  const int64_t rows = d.is_cpu() ? 3 : d.info().multiprocessors + 3;
  SortRandom next{777};
  const float fpool[] = {kNaNf, -0.f, 0.f, 1.5f, -1.5f, kInf, -kInf, -kNaNf};
  for (int64_t n : {4097, 20000, 32768}) {
    const auto size = static_cast<size_t>(rows * n);
    std::vector<float> few(size);
    std::vector<uint8_t> u8(size);
    SortBitPatterns bits(size);
    for (size_t k = 0; k < size; ++k) {
      few[k] = fpool[next() % std::size(fpool)];
      u8[k] = static_cast<uint8_t>(next());
      bits.draw(k, next);
    }
    expect_sorts_like_reference(d, few, rows, n);
    expect_sorts_like_reference(d, u8, rows, n);
    bits.expect_sorted(d, rows, n);
  }
}

// One row of over 500 tiles of the GPU's long-row radix sort, whose scan runs in many chunks, the
// last one partial (Note [GPU long-row radix sort]): 32-bit and 64-bit keys, and f16 (three
// passes, Note [GPU sort key digits]), with ties.
TEST_P(Reduce, SortOfOneVeryLongRow) {
  const Device d = GetParam();
  const int64_t n = (int64_t{1} << 21) + 12345;
  std::vector<float> f(static_cast<size_t>(n));
  std::vector<double> g(f.size());
  std::vector<f16> h(f.size());
  uint32_t seed = 99;
  for (size_t k = 0; k < f.size(); ++k) {
    seed = seed * 1664525u + 1013904223u;
    f[k] = static_cast<float>(seed >> 12) / 1024.f - 2048.f;  // about 2^20 distinct values: ties
    g[k] = static_cast<double>(seed) * (k % 2 ? 1e-3 : -1e-3);
    h[k] = f16::from_bits(static_cast<uint16_t>(seed >> 16));
  }
  expect_sorts_like_reference(d, f, 1, n);
  expect_sorts_like_reference(d, g, 1, n);
  expect_sorts_like_reference(d, h, 1, n);
}

}  // namespace
}  // namespace wick
