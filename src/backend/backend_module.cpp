// The default kernel-module methods of Runtime: devices that cannot run device code (the CPU).
#include <string>

#include "backend/backend.h"

namespace wick {

namespace {
[[noreturn]] void no_modules(const Runtime& b, const char* op) {
  throw UnsupportedError(std::string("[") + op + "] kernel modules need a GPU device; " + b.device().location() +
                         " runs no device code");
}
}  // namespace

std::vector<uint8_t> Runtime::compile_module_image(const std::string&, const std::string&,
                                                   const std::vector<std::string>&) {
  no_modules(*this, "compile_module");
}

std::shared_ptr<void> Runtime::load_module_image(const std::string&, std::span<const uint8_t>) {
  no_modules(*this, "load_module");
}

void* Runtime::module_kernel(const std::shared_ptr<void>&, const std::string&, std::vector<size_t>*) {
  no_modules(*this, "launch");
}

void Runtime::launch_module_kernel(void*, const LaunchConfig&, void**, const char*) { no_modules(*this, "launch"); }

}  // namespace wick
