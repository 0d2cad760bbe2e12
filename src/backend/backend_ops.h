// The ops every backend implements, as one list: X(method, (parameters), (arguments)).
//
// The list is expanded into the pure virtuals of Backend, the overrides of CpuBackend and
// GpuBackend, the GPU backend's forwarding definitions and the GPU launchers' declarations
// (src/gpu/kernels/launch.h), so that no second hand-written list has to agree with it. Each
// method serves one kind of the op table (include/wick/ops.h); methods taking an Op serve every
// row of their kind. The front end (src/core) has checked shapes, dtypes and devices, broadcast
// the inputs and allocated the outputs; a backend only computes.
#pragma once

#include <span>

#include "backend/op_params.h"

// WICK_EXPAND(a, b) -> a, b: unwraps a parenthesised list.
#define WICK_EXPAND(...) __VA_ARGS__

#define WICK_BACKEND_OPS(X)                                                                                          \
  /* Creation, Random */                                                                                             \
  X(const_set, (const TensorArg& dst, Scalar value), (dst, value))                                                   \
  X(arange, (const TensorArg& dst, const ArangeParams& p), (dst, p))                                                 \
  X(rand_uniform, (const TensorArg& dst, const RandomParams& p), (dst, p))                                           \
  X(rand_normal, (const TensorArg& dst, const RandomParams& p), (dst, p))                                            \
  /* Unary, UnaryParam: the op is a row of WICK_UNARY_OPS; src and dst have one shape and dtype */                   \
  X(unary, (Op op, const UnaryParams& p, const TensorArg& src, const TensorArg& dst), (op, p, src, dst))             \
  /* Binary, Compare: a and b have dst's shape (broadcast already); comparisons write u8 */                          \
  X(binary, (Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst), (op, a, b, dst))                  \
  /* Select: dst = cond != 0 ? t : f, cond of an integer dtype (kIntTypes) */                                        \
  X(where_cond, (const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst),               \
    (cond, t, f, dst))                                                                                               \
  /* Cast, Copy: conversion between any dtypes (equal dtypes: a strided copy), same shape */                         \
  X(cast, (const TensorArg& src, const TensorArg& dst), (src, dst))                                                  \
  /* srcs[i] into dsts[i], pairs of one dtype and shape, the dsts not overlapping (cat) */                           \
  X(copy_batch, (std::span<const TensorArg> srcs, std::span<const TensorArg> dsts), (srcs, dsts))                    \
  /* Reduce: the last n_reduced dims of src into dst (src's leading dims); argmin/argmax write i64 */                \
  X(reduce, (Op op, const TensorArg& src, int n_reduced, const TensorArg& dst), (op, src, n_reduced, dst))           \
  /* Normalize, Scan, Sort: over the last dim; sort's values may be undefined (argsort), indices i64 */              \
  X(softmax, (const TensorArg& src, const TensorArg& dst, bool log), (src, dst, log))                                \
  X(rms_norm, (const TensorArg& x, const TensorArg& weight, const TensorArg& dst, const NormParams& p),              \
    (x, weight, dst, p))                                                                                             \
  X(layer_norm,                                                                                                      \
    (const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst, const NormParams& p), \
    (x, weight, bias, dst, p))                                                                                       \
  X(cumsum, (const TensorArg& src, const TensorArg& dst), (src, dst))                                                \
  X(sort, (const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending),                \
    (src, values, indices, descending))                                                                              \
  /* Index: ids checked in range before anything is written (IndexError otherwise) */                                \
  X(index_select, (const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst), (src, ids, dim, dst)) \
  X(gather, (const TensorArg& src, const TensorArg& ids, int dim, const TensorArg& dst), (src, ids, dim, dst))       \
  /* in place into dst (the front end passes a fresh copy): dst[... ids[i] ...] = / += src[... i ...] */             \
  X(scatter, (const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim, bool add),                  \
    (dst, ids, src, dim, add))                                                                                       \
  /* dst.index_select(ids, dim) += src */                                                                            \
  X(index_add, (const TensorArg& dst, const TensorArg& ids, const TensorArg& src, int dim), (dst, ids, src, dim))    \
  /* Matmul: a [batch..., M, K], b [batch..., K, N] (same batch shape, maybe stride 0), dst [batch..., M, N] */      \
  X(matmul, (const TensorArg& a, const TensorArg& b, const TensorArg& dst), (a, b, dst))                             \
  /* Conv, Pool, Resample */                                                                                         \
  X(conv1d, (const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p), (x, w, dst, p))   \
  X(conv2d, (const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p), (x, w, dst, p))   \
  X(conv_transpose1d, (const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p),         \
    (x, w, dst, p))                                                                                                  \
  X(conv_transpose2d, (const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p),         \
    (x, w, dst, p))                                                                                                  \
  X(avg_pool2d, (const TensorArg& x, const TensorArg& dst, const Pool2dParams& p), (x, dst, p))                      \
  X(max_pool2d, (const TensorArg& x, const TensorArg& dst, const Pool2dParams& p), (x, dst, p))                      \
  X(upsample_nearest1d, (const TensorArg& x, const TensorArg& dst), (x, dst))                                        \
  X(upsample_nearest2d, (const TensorArg& x, const TensorArg& dst), (x, dst))                                        \
  X(upsample_bilinear2d, (const TensorArg& x, const TensorArg& dst, bool align_corners), (x, dst, align_corners))    \
  /* Rope: x [..., T, D], cos / sin [T, D/2] */                                                                      \
  X(rope, (const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst, bool interleaved),  \
    (x, cos, sin, dst, interleaved))                                                                                 \
  /* Attention: q [H, D] and k, v [KV, D] f32, caches [KV, C, D] of the row's dtype with unit-stride rows, */        \
  /* dst [H, D] f32 contiguous; the position is position's one i32 on the device, or p.position when */              \
  /* position.data is null; a position outside [0, C) writes nothing and gives zeros (Note [Decode attention]) */    \
  X(attention_decode,                                                                                                \
    (const TensorArg& q, const TensorArg& k, const TensorArg& v, const TensorArg& k_cache, const TensorArg& v_cache, \
     const TensorArg& position, const AttentionParams& p, const TensorArg& dst),                                     \
    (q, k, v, k_cache, v_cache, position, p, dst))                                                                   \
  /* Quant: blocks are u8 [rows, row_bytes] (row stride >= row_bytes, bytes contiguous in a row); the */             \
  /* float side is contiguous [rows, row_elems] in f32 / f16 / bf16 (Note [Quantizer rounding]) */                   \
  X(quantize, (const TensorArg& src, QFormat format, const TensorArg& dst), (src, format, dst))                      \
  X(dequantize, (const TensorArg& src, QFormat format, const TensorArg& dst), (src, format, dst))                    \
  /* x [m, k] contiguous, w [n, k / block_elems blocks], dst [m, n] contiguous in x's dtype: dst = x w^T */          \
  X(qmatmul, (const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst), (x, w, format, dst))
