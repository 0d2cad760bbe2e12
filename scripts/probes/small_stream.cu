// The practical floor of a small memory-bound op on the GPU machine (build and run there:
// nvcc -O3 -arch=sm_90 -o /tmp/small_stream scripts/probes/small_stream.cu && /tmp/small_stream).
// Times, as the benchmark does (device events, each run queued behind a read-only lead of 256 MB,
// inputs rotated so that none is in L2), a kernel that reads n floats and writes n / 4 (the max of
// each 4 consecutive, 16-byte loads): the traffic of max_pool2d 2x2 over [32, 64, 56, 56] f32
// (25.7 MB read, 6.4 MB written) with the simplest access pattern there is. Prints the median ms and
// GB/s for a few sizes.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

__global__ void max4(const float4* __restrict__ x, float* __restrict__ y, long n4) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n4) {
    const float4 v = x[i];
    y[i] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
  }
}

__global__ void lead_sum(const float* x, float* out) {  // one block per row of 1M floats
  float s = 0;
  for (long i = threadIdx.x; i < (1L << 20); i += blockDim.x) s += x[blockIdx.x * (1L << 20) + i];
  if (s == 12345.0f) out[0] = s;  // keep the reads
}

int main() {
  float *lead, *sink;
  cudaMalloc(&lead, 256L << 20);
  cudaMalloc(&sink, 4);
  cudaMemset(lead, 0, 256L << 20);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (const long n : {32L * 64 * 56 * 56, 4 * 32L * 64 * 56 * 56, 32 * 32L * 64 * 56 * 56}) {
    const int sets = static_cast<int>(std::max(1L, (60L << 20) / (n * 5)));  // rotate past the 50 MB L2
    std::vector<float*> xs(sets), ys(sets);
    for (int k = 0; k < sets; ++k) {
      cudaMalloc(&xs[k], n * 4);
      cudaMalloc(&ys[k], n);
      cudaMemset(xs[k], 0, n * 4);
    }
    std::vector<float> ms;
    for (int r = 0; r < 30; ++r) {
      lead_sum<<<64, 1024>>>(lead, sink);
      cudaEventRecord(a);
      const long n4 = n / 4;
      max4<<<static_cast<unsigned>((n4 + 255) / 256), 256>>>(reinterpret_cast<float4*>(xs[r % sets]), ys[r % sets], n4);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float t;
      cudaEventElapsedTime(&t, a, b);
      if (r >= 5) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("read %.1f MB write %.1f MB: %.4f ms, %.0f GB/s\n", n * 4 / 1e6, n / 1e6, med, n * 5 / 1e6 / med);
    for (int k = 0; k < sets; ++k) {
      cudaFree(xs[k]);
      cudaFree(ys[k]);
    }
  }
  return 0;
}
