// GPU-specific behaviour: device properties, the allocator and its statistics, out-of-memory
// recovery, bit-identical random numbers, and the strided and tiled launch paths (compared with the
// CPU).
// Every test skips when no GPU is present (this machine and CI); scripts/gpu-check.sh runs them on
// the lent H100.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/block_classes.h"
#include "backend/philox.h"
#include "test_util.h"
#include "wick/memory.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace {

using wick::Device;
using wick::DType;
using wick::Shape;
using wick::Tensor;

using wick::testing::bytes_of;

// Same values on the CPU and on `d`: doubles in [-300, 300) with a few special values, as `dtype`.
std::pair<Tensor, Tensor> sample(const Shape& shape, DType dtype, const Device& d) {
  Tensor cpu = Tensor::rand_uniform(shape, DType::F64, -300, 300);
  std::vector<double> v = cpu.to_vector<double>();
  const double special[] = {0.0, -0.0, 0.5, -1.5, 2.5, 255.5, 448.0, 1e9, -1e9, 65504.0};
  for (size_t i = 0; i < v.size() && i < std::size(special); ++i) v[i * 7 % v.size()] = special[i];
  cpu = Tensor::from_vector(v, shape).to_dtype(dtype);
  return {cpu, cpu.to(d)};
}

TEST(GpuRuntime, DeviceInfo) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    const wick::DeviceInfo i = d.info();
    EXPECT_FALSE(i.name.empty());
    EXPECT_TRUE(i.architecture.rfind("sm_", 0) == 0 || i.architecture.rfind("gfx", 0) == 0) << i.architecture;
    EXPECT_TRUE(i.warp_size == 32 || i.warp_size == 64) << i.warp_size;
    EXPECT_GT(i.multiprocessors, 0);
    EXPECT_GT(i.total_memory, 0);
    EXPECT_GT(i.free_memory, 0);
    EXPECT_LE(i.free_memory, i.total_memory);
  }
}

TEST(GpuRuntime, SupportsEveryOpTheCpuSupports) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    for (int i = 0; i < wick::kNumOps; ++i) {
      const auto op = static_cast<wick::Op>(i);
      for (DType t : wick::kAllDTypes)
        EXPECT_EQ(wick::supports(op, t, d), wick::supports(op, t, Device::cpu()))
            << wick::op_name(op) << " " << wick::dtype_name(t) << " on " << d.location();
    }
  }
}

TEST(GpuRuntime, MemoryStats) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    d.synchronize();
    const wick::MemoryStats s0 = wick::memory_stats(d);
    constexpr int64_t kBytes = int64_t{64} << 20;
    {
      Tensor t = Tensor::empty({kBytes / 4}, DType::F32, d);
      const wick::MemoryStats s1 = wick::memory_stats(d);
      EXPECT_EQ(s1.in_use, s0.in_use + kBytes);
      EXPECT_EQ(s1.allocations, s0.allocations + 1);
      EXPECT_GE(s1.peak, s1.in_use);
      EXPECT_GE(s1.reserved, s1.in_use);
    }
    d.synchronize();
    const wick::MemoryStats s2 = wick::memory_stats(d);
    EXPECT_EQ(s2.in_use, s0.in_use);
    EXPECT_GE(s2.peak, s0.in_use + kBytes);
    EXPECT_GE(s2.reserved, kBytes) << "freed blocks should stay cached in the pool";
    wick::reset_peak_memory(d);
    EXPECT_EQ(wick::memory_stats(d).peak, s2.in_use);
    wick::empty_cache(d);
    EXPECT_LT(wick::memory_stats(d).reserved, s2.reserved);
  }
}

// The block cache's size classes (src/backend/block_classes.h): every request up to wick::blocks::kMax has
// the smallest class that holds it, no more than twice its size up to 1 MiB and 12.5% above.
TEST(BlockClasses, EachRequestGetsTheSmallestClassThatHoldsIt) {
  static_assert(wick::blocks::class_bytes(wick::blocks::kClasses - 1) == wick::blocks::kMax);
  EXPECT_EQ(wick::blocks::class_of(0), -1);
  EXPECT_EQ(wick::blocks::class_of(wick::blocks::kMax + 1), -1);
  EXPECT_EQ(wick::blocks::class_of(1), 0);
  for (int c = 0; c < wick::blocks::kClasses; ++c) {
    const int64_t lo = c == 0 ? 1 : wick::blocks::class_bytes(c - 1) + 1, hi = wick::blocks::class_bytes(c);
    ASSERT_LT(lo, hi + 1) << c;
    EXPECT_EQ(wick::blocks::class_of(lo), c) << lo;
    EXPECT_EQ(wick::blocks::class_of(hi), c) << hi;
    EXPECT_EQ(hi % 512, 0) << hi;  // every block stays 512-byte aligned within the pool's
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const int64_t b = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(wick::blocks::kMax));
    const int c = wick::blocks::class_of(b);
    ASSERT_GE(c, 0) << b;
    const int64_t got = wick::blocks::class_bytes(c);
    ASSERT_GE(got, b) << b;
    if (c > 0) {
      ASSERT_LT(wick::blocks::class_bytes(c - 1), b) << b;
    }
    if (b > wick::blocks::kPow2Max) {
      ASSERT_LE(got, b + b / 8) << b;
    } else {
      ASSERT_LE(got, std::max<int64_t>(2 * b, wick::blocks::kMin)) << b;
    }
  }
}

