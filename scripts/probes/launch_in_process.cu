// Is wick's chain of small ops slower than a bare launch because of what wick does per op, or
// because of what a process holding wick is (its loaded modules, its memory pool, its streams)?
// Times, in one process, a bare <<<>>> launch of a 16-element add before wick is touched, after
// wick has made a CUDA tensor, and after wick's chain has run; and wick's chain itself. Each line:
// microseconds per op for 1000 in a row, host time of the enqueues alone and with the final
// synchronize (median of 9). Build on the GPU machine against scripts/gpu-check.sh's build-gpu
// ($L is the wick executable's link line, as in host_profile.cpp; add -L and an rpath for the
// directory of libcupti.so where the linker does not find it):
//   nvcc -std=c++20 -O2 -arch=sm_90 -Iinclude -c -o /tmp/lip.o scripts/probes/launch_in_process.cu
//   g++ -o /tmp/lip /tmp/lip.o $L -L/usr/local/cuda/targets/x86_64-linux/lib -lcupti -lcuda
// and run /tmp/lip, with CUDA_MODULE_LOADING=EAGER to see whether the number of loaded kernels
// matters. Then lists, through CUPTI's callbacks, which runtime and driver calls each op makes.
// On the H100 machine (bare launch 2.8-3.5 us): wick's add 3.7-4.2 us, a reshape (no launch)
// 0.13 us; the add calls cudaGetDevice and cudaGetLastError besides the launch, and a bare launch
// followed by cudaGetLastError costs no more than one without. Session 23, two lent hosts: bare
// 4.0-4.25 us against wick's add 5.45-5.59 on one, bare 5.31-5.90 against 5.88-7.46 on the other
// (chains of one process alternating); there, apart: cudaGetDevice 0.08 us, cudaGetLastError 0.06,
// a bare launch between the two 5.44, wick's empty [16] from the block cache 0.28, wick's add of 16
// floats on the CPU (the whole front end and a CPU kernel) 0.47.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace {

__global__ void add16(float* y, const float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}

// The same add behind 64 bytes of parameters, about what wick's flat map kernel takes.
struct Wide {
  float* y;
  const float* a;
  const float* b;
  long long n, base, pad[2];
  unsigned bcast;
};
__global__ void add16_wide(Wide w) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < w.n) w.y[i] = w.a[i] + w.b[i];
}

using Clock = std::chrono::steady_clock;

struct Rate {
  double enqueue_us, total_us;
};

// Median host time per op of `ops` calls of f, then of the same with sync() after them.
template <class F, class S>
Rate time_chain(int ops, F&& f, S&& sync) {
  std::vector<double> enq, tot;
  for (int rep = 0; rep < 9; ++rep) {
    sync();
    const auto t0 = Clock::now();
    for (int i = 0; i < ops; ++i) f();
    const auto t1 = Clock::now();
    sync();
    const auto t2 = Clock::now();
    enq.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / ops);
    tot.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count() / ops);
  }
  std::sort(enq.begin(), enq.end());
  std::sort(tot.begin(), tot.end());
  return {enq[enq.size() / 2], tot[tot.size() / 2]};
}

// Runtime and driver calls, counted while g_count is set.
std::atomic<bool> g_count{false};
std::map<std::pair<int, unsigned>, long> g_calls;

void CUPTIAPI on_api(void*, CUpti_CallbackDomain dom, CUpti_CallbackId cbid, const void* data) {
  const auto* info = static_cast<const CUpti_CallbackData*>(data);
  if (!g_count.load() || info->callbackSite != CUPTI_API_ENTER) return;
  ++g_calls[{static_cast<int>(dom), cbid}];
}

// Which calls `ops` runs of f make, per op.
template <class F, class S>
void list_calls(const char* what, int ops, F&& f, S&& sync) {
  sync();
  g_calls.clear();
  g_count = true;
  for (int i = 0; i < ops; ++i) f();
  g_count = false;
  sync();
  std::printf("%s: API calls per op\n", what);
  for (const auto& [key, n] : g_calls) {
    const char* name = "?";
    cuptiGetCallbackName(static_cast<CUpti_CallbackDomain>(key.first), key.second, &name);
    std::printf("  %-8s %-40s %.2f\n", key.first == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver", name,
                static_cast<double>(n) / ops);
  }
}

