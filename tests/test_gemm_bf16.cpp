// The bf16 GEMM of src/cpu/gemm_bf16.cpp (Note [bf16 GEMM], Note [AMX GEMM]) against f64: directly
// on strided matrices with each of its kernels this processor runs (VDPBF16PS at Avx512Bf16, AMX
// tiles at Amx), and through matmul at every vector level (below Avx512Bf16, the operands are
// widened to f32 for OpenBLAS).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <string>
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
constexpr const char* kNoGemm =
    "no bf16 GEMM level on this cpu (AVX512_BF16 on AMD, or AMX with the OS's permission: simd.cpp detect())";

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

float bf16_value(bf16 h) { return bf16::to_f32(h.bits); }

// A buffer of n random bf16 values in [-1, 1].
std::vector<bf16> random_bf16(int64_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<bf16> v(static_cast<size_t>(n));
  for (bf16& x : v) x = bf16(u(rng));
  return v;
}

// c = a @ b through gemm_bf16 at level isa for one product, a, b and c laid out as la, lb, lc,
// against the f64 product (within testing::sum_error_bound); the elements of c's buffer outside
// c keep their value.
void check_gemm(int64_t m, int64_t n, int64_t k, const Layout2& la, const Layout2& lb, const Layout2& lc, simd::Isa isa,
                std::mt19937& rng) {
  SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " k " + std::to_string(k) + ", a " + la.name +
               ", b " + lb.name + ", c " + lc.name);
  const std::vector<bf16> a = random_bf16(la.size(m, k), rng), b = random_bf16(lb.size(k, n), rng);
  std::vector<bf16> c(static_cast<size_t>(lc.size(m, n)), bf16(7.0f));
  cpu::gemm_bf16(
      1,
      [&](int64_t) {
        return cpu::Bf16Gemm{
            {a.data(), m, k, la.rs, la.cs}, {b.data(), k, n, lb.rs, lb.cs}, {c.data(), m, n, lc.rs, lc.cs}};
      },
      isa);
  std::vector<bool> inside(c.size(), false);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0, mag = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = static_cast<double>(bf16_value(a[static_cast<size_t>(i * la.rs + p * la.cs)])) *
                         bf16_value(b[static_cast<size_t>(p * lb.rs + j * lb.cs)]);
        want += x;
        mag += std::abs(x);
      }
      const size_t at = static_cast<size_t>(i * lc.rs + j * lc.cs);
      inside[at] = true;
      const double got = bf16_value(c[at]);
      ASSERT_LE(std::abs(got - want), testing::sum_error_bound(want, mag, k, 0x1p-8))
          << "element (" << i << ", " << j << ")";
    }
  for (size_t i = 0; i < c.size(); ++i) {
    if (!inside[i]) {
      ASSERT_EQ(c[i].bits, bf16(7.0f).bits) << "outside c, at " << i;
    }
  }
}