// Temporaries come back from the handle's block cache (Note [GPU block cache]): the statistics
// count only live tensors, a chain of ops keeps its values, and empty_cache gives the cached blocks
// back. Sizes: a small class, a large one (6 MB) and one past the cache (72 MB, from the pool).
TEST(GpuRuntime, CachedBlocksAreReusedAndCountedOnlyWhileLive) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    for (const int64_t n : {int64_t{1000}, int64_t{768} * 1024, int64_t{9} << 20}) {
      const Tensor x = Tensor::arange(0, static_cast<double>(n), 1, DType::I64, d);
      wick::empty_cache(d);
      const wick::MemoryStats s0 = wick::memory_stats(d);
      Tensor y = x;
      for (int i = 0; i < 20; ++i) y = y.add(x);  // 19 temporaries freed and reused
      const std::vector<int64_t> got = y.to(Device::cpu()).to_vector<int64_t>();
      ASSERT_EQ(static_cast<int64_t>(got.size()), n);
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], 21 * static_cast<int64_t>(i)) << n << " " << i;
      const wick::MemoryStats s1 = wick::memory_stats(d);
      EXPECT_EQ(s1.in_use, s0.in_use + 8 * n) << n;
      EXPECT_EQ(s1.allocations, s0.allocations + 1) << n;
      y = Tensor();
      wick::empty_cache(d);  // the cached blocks go back: the pool holds what it held before
      EXPECT_EQ(wick::memory_stats(d).reserved, s0.reserved) << n;
    }
  }
}

TEST(GpuRuntime, OutOfMemoryIsTypedAndTheDeviceRecovers) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    const wick::DeviceInfo info = d.info();
    // More than the device has (refused before asking the driver), and more than is free but
    // less than the total (the driver's out-of-memory error, after trimming the pool).
    for (const int64_t too_much :
         {info.total_memory * 2, info.free_memory + (info.total_memory - info.free_memory) / 2}) {
      Tensor keep = Tensor::full({1 << 20}, 1.0, DType::F32, d);  // cached blocks must not hide the error
      try {
        Tensor t = Tensor::empty({too_much}, DType::U8, d);
        ADD_FAILURE() << "allocating " << too_much << " bytes did not throw";
      } catch (const wick::OutOfMemory& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[alloc]"), std::string::npos) << msg;
        EXPECT_NE(msg.find(d.location()), std::string::npos) << msg;
        EXPECT_NE(msg.find(std::to_string(too_much)), std::string::npos) << msg;
      }
      // The device is still usable, and so are tensors made before.
      Tensor t = Tensor::full({1000}, 3.0, DType::F32, d);
      for (float x : t.to_vector<float>()) ASSERT_EQ(x, 3.0f);
      EXPECT_EQ(keep.narrow(0, 12345, 1).to_vector<float>(), std::vector<float>{1.0f});
    }
  }
}

TEST(GpuRuntime, RandUniformBitsMatchTheCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::F8E4M3}) {
      for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4099}, int64_t{1} << 20}) {
        d.set_seed(1234);
        Device::cpu().set_seed(1234);
        // Two calls, so that the counters are compared as well as the first stream.
        for (int call = 0; call < 2; ++call) {
          const Tensor g = Tensor::rand_uniform({n}, t, -2.0, 5.0, d);
          const Tensor c = Tensor::rand_uniform({n}, t, -2.0, 5.0);
          EXPECT_EQ(bytes_of(g), bytes_of(c)) << wick::dtype_name(t) << " n=" << n << " call " << call;
        }
      }
    }
  }
}

