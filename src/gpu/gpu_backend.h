// The GPU backend: one object per device handle (Note [Device handles] in wick/device.h), each with
// its own stream; the handles of one GPU share its memory pool and statistics (GpuShared).
// Compiled twice (Note [One GPU source, two builds] in src/gpu/config.h): wick::cuda::GpuBackend
// and wick::rocm::GpuBackend.
//
// Note [GPU stream order]
// Every operation of a backend runs on its one stream, so work on a device is ordered as the host
// issued it. Memory is allocated and freed stream-ordered on that stream: a block freed by a
// Storage destructor goes back to the pool only after the kernels queued before the free, so the
// host never waits on a free. The host waits only where it must: copy_to_host (the caller reads
// the buffer), copy_from_host (the caller may reuse its buffer), synchronize and empty_cache.
// Between the streams of several handles, events keep the order: Note [Cross-stream use] in
// src/backend/backend.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/block_classes.h"
#include "gpu/config.h"
#include "gpu/kernels/launch.h"
#include "gpu/runtime/runtime.h"

namespace wick::WICK_GPU_NS {

// Note [GPU block cache]
// The stream-ordered pool costs two runtime calls per temporary (allocate and free), more host
// time than a whole small op, and device time as well. So each handle keeps the blocks up to
// blocks::kMax (64 MiB) that it frees, in the size classes of src/backend/block_classes.h (powers
// of two to 1 MiB, then eight per doubling: a block is at most 12.5% larger than asked), and hands
// them out again without any runtime call (raw_alloc sets the device only when it reaches the
// pool). A block is only ever reused on the stream that freed it, the one it was allocated and
// used on (Note [GPU stream order]; a storage's free already waits for the other streams that used
// it, Note [Cross-stream use]), so reuse follows the free in stream order as the pool's would. Each
// handle caches at most cache_limit bytes (1 GiB, or an eighth of the device's memory if less; a
// free past that goes to the pool); an allocation that fails and empty_cache give every handle's
// cached blocks back to the pool first. Only with stream-ordered pools (the fallback frees at once).
inline constexpr int64_t kBlockCacheMax = int64_t{1} << 30;

// The blocks one handle freed on its stream, by size class.
struct BlockCache {
  const gpu::Stream* stream = nullptr;
  std::array<std::vector<void*>, blocks::kClasses> free;
  int64_t bytes = 0;
};

// What the handles of one GPU share: its properties, its memory pool and the memory statistics.
struct GpuShared {
  explicit GpuShared(int ordinal);
  gpu::DeviceProperties props;
  gpu::MemoryPool pool;
  std::mutex mu;  // guards the statistics and the cached blocks below
  std::unordered_map<void*, int64_t> sizes;
  int64_t in_use = 0;
  int64_t peak = 0;
  // The bytes each handle's BlockCache may hold (Note [GPU block cache]).
  int64_t cache_limit = 0;
  std::vector<std::unique_ptr<BlockCache>> caches;  // one per handle (handles live for ever)
};

struct GraphArena;  // gpu_graph.cpp

class GpuBackend final : public Backend {
 public:
  // Handle `id` of GPU `ordinal` (0: the default handle), with a new stream.
  GpuBackend(int ordinal, uint32_t id, GpuShared& shared);

  Device device() const override;
  DeviceInfo info() const override;
  void synchronize() override;

  void* raw_alloc(int64_t nbytes) override;
  void raw_free(void* p) override;
  void copy_from_host(void* dst, const void* src, int64_t nbytes) override;
  void copy_to_host(void* dst, const void* src, int64_t nbytes) override;
  MemoryStats memory_stats() override;
  void reset_peak_memory() override;
  void empty_cache() override;
  std::shared_ptr<void> timing_mark() override;  // an event recorded on the stream
  double timing_elapsed_ms(const std::shared_ptr<void>& start, const std::shared_ptr<void>& stop) override;
  // Streams and transfers (gpu_streams.cpp).
  std::shared_ptr<void> record_fence() override;
  void wait_fence(const std::shared_ptr<void>& fence) override;
  bool copy_from_device(void* dst, Runtime& from, const void* src, int64_t nbytes) override;
  void copy_from_host_async(void* dst, const void* src, int64_t nbytes) override;
  void* alloc_pinned(int64_t nbytes) override;
  void free_pinned(void* p) noexcept override;
  void copy_from_pinned_async(void* dst, const void* src, int64_t nbytes) override;
  void fence_synchronize(const std::shared_ptr<void>& fence) override;
  void copy_to_host_async(void* dst, const void* src, int64_t nbytes, std::shared_ptr<Storage> keep) override;
  void* native_stream() const override { return stream_.native(); }
  void order_native_stream(void* stream) override;

