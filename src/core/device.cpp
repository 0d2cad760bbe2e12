#include "wick/device.h"

#include <algorithm>
#include <atomic>

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

Device Device::new_cuda(int ordinal) { return cuda(ordinal).new_stream(); }
Device Device::new_rocm(int ordinal) { return rocm(ordinal).new_stream(); }

Device Device::new_stream() const {
  if (is_cpu()) throw DeviceError("[device] cpu: new_stream() needs a GPU device (the CPU backend has no streams)");
  backend_for(*this);  // throws a DeviceError saying why the GPU is not available
  // Ids are unique in the process across kinds and ordinals; 0 is every GPU's default handle.
  static std::atomic<uint32_t> next_id{1};
  const uint32_t id = next_id.fetch_add(1, std::memory_order_relaxed);
  add_gpu_handle(kind_, ordinal_, id);
  return Device(kind_, ordinal_, id);
}

Device Device::handle(DeviceKind kind, int ordinal, uint32_t id) {
  if (kind == DeviceKind::Cpu) {
    if (id != 0) throw DeviceError(std::string("[device] cpu has no handle ") += std::to_string(id));
    return cpu();
  }
  const Device d(kind, ordinal, id);
  backend_for(d);  // throws when the backend, the GPU or the handle does not exist
  return d;
}

namespace {
void check_ordinal(int ordinal, const char* fn) {
  if (ordinal < 0)
    throw DeviceError(std::string("[device] ") + fn + "(" + std::to_string(ordinal) +
                      "): a GPU ordinal is not negative");
}
}  // namespace

Device Device::cuda_if_available(int ordinal) {
  check_ordinal(ordinal, "cuda_if_available");
  return ordinal < gpu_count(DeviceKind::Cuda) ? Device(DeviceKind::Cuda, ordinal) : cpu();
}

Device Device::rocm_if_available(int ordinal) {
  check_ordinal(ordinal, "rocm_if_available");
  return ordinal < gpu_count(DeviceKind::Rocm) ? Device(DeviceKind::Rocm, ordinal) : cpu();
}

Device Device::gpu_if_available(int ordinal) {
  check_ordinal(ordinal, "gpu_if_available");
  Device d = cuda_if_available(ordinal);
  return d.is_gpu() ? d : rocm_if_available(ordinal);
}

namespace {
// A non-negative decimal number that fills all of s, else -1.
int64_t parse_number(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}
}  // namespace

Device Device::parse(const std::string& s) {
  const auto bad = [&s] {
    return InvalidArgument("[device] cannot parse device '" + s + "' (expected cpu, cuda[:N[#ID]] or rocm[:N[#ID]])");
  };
  const auto colon = s.find(':');
  const auto hash = s.find('#');
  const std::string kind = s.substr(0, std::min(colon, hash));
  int64_t ordinal = 0, id = 0;
  if (colon != std::string::npos) {
    if (hash != std::string::npos && hash < colon) throw bad();
    ordinal = parse_number(s.substr(colon + 1, hash == std::string::npos ? std::string::npos : hash - colon - 1));
    if (ordinal < 0) throw bad();
  }
  if (hash != std::string::npos) {
    if (colon == std::string::npos) throw bad();
    id = parse_number(s.substr(hash + 1));
    if (id < 0) throw bad();
  }
  if (kind == "cpu" && colon == std::string::npos && hash == std::string::npos) return cpu();
  const int o = static_cast<int>(ordinal);
  const uint32_t i = static_cast<uint32_t>(id);
  if (kind == "cuda") return i == 0 ? cuda(o) : handle(DeviceKind::Cuda, o, i);
  if (kind == "rocm") return i == 0 ? rocm(o) : handle(DeviceKind::Rocm, o, i);
  throw bad();
}

std::string Device::location() const {
  switch (kind_) {
    case DeviceKind::Cpu:
      return "cpu";
    case DeviceKind::Cuda:
    case DeviceKind::Rocm:
      break;
  }
  std::string s = kind_ == DeviceKind::Cuda ? "cuda:" : "rocm:";
  s += std::to_string(ordinal_);
  if (id_ != 0) {
    s += '#';  // built with += : see op_tag in core/front.h (GCC 12 -Wrestrict)
    s += std::to_string(id_);
  }
  return s;
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
