// Launch shapes of the contiguous elementwise kernel (map_flat_kernel, Note [GPU flat grid] in
// src/gpu/kernels/map.cuh) on the benchmark's add rows, 2^28 elements of bf16 and f32: threads per
// block, 16-byte vectors per thread, a grid-stride loop or one pass, streaming cache hints. Timed as
// the benchmark times (device events, each run queued behind a read-only lead of 256 MB), median of
// 20 runs, 3 rounds alternating the variants; "pool" takes the output from a stream-ordered pool
// (as wick's allocations past its block cache do) and gives it back inside each timed run.
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o /tmp/flat_add scripts/probes/flat_add.cu && /tmp/flat_add
// H100, session 38 (medians of the three rounds, ms; torch's `a + b` in the same lease 0.5200-0.5207
// bf16, 1.0499-1.0518 f32): the library's form 0.5204-0.5206 bf16 and 1.0436-1.0438 f32, with the
// pool 0.5210-0.5214 and 1.0448-1.0450; one pass of 256 x 1 0.5212-0.5222, 128 x 1 0.5211-0.5215,
// 512 x 1 0.524, 128 x 2 0.522, 256 x 2 and 256 x 4 0.526, streaming hints 0.537-0.539 (f32 in the
// same order). wick's own bf16 row measured 0.5218-0.5224 then: the pool's free and allocation
// (0.5-1 us) and the kernel (521.2 us under ncu against torch's 519.8 and this one's 519.6).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct alignas(16) V16 {
  uint32_t w[4];
};

template <class T>
__device__ __forceinline__ V16 add16(const V16& a, const V16& b) {
  V16 r;
  if constexpr (sizeof(T) == 2) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 fa = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&a.w[k]));
      const float2 fb = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&b.w[k]));
      const __nv_bfloat162 s = __float22bfloat162_rn(make_float2(fa.x + fb.x, fa.y + fb.y));
      memcpy(&r.w[k], &s, 4);
    }
  } else {
#pragma unroll
    for (int k = 0; k < 4; ++k) r.w[k] = __float_as_uint(__uint_as_float(a.w[k]) + __uint_as_float(b.w[k]));
  }
  return r;
}

// The library's form: one vector a step, 64-bit grid-stride loop.
template <class T>
__global__ void __launch_bounds__(256) add_loop(const V16* a, const V16* b, V16* y, int64_t nvec) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < nvec; v += step)
    y[v] = add16<T>(a[v], b[v]);
}

// U vectors a thread, U * B a block, all loads before the adds; Hint: streaming loads and stores.
template <class T, int B, int U, bool Hint>
__global__ void __launch_bounds__(B) add_pass(const V16* a, const V16* b, V16* y, int64_t nvec) {
  const int64_t v0 = static_cast<int64_t>(blockIdx.x) * B * U + threadIdx.x;
  V16 xa[U], xb[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t v = v0 + u * B;
    if (v < nvec) {
      if constexpr (Hint) {
        const int4 ia = __ldcs(reinterpret_cast<const int4*>(a) + v), ib = __ldcs(reinterpret_cast<const int4*>(b) + v);
        memcpy(&xa[u], &ia, 16);
        memcpy(&xb[u], &ib, 16);
      } else {
        xa[u] = a[v];
        xb[u] = b[v];
      }
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t v = v0 + u * B;
    if (v < nvec) {
      const V16 r = add16<T>(xa[u], xb[u]);
      if constexpr (Hint) {
        int4 ir;
        memcpy(&ir, &r, 16);
        __stcs(reinterpret_cast<int4*>(y) + v, ir);
      } else {
        y[v] = r;
      }
    }
  }
}

__global__ void lead_sum(const float* x, float* out) {  // one block per row of 1M floats
  float s = 0;
  for (int64_t i = threadIdx.x; i < (int64_t{1} << 20); i += blockDim.x) s += x[blockIdx.x * (int64_t{1} << 20) + i];
  if (s == 12345.0f) out[0] = s;
}

__global__ void fill_rand(uint32_t* p, int64_t n, uint32_t seed, bool bf) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 2246822519u, h ^= h >> 13;
    // values in [1, 2): exponent 127, random mantissa (as two bf16 or one f32)
    p[i] = bf ? (0x3f803f80u | (h & 0x007f007fu)) : (0x3f800000u | (h & 0x007fffffu));
  }
}

