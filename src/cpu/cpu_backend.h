// The CPU backend. Its methods are spread over one file per op family (src/cpu/*.cpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/backend.h"

namespace wick::cpu {

class CpuBackend final : public Backend {
 public:
  Device device() const override { return Device::cpu(); }
  DeviceInfo info() const override;
  void synchronize() override {}

  void* raw_alloc(int64_t nbytes) override;
  void raw_free(void* p) override;
  void empty_cache() override;
  void copy_from_host(void* dst, const void* src, int64_t nbytes) override;
  void copy_to_host(void* dst, const void* src, int64_t nbytes) override;

  // The ops (backend_ops.h), defined in one file per family: cpu_backend.cpp (creation, cast,
  // copies), elementwise*.cpp, reduce.cpp, norm.cpp, scan.cpp, sort.cpp, index.cpp, matmul.cpp,
  // conv.cpp, pool.cpp, rope.cpp.
#define WICK_X(name, params, args) void name params override;
  WICK_BACKEND_OPS(WICK_X)
#undef WICK_X
};

CpuBackend& backend();

// Uninitialised scratch memory for n elements of trivial type T, from the backend's allocator (so
// large blocks get huge pages, see Note [Huge pages for large tensors] in cpu_backend.cpp).
struct ScratchFree {
  void operator()(void* p) const { backend().raw_free(p); }
};
template <class T>
using Scratch = std::unique_ptr<T[], ScratchFree>;
template <class T>
Scratch<T> scratch(int64_t n) {
  return Scratch<T>(static_cast<T*>(backend().raw_alloc(std::max<int64_t>(n, 1) * static_cast<int64_t>(sizeof(T)))));
}

}  // namespace wick::cpu
