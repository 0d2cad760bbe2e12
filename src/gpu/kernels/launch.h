// The kernel entry points the backend class calls (host functions, defined in kernels/*.cu).
// Each queues work on ctx.stream and returns without waiting; a failed launch throws.
#pragma once

#include "backend/backend.h"
#include "gpu/config.h"

namespace wick::WICK_GPU_NS::kern {

// Where and for whom a launch runs.
struct LaunchCtx {
  void* stream = nullptr;  // the backend's gpu::Stream::native()
  int multiprocessors = 1;
  int device = 0;
  const char* op = "launch";  // for error messages
};

// creation.cu
void const_set(const LaunchCtx& ctx, const TensorArg& dst, Scalar value);
void arange(const LaunchCtx& ctx, const TensorArg& dst, double start, double step);
void rand_uniform(const LaunchCtx& ctx, const TensorArg& dst, double lo, double up, RandomStream rs);
void rand_normal(const LaunchCtx& ctx, const TensorArg& dst, double mean, double std, RandomStream rs);

// cast.cu (equal dtypes: a strided copy), cast_int.cu / cast_float.cu (by source dtype)
void cast(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);
void cast_from_int(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);
void cast_from_float(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);

// reduce_sum.cu, reduce_minmax.cu, reduce_arg.cu: Backend::reduce for one op family; `be` provides
// scratch memory for split reductions (Note [GPU reductions] in reduce.cuh).
void reduce_sum(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                bool mean);
void reduce_minmax(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                   bool is_max);
void reduce_arg(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                bool is_max);

// softmax.cu, norm.cu: over the last dim (Note [GPU row normalisation] in norm.cuh). weight / bias
// are [D] (any stride) or undefined.
void softmax(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst, bool log);
void rms_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps);
void layer_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                const TensorArg& dst, double eps);

}  // namespace wick::WICK_GPU_NS::kern
