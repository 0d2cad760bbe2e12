// Device helpers of the GPU index, pool and rope kernels: launches over a Plan with the 32/64-bit
// choice and the slicing of Note [GPU launch plans], and the atomic adds of scatter_add / index_add.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "backend/index_functors.h"
#include "backend/index_geom.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

// Calls launch.template operator()<Index>(first, offsets, base) once per launch a plan needs: one
// launch over all dims (Index uint32_t when the plan fits, else int64_t) or, past kMaxDims dims,
// one 64-bit launch per index of the outer dims, `offsets` being each operand's element offset of
// that slice and `base` the row-major flat index of its first element (the Meta then covers dims
// [first, rank)). `extra_fits` lets the caller veto the 32-bit path for offsets the plan does not
// see (a pair distance, say; an id times a dim stride is always computed in 64 bits).
template <int N, class L>
void for_each_launch(const Plan<N>& p, bool extra_fits, L&& launch) {
  if (p.rank() <= kMaxDims) {
    const std::array<int64_t, N> zero{};
    if (extra_fits && p.fits_32bit())
      launch.template operator()<uint32_t>(0, zero, int64_t{0});
    else
      launch.template operator()<int64_t>(0, zero, int64_t{0});
    return;
  }
  const int outer = p.rank() - kMaxDims;
  int64_t slices = 1;
  for (int d = 0; d < outer; ++d) slices *= p.shape[d];
  const int64_t inner = p.numel_from(outer);
  for (int64_t s = 0; s < slices; ++s) launch.template operator()<int64_t>(outer, p.slice_offsets(outer, s), s * inner);
}

// The raw bits of a 1- or 2-byte element, and back.
template <class T>
__device__ __forceinline__ uint32_t bits_of(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint32_t>(v);
  } else {
    return static_cast<uint32_t>(v.bits);
  }
}
template <class T>
__device__ __forceinline__ T from_bits(uint32_t b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(b);
  } else {
    return T::from_bits(static_cast<decltype(T::bits)>(b));
  }
}

// *p = AddWrap(*p, v), atomically. f32, f64, u32, i32 and i64 (two's complement wraps like AddWrap)
// use the hardware add. The 1- and 2-byte types have no atomic of their own: a compare-and-swap
// loop on the aligned 32-bit word that holds the element, computing the sum with AddWrap (f32 for
// the 8/16-bit floats, rounded once per add). The word may hold bytes past the tensor's end but
// never past its allocation: GpuBackend::raw_alloc rounds sizes up to a multiple of 4.
template <class T>
__device__ __forceinline__ void atomic_add(T* p, T v) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    atomicAdd(p, v);
  } else if constexpr (std::is_same_v<T, uint32_t> || std::is_same_v<T, int32_t>) {
    atomicAdd(reinterpret_cast<unsigned int*>(p), static_cast<unsigned int>(v));
  } else if constexpr (std::is_same_v<T, int64_t>) {
    atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
  } else {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2, "atomic_add: unexpected element size");
    constexpr uint32_t kMask = sizeof(T) == 1 ? 0xffu : 0xffffu;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(p);
    unsigned int* word = reinterpret_cast<unsigned int*>(addr & ~uintptr_t{3});
    const uint32_t shift = static_cast<uint32_t>(addr & 3u) * 8u;
    unsigned int old = *word;
    unsigned int assumed;
    do {
      assumed = old;
      const T cur = from_bits<T>((assumed >> shift) & kMask);
      const uint32_t sum = bits_of(AddWrap{}(cur, v)) & kMask;
      old = atomicCAS(word, assumed, (assumed & ~(kMask << shift)) | (sum << shift));
    } while (old != assumed);
  }
}

// The entry points of index.cu and index_scatter.cu (Note [GPU index kernels] in index.cu).
using indexing::kIdTypes;

// Queues the check of every id of `ids` against [0, size): the smallest row-major position of an
// offending id ends up in *first_bad, which must hold a value >= ids.numel() beforehand.
void check_ids(const LaunchCtx& ctx, const TensorArg& ids, int64_t size, unsigned long long* first_bad);
// The id check that blocks of a gather's own, added to its grid, run and post to pinned host memory,
// one slot per block (Note [GPU index kernels]): 1-D `ids`, `count` blocks and slots, each block
// reading kPostedIds ids or more.
struct IdPost {
  const TensorArg* ids = nullptr;
  unsigned long long* slots = nullptr;
  int count = 0;
  bool taken = false;  // by the gather's first launch
};
inline constexpr int64_t kPostedIds = 512;
inline constexpr int kPostedSlots = 64;
inline int posted_slots(int64_t ids) {
  return static_cast<int>(std::clamp<int64_t>((ids + kPostedIds - 1) / kPostedIds, 1, kPostedSlots));
}
// Writes `value` to *flag (stream-ordered).
void set_flag(const LaunchCtx& ctx, unsigned long long* flag, unsigned long long value);
// dst[i] = src[i + ids[i] * src_dim_stride] over dst's shape, ids in [0, size) along `dim`;
// src_strides and ids_strides are laid over dst's shape (src's is 0 at the indexed dim). An id out
// of range writes a zero and sets *bad to 1; with `post`, blocks of the gather's own, added to its
// grid, run that posted check instead, and bad is not written (it may be null).
void gather(const LaunchCtx& ctx, const TensorArg& dst, const TensorArg& src, const Strides& src_strides,
            int64_t src_dim_stride, int64_t size, const TensorArg& ids, const Strides& ids_strides, int dim,
            unsigned long long* bad, IdPost* post = nullptr);
// dst[i + ids[i] * dst_dim_stride] = (or +=) src[i] over `shape`; every stride list is laid over it.
void scatter(const LaunchCtx& ctx, const TensorArg& dst, const Strides& dst_strides, int64_t dst_dim_stride,
             const TensorArg& src, const Strides& src_strides, const TensorArg& ids, const Strides& ids_strides,
             const Shape& shape, bool add);

}  // namespace wick::WICK_GPU_NS::kern
