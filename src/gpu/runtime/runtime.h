// The vendor shim: the CUDA / HIP runtime under wick's own names.
//
// This header names no vendor type, so host code of the backend (src/gpu/*.cpp) includes it without
// pulling in cuda_runtime.h or hip_runtime.h. Native handles travel as void* and are converted back
// only in src/gpu/runtime (runtime.cu, and vendor.cuh for kernel launches).
//
// Errors become wick exceptions: out of memory -> wick::OutOfMemory (the allocator reports it as a
// null pointer first, so the caller can trim caches, retry and word the message); everything else
// -> wick::DeviceError "[op] cuda error cudaErrorX: text (cuda:0)".
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "gpu/config.h"

namespace wick::WICK_GPU_NS::gpu {

// Number of devices; 0 when there is no driver or no device (never throws).
int device_count() noexcept;

struct DeviceProperties {
  std::string name;          // the product name the driver reports
  std::string architecture;  // "sm_90", "gfx90a" (target features such as ":sramecc+" dropped)
  int multiprocessors = 0;   // SMs / CUs
  int warp_size = 0;         // 32 on NVIDIA and RDNA, 64 on GCN / CDNA
  int max_threads_per_block = 0;
  int64_t total_memory = 0;
  bool memory_pools = false;  // stream-ordered allocation supported
  // Shared memory one block may use, static + dynamic, once a kernel opts in (allow_dynamic_shared).
  int64_t shared_per_block_optin = 48 * 1024;
};
DeviceProperties device_properties(int device);

// Makes `device` current for the calling thread (every backend entry point does this first).
void set_device(int device);
// Free and total memory of `device` as the driver sees it.
void memory_info(int device, int64_t* free_bytes, int64_t* total_bytes);

// Note [Kernel launches]
// wick's kernels launch through launch<Kernel>(ctx, grid, block, shared, args...) in vendor.cuh,
// not <<<...>>>. A small op is mostly its launch, and the runtime's launch costs the host more than
// the driver's, its lookup of the kernel among wick's thousands included. launch() looks each
// kernel's handle up once per device (cudaGetFuncBySymbol: the handle the runtime itself launches,
// so cudaFuncSetAttribute applies to it), keeps it in a static slot of its own instantiation, and
// calls cuLaunchKernel through the entry point the runtime hands out (no link against libcuda:
// wick still loads where there is no driver). The driver's result replaces cudaGetLastError.
// Without the entry point or a handle, for a device ordinal beyond the slots, or when
// cuLaunchKernel fails, the kernel goes to cudaLaunchKernel instead, so a failure is reported with
// the runtime's error name and text. User kernels (module.cu) launch their library's CUkernel
// through the driver the same way. HIP launches through hipLaunchKernel and hipModuleLaunchKernel.
inline constexpr int kLaunchSlots = 16;  // devices whose kernel handles launch() keeps
struct KernelSlots {
  std::atomic<void*> fn[kLaunchSlots] = {};
};
struct LaunchDims {
  unsigned grid[3];
  unsigned block[3];
  size_t shared;
};
// Queues `entry` (a __global__ function's address) on `stream` with one pointer per parameter in
// `args`; throws DeviceError naming `op` when the launch fails. `slots` caches its handles.
void launch_kernel(const void* entry, KernelSlots& slots, const LaunchDims& dims, void* stream, void** args,
                   const char* op, int device);
// Queues `fn` (a CUfunction, or a CUkernel of a loaded library: Note [Kernel module cache]'s
// modules) through the driver's cuLaunchKernel; false, with nothing queued and no error state left
// behind, when fn is null, the entry point is missing or the launch fails (the caller then goes
// through the runtime, which names the error). Always false on HIP.
bool driver_launch_kernel(void* fn, const LaunchDims& dims, void* stream, void** args) noexcept;

// Lets `kernel` (the address of a __global__ function) launch with `bytes` of dynamic shared
// memory, above the default 48 KB per block when the device allows it (up to
// shared_per_block_optin), and asks for the largest shared memory carve-out, so that several
// such blocks fit on one multiprocessor. Runtime calls only when `bytes` exceeds what was already
// allowed for that kernel on that device. Kernels call the form of vendor.cuh, which keeps the
// answer per kernel and device without a lock.
void allow_dynamic_shared(const void* kernel, int64_t bytes, const char* op, int device);

// How many blocks of `block` threads (and `shared` bytes of dynamic shared memory) of `kernel` fit
// on one multiprocessor of the current device (`device`) at once; cached per kernel, device and shape
// (and, in the form of vendor.cuh, per kernel and device for the last shape, without a lock).
int resident_blocks(const void* kernel, int block, int64_t shared, const char* op, int device);

// The PTX version (80 for sm_80) of the code of `kernel` (the address of a __global__ function)
// that the runtime loads on the current device; 0 when the query fails (no code for the device)
// and always on HIP. Leaves no error state behind.
int kernel_ptx_version(const void* kernel) noexcept;

class Stream {
 public:
  // A non-blocking stream on `device`.
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  void* native() const { return handle_; }
  int device() const { return device_; }
  // Waits for everything queued so far; throws DeviceError for a fault in that work.
  void synchronize(const char* op = "synchronize") const;
  // Whether everything queued so far has finished; throws DeviceError for a fault in that work.
  bool query(const char* op) const;
  // Work queued on this stream later waits for `e`'s last record (which may be on another
  // device); the host does not wait.
  void wait(const class Event& e) const;

