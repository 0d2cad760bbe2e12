// Which of the two GPU builds this translation unit belongs to.
//
// Note [One GPU source, two builds]
// Everything under src/gpu is compiled twice: by nvcc with WICK_GPU_CUDA defined and by clang's
// HIP mode with WICK_GPU_ROCM defined (CMake sets the macro per target, cmake/WickGpu.cmake). The
// code lives in namespace wick::WICK_GPU_NS, which is wick::cuda or wick::rocm, so both builds can
// link into one library without clashing symbols. Only src/gpu/runtime names vendor APIs.
#pragma once

#include "wick/device.h"

#if defined(WICK_GPU_CUDA) && defined(WICK_GPU_ROCM)
#error "define exactly one of WICK_GPU_CUDA and WICK_GPU_ROCM"
#elif defined(WICK_GPU_CUDA)
#define WICK_GPU_NS cuda
#define WICK_GPU_PROVIDER cuda_provider
#elif defined(WICK_GPU_ROCM)
#define WICK_GPU_NS rocm
#define WICK_GPU_PROVIDER rocm_provider
#else
#error "src/gpu is compiled only with WICK_GPU_CUDA or WICK_GPU_ROCM defined"
#endif

namespace wick::WICK_GPU_NS {

#if defined(WICK_GPU_CUDA)
inline constexpr DeviceKind kDeviceKind = DeviceKind::Cuda;
inline constexpr const char* kBackendName = "cuda";
#else
inline constexpr DeviceKind kDeviceKind = DeviceKind::Rocm;
inline constexpr const char* kBackendName = "rocm";
#endif

}  // namespace wick::WICK_GPU_NS
