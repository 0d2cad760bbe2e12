// The vendor header and the few device-side primitives whose spelling differs between CUDA and
// HIP. Included by runtime.cu and by the kernel headers (src/gpu/kernels/*.cuh); nothing outside
// src/gpu/runtime spells a vendor name. See Note [One GPU source, two builds] in src/gpu/config.h.
#pragma once

#include <cstdint>

#include "gpu/config.h"

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

// The stream handle for a kernel launch (<<<grid, block, smem, native_stream(s.native())>>>).
inline native_stream_t native_stream(void* stream) { return static_cast<native_stream_t>(stream); }

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
