// User kernel modules (wick/kernel.h): kernels compiled at run time and launched on wick tensors
// (results compared with the CPU), the per-device module cache and its counters, loading images,
// and the typed errors. The GPU tests skip without a GPU; the CPU behaviour is tested everywhere.
#include <gtest/gtest.h>

#include <cstdint>
#include <latch>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "test_util.h"
#include "wick/kernel.h"
#include "wick/tensor.h"

namespace {

using wick::CustomOp;
using wick::Device;
using wick::DType;
using wick::KernelArg;
using wick::LaunchConfig;
using wick::Module;
using wick::ModuleCacheStats;
using wick::Tensor;

// Scalars of exact width only: a long long or an unsigned must be converted by the caller.
static_assert(std::is_constructible_v<KernelArg, int32_t>);
static_assert(std::is_constructible_v<KernelArg, int64_t>);
static_assert(std::is_constructible_v<KernelArg, float>);
static_assert(std::is_constructible_v<KernelArg, double>);
static_assert(std::is_constructible_v<KernelArg, Tensor>);
static_assert(!std::is_constructible_v<KernelArg, uint32_t>);
static_assert(!std::is_constructible_v<KernelArg, bool>);
static_assert(!std::is_constructible_v<KernelArg, size_t>);

// One source for both GPU builds: extern "C" kernels, built-in types only.
constexpr const char* kAxpb = R"(
extern "C" __global__ void axpb(float* y, const float* x, float a, float b, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + b;
}
)";

constexpr const char* kGrid2d = R"(
extern "C" __global__ void grid2d(double* out, const double* in, double s, int rows, int cols) {
  int c = blockIdx.x * blockDim.x + threadIdx.x;
  int r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[r * cols + c] = in[r * cols + c] * s + r - c;
}
)";

// y = 2x - 0.75 over n elements of x, checked element by element. The scale is a power of two, so
// the product is exact and the result is the same whether or not the compiler fuses it into an fma.
void check_axpb(const CustomOp& op, const Tensor& x) {
  const int64_t n = x.numel();
  Tensor y = Tensor::empty({n}, DType::F32, x.device());
  op(LaunchConfig::linear(n, 128), y, x, 2.0f, -0.75f, n);
  const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
  ASSERT_EQ(ys.size(), xs.size());
  for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(ys[i], 2.0f * xs[i] - 0.75f) << "element " << i;
}

int64_t delta(int64_t after, int64_t before) { return after - before; }

// ---- everywhere ------------------------------------------------------------------------------

TEST(KernelModule, CpuDeviceHasNoModules) {
  const Device cpu = Device::cpu();
  EXPECT_THROW(wick::compile_module(cpu, "cpu_axpb", kAxpb), wick::UnsupportedError);
  // A failed request caches nothing: the same name with another source fails the same way, not as
  // a name clash.
  EXPECT_THROW(wick::compile_module(cpu, "cpu_axpb", kGrid2d), wick::UnsupportedError);
  EXPECT_THROW(wick::compile_to_image(cpu, "cpu_axpb", kAxpb), wick::UnsupportedError);
  const std::vector<uint8_t> bytes = {0x7f, 'E', 'L', 'F'};
  EXPECT_THROW(wick::load_module(cpu, "cpu_image", bytes), wick::UnsupportedError);
  const ModuleCacheStats s = wick::module_cache_stats(cpu);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.loads, 0);
  EXPECT_EQ(s.compiles, 0);
  EXPECT_EQ(s.modules, 0);
  EXPECT_FALSE(wick::evict_module(cpu, "cpu_axpb"));
  try {
    wick::compile_module(cpu, "cpu_axpb", kAxpb);
  } catch (const wick::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("[compile_module]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cpu"), std::string::npos) << e.what();
  }
}

TEST(KernelModule, UndefinedModuleAndEmptyName) {
  EXPECT_THROW(CustomOp(Module(), "axpb"), wick::InvalidArgument);
  EXPECT_THROW((void)Module().name(), wick::InvalidArgument);
  EXPECT_THROW(wick::compile_module(Device::cpu(), "", kAxpb), wick::InvalidArgument);
}

