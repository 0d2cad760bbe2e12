// Devices: the CPU, NVIDIA GPUs (CUDA) and AMD GPUs (ROCm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wick {

enum class DeviceKind : uint8_t { Cpu, Cuda, Rocm };

struct DeviceInfo {
  std::string name;          // "cpu (16 threads)", "NVIDIA H100 80GB HBM3"
  std::string architecture;  // "x86_64", "sm_90", "gfx90a"
  int64_t total_memory = 0;  // bytes
  int64_t free_memory = 0;   // bytes
  int multiprocessors = 0;   // SMs / CUs; CPU: hardware threads
  int warp_size = 0;         // 0 on the CPU
};

class Device {
 public:
  Device() = default;  // the CPU
  static Device cpu() { return Device(); }
  // Throws DeviceError when wick was built without that backend or the ordinal does not exist.
  static Device cuda(int ordinal = 0);
  static Device rocm(int ordinal = 0);
  // The GPU if one is present (and the backend was built), else the CPU.
  static Device cuda_if_available(int ordinal = 0);
  static Device rocm_if_available(int ordinal = 0);
  static Device gpu_if_available(int ordinal = 0);
  // Parses "cpu", "cuda", "cuda:1", "rocm:0".
  static Device parse(const std::string& s);

  DeviceKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  bool is_cpu() const { return kind_ == DeviceKind::Cpu; }
  bool is_gpu() const { return kind_ != DeviceKind::Cpu; }
  // "cpu", "cuda:0", "rocm:1"
  std::string location() const;
  std::string str() const { return location(); }
  bool same_device(const Device& o) const { return kind_ == o.kind_ && ordinal_ == o.ordinal_; }
  bool operator==(const Device& o) const { return same_device(o); }
  bool operator!=(const Device& o) const { return !same_device(o); }

  void synchronize() const;
  // Seeds this device's random generator; the generator's counter restarts at zero.
  void set_seed(uint64_t seed) const;
  bool supports_bf16() const;
  DeviceInfo info() const;

 private:
  Device(DeviceKind k, int ordinal) : kind_(k), ordinal_(ordinal) {}
  DeviceKind kind_ = DeviceKind::Cpu;
  int ordinal_ = 0;
};

// Devices present in this process: the CPU first, then every GPU of the backends built in.
std::vector<Device> available_devices();

}  // namespace wick
