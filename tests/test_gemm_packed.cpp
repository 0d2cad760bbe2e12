// The packed GEMMs of src/cpu/gemm_packed.cpp (Note [bf16 GEMM], Note [AMX GEMM], Note [f32 GEMM])
// against f64: directly on strided matrices with each of the kernels this processor runs (VDPBF16PS
// at Avx512Bf16, AMX tiles at Amx, the f32 kernel from Avx512 up), and through matmul and conv2d at
// every vector level (below those, the operands are widened to f32 for OpenBLAS).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/backend.h"
#include "cpu/gemm.h"
#include "cpu/simd.h"
#include "tests/test_util.h"
#include "wick/error.h"
#include "wick/scalar_types.h"
#include "wick/tensor.h"

namespace wick {
namespace {

namespace simd = cpu::simd;

// The levels with a bf16 GEMM kernel (Avx512Bf16, Amx) that this processor reaches.
std::vector<simd::Isa> gemm_levels() {
  std::vector<simd::Isa> v;
  for (simd::Isa isa : {simd::Isa::Avx512Bf16, simd::Isa::Amx})
    if (isa <= simd::detected()) v.push_back(isa);
  return v;
}
// body(isa) at each of gemm_levels(), up to a fatal failure.
template <class F>
void at_gemm_levels(F&& body) {
  for (simd::Isa isa : gemm_levels()) {
    body(isa);
    if (::testing::Test::HasFatalFailure()) return;
  }
}
constexpr const char* kNoGemm =
    "no bf16 GEMM level on this cpu (AVX512_BF16 on AMD, or AMX with the OS's permission: simd.cpp detect())";
constexpr const char* kNoF32Gemm = "no AVX-512 on this cpu: the f32 GEMM kernel does not run here";
bool f32_gemm_runs() { return simd::detected() >= simd::Isa::Avx512; }

// Where an r x c matrix's elements lie: element (i, j) at i * rs + j * cs.
struct Layout2 {
  const char* name;
  int64_t rs, cs;
  int64_t size(int64_t r, int64_t c) const { return (r - 1) * rs + (c - 1) * cs + 1; }
};
// Row- and column-major, each with a gap after every row / column (a window of a wider matrix),
// and one with no unit stride.
std::vector<Layout2> layouts(int64_t r, int64_t c) {
  return {{"row-major", c, 1},
          {"column-major", 1, r},
          {"rows with gaps", c + 3, 1},
          {"columns with gaps", 1, r + 5},
          {"no unit stride", 2 * c + 1, 2}};
}

double value(bf16 h) { return bf16::to_f32(h.bits); }
double value(float x) { return x; }
uint32_t bits(bf16 h) { return h.bits; }
uint32_t bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// A buffer of n random values in [-1, 1].
template <class T>
std::vector<T> random_values(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = T(u(rng));
  return v;
}

// gemm_bf16 or gemm_f32 at level isa.
void gemm_at(int64_t count, const std::function<cpu::Bf16Gemm(int64_t)>& product, simd::Isa isa) {
  cpu::gemm_bf16(count, product, isa);
}
void gemm_at(int64_t count, const std::function<cpu::F32Gemm(int64_t)>& product, simd::Isa isa) {
  cpu::gemm_f32(count, product, isa);
}

// c (an m x n product laid out as lc in its buffer, the buffer filled with 7 before) against the f64
// product of a and b (laid out as la and lb) within testing::sum_error_bound; the elements of c's
// buffer outside c keep their 7.
template <class T>
void expect_gemm_close(int64_t m, int64_t n, int64_t k, const T* a, const Layout2& la, const T* b, const Layout2& lb,
                       const std::vector<T>& c, const Layout2& lc) {
  const double half_ulp = std::is_same_v<T, bf16> ? 0x1p-8 : 0x1p-24;
  std::vector<bool> inside(c.size(), false);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = value(a[i * la.rs + p * la.cs]) * value(b[p * lb.rs + j * lb.cs]);
        want += x;
        mag += std::abs(x);
      }
      const size_t at = static_cast<size_t>(i * lc.rs + j * lc.cs);
      inside[at] = true;
      ASSERT_LE(std::abs(value(c[at]) - want), testing::sum_error_bound(want, mag, k, half_ulp))
          << "element (" << i << ", " << j << ")";
    }
  for (size_t i = 0; i < c.size(); ++i) {
    if (!inside[i]) {
      ASSERT_EQ(bits(c[i]), bits(T(7.0f))) << "outside c, at " << i;
    }
  }
}

// c = a @ b through the GEMM of T at level isa for one product, a, b and c laid out as la, lb, lc,
// against the f64 product (expect_gemm_close).
template <class T>
void check_gemm(int64_t m, int64_t n, int64_t k, const Layout2& la, const Layout2& lb, const Layout2& lc, simd::Isa isa,
                std::mt19937& rng) {
  SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) + ", a " + la.name +
               ", b " + lb.name + ", c " + lc.name);
  const std::vector<T> a = random_values<T>(la.size(m, k), rng), b = random_values<T>(lb.size(k, n), rng);
  std::vector<T> c(static_cast<size_t>(lc.size(m, n)), T(7.0f));
  gemm_at(
      1,
      [&](int64_t) {
        return cpu::GemmOf<T>{
            {a.data(), m, k, la.rs, la.cs}, {b.data(), k, n, lb.rs, lb.cs}, {c.data(), m, n, lc.rs, lc.cs}};
      },
      isa);
  expect_gemm_close(m, n, k, a.data(), la, b.data(), lb, c, lc);
}