TEST(KernelModule, LinearLaunchConfig) {
  const LaunchConfig c = LaunchConfig::linear(1000, 256);
  EXPECT_EQ(c.grid.x, 4u);
  EXPECT_EQ(c.grid.y, 1u);
  EXPECT_EQ(c.block.x, 256u);
  EXPECT_EQ(c.shared_bytes, 0u);
  EXPECT_EQ(LaunchConfig::linear(1024, 256).grid.x, 4u);
  EXPECT_EQ(LaunchConfig::linear(1025, 256).grid.x, 5u);
  EXPECT_EQ(LaunchConfig::linear(0).grid.x, 1u);  // a grid is never empty; the kernel checks n
  EXPECT_THROW(LaunchConfig::linear(-1), wick::InvalidArgument);
  EXPECT_THROW(LaunchConfig::linear(10, 0), wick::InvalidArgument);
  EXPECT_THROW(LaunchConfig::linear(int64_t{1} << 40, 1), wick::InvalidArgument);
}

// ---- on every GPU present --------------------------------------------------------------------

TEST(GpuModule, CompiledKernelMatchesCpu) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const Module m = wick::compile_module(d, "test_axpb", kAxpb);
    EXPECT_EQ(m.name(), "test_axpb");
    EXPECT_EQ(m.device(), d);
    EXPECT_TRUE(m.has_kernel("axpb"));
    const CustomOp op(m, "axpb");
    check_axpb(op, Tensor::rand_uniform({1000}, DType::F32, -10, 10, d));
    check_axpb(op, Tensor::rand_uniform({1}, DType::F32, -10, 10, d));
    // A view with an offset: the kernel gets a pointer to its first element.
    const Tensor big = Tensor::rand_uniform({4099}, DType::F32, -10, 10, d);
    check_axpb(op, big.narrow(0, 37, 4000));
    // The free-function form launches the same kernel.
    const Tensor x = Tensor::rand_uniform({300}, DType::F32, -1, 1, d);
    Tensor y = Tensor::empty({300}, DType::F32, d);
    wick::launch(m, "axpb", LaunchConfig::linear(300), y, x, 4.0f, 1.0f, int64_t{300});
    const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) ASSERT_EQ(ys[i], 4.0f * xs[i] + 1.0f) << i;
  }
}

TEST(GpuModule, TwoDimensionalGrid) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const CustomOp op(wick::compile_module(d, "test_grid2d", kGrid2d), "grid2d");
    const int rows = 37, cols = 53;  // partial blocks on both axes
    const Tensor in = Tensor::rand_uniform({rows, cols}, DType::F64, -5, 5, d);
    Tensor out = Tensor::empty({rows, cols}, DType::F64, d);
    LaunchConfig c;
    c.block = {16, 8};
    c.grid = {(cols + 15) / 16, (rows + 7) / 8};
    op(c, out, in, 2.0, rows, cols);
    const std::vector<double> a = in.to_vector<double>(), b = out.to_vector<double>();
    for (int r = 0; r < rows; ++r)
      for (int k = 0; k < cols; ++k) {
        const size_t i = static_cast<size_t>(r * cols + k);
        ASSERT_EQ(b[i], a[i] * 2.0 + r - k) << "row " << r << " col " << k;
      }
  }
}

