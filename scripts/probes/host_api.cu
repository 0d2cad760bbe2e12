// Host-side cost of the CUDA runtime calls on wick's per-op path (build and run on the GPU machine:
// nvcc -O2 -o /tmp/host_api scripts/probes/host_api.cu && /tmp/host_api). Prints microseconds per
// call, median of 5 batches of 10000 calls, for the calls an elementwise op makes.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

__global__ void add16(float* y, const float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}

template <class F>
double us_per_call(F&& f, cudaStream_t s) {
  constexpr int kCalls = 10000;
  std::vector<double> t;
  for (int rep = 0; rep < 5; ++rep) {
    cudaStreamSynchronize(s);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCalls; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    cudaStreamSynchronize(s);
    t.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  std::sort(t.begin(), t.end());
  return t[2];
}

int main() {
  cudaSetDevice(0);
  cudaStream_t s;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaMemPool_t pool;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPoolCreate(&pool, &props);
  uint64_t thr = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &thr);
  float *a, *b, *y;
  cudaMalloc(&a, 64);
  cudaMalloc(&b, 64);
  cudaMalloc(&y, 64);
  std::printf("cudaSetDevice              %.3f us\n", us_per_call([] { cudaSetDevice(0); }, s));
  std::printf("cudaGetLastError           %.3f us\n", us_per_call([] { (void)cudaGetLastError(); }, s));
  std::printf("cudaGetDevice              %.3f us\n", us_per_call([] {
                int d;
                (void)cudaGetDevice(&d);
              }, s));
  std::printf("launch add16               %.3f us\n", us_per_call([&] { add16<<<1, 128, 0, s>>>(y, a, b, 16); }, s));
  std::printf("mallocFromPool+freeAsync   %.3f us\n", us_per_call([&] {
                void* p;
                cudaMallocFromPoolAsync(&p, 64, pool, s);
                cudaFreeAsync(p, s);
              }, s));
  std::printf("malloc+launch+free         %.3f us\n", us_per_call([&] {
                void* p;
                cudaMallocFromPoolAsync(&p, 64, pool, s);
                add16<<<1, 128, 0, s>>>(static_cast<float*>(p), a, b, 16);
                cudaFreeAsync(p, s);
              }, s));
  cudaEvent_t e;
  cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
  std::printf("cudaEventRecord            %.3f us\n", us_per_call([&] { cudaEventRecord(e, s); }, s));
  return 0;
}
