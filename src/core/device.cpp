#include "wick/device.h"

#include "backend/backend.h"
#include "wick/error.h"

namespace wick {

const GpuBackendProvider* gpu_provider(DeviceKind kind);

namespace {
int gpu_count(DeviceKind kind) {
  const GpuBackendProvider* p = gpu_provider(kind);
  if (!p) return 0;
  try {
    return p->device_count();
  } catch (const Error&) {
    return 0;
  }
}
}  // namespace

Device Device::cuda(int ordinal) {
  Device d(DeviceKind::Cuda, ordinal);
  backend_for(d);  // throws a DeviceError saying why it is not available
  return d;
}

Device Device::rocm(int ordinal) {
  Device d(DeviceKind::Rocm, ordinal);
  backend_for(d);
  return d;
}

Device Device::cuda_if_available(int ordinal) {
  return ordinal < gpu_count(DeviceKind::Cuda) ? Device(DeviceKind::Cuda, ordinal) : cpu();
}

Device Device::rocm_if_available(int ordinal) {
  return ordinal < gpu_count(DeviceKind::Rocm) ? Device(DeviceKind::Rocm, ordinal) : cpu();
}

Device Device::gpu_if_available(int ordinal) {
  Device d = cuda_if_available(ordinal);
  return d.is_gpu() ? d : rocm_if_available(ordinal);
}

Device Device::parse(const std::string& s) {
  const auto colon = s.find(':');
  const std::string kind = s.substr(0, colon);
  int ordinal = 0;
  if (colon != std::string::npos) {
    try {
      size_t used = 0;
      ordinal = std::stoi(s.substr(colon + 1), &used);
      if (used != s.size() - colon - 1) throw InvalidArgument("");
    } catch (...) {
      throw InvalidArgument("[device] cannot parse device '" + s + "' (expected cpu, cuda[:N] or rocm[:N])");
    }
  }
  if (kind == "cpu" && colon == std::string::npos) return cpu();
  if (kind == "cuda") return cuda(ordinal);
  if (kind == "rocm") return rocm(ordinal);
  throw InvalidArgument("[device] cannot parse device '" + s + "' (expected cpu, cuda[:N] or rocm[:N])");
}

std::string Device::location() const {
  switch (kind_) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Cuda:
      return "cuda:" + std::to_string(ordinal_);
    case DeviceKind::Rocm:
      return "rocm:" + std::to_string(ordinal_);
  }
  return "?";
}

void Device::synchronize() const { backend_for(*this).synchronize(); }
void Device::set_seed(uint64_t seed) const { backend_for(*this).set_seed(seed); }
bool Device::supports_bf16() const { return backend_for(*this).supports_bf16(); }
DeviceInfo Device::info() const { return backend_for(*this).info(); }

std::vector<Device> available_devices() {
  std::vector<Device> out{Device::cpu()};
  for (DeviceKind k : {DeviceKind::Cuda, DeviceKind::Rocm}) {
    const int n = gpu_count(k);
    for (int i = 0; i < n; ++i) out.push_back(k == DeviceKind::Cuda ? Device::cuda(i) : Device::rocm(i));
  }
  return out;
}

}  // namespace wick