TEST(GpuModule, SecondRequestIsACacheHit) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const ModuleCacheStats s0 = wick::module_cache_stats(d);
    const Module m1 = wick::compile_module(d, "test_hit", kAxpb);
    const ModuleCacheStats s1 = wick::module_cache_stats(d);
    EXPECT_EQ(delta(s1.compiles, s0.compiles), 1);
    EXPECT_EQ(delta(s1.loads, s0.loads), 1);
    EXPECT_EQ(delta(s1.hits, s0.hits), 0);
    EXPECT_EQ(delta(s1.modules, s0.modules), 1);

    const Module m2 = wick::compile_module(d, "test_hit", kAxpb);
    const ModuleCacheStats s2 = wick::module_cache_stats(d);
    EXPECT_TRUE(m1 == m2);
    EXPECT_EQ(delta(s2.hits, s1.hits), 1);
    EXPECT_EQ(s2.compiles, s1.compiles);
    EXPECT_EQ(s2.loads, s1.loads);

    // Another source under a known name is refused, not swapped in.
    EXPECT_THROW(wick::compile_module(d, "test_hit", kGrid2d), wick::InvalidArgument);
    // Other options count as another request too.
    EXPECT_THROW(wick::compile_module(d, "test_hit", kAxpb, {"-DUNUSED=1"}), wick::InvalidArgument);
    // Replacing on purpose: evict, then compile the new source; old handles keep working.
    EXPECT_TRUE(wick::evict_module(d, "test_hit"));
    EXPECT_FALSE(wick::evict_module(d, "test_hit"));
    const Module m3 = wick::compile_module(d, "test_hit", kGrid2d);
    EXPECT_FALSE(m3 == m1);
    EXPECT_TRUE(m3.has_kernel("grid2d"));
    EXPECT_FALSE(m3.has_kernel("axpb"));
    EXPECT_EQ(delta(wick::module_cache_stats(d).compiles, s2.compiles), 1);
    check_axpb(CustomOp(m1, "axpb"), Tensor::rand_uniform({500}, DType::F32, -3, 3, d));
  }
}

TEST(GpuModule, ConcurrentFirstRequestsCompileOnce) {
  WICK_REQUIRE_GPU(devs);
  constexpr int kThreads = 8;
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const ModuleCacheStats s0 = wick::module_cache_stats(d);
    std::vector<Module> got(kThreads);
    std::vector<std::string> errors(kThreads);
    std::latch start(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        try {
          got[static_cast<size_t>(t)] = wick::compile_module(d, "test_threads", kAxpb);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(t)] = e.what();
        }
      });
    for (std::thread& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
      EXPECT_TRUE(got[static_cast<size_t>(t)] == got[0]) << "thread " << t;
    }
    const ModuleCacheStats s1 = wick::module_cache_stats(d);
    EXPECT_EQ(delta(s1.compiles, s0.compiles), 1);
    EXPECT_EQ(delta(s1.loads, s0.loads), 1);
    EXPECT_EQ(delta(s1.hits, s0.hits), kThreads - 1);
    check_axpb(CustomOp(got[kThreads - 1], "axpb"), Tensor::rand_uniform({777}, DType::F32, -2, 2, d));
  }
}

TEST(GpuModule, LoadCompiledImage) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const ModuleCacheStats s0 = wick::module_cache_stats(d);
    const std::vector<uint8_t> image = wick::compile_to_image(d, "test_image_src", kAxpb);
    ASSERT_FALSE(image.empty());
    const ModuleCacheStats s1 = wick::module_cache_stats(d);
    EXPECT_EQ(delta(s1.compiles, s0.compiles), 1);
    EXPECT_EQ(s1.loads, s0.loads);
    EXPECT_EQ(s1.modules, s0.modules);  // compile_to_image caches nothing

    const Module m = wick::load_module(d, "test_image", image);
    const ModuleCacheStats s2 = wick::module_cache_stats(d);
    EXPECT_EQ(delta(s2.loads, s1.loads), 1);
    EXPECT_EQ(s2.compiles, s1.compiles);
    check_axpb(CustomOp(m, "axpb"), Tensor::rand_uniform({2048}, DType::F32, -8, 8, d));

    EXPECT_TRUE(wick::load_module(d, "test_image", image) == m);
    EXPECT_EQ(delta(wick::module_cache_stats(d).hits, s2.hits), 1);

    // Not loadable: nothing, cut short, or not an image at all.
    const std::vector<uint8_t> empty;
    EXPECT_THROW(wick::load_module(d, "test_image_empty", empty), wick::FormatError);
    const std::span<const uint8_t> half(image.data(), image.size() / 2);
    EXPECT_THROW(wick::load_module(d, "test_image_half", half), wick::FormatError);
    const std::string text = "this is not device code";
    const std::vector<uint8_t> junk(text.begin(), text.end());
    EXPECT_THROW(wick::load_module(d, "test_image_junk", junk), wick::FormatError);
    // A different image under a known name is refused.
    EXPECT_THROW(wick::load_module(d, "test_image", half), wick::InvalidArgument);
  }
}