// Sizes that are no multiple of the tiles (14 x 32, and 32 x 32 of 16 k-pairs for AMX), of the
// vector width or of the k block (128 pairs; 256 for f32), and some that are, every layout of each
// operand at least once, with each kernel of T.
template <class T>
void sizes_and_layouts(simd::Isa isa) {
  SCOPED_TRACE(simd::isa_name(isa));
  std::mt19937 rng(11);
  const int64_t sizes[] = {1, 3, 15, 17, 31, 32, 33, 100, 257};
  int turn = 0;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) {
        const std::vector<Layout2> la = layouts(m, k), lb = layouts(k, n), lc = layouts(m, n);
        const size_t t = static_cast<size_t>(turn++);
        check_gemm<T>(m, n, k, la[t % la.size()], lb[t / la.size() % lb.size()], lc[t / 3 % lc.size()], isa, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
  // larger, with several k blocks and row panels, and each operand column-major
  check_gemm<T>(300, 500, 700, {"row-major", 700, 1}, {"row-major", 500, 1}, {"row-major", 500, 1}, isa, rng);
  check_gemm<T>(300, 500, 700, {"column-major", 1, 300}, {"column-major", 1, 700}, {"column-major", 1, 300}, isa, rng);
}

// The same values of a and b in every layout pack into the same panels: the products come out the
// same bits whatever the operands' strides (c row-major; a column-major c swaps the operands' roles),
// b read in place by the AMX tiles included.
template <class T>
void layouts_agree(simd::Isa isa) {
  SCOPED_TRACE(simd::isa_name(isa));
  std::mt19937 rng(13);
  struct Size {
    int64_t m, n, k;
  };
  for (const Size& sz : {Size{17, 45, 67}, Size{33, 100, 257}, Size{3, 70, 31}, Size{40, 5, 300}}) {
    const int64_t m = sz.m, n = sz.n, k = sz.k;
    SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k));
    const std::vector<T> av = random_values<T>(m * k, rng), bv = random_values<T>(k * n, rng);
    // The r x c values v (row-major) laid out as l.
    auto lay = [](const std::vector<T>& v, int64_t r, int64_t c, const Layout2& l) {
      std::vector<T> out(static_cast<size_t>(l.size(r, c)), T(0.0f));
      for (int64_t i = 0; i < r; ++i)
        for (int64_t j = 0; j < c; ++j)
          out[static_cast<size_t>(i * l.rs + j * l.cs)] = v[static_cast<size_t>(i * c + j)];
      return out;
    };
    std::vector<T> want;
    for (const Layout2& la : layouts(m, k))
      for (const Layout2& lb : layouts(k, n)) {
        SCOPED_TRACE(std::string("a ") + la.name + ", b " + lb.name);
        const std::vector<T> a = lay(av, m, k, la), b = lay(bv, k, n, lb);
        std::vector<T> c(static_cast<size_t>(m * n));
        const cpu::GemmOf<T> g{{a.data(), m, k, la.rs, la.cs}, {b.data(), k, n, lb.rs, lb.cs}, {c.data(), m, n, n, 1}};
        if constexpr (std::is_same_v<T, bf16>) {
          // (Below AMX, a b read as it lies takes dot products instead, summed in another order.)
          if (isa < simd::Isa::Amx && cpu::bf16_weight_as_is(g, isa)) continue;
        }
        gemm_at(
            1, [&](int64_t) { return g; }, isa);
        if (want.empty()) {
          want = c;
          continue;
        }
        for (size_t e = 0; e < c.size(); ++e) ASSERT_EQ(bits(c[e]), bits(want[e])) << "element " << e;
      }
  }
}

TEST(CpuBf16Matmul, GemmLayoutsGiveTheSameBits) {
  if (gemm_levels().empty()) GTEST_SKIP() << kNoGemm;
  at_gemm_levels(layouts_agree<bf16>);
}

TEST(CpuF32Matmul, GemmLayoutsGiveTheSameBits) {
  if (!f32_gemm_runs()) GTEST_SKIP() << kNoF32Gemm;
  layouts_agree<float>(simd::Isa::Avx512);
}

TEST(CpuBf16Matmul, GemmSizesAndLayoutsAgainstF64) {
  if (gemm_levels().empty()) GTEST_SKIP() << kNoGemm;
  at_gemm_levels(sizes_and_layouts<bf16>);
}

TEST(CpuF32Matmul, GemmSizesAndLayoutsAgainstF64) {
  if (!f32_gemm_runs()) GTEST_SKIP() << kNoF32Gemm;
  sizes_and_layouts<float>(simd::Isa::Avx512);
}

