// The vendor shim's implementation: the only file that calls the CUDA / HIP runtime.
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "gpu/runtime/runtime.h"
#include "gpu/runtime/vendor.cuh"
#if defined(WICK_GPU_CUDA)
#include <cuda.h>  // driver types for cuLaunchKernel (Note [Kernel launches]); no link against libcuda
#endif
#include "wick/error.h"

namespace wick::WICK_GPU_NS::gpu {

namespace {

using error_t = WICK_VENDOR(Error_t);
constexpr error_t kSuccess = WICK_VENDOR(Success);
#if defined(WICK_GPU_CUDA)
constexpr error_t kOutOfMemory = cudaErrorMemoryAllocation;
#else
constexpr error_t kOutOfMemory = hipErrorOutOfMemory;
#endif

std::string where(int device) { return std::string(kBackendName) + ":" + std::to_string(device); }

[[noreturn]] void raise(error_t e, const char* op, int device) {
  std::string msg = std::string("[") + op + "] " + kBackendName + " error " + WICK_VENDOR(GetErrorName)(e) + ": " +
                    WICK_VENDOR(GetErrorString)(e) + " (" + where(device) + ")";
  if (e == kOutOfMemory) throw OutOfMemory(msg);
  throw DeviceError(msg);
}

void check(error_t e, const char* op, int device) {
  if (e != kSuccess) {
    // Clear the thread's last-error state so that code reading it later (the caller's own
    // cudaGetLastError) does not see this error again (sticky errors stay, and the runtime
    // reports them on every call).
    (void)WICK_VENDOR(GetLastError)();
    raise(e, op, device);
  }
}

WICK_VENDOR(MemcpyKind) native_kind(CopyKind k) {
  switch (k) {
    case CopyKind::HostToDevice:
      return WICK_VENDOR(MemcpyHostToDevice);
    case CopyKind::DeviceToHost:
      return WICK_VENDOR(MemcpyDeviceToHost);
    case CopyKind::DeviceToDevice:
      break;
  }
  return WICK_VENDOR(MemcpyDeviceToDevice);
}

#if defined(WICK_GPU_ROCM)
// "gfx90a:sramecc+:xnack-" -> "gfx90a"
std::string strip_features(const char* arch) {
  std::string s(arch);
  const auto colon = s.find(':');
  return colon == std::string::npos ? s : s.substr(0, colon);
}
#endif

}  // namespace

int device_count() noexcept {
  int n = 0;
  const error_t e = WICK_VENDOR(GetDeviceCount)(&n);
  if (e != kSuccess) {
    (void)WICK_VENDOR(GetLastError)();  // no driver or no device: not an error for wick
    return 0;
  }
  return n;
}

DeviceProperties device_properties(int device) {
#if defined(WICK_GPU_CUDA)
  cudaDeviceProp p{};
#else
  hipDeviceProp_t p{};
#endif
  check(WICK_VENDOR(GetDeviceProperties)(&p, device), "device", device);
  DeviceProperties out;
  out.name = p.name;
#if defined(WICK_GPU_CUDA)
  out.architecture = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  int pools = 0;
  check(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device), "device", device);
#else
  out.architecture = strip_features(p.gcnArchName);
  int pools = 0;
  check(hipDeviceGetAttribute(&pools, hipDeviceAttributeMemoryPoolsSupported, device), "device", device);
#endif
  out.multiprocessors = p.multiProcessorCount;
  out.warp_size = p.warpSize;
  out.max_threads_per_block = p.maxThreadsPerBlock;
  out.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  out.memory_pools = pools != 0;
#if defined(WICK_GPU_CUDA)
  out.shared_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlockOptin);
#else
  out.shared_per_block_optin = static_cast<int64_t>(p.sharedMemPerBlock);  // the whole LDS; no opt-in
#endif
  return out;
}

// Asks which device is current first: every op passes here (GpuBackend::enter), and the query
// costs the host about half what setting the device does.
void set_device(int device) {
  int current = -1;
  if (WICK_VENDOR(GetDevice)(&current) == kSuccess && current == device) return;
  check(WICK_VENDOR(SetDevice)(device), "device", device);
}

void memory_info(int device, int64_t* free_bytes, int64_t* total_bytes) {
  set_device(device);
  size_t f = 0, t = 0;
  check(WICK_VENDOR(MemGetInfo)(&f, &t), "device", device);
  *free_bytes = static_cast<int64_t>(f);
  *total_bytes = static_cast<int64_t>(t);
}

