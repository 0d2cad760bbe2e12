// The GPU backend's kernel-module methods: the vendor loader (runtime/module.h) bound to this
// device and its stream. The cache and the argument checks are in src/core/kernel.cpp.
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_backend.h"
#include "gpu/runtime/module.h"

namespace wick::WICK_GPU_NS {

std::vector<uint8_t> GpuBackend::compile_module_image(const std::string& name, const std::string& source,
                                                      const std::vector<std::string>& options) {
  enter("compile_module");
  return gpu::compile_program(name, source, options, props_.architecture, ordinal_);
}

std::shared_ptr<void> GpuBackend::load_module_image(const std::string& name, std::span<const uint8_t> image) {
  enter("load_module");
  auto* m = new gpu::LoadedModule(ordinal_, name, image);
  // Kernels of the module may still be queued: wait for them before unloading. Errors are
  // dropped (this may run at process exit, and a fault would surface at the next wick call).
  return std::shared_ptr<void>(m, [this](void* p) {
    try {
      enter("unload_module");
      stream_.synchronize("unload_module");
    } catch (...) {
    }
    delete static_cast<gpu::LoadedModule*>(p);
  });
}

void* GpuBackend::module_kernel(const std::shared_ptr<void>& module, const std::string& kernel,
                                std::vector<size_t>* param_sizes) {
  enter("launch");
  void* fn = static_cast<const gpu::LoadedModule*>(module.get())->function(kernel);
  if (fn && param_sizes) *param_sizes = gpu::kernel_param_sizes(fn);
  return fn;
}

void GpuBackend::launch_module_kernel(void* kernel, const LaunchConfig& config, void** args, const char* op) {
  enter(op);
  const uint32_t grid[3] = {config.grid.x, config.grid.y, config.grid.z};
  const uint32_t block[3] = {config.block.x, config.block.y, config.block.z};
  gpu::launch_kernel(kernel, grid, block, config.shared_bytes, args, stream_, op);
}

}  // namespace wick::WICK_GPU_NS