// Products that share operands (pointers repeat: broadcast batches) are packed once and still
// give each product its own result, as do products packed in several groups; k == 0 writes zeros.
template <class T>
void batches_shared_operands_and_empty_k(simd::Isa isa) {
  SCOPED_TRACE(simd::isa_name(isa));
  std::mt19937 rng(12);
  const int64_t m = 37, n = 45, k = 70, count = 6;
  const std::vector<T> a = random_values<T>(2 * m * k, rng), b = random_values<T>(3 * k * n, rng);
  // Products whose packed operands exceed the group limit (32 MiB: 3 of these b per group for bf16,
  // 1 for f32) run in several groups, with the same results. (b is packed ahead only where a has
  // more row panels than a block of c takes, as these 300 rows with either kernel; Note [bf16 GEMM
  // packing of b].)
  const int64_t bm = 300, bk = 1024, bn = 4096, nbig = 5;
  const std::vector<T> big_b = random_values<T>(nbig * bk * bn, rng), small_a = random_values<T>(bm * bk, rng);
  using Gemm = cpu::GemmOf<T>;
  auto gemm = [&](int64_t products, const std::function<Gemm(int64_t)>& product) { gemm_at(products, product, isa); };
  std::vector<T> c(static_cast<size_t>(count * m * n));
  // product i: a[i % 2] @ b[i % 3]
  gemm(count, [&](int64_t i) {
    return Gemm{{a.data() + i % 2 * m * k, m, k, k, 1},
                {b.data() + i % 3 * k * n, k, n, n, 1},
                {c.data() + i * m * n, m, n, n, 1}};
  });
  for (int64_t i = 0; i < count; ++i) {
    std::vector<T> one(static_cast<size_t>(m * n));
    gemm(1, [&](int64_t) {
      return Gemm{
          {a.data() + i % 2 * m * k, m, k, k, 1}, {b.data() + i % 3 * k * n, k, n, n, 1}, {one.data(), m, n, n, 1}};
    });
    for (int64_t e = 0; e < m * n; ++e)
      ASSERT_EQ(bits(c[static_cast<size_t>(i * m * n + e)]), bits(one[static_cast<size_t>(e)]))
          << "product " << i << " element " << e;
  }
  std::vector<T> big_c(static_cast<size_t>(nbig * bm * bn)), one_c(static_cast<size_t>(bm * bn));
  gemm(nbig, [&](int64_t i) {
    return Gemm{{small_a.data(), bm, bk, bk, 1},
                {big_b.data() + i * bk * bn, bk, bn, bn, 1},
                {big_c.data() + i * bm * bn, bm, bn, bn, 1}};
  });
  for (int64_t i = 0; i < nbig; ++i) {
    gemm(1, [&](int64_t) {
      return Gemm{
          {small_a.data(), bm, bk, bk, 1}, {big_b.data() + i * bk * bn, bk, bn, bn, 1}, {one_c.data(), bm, bn, bn, 1}};
    });
    for (int64_t e = 0; e < bm * bn; ++e)
      ASSERT_EQ(bits(big_c[static_cast<size_t>(i * bm * bn + e)]), bits(one_c[static_cast<size_t>(e)]))
          << "large product " << i << " element " << e;
  }
  std::vector<T> z(static_cast<size_t>(m * n), T(7.0f));
  gemm(1, [&](int64_t) { return Gemm{{a.data(), m, 0, 1, 1}, {b.data(), 0, n, 1, 1}, {z.data(), m, n, n, 1}}; });
  for (const T& x : z) ASSERT_EQ(bits(x), bits(T(0.0f)));
}

TEST(CpuBf16Matmul, GemmBatchesSharedOperandsAndEmptyK) {
  if (gemm_levels().empty()) GTEST_SKIP() << kNoGemm;
  at_gemm_levels(batches_shared_operands_and_empty_k<bf16>);
}

TEST(CpuF32Matmul, GemmBatchesSharedOperandsAndEmptyK) {
  if (!f32_gemm_runs()) GTEST_SKIP() << kNoF32Gemm;
  batches_shared_operands_and_empty_k<float>(simd::Isa::Avx512);
}