namespace {

#if defined(WICK_GPU_CUDA)
using DriverLaunch = CUresult (*)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                  CUstream, void**, void**);

// cuLaunchKernel from the driver the runtime loaded; null when it cannot be had (Note [Kernel
// launches]).
DriverLaunch driver_launch() {
  static const DriverLaunch fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found{};
#if CUDART_VERSION >= 12050
    const error_t e = cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000, cudaEnableDefault, &found);
#else
    const error_t e = cudaGetDriverEntryPoint("cuLaunchKernel", &p, cudaEnableDefault, &found);
#endif
    if (e != kSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return DriverLaunch{nullptr};
    }
    return reinterpret_cast<DriverLaunch>(p);
  }();
  return fn;
}

// The handle of `entry` in the current context (device `device`), looked up on first use.
void* function_of(const void* entry, KernelSlots& slots, int device) {
  std::atomic<void*>& slot = slots.fn[device];
  void* f = slot.load(std::memory_order_acquire);
  if (f) return f;
  cudaFunction_t found = nullptr;
  if (cudaGetFuncBySymbol(&found, entry) != kSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  slot.store(static_cast<void*>(found), std::memory_order_release);
  return static_cast<void*>(found);
}
#endif

}  // namespace

bool driver_launch_kernel(void* fn, const LaunchDims& d, void* stream, void** args) noexcept {
#if defined(WICK_GPU_CUDA)
  const DriverLaunch launch = driver_launch();
  return fn && launch &&
         launch(static_cast<CUfunction>(fn), d.grid[0], d.grid[1], d.grid[2], d.block[0], d.block[1], d.block[2],
                static_cast<unsigned>(d.shared), static_cast<CUstream>(stream), args, nullptr) == CUDA_SUCCESS;
#else
  (void)fn, (void)d, (void)stream, (void)args;
  return false;
#endif
}

void launch_kernel(const void* entry, KernelSlots& slots, const LaunchDims& d, void* stream, void** args,
                   const char* op, int device) {
  // The runtime's dims, built only where the runtime launches (not before every driver launch).
  const auto dims = [](const unsigned(&v)[3]) { return dim3(v[0], v[1], v[2]); };
#if defined(WICK_GPU_CUDA)
  if (device >= 0 && device < kLaunchSlots && driver_launch_kernel(function_of(entry, slots, device), d, stream, args))
    return;
  // No driver entry point or handle, or the launch failed: the runtime launches it, or names
  // the error.
  check(cudaLaunchKernel(entry, dims(d.grid), dims(d.block), args, d.shared, static_cast<cudaStream_t>(stream)), op,
        device);
#else
  (void)slots;
  check(hipLaunchKernel(entry, dims(d.grid), dims(d.block), args, d.shared, static_cast<hipStream_t>(stream)), op,
        device);
#endif
}

int resident_blocks(const void* kernel, int block, int64_t shared, const char* op, int device) {
  // Asked once per kernel, device and launch shape (one runtime call each time otherwise); per
  // device, as the devices of one process may differ.
  static std::mutex* mu = new std::mutex;
  static auto* known = new std::map<std::tuple<const void*, int, int, int64_t>, int>;
  const auto key = std::make_tuple(kernel, device, block, shared);
  {
    std::lock_guard<std::mutex> g(*mu);
    if (const auto it = known->find(key); it != known->end()) return it->second;
  }
  int n = 0;
  check(WICK_VENDOR(OccupancyMaxActiveBlocksPerMultiprocessor)(&n, kernel, block, static_cast<size_t>(shared)), op,
        device);
  std::lock_guard<std::mutex> g(*mu);
  (*known)[key] = n;
  return n;
}

void allow_dynamic_shared(const void* kernel, int64_t bytes, const char* op, int device) {
  // The attributes belong to the kernel on its device: set them once per size increase, not at
  // every launch (two runtime calls each).
  static std::mutex* mu = new std::mutex;
  static auto* allowed = new std::map<std::pair<const void*, int>, int64_t>;
  std::lock_guard<std::mutex> g(*mu);
  int64_t& have = (*allowed)[{kernel, device}];
  if (have >= bytes) return;
  check(WICK_VENDOR(FuncSetAttribute)(kernel, WICK_VENDOR(FuncAttributeMaxDynamicSharedMemorySize),
                                      static_cast<int>(bytes)),
        op, device);
#if defined(WICK_GPU_CUDA)
  // L1 and shared memory share one array on NVIDIA; AMD's LDS is separate (no carve-out).
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared),
        op, device);
