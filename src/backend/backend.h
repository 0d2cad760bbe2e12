// The backend interface: what every device implements. A Backend is a Runtime (runtime.h: device,
// memory, streams, RNG, modules) plus one method per entry of WICK_BACKEND_OPS (backend_ops.h).
//
// The front end (src/core) has already checked shapes, dtypes and devices, broadcast the inputs
// (stride-0 views) and allocated the outputs when it calls a backend method, so a backend method
// only computes. Inputs and outputs are TensorArgs: a base pointer of a storage plus a layout (any
// strides, offset in elements) and a dtype. Outputs allocated by the front end are contiguous, but
// a backend must accept any output layout (const_set and copies write into user views).
//
// Exceptions a backend may raise itself: IndexError for out-of-range ids (checked before anything
// is written), OutOfMemory from alloc, UnsupportedError for an op x dtype it does not implement.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "backend/backend_ops.h"
#include "backend/op_params.h"
#include "backend/runtime.h"
#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/kernel.h"
#include "wick/layout.h"
#include "wick/memory.h"
#include "wick/ops.h"
#include "wick/tensor.h"

namespace wick {

class Backend;

// Note [Cross-stream use]
// Every GPU handle (Note [Device handles] in wick/device.h) has its own stream, and a storage is
// allocated and freed stream-ordered on the stream of the handle that allocated it. When another
// handle of the same GPU (or Tensor::to, from any GPU) uses it, three orders are kept with events,
// never blocking the host:
//   - read after write: the user's stream waits for a fence after the last write (Storage::use_on);
//   - write after read: an in-place write waits for every stream that read it since (before_write);
//   - free after use: the owner's stream waits for every stream that used it (~Storage).
// Fences are recorded lazily, when another stream first asks for one (a fence taken then on the
// writer's stream comes after the write, which the host issued first); until a second stream
// touches a storage it carries no bookkeeping, so single-stream programs pay nothing. The front
// end calls use_on from front::check_same_device (the op's runner is its first tensor; skipped
// under set_event_tracking(false)) and before_write before in-place writes.
struct StreamUses {
  Backend* writer = nullptr;      // the stream of the last write (the owner until another writes)
  std::shared_ptr<void> written;  // fence after that write; null until a reader asks for it
  std::vector<Backend*> readers;  // other streams that waited for `written` and read since
};

// A block of device memory. Freed through its backend when the last Tensor using it goes away.
class Storage {
 public:
  Storage(Backend* backend, void* data, int64_t nbytes) : backend_(backend), data_(data), nbytes_(nbytes) {}
  // Memory wick did not allocate (a file mapping): `owner` keeps it alive and releases it after
  // the last Tensor goes; the backend never frees it. A read-only storage refuses in-place writes
  // (front::before_write) and must not be an op's output.
  Storage(Backend* backend, void* data, int64_t nbytes, std::shared_ptr<const void> owner, bool read_only)
      : backend_(backend), data_(data), nbytes_(nbytes), owner_(std::move(owner)), read_only_(read_only) {}
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  int64_t nbytes() const { return nbytes_; }
  Backend& backend() const { return *backend_; }
  bool read_only() const { return read_only_; }

  // Note [Cross-stream use]: orders a read by `runner` after the last write, and a later write or
  // the free after that read. Costs one comparison when runner is the only stream involved.
  void use_on(Backend& runner);
  // Before `writer` writes in place: waits for the other streams' reads and write.
  void before_write(Backend& writer);

 private:
  StreamUses& uses();  // created on first need; caller holds the tracking mutex

  Backend* backend_;
  void* data_;
  int64_t nbytes_;
  std::shared_ptr<const void> owner_;  // external memory only
  bool read_only_ = false;
  std::atomic<StreamUses*> uses_{nullptr};
};

struct TensorArg {
  void* data = nullptr;  // base of the storage; element (i0, i1, ...) is at offset + sum(ik * stride_k)
  DType dtype = DType::F32;
  Layout layout;

  TensorArg() = default;
  TensorArg(void* d, DType t, Layout l) : data(d), dtype(t), layout(std::move(l)) {}
  explicit TensorArg(const Tensor& t);
  // t broadcast to `shape` (Layout::broadcast_as), without an intermediate Tensor.
  TensorArg(const Tensor& t, const Shape& shape);
  bool defined() const { return data != nullptr || layout.numel() == 0; }
  const Shape& shape() const { return layout.shape(); }
  int64_t numel() const { return layout.numel(); }
  template <class T>
  T* ptr() const {
    return static_cast<T*>(data) + layout.offset();
  }
};

// A rope table (cos or sin, [T, D/2]) seen along x [..., T, D] of rank `rank`: stride 0 on every
// leading dim but T, the table's own strides on T and on the last dim.
inline Strides rope_table_strides(const TensorArg& table, size_t rank) {
  Strides s(rank, 0);
  s[rank - 2] = table.layout.stride(0);
  s[rank - 1] = table.layout.stride(1);
  return s;
}

// A device's ops: the runtime plus one method per entry of WICK_BACKEND_OPS (backend_ops.h),
// each serving a kind of the op table.
class Backend : public Runtime {
 public:
  // Memory for a tensor, freed through this backend when the last user goes away.
  std::shared_ptr<Storage> alloc(int64_t nbytes);

  // Whether this backend runs op on dtype. The table's row decides, minus what the backend marked
  // unsupported (a backend whose kernels exist only for some architectures marks the others when
  // it starts). The front end raises UnsupportedError for an unsupported pair, and `wick check`
  // reports it as unsupported rather than passed.
  bool supports(Op op, DType dtype) const {
    return op_defined_for(op, dtype) && (unsupported_[static_cast<int>(op)] & dtype_bit(dtype)) == 0;
  }
  // Marks (or with `on` false, clears) the dtypes of `mask` as unsupported for op.
  void mark_unsupported(Op op, uint32_t mask, bool on = true) {
    uint32_t& m = unsupported_[static_cast<int>(op)];
    m = on ? (m | mask) : (m & ~mask);
  }

#define WICK_X(name, params, args) virtual void name params = 0;
  WICK_BACKEND_OPS(WICK_X)
#undef WICK_X

 private:
  std::array<uint32_t, kNumOps> unsupported_{};
};

// srcs[i] copied into dsts[i] one cast at a time: copy_batch for backends without a batched copy.
void copy_pairs(Backend& b, std::span<const TensorArg> srcs, std::span<const TensorArg> dsts);

// The backend of a device handle; throws DeviceError when wick was built without it or it is
// absent.
Backend& backend_for(const Device& device);
// Makes the backend of a new handle `id` of GPU (kind, ordinal) (Device::new_stream).
void add_gpu_handle(DeviceKind kind, int ordinal, uint32_t id);
// Whether handle `id` of GPU (kind, ordinal) exists (id 0 does when the GPU does).
bool gpu_handle_exists(DeviceKind kind, int ordinal, uint32_t id);

// Registration of GPU backends (each GPU build provides these; see backend_for in backend.cpp).
struct GpuBackendProvider {
  const char* name;  // "cuda" / "rocm"
  int (*device_count)();
  Backend* (*get)(int ordinal);  // the default handle, made on first use, never destroyed
  // A new handle of GPU `ordinal` with its own stream, sharing the default handle's memory pool;
  // never destroyed (Storages of static Tensors may outlive static destructors).
  Backend* (*create)(int ordinal, uint32_t id);
};

}  // namespace wick