TEST(GpuRuntime, RandNormalMatchesTheCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    d.set_seed(99);
    Device::cpu().set_seed(99);
    // Device logf/sinf/cosf may differ from the host's by an ulp or two, so not bit for bit.
    const std::vector<float> g = Tensor::rand_normal({10001}, DType::F32, 1.0, 2.0, d).to_vector<float>();
    const std::vector<float> c = Tensor::rand_normal({10001}, DType::F32, 1.0, 2.0).to_vector<float>();
    ASSERT_EQ(g.size(), c.size());
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], c[i], 1e-4 * (1 + std::abs(c[i]))) << i;
  }
}

// The three launch paths of rand (Note [Random streams]): one thread per Philox block with vector
// stores (an aligned contiguous output), the same with scalar stores (a contiguous view at an odd
// offset), and one element per thread (a strided output). Uniforms equal the CPU's bits on every
// path; normals equal each other's bits (the device math library differs from the host's).
TEST(GpuRuntime, RandPathsAgree) {
  WICK_REQUIRE_GPU(devs);
  const wick::RandomStream rs{4321, 5};
  for (const Device& d : devs) {
    wick::Backend& gpu = wick::backend_for(d);
    wick::Backend& cpu = wick::backend_for(Device::cpu());
    for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::F8E4M3}) {
      for (int64_t n : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{5}, int64_t{4097}, (int64_t{1} << 16) + 3}) {
        for (bool normal : {false, true}) {
          auto fill = [&](wick::Backend& be, const Tensor& dst) {
            if (normal)
              be.rand_normal(wick::TensorArg(dst), wick::RandomParams{0.5, 3.0, rs});
            else
              be.rand_uniform(wick::TensorArg(dst), wick::RandomParams{-2.0, 5.0, rs});
          };
          const Tensor aligned = Tensor::empty({n}, t, d);
          const Tensor odd = Tensor::empty({n + 1}, t, d).narrow(0, 1, n);
          const Tensor strided = Tensor::empty({n, 2}, t, d).narrow(1, 1, 1);
          const Tensor host = Tensor::empty({n}, t);
          fill(gpu, aligned);
          fill(gpu, odd);
          fill(gpu, strided);
          fill(cpu, host);
          const std::string what = std::string(normal ? "normal " : "uniform ") + std::string(wick::dtype_name(t)) +
                                   " n=" + std::to_string(n);
          const std::vector<unsigned char> a = bytes_of(aligned);
          EXPECT_EQ(bytes_of(odd), a) << what;
          EXPECT_EQ(bytes_of(strided.contiguous()), a) << what;
          if (!normal) {
            EXPECT_EQ(a, bytes_of(host)) << what;
          } else {
            const std::vector<double> g = aligned.to_dtype(DType::F64).to_vector<double>();
            const std::vector<double> c = host.to_dtype(DType::F64).to_vector<double>();
            // The device's logf / sinf / cosf may differ by an ulp, which can round to a
            // neighbouring value of the narrow types: allow one of their steps.
            const double tol = t == DType::F8E4M3 ? 0.13 : t == DType::BF16 ? 0.01 : t == DType::F16 ? 2e-3 : 1e-4;
            for (size_t i = 0; i < g.size(); ++i)
              ASSERT_NEAR(g[i], c[i], tol * (1 + std::abs(c[i]))) << what << " " << i;
          }
        }
      }
    }
  }
}

TEST(GpuRuntime, ArangeMatchesTheCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : wick::kAllDTypes) {
      EXPECT_EQ(bytes_of(Tensor::arange(-3, 1000, 1, t, d)), bytes_of(Tensor::arange(-3, 1000, 1, t)))
          << wick::dtype_name(t);
      EXPECT_EQ(bytes_of(Tensor::arange(0.1, 77.7, 0.3, t, d)), bytes_of(Tensor::arange(0.1, 77.7, 0.3, t)))
          << wick::dtype_name(t);
    }
}

// Every dtype pair, through a transposed and narrowed view (the strided path), bit for bit.
TEST(GpuRuntime, CastStridedMatchesTheCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType from : wick::kAllDTypes) {
      auto [c, g] = sample({6, 5, 33}, from, d);
      const Tensor cv = c.transpose(0, 2).narrow(1, 1, 3);
      const Tensor gv = g.transpose(0, 2).narrow(1, 1, 3);
      for (DType to : wick::kAllDTypes) {
        EXPECT_EQ(bytes_of(gv.to_dtype(to)), bytes_of(cv.to_dtype(to)))
            << wick::dtype_name(from) << " -> " << wick::dtype_name(to);
        // Contiguous (the vectorised path), and a broadcast input.
        EXPECT_EQ(bytes_of(g.to_dtype(to)), bytes_of(c.to_dtype(to)))
            << wick::dtype_name(from) << " -> " << wick::dtype_name(to);
        Tensor cb = Tensor::zeros({4, 6, 5, 33}, to);
        Tensor gb = Tensor::zeros({4, 6, 5, 33}, to, d);
        cb.copy_from(c);
        gb.copy_from(g);
        EXPECT_EQ(bytes_of(gb), bytes_of(cb))
            << "broadcast " << wick::dtype_name(from) << " -> " << wick::dtype_name(to);
      }
    }
}