#endif
  have = bytes;
}

int kernel_ptx_version(const void* kernel) noexcept {
#if defined(WICK_GPU_CUDA)
  cudaFuncAttributes fa{};
  const bool ok = cudaFuncGetAttributes(&fa, kernel) == cudaSuccess;
  (void)cudaGetLastError();
  return ok ? fa.ptxVersion : 0;
#else
  (void)kernel;
  return 0;
#endif
}

// ---- streams and events ----------------------------------------------------------------------

Stream::Stream(int device) : device_(device) {
  set_device(device);
  native_stream_t s = nullptr;
  check(WICK_VENDOR(StreamCreateWithFlags)(&s, WICK_VENDOR(StreamNonBlocking)), "stream", device);
  handle_ = s;
}

Stream::~Stream() {
  if (handle_) (void)WICK_VENDOR(StreamDestroy)(native_stream(handle_));
}

void Stream::synchronize(const char* op) const {
  check(WICK_VENDOR(StreamSynchronize)(native_stream(handle_)), op, device_);
}

bool Stream::query(const char* op) const {
  const error_t e = WICK_VENDOR(StreamQuery)(native_stream(handle_));
  if (e == WICK_VENDOR(ErrorNotReady)) {
    (void)WICK_VENDOR(GetLastError)();  // not an error: leave none behind in the last-error state
    return false;
  }
  check(e, op, device_);
  return true;
}

void Stream::wait(const Event& e) const {
  check(WICK_VENDOR(StreamWaitEvent)(native_stream(handle_), static_cast<WICK_VENDOR(Event_t)>(e.native()), 0), "wait",
        device_);
}

Event::Event(int device, bool timing) : device_(device) {
  set_device(device);
  WICK_VENDOR(Event_t) e = nullptr;
  check(WICK_VENDOR(EventCreateWithFlags)(&e, timing ? WICK_VENDOR(EventDefault) : WICK_VENDOR(EventDisableTiming)),
        "event", device);
  handle_ = e;
}

Event::~Event() {
  if (handle_) (void)WICK_VENDOR(EventDestroy)(static_cast<WICK_VENDOR(Event_t)>(handle_));
}

void Event::record(const Stream& s) {
  check(WICK_VENDOR(EventRecord)(static_cast<WICK_VENDOR(Event_t)>(handle_), native_stream(s.native())), "event",
        device_);
}

void Event::synchronize() const {
  check(WICK_VENDOR(EventSynchronize)(static_cast<WICK_VENDOR(Event_t)>(handle_)), "event", device_);
}

float Event::elapsed_ms(const Event& start) const {
  float ms = 0;
  check(WICK_VENDOR(EventElapsedTime)(&ms, static_cast<WICK_VENDOR(Event_t)>(start.handle_),
                                      static_cast<WICK_VENDOR(Event_t)>(handle_)),
        "event", device_);
  return ms;
}

void stream_wait_native(void* native, const Event& e) {
  check(WICK_VENDOR(StreamWaitEvent)(native_stream(native), static_cast<WICK_VENDOR(Event_t)>(e.native()), 0), "dlpack",
        e.device());
}

#if defined(WICK_GPU_ROCM)
namespace {
// hipLaunchHostFunc is declared by HIP 5.2's headers but missing from its library; a stream
// callback does the same (it runs after the preceding work, and the following work waits for it).
struct HostFunc {
  void (*fn)(void*);
  void* arg;
};
void run_host_func(hipStream_t, hipError_t, void* p) {
  const HostFunc f = *static_cast<HostFunc*>(p);
  delete static_cast<HostFunc*>(p);
  f.fn(f.arg);
}
}  // namespace
#endif

void launch_host_func(const Stream& s, void (*fn)(void*), void* arg) {
#if defined(WICK_GPU_CUDA)
  check(cudaLaunchHostFunc(native_stream(s.native()), fn, arg), "host_func", s.device());
#else
  auto* f = new HostFunc{fn, arg};
  const error_t e = hipStreamAddCallback(native_stream(s.native()), &run_host_func, f, 0);
  if (e != kSuccess) delete f;
  check(e, "host_func", s.device());
#endif
}

// ---- memory ----------------------------------------------------------------------------------

