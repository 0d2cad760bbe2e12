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
  bool implements(Op op, DType dtype) const override { return op_defined_for(op, dtype); }

  void* raw_alloc(int64_t nbytes) override;
  void raw_free(void* p) override;
  void empty_cache() override;
  void copy_from_host(void* dst, const void* src, int64_t nbytes) override;
  void copy_to_host(void* dst, const void* src, int64_t nbytes) override;

  // cpu_backend.cpp
  void const_set(const TensorArg& dst, Scalar value) override;
  void arange(const TensorArg& dst, double start, double step) override;
  void rand_uniform(const TensorArg& dst, double lo, double up, RandomStream rs) override;
  void rand_normal(const TensorArg& dst, double mean, double std, RandomStream rs) override;
  void cast(const TensorArg& src, const TensorArg& dst) override;

  // elementwise.cpp
  void unary(Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst) override;
  void binary(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) override;
  void where_cond(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) override;

  // reduce.cpp, norm.cpp, sort.cpp
  void reduce(Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) override;
  void softmax(const TensorArg& src, const TensorArg& dst, bool log) override;
  void rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps) override;
  void layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst,
                  double eps) override;
  void cumsum(const TensorArg& src, const TensorArg& dst) override;
  void sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) override;

  // index.cpp
  void index_select(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) override;
  void gather(const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst) override;
  void scatter(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim, bool add) override;
  void index_add(const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim) override;

  // matmul.cpp
  void matmul(const TensorArg& a, const TensorArg& b, const TensorArg& dst) override;

  // conv.cpp, pool.cpp, rope.cpp
  void conv1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) override;
  void conv2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) override;
  void conv_transpose1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) override;
  void conv_transpose2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) override;
  void avg_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) override;
  void max_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) override;
  void upsample_nearest1d(const TensorArg& x, const TensorArg& dst) override;
  void upsample_nearest2d(const TensorArg& x, const TensorArg& dst) override;
  void upsample_bilinear2d(const TensorArg& x, const TensorArg& dst, bool align_corners) override;
  void rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst,
            bool interleaved) override;
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