// AMX with the weight in place (Note [AMX GEMM with the weight in place]): c = a @ W^T for a few
// rows of a, W stored [n, k] with 64-byte aligned rows (a row stride of k rounded up to 32, with or
// without a gap), against f64, and bit for bit against the same values of W at a row stride that
// rules the path out (the packed GEMM); c in three layouts, a in two, sizes off the tiles (32 rows
// of W, 16 and 32 rows of a, 32 elements of k), and a batch of products sharing a.
TEST(CpuBf16Matmul, AmxWeightInPlace) {
  if (simd::detected() < simd::Isa::Amx) GTEST_SKIP() << "no AMX on this cpu: the path runs only there";
  const simd::Isa isa = simd::Isa::Amx;
  std::mt19937 rng(17);
  // A buffer of at least n bf16 whose data starts 64-byte aligned.
  struct Aligned {
    std::vector<bf16> v;
    bf16* p;
    explicit Aligned(int64_t n) : v(static_cast<size_t>(n + 32), bf16(0.0f)) {
      const uintptr_t at = reinterpret_cast<uintptr_t>(v.data());
      p = v.data() + (64 - at % 64) % 64 / sizeof(bf16);
    }
  };
  int turn = 0;
  for (int64_t m : {1, 3, 16, 17, 32, 40, 64})
    for (int64_t n : {1, 31, 32, 33, 100})
      for (int64_t k : {1, 31, 32, 33, 64, 100, 300}) {
        const int64_t ldw = (k + 31) / 32 * 32 + (turn % 2) * 32, ldu = k + 1;
        const Layout2 la = turn % 3 == 0 ? Layout2{"column-major", 1, m} : Layout2{"row-major", k, 1};
        const Layout2 lc = turn % 4 == 1   ? Layout2{"column-major", 1, m}
                           : turn % 4 == 3 ? Layout2{"no unit stride", 2 * n + 1, 2}
                                           : Layout2{"row-major", n, 1};
        ++turn;
        SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) +
                     ", W's row stride " + std::to_string(ldw) + ", a " + la.name + ", c " + lc.name);
        const std::vector<bf16> a = random_values<bf16>(la.size(m, k), rng), wv = random_values<bf16>(n * k, rng);
        Aligned w(n * ldw), wu(n * ldu + 1);
        for (int64_t j = 0; j < n; ++j)
          for (int64_t p = 0; p < k; ++p) {
            w.p[j * ldw + p] = wv[static_cast<size_t>(j * k + p)];
            wu.p[1 + j * ldu + p] = wv[static_cast<size_t>(j * k + p)];  // rows off 64-byte boundaries
          }
        std::vector<bf16> c(static_cast<size_t>(lc.size(m, n)), bf16(7.0f)), cu = c;
        const cpu::Bf16Gemm g{{a.data(), m, k, la.rs, la.cs}, {w.p, k, n, 1, ldw}, {c.data(), m, n, lc.rs, lc.cs}};
        const cpu::Bf16Gemm gu{
            {a.data(), m, k, la.rs, la.cs}, {wu.p + 1, k, n, 1, ldu}, {cu.data(), m, n, lc.rs, lc.cs}};
        ASSERT_TRUE(cpu::bf16_weight_as_is(g, isa));
        ASSERT_FALSE(cpu::bf16_weight_as_is(gu, isa));
        cpu::gemm_bf16(
            1, [&](int64_t) { return g; }, isa);
        cpu::gemm_bf16(
            1, [&](int64_t) { return gu; }, isa);
        for (size_t e = 0; e < c.size(); ++e) ASSERT_EQ(c[e].bits, cu[e].bits) << "at " << e;
        expect_gemm_close(m, n, k, a.data(), la, w.p, Layout2{"W^T", 1, ldw}, c, lc);
        if (::testing::Test::HasFatalFailure()) return;
      }
  // Three products sharing a, each with its own W, in one call: each as it comes alone.
  const int64_t m = 20, n = 70, k = 96, count = 3;
  const std::vector<bf16> a = random_values<bf16>(m * k, rng), wv = random_values<bf16>(count * n * k, rng);
  Aligned w(count * n * k);
  std::copy(wv.begin(), wv.end(), w.p);
  std::vector<bf16> c(static_cast<size_t>(count * m * n)), one(static_cast<size_t>(m * n));
  auto product = [&](int64_t i, bf16* out) {
    return cpu::Bf16Gemm{{a.data(), m, k, k, 1}, {w.p + i * n * k, k, n, 1, k}, {out, m, n, n, 1}};
  };
  ASSERT_TRUE(cpu::bf16_weight_as_is(product(0, c.data()), isa));
  cpu::gemm_bf16(
      count, [&](int64_t i) { return product(i, c.data() + i * m * n); }, isa);
  for (int64_t i = 0; i < count; ++i) {
    cpu::gemm_bf16(
        1, [&](int64_t) { return product(i, one.data()); }, isa);
    for (int64_t e = 0; e < m * n; ++e)
      ASSERT_EQ(c[static_cast<size_t>(i * m * n + e)].bits, one[static_cast<size_t>(e)].bits)
          << "product " << i << " element " << e;
  }
}