// Transposed sources into contiguous outputs: the tiled path (Note [Tiled transpose]) for copies of
// every element size and for casts, on shapes that are not multiples of the tile, views at an
// offset, batched transposes, and a transpose whose batch dims lie between the two tile dims
// ([20, 3, 5, 18].transpose(0, 3) collapses to [18, 15, 20] with input strides [1, 18, 270]). The
// first two cases are too narrow to tile and take the strided path.
TEST(GpuRuntime, TransposeMatchesTheCpu) {
  WICK_REQUIRE_GPU(devs);
  using View = Tensor (*)(const Tensor&);
  const std::vector<std::pair<Shape, View>> cases = {
      {{5, 7}, [](const Tensor& x) { return x.t(); }},
      {{300, 3}, [](const Tensor& x) { return x.t(); }},
      {{64, 64}, [](const Tensor& x) { return x.t(); }},
      {{65, 129}, [](const Tensor& x) { return x.t(); }},
      {{100, 37}, [](const Tensor& x) { return x.narrow(0, 3, 90).narrow(1, 2, 33).t(); }},
      {{3, 70, 45}, [](const Tensor& x) { return x.transpose(1, 2); }},
      {{2, 33, 3, 65}, [](const Tensor& x) { return x.transpose(1, 3); }},
      {{20, 3, 5, 18}, [](const Tensor& x) { return x.transpose(0, 3); }},
      {{31, 1, 130}, [](const Tensor& x) { return x.transpose(0, 2).narrow(0, 1, 128); }},
  };
  for (const Device& d : devs)
    for (size_t k = 0; k < cases.size(); ++k)
      for (DType from : wick::kAllDTypes) {
        auto [c, g] = sample(cases[k].first, from, d);
        const Tensor cv = cases[k].second(c), gv = cases[k].second(g);
        EXPECT_EQ(bytes_of(gv.contiguous()), bytes_of(cv.contiguous()))
            << "case " << k << " " << wick::dtype_name(from);
        if (k != 3 && k != 5 && k != 7) continue;
        for (DType to : wick::kAllDTypes)
          EXPECT_EQ(bytes_of(gv.to_dtype(to)), bytes_of(cv.to_dtype(to)))
              << "case " << k << " " << wick::dtype_name(from) << " -> " << wick::dtype_name(to);
      }
}

// A one-element source broadcast over the destination: the flat path with a stride-0 input.
TEST(GpuRuntime, ScalarBroadcastCopy) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : wick::kAllDTypes) {
      auto [c, g] = sample({1}, DType::F64, d);
      Tensor cd = Tensor::zeros({1001}, t);
      Tensor gd = Tensor::zeros({1001}, t, d);
      cd.copy_from(c);
      gd.copy_from(g);
      EXPECT_EQ(bytes_of(gd), bytes_of(cd)) << wick::dtype_name(t);
    }
}

TEST(GpuRuntime, ConstSetOnViewsTouchesOnlyTheView) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (DType t : wick::kAllDTypes) {
      Tensor c = Tensor::zeros({7, 9, 11}, t);
      Tensor g = Tensor::zeros({7, 9, 11}, t, d);
      Tensor cv = c.permute({2, 0, 1}).narrow(0, 2, 5).narrow(2, 1, 7);
      Tensor gv = g.permute({2, 0, 1}).narrow(0, 2, 5).narrow(2, 1, 7);
      cv.const_set(wick::Scalar(-2.75));
      gv.const_set(wick::Scalar(-2.75));
      EXPECT_EQ(bytes_of(g), bytes_of(c)) << wick::dtype_name(t);
      Tensor ce = c.narrow(1, 3, 1);  // a view with a size-1 dim and an offset
      Tensor ge = g.narrow(1, 3, 1);
      ce.const_set(wick::Scalar(int64_t{123456789}));
      ge.const_set(wick::Scalar(int64_t{123456789}));
      EXPECT_EQ(bytes_of(g), bytes_of(c)) << wick::dtype_name(t);
    }
}

