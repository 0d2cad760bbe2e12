// Shared by the GPU sorts (sort.cu and the sort_*.cu files it launches): the sort keys, the
// arguments of a slice of rows, and the three sorts' entry points.
//
// Note [GPU sort keys]
// Every element becomes the key of Note [Sort keys] (backend/reduce_math.h, shared with the CPU's
// radix sort) of its value in the compute type, whose plain integer order is the CPU's sort order
// (sort_before, Note [NaN order]). Pairs (key, index) are then sorted ascending with the index as
// tie-breaker: every pair is distinct, so the sorted order is unique and equals the CPU's stable
// sort exactly. A row is padded to a power of two with pairs (largest key, position >= n) that
// sort after every real element.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/reduce_math.h"
#include "gpu/kernels/launch.h"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {

constexpr int kSortThreads = 512;
constexpr int kTileBytes = 32 * 1024;  // static shared memory of one block

// Pairs per tile: the largest power of two that fits kTileBytes.
template <class K, class I>
constexpr int tile_len() {
  int t = 1;
  while (2 * t * static_cast<int>(sizeof(K) + sizeof(I)) <= kTileBytes) t *= 2;
  return t;
}

template <class T>
using sort_key_t = order_key_t<cmp_t<T>>;

// The unsigned integer as wide as T.
template <class T>
using raw_t = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

template <class K, class V>
__device__ __forceinline__ K bits_of(V v) {
  static_assert(sizeof(K) == sizeof(V));
  return __builtin_bit_cast(K, v);
}

// The key of x (Note [GPU sort keys]).
template <class T>
__device__ __forceinline__ sort_key_t<T> sort_key(T x, bool descending) {
  return order_key(convert<cmp_t<T>>(x), descending);
}

// Note [GPU sort key digits]
// The radix sorts pass over the key's digits from the lowest (8-bit digits in the long-row sort,
// 4-bit ones in the one-block sort); a pass over a digit that is, in every key, the same function
// of the digits above it changes nothing (pairs equal in the higher digits are then equal in all,
// and each pass is stable), so the sorts start at the lowest digit that is not. A 16- or 8-bit
// float widened to f32 leaves the low mantissa bits of the f32 zero (bf16: 16, f16: 13, f8e4m3: 20
// bits, subnormals included), so in the key they are all zero for a positive number and all one
// for a negative one or NaN (whose key is all ones), and descending complements them with the
// rest: for a key, a function of its sign bit. The sorts thus start at bit first_key_bit rounded
// down to their digit: with 8-bit digits bf16 and f8e4m3 take 2 passes, f16 3, u8 1 (its key is
// one byte), f32 and u32 4, f64 and i64 8; with 4-bit digits f8e4m3 takes 3, bf16 4, f16 5, u8 2,
// f32 and u32 8.
template <class T>
constexpr int first_key_bit() {
  if constexpr (std::is_same_v<T, f8e4m3>)
    return 20;
  else if constexpr (std::is_same_v<T, bf16>)
    return 16;
  else if constexpr (std::is_same_v<T, f16>)
    return 13;
  else
    return 0;
}

// The key's bits: 8 for a one-byte integer, else the key type's.
template <class T>
constexpr int key_bits() {
  using V = cmp_t<T>;
  return std::is_integral_v<V> && sizeof(V) == 1 ? 8 : 8 * static_cast<int>(sizeof(sort_key_t<T>));
}

template <class T>
struct SortArgs {
  RowMeta<3> m;  // operands: src, indices, values (indices again for argsort)
  int64_t rows, n;
  const T* src;
  int64_t ss;
  int64_t* indices;
  int64_t is;
  T* values;  // null for argsort
  int64_t vs;
  bool descending;
};

// Very few long rows take the long-row radix sort even where the one-block radix sort could (Note
// [GPU long-row radix sort]): at most kLongFewRows rows (and no more than the multiprocessors),
// each at least kLongFewRowsMin long.
constexpr int64_t kLongFewRows = 16;
constexpr int64_t kLongFewRowsMin = 24576;

inline int log2_ceil(int64_t n) {
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

// The sorts of a slice of rows, each instantiated for every dtype in its own file: the one-block
// radix sort (sort_radix.cu, Note [GPU radix sort]) and the long-row radix sort (sort_long.cu,
// Note [GPU long-row radix sort]) return whether they took the rows; the bitonic sort
// (sort_bitonic.cu, Note [GPU bitonic sort]) takes any, with positions of type I.
template <class T>
bool radix_sort_rows(const LaunchCtx& ctx, const SortArgs<T>& a);
template <class T>
bool long_radix_sort(const LaunchCtx& ctx, Backend& be, const SortArgs<T>& a);
template <class T, class I>
void sort_slice(const LaunchCtx& ctx, Backend& be, const SortArgs<T>& a);

}  // namespace wick::WICK_GPU_NS::kern
