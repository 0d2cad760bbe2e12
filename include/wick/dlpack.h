// DLPack: wick tensors shared with other frameworks (PyTorch, NumPy, CuPy, JAX) without a copy.
//
//   wick::dlpack::DLManagedTensorVersioned* m = wick::to_dlpack_versioned(t);  // hand m over
//   wick::Tensor u = wick::from_dlpack(m);  // or take one: u owns m and calls its deleter
//
// The structs below are declared from the DLPack 1.1 specification with the layout of dlpack.h's
// DLDevice, DLDataType, DLTensor, DLManagedTensor and DLManagedTensorVersioned, in namespace
// wick::dlpack so that they never clash with <dlpack/dlpack.h>: a pointer to one may be cast to and
// from a pointer to the struct of the same name there.
//
// Export (to_dlpack_versioned, to_dlpack) shares t's memory: the managed tensor keeps it alive
// until the consumer calls its deleter. Its data pointer is the start of t's storage and
// byte_offset the offset of t's first element; strides are in elements; a view of read-only
// memory (a file mapping) carries DLPACK_FLAG_BITMASK_READ_ONLY (the legacy struct cannot say it,
// so to_dlpack refuses such a view). On a GPU the consumer's stream waits for the work wick queued
// on the tensor's stream (the protocol's `stream` argument): kNoSync, or a native stream handle,
// where CUDA's sentinels 1 (legacy default stream) and 2 (per-thread default stream) are handles
// too and 0 is refused as ambiguous; on ROCm 0 is the default stream and 1, 2 are refused.
//
// Import (from_dlpack) wraps the memory in a Tensor that calls the managed tensor's deleter when
// its last view goes; it accepts the CPU, CUDA / ROCm host memory (as the CPU) and CUDA / ROCm
// device memory of a backend wick was built with, the dtypes wick has with one lane (bool as u8),
// any non-negative strides (none: row-major), and treats a read-only tensor as read-only. The
// producer has synchronised the data for wick's stream. Anything else is a typed error, and the
// managed tensor is then left to the caller.
#pragma once

#include <cstdint>
#include <functional>

#include "wick/device.h"
#include "wick/tensor.h"

namespace wick::dlpack {

inline constexpr uint32_t kMajorVersion = 1;
inline constexpr uint32_t kMinorVersion = 1;

// DLDeviceType values wick reads or writes.
enum DeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLCUDAManaged = 13,
};

// DLDataTypeCode values wick reads or writes.
enum TypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLBool = 6,
  kDLFloat8_e4m3fn = 10,
};

// DLManagedTensorVersioned::flags
inline constexpr uint64_t kFlagReadOnly = uint64_t{1} << 0;
inline constexpr uint64_t kFlagIsCopied = uint64_t{1} << 1;
inline constexpr uint64_t kFlagSubbytePadded = uint64_t{1} << 2;

struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLDevice {
  int32_t device_type;  // DeviceType
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // TypeCode
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null in the legacy struct means row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};
struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

// The `stream` of an export that asks for no synchronisation.
inline constexpr intptr_t kNoSync = -1;

}  // namespace wick::dlpack

namespace wick {

// Shares t (any layout) as a versioned managed tensor; `stream` as in the header comment (ignored
// on the CPU). Throws InvalidArgument for an undefined tensor or a refused stream value.
dlpack::DLManagedTensorVersioned* to_dlpack_versioned(const Tensor& t, intptr_t stream = dlpack::kNoSync);
// The same as the legacy unversioned struct; InvalidArgument for a view of read-only memory.
dlpack::DLManagedTensor* to_dlpack(const Tensor& t, intptr_t stream = dlpack::kNoSync);
// Takes ownership of m on success (see the header comment); on a throw m is untouched.
Tensor from_dlpack(dlpack::DLManagedTensorVersioned* m);
Tensor from_dlpack(dlpack::DLManagedTensor* m);

}  // namespace wick
