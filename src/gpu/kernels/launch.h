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
  const char* op = "launch";             // for error messages
  int64_t shared_per_block = 48 * 1024;  // DeviceProperties::shared_per_block_optin
  int warp_size = 32;                    // DeviceProperties::warp_size
};

// f.template operator()<flag>(): a run-time flag as the template argument of a kernel's variant.
template <class F>
void by_flag(bool flag, F&& f) {
  if (flag) return f.template operator()<true>();
  return f.template operator()<false>();
}

// creation.cu
void const_set(const LaunchCtx& ctx, const TensorArg& dst, Scalar value);
void arange(const LaunchCtx& ctx, const TensorArg& dst, double start, double step);
void rand_uniform(const LaunchCtx& ctx, const TensorArg& dst, double lo, double up, RandomStream rs);
void rand_normal(const LaunchCtx& ctx, const TensorArg& dst, double mean, double std, RandomStream rs);

// cast.cu (equal dtypes: a strided copy), cast_int.cu / cast_float.cu (by source dtype)
void cast(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);
void copy_batch(const LaunchCtx& ctx, std::span<const TensorArg> srcs, std::span<const TensorArg> dsts);
void cast_from_int(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);
void cast_from_float(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst);

// Elementwise ops (GpuBackend::unary / binary / where_cond), split over files that compile in
// parallel. Each runs op when it is one of its file's ops and returns whether it was; p0 / p1 are
// Backend::unary's parameters.
// unary_float.cu: exp, log, sin, cos, tanh, sqrt, erf, recip
bool unary_float(const LaunchCtx& ctx, Op op, const TensorArg& src, const TensorArg& dst);
// unary_activation.cu: gelu, gelu_erf, silu, sigmoid, powf (p0), elu (p0)
bool unary_activation(const LaunchCtx& ctx, Op op, double p0, const TensorArg& src, const TensorArg& dst);
// unary_exact.cu: neg, sqr, abs, ceil, floor, round, sign, relu
bool unary_exact(const LaunchCtx& ctx, Op op, const TensorArg& src, const TensorArg& dst);
// unary_affine.cu: affine (p0 = mul, p1 = add), clamp (p0 = lo, p1 = hi; Note [Integer clamp bounds])
bool unary_affine(const LaunchCtx& ctx, Op op, double p0, double p1, const TensorArg& src, const TensorArg& dst);
// binary_arith.cu: add, sub, mul, div
bool binary_arith(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst);
// binary_minmax.cu: maximum, minimum, pow
bool binary_minmax(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst);
// compare.cu: eq, ne, lt, le, gt, ge (dst u8)
bool compare(const LaunchCtx& ctx, Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst);
// where.cu: dst = cond != 0 ? t : f (cond u8, u32 or i64)
void where_cond(const LaunchCtx& ctx, const TensorArg& cond, const TensorArg& t, const TensorArg& f,
                const TensorArg& dst);

// scan.cu and sort.cu, over the last dim; `be` provides scratch memory (stream-ordered).
void cumsum(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& dst);
// values undefined: argsort.
void sort(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& values, const TensorArg& indices,
          bool descending);

// reduce_sum.cu, reduce_minmax.cu, reduce_arg.cu: Backend::reduce for one op family; `be` provides
// scratch memory for split reductions (Note [GPU reductions] in reduce.cuh).
void reduce_sum(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                bool mean);
void reduce_minmax(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                   bool is_max);
void reduce_arg(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst,
                bool is_max);

// softmax.cu, norm.cu: over the last dim (Note [GPU row normalisation] in norm.cuh; softmax splits
// few long rows over blocks, Note [GPU split softmax], with scratch from be). weight / bias
// are [D] (any stride) or undefined.
void softmax(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& dst, bool log);
void rms_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps);
void layer_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                const TensorArg& dst, double eps);

}  // namespace wick::WICK_GPU_NS::kern
