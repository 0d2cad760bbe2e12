// The GPU launchers: one host function per backend op (WICK_BACKEND_OPS), defined in
// kernels/<family>.cu next to its kernels, plus the pieces that families split over several files
// to compile in parallel. GpuBackend's op methods are generated (gpu_ops.cpp) and only forward here.
// Each launcher queues work on ctx.stream and returns without waiting; a failed launch throws.
#pragma once

#include "backend/backend.h"
#include "gpu/config.h"

namespace wick::WICK_GPU_NS {

class GpuBackend;

namespace kern {

// Where and for whom a launch runs.
struct LaunchCtx {
  void* stream = nullptr;  // the backend's gpu::Stream::native()
  int multiprocessors = 1;
  int device = 0;
  const char* op = "launch";             // for error messages
  int64_t shared_per_block = 48 * 1024;  // DeviceProperties::shared_per_block_optin
  int warp_size = 32;                    // DeviceProperties::warp_size
  GpuBackend* backend = nullptr;         // the handle the op runs on: scratch memory, pinned slots

  // The same launch, named after the op variant it runs (log_softmax, argsort, ...).
  LaunchCtx with_op(const char* name) const {
    LaunchCtx c = *this;
    c.op = name;
    return c;
  }
};

// f.template operator()<flag>(): a run-time flag as the template argument of a kernel's variant.
template <class F>
void by_flag(bool flag, F&& f) {
  if (flag) return f.template operator()<true>();
  return f.template operator()<false>();
}

// The handle a launch runs on, as a Backend (scratch memory for split kernels).
Backend& backend_of(const LaunchCtx& ctx);

// The launcher of every backend op.
#define WICK_X(name, params, args) void name(const LaunchCtx& ctx, WICK_EXPAND params);
WICK_BACKEND_OPS(WICK_X)
#undef WICK_X

// cast.cu picks by source dtype: cast_int.cu / cast_float.cu.
void cast_from_int(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);
void cast_from_float(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);

// The unary rows of the op table are spread over kUnaryParts files (unary_<part>.cu) that compile
// in parallel: row r goes to part r % kUnaryParts. Each runs op when it is one of its part's rows
// and returns whether it was.
inline constexpr int kUnaryParts = 4;
template <int Part>
bool unary_part(const LaunchCtx& ctx, Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst);

// The same for the binary rows (binary.cuh, binary_<part>.cu); compare.cu runs the compare rows.
inline constexpr int kBinaryParts = 2;
template <int Part>
bool binary_part(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst);
bool compare_op(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst);

// reduce_sum.cu, reduce_minmax.cu, reduce_arg.cu: Backend::reduce for one op family (Note [GPU
// reductions] in reduce.cuh); split reductions take scratch memory from ctx.backend.
void reduce_sum(const LaunchCtx& ctx, const TensorArg& src, int n_reduced, const TensorArg& dst, bool mean);
void reduce_minmax(const LaunchCtx& ctx, const TensorArg& src, int n_reduced, const TensorArg& dst, bool is_max);
void reduce_arg(const LaunchCtx& ctx, const TensorArg& src, int n_reduced, const TensorArg& dst, bool is_max);

// quant_matvec_k.cu: one row of x against Q4_K or Q6_K weights (Note [GPU Q4_K mat-vec]); false,
// with nothing queued, where the format, shapes or alignment do not suit it.
bool qmatvec_k(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst,
               int64_t m, int64_t n, int64_t k);

}  // namespace kern
}  // namespace wick::WICK_GPU_NS