  // Graphs (gpu_graph.cpp, Note [Graph arenas]).
  bool records_graphs() const override { return true; }
  bool capturing() const override;
  void begin_capture() override;
  std::shared_ptr<void> end_capture(bool discard) override;
  void launch_graph(const std::shared_ptr<void>& graph) override;
  // Throws InvalidArgument naming `op` while a capture is under way: op would wait for the device.
  void refuse_in_capture(const char* op) const;
  // Frees the memory of a graph arena whose last owner went (Note [Graph arenas]).
  void release_arena(GraphArena& a);

  // User kernel modules (gpu_module.cpp over runtime/module.h).
  std::vector<uint8_t> compile_module_image(const std::string& name, const std::string& source,
                                            const std::vector<std::string>& options) override;
  std::shared_ptr<void> load_module_image(const std::string& name, std::span<const uint8_t> image) override;
  void* module_kernel(const std::shared_ptr<void>& module, const std::string& kernel,
                      std::vector<size_t>* param_sizes) override;
  void launch_module_kernel(void* kernel, const LaunchConfig& config, void** args, const char* op) override;

  // The ops (backend_ops.h): generated in gpu_ops.cpp, each forwarding to its launcher in
  // kernels/<family>.cu (kernels/launch.h).
#define WICK_X(name, params, args) void name params override;
  WICK_BACKEND_OPS(WICK_X)
#undef WICK_X

  int ordinal() const { return ordinal_; }
  const gpu::DeviceProperties& properties() const { return props_; }
  const gpu::Stream& stream() const { return stream_; }

  // Makes this device current on the calling thread and describes a launch on its stream.
  kern::LaunchCtx enter(const char* op) const;
  std::string location() const;

 private:
  // Gives every handle's cached blocks back to the pool and waits for their streams to reach the
  // frees (Note [GPU block cache]).
  void drain_block_caches();
  // Note [Graph arenas]: an allocation or free during a capture, or the free of a block a
  // graph's arena still owns. Return false when the block is none of theirs. The caller holds
  // shared_.mu, and drops *release (an arena's last owner, maybe) after releasing it.
  bool arena_alloc(int64_t nbytes, void** out);
  bool arena_free(void* p, std::shared_ptr<GraphArena>* release);

  int ordinal_;
  uint32_t id_;
  GpuShared& shared_;
  gpu::DeviceProperties props_;
  gpu::Stream stream_;
  BlockCache* cache_ = nullptr;  // owned by shared_.caches
  // Guarded by shared_.mu: the arena of the capture under way, and the arena of each block that
  // outlived its capture (a graph output), kept alive by the tensors that hold such blocks.
  std::shared_ptr<GraphArena> capture_;
  std::unordered_map<void*, std::shared_ptr<GraphArena>> escaped_;
};

// The provider src/backend/backend.cpp asks for devices (as wick::cuda_provider / rocm_provider).
const GpuBackendProvider& provider();
// The state shared by the handles of GPU `ordinal` (made on first use, never destroyed).
GpuShared& shared_state(int ordinal);
// Gives the cached pinned staging blocks of the asynchronous host copies back (gpu_streams.cpp).
void release_staging();

// Slots of pinned host memory that a kernel on b's stream writes while it runs, each once, and
// that the host reads as soon as they are written, without waiting for the kernel to finish (the
// id check of index_select, Note [GPU index kernels]; gpu_streams.cpp). Made inside an op (after
// its enter()); every slot holds kPending until the kernel writes it.
class PinnedSlots {
 public:
  static constexpr unsigned long long kPending = ~0ULL;
  PinnedSlots(GpuBackend& b, int count);
  ~PinnedSlots();  // unless every slot was read written: waits for the stream first
  PinnedSlots(const PinnedSlots&) = delete;
  PinnedSlots& operator=(const PinnedSlots&) = delete;
  unsigned long long* data() const { return slots_; }  // for kernels
  // Waits until no slot holds kPending and returns the least value. Throws DeviceError for a
  // fault in the stream's work, and when the stream finished with a slot still unwritten.
  unsigned long long wait_least(const char* op);

 private:
  const gpu::Stream& s_;
  unsigned long long* slots_ = nullptr;
  int count_ = 0;
  int64_t capacity_ = 0;
  bool read_ = false;
};

}  // namespace wick::WICK_GPU_NS
