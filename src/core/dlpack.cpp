// Tensors over memory wick did not allocate, the public pointers and streams, and DLPack export
// and import (wick/dlpack.h).
#include "wick/dlpack.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "wick/error.h"

namespace wick {

namespace {

// Bytes from the first element to one past the last, for non-negative strides; 0 when empty.
int64_t span_bytes(const Shape& shape, const Strides& strides, DType dtype, const char* op) {
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0 || strides[i] < 0)
      throw InvalidArgument(std::string("[") + op + "] shape " + shape.str() + " with strides " + Shape(strides).str() +
                            ": sizes and strides must be >= 0");
    if (shape[i] == 0) return 0;
    last += (shape[i] - 1) * strides[i];
  }
  return (last + 1) * dtype_size(dtype);
}

Tensor wrap(void* data, const Shape& shape, const Strides& strides, DType dtype, const Device& device,
            std::shared_ptr<const void> owner, bool read_only, const char* op) {
  if (strides.size() != shape.size())
    throw InvalidArgument(std::string("[") + op + "] " + std::to_string(strides.size()) + " strides for shape " +
                          shape.str());
  const int64_t nbytes = span_bytes(shape, strides, dtype, op);
  if (nbytes > 0 && data == nullptr)
    throw InvalidArgument(std::string("[") + op + "] null data for " + shape.str() + " " +
                          std::string(dtype_name(dtype)) + " on " + device.str());
  Backend& b = backend_for(device);
  auto storage = std::make_shared<Storage>(&b, data, nbytes, std::move(owner), read_only);
  return Tensor(std::move(storage), Layout(shape, strides, 0), dtype, device);
}

}  // namespace

Tensor Tensor::from_external(void* data, const Shape& shape, const Strides& strides, DType dtype, const Device& device,
                             std::function<void()> release, bool read_only) {
  // `release` reaches the owner only once wrap() has succeeded: a refusal never calls it.
  struct Release {
    std::function<void()> fn;
    ~Release() {
      if (fn) fn();
    }
  };
  auto owner = std::make_shared<Release>();
  Tensor t = wrap(data, shape, strides, dtype, device, owner, read_only, "from_external");
  owner->fn = std::move(release);
  return t;
}

void* Tensor::data_ptr() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + layout_.offset() * static_cast<int64_t>(dtype_size(dtype_));
}

void* Device::native_stream() const { return backend_for(*this).native_stream(); }

// ---- DLPack --------------------------------------------------------------------------------------

namespace {

using namespace dlpack;

bool to_type(DType d, DLDataType* out) {
  const uint8_t bits = static_cast<uint8_t>(8 * dtype_size(d));
  switch (d) {
    case DType::U8:
    case DType::U32:
      *out = {kDLUInt, bits, 1};
      return true;
    case DType::I32:
    case DType::I64:
      *out = {kDLInt, bits, 1};
      return true;
    case DType::F16:
    case DType::F32:
    case DType::F64:
      *out = {kDLFloat, bits, 1};
      return true;
    case DType::BF16:
      *out = {kDLBfloat, 16, 1};
      return true;
    case DType::F8E4M3:
      *out = {kDLFloat8_e4m3fn, 8, 1};
      return true;
  }
  return false;
}

bool from_type(DLDataType t, DType* out) {
  if (t.lanes != 1) return false;
  struct Row {
    uint8_t code, bits;
    DType dtype;
  };
  static constexpr Row kRows[] = {
      {kDLUInt, 8, DType::U8},    {kDLUInt, 32, DType::U32},    {kDLInt, 32, DType::I32},
      {kDLInt, 64, DType::I64},   {kDLFloat, 16, DType::F16},   {kDLFloat, 32, DType::F32},
      {kDLFloat, 64, DType::F64}, {kDLBfloat, 16, DType::BF16}, {kDLFloat8_e4m3fn, 8, DType::F8E4M3},
      {kDLBool, 8, DType::U8},  // stored as one byte per value
  };
  for (const Row& r : kRows)
    if (r.code == t.code && r.bits == t.bits) {
      *out = r.dtype;
      return true;
    }
  return false;
}

std::string type_str(DLDataType t) {
  return "code " + std::to_string(t.code) + ", " + std::to_string(t.bits) + " bits, " + std::to_string(t.lanes) +
         " lanes";
}

// What an exported managed tensor owns: the tensor (its storage stays alive) and the arrays its
// DLTensor points at.
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
};

