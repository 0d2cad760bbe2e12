// Host time per launch: the runtime's and the driver's launch of one small kernel beside wick's
// own paths (its backend and kernel entry points, a user kernel, whole small ops), interleaved in
// 7 rounds of 5000 calls each, median per row (Note [Kernel launches] in src/gpu/runtime/runtime.h).
// Links against libwick: scripts/probes/launch_paths.sh builds and runs it on the GPU machine.
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/launch.h"
#include "wick/wick.h"

namespace {

using namespace wick;

__global__ void add16(float* y, const float* a, const float* b, int n) {
  const int i = static_cast<int>(threadIdx.x);
  if (i < n) y[i] = a[i] + b[i];
}

struct Row {
  std::string name;
  std::function<void()> call;
  std::vector<double> us;
};

double us_per_call(const Row& r, const std::function<void()>& sync) {
  constexpr int kCalls = 5000;
  sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) r.call();
  const auto t1 = std::chrono::steady_clock::now();
  sync();
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls;
}

}  // namespace

int main() {
  const Device d = Device::cuda(0);
  auto& gb = static_cast<cuda::GpuBackend&>(backend_for(d));
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *pa = nullptr, *pb = nullptr, *py = nullptr;
  cudaMalloc(&pa, 64);
  cudaMalloc(&pb, 64);
  cudaMalloc(&py, 64);
  int n16 = 16;
  void* args[] = {&py, &pa, &pb, &n16};
  cudaFunction_t fn = nullptr;
  cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(add16));

  const Module m = compile_module(d, "probe_add16", R"(
    extern "C" __global__ void add16(float* y, const float* a, const float* b, int n) {
      const int i = threadIdx.x;
      if (i < n) y[i] = a[i] + b[i];
    })");
  const CustomOp user_add16(m, "add16");
  const Tensor x = Tensor::rand_uniform({16}, DType::F32, -1, 1, d);
  const Tensor y = Tensor::empty({16}, DType::F32, d);
  const TensorArg ax(x), ay(y);
  const cuda::kern::LaunchCtx ctx{gb.stream().native(), gb.properties().multiprocessors, 0, "add", 48 * 1024, 32};
  Tensor chain;
  std::vector<Row> rows = {
      {"runtime <<<>>> add16", [&] { add16<<<1, 32, 0, s>>>(py, pa, pb, 16); }, {}},
      {"cudaLaunchKernel add16",
       [&] { cudaLaunchKernel(reinterpret_cast<const void*>(add16), dim3(1), dim3(32), args, 0, s); }, {}},
      {"cuLaunchKernel add16",
       [&] { cuLaunchKernel(static_cast<CUfunction>(static_cast<void*>(fn)), 1, 1, 1, 32, 1, 1, 0, s, args, nullptr); },
       {}},
      {"CustomOp add16 (NVRTC)", [&] { user_add16(LaunchConfig::linear(32), y, x, x, int32_t{16}); }, {}},
      {"kern::binary_arith add", [&] { cuda::kern::binary_arith(ctx, Op::Add, ax, ax, ay); }, {}},
      {"GpuBackend::binary add", [&] { gb.binary(Op::Add, ax, ax, ay); }, {}},
      {"Tensor::empty [16]", [&] { chain = Tensor::empty({16}, DType::F32, d); }, {}},
      {"Tensor::add chain [16]", [&] { chain = chain.add(x); }, {}},
      {"Tensor::exp chain [16]", [&] { chain = chain.exp(); }, {}},
      {"Tensor::sum [16]", [&] { chain = x.sum({-1}); }, {}},
  };
  const auto sync = [&] {
    cudaStreamSynchronize(s);
    d.synchronize();
  };
  for (int round = 0; round < 7; ++round) {
    for (Row& r : rows) {
      chain = x;
      r.us.push_back(us_per_call(r, sync));
    }
  }
  for (Row& r : rows) {
    std::sort(r.us.begin(), r.us.end());
    std::printf("%-26s %.3f us per call (7 rounds: %.3f - %.3f)\n", r.name.c_str(), r.us[3], r.us.front(),
                r.us.back());
  }
  return 0;
}
