// rms_norm and layer_norm on the GPU (Note [GPU row normalisation] in norm.cuh).
#include "backend/dispatch.h"
#include "gpu/kernels/norm.cuh"

namespace wick::WICK_GPU_NS::kern {
namespace {

// weight / bias: [D] with any stride, or undefined (data null).
template <class T>
NormParams<T> norm_params(const TensorArg& weight, const TensorArg& bias, double eps) {
  NormParams<T> p;
  p.eps = eps;
  if (weight.data) {
    p.w = weight.ptr<T>();
    p.ws = weight.layout.stride(0);
  }
  if (bias.data) {
    p.b = bias.ptr<T>();
    p.bs = bias.layout.stride(0);
  }
  p.wvec = (!p.w || (p.ws == 1 && aligned_to(p.w, 16))) && (!p.b || (p.bs == 1 && aligned_to(p.b, 16)));
  return p;
}

}  // namespace

void rms_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& dst,
              const wick::NormParams& p) {
  const double eps = p.eps;
  wick::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() { run_lastdim<RowOp::RmsNorm, T>(ctx, x, dst, norm_params<T>(weight, TensorArg(), eps)); },
      ctx.op);
}

void layer_norm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& weight, const TensorArg& bias,
                const TensorArg& dst, const wick::NormParams& p) {
  const double eps = p.eps;
  wick::dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { run_lastdim<RowOp::LayerNorm, T>(ctx, x, dst, norm_params<T>(weight, bias, eps)); },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
