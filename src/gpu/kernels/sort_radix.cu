// The one-block radix sort of the GPU's sort and argsort (Note [GPU radix sort]): rows longer than a
// bitonic tile, with 32-bit keys, up to what a block's shared memory holds, one block per row.
//
// Note [GPU radix sort]
// Rows longer than one bitonic tile, with 32-bit keys (every dtype but f64 and i64) and short enough
// for the block's shared memory (up to 32768 elements, with the opt-in above 48 KB of
// gpu::allow_dynamic_shared), are sorted by one block per row: an LSD radix sort of 4-bit digits
// over the keys, stable by construction, so the result is the unique order of the pairs (key,
// index) again. A thread owns kRowItems positions, the block whole warps of threads; positions
// n..npad-1 pad the row with the largest key. Shared memory holds the row's keys by source position
// (computed once), the permutation `perm` (u16 source positions in the current order, rewritten in
// place: every read of a pass ends at a barrier before its first write, the elements waiting in
// registers) and per thread a column of counter words (count_digit, scan_counters, digit_first).
// The values come out of the keys (value_of_key) except for a float zero and NaN, whose keys do not
// determine them: those are read from src again, so values come out bit for bit. keys and perm are
// swizzled (row_slot, perm_slot) so that the passes' reads fall in distinct banks.
#include <cstdint>
#include <type_traits>

#include "gpu/kernels/block_scan.cuh"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/sort.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kRowItems = 32;                  // positions per thread of the one-block radix sort
constexpr int kRowBits = 4;                    // its digits
constexpr int kRowRows = 1 << (kRowBits - 1);  // its counter words per thread: two digits each
constexpr int kRowMaxThreads = 1024;
static_assert(kRowItems % 8 == 0 && kRowRows % 4 == 0, "radix_sort_kernel reads perm and cnt 16 bytes at a time");

// Where position p of a row lives in the one-block sort's key array: each run of 32 positions
// rotated by its run number, so that 32 threads reading one position of their own runs hit 32
// banks (Note [GPU radix sort]).
__device__ __forceinline__ uint32_t row_slot(uint32_t p) { return p ^ ((p >> 5) & 31u); }

// Where position p of the current order lives in perm: its 16-byte chunk c (8 positions) moved to
// c ^ ((c >> 3) & 3), so that the 8 threads of a quarter warp reading chunk m of their own 4 hit
// 8 distinct 16-byte bank groups.
__device__ __forceinline__ uint32_t perm_chunk(uint32_t c) { return c ^ ((c >> 3) & 3u); }
__device__ __forceinline__ uint32_t perm_slot(uint32_t p) { return p ^ ((p >> 3) & 0x18u); }

// The three steps of a pass of Note [GPU radix sort]: thread t's column of counter words is
// cnt[k * threads + t], k < kRowRows, digits d and d + 8 in a word's low and high halves.
// Step 1: counts digit d in the thread's column and returns the count before it.
__device__ __forceinline__ uint32_t count_digit(uint32_t* cnt, int threads, uint32_t d) {
  const uint32_t half = 16 * (d >> (kRowBits - 1));
  uint32_t* c = cnt + (d & (kRowRows - 1)) * threads + threadIdx.x;
  const uint32_t before = *c;
  *c = before + (1u << half);
  return (before >> half) & 0xffffu;
}

// Step 2, between barriers: an exclusive scan of the counter words in (word, thread) order, thread
// t taking words [t, t + 1) * kRowRows; returns the count of digits below 8, where the high
// halves' digits start.
__device__ __forceinline__ uint32_t scan_counters(uint32_t* cnt, uint32_t* wsum) {
  uint4* mine = reinterpret_cast<uint4*>(cnt + threadIdx.x * kRowRows);
  uint32_t word[kRowRows], sum = 0;
#pragma unroll
  for (int k = 0; k < kRowRows / 4; ++k) {
    const uint4 v = mine[k];
    word[4 * k] = v.x, word[4 * k + 1] = v.y, word[4 * k + 2] = v.z, word[4 * k + 3] = v.w;
  }
#pragma unroll
  for (int k = 0; k < kRowRows; ++k) sum += word[k];
  uint32_t total;
  uint32_t at = block_exclusive_scan_warps(sum, wsum, &total);
#pragma unroll
  for (int k = 0; k < kRowRows; ++k) {
    const uint32_t c = word[k];
    word[k] = at;
    at += c;
  }
#pragma unroll
  for (int k = 0; k < kRowRows / 4; ++k)
    mine[k] = make_uint4(word[4 * k], word[4 * k + 1], word[4 * k + 2], word[4 * k + 3]);
  return total & 0xffffu;
}

