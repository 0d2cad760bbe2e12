// Cooperative reductions inside a thread block, shared by the reduction and normalisation kernels.
//
// Note [GPU thread groups]
// A block is cut into aligned groups of G threads (G a power of two; G divides the block or is the
// whole block), one group per row of work, so short rows do not leave most of a block idle and
// long rows get up to a whole block. group_allreduce combines one value per thread over its
// group: a butterfly of shuffles inside each warp (any warp width, Note [Warp size]), then, when a
// group spans several warps, one value per warp through shared memory, merged in warp order by
// every thread of the group. Every thread gets the same result, and the order of merges is fixed
// by the launch shape, so results are deterministic. Every thread of the block must call it the
// same number of times (it synchronises the block when G > warp size).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "gpu/kernels/plan.h"
#include "gpu/runtime/vendor.cuh"

namespace wick::WICK_GPU_NS::kern {

// Upper bound on threads per block of these kernels; shared memory holds one value per warp.
inline constexpr int kMaxGroupBlock = 1024;
inline constexpr int kMaxWarpsPerBlock = kMaxGroupBlock / 32;

// A shuffle of any trivially copyable value of up to 8 bytes, through its bits.
template <class V>
__device__ __forceinline__ V shfl_bits(V v, int lane_mask) {
  static_assert(sizeof(V) <= 8 && std::is_trivially_copyable_v<V>);
  if constexpr (sizeof(V) == 8) {
    unsigned long long b;
    memcpy(&b, &v, 8);
    b = gpu::shfl_xor(b, lane_mask);
    memcpy(&v, &b, 8);
  } else {
    unsigned int b = 0;
    memcpy(&b, &v, sizeof(V));
    b = gpu::shfl_xor(b, lane_mask);
    memcpy(&v, &b, sizeof(V));
  }
  return v;
}

// Shuffle of an accumulator: plain values directly, structs (argmin state, softmax state)
// through their own `shuffled(mask)` member.
template <class A>
__device__ __forceinline__ A shfl_acc(const A& a, int lane_mask) {
  if constexpr (std::is_arithmetic_v<A>) {
    return shfl_bits(a, lane_mask);
  } else {
    return a.shuffled(lane_mask);
  }
}

// See Note [GPU thread groups]. M::merge(a, b) is associative; smem has kMaxWarpsPerBlock slots.
template <class M, class A>
__device__ __forceinline__ A group_allreduce(A acc, unsigned group, A* smem) {
  constexpr unsigned kW = gpu::warp_size();
  for (unsigned m = (group < kW ? group : kW) / 2; m > 0; m /= 2)
    acc = M::merge(acc, shfl_acc(acc, static_cast<int>(m)));
  if (group > kW) {
    const unsigned t = threadIdx.x;
    if (t % kW == 0) smem[t / kW] = acc;
    __syncthreads();
    const unsigned first = (t - t % group) / kW;
    acc = smem[first];
    for (unsigned w = 1; w < group / kW; ++w) acc = M::merge(acc, smem[first + w]);
    __syncthreads();  // smem is free again for the next call
  }
  return acc;
}

// ---- host helpers of the launchers ----

// Largest element offset operand k reaches over p; -1 when one of its strides is negative.
template <int N>
int64_t max_offset(const Plan<N>& p, int k) {
  int64_t m = 0;
  for (int d = 0; d < p.rank(); ++d) {
    if (p.strides[d][k] < 0) return -1;
    m += (p.shape[d] - 1) * p.strides[d][k];
  }
  return m;
}

// The smallest power of two >= v, at most cap (a power of two).
inline unsigned pow2_at_least(int64_t v, unsigned cap) {
  unsigned g = 1;
  while (g < cap && static_cast<int64_t>(g) < v) g *= 2;
  return g;
}

}  // namespace wick::WICK_GPU_NS::kern