// VDPBF16PS dot products of a weight's rows (Note [bf16 dot products of a weight's rows]): b = W^T
// (unit stride along k) against a few rows of a at Isa::Avx512Bf16, against f64 over blocks cut
// short in both W's rows and a's and a masked end of k; a row's result is the same bits in any
// number of rows of a.
TEST(CpuBf16Matmul, DotProductsOfAWeightsRows) {
  if (simd::detected() < simd::Isa::Avx512Bf16) GTEST_SKIP() << kNoGemm;
  const simd::Isa isa = simd::Isa::Avx512Bf16;
  std::mt19937 rng(19);
  int turn = 0;
  for (int64_t m : {2, 5, 7, 13, 64})
    for (int64_t n : {1, 3, 5, 70})
      for (int64_t k : {256, 300, 1000}) {
        const Layout2 la = turn % 2 ? Layout2{"column-major", 1, m} : Layout2{"row-major", k, 1};
        const Layout2 lc = turn % 3 == 1 ? Layout2{"column-major", 1, m} : Layout2{"row-major", n, 1};
        ++turn;
        const bf16 one(1.0f);
        ASSERT_TRUE(cpu::bf16_weight_as_is(
            cpu::Bf16Gemm{{&one, m, k, la.rs, la.cs}, {&one, k, n, 1, k}, {nullptr, m, n, n, 1}}, isa));
        check_gemm<bf16>(m, n, k, la, {"column-major", 1, k}, lc, isa, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
  const int64_t n = 37, k = 333;
  const std::vector<bf16> a = random_values<bf16>(64 * k, rng), w = random_values<bf16>(n * k, rng);
  std::vector<bf16> all(static_cast<size_t>(64 * n)), few(static_cast<size_t>(9 * n));
  for (auto [c, m] : {std::pair{&all, int64_t{64}}, std::pair{&few, int64_t{9}}})
    cpu::gemm_bf16(
        1,
        [&](int64_t) {
          return cpu::Bf16Gemm{{a.data(), m, k, k, 1}, {w.data(), k, n, 1, k}, {c->data(), m, n, n, 1}};
        },
        isa);
  for (size_t e = 0; e < few.size(); ++e) ASSERT_EQ(few[e].bits, all[e].bits) << "at " << e;
}

// gemm_bf16 and gemm_f32 refuse the levels without a kernel and those above this processor's.
TEST(CpuPackedGemm, RejectsLevelsWithoutAKernel) {
  const bf16 one(1.0f);
  bf16 out(0.0f);
  auto bf16_at = [&](simd::Isa isa) {
    cpu::gemm_bf16(
        1,
        [&](int64_t) {
          return cpu::Bf16Gemm{{&one, 1, 1, 1, 1}, {&one, 1, 1, 1, 1}, {&out, 1, 1, 1, 1}};
        },
        isa);
  };
  EXPECT_THROW(bf16_at(simd::Isa::Avx512), UnsupportedError);
  for (simd::Isa isa : {simd::Isa::Avx512Bf16, simd::Isa::Amx}) {
    SCOPED_TRACE(simd::isa_name(isa));
    if (isa > simd::detected()) {
      EXPECT_THROW(bf16_at(isa), UnsupportedError);
    } else {
      out = bf16(0.0f);
      bf16_at(isa);
      EXPECT_EQ(out.bits, one.bits);
    }
  }
  const float two = 2.0f;
  float f = 0.0f;
  auto f32_at = [&](simd::Isa isa) {
    cpu::gemm_f32(
        1,
        [&](int64_t) {
          return cpu::F32Gemm{{&two, 1, 1, 1, 1}, {&two, 1, 1, 1, 1}, {&f, 1, 1, 1, 1}};
        },
        isa);
  };
  EXPECT_THROW(f32_at(simd::Isa::Avx2), UnsupportedError);
  for (int lv = static_cast<int>(simd::Isa::Avx512); lv <= static_cast<int>(simd::Isa::Amx); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    SCOPED_TRACE(simd::isa_name(isa));
    if (isa > simd::detected()) {
      EXPECT_THROW(f32_at(isa), UnsupportedError);
    } else {
      f = 0.0f;
      f32_at(isa);
      EXPECT_EQ(f, 4.0f);
    }
  }
}

// a @ b at level isa through cpu::matmul_at (operands of rank 2 or more).
Tensor matmul_at(const Tensor& a, const Tensor& b, simd::Isa isa) {
  const Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape as = broadcast_shapes(ab, bb, "test"), bs = as, cs = as;
  for (Shape* s : {&as, &bs, &cs}) s->push_back(s == &bs ? b.dim(-2) : a.dim(-2));
  for (Shape* s : {&as, &bs, &cs}) s->push_back(s == &as ? a.dim(-1) : b.dim(-1));
  const Tensor c = Tensor::zeros(cs, a.dtype());
  cpu::matmul_at(TensorArg(a.broadcast_as(as)), TensorArg(b.broadcast_as(bs)), TensorArg(c), isa);
  return c;
}

// matmul of dtype dt at every level (bf16: its GEMM at Avx512Bf16 (VDPBF16PS) and Amx (tiles),
// widening below; f32: its GEMM from Avx512 up where a product is large enough (here 300 x 700 @
// 700 x 500), OpenBLAS otherwise; f16: widened to f32 for those);
// batches, broadcast batches, transposed and sliced operands, a few rows against a weight's
// transpose, a large product, zero sizes and k == 0.
void every_level_against_f64(DType dt) {
  auto randu = [dt](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(dt); };
  const Tensor a3 = randu({3, 33, 100}), b3 = randu({3, 100, 17}), b1 = randu({100, 17});
  const Tensor wide = randu({33, 130}).narrow(1, 20, 100);  // rows with a gap
  const Tensor big_a = randu({300, 700}), big_b = randu({700, 500});
  const Tensor w_rows = randu({70, 96}), w_narrow = randu({70, 128}).narrow(1, 0, 100);
  for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    SCOPED_TRACE(simd::isa_name(isa));
    auto check = [&](const Tensor& a, const Tensor& b, const std::string& what) {
      SCOPED_TRACE(what);
      testing::expect_product_close(matmul_at(a, b, isa), a, b);
    };
    check(a3, b3, "batched");
    check(a3, b1, "broadcast b");
    check(b1.t(), a3.transpose(1, 2), "broadcast a, transposed b");
    check(randu({2, 1, 33, 100}), b3, "broadcast batch dims");
    check(a3.transpose(1, 2).contiguous().transpose(1, 2), b3.transpose(1, 2).contiguous().transpose(1, 2),
          "column-major operands");
    check(wide, b3.select(0, 2), "row-strided a");
    check(randu({33, 100, 2}).select(2, 1), b1, "a without a unit stride");
    check(big_a, big_b, "300 x 700 @ 700 x 500");
    check(big_a, big_a.t().contiguous(), "300 x 700 @ 700 x 300 from a row-major 300 x 700, transposed");
    // A linear layer's weight W [n, k] (64-byte aligned rows: AMX reads it in place, Note [AMX GEMM
    // with the weight in place]) against a few rows, a batch of them, and a k narrowed from 128.
    check(randu({5, 96}), w_rows.t(), "5 rows @ W^T");
    check(randu({2, 3, 96}), w_rows.t(), "batch of 2 x 3 rows @ W^T");
    check(randu({40, 100}), w_narrow.t(), "40 rows @ W^T, k narrowed");
    EXPECT_EQ(matmul_at(randu({0, 5}), randu({5, 4}), isa).shape(), Shape({0, 4}));
    EXPECT_EQ(matmul_at(randu({2, 6, 5}), randu({5, 0}), isa).shape(), Shape({2, 6, 0}));
    const Tensor z = matmul_at(randu({3, 0}), randu({0, 4}), isa);
    EXPECT_EQ(z.to_dtype(DType::F32).to_vector<float>(), std::vector<float>(12, 0.f));
  }
}

TEST(CpuBf16Matmul, EveryLevelAgainstF64) { every_level_against_f64(DType::BF16); }
TEST(CpuF32Matmul, EveryLevelAgainstF64) { every_level_against_f64(DType::F32); }
TEST(CpuF16Matmul, EveryLevelAgainstF64) { every_level_against_f64(DType::F16); }

// A convolution case of the every-level tests: input and weight shapes, parameters, and whether
// the input is channels-last in memory and whether it runs in f32 only.
struct ConvCase {
  const char* what;
  Shape x, w;
  Conv2dParams p;
  bool channels_last = false;
  bool f32_only = false;
};

// conv2d (or conv_transpose2d where `transposed`) at level isa through cpu::conv2d_at (or
// cpu::conv_transpose2d_at).
Tensor conv_at(const Tensor& x, const Tensor& w, const Conv2dParams& p, bool transposed, simd::Isa isa) {
  auto out_size = [&](int d) {
    const int64_t reach = p.dilation[d] * (w.dim(2 + d) - 1);
    return transposed ? (x.dim(2 + d) - 1) * p.stride[d] - 2 * p.padding[d] + reach + p.output_padding[d] + 1
                      : (x.dim(2 + d) + 2 * p.padding[d] - reach - 1) / p.stride[d] + 1;
  };
  const int64_t c_out = transposed ? w.dim(1) * p.groups : w.dim(0);
  const Tensor c = Tensor::zeros({x.dim(0), c_out, out_size(0), out_size(1)}, x.dtype());
  if (transposed) {
    cpu::conv_transpose2d_at(TensorArg(x), TensorArg(w), TensorArg(c), p, isa);
  } else {
    cpu::conv2d_at(TensorArg(x), TensorArg(w), TensorArg(c), p, isa);
  }
  return c;
}

// Each case in f32, f16, bf16 and f64 at every level against the same inputs in f64.
void convs_every_level(const std::vector<ConvCase>& cases, bool transposed) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    SCOPED_TRACE(dtype_name(dt));
    auto randu = [dt](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(dt); };
    for (const ConvCase& c : cases) {
      if (c.f32_only && dt != DType::F32) continue;
      SCOPED_TRACE(c.what);
      Tensor x = randu(c.x);
      if (c.channels_last) x = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      const Tensor w = randu(c.w);
      const Tensor x64 = x.to_dtype(DType::F64), w64 = w.to_dtype(DType::F64);
      auto conv64 = [&](const Tensor& a, const Tensor& b) {
        return transposed ? a.conv_transpose2d(b, c.p) : a.conv2d(b, c.p);
      };
      const Tensor want = conv64(x64, w64), mag = conv64(x64.abs(), w64.abs());
      const int64_t terms = (transposed ? c.x[1] / c.p.groups : c.w[1]) * c.w[2] * c.w[3];
      for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
        const simd::Isa isa = static_cast<simd::Isa>(lv);
        SCOPED_TRACE(simd::isa_name(isa));
        testing::expect_sums_close(conv_at(x, w, c.p, transposed, isa), want, mag, terms);
      }
    }
  }
}