void* host_alloc_pinned(int64_t nbytes, int device) {
  set_device(device);
  void* p = nullptr;
  // Portable: pinned for every device of the process, so one staging block serves them all.
  // Mapped: kernels may write it directly, through the same pointer (unified addressing).
#if defined(WICK_GPU_CUDA)
  const error_t e = cudaHostAlloc(&p, static_cast<size_t>(nbytes), cudaHostAllocPortable | cudaHostAllocMapped);
#else
  const error_t e = hipHostMalloc(&p, static_cast<size_t>(nbytes), hipHostMallocPortable | hipHostMallocMapped);
#endif
  check(e, "pinned_alloc", device);
  return p;
}

void host_free_pinned(void* p) noexcept {
#if defined(WICK_GPU_CUDA)
  const error_t e = cudaFreeHost(p);
#else
  const error_t e = hipHostFree(p);
#endif
  if (e != kSuccess) (void)WICK_VENDOR(GetLastError)();
}

bool can_access_peer(int device, int peer) {
  int can = 0;
  check(WICK_VENDOR(DeviceCanAccessPeer)(&can, device, peer), "peer", device);
  return can != 0;
}

void enable_peer_access(int device, int peer) {
  set_device(device);
  const error_t e = WICK_VENDOR(DeviceEnablePeerAccess)(peer, 0);
  if (e == WICK_VENDOR(ErrorPeerAccessAlreadyEnabled)) {
    (void)WICK_VENDOR(GetLastError)();
    return;
  }
  check(e, "peer", device);
}

MemoryPool::MemoryPool(int device) : device_(device) {
  if (!device_properties(device).memory_pools) return;  // synchronous fallback
  set_device(device);
  WICK_VENDOR(MemPoolProps) props{};
  props.allocType = WICK_VENDOR(MemAllocationTypePinned);
  props.handleTypes = WICK_VENDOR(MemHandleTypeNone);
  props.location.type = WICK_VENDOR(MemLocationTypeDevice);
  props.location.id = device;
  WICK_VENDOR(MemPool_t) pool = nullptr;
  check(WICK_VENDOR(MemPoolCreate)(&pool, &props), "alloc", device);
  // Keep freed memory in the pool: without a threshold the pool gives memory back to the driver
  // at every synchronisation, and the next allocation pays for mapping it again.
  uint64_t threshold = std::numeric_limits<uint64_t>::max();
  check(WICK_VENDOR(MemPoolSetAttribute)(pool, WICK_VENDOR(MemPoolAttrReleaseThreshold), &threshold), "alloc", device);
  pool_ = pool;
}

MemoryPool::~MemoryPool() {
  if (pool_) (void)WICK_VENDOR(MemPoolDestroy)(static_cast<WICK_VENDOR(MemPool_t)>(pool_));
}

void* MemoryPool::allocate(int64_t nbytes, const Stream& s) {
  void* p = nullptr;
  const size_t n = static_cast<size_t>(nbytes);
  const error_t e = pool_ ? WICK_VENDOR(MallocFromPoolAsync)(&p, n, static_cast<WICK_VENDOR(MemPool_t)>(pool_),
                                                             native_stream(s.native()))
                          : WICK_VENDOR(Malloc)(&p, n);
  if (e == kOutOfMemory) {
    (void)WICK_VENDOR(GetLastError)();  // not sticky: clear it so the device stays usable
    return nullptr;
  }
  check(e, "alloc", device_);
  return p;
}

void MemoryPool::deallocate(void* p, const Stream& s) noexcept {
  if (!p) return;
  // Errors are dropped: this runs from Storage destructors, also after the runtime has begun
  // unloading at process exit, when there is nothing useful left to do with them.
  const error_t e = pool_ ? WICK_VENDOR(FreeAsync)(p, native_stream(s.native())) : WICK_VENDOR(Free)(p);
  if (e != kSuccess) (void)WICK_VENDOR(GetLastError)();
}

int64_t MemoryPool::reserved() const {
  if (!pool_) return 0;
  uint64_t v = 0;
  check(WICK_VENDOR(MemPoolGetAttribute)(static_cast<WICK_VENDOR(MemPool_t)>(pool_),
                                         WICK_VENDOR(MemPoolAttrReservedMemCurrent), &v),
        "memory_stats", device_);
  return static_cast<int64_t>(v);
}

int64_t MemoryPool::used() const {
  if (!pool_) return 0;
  uint64_t v = 0;
  check(WICK_VENDOR(MemPoolGetAttribute)(static_cast<WICK_VENDOR(MemPool_t)>(pool_),
                                         WICK_VENDOR(MemPoolAttrUsedMemCurrent), &v),
        "memory_stats", device_);
  return static_cast<int64_t>(v);
}

