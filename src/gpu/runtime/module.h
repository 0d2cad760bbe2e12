// Kernel modules: device code loaded from a binary image or compiled from source at run time,
// under wick's own names (the vendor calls are in module.cu). The public face is wick/kernel.h;
// the per-device cache lives in src/core/kernel.cpp.
//
// Note [Built-in kernels load lazily]
// wick's own kernels (src/gpu/kernels) are compiled into the library as fat binaries by nvcc /
// hipcc and registered with the runtime when the library loads. Nothing here is needed for them:
// the CUDA runtime loads a kernel's code onto a device at its first launch (CUDA_MODULE_LOADING=LAZY
// is the default since CUDA 12.2), and HIP loads the code objects of the fat binary when a device is
// first used. The loader below is for user kernels only.
//
// No header here names a vendor type: native handles travel as void*.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/config.h"
#include "gpu/runtime/runtime.h"

namespace wick::WICK_GPU_NS::gpu {

// Compiles CUDA / HIP C++ `source` with NVRTC / hipRTC for `architecture`, the device's own
// ("sm_90", "gfx90a", as DeviceProperties::architecture). NVRTC makes a cubin for that sm when it
// knows the architecture, else PTX for the newest virtual architecture below it (the driver JITs
// PTX forward); hipRTC makes a code object for the gfx target. `name` names the program in the
// compiler's messages. Throws wick::CompileError holding the compiler's log.
std::vector<uint8_t> compile_program(const std::string& name, const std::string& source,
                                     const std::vector<std::string>& options, const std::string& architecture,
                                     int device);

// A loaded image: cubin, fatbin or PTX (CUDA); code object or offload bundle (ROCm).
class LoadedModule {
 public:
  // Throws wick::FormatError when `image` is not loadable code for this device (an ELF image whose
  // headers point past its end is rejected before the loader reads it), DeviceError otherwise.
  LoadedModule(int device, const std::string& name, std::span<const uint8_t> image);
  // Unloads; errors are dropped (it may run at process exit). The caller waits for the work that
  // uses the module first.
  ~LoadedModule();
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  // The kernel `kernel` (its symbol name: extern "C" or mangled), or nullptr when there is none.
  void* function(const std::string& kernel) const;

 private:
  void* handle_ = nullptr;
  int device_ = 0;
  std::string name_;
};

// The byte size of each parameter of `fn`, in order, where the runtime can tell (CUDA 12.4+
// drivers); empty when it cannot (HIP, older drivers). Never throws.
std::vector<size_t> kernel_param_sizes(void* fn) noexcept;

// Queues `fn` on `s`. args[i] points at the value of the i-th parameter. An invalid configuration
// (too many threads, too much shared memory) throws wick::InvalidArgument; faults during the run
// surface at the next synchronisation, as for every launch.
void launch_kernel(void* fn, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, void** args,
                   const Stream& s, const char* op);

}  // namespace wick::WICK_GPU_NS::gpu