// The DLTensor of t, whose arrays live in ctx; orders `stream` after t's producer on a GPU.
DLTensor describe(const Tensor& t, intptr_t stream, Export* ctx, const char* op) {
  if (!t.defined()) throw InvalidArgument(std::string("[") + op + "] export of an undefined tensor");
  DLTensor d{};
  if (!to_type(t.dtype(), &d.dtype)) throw DTypeError(std::string("[") + op + "] " + t.str() + " has no DLPack type");
  const Device& dev = t.device();
  switch (dev.kind()) {
    case DeviceKind::Cpu:
      d.device = {kDLCPU, 0};
      break;
    case DeviceKind::Cuda:
      d.device = {kDLCUDA, dev.ordinal()};
      if (stream == 0)
        throw InvalidArgument(std::string("[") + op + "] stream 0 is ambiguous on CUDA (1: the legacy default " +
                              "stream, 2: the per-thread one): " + t.str());
      break;
    case DeviceKind::Rocm:
      d.device = {kDLROCM, dev.ordinal()};
      if (stream == 1 || stream == 2)
        throw InvalidArgument(std::string("[") + op + "] stream " + std::to_string(stream) +
                              " is not a ROCm stream (0: the default stream): " + t.str());
      break;
  }
  if (dev.is_gpu() && stream != kNoSync) {
    if (stream < -1)
      throw InvalidArgument(std::string("[") + op + "] stream " + std::to_string(stream) + " is no stream: " + t.str());
    backend_for(dev).order_native_stream(reinterpret_cast<void*>(stream));
  }
  ctx->tensor = t;
  ctx->shape.assign(t.shape().begin(), t.shape().end());
  ctx->strides.assign(t.strides().begin(), t.strides().end());
  d.data = t.storage()->data();
  d.ndim = static_cast<int32_t>(t.rank());
  d.shape = ctx->shape.data();
  d.strides = ctx->strides.data();
  d.byte_offset = static_cast<uint64_t>(t.layout().offset() * static_cast<int64_t>(dtype_size(t.dtype())));
  return d;
}

// The Tensor over a DLTensor's memory, owned by `owner` (which calls the producer's deleter).
Tensor import(const DLTensor& d, bool read_only, std::shared_ptr<const void> owner) {
  DType dtype;
  if (!from_type(d.dtype, &dtype))
    throw DTypeError("[from_dlpack] DLPack type (" + type_str(d.dtype) + ") is none wick has");
  Device device;
  switch (d.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost:
    case kDLROCMHost:
      break;
    case kDLCUDA:
      device = Device::cuda(d.device.device_id);  // DeviceError when wick was built without CUDA
      break;
    case kDLROCM:
      device = Device::rocm(d.device.device_id);
      break;
    default:
      throw UnsupportedError("[from_dlpack] DLPack device type " + std::to_string(d.device.device_type) + " (id " +
                             std::to_string(d.device.device_id) + ") is not one wick runs on");
  }
  if (d.ndim < 0 || (d.ndim > 0 && d.shape == nullptr))
    throw InvalidArgument("[from_dlpack] ndim " + std::to_string(d.ndim) + " without a shape");
  Shape shape(std::vector<int64_t>(d.shape, d.shape + d.ndim));
  Strides strides(static_cast<size_t>(d.ndim), 0);
  if (d.strides) {
    for (int32_t i = 0; i < d.ndim; ++i) strides[static_cast<size_t>(i)] = d.strides[i];
  } else {  // row-major
    int64_t s = 1;
    for (int32_t i = d.ndim - 1; i >= 0; --i) {
      strides[static_cast<size_t>(i)] = s;
      s *= std::max<int64_t>(d.shape[i], 1);
    }
  }
  void* base = d.data ? static_cast<char*>(d.data) + d.byte_offset : nullptr;
  return wrap(base, shape, strides, dtype, device, std::move(owner), read_only, "from_dlpack");
}

// Calls the producer's deleter of M (either managed struct) once the last view goes; holds none
// until the import has succeeded, so that a refusal leaves the struct to the caller.
template <class M>
struct ImportOwner {
  M* m = nullptr;
  ~ImportOwner() {
    if (m && m->deleter) m->deleter(m);
  }
};

template <class M>
Tensor import_managed(M* m, bool read_only) {
  auto owner = std::make_shared<ImportOwner<M>>();
  Tensor t = import(m->dl_tensor, read_only, owner);
  owner->m = m;
  return t;
}

}  // namespace

DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, intptr_t stream) {
  auto ctx = std::make_unique<Export>();
  auto m = std::make_unique<DLManagedTensorVersioned>();
  m->dl_tensor = describe(t, stream, ctx.get(), "to_dlpack_versioned");
  m->version = {kMajorVersion, kMinorVersion};
  m->flags = t.storage()->read_only() ? kFlagReadOnly : 0;
  m->manager_ctx = ctx.release();
  m->deleter = [](DLManagedTensorVersioned* self) {
    delete static_cast<Export*>(self->manager_ctx);
    delete self;
  };
  return m.release();
}

DLManagedTensor* to_dlpack(const Tensor& t, intptr_t stream) {
  if (t.defined() && t.storage()->read_only())
    throw InvalidArgument("[to_dlpack] " + t.str() +
                          " is a view of read-only memory, which the legacy struct cannot mark: use "
                          "to_dlpack_versioned");
  auto ctx = std::make_unique<Export>();
  auto m = std::make_unique<DLManagedTensor>();
  m->dl_tensor = describe(t, stream, ctx.get(), "to_dlpack");
  m->manager_ctx = ctx.release();
  m->deleter = [](DLManagedTensor* self) {
    delete static_cast<Export*>(self->manager_ctx);
    delete self;
  };
  return m.release();
}

Tensor from_dlpack(DLManagedTensorVersioned* m) {
  if (m == nullptr) throw InvalidArgument("[from_dlpack] null managed tensor");
  if (m->version.major != kMajorVersion)
    throw UnsupportedError("[from_dlpack] DLPack version " + std::to_string(m->version.major) + "." +
                           std::to_string(m->version.minor) + "; wick reads major version " +
                           std::to_string(kMajorVersion));
  return import_managed(m, (m->flags & kFlagReadOnly) != 0);
}

Tensor from_dlpack(DLManagedTensor* m) {
  if (m == nullptr) throw InvalidArgument("[from_dlpack] null managed tensor");
  return import_managed(m, false);
}

}  // namespace wick