void MemoryPool::trim(int64_t keep) {
  if (!pool_) return;
  check(WICK_VENDOR(MemPoolTrimTo)(static_cast<WICK_VENDOR(MemPool_t)>(pool_), static_cast<size_t>(keep)),
        "empty_cache", device_);
}

void MemoryPool::grant_access(int peer) {
  if (!pool_) return;  // synchronous allocations follow enable_peer_access
  WICK_VENDOR(MemAccessDesc) desc{};
  desc.location.type = WICK_VENDOR(MemLocationTypeDevice);
  desc.location.id = peer;
  desc.flags = WICK_VENDOR(MemAccessFlagsProtReadWrite);
  check(WICK_VENDOR(MemPoolSetAccess)(static_cast<WICK_VENDOR(MemPool_t)>(pool_), &desc, 1), "peer", device_);
}

// ---- graphs (Note [Graph capture]) -------------------------------------------------------------

void begin_capture(const Stream& s) {
  check(WICK_VENDOR(StreamBeginCapture)(native_stream(s.native()), WICK_VENDOR(StreamCaptureModeRelaxed)), "graph",
        s.device());
}

void* end_capture(const Stream& s, const char* op) {
  WICK_VENDOR(Graph_t) graph = nullptr;
  check(WICK_VENDOR(StreamEndCapture)(native_stream(s.native()), &graph), op, s.device());
  WICK_VENDOR(GraphExec_t) exec = nullptr;
#if defined(WICK_GPU_CUDA)
  const error_t e = cudaGraphInstantiate(&exec, graph, 0);
#else
  const error_t e = hipGraphInstantiate(&exec, graph, nullptr, nullptr, 0);
#endif
  (void)WICK_VENDOR(GraphDestroy)(graph);  // the executable keeps what it needs
  check(e, op, s.device());
  return exec;
}

void abort_capture(const Stream& s) noexcept {
  WICK_VENDOR(StreamCaptureStatus) status{};
  if (WICK_VENDOR(StreamIsCapturing)(native_stream(s.native()), &status) != kSuccess ||
      status == WICK_VENDOR(StreamCaptureStatusNone)) {
    (void)WICK_VENDOR(GetLastError)();
    return;
  }
  WICK_VENDOR(Graph_t) graph = nullptr;
  if (WICK_VENDOR(StreamEndCapture)(native_stream(s.native()), &graph) == kSuccess && graph)
    (void)WICK_VENDOR(GraphDestroy)(graph);
  (void)WICK_VENDOR(GetLastError)();  // an invalidated capture reports its error here: dropped
}

void launch_graph(void* graph, const Stream& s, const char* op) {
  check(WICK_VENDOR(GraphLaunch)(static_cast<WICK_VENDOR(GraphExec_t)>(graph), native_stream(s.native())), op,
        s.device());
}

void destroy_graph(void* graph) noexcept {
  if (graph && WICK_VENDOR(GraphExecDestroy)(static_cast<WICK_VENDOR(GraphExec_t)>(graph)) != kSuccess)
    (void)WICK_VENDOR(GetLastError)();
}

void* device_malloc(int64_t nbytes, int device) {
  set_device(device);
  void* p = nullptr;
  const error_t e = WICK_VENDOR(Malloc)(&p, static_cast<size_t>(nbytes));
  if (e == kOutOfMemory) {
    (void)WICK_VENDOR(GetLastError)();
    return nullptr;
  }
  check(e, "alloc", device);
  return p;
}

void device_free(void* p) noexcept {
  if (p && WICK_VENDOR(Free)(p) != kSuccess) (void)WICK_VENDOR(GetLastError)();
}

void memcpy_async(void* dst, const void* src, int64_t nbytes, CopyKind kind, const Stream& s) {
  if (nbytes <= 0) return;
  check(WICK_VENDOR(MemcpyAsync)(dst, src, static_cast<size_t>(nbytes), native_kind(kind), native_stream(s.native())),
        "copy", s.device());
}

void memcpy_sync(void* dst, const void* src, int64_t nbytes, CopyKind kind, const Stream& s) {
  memcpy_async(dst, src, nbytes, kind, s);
  s.synchronize("copy");
}

void memcpy_peer_async(void* dst, int dst_device, const void* src, int src_device, int64_t nbytes, const Stream& s) {
  if (nbytes <= 0) return;
  check(WICK_VENDOR(MemcpyPeerAsync)(dst, dst_device, src, src_device, static_cast<size_t>(nbytes),
                                     native_stream(s.native())),
        "copy", s.device());
}

}  // namespace wick::WICK_GPU_NS::gpu
