// Graph capture on the GPU backend: the stream's recording (runtime.h, Note [Graph capture]) and
// the memory its kernels use.
//
// Note [Graph arenas]
// A recorded kernel writes the same addresses at every replay, so the memory of a capture must
// belong to the graph alone: a block that went back to the block cache or the pool could be handed
// to another tensor, which each replay would then overwrite. So while a capture is under way,
// raw_alloc takes blocks from the capture's arena: a block the capture freed earlier (the
// recording is one chain of work in stream order, so reuse after a free is ordered as the pool's
// would be) or new memory from device_malloc. A block allocated before the capture and freed
// during it (the recording may read it) is adopted: freed only with the arena. Blocks still held
// when the capture ends are the graph's outputs; their tensors keep the arena alive (escaped_),
// and their frees return nothing until the graph and every such tensor are gone. Then the
// arena waits for the device and frees its memory; during another capture it hands the blocks to
// that capture's arena instead, since waiting would break the capture.
#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "gpu/gpu_backend.h"
#include "wick/error.h"

namespace wick::WICK_GPU_NS {

struct GraphArena {
  GpuBackend* backend = nullptr;
  std::unordered_map<void*, int64_t> blocks;  // from device_malloc, with their sizes
  std::multimap<int64_t, void*> free;         // by size: blocks the capture has freed
  std::vector<void*> adopted;                 // blocks allocated before the capture, freed in it
  ~GraphArena();
};

namespace {

// The executable graph and the arena its kernels use.
struct Recording {
  void* graph = nullptr;
  std::shared_ptr<GraphArena> arena;
  ~Recording() { gpu::destroy_graph(graph); }
};

constexpr int64_t kArenaAlign = 256;

}  // namespace

GraphArena::~GraphArena() { backend->release_arena(*this); }

bool GpuBackend::capturing() const {
  std::lock_guard<std::mutex> g(shared_.mu);
  return capture_ != nullptr;
}

void GpuBackend::refuse_in_capture(const char* op) const {
  if (capturing())
    throw InvalidArgument(std::string("[") + op + "] waits for the device, which cannot happen while " + location() +
                          " records a graph (wick/graph.h)");
}

bool GpuBackend::arena_alloc(int64_t nbytes, void** out) {
  if (!capture_) return false;
  GraphArena& a = *capture_;
  const int64_t n = (std::max<int64_t>(nbytes, 1) + kArenaAlign - 1) / kArenaAlign * kArenaAlign;
  // The smallest free block that fits, unless it would waste more than half of itself.
  const auto it = a.free.lower_bound(n);
  if (it != a.free.end() && it->first <= 2 * n) {
    *out = it->second;
    a.free.erase(it);
    return true;
  }
  void* p = nbytes <= props_.total_memory ? gpu::device_malloc(n, ordinal_) : nullptr;
  if (!p)
    throw OutOfMemory("[alloc] cannot allocate " + std::to_string(nbytes) + " bytes for a graph on " + location());
  a.blocks.emplace(p, n);
  shared_.in_use += n;
  shared_.peak = std::max(shared_.peak, shared_.in_use);
  *out = p;
  return true;
}

bool GpuBackend::arena_free(void* p, std::shared_ptr<GraphArena>* release) {
  if (capture_) {
    const auto it = capture_->blocks.find(p);
    if (it != capture_->blocks.end()) {
      capture_->free.emplace(it->second, p);
      return true;
    }
  }
  const auto e = escaped_.find(p);
  if (e != escaped_.end()) {
    *release = std::move(e->second);
    escaped_.erase(e);
    return true;
  }
  if (capture_ && shared_.sizes.count(p)) {  // made before the capture, which may read it
    capture_->adopted.push_back(p);
    return true;
  }
  return false;
}

void GpuBackend::begin_capture() {
  enter("graph");
  {
    std::lock_guard<std::mutex> g(shared_.mu);
    if (capture_) throw InvalidArgument("[graph] " + location() + " is already recording a graph");
    capture_ = std::make_shared<GraphArena>();
    capture_->backend = this;
  }
  try {
    gpu::begin_capture(stream_);
  } catch (...) {
    std::lock_guard<std::mutex> g(shared_.mu);
    capture_.reset();
    throw;
  }
}

std::shared_ptr<void> GpuBackend::end_capture(bool discard) {
  std::shared_ptr<GraphArena> arena;
  {
    std::lock_guard<std::mutex> g(shared_.mu);
    arena = std::move(capture_);
  }
  if (!arena) return nullptr;
  gpu::set_device(ordinal_);
  if (discard) {
    gpu::abort_capture(stream_);
    return nullptr;  // the arena goes with its last tensor
  }
  void* graph = nullptr;
  try {
    graph = gpu::end_capture(stream_, "graph");
  } catch (...) {
    gpu::abort_capture(stream_);
    throw;
  }
  auto rec = std::make_shared<Recording>();
  rec->graph = graph;
  rec->arena = arena;
  std::lock_guard<std::mutex> g(shared_.mu);
  std::unordered_set<void*> freed;
  for (const auto& [size, p] : arena->free) freed.insert(p);
  for (const auto& [p, size] : arena->blocks)
    if (!freed.count(p)) escaped_[p] = arena;  // still held: a graph output
  return rec;
}

void GpuBackend::launch_graph(const std::shared_ptr<void>& graph) {
  refuse_in_capture("graph replay");
  enter("graph");
  gpu::launch_graph(static_cast<Recording*>(graph.get())->graph, stream_, "graph");
}

void GpuBackend::release_arena(GraphArena& a) {
  std::vector<void*> adopted;
  {
    std::lock_guard<std::mutex> g(shared_.mu);
    if (capture_) {  // waiting now would break that capture: its arena takes the memory over
      for (auto& [p, size] : a.blocks) {
        capture_->blocks.emplace(p, size);
        capture_->free.emplace(size, p);
      }
      for (void* p : a.adopted) capture_->adopted.push_back(p);
      return;
    }
    for (const auto& [p, size] : a.blocks) shared_.in_use -= size;
    adopted = std::move(a.adopted);
  }
  try {
    gpu::set_device(ordinal_);
    stream_.synchronize("graph");
  } catch (...) {
    // A fault in earlier work, or process exit: the frees below are best effort.
  }
  for (const auto& [p, size] : a.blocks) gpu::device_free(p);
  for (void* p : adopted) raw_free(p);
}

}  // namespace wick::WICK_GPU_NS
