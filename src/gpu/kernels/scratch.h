// Scratch device memory of the GPU kernels (matmul, conv, scan, sort).
#pragma once

#include <cstdint>
#include <utility>

#include "backend/backend.h"
#include "gpu/config.h"

namespace wick::WICK_GPU_NS::kern {

// Device memory for the duration of one backend call. Allocation and free are stream-ordered
// (Note [GPU stream order]), so freeing right after queuing the kernels that use it is safe.
class Scratch {
 public:
  Scratch() = default;
  Scratch(Backend& be, int64_t bytes) : be_(&be), p_(bytes > 0 ? be.raw_alloc(bytes) : nullptr) {}
  ~Scratch() {
    if (be_) be_->raw_free(p_);
  }
  Scratch(Scratch&& o) noexcept : be_(o.be_), p_(o.p_) { o.be_ = nullptr, o.p_ = nullptr; }
  Scratch& operator=(Scratch&& o) noexcept {
    std::swap(be_, o.be_);
    std::swap(p_, o.p_);
    return *this;
  }
  void* get() const { return p_; }

 private:
  Backend* be_ = nullptr;
  void* p_ = nullptr;
};

}  // namespace wick::WICK_GPU_NS::kern
