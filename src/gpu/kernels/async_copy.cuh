// Copies from global to shared memory that complete in the background where the target has them
// (cp.async, CUDA sm_80 and newer), for kernels that stage tiles in shared memory several steps
// ahead: copy_async issues, commit() closes a step's group of copies, wait<N>() waits until at most
// N of the thread's groups are still in flight. Elsewhere (ROCm, older CUDA targets) a copy is a
// load and a store, and commit / wait do nothing.
#pragma once

#include <cstdint>
#include <type_traits>

#include "gpu/config.h"
#include "gpu/runtime/vendor.cuh"

#if defined(WICK_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define WICK_GPU_SM80 1
#endif

namespace wick::WICK_GPU_NS::kern {

#if defined(WICK_GPU_SM80)
// The shared-memory address of p, for PTX.
__device__ inline unsigned smem_addr(const void* p) { return static_cast<unsigned>(__cvta_generic_to_shared(p)); }
#endif

// N (4 or 16) bytes from global to shared memory, or N zero bytes where !pred (then src is not read).
template <int N>
__device__ inline void copy_async(void* dst, const void* src, bool pred) {
  static_assert(N == 4 || N == 16, "cp.async.ca copies 4, 8 or 16 bytes");
#if defined(WICK_GPU_SM80)
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_addr(dst)), "l"(src), "n"(N),
               "r"(pred ? N : 0));
#else
  using U = std::conditional_t<N == 16, uint4, uint32_t>;
  *static_cast<U*>(dst) = pred ? *static_cast<const U*>(src) : U{};
#endif
}
__device__ inline void commit() {
#if defined(WICK_GPU_SM80)
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
template <int N>
__device__ inline void wait() {
#if defined(WICK_GPU_SM80)
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

}  // namespace wick::WICK_GPU_NS::kern