// Step 3: where the thread's first element of digit d goes.
__device__ __forceinline__ uint32_t digit_first(const uint32_t* cnt, int threads, uint32_t d, uint32_t low_total) {
  const uint32_t high = d >> (kRowBits - 1);
  return (cnt[(d & (kRowRows - 1)) * threads + threadIdx.x] >> (16 * high) & 0xffffu) + (high ? low_total : 0u);
}

// Clears the thread's counter column (once no other thread reads it).
__device__ __forceinline__ void clear_counters(uint32_t* cnt, int threads) {
#pragma unroll
  for (int k = 0; k < kRowRows; ++k) cnt[k * threads + threadIdx.x] = 0;
}

// The element whose key is k, where the key determines it: not for a float +0 key (either zero)
// or the NaN key (any payload), for which it returns false.
template <class T>
__device__ __forceinline__ bool value_of_key(sort_key_t<T> k, bool descending, T* out) {
  using V = cmp_t<T>;
  using K = sort_key_t<T>;
  constexpr K kSign = K(1) << (8 * sizeof(K) - 1);
  if (descending) k = ~k;
  if constexpr (std::is_floating_point_v<V>) {
    if (k == kSign || k == ~K(0)) return false;
    *out = convert<T>(bits_of<V>((k & kSign) ? (k ^ kSign) : ~k));
  } else if constexpr (std::is_signed_v<V>) {
    *out = convert<T>(static_cast<V>(k ^ kSign));
  } else {
    *out = convert<T>(static_cast<V>(k));
  }
  return true;
}