// Ten dims that do not merge: more than a launch's fixed capacity (kMaxDims = 8).
TEST(GpuRuntime, HighRankStridedCopy) {
  WICK_REQUIRE_GPU(devs);
  Shape shape;
  wick::Dims reverse;
  for (int i = 0; i < 10; ++i) {
    shape.push_back(i % 2 ? 3 : 2);
    reverse.push_back(9 - i);
  }
  for (const Device& d : devs) {
    auto [c, g] = sample(shape, DType::F32, d);
    EXPECT_EQ(bytes_of(g.permute(reverse).contiguous()), bytes_of(c.permute(reverse).contiguous()));
    EXPECT_EQ(bytes_of(g.permute(reverse).to_dtype(DType::BF16)), bytes_of(c.permute(reverse).to_dtype(DType::BF16)));
  }
}

// More than 2^31 elements: the 64-bit index paths.
TEST(GpuRuntime, LargeTensorUses64BitIndices) {
  WICK_REQUIRE_GPU(devs);
  const int64_t n = (int64_t{1} << 31) + 64;
  for (const Device& d : devs) {
    empty_cache(d);  // the out-of-memory test leaves the pool holding most of the device
    if (d.info().free_memory < 4 * n) GTEST_SKIP() << "needs " << 4 * n << " bytes free on " << d.location();
    Tensor big = Tensor::zeros({n}, DType::U8, d);
    big.narrow(0, 1, n - 2).const_set(7);  // misaligned start: the strided kernel, 64-bit
    const std::vector<uint8_t> tail = big.narrow(0, n - 4, 4).to_vector<uint8_t>();
    EXPECT_EQ(tail, (std::vector<uint8_t>{7, 7, 7, 0}));
    EXPECT_EQ(big.narrow(0, 0, 2).to_vector<uint8_t>(), (std::vector<uint8_t>{0, 7}));
    const Tensor half = big.reshape({2, n / 2}).narrow(1, 0, n / 2 - 1).to_dtype(DType::F16);  // 64-bit strided cast
    EXPECT_EQ(half.narrow(1, n / 2 - 3, 2).to_dtype(DType::F32).to_vector<float>(), (std::vector<float>{7, 7, 7, 7}));
  }
}

// More than 2^31 elements through the tiled transpose (64-bit indices) and the rand block path,
// compared with the CPU on windows at the start, across element 2^31 and at the end.
TEST(GpuRuntime, LargeTransposeUses64BitIndices) {
  WICK_REQUIRE_GPU(devs);
  const int64_t rows = (int64_t{1} << 16) + 3, cols = (int64_t{1} << 15) + 5, n = rows * cols;
  for (const Device& d : devs) {
    empty_cache(d);
    if (d.info().free_memory < 5 * n) GTEST_SKIP() << "needs " << 5 * n << " bytes free on " << d.location();
    d.set_seed(2024);
    const Tensor g = Tensor::rand_uniform({rows, cols}, DType::F8E4M3, -2.0, 5.0, d);  // blocks from 0
    const Tensor c = g.to(Device::cpu());
    const std::vector<unsigned char> cb = bytes_of(c);
    for (const int64_t i : {int64_t{0}, int64_t{1} << 31, n - 1}) {
      const wick::f8e4m3 want(
          wick::philox::uniform_f32(wick::philox::seed_keys(2024), 0, static_cast<uint64_t>(i), -2.0f, 7.0f, 5.0f));
      EXPECT_EQ(cb[static_cast<size_t>(i)], want.bits) << "element " << i;
    }
    const Tensor gt = g.t().contiguous();
    const Tensor gh = g.t().to_dtype(DType::F16);
    for (const int64_t r0 : {int64_t{0}, (int64_t{1} << 31) / rows - 1, cols - 3}) {
      EXPECT_EQ(bytes_of(gt.narrow(0, r0, 3)), bytes_of(c.t().narrow(0, r0, 3).contiguous())) << "rows " << r0;
      EXPECT_EQ(bytes_of(gh.narrow(0, r0, 3)), bytes_of(c.t().narrow(0, r0, 3).to_dtype(DType::F16))) << "rows " << r0;
    }
  }
}

TEST(GpuRuntime, TransfersBetweenDevices) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    auto [c, g] = sample({3, 1000}, DType::F64, d);
    EXPECT_EQ(bytes_of(g), bytes_of(c));
    EXPECT_EQ(bytes_of(g.t().contiguous()), bytes_of(c.t().contiguous()));
    for (const Device& e : devs) EXPECT_EQ(bytes_of(g.to(e)), bytes_of(c));
  }
}

}  // namespace
