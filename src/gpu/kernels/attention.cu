// attention_decode on the GPU (Note [Decode attention] in src/core/ops_attention.cpp).
//
// Note [GPU decode attention]
// Split-K ("flash decoding"): the cache rows [0, position] of a KV head are cut into chunks of
// `chunk` rows, one block per (chunk, KV head, slice of up to 16 of its query heads), so that a
// short cache still spreads over the device. A block reads each key once for all of its query
// heads (grouped-query attention packs them): groups of kKeyLanes threads take one key row,
// 16-byte vectors where rows allow, and merge their partial dot products by shuffles within the
// group (16 lanes, inside a warp of any width). The block's scores stay in shared memory; it
// writes its softmax state (max m, sum l of exp(score - m)) and its unnormalised sum of value rows
// per query head. A second kernel merges the chunks: out = sum_c e^(m_c - M) acc_c / sum_c
// e^(m_c - M) l_c. The grid is fixed by the cache's capacity, not the position, which the kernels
// read from the device when given there: blocks past the position return at once, so a recorded
// graph serves every position. The block whose chunk holds the position writes the new row
// first; it reads it back after a barrier, the rounding to the cache dtype included.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/scratch.h"
#include "gpu/kernels/strided.cuh"

namespace wick::WICK_GPU_NS {

namespace kern {
namespace {

constexpr int kAttnThreads = 128;
constexpr int kKeyLanes = 16;  // threads per key row: at most a warp on every architecture
constexpr int kMaxGroup = 16;  // query heads of one block
constexpr int kMinChunk = 64, kMaxChunk = 256;

template <class C>
struct AttnArgs {
  const float* q;
  int64_t q0, q1;
  const float* k;
  int64_t k0, k1;
  const float* v;
  int64_t v0, v1;
  C* kc;
  int64_t kc0, kc1;
  C* vc;
  int64_t vc0, vc1;
  const int32_t* pos_dev;  // null: pos
  int64_t pos, cap;
  int d, group, chunk, splits;
  bool vec;  // rows of 16-byte vectors
  float scale;
  float* ml;   // [kv, splits, group, 2]: m, l
  float* acc;  // [kv, splits, group, d]
};

template <class C>
__device__ int64_t position_of(const AttnArgs<C>& a) {
  const int64_t p = a.pos_dev ? static_cast<int64_t>(*a.pos_dev) : a.pos;
  return p >= 0 && p < a.cap ? p : -1;
}

// G: query heads a block holds (a power of two >= the heads of its slice).
template <class C, int G>
__global__ void __launch_bounds__(kAttnThreads) attention_split_kernel(const AttnArgs<C> a) {
  extern __shared__ float sh[];
  float* qs = sh;                // [G][d]
  float* w = qs + G * a.d;       // [G][chunk] scores, then weights
  float* red = w + G * a.chunk;  // [kAttnThreads]
  const int t = threadIdx.x, split = blockIdx.x, j = blockIdx.y;
  const int g0 = blockIdx.z * kMaxGroup, gn = min(G, a.group - g0);
  const int64_t pos = position_of(a);
  const int64_t s0 = static_cast<int64_t>(split) * a.chunk;
  const int64_t left = pos + 1 - s0;  // rows of this chunk up to the position, if positive
  const int n = left <= 0 ? 0 : static_cast<int>(left < a.chunk ? left : a.chunk);
  float* ml = a.ml + ((static_cast<int64_t>(j) * a.splits + split) * a.group + g0) * 2;
  if (n == 0) {
    if (t < gn) ml[2 * t] = -INFINITY, ml[2 * t + 1] = 0.0f;
    return;
  }
  if (pos >= s0 && pos < s0 + a.chunk)
    for (int i = t; i < a.d; i += kAttnThreads) {
      a.kc[j * a.kc0 + pos * a.kc1 + i] = convert<C>(a.k[j * a.k0 + i * a.k1]);
      a.vc[j * a.vc0 + pos * a.vc1 + i] = convert<C>(a.v[j * a.v0 + i * a.v1]);
    }
  for (int e = t; e < G * a.d; e += kAttnThreads) {
    const int g = e / a.d, i = e - g * a.d;
    const int64_t h = static_cast<int64_t>(j) * a.group + g0 + g;
    qs[e] = g < gn ? a.q[h * a.q0 + i * a.q1] : 0.0f;
  }
  __syncthreads();  // q in shared memory; the new row written

  // Scores: kKeyLanes threads a key.
  const int lane = t % kKeyLanes;
  constexpr int kV = 16 / sizeof(C) < 8 ? static_cast<int>(16 / sizeof(C)) : 8;
  for (int base = 0; base < n; base += kAttnThreads / kKeyLanes) {
    const int s = base + t / kKeyLanes;
    float dot[G] = {};
    if (s < n) {
      const C* key = a.kc + j * a.kc0 + (s0 + s) * a.kc1;
      if (a.vec) {
        for (int i = lane * kV; i < a.d; i += kKeyLanes * kV) {
          const Vec<C, kV> x = *reinterpret_cast<const Vec<C, kV>*>(key + i);
#pragma unroll
          for (int r = 0; r < kV; ++r) {
            const float kx = convert<float>(x.v[r]);
#pragma unroll
            for (int g = 0; g < G; ++g) dot[g] += qs[g * a.d + i + r] * kx;
          }
        }
      } else {
        for (int i = lane; i < a.d; i += kKeyLanes) {
          const float kx = convert<float>(key[i]);
#pragma unroll
          for (int g = 0; g < G; ++g) dot[g] += qs[g * a.d + i] * kx;
        }
      }
    }
#pragma unroll
    for (int m = kKeyLanes / 2; m > 0; m >>= 1)
#pragma unroll
      for (int g = 0; g < G; ++g) dot[g] += gpu::shfl_xor(dot[g], m);
    if (lane == 0 && s < n)
#pragma unroll
      for (int g = 0; g < G; ++g) w[g * a.chunk + s] = dot[g] * a.scale;
  }
  __syncthreads();

  // Softmax state per query head: kAttnThreads / G threads a head, merged through shared memory.
  constexpr int kPer = kAttnThreads / G;
  const int g = t / kPer, r = t % kPer;
  float* wg = w + g * a.chunk;
  float m = -INFINITY;
  for (int s = r; s < n; s += kPer) m = fmaxf(m, wg[s]);
  red[t] = m;
  __syncthreads();
  for (int stride = kPer / 2; stride > 0; stride >>= 1) {
    if (r < stride) red[t] = fmaxf(red[t], red[t + stride]);
    __syncthreads();
  }
  m = red[g * kPer];
  __syncthreads();
  float l = 0.0f;
  for (int s = r; s < n; s += kPer) {
    const float e = expf(wg[s] - m);
    wg[s] = e;
    l += e;
  }
  red[t] = l;
  __syncthreads();
  for (int stride = kPer / 2; stride > 0; stride >>= 1) {
    if (r < stride) red[t] += red[t + stride];
    __syncthreads();
  }
  if (r == 0 && g < gn) ml[2 * g] = m, ml[2 * g + 1] = red[t];

  // The weighted sum of the value rows, a column per thread.
  float* acc = a.acc + ((static_cast<int64_t>(j) * a.splits + split) * a.group + g0) * a.d;
  for (int i = t; i < a.d; i += kAttnThreads) {
    float o[G] = {};
    const C* col = a.vc + j * a.vc0 + s0 * a.vc1 + i;
    for (int s = 0; s < n; ++s) {
      const float x = convert<float>(col[s * a.vc1]);
#pragma unroll
      for (int gg = 0; gg < G; ++gg) o[gg] += w[gg * a.chunk + s] * x;
    }
#pragma unroll
    for (int gg = 0; gg < G; ++gg)
      if (gg < gn) acc[static_cast<int64_t>(gg) * a.d + i] = o[gg];
  }
}

// One block per query head: the chunks merged.
template <class C>
__global__ void __launch_bounds__(kAttnThreads)
    attention_merge_kernel(const AttnArgs<C> a, float* out, int64_t o0, int64_t o1) {
  const int h = blockIdx.x, j = h / a.group, g = h - j * a.group;
  const bool valid = position_of(a) >= 0;
  const float* ml = a.ml + (static_cast<int64_t>(j) * a.splits * a.group + g) * 2;
  float top = -INFINITY;
  for (int c = 0; c < a.splits; ++c)
    if (ml[2 * c * a.group + 1] > 0.0f) top = fmaxf(top, ml[2 * c * a.group]);
  for (int i = threadIdx.x; i < a.d; i += blockDim.x) {
    float den = 0.0f, num = 0.0f;
    if (valid)
      for (int c = 0; c < a.splits; ++c) {
        const float l = ml[2 * c * a.group + 1];
        if (!(l > 0.0f)) continue;
        const float e = expf(ml[2 * c * a.group] - top);
        den += e * l;
        num += e * a.acc[((static_cast<int64_t>(j) * a.splits + c) * a.group + g) * a.d + i];
      }
    out[h * o0 + i * o1] = den > 0.0f ? num / den : 0.0f;
  }
}

template <class C, int G>
void launch_split(const LaunchCtx& ctx, const AttnArgs<C>& a, dim3 grid) {
  const int64_t shared = static_cast<int64_t>(G * a.d + G * a.chunk + kAttnThreads) * sizeof(float);
  if (shared > ctx.shared_per_block)
    throw UnsupportedError(std::string("[") + ctx.op + "] head dim " + std::to_string(a.d) +
                           " needs more shared memory than the device has");
  if (shared > 48 * 1024) gpu::allow_dynamic_shared<attention_split_kernel<C, G>>(shared, ctx.op, ctx.device);
  gpu::launch<attention_split_kernel<C, G>>(ctx, grid, dim3(kAttnThreads), static_cast<size_t>(shared), a);
}

template <class C>
void attention_typed(const LaunchCtx& ctx, const TensorArg& q, const TensorArg& k, const TensorArg& v,
                     const TensorArg& kc, const TensorArg& vc, const TensorArg& position, const AttentionParams& p,
                     const TensorArg& dst) {
  const int64_t heads = q.shape()[0], d = q.shape()[1], kv = kc.shape()[0], cap = kc.shape()[1];
  const int64_t group = heads / kv, slices = (group + kMaxGroup - 1) / kMaxGroup;
  // Enough blocks for two a multiprocessor where the capacity allows.
  const int64_t want = std::max<int64_t>(1, 2 * static_cast<int64_t>(ctx.multiprocessors) / (kv * slices));
  const int64_t chunk = std::clamp<int64_t>((cap + want - 1) / want, kMinChunk, kMaxChunk);
  const int64_t splits = (cap + chunk - 1) / chunk;
  AttnArgs<C> a{};
  a.q = q.ptr<float>(), a.q0 = q.layout.stride(0), a.q1 = q.layout.stride(1);
  a.k = k.ptr<float>(), a.k0 = k.layout.stride(0), a.k1 = k.layout.stride(1);
  a.v = v.ptr<float>(), a.v0 = v.layout.stride(0), a.v1 = v.layout.stride(1);
  a.kc = kc.ptr<C>(), a.kc0 = kc.layout.stride(0), a.kc1 = kc.layout.stride(1);
  a.vc = vc.ptr<C>(), a.vc0 = vc.layout.stride(0), a.vc1 = vc.layout.stride(1);
  a.pos_dev = position.data ? position.ptr<int32_t>() : nullptr;
  a.pos = p.position, a.cap = cap;
  a.d = static_cast<int>(d), a.group = static_cast<int>(group), a.chunk = static_cast<int>(chunk);
  a.splits = static_cast<int>(splits);
  constexpr int64_t kV = 16 / sizeof(C) < 8 ? 16 / sizeof(C) : 8;
  const auto aligned = [&](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  a.vec = d % kV == 0 && a.kc0 % kV == 0 && a.kc1 % kV == 0 && aligned(a.kc);
  a.scale = static_cast<float>(p.scale);
  const int64_t ml_floats = kv * splits * group * 2;
  Scratch scratch(*ctx.backend, (ml_floats + kv * splits * group * d) * static_cast<int64_t>(sizeof(float)));
  a.ml = static_cast<float*>(scratch.get());
  a.acc = a.ml + ml_floats;
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(kv), static_cast<unsigned>(slices));
  const int gmax = static_cast<int>(std::min<int64_t>(group, kMaxGroup));
  if (gmax <= 1)
    launch_split<C, 1>(ctx, a, grid);
  else if (gmax <= 2)
    launch_split<C, 2>(ctx, a, grid);
  else if (gmax <= 4)
    launch_split<C, 4>(ctx, a, grid);
  else if (gmax <= 8)
    launch_split<C, 8>(ctx, a, grid);
  else
    launch_split<C, 16>(ctx, a, grid);
  gpu::launch<attention_merge_kernel<C>>(ctx, dim3(static_cast<unsigned>(heads)), dim3(kAttnThreads), 0, a,
                                         dst.ptr<float>(), dst.layout.stride(0), dst.layout.stride(1));
}

}  // namespace
}  // namespace kern

void kern::attention_decode(const kern::LaunchCtx& ctx, const TensorArg& q, const TensorArg& k, const TensorArg& v,
                            const TensorArg& k_cache, const TensorArg& v_cache, const TensorArg& position,
                            const AttentionParams& p, const TensorArg& dst) {
  dispatch_in<kQuantFloatTypes>(
      k_cache.dtype, [&]<class C>() { attention_typed<C>(ctx, q, k, v, k_cache, v_cache, position, p, dst); }, ctx.op);
}

}  // namespace wick::WICK_GPU_NS
