// Devices: the CPU, NVIDIA GPUs (CUDA) and AMD GPUs (ROCm).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace wick {

enum class DeviceKind : uint8_t { Cpu, Cuda, Rocm };

struct DeviceInfo {
  std::string name;          // "cpu (16 threads)", or the GPU's product name from its driver
  std::string architecture;  // "x86_64", "sm_90", "gfx90a"
  int64_t total_memory = 0;  // bytes
  int64_t free_memory = 0;   // bytes
  int multiprocessors = 0;   // SMs / CUs; CPU: hardware threads
  int warp_size = 0;         // 0 on the CPU
  // What the device's kernels run on, for reports: on the CPU the vector ISA of wick's kernels,
  // the threads, and the BLAS build and the core type it picked.
  std::string details;
};

// Note [Device handles]
// A Device names a handle of a device: its kind, its ordinal and an id. Each GPU handle has its
// own stream; work issued through one handle runs in the order the host issued it.
// Device::cuda(i) / rocm(i) always give the default handle of GPU i (id 0), the same one every
// call. new_stream() (or Device::new_cuda / new_rocm) makes another handle of the same GPU, with
// its own stream and a fresh id, unique in the process; it shares the GPU's memory pool, memory
// statistics and peer access with every other handle of that GPU, and has its own random
// generator (seeded like a new default handle). Handles live until the process exits: make a few
// and reuse them, one per independent queue of work.
//
// == and same_device() compare handles; same_gpu() compares the physical device. An op runs on
// the handle of its first tensor (self) and returns tensors of that handle; other operands may
// live on any handle of the same GPU (Note [Cross-stream use] in src/backend/backend.h says how
// the streams are ordered; set_event_tracking below turns that off).
class Device {
 public:
  Device() = default;  // the CPU
  static Device cpu() { return Device(); }
  // The default handle of a GPU. Throws DeviceError when wick was built without that backend or
  // the ordinal does not exist.
  static Device cuda(int ordinal = 0);
  static Device rocm(int ordinal = 0);
  // A new handle of GPU `ordinal` with its own stream (Note [Device handles]). Throws DeviceError
  // like cuda() / rocm().
  static Device new_cuda(int ordinal = 0);
  static Device new_rocm(int ordinal = 0);
  // A new handle of this handle's GPU with its own stream; throws DeviceError on the CPU.
  Device new_stream() const;
  // The existing handle `id` of a GPU (id 0: the default handle); throws DeviceError when there is
  // no such handle.
  static Device handle(DeviceKind kind, int ordinal, uint32_t id);
  // GPU `ordinal` if it is present (and the backend was built), else the CPU; a negative ordinal
  // is a DeviceError.
  static Device cuda_if_available(int ordinal = 0);
  static Device rocm_if_available(int ordinal = 0);
  static Device gpu_if_available(int ordinal = 0);
  // Parses "cpu", "cuda", "cuda:1", "rocm:0", and "cuda:0#3" (an existing handle, as location()
  // writes it).
  static Device parse(const std::string& s);

  DeviceKind kind() const { return kind_; }
  int ordinal() const { return ordinal_; }
  // 0 for the CPU and for the default handle of each GPU; else unique among the handles made.
  uint32_t id() const { return id_; }
  bool is_cpu() const { return kind_ == DeviceKind::Cpu; }
  bool is_gpu() const { return kind_ != DeviceKind::Cpu; }
  bool is_default_handle() const { return id_ == 0; }
  // "cpu", "cuda:0", "rocm:1"; a handle other than the default one: "cuda:0#3"
  std::string location() const;
  std::string str() const { return location(); }
  // The same handle.
  bool same_device(const Device& o) const { return kind_ == o.kind_ && ordinal_ == o.ordinal_ && id_ == o.id_; }
  // The same physical device (any handles of it).
  bool same_gpu(const Device& o) const { return kind_ == o.kind_ && ordinal_ == o.ordinal_; }
  bool operator==(const Device& o) const { return same_device(o); }
  bool operator!=(const Device& o) const { return !same_device(o); }

  // Waits for the work queued on this handle (not on other handles of the same GPU).
  void synchronize() const;
  // The stream of this handle as the runtime's handle (a cudaStream_t / hipStream_t, for kernels
  // of one's own queued after wick's); nullptr on the CPU, whose work is done when an op returns.
  void* native_stream() const;
  // Seeds this handle's random generator; the generator's counter restarts at zero.
  void set_seed(uint64_t seed) const;
  bool supports_bf16() const;
  DeviceInfo info() const;

 private:
  Device(DeviceKind k, int ordinal, uint32_t id = 0) : kind_(k), ordinal_(ordinal), id_(id) {}
  DeviceKind kind_ = DeviceKind::Cpu;
  int ordinal_ = 0;
  uint32_t id_ = 0;
};

// Event tracking (Note [Cross-stream use] in src/backend/backend.h): when an op on one handle of
// a GPU takes a tensor of another handle of it, wick makes the op's stream wait for the work that
// wrote the tensor (a stream wait on an event: the host does not block), makes later in-place
// writes wait for that use, and frees the tensor's memory only after it. On by default; the
// environment variable WICK_EVENT_TRACKING=0 (or off / false) starts the process with it off.
// With tracking off, wick orders nothing between handles: synchronize() the producing handle
// before another handle uses its tensor, and synchronize() the using handle before the tensor is
// written in place or released. Tensor::to always orders its own copy, whatever this says.
void set_event_tracking(bool on);
bool event_tracking();

// Devices present in this process: the CPU first, then every GPU of the backends built in.
std::vector<Device> available_devices();

}  // namespace wick
