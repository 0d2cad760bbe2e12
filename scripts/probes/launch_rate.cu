// Is a chain of tiny kernels bound by the host (enqueueing) or by the GPU (running them one after
// another)? Build and run on the GPU machine:
//   nvcc -O2 -arch=sm_90 -o /tmp/launch_rate scripts/probes/launch_rate.cu -lcuda && /tmp/launch_rate
// Prints microseconds per kernel, median of 7 repetitions:
//   host enqueue, burst of 64    host time of 64 launches behind an idle stream (queue never full)
//   host enqueue, 1000 in a row  host time of the whole chain (the queue may fill and block)
//   device, 1000 in a row        event time of the same chain (what wick bench's host_overhead reads)
//   device, graph of 1000        one CUDA graph of 1000 kernel nodes: the GPU's own rate, no host
//   cuLaunchKernel               the driver API instead of the runtime's <<<>>>
//   stream KIND 1000 + sync      host time of 1000 launches and the wait, per kind of stream
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void add16(float* y, const float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}

using Clock = std::chrono::steady_clock;

double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  float *a, *b, *y;
  cudaMalloc(&a, 64);
  cudaMalloc(&b, 64);
  cudaMalloc(&y, 64);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  auto launch = [&] { add16<<<1, 128, 0, s>>>(y, a, b, 16); };
  for (int i = 0; i < 2000; ++i) launch();
  cudaStreamSynchronize(s);

  auto host_us = [&](int n, auto&& f) {
    std::vector<double> t;
    for (int rep = 0; rep < 7; ++rep) {
      cudaStreamSynchronize(s);
      const auto t0 = Clock::now();
      for (int i = 0; i < n; ++i) f();
      t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / n);
    }
    cudaStreamSynchronize(s);
    return median(t);
  };
  auto device_us = [&](int n, auto&& f) {
    std::vector<double> t;
    for (int rep = 0; rep < 7; ++rep) {
      cudaStreamSynchronize(s);
      cudaEventRecord(e0, s);
      for (int i = 0; i < n; ++i) f();
      cudaEventRecord(e1, s);
      cudaEventSynchronize(e1);
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      t.push_back(1e3 * ms / n);
    }
    return median(t);
  };
  std::printf("host enqueue, burst of 64    %.3f us\n", host_us(64, launch));
  std::printf("host enqueue, 1000 in a row  %.3f us\n", host_us(1000, launch));
  std::printf("device, 1000 in a row        %.3f us\n", device_us(1000, launch));

  cudaGraph_t g;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
  for (int i = 0; i < 1000; ++i) launch();
  cudaStreamEndCapture(s, &g);
  cudaGraphExec_t ge;
  cudaGraphInstantiate(&ge, g, 0);
  std::printf("device, graph of 1000        %.3f us\n", device_us(1, [&] { cudaGraphLaunch(ge, s); }) / 1000);

  CUfunction fn;
  cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(add16));
  int n = 16;
  void* args[] = {&y, &a, &b, &n};
  auto drv = [&] { cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, s, args, nullptr); };
  std::printf("cuLaunchKernel, burst of 64  %.3f us\n", host_us(64, drv));
  std::printf("cuLaunchKernel, 1000 (dev)   %.3f us\n", device_us(1000, drv));
  auto rt = [&] { cudaLaunchKernel(reinterpret_cast<const void*>(add16), dim3(1), dim3(128), args, 0, s); };
  std::printf("cudaLaunchKernel, burst 64   %.3f us\n", host_us(64, rt));
  // The same chain on other kinds of stream: does the driver's cost depend on the stream?
  cudaStream_t blocking;
  cudaStreamCreate(&blocking);
  const std::pair<const char*, cudaStream_t> kinds[] = {
      {"non-blocking", s}, {"blocking", blocking}, {"legacy 0", nullptr}, {"per-thread", cudaStreamPerThread}};
  for (const auto& [name, st] : kinds) {
    std::vector<double> t;
    for (int rep = 0; rep < 7; ++rep) {
      cudaDeviceSynchronize();
      const auto t0 = Clock::now();
      for (int i = 0; i < 1000; ++i) add16<<<1, 128, 0, st>>>(y, a, b, 16);
      cudaStreamSynchronize(st);
      t.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 1000);
    }
    std::printf("stream %-13s 1000 + sync  %.3f us\n", name, median(t));
  }
  const cudaError_t err = cudaDeviceSynchronize();
  std::printf("status: %s\n", cudaGetErrorString(err));
  return 0;
}