 private:
  void* handle_ = nullptr;
  int device_ = 0;
};

class Event {
 public:
  // timing = false: a fence only (cheaper to record; elapsed_ms is not available).
  explicit Event(int device, bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(const Stream& s);
  void synchronize() const;
  // Milliseconds between `start` (recorded earlier) and this event; both must have completed.
  float elapsed_ms(const Event& start) const;
  void* native() const { return handle_; }
  int device() const { return device_; }

 private:
  void* handle_ = nullptr;
  int device_ = 0;
};

// Work queued later on the runtime stream `native` (not one of wick's) waits for e's last record.
void stream_wait_native(void* native, const Event& e);

// Queues fn(arg) on `s`: it runs on a runtime thread once the work before it has finished, and
// the work after it waits for it. fn must not call the runtime.
void launch_host_func(const Stream& s, void (*fn)(void*), void* arg);

// Page-locked host memory, which copies to and from the device can read without staging and
// without blocking the host, and which kernels on any device can read and write through the same
// pointer (mapped, unified addressing). Throws OutOfMemory.
void* host_alloc_pinned(int64_t nbytes, int device);
void host_free_pinned(void* p) noexcept;

// Whether `device` can map the memory of `peer` (NVLink / PCIe peer to peer).
bool can_access_peer(int device, int peer);
// Lets kernels and copies on `device` reach memory that `peer` allocated with the synchronous
// allocator (allocations from a MemoryPool need MemoryPool::grant_access as well).
void enable_peer_access(int device, int peer);

// Stream-ordered allocation from a pool owned by wick, one per device. Freed blocks return to the
// pool (release threshold: unlimited), so steady-state allocation costs no driver call and no
// synchronisation. Devices without memory pools fall back to the synchronous allocator.
class MemoryPool {
 public:
  explicit MemoryPool(int device);
  ~MemoryPool();
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;
  // nullptr when the device is out of memory (the runtime's error state is cleared, the device
  // stays usable); throws DeviceError for other failures.
  void* allocate(int64_t nbytes, const Stream& s);
  // Never throws (it runs from destructors, possibly during process exit).
  void deallocate(void* p, const Stream& s) noexcept;
  // Bytes the pool holds from the driver, and bytes of it handed out.
  int64_t reserved() const;
  int64_t used() const;
  // Returns cached memory to the driver, keeping at most `keep` bytes. Call after synchronising.
  void trim(int64_t keep);
  bool stream_ordered() const { return pool_ != nullptr; }
  // Lets `peer` read and write this pool's allocations (after enable_peer_access between them).
  void grant_access(int peer);

 private:
  void* pool_ = nullptr;  // null: synchronous fallback
  int device_ = 0;
};

// Note [Graph capture]
// A captured graph is the work queued on one stream between begin_capture and end_capture,
// recorded instead of run, then replayed as one launch (CUDA graphs / HIP graphs). Capture is in
// relaxed mode: the capturing thread may still allocate with device_malloc, which the backend
// does for the memory the recorded kernels use (its graph arena), since a stream-ordered
// allocation inside the capture would become a node of the graph. A call that waits on the
// capturing stream (a synchronisation, a blocking copy) invalidates the capture; end_capture then
// throws DeviceError.
void begin_capture(const Stream& s);
// Ends the capture of `s` and returns the instantiated graph (an opaque handle for launch_graph
// and destroy_graph); throws DeviceError naming `op` when the capture failed.
void* end_capture(const Stream& s, const char* op);
// Ends the capture of `s`, if one is under way, and drops what it recorded. Never throws.
void abort_capture(const Stream& s) noexcept;
void launch_graph(void* graph, const Stream& s, const char* op);
void destroy_graph(void* graph) noexcept;
// Synchronous device memory outside the pool (a graph arena): nullptr when out of memory.
void* device_malloc(int64_t nbytes, int device);
// Waits for the device, then frees. Never throws.
void device_free(void* p) noexcept;

enum class CopyKind { HostToDevice, DeviceToHost, DeviceToDevice };
// Queues a copy on `s`. Host memory may be pageable.
void memcpy_async(void* dst, const void* src, int64_t nbytes, CopyKind kind, const Stream& s);
// Copies and waits until the copy has finished (the host buffer may be reused on return).
void memcpy_sync(void* dst, const void* src, int64_t nbytes, CopyKind kind, const Stream& s);
// Queues on `s` a copy from memory of device src_device to memory of device dst_device.
void memcpy_peer_async(void* dst, int dst_device, const void* src, int src_device, int64_t nbytes, const Stream& s);

}  // namespace wick::WICK_GPU_NS::gpu
