// Block-wide prefix sums shared by the scan and sort kernels.
#pragma once

#include "gpu/runtime/vendor.cuh"

namespace wick::WICK_GPU_NS::kern {

// Exclusive prefix sum of v over the block's Threads threads (in thread order); the block's total
// goes to *total. Shared memory only, so any warp width works; every thread of the block calls it.
template <class Acc, int Threads>
__device__ Acc block_exclusive_scan(Acc v, Acc (&part)[2][Threads], Acc* total) {
  const int t = static_cast<int>(threadIdx.x);
  part[0][t] = v;
  __syncthreads();
  int in = 0;
  for (int off = 1; off < Threads; off <<= 1) {
    Acc x = part[in][t];
    if (t >= off) x = part[in][t - off] + x;
    part[in ^ 1][t] = x;
    in ^= 1;
    __syncthreads();
  }
  const Acc excl = t > 0 ? part[in][t - 1] : Acc(0);
  *total = part[in][Threads - 1];
  __syncthreads();  // part is rewritten by the next call
  return excl;
}

// The same over a block of any whole number of warps, at most warp_size() of them, with warp
// shuffles: one barrier instead of one per doubling. wsum holds a word per warp; the caller puts a
// barrier between this call and the next one's writes to it (the sort's passes have several).
template <class Acc>
__device__ Acc block_exclusive_scan_warps(Acc v, Acc* wsum, Acc* total) {
  const int ws = gpu::warp_size(), t = static_cast<int>(threadIdx.x), lane = t % ws, w = t / ws;
  const int warps = static_cast<int>(blockDim.x) / ws;
  Acc incl = v;
  for (int off = 1; off < ws; off <<= 1) {
    const Acc x = gpu::shfl_up(incl, static_cast<unsigned>(off));
    if (lane >= off) incl += x;
  }
  if (lane == ws - 1) wsum[w] = incl;
  __syncthreads();
  const Acc mine = lane < warps ? wsum[lane] : Acc(0);
  Acc warps_incl = mine;  // every warp scans the warps' sums itself
  for (int off = 1; off < ws; off <<= 1) {
    const Acc x = gpu::shfl_up(warps_incl, static_cast<unsigned>(off));
    if (lane >= off) warps_incl += x;
  }
  *total = gpu::shfl(warps_incl, ws - 1);
  return gpu::shfl(warps_incl - mine, w) + incl - v;
}

}  // namespace wick::WICK_GPU_NS::kern
