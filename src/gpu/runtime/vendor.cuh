// The vendor header and the few device-side primitives whose spelling differs between CUDA and
// HIP. Included by runtime.cu and by the kernel headers (src/gpu/kernels/*.cuh); nothing outside
// src/gpu/runtime spells a vendor name. See Note [One GPU source, two builds] in src/gpu/config.h.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include "gpu/config.h"
#include "gpu/runtime/runtime.h"

#if defined(WICK_GPU_CUDA)
#include <cuda_runtime.h>
// WICK_VENDOR(MallocAsync) -> cudaMallocAsync / hipMallocAsync. Used only in runtime.cu, for the
// runtime calls whose names map one to one.
#define WICK_VENDOR(x) cuda##x
#else
#include <hip/hip_runtime.h>
#define WICK_VENDOR(x) hip##x
#endif

namespace wick::WICK_GPU_NS::gpu {

using native_stream_t = WICK_VENDOR(Stream_t);

// The runtime's stream handle of a gpu::Stream::native().
inline native_stream_t native_stream(void* stream) { return static_cast<native_stream_t>(stream); }

namespace launch_detail {

template <class... P, class... A>
void with_params(void (*kernel)(P...), KernelSlots& slots, const LaunchDims& dims, void* stream, const char* op,
                 int device, const A&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "launch: the argument count differs from the kernel's");
  // The kernel's own parameter types, converted as a call would convert them.
  std::tuple<std::remove_cv_t<P>...> params{static_cast<std::remove_cv_t<P>>(args)...};
  std::apply(
      [&](auto&... p) {
        void* ptrs[sizeof...(P) + 1] = {static_cast<void*>(&p)...};
        launch_kernel(reinterpret_cast<const void*>(kernel), slots, dims, stream, ptrs, op, device);
      },
      params);
}

}  // namespace launch_detail

// Kernel<<<grid, block, shared, ctx.stream>>>(args...), with ctx's op and device in the error,
// for less host time (Note [Kernel launches] in runtime.h). Ctx: kern::LaunchCtx.
template <auto Kernel, class Ctx, class... A>
void launch(const Ctx& ctx, dim3 grid, dim3 block, size_t shared, const A&... args) {
  static KernelSlots slots;
  launch_detail::with_params(Kernel, slots, LaunchDims{{grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, shared},
                             ctx.stream, ctx.op, ctx.device, args...);
}

// allow_dynamic_shared and resident_blocks (runtime.h) for one kernel, each with a cache of its own
// per device that spares the locked lookup of the untyped forms at every launch.
template <auto Kernel>
void allow_dynamic_shared(int64_t bytes, const char* op, int device) {
  static std::atomic<int64_t> allowed[kLaunchSlots] = {};
  const bool slot = device >= 0 && device < kLaunchSlots;
  if (slot && allowed[device].load(std::memory_order_acquire) >= bytes) return;
  allow_dynamic_shared(reinterpret_cast<const void*>(Kernel), bytes, op, device);
  if (!slot) return;
  int64_t have = allowed[device].load(std::memory_order_relaxed);
  while (have < bytes && !allowed[device].compare_exchange_weak(have, bytes, std::memory_order_release)) {
  }
}

template <auto Kernel>
int resident_blocks(int block, int64_t shared, const char* op, int device) {
  // Per device, the last shape asked and its answer: (block << 20 | shared) << 32 | (answer + 1).
  static std::atomic<uint64_t> last[kLaunchSlots] = {};
  const bool slot =
      device >= 0 && device < kLaunchSlots && block > 0 && block < (1 << 11) && shared >= 0 && shared < (1 << 20);
  const uint64_t key = (static_cast<uint64_t>(block) << 20 | static_cast<uint64_t>(shared)) << 32;
  if (slot) {
    const uint64_t v = last[device].load(std::memory_order_relaxed);
    if ((v >> 32) << 32 == key) return static_cast<int>(v & 0xffffffffu) - 1;
  }
  const int n = resident_blocks(reinterpret_cast<const void*>(Kernel), block, shared, op, device);
  if (slot) last[device].store(key | static_cast<uint64_t>(n + 1), std::memory_order_relaxed);
  return n;
}

// Note [Warp size]
// The warp (wavefront) width is a property of the architecture being compiled: 32 on NVIDIA and on
// RDNA (gfx10xx, gfx11xx), 64 on GCN / CDNA (gfx9xx). One HIP compile produces code for several
// architectures, so device code reads warp_size() (a compile-time constant per target) and host
// code reads DeviceProperties::warp_size at run time. No kernel may assume 32 lanes or a 32-bit
// lane mask (llama.cpp's wave64 bugs came from that).
#if defined(__HIP_DEVICE_COMPILE__)
#define WICK_DEVICE_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#elif defined(__CUDA_ARCH__)
#define WICK_DEVICE_WARP_SIZE 32
#else
// Host pass: device bodies are parsed but never run here; the value must not reach host code.
#define WICK_DEVICE_WARP_SIZE 64
#endif

__device__ constexpr int warp_size() { return WICK_DEVICE_WARP_SIZE; }

// Butterfly shuffle over the whole warp (every lane must take part).
template <class T>
__device__ inline T shfl_xor(T v, int lane_mask) {
#if defined(WICK_GPU_CUDA)
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, warp_size());
#else
  return __shfl_xor(v, lane_mask, warp_size());
#endif
}