struct Variant {
  std::string name;
  void (*launch)(const V16*, const V16*, V16*, int64_t);
  bool pool;  // the output taken from a stream-ordered pool and given back in each timed run
  std::vector<float> medians;
};

template <class T>
void launch_loop(const V16* a, const V16* b, V16* y, int64_t nvec) {
  add_loop<T><<<static_cast<unsigned>((nvec + 255) / 256), 256>>>(a, b, y, nvec);
}

template <class T, int B, int U, bool Hint>
void launch_pass(const V16* a, const V16* b, V16* y, int64_t nvec) {
  add_pass<T, B, U, Hint><<<static_cast<unsigned>((nvec + B * U - 1) / (B * U)), B>>>(a, b, y, nvec);
}

template <class T>
std::vector<Variant> variants() {
  return {{"loop 256x1 (library)", launch_loop<T>, false, {}},
          {"loop 256x1 pool", launch_loop<T>, true, {}},
          {"pass 256x1", launch_pass<T, 256, 1, false>, false, {}},
          {"pass 128x1", launch_pass<T, 128, 1, false>, false, {}},
          {"pass 128x1 pool", launch_pass<T, 128, 1, false>, true, {}},
          {"pass 512x1", launch_pass<T, 512, 1, false>, false, {}},
          {"pass 128x2", launch_pass<T, 128, 2, false>, false, {}},
          {"pass 256x2", launch_pass<T, 256, 2, false>, false, {}},
          {"pass 256x4", launch_pass<T, 256, 4, false>, false, {}},
          {"pass 256x1 cs", launch_pass<T, 256, 1, true>, false, {}},
          {"pass 128x2 cs", launch_pass<T, 128, 2, true>, false, {}}};
}

template <class T>
void run(const char* dtype, float* lead, float* sink, cudaMemPool_t pool) {
  constexpr int64_t n = int64_t{1} << 28;
  const int64_t bytes = n * static_cast<int64_t>(sizeof(T)), nvec = bytes / 16;
  V16 *a, *b, *y;
  cudaMalloc(&a, bytes);
  cudaMalloc(&b, bytes);
  cudaMalloc(&y, bytes);
  fill_rand<<<4096, 256>>>(reinterpret_cast<uint32_t*>(a), bytes / 4, 1, sizeof(T) == 2);
  fill_rand<<<4096, 256>>>(reinterpret_cast<uint32_t*>(b), bytes / 4, 2, sizeof(T) == 2);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<Variant> vs = variants<T>();
  for (int round = 0; round < 3; ++round)
    for (Variant& v : vs) {
      auto once = [&] {
        V16* out = y;
        if (v.pool) cudaMallocFromPoolAsync(reinterpret_cast<void**>(&out), bytes, pool, nullptr);
        v.launch(a, b, out, nvec);
        if (v.pool) cudaFreeAsync(out, nullptr);
      };
      once();
      once();
      std::vector<float> ms;
      for (int r = 0; r < 20; ++r) {
        lead_sum<<<64, 1024>>>(lead, sink);
        cudaEventRecord(e0);
        once();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t;
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      v.medians.push_back(0.5f * (ms[9] + ms[10]));
    }
  for (const Variant& v : vs) {
    std::printf("add %s %-22s", dtype, v.name.c_str());
    for (float m : v.medians) std::printf(" %.4f", m);
    std::sort(const_cast<std::vector<float>&>(v.medians).begin(), const_cast<std::vector<float>&>(v.medians).end());
    std::printf("  median %.4f ms %.0f GB/s\n", v.medians[1], 3.0 * bytes / 1e6 / v.medians[1]);
  }
  if (cudaGetLastError() != cudaSuccess) std::printf("CUDA error\n");
  cudaFree(a);
  cudaFree(b);
  cudaFree(y);
}

}  // namespace

int main() {
  float *lead, *sink;
  cudaMalloc(&lead, 256 << 20);
  cudaMalloc(&sink, 4);
  cudaMemset(lead, 0, 256 << 20);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  cudaMemPoolCreate(&pool, &props);
  uint64_t threshold = UINT64_MAX;
  cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
  run<__nv_bfloat16>("bf16", lead, sink, pool);
  run<float>("f32", lead, sink, pool);
  return 0;
}