// Forward convolutions at every level (Note [CPU conv on the packed GEMMs] in conv.cpp): f32, and
// f16 widened to f32, on wick's f32 GEMM from Avx512 up where a product reaches kOwnF32Min,
// OpenBLAS otherwise; bf16 on the bf16 GEMMs from Avx512Bf16 up; f64 on OpenBLAS. Groups, strides,
// dilation, uneven padding, the 1x1 kernel read in place, channels-last inputs, c_out / groups
// over 112 (b packed ahead), an odd number of terms, output rows narrower than a panel, several
// samples sharing the packed weights; and, for f32, one image whose packed im2col would outgrow
// the packing limit.
TEST(CpuPackedConv, EveryLevelAgainstF64) {
  convs_every_level(
      {
          {"3x3 padding 1", {2, 6, 11, 13}, {4, 6, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
          {"2 groups, stride 2", {1, 8, 16, 9}, {6, 4, 3, 3}, {{2, 2}, {0, 1}, {1, 1}, 2, {0, 0}}},
          {"dilation 2, 5 terms per channel", {1, 3, 15, 20}, {40, 3, 1, 5}, {{1, 1}, {0, 2}, {2, 2}, 1, {0, 0}}},
          {"1x1", {3, 20, 7, 9}, {17, 20, 1, 1}, {}},
          {"channels-last input", {2, 5, 9, 10}, {7, 5, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}, true},
          {"64 channels 3x3", {2, 64, 20, 24}, {24, 64, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
          {"2 groups of 120 outputs, stride 2 x 3, dilation 1 x 2",
           {2, 32, 40, 61},
           {240, 16, 3, 3},
           {{2, 3}, {1, 2}, {1, 2}, 2, {0, 0}}},
          {"rows of 3 pixels", {2, 128, 40, 3}, {32, 128, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
          {"1x1, 96 channels, 3 samples", {3, 96, 30, 31}, {40, 96, 1, 1}, {}},
          {"channels-last, 37 channels, 3x2 padding 2 x 0",
           {2, 37, 33, 29},
           {50, 37, 3, 2},
           {{1, 1}, {2, 0}, {1, 1}, 1, {0, 0}},
           true},
          {"128x128 image, 128 outputs",
           {1, 64, 128, 128},
           {128, 64, 3, 3},
           {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}},
           false,
           true},
      },
      false);
  if (simd::detected() < simd::Isa::Amx) {
    const Tensor x = Tensor::rand_uniform({1, 2, 3, 3}, DType::F32, -1, 1);
    EXPECT_THROW(conv_at(x, x.narrow(2, 0, 1).narrow(3, 0, 1), {}, false, simd::Isa::Amx), UnsupportedError);
  }
}

// Transposed convolutions at every level. At stride 1, where the padding allows, they run as
// forward convolutions on the packed GEMMs (Note [Transposed conv at stride 1] in conv.cpp), else
// in blocks of output channels through OpenBLAS: groups, dilation and output padding at stride 1,
// padding past the kernel's reach, larger strides (with a dilation sharing a factor with the
// stride; the upsampling 4x4 kernel at stride 2), one output channel a group (fewer blocks than
// threads), and a 1x1 kernel whose output padding makes the output larger than the input.
TEST(CpuPackedConv, TransposedEveryLevelAgainstF64) {
  convs_every_level(
      {
          {"64 -> 32 channels 3x3", {2, 64, 30, 30}, {64, 32, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
          {"stride 1, 2 groups, dilation 2, output padding 1, 3x2",
           {2, 64, 23, 26},
           {64, 20, 3, 2},
           {{1, 1}, {1, 0}, {2, 2}, 2, {1, 1}}},
          {"stride 1, padding 3 past a 3x3 kernel's reach",
           {2, 32, 30, 30},
           {32, 16, 3, 3},
           {{1, 1}, {3, 3}, {1, 1}, 1, {0, 0}}},
          {"2 groups, stride 2 x 1, dilation 1 x 2, output padding",
           {2, 64, 23, 26},
           {64, 20, 3, 2},
           {{2, 1}, {1, 0}, {1, 2}, 2, {1, 0}}},
          {"stride 2, dilation 2, 64 -> 40 channels",
           {2, 64, 13, 11},
           {64, 40, 3, 3},
           {{2, 2}, {1, 2}, {2, 2}, 1, {1, 0}}},
          {"4x4 stride 2 padding 1", {2, 64, 14, 14}, {64, 64, 4, 4}, {{2, 2}, {1, 1}, {1, 1}, 1, {0, 0}}},
          {"one output channel, 5x5", {1, 64, 60, 60}, {64, 1, 5, 5}, {{1, 1}, {2, 2}, {1, 1}, 1, {0, 0}}},
          {"1x1, dilation 2, output padding 1", {2, 64, 30, 30}, {64, 48, 1, 1}, {{1, 1}, {0, 0}, {2, 2}, 1, {1, 1}}},
      },
      true);
}

// Random geometries (a fixed seed): groups, channels, kernel sizes, strides, dilations, padding,
// output padding, channels-last inputs, narrow and single-pixel output rows, in every dtype at
// every level; forward convolutions, and transposed ones at strides 1 to 3 (at stride 1 they may run
// as forward ones). bf16 takes the packed GEMMs at any size from Avx512Bf16 up.
TEST(CpuPackedConv, RandomGeometriesEveryLevel) {
  std::mt19937 rng(20);
  auto pick = [&](int lo, int hi) { return static_cast<int64_t>(std::uniform_int_distribution<int>(lo, hi)(rng)); };
  for (const bool transposed : {false, true}) {
    SCOPED_TRACE(transposed ? "transposed" : "forward");
    std::vector<ConvCase> cases;
    std::vector<std::string> names;
    names.reserve(24);  // the cases point into it
    while (cases.size() < 24) {
      Conv2dParams p;
      const int64_t groups = pick(1, 3), cg = pick(1, 24), cog = pick(1, 40), kh = pick(1, 4), kw = pick(1, 6);
      p.groups = groups;
      p.dilation = {pick(1, 3), pick(1, 3)};
      p.padding = {pick(0, 3), pick(0, 4)};
      p.stride = {pick(1, 3), pick(1, 3)};
      if (transposed)
        p.output_padding = {pick(0, std::max(p.stride[0], p.dilation[0]) - 1),
                            pick(0, std::max(p.stride[1], p.dilation[1]) - 1)};
      const int64_t h = pick(1, 24), w = pick(1, 40);
      const int64_t reach_h = p.dilation[0] * (kh - 1), reach_w = p.dilation[1] * (kw - 1);
      const bool fits = transposed ? (h - 1) * p.stride[0] + reach_h - 2 * p.padding[0] + p.output_padding[0] >= 0 &&
                                         (w - 1) * p.stride[1] + reach_w - 2 * p.padding[1] + p.output_padding[1] >= 0
                                   : h + 2 * p.padding[0] > reach_h && w + 2 * p.padding[1] > reach_w;
      if (!fits) continue;
      const Shape ws = transposed ? Shape{groups * cg, cog, kh, kw} : Shape{groups * cog, cg, kh, kw};
      const Shape xs{pick(1, 3), groups * cg, h, w};
      names.push_back("x " + xs.str() + " w " + ws.str() + " stride " + std::to_string(p.stride[0]) + "x" +
                      std::to_string(p.stride[1]) + " padding " + std::to_string(p.padding[0]) + "x" +
                      std::to_string(p.padding[1]) + " dilation " + std::to_string(p.dilation[0]) + "x" +
                      std::to_string(p.dilation[1]) + " groups " + std::to_string(groups) + " output padding " +
                      std::to_string(p.output_padding[0]) + "x" + std::to_string(p.output_padding[1]));
      cases.push_back({names.back().c_str(), xs, ws, p, pick(0, 1) == 1});
    }
    convs_every_level(cases, transposed);
  }
}

// VDPBF16PS and TDPBF16PS treat denormal inputs as zero and flush denormal sums to zero (Note
// [bf16 GEMM], Note [AMX GEMM]); the widening path and f32 (wick's kernel, Note [f32 GEMM], and
// OpenBLAS) keep both. Infinities and NaN propagate on all (with AMX through the zeros that pad k
// to 32 in both operands: no 0 * inf).
const float kDenormal = std::ldexp(1.f, -130);  // a bf16 and an f32 denormal
const float kInf = std::numeric_limits<float>::infinity();
// row 0: d times 2^20 (a normal product), times 1 (a denormal one); row 1: 2^-63 times 2^20, times
// 1, times 2^-65 (a denormal product of normal inputs); rows 2 and 3: inf, and inf * 0
const std::vector<float> kSpecialA = {kDenormal, 0, std::ldexp(1.f, -63), 0, kInf, 0, 0, kInf};  // 4 x 2
const std::vector<float> kSpecialB = {std::ldexp(1.f, 20), 1, std::ldexp(1.f, -65), 0, 0, 1};    // 2 x 3

// c = kSpecialA @ kSpecialB (4 x 3, row-major), denormals flushed or kept.
void expect_special_products(const std::vector<float>& c, bool flush) {
  ASSERT_EQ(c.size(), 12u);
  EXPECT_EQ(c[0], flush ? 0.f : std::ldexp(1.f, -110));
  EXPECT_EQ(c[1], flush ? 0.f : kDenormal);
  EXPECT_EQ(c[2], 0.f);
  EXPECT_EQ(c[3], std::ldexp(1.f, -43));
  EXPECT_EQ(c[4], std::ldexp(1.f, -63));
  EXPECT_EQ(c[5], flush ? 0.f : std::ldexp(1.f, -128));
  for (int j = 6; j < 9; ++j) EXPECT_EQ(c[j], kInf) << j;
  EXPECT_TRUE(std::isnan(c[9]) && std::isnan(c[10])) << c[9] << " " << c[10];
  EXPECT_EQ(c[11], kInf);
}

// Through matmul at every level: as it is, a product of 3 vectors (Note [CPU matrix-vector
// products]), which keeps denormals; and padded with zeros to 17 x 17, beyond the vector kernels,
// which goes to the GEMMs.
void denormals_inf_and_nan(DType dt) {
  const Tensor a = Tensor::from_vector<float>(kSpecialA, {4, 2}).to_dtype(dt);
  const Tensor b = Tensor::from_vector<float>(kSpecialB, {2, 3}).to_dtype(dt);
  Tensor a17 = Tensor::zeros({17, 2}, dt), b17 = Tensor::zeros({2, 17}, dt);
  a17.narrow(0, 0, 4).copy_from(a);
  b17.narrow(1, 0, 3).copy_from(b);
  for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    SCOPED_TRACE(simd::isa_name(isa));
    expect_special_products(matmul_at(a, b, isa).to_dtype(DType::F32).to_vector<float>(), false);
    expect_special_products(
        matmul_at(a17, b17, isa).narrow(0, 0, 4).narrow(1, 0, 3).to_dtype(DType::F32).contiguous().to_vector<float>(),
        dt == DType::BF16 && isa >= simd::Isa::Avx512Bf16);
  }
}

TEST(CpuBf16Matmul, DenormalsInfAndNaN) { denormals_inf_and_nan(DType::BF16); }
TEST(CpuF32Matmul, DenormalsInfAndNaN) { denormals_inf_and_nan(DType::F32); }

// matmul gives products this small to OpenBLAS: gemm_f32 itself, with a c of a tile's 14 x 32 and a
// and b padded to it (the padding zeros meet inf in a's rows and b's columns past the product).
TEST(CpuF32Matmul, GemmDenormalsInfAndNaN) {
  if (!f32_gemm_runs()) GTEST_SKIP() << kNoF32Gemm;
  std::vector<float> c(12, 7.0f);
  cpu::gemm_f32(
      1,
      [&](int64_t) {
        return cpu::F32Gemm{{kSpecialA.data(), 4, 2, 2, 1}, {kSpecialB.data(), 2, 3, 3, 1}, {c.data(), 4, 3, 3, 1}};
      },
      simd::Isa::Avx512);
  expect_special_products(c, false);
}

}  // namespace
}  // namespace wick
