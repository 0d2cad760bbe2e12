// The runtime half of a backend: device information, memory, streams and fences, the random
// generator state and user kernel modules. The ops are the other half (Backend, backend.h); the
// two are one object per device handle, but nothing here knows about ops.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/op_params.h"
#include "wick/device.h"
#include "wick/kernel.h"
#include "wick/memory.h"

namespace wick {

class Storage;

class Runtime {
 public:
  virtual ~Runtime() = default;

  virtual Device device() const = 0;
  virtual DeviceInfo info() const = 0;
  virtual void synchronize() = 0;
  virtual bool supports_bf16() const { return true; }

  // ---- memory ----
  virtual void* raw_alloc(int64_t nbytes) = 0;  // throws OutOfMemory
  virtual void raw_free(void* p) = 0;
  // Contiguous byte copies between host memory and this device's memory.
  virtual void copy_from_host(void* dst, const void* src, int64_t nbytes) = 0;
  virtual void copy_to_host(void* dst, const void* src, int64_t nbytes) = 0;
  // Allocator statistics (include/wick/memory.h); backends without them report zeros.
  virtual MemoryStats memory_stats() { return {}; }
  virtual void reset_peak_memory() {}
  virtual void empty_cache() {}
  // Timing marks (wick/timing.h): an opaque point in the device's queue, and the milliseconds
  // between two marks, waiting for the second. The default reads a steady clock after synchronize().
  virtual std::shared_ptr<void> timing_mark();
  virtual double timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop);

  // ---- streams and transfers (Note [Cross-stream use]) ----
  // A fence after everything queued so far on this backend's stream; nullptr on backends that
  // run synchronously (the CPU), whose work is done when the call returns.
  virtual std::shared_ptr<void> record_fence() { return nullptr; }
  // Makes work queued later on this backend wait for `fence` (from a backend of the same kind,
  // any ordinal) without blocking the host. A null fence is already reached.
  virtual void wait_fence(const std::shared_ptr<void>& fence) { (void)fence; }
  // Queues on this backend a copy of nbytes from src, memory of `from` (the same kind of device,
  // possibly another ordinal), to dst in this device's memory. The caller has ordered it after
  // the source's writer and keeps src alive until it ran. False when the two devices cannot copy
  // directly (no peer access): the caller then stages through host memory.
  virtual bool copy_from_device(void* dst, Runtime& from, const void* src, int64_t nbytes) {
    (void)dst, (void)from, (void)src, (void)nbytes;
    return false;
  }
  // Stream-ordered host copies (Tensor::to(device, true)). copy_from_host_async may return before
  // the copy ran, but src may be reused at once. copy_to_host_async may return before dst is
  // written; dst is valid after synchronize(), and `keep` (dst's storage) lives until then. The
  // defaults copy synchronously.
  virtual void copy_from_host_async(void* dst, const void* src, int64_t nbytes) { copy_from_host(dst, src, nbytes); }
  virtual void copy_to_host_async(void* dst, const void* src, int64_t nbytes, std::shared_ptr<Storage> keep) {
    (void)keep;
    copy_to_host(dst, src, nbytes);
  }

  // The runtime's handle of this backend's stream (Device::native_stream); nullptr on the CPU.
  virtual void* native_stream() const { return nullptr; }
  // Makes work queued later on `stream` (a runtime stream handle of the same kind of device, not
  // wick's) wait for everything queued so far on this backend, without blocking the host
  // (DLPack export). Nothing on backends that run synchronously.
  virtual void order_native_stream(void* stream) { (void)stream; }

  // ---- page-locked staging (file loads, src/io) ----
  // Page-locked host memory that copies to this device read directly, or nullptr on backends whose
  // memory is host memory (the CPU). Throws OutOfMemory.
  virtual void* alloc_pinned(int64_t nbytes) {
    (void)nbytes;
    return nullptr;
  }
  virtual void free_pinned(void* p) noexcept { (void)p; }
  // Queues a copy of nbytes from page-locked `src` (alloc_pinned) to dst; src must stay unchanged
  // until a fence recorded after this call is reached (fence_synchronize).
  virtual void copy_from_pinned_async(void* dst, const void* src, int64_t nbytes) { copy_from_host(dst, src, nbytes); }
  // Blocks the host until `fence` (record_fence) is reached; a null fence is reached already.
  virtual void fence_synchronize(const std::shared_ptr<void>& fence) { (void)fence; }

  // ---- graphs (wick/graph.h; Note [Graph capture] in src/gpu/runtime/runtime.h) ----
  // Whether this backend records graphs; where it does not (the CPU), a Graph runs its body again
  // at each replay.
  virtual bool records_graphs() const { return false; }
  // Whether a capture is under way on this backend's stream: ops that would wait for the device
  // (a read back to the host) refuse, and device-side values cannot be checked on the host.
  virtual bool capturing() const { return false; }
  // Starts recording this backend's stream; until end_capture, memory allocated through this
  // backend belongs to the graph. The default throws UnsupportedError.
  virtual void begin_capture();
  // Ends the recording and returns the executable graph, which owns that memory. With `discard`
  // (after a failure in the body) drops the recording, returns nullptr and never throws.
  virtual std::shared_ptr<void> end_capture(bool discard);
  // Queues the work of a graph end_capture returned.
  virtual void launch_graph(const std::shared_ptr<void>& graph);

  // ---- random generator state (per device) ----
  void set_seed(uint64_t seed);
  // Reserves `blocks` Philox blocks of this device's stream and returns where they start.
  RandomStream take_random(uint64_t blocks);

  // ---- user kernel modules (wick/kernel.h; the cache is src/core/kernel.cpp) ----
  // The defaults (backend_module.cpp) throw UnsupportedError: only GPU backends run device code.
  // Compiles `source` for this device's own architecture into a loadable image; CompileError
  // carrying the compiler's log.
  virtual std::vector<uint8_t> compile_module_image(const std::string& name, const std::string& source,
                                                    const std::vector<std::string>& options);
  // Loads an image (FormatError when it is none for this device). Releasing the handle waits for
  // the device's queued work, then unloads.
  virtual std::shared_ptr<void> load_module_image(const std::string& name, std::span<const uint8_t> image);
  // The kernel `kernel` of a loaded module, or nullptr when it has none; *param_sizes receives the
  // byte size of each parameter, or nothing when the runtime cannot tell.
  virtual void* module_kernel(const std::shared_ptr<void>& module, const std::string& kernel,
                              std::vector<size_t>* param_sizes);
  // Queues `kernel` on this device's stream; args[i] points at the i-th parameter's value.
  virtual void launch_module_kernel(void* kernel, const LaunchConfig& config, void** args, const char* op);

 private:
  std::mutex rng_mu_;
  uint64_t seed_ = 299792458;
  uint64_t counter_ = 0;
};

}  // namespace wick
