// Cooperative reductions inside a thread block, shared by the reduction and normalisation kernels.
//
// Note [GPU thread groups]
// A block is cut into aligned groups of G threads (G a power of two; G divides the block or is the
// whole block), one group per row of work, so short rows do not leave most of a block idle and
// long rows get up to a whole block. group_allreduce combines one value per thread over its
// group: a butterfly of shuffles inside each warp (any warp width, Note [Warp size]), then, when a
// group spans several warps, one value per warp through shared memory, read back by every warp
// and merged by a second butterfly (one shared load and log2(warps) shuffles; merging the warps'
// values one after another took 15 dependent shared loads for a group of 512). Every thread gets
// the same result, and the order of merges is fixed by the launch shape, so results are
// deterministic. Every thread of the block must call it the same number of times (it
// synchronises the block when G > warp size).
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

// A thread's lane in its group of G threads and the group's index in the block. G is a power of two,
// so masks and a shift do it: the integer divisions by a run-time G took about 20 instructions
// each, and in the one-vector-per-thread rows (Note [GPU light rows]) the kernel's divisions
// doubled its instruction count.
struct GroupSlot {
  unsigned lane, index;
};
__device__ __forceinline__ GroupSlot group_slot(unsigned group) {
  return {threadIdx.x & (group - 1), threadIdx.x >> gpu::ctz(group)};
}

// Groups of G threads in a block of `threads`.
__device__ __forceinline__ unsigned groups_per_block(unsigned threads, unsigned group) {
  return threads >> gpu::ctz(group);
}

// See Note [GPU thread groups]. M::merge(a, b) is associative; smem has kMaxWarpsPerBlock slots.
template <class M, class A>
__device__ __forceinline__ A group_allreduce(A acc, unsigned group, A* smem) {
  constexpr unsigned kW = gpu::warp_size();
  // Unrolled over the warp's masks, the ones the group spans taken (a loop over a run-time count
  // cost a compare and a branch per step).
#pragma unroll
  for (unsigned m = kW / 2; m > 0; m /= 2)
    if (m < group) acc = M::merge(acc, shfl_acc(acc, static_cast<int>(m)));
  if (group > kW) {
    const unsigned t = threadIdx.x, warps = group / kW;
    if (t % kW == 0) smem[t / kW] = acc;
    __syncthreads();
    // Lane l of every warp takes warp l % warps's value (each run of `warps` lanes a full copy)
    // and merges them by a butterfly inside its run.
    acc = smem[(t & ~(group - 1)) / kW + (t & (warps - 1))];
#pragma unroll
    for (unsigned m = kW / 2; m > 0; m /= 2)
      if (m < warps) acc = M::merge(acc, shfl_acc(acc, static_cast<int>(m)));
    __syncthreads();  // smem is free again for the next call
  }
  return acc;
}

// ---- host helpers of the launchers ----

// The smallest power of two >= v, at most cap (a power of two).
inline unsigned pow2_at_least(int64_t v, unsigned cap) {
  unsigned g = 1;
  while (g < cap && static_cast<int64_t>(g) < v) g *= 2;
  return g;
}

}  // namespace wick::WICK_GPU_NS::kern