TEST(GpuModule, CompileErrorCarriesTheLog) {
  WICK_REQUIRE_GPU(devs);
  const std::string bad = R"(
extern "C" __global__ void broken(float* y) { y[threadIdx.x] = undeclared_thing_42; }
)";
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const ModuleCacheStats s0 = wick::module_cache_stats(d);
    try {
      wick::compile_module(d, "test_broken", bad);
      ADD_FAILURE() << "a source that does not compile was accepted";
    } catch (const wick::CompileError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("[compile_module] 'test_broken'"), std::string::npos) << msg;
      EXPECT_NE(msg.find("undeclared_thing_42"), std::string::npos) << msg;  // from the compiler's log
      EXPECT_NE(msg.find(d.location()), std::string::npos) << msg;
    }
    EXPECT_EQ(wick::module_cache_stats(d).compiles, s0.compiles);
    EXPECT_EQ(wick::module_cache_stats(d).modules, s0.modules);
    // Nothing was cached under the name: a good source now compiles under it.
    EXPECT_TRUE(wick::compile_module(d, "test_broken", kAxpb).has_kernel("axpb"));
  }
}

TEST(GpuModule, BadLaunchArguments) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    SCOPED_TRACE(d.location());
    const Module m = wick::compile_module(d, "test_bad_args", kAxpb);
    EXPECT_FALSE(m.has_kernel("no_such_kernel"));
    EXPECT_THROW(CustomOp(m, "no_such_kernel"), wick::InvalidArgument);
    EXPECT_THROW(wick::launch(m, "no_such_kernel", LaunchConfig::linear(1), 1.0f), wick::InvalidArgument);

    const CustomOp op(m, "axpb");
    const int64_t n = 64;
    const Tensor x = Tensor::rand_uniform({n}, DType::F32, -1, 1, d);
    Tensor y = Tensor::empty({n}, DType::F32, d);
    const Tensor on_cpu = Tensor::rand_uniform({n}, DType::F32, -1, 1);
    EXPECT_THROW(op(LaunchConfig::linear(n), y, on_cpu, 2.0f, 1.0f, n), wick::DeviceError);
    EXPECT_THROW(op(LaunchConfig::linear(n), y, Tensor(), 2.0f, 1.0f, n), wick::InvalidArgument);
    LaunchConfig empty_grid = LaunchConfig::linear(n);
    empty_grid.grid.x = 0;
    EXPECT_THROW(op(empty_grid, y, x, 2.0f, 1.0f, n), wick::InvalidArgument);
    LaunchConfig huge_block = LaunchConfig::linear(n);
    huge_block.block.x = 4096;  // above every GPU's 1024 threads per block
    EXPECT_THROW(op(huge_block, y, x, 2.0f, 1.0f, n), wick::InvalidArgument);
    if (d.kind() == wick::DeviceKind::Cuda) {
      // The CUDA runtime reports the kernel's parameter sizes (driver 12.4+), so a wrong count or
      // width is caught before launch. HIP cannot tell; there the caller must match the signature.
      EXPECT_THROW(op(LaunchConfig::linear(n), y, x, 2.0f, 1.0f), wick::InvalidArgument);
      EXPECT_THROW(op(LaunchConfig::linear(n), y, x, 2.0f, 1.0f, static_cast<int32_t>(n)), wick::InvalidArgument);
      EXPECT_THROW(op(LaunchConfig::linear(n), y, x, 2.0, 1.0f, n), wick::InvalidArgument);
    }
    // The module is still usable after the rejected launches.
    check_axpb(op, x);
  }
}

}  // namespace