// Sorts whole rows of 32 * blockDim.x positions (Note [GPU radix sort]) over the 4-bit digits of
// the key bits of Note [GPU sort key digits]. A pass over one digit:
//   1. thread t owns positions [32t, 32t + 32) of the current order and walks them in order,
//      counting each element's digit in its own column: the count before it is its rank among the
//      thread's elements of that digit. Position, digit and rank stay in a register.
//   2. an exclusive scan of the counter words in (word, thread) order turns each half into the
//      position of thread t's first element of its digit among the digits of that half; the high
//      halves' digits then start after every low-half digit (low_total).
//   3. each element goes to perm[that first position + its rank]: equal digits keep their order,
//      since earlier threads and earlier positions of a thread come first.
template <class T>
__global__ void __launch_bounds__(kRowMaxThreads) radix_sort_kernel(SortArgs<T> a) {
  extern __shared__ __align__(16) unsigned char radix_smem[];
  constexpr int D = 1 << kRowBits;
  const int threads = static_cast<int>(blockDim.x), t = static_cast<int>(threadIdx.x);
  const int npad = kRowItems * threads;
  uint32_t* keys = reinterpret_cast<uint32_t*>(radix_smem);
  uint16_t* perm = reinterpret_cast<uint16_t*>(keys + npad);
  uint32_t* cnt = reinterpret_cast<uint32_t*>(perm + npad);  // [kRowRows][threads]
  uint32_t* wsum = cnt + kRowRows * threads;                 // block_exclusive_scan_warps'
  const auto n = static_cast<uint32_t>(a.n);
  clear_counters(cnt, threads);  // and each pass clears them again once read
  for (int64_t r = blockIdx.x; r < a.rows; r += gridDim.x) {
    int64_t off[3];
    row_offsets(a.m, r, off);
#pragma unroll 8
    for (int q = t; q < npad; q += threads)
      keys[row_slot(q)] = q < static_cast<int>(n) ? sort_key(a.src[off[0] + q * a.ss], a.descending) : ~0u;
    __syncthreads();
    constexpr int first_shift = first_key_bit<T>() / kRowBits * kRowBits;
#pragma unroll 1
    for (int shift = first_shift; shift < key_bits<T>(); shift += kRowBits) {
      // 1. count: the element's rank among this thread's earlier ones of its digit.
      uint32_t item[kRowItems];  // source position | digit << 16 | rank << (16 + kRowBits)
#pragma unroll
      for (int m = 0; m < kRowItems / 8; ++m) {
        uint32_t pos[8];
        if (shift == first_shift) {
#pragma unroll
          for (int k = 0; k < 8; ++k) pos[k] = static_cast<uint32_t>(t * kRowItems + m * 8 + k);
        } else {
          const uint4 v = reinterpret_cast<const uint4*>(perm)[perm_chunk(t * (kRowItems / 8) + m)];
          const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            pos[2 * k] = u[k] & 0xffffu;
            pos[2 * k + 1] = u[k] >> 16;
          }
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const uint32_t d = (keys[row_slot(pos[k])] >> shift) & (D - 1);
          item[m * 8 + k] = pos[k] | d << 16 | count_digit(cnt, threads, d) << (16 + kRowBits);
        }
      }
      __syncthreads();
      // 2. scan the counters.
      const uint32_t low_total = scan_counters(cnt, wsum);
      __syncthreads();
      // 3. scatter: each element to its digit's first position for this thread plus its rank.
#pragma unroll
      for (int k = 0; k < kRowItems; ++k) {
        const uint32_t d = (item[k] >> 16) & (D - 1);
        perm[perm_slot(digit_first(cnt, threads, d, low_total) + (item[k] >> (16 + kRowBits)))] =
            static_cast<uint16_t>(item[k]);
      }
      clear_counters(cnt, threads);  // only this thread reads its column now
      __syncthreads();
    }
    for (int q = t; q < static_cast<int>(n); q += threads) {
      const int i = perm[perm_slot(q)];
      a.indices[off[1] + q * a.is] = i;
      if (a.values) {
        T v;
        if (!value_of_key<T>(keys[row_slot(i)], a.descending, &v)) v = a.src[off[0] + i * a.ss];
        a.values[off[2] + q * a.vs] = v;
      }
    }
    __syncthreads();  // before the next row overwrites keys and perm
  }
}

}  // namespace

// Sorts the rows with radix_sort_kernel when they qualify (Note [GPU radix sort]); returns whether
// it did.
template <class T>
bool radix_sort_rows(const LaunchCtx& ctx, const SortArgs<T>& a) {
  if constexpr (sizeof(sort_key_t<T>) != 4) {
    return false;
  } else {
    const int64_t ws = ctx.warp_size;
    const int64_t threads = (a.n + kRowItems * ws - 1) / (kRowItems * ws) * ws;
    if (a.n <= tile_len<uint32_t, uint32_t>() || threads > kRowMaxThreads) return false;
    // keys (4 bytes) and perm (2) per position, the counter words, the scan's warp sums
    const int64_t bytes = threads * kRowItems * 6 + threads * kRowRows * 4 + threads / ws * 4;
    if (bytes > ctx.shared_per_block) return false;
    constexpr auto kernel = radix_sort_kernel<T>;
    gpu::allow_dynamic_shared<kernel>(bytes, ctx.op, ctx.device);
    gpu::launch<kernel>(ctx, row_grid(a.rows), static_cast<unsigned>(threads), static_cast<size_t>(bytes), a);
    return true;
  }
}

#define WICK_X(name, type, str) template bool radix_sort_rows<type>(const LaunchCtx& ctx, const SortArgs<type>& a);
WICK_DTYPES(WICK_X)
#undef WICK_X

}  // namespace wick::WICK_GPU_NS::kern