// Sizes that are no multiple of the tiles (14 x 32, and 32 x 32 of 16 k-pairs for AMX), of the
// vector width or of the k block (128 pairs), and some that are, every layout of each operand at
// least once, with each kernel.
TEST(CpuBf16Matmul, GemmSizesAndLayoutsAgainstF64) {
  if (gemm_levels().empty()) GTEST_SKIP() << kNoGemm;
  for (simd::Isa isa : gemm_levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    std::mt19937 rng(11);
    const int64_t sizes[] = {1, 3, 15, 17, 31, 32, 33, 100, 257};
    int turn = 0;
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes) {
          const std::vector<Layout2> la = layouts(m, k), lb = layouts(k, n), lc = layouts(m, n);
          const size_t t = static_cast<size_t>(turn++);
          check_gemm(m, n, k, la[t % la.size()], lb[t / la.size() % lb.size()], lc[t / 3 % lc.size()], isa, rng);
          if (::testing::Test::HasFatalFailure()) return;
        }
    // larger, with several k blocks and row panels, and each operand column-major
    check_gemm(300, 500, 700, {"row-major", 700, 1}, {"row-major", 500, 1}, {"row-major", 500, 1}, isa, rng);
    check_gemm(300, 500, 700, {"column-major", 1, 300}, {"column-major", 1, 700}, {"column-major", 1, 300}, isa, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Products that share operands (pointers repeat: broadcast batches) are packed once and still
// give each product its own result, as do products packed in several groups; k == 0 writes zeros.
TEST(CpuBf16Matmul, GemmBatchesSharedOperandsAndEmptyK) {
  if (gemm_levels().empty()) GTEST_SKIP() << kNoGemm;
  std::mt19937 rng(12);
  const int64_t m = 37, n = 45, k = 70, count = 6;
  const std::vector<bf16> a = random_bf16(2 * m * k, rng), b = random_bf16(3 * k * n, rng);
  // Products whose packed operands exceed the group limit (32 MiB: 3 of these b per group) run in
  // several groups, with the same results. (b is packed ahead only where a has more row panels than
  // a block of c takes, as these 300 rows with either kernel; Note [bf16 GEMM packing of b].)
  const int64_t bm = 300, bk = 1024, bn = 4096, nbig = 5;
  const std::vector<bf16> big_b = random_bf16(nbig * bk * bn, rng), small_a = random_bf16(bm * bk, rng);
  for (simd::Isa isa : gemm_levels()) {
    SCOPED_TRACE(simd::isa_name(isa));
    auto gemm = [&](int64_t products, const std::function<cpu::Bf16Gemm(int64_t)>& product) {
      cpu::gemm_bf16(products, product, isa);
    };
    std::vector<bf16> c(static_cast<size_t>(count * m * n));
    // product i: a[i % 2] @ b[i % 3]
    gemm(count, [&](int64_t i) {
      return cpu::Bf16Gemm{{a.data() + i % 2 * m * k, m, k, k, 1},
                           {b.data() + i % 3 * k * n, k, n, n, 1},
                           {c.data() + i * m * n, m, n, n, 1}};
    });
    for (int64_t i = 0; i < count; ++i) {
      std::vector<bf16> one(static_cast<size_t>(m * n));
      gemm(1, [&](int64_t) {
        return cpu::Bf16Gemm{
            {a.data() + i % 2 * m * k, m, k, k, 1}, {b.data() + i % 3 * k * n, k, n, n, 1}, {one.data(), m, n, n, 1}};
      });
      for (int64_t e = 0; e < m * n; ++e)
        ASSERT_EQ(c[static_cast<size_t>(i * m * n + e)].bits, one[static_cast<size_t>(e)].bits)
            << "product " << i << " element " << e;
    }
    std::vector<bf16> big_c(static_cast<size_t>(nbig * bm * bn)), one_c(static_cast<size_t>(bm * bn));
    gemm(nbig, [&](int64_t i) {
      return cpu::Bf16Gemm{{small_a.data(), bm, bk, bk, 1},
                           {big_b.data() + i * bk * bn, bk, bn, bn, 1},
                           {big_c.data() + i * bm * bn, bm, bn, bn, 1}};
    });
    for (int64_t i = 0; i < nbig; ++i) {
      gemm(1, [&](int64_t) {
        return cpu::Bf16Gemm{{small_a.data(), bm, bk, bk, 1},
                             {big_b.data() + i * bk * bn, bk, bn, bn, 1},
                             {one_c.data(), bm, bn, bn, 1}};
      });
      for (int64_t e = 0; e < bm * bn; ++e)
        ASSERT_EQ(big_c[static_cast<size_t>(i * bm * bn + e)].bits, one_c[static_cast<size_t>(e)].bits)
            << "large product " << i << " element " << e;
    }
    std::vector<bf16> z(static_cast<size_t>(m * n), bf16(7.0f));
    gemm(1, [&](int64_t) {
      return cpu::Bf16Gemm{{a.data(), m, 0, 1, 1}, {b.data(), 0, n, 1, 1}, {z.data(), m, n, n, 1}};
    });
    for (const bf16& x : z) ASSERT_EQ(x.bits, bf16(0.0f).bits);
  }
}

// gemm_bf16 refuses the levels without a kernel and those above this processor's.
TEST(CpuBf16Matmul, GemmRejectsLevelsWithoutAKernel) {
  const bf16 one(1.0f);
  bf16 out(0.0f);
  auto gemm_at = [&](simd::Isa isa) {
    cpu::gemm_bf16(
        1,
        [&](int64_t) {
          return cpu::Bf16Gemm{{&one, 1, 1, 1, 1}, {&one, 1, 1, 1, 1}, {&out, 1, 1, 1, 1}};
        },
        isa);
  };
  EXPECT_THROW(gemm_at(simd::Isa::Avx512), UnsupportedError);
  for (simd::Isa isa : {simd::Isa::Avx512Bf16, simd::Isa::Amx}) {
    SCOPED_TRACE(simd::isa_name(isa));
    if (isa > simd::detected()) {
      EXPECT_THROW(gemm_at(isa), UnsupportedError);
    } else {
      out = bf16(0.0f);
      gemm_at(isa);
      EXPECT_EQ(out.bits, one.bits);
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

// matmul of bf16 at every level: the bf16 GEMM at Avx512Bf16 (VDPBF16PS) and Amx (tiles), widening
// below; batches, broadcast batches, transposed and sliced operands, a large product, zero sizes
// and k == 0.
TEST(CpuBf16Matmul, EveryLevelAgainstF64) {
  auto randu = [](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(DType::BF16); };
  const Tensor a3 = randu({3, 33, 100}), b3 = randu({3, 100, 17}), b1 = randu({100, 17});
  const Tensor wide = randu({33, 130}).narrow(1, 20, 100);  // rows with a gap
  const Tensor big_a = randu({300, 700}), big_b = randu({700, 500});
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
    EXPECT_EQ(matmul_at(randu({0, 5}), randu({5, 4}), isa).shape(), Shape({0, 4}));
    EXPECT_EQ(matmul_at(randu({2, 6, 5}), randu({5, 0}), isa).shape(), Shape({2, 6, 0}));
    const Tensor z = matmul_at(randu({3, 0}), randu({0, 4}), isa);
    EXPECT_EQ(z.to_dtype(DType::F32).to_vector<float>(), std::vector<float>(12, 0.f));
  }
}

// Forward bf16 convolutions run im2col and the bf16 GEMM from Avx512Bf16 up (conv.cpp): against the
// same inputs in f64 on whatever level is active, with groups, strides, dilation, a 1x1 kernel read
// in place, an odd number of terms and a channels-last input.
TEST(CpuBf16Matmul, Conv2dAgainstF64) {
  auto randu = [](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1).to_dtype(DType::BF16); };
  struct Case {
    const char* what;
    Tensor x;
    Shape w;
    Conv2dParams p;
  };
  const Case cases[] = {
      {"3x3 padding 1", randu({2, 6, 11, 13}), {4, 6, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
      {"2 groups, stride 2", randu({1, 8, 16, 9}), {6, 4, 3, 3}, {{2, 2}, {0, 1}, {1, 1}, 2, {0, 0}}},
      {"dilation 2, 5 terms per channel", randu({1, 3, 15, 20}), {40, 3, 1, 5}, {{1, 1}, {0, 2}, {2, 2}, 1, {0, 0}}},
      {"1x1", randu({3, 20, 7, 9}), {17, 20, 1, 1}, {}},
      {"channels-last input", randu({2, 9, 10, 5}).transpose(1, 3), {7, 5, 3, 3}, {{1, 1}, {1, 1}, {1, 1}, 1, {0, 0}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const Tensor w = randu(c.w);
    const Tensor x64 = c.x.to_dtype(DType::F64), w64 = w.to_dtype(DType::F64);
    testing::expect_sums_close(c.x.conv2d(w, c.p), x64.conv2d(w64, c.p), x64.abs().conv2d(w64.abs(), c.p),
                               c.w[1] * c.w[2] * c.w[3]);
  }
}

// VDPBF16PS and TDPBF16PS treat denormal inputs as zero and flush denormal sums to zero (Note
// [bf16 GEMM], Note [AMX GEMM]); the widening path keeps both. Infinities and NaN propagate on all
// (with AMX through the zeros that pad k to 32 in both operands: no 0 * inf).
TEST(CpuBf16Matmul, DenormalsInfAndNaN) {
  const float d = std::ldexp(1.f, -130);  // a bf16 denormal
  const float inf = std::numeric_limits<float>::infinity();
  // row 0: d times 2^20 (a normal product), times 1 (a denormal one); row 1: 2^-63 times 2^20,
  // times 1, times 2^-65 (a denormal product of normal inputs); rows 2 and 3: inf, and inf * 0
  const Tensor a =
      Tensor::from_vector<float>({d, 0, std::ldexp(1.f, -63), 0, inf, 0, 0, inf}, {4, 2}).to_dtype(DType::BF16);
  const Tensor b =
      Tensor::from_vector<float>({std::ldexp(1.f, 20), 1, std::ldexp(1.f, -65), 0, 0, 1}, {2, 3}).to_dtype(DType::BF16);
  for (int lv = 0; lv <= static_cast<int>(simd::detected()); ++lv) {
    const simd::Isa isa = static_cast<simd::Isa>(lv);
    SCOPED_TRACE(simd::isa_name(isa));
    const std::vector<float> c = matmul_at(a, b, isa).to_dtype(DType::F32).to_vector<float>();
    const bool flush = isa >= simd::Isa::Avx512Bf16;
    EXPECT_EQ(c[0], flush ? 0.f : std::ldexp(1.f, -110));
    EXPECT_EQ(c[1], flush ? 0.f : d);
    EXPECT_EQ(c[2], 0.f);
    EXPECT_EQ(c[3], std::ldexp(1.f, -43));
    EXPECT_EQ(c[4], std::ldexp(1.f, -63));
    EXPECT_EQ(c[5], flush ? 0.f : std::ldexp(1.f, -128));
    for (int j = 6; j < 9; ++j) EXPECT_EQ(c[j], inf) << j;
    EXPECT_TRUE(std::isnan(c[9]) && std::isnan(c[10])) << c[9] << " " << c[10];
    EXPECT_EQ(c[11], inf);
  }
}

}  // namespace
}  // namespace wick
