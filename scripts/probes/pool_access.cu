// Which access pattern gets max_pool2d 2x2 stride 2 over [32, 64, 56, 56] f32 (25.7 MB read,
// 6.4 MB written) closest to a linear stream of the same traffic? Timed as the benchmark does
// (device events, each run behind a read-only lead of 256 MB, inputs rotated past the 50 MB L2).
// Build and run on the GPU machine:
//   nvcc -O3 -arch=sm_90 -o /tmp/pool_access scripts/probes/pool_access.cu && /tmp/pool_access
// Variants (every one computes the same outputs, checked against the first):
//   rows        a thread makes 2 outputs: one 16-byte load from each window row (wick's kernel)
//   rows_cs     the same with streaming loads and stores (__ldcs / __stcs)
//   rows_l2     the same with a 256-byte L2 prefetch hint on the loads
//   rows4       a thread makes 4 outputs: two 16-byte loads from each window row
//   rows_x2     a thread makes 2 outputs of two output rows half the grid apart (two windows in flight)
//   warp_pair   a warp reads one pair of input rows linearly (28 lanes x 16 bytes) and pairs the
//               rows' halves by a shuffle
//   linear      the max of each 4 consecutive floats (same traffic, simplest pattern)
//   rows_async  rows, its output allocated by cudaMallocAsync before the kernel and freed by
//               cudaFreeAsync after it, inside the timed window (as wick's allocator does for
//               blocks over 1 MiB before Note [GPU block cache])
// On the H100 (two runs of each, medians in ms): rows 0.0119-0.0120, rows_cs 0.0119, rows_l2
// 0.0123, rows4 0.0128-0.0129, rows_x2 0.0125, warp_pair 0.0119, linear 0.0116-0.0117, rows_async
// 0.0125. ncu: rows 11.5-11.9 us, wick's max_pool_rows_kernel 11.9-12.2 us, both 25.7 MB read.
// So wick's access pattern was within 3% of the linear stream; what the benchmark saw on top
// (0.0127-0.0128 ms) was the pool's allocation and free of the output.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kN = 32 * 64, kH = 56, kW = 56, kOH = 28, kOW = 28;
constexpr long kIn = static_cast<long>(kN) * kH * kW, kOut = static_cast<long>(kN) * kOH * kOW;

__device__ __forceinline__ float4 ld_l2(const float4* p) {
  float4 v;
  asm volatile("ld.global.L2::256B.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
  return v;
}

__device__ __forceinline__ float2 pool2(float4 t, float4 b) {
  return make_float2(fmaxf(fmaxf(t.x, t.y), fmaxf(b.x, b.y)), fmaxf(fmaxf(t.z, t.w), fmaxf(b.z, b.w)));
}

template <int Mode>  // 0 plain, 1 streaming, 2 L2 prefetch hint
__global__ void rows(const float* x, float* y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kOut / 2) return;
  const unsigned v = i % (kOW / 2), t = i / (kOW / 2), oh = t % kOH, p = t / kOH;
  const float4* r = reinterpret_cast<const float4*>(x + p * (kH * kW) + 2 * oh * kW + v * 4);
  float4 top, bot;
  if constexpr (Mode == 1) {
    top = __ldcs(r);
    bot = __ldcs(r + kW / 4);
  } else if constexpr (Mode == 2) {
    top = ld_l2(r);
    bot = ld_l2(r + kW / 4);
  } else {
    top = r[0];
    bot = r[kW / 4];
  }
  float2* o = reinterpret_cast<float2*>(y + p * (kOH * kOW) + oh * kOW + v * 2);
  if constexpr (Mode == 1) {
    __stcs(o, pool2(top, bot));
  } else {
    *o = pool2(top, bot);
  }
}

__global__ void rows4(const float* x, float* y) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= kOut / 4) return;
  const unsigned v = i % (kOW / 4), t = i / (kOW / 4), oh = t % kOH, p = t / kOH;
  const float4* r = reinterpret_cast<const float4*>(x + p * (kH * kW) + 2 * oh * kW + v * 8);
  const float4 t0 = r[0], t1 = r[1], b0 = r[kW / 4], b1 = r[kW / 4 + 1];
  const float2 a = pool2(t0, b0), c = pool2(t1, b1);
  *reinterpret_cast<float4*>(y + p * (kOH * kOW) + oh * kOW + v * 4) = make_float4(a.x, a.y, c.x, c.y);
}

__global__ void rows_x2(const float* x, float* y) {
  const unsigned half = kOut / 4;
  const unsigned i0 = blockIdx.x * blockDim.x + threadIdx.x;
  if (i0 >= half) return;
  float4 top[2], bot[2];
  float2* out[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const unsigned i = i0 + k * half;
    const unsigned v = i % (kOW / 2), t = i / (kOW / 2), oh = t % kOH, p = t / kOH;
    const float4* r = reinterpret_cast<const float4*>(x + p * (kH * kW) + 2 * oh * kW + v * 4);
    top[k] = r[0];
    bot[k] = r[kW / 4];
    out[k] = reinterpret_cast<float2*>(y + p * (kOH * kOW) + oh * kOW + v * 2);
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) *out[k] = pool2(top[k], bot[k]);
}