// Lane masks: bit k for lane k, as wide as the target's warp (kernels use only lane_mask_t, popc,
// and shifts by lane numbers, so none depends on the width).
using lane_mask_t = std::conditional_t<WICK_DEVICE_WARP_SIZE == 64, uint64_t, uint32_t>;

__device__ inline int popc(lane_mask_t m) {
  if constexpr (sizeof(lane_mask_t) == 8)
    return __popcll(m);
  else
    return __popc(m);
}

// Trailing zero bits of v > 0 (log2 of a power of two).
__device__ inline int ctz(unsigned v) { return __ffs(static_cast<int>(v)) - 1; }

// The lanes of the warp whose `pred` is true (every lane must take part).
__device__ inline lane_mask_t ballot(bool pred) {
#if defined(WICK_GPU_CUDA)
  return __ballot_sync(0xffffffffu, pred);
#else
  return static_cast<lane_mask_t>(__ballot(pred));
#endif
}

// Lane i gets v of lane i - delta (its own v when i < delta); every lane must take part.
template <class T>
__device__ inline T shfl_up(T v, unsigned delta) {
#if defined(WICK_GPU_CUDA)
  return __shfl_up_sync(0xffffffffu, v, delta, warp_size());
#else
  return __shfl_up(v, delta, warp_size());
#endif
}

// Every lane gets v of lane src_lane; every lane must take part.
template <class T>
__device__ inline T shfl(T v, int src_lane) {
#if defined(WICK_GPU_CUDA)
  return __shfl_sync(0xffffffffu, v, src_lane, warp_size());
#else
  return __shfl(v, src_lane, warp_size());
#endif
}

// A 16-byte load marked as streamed once (evicted first), so that it does not push out of the
// caches what is read again; a plain load on HIP.
__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
#if defined(WICK_GPU_CUDA)
  return __ldcs(p);
#else
  return *p;
#endif
}

// Orders the shared memory accesses of the warp's lanes: those before the call happen before those
// after it, across lanes (a barrier of one warp).
__device__ inline void syncwarp() {
#if defined(WICK_GPU_CUDA)
  __syncwarp();
#else
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
#endif
}

// a * b rounded once and never fused with a following add. Used where a result must match the
// CPU backend bit for bit (arange), since both compilers contract a * b + c into an fma by default.
__device__ inline double mul_no_fma(double a, double b) {
#if defined(WICK_GPU_CUDA)
  return __dmul_rn(a, b);
#else
#pragma clang fp contract(off)
  return a * b;
#endif
}
__device__ inline double add_no_fma(double a, double b) {
#if defined(WICK_GPU_CUDA)
  return __dadd_rn(a, b);
#else
#pragma clang fp contract(off)
  return a + b;
#endif
}

}  // namespace wick::WICK_GPU_NS::gpu
