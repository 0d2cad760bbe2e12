// GpuBackend's ops, generated from WICK_BACKEND_OPS: each makes the device current and forwards to
// its launcher in kernels/<family>.cu (kernels/launch.h). GPU code is placed by one rule: the
// runtime members of GpuBackend in gpu_backend.cpp (device, memory), gpu_streams.cpp (streams,
// transfers) and gpu_module.cpp (user modules); every op here; kernels and their launchers in
// kernels/<family>.cu.
#include "gpu/gpu_backend.h"

namespace wick::WICK_GPU_NS {

Backend& kern::backend_of(const kern::LaunchCtx& ctx) { return *ctx.backend; }

#define WICK_X(name, params, args) \
  void GpuBackend::name params { kern::name(enter(#name), WICK_EXPAND args); }
WICK_BACKEND_OPS(WICK_X)
#undef WICK_X

}  // namespace wick::WICK_GPU_NS