__global__ void warp_pair(const float* x, float* y) {
  const unsigned w = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (w >= static_cast<unsigned>(kN) * kOH) return;  // one warp per output row
  float4 v = make_float4(0, 0, 0, 0);
  if (lane < kW / 2) v = reinterpret_cast<const float4*>(x + w * (2 * kW))[lane];
  float4 b;
  b.x = __shfl_down_sync(0xffffffffu, v.x, kW / 4);
  b.y = __shfl_down_sync(0xffffffffu, v.y, kW / 4);
  b.z = __shfl_down_sync(0xffffffffu, v.z, kW / 4);
  b.w = __shfl_down_sync(0xffffffffu, v.w, kW / 4);
  if (lane < kW / 4) reinterpret_cast<float2*>(y + w * kOW)[lane] = pool2(v, b);
}

__global__ void linear(const float4* x, float* y) {
  const long i = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < kIn / 4) {
    const float4 v = x[i];
    y[i] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
  }
}

__global__ void lead_sum(const float* x, float* out) {  // one block per row of 1M floats
  float s = 0;
  for (long i = threadIdx.x; i < (1L << 20); i += blockDim.x) s += x[blockIdx.x * (1L << 20) + i];
  if (s == 12345.0f) out[0] = s;
}

__global__ void fill(float* x, long n, unsigned seed) {
  for (long i = blockIdx.x * static_cast<long>(blockDim.x) + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = static_cast<float>(h & 0xffffff) / 16777216.0f - 0.5f;
  }
}

}  // namespace

int main() {
  float *lead, *sink;
  cudaMalloc(&lead, 256L << 20);
  cudaMalloc(&sink, 4);
  cudaMemset(lead, 0, 256L << 20);
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  cudaMemPool_t pool;
  cudaDeviceGetDefaultMemPool(&pool, 0);
  uint64_t keep = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep);
  constexpr int kSets = 4;  // 4 x 32 MB rotate past the L2
  std::vector<float*> xs(kSets), ys(kSets);
  for (int k = 0; k < kSets; ++k) {
    cudaMalloc(&xs[k], kIn * 4);
    cudaMalloc(&ys[k], kIn);  // linear writes kIn / 4 floats
    fill<<<1024, 256>>>(xs[k], kIn, 17u + k);
  }
  std::vector<float> ref(kOut), got(kOut);
  auto run = [&](const char* name, auto&& launch) {
    for (int k = 0; k < kSets; ++k) cudaMemset(ys[k], 0, kIn);
    std::vector<float> ms;
    for (int r = 0; r < 45; ++r) {
      lead_sum<<<64, 1024>>>(lead, sink);
      cudaEventRecord(a);
      launch(xs[r % kSets], ys[r % kSets]);
      cudaEventRecord(b);
      cudaEventSynchronize(b);
      float t;
      cudaEventElapsedTime(&t, a, b);
      if (r >= 5) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    bool same = true;
    if (std::strcmp(name, "linear") != 0 && std::strcmp(name, "rows_async") != 0) {
      cudaMemcpy(got.data(), ys[0], kOut * 4, cudaMemcpyDeviceToHost);
      if (std::strcmp(name, "rows") == 0) ref = got;
      same = std::memcmp(ref.data(), got.data(), kOut * 4) == 0;
    }
    std::printf("%-10s %.4f ms (p10 %.4f, p90 %.4f) %5.0f GB/s%s\n", name, med, ms[ms.size() / 10],
                ms[ms.size() * 9 / 10], (kIn + kOut) * 4 / 1e6 / med, same ? "" : "  WRONG");
  };
  const unsigned blk = 256;
  auto grid = [&](long threads) { return static_cast<unsigned>((threads + blk - 1) / blk); };
  for (int pass = 0; pass < 2; ++pass) {
    run("rows", [&](float* x, float* y) { rows<0><<<grid(kOut / 2), blk>>>(x, y); });
    run("rows_cs", [&](float* x, float* y) { rows<1><<<grid(kOut / 2), blk>>>(x, y); });
    run("rows_l2", [&](float* x, float* y) { rows<2><<<grid(kOut / 2), blk>>>(x, y); });
    run("rows4", [&](float* x, float* y) { rows4<<<grid(kOut / 4), blk>>>(x, y); });
    run("rows_x2", [&](float* x, float* y) { rows_x2<<<grid(kOut / 4), blk>>>(x, y); });
    run("warp_pair", [&](float* x, float* y) { warp_pair<<<grid(32L * kN * kOH), blk>>>(x, y); });
    run("linear", [&](float* x, float* y) { linear<<<grid(kIn / 4), blk>>>(reinterpret_cast<float4*>(x), y); });
    run("rows_async", [&](float* x, float*) {
      float* o = nullptr;
      cudaMallocAsync(&o, kOut * 4, nullptr);
      rows<0><<<grid(kOut / 2), blk>>>(x, o);
      cudaFreeAsync(o, nullptr);
    });
  }
  return 0;
}