void print(const char* what, Rate r) {
  std::printf("%-40s enqueue %6.2f us/op, with sync %6.2f\n", what, r.enqueue_us, r.total_us);
}

}  // namespace

int main() {
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *a, *b, *y;
  cudaMalloc(&a, 64);
  cudaMalloc(&b, 64);
  cudaMalloc(&y, 64);
  auto bare = [&] { add16<<<1, 128, 0, s>>>(y, a, b, 16); };
  auto bare_sync = [&] { cudaStreamSynchronize(s); };
  auto bare_checked = [&] {
    add16<<<1, 128, 0, s>>>(y, a, b, 16);
    (void)cudaGetLastError();
  };
  for (int i = 0; i < 2000; ++i) bare();
  print("bare, before wick", time_chain(1000, bare, bare_sync));
  print("bare + cudaGetLastError, before wick", time_chain(1000, bare_checked, bare_sync));

  const wick::Device d = wick::Device::cuda(0);
  const wick::Tensor x = wick::Tensor::rand_uniform({16}, wick::DType::F32, 0, 1, d);
  d.synchronize();
  print("bare, wick holds a tensor", time_chain(1000, bare, bare_sync));

  wick::Tensor acc = x;
  auto chain = [&] { acc = acc.add(x); };
  auto wick_sync = [&] { d.synchronize(); };
  for (int i = 0; i < 2000; ++i) chain();
  print("wick add", time_chain(1000, chain, wick_sync));
  print("bare, after wick's chain", time_chain(1000, bare, bare_sync));
  print("wick add, again", time_chain(1000, chain, wick_sync));
  print("bare, again", time_chain(1000, bare, bare_sync));
  wick::Tensor view = x;
  auto views = [&] { view = x.reshape({4, 4}); };
  print("wick reshape (no launch)", time_chain(1000, views, wick_sync));
  // The pieces of an op besides its launch, each alone.
  auto empties = [&] { view = wick::Tensor::empty({16}, wick::DType::F32, d); };
  print("wick empty [16] (block cache)", time_chain(1000, empties, wick_sync));
  int dev = -1;
  auto get_device = [&] { (void)cudaGetDevice(&dev); };
  print("cudaGetDevice", time_chain(1000, get_device, bare_sync));
  auto last_error = [&] { (void)cudaGetLastError(); };
  print("cudaGetLastError", time_chain(1000, last_error, bare_sync));
  auto bare_like_wick = [&] {
    (void)cudaGetDevice(&dev);
    add16<<<1, 128, 0, s>>>(y, a, b, 16);
    (void)cudaGetLastError();
  };
  print("cudaGetDevice + bare + cudaGetLastError", time_chain(1000, bare_like_wick, bare_sync));
  const Wide w{y, a, b, 16, 0, {0, 0}, 0};
  auto wide = [&] { add16_wide<<<1, 128, 0, s>>>(w); };
  print("bare, 64 bytes of parameters", time_chain(1000, wide, bare_sync));
  const wick::Device cpu = wick::Device::cpu();
  const wick::Tensor xc = wick::Tensor::rand_uniform({16}, wick::DType::F32, 0, 1, cpu);
  wick::Tensor accc = xc;
  auto cpu_chain = [&] { accc = accc.add(xc); };
  print("wick add on the cpu", time_chain(1000, cpu_chain, [] {}));
  print("wick add, last", time_chain(1000, chain, wick_sync));

  CUpti_SubscriberHandle sub;
  if (cuptiSubscribe(&sub, on_api, nullptr) != CUPTI_SUCCESS) return 1;
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  list_calls("bare", 100, bare, bare_sync);
  list_calls("wick add", 100, chain, wick_sync);
  cuptiUnsubscribe(sub);
  return 0;
}
