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

}  // namespace wick::WICK_GPU_NS::kern
