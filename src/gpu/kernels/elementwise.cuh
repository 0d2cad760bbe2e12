// Device functors of the elementwise ops (unary*.cu, binary*.cu): they wrap the
// per-element math of backend/elementwise_math.h, shared with the CPU backend, in the load /
// compute / round-once convention of src/cpu/elementwise.cpp: load in the compute type C of T
// (f32 for the 8/16-bit floats), apply, convert to the output type once. The launches go through
// the strided map framework (map.cuh), which picks the flat, 32-bit or 64-bit strided path.
#pragma once

#include <cstdint>

#include "backend/dispatch.h"
#include "backend/elementwise_math.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

// dst = f(src) for element type T. f returns C, or double for AffineInt (convert saturates).
// wide: the value before its rounding to T (the store rounds 16-bit floats in pairs from it,
// compute_store in strided.cuh).
template <class T, class F>
struct UnaryFn {
  F f;
  __device__ T operator()(int64_t i, T v) const { return convert<T>(wide(i, v)); }
  __device__ auto wide(int64_t, T v) const { return f(convert<compute_t<T>>(v)); }
};

// dst = f(a, b) in the compute type, rounded once to T.
template <class T, class F>
struct BinaryFn {
  __device__ T operator()(int64_t i, T a, T b) const { return convert<T>(wide(i, a, b)); }
  __device__ compute_t<T> wide(int64_t, T a, T b) const {
    using C = compute_t<T>;
    return static_cast<C>(F{}(convert<C>(a), convert<C>(b)));
  }
};

template <class T, class F>
void unary_map(const LaunchCtx& ctx, const F& f, const TensorArg& src, const TensorArg& dst) {
  map<T, T>(ctx, UnaryFn<T, F>{f}, dst, src);
}

// A unary op without parameters, instantiated only for the dtypes in Mask (its op-table row).
template <uint32_t Mask, class F>
void unary_op(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  wick::dispatch_in<Mask>(
      src.dtype, [&]<class T>() { unary_map<T>(ctx, F{}, src, dst); }, ctx.op);
}

// Add ... Pow, instantiated only for the dtypes in Mask.
template <uint32_t Mask, class F>
void binary_op(const LaunchCtx& ctx, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  wick::dispatch_in<Mask>(
      a.dtype, [&]<class T>() { map<T, T, T>(ctx, BinaryFn<T, F>{}, dst, a, b); }, ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
