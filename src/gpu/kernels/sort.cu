// sort and argsort on the GPU, over the last dim, any src / values / indices strides.
//
// Note [GPU sort keys]
// Every element becomes the key of Note [Sort keys] (backend/reduce_math.h, shared with the CPU's
// radix sort) of its value in the compute type, whose plain integer order is the CPU's sort order
// (sort_before, Note [NaN order]). Pairs (key, index) are then sorted ascending with the index as
// tie-breaker: every pair is distinct, so the sorted order is unique and equals the CPU's stable
// sort exactly. A row is padded to a power of two with pairs (largest key, position >= n) that
// sort after every real element.
//
// Note [GPU bitonic sort]
// A row of up to kTile pairs is sorted by one block in shared memory. Longer rows are cut into
// tiles sorted that way, then merged in global scratch memory: merging runs of length 2h into one
// of 4h ... is the usual bitonic network in its "flip" form (the first step compares position p of
// a run with its mirror image, the later steps p with p + h, h halving), so every run stays
// ascending. Steps with h >= kTile run as global passes (two steps per pass where two remain);
// the rest of each merge runs in shared memory, tile by tile, and the last merge writes the outputs.
//
// Note [GPU radix sort]
// Rows longer than one bitonic tile, with 32-bit keys (every dtype but f64 and i64) and short enough
// for the block's shared memory (up to 32768 elements in 224 KB, with the opt-in above 48 KB of
// gpu::allow_dynamic_shared), are sorted by one block per row instead: an LSD radix sort of 4-bit
// digits over the keys, stable by construction, so the result is the unique order of the pairs
// (key, index) again. The block has a thread per 32 positions (kRowItems), whole warps of them;
// positions n..npad-1 pad the row with the largest key and sort after every element. Shared
// memory holds the row's keys by source position (`keys`, computed once), the permutation `perm`
// (u16 source positions in the current order) and, per thread, a column of 8 counter words whose
// low and high halves count digits d and d + 8. A pass over one digit:
//   1. thread t owns positions [32t, 32t + 32) of the current order and walks them in order,
//      counting each element's digit in its own column: the count before it is its rank among the
//      thread's elements of that digit. Position, digit and rank stay in a register.
//   2. an exclusive scan of the counter words in (word, thread) order turns each half into the
//      position of thread t's first element of its digit among the digits of that half; the high
//      halves' digits then start after every low-half digit (low_total).
//   3. each element goes to perm[that first position + its rank]: equal digits keep their order,
//      since earlier threads and earlier positions of a thread come first.
// perm is rewritten in place: every read of a pass ends (barrier) before its first write, the pass's
// elements waiting in registers. The values come out of the keys (value_of_key) except for the
// keys that do not determine them, a float zero (either sign) and NaN (any payload), which are read
// from src again, so they come out bit for bit. The keys array is swizzled (row_slot) so that the
// first pass's reads, 32 threads at a stride of 32 positions, fall in distinct banks; so is perm
// (perm_slot), for the vector reads of the later passes.
//
// On the H100, 4096 rows of 32768 f32 (scripts/probes/sort_rows.cu, the same scheme alone): this
// sort 3.10 ms, 8 passes. The one before it ranked 8-bit digits per warp with 8 ballots per
// element, counters per (warp, digit), and kept the values rather than the keys: 4 passes, 3.80 ms,
// with twice the instructions per pass of this one (240 against 187 million issued, ncu, on 528
// rows). __match_any_sync in place of the ballots was slower (4.70 ms); so were 512 threads of 64
// positions with 5-bit digits (3.85 ms, 7 passes). This one is bound by shared memory (71% of
// L1's throughput): each element costs a random key read, a counter read and write, a random u16
// write to perm and a share of the vector reads of perm per pass. Those vector reads had 4-way
// bank conflicts, a thread's 32 positions being 64 bytes apart from the next thread's; perm is
// swizzled in 16-byte chunks since (perm_slot): 3.10 -> 2.91 ms in the probe, 3.16 -> 2.90 in
// `wick bench` (torch 11.2). Reading the next row's keys into registers while writing this row's
// outputs gained 3% more in the probe, but in the library the 32 registers spilled (strided
// addressing) and it gained nothing; not kept. The memory traffic is the floor: the row read once,
// values and indices written once (0.73 ms; this sort reaches 25% of that rate). CUB's sorts of the
// same rows take 7.9-8.3 ms (segmented), and its one-array radix sort of the keys alone, no values,
// 2.9 ms (scripts/probes/sort_cub.cu). Shorter rows gain more, their smaller blocks sharing a
// multiprocessor (scripts/probes/sort_shapes.cpp, descending, library before and after this
// scheme, without the perm swizzle, torch in the same run): f32 [4096, 5000] 0.99 -> 0.41 ms (torch
// 1.80), [4096, 8192] 1.30 -> 0.70 (2.84), [2048, 16384] 1.13 -> 0.68 (2.87); bf16 [4096, 5000]
// 0.58 -> 0.28 (0.92), [4096, 32768] 2.21 -> 2.11 (5.24).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/reduce_math.h"
#include "cpu/dispatch.h"
#include "gpu/kernels/block_scan.cuh"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {

namespace {

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

// Whether pair (ka, ia) sorts before (kb, ib).
template <class K, class I>
__device__ __forceinline__ bool pair_before(K ka, I ia, K kb, I ib) {
  return ka < kb || (ka == kb && ia < ib);
}

// Puts the pairs at positions a < b in ascending order.
template <class K, class I, class P>
__device__ __forceinline__ void order_pair(K* key, I* idx, P a, P b) {
  const K ka = key[a], kb = key[b];
  const I ia = idx[a], ib = idx[b];
  if (pair_before(kb, ib, ka, ia)) {
    key[a] = kb;
    key[b] = ka;
    idx[a] = ib;
    idx[b] = ia;
  }
}

// The positions compared by pair t of a bitonic step with distance h = 2^lh (Note [GPU bitonic
// sort]); runs of 2h never cross a row, since rows are padded to a multiple of every run length.
template <class P>
__device__ __forceinline__ void step_pair(P t, int lh, bool flip, P* a, P* b) {
  const P h = P(1) << lh;
  const P start = (t >> lh) << (lh + 1), off = t & (h - 1);
  *a = start + off;
  *b = flip ? start + 2 * h - 1 - off : start + off + h;
}

// Steps h = 2^lh, 2^(lh-1), ..., 1 over the m pairs in shared memory; the first is a flip step
// when `flip`. Ends with a barrier.
template <class K, class I>
__device__ void shared_steps(K* key, I* idx, int m, int lh, bool flip) {
  for (; lh >= 0; --lh, flip = false) {
    for (int t = static_cast<int>(threadIdx.x); t < m / 2; t += static_cast<int>(blockDim.x)) {
      int a, b;
      step_pair(t, lh, flip, &a, &b);
      order_pair(key, idx, a, b);
    }
    __syncthreads();
  }
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

// Stores sorted position q of a row whose pair there has source index s.
template <class T>
__device__ __forceinline__ void store_sorted(const SortArgs<T>& a, const int64_t (&off)[3], int64_t q, int64_t s) {
  a.indices[off[1] + q * a.is] = s;
  if (a.values) a.values[off[2] + q * a.vs] = a.src[off[0] + s * a.ss];
}

// Sorts tiles of 2^lm pairs: tile b % tiles of row b / tiles. With scratch (tkey, tidx: rows x
// padded pairs) the sorted tile goes there; without, the tile is the whole row and the outputs
// are written.
template <class T, class I>
__global__ void __launch_bounds__(kSortThreads)
    sort_tiles_kernel(SortArgs<T> a, int lm, int64_t padded, sort_key_t<T>* tkey, I* tidx) {
  using K = sort_key_t<T>;
  constexpr int kTile = tile_len<K, I>();
  __shared__ K key[kTile];
  __shared__ I idx[kTile];
  const int m = 1 << lm;
  const int64_t tiles = padded >> lm;
  for (int64_t b = blockIdx.x; b < a.rows * tiles; b += gridDim.x) {
    const int64_t r = b / tiles, q0 = (b % tiles) << lm;
    int64_t off[3];
    row_offsets(a.m, r, off);
    for (int i = static_cast<int>(threadIdx.x); i < m; i += static_cast<int>(blockDim.x)) {
      const int64_t q = q0 + i;
      key[i] = q < a.n ? sort_key(a.src[off[0] + q * a.ss], a.descending) : ~K(0);
      idx[i] = static_cast<I>(q);
    }
    __syncthreads();
    for (int lk = 0; lk < lm; ++lk) shared_steps(key, idx, m, lk, true);
    for (int i = static_cast<int>(threadIdx.x); i < m; i += static_cast<int>(blockDim.x)) {
      const int64_t q = q0 + i;
      if (tkey) {
        tkey[r * padded + q] = key[i];
        tidx[r * padded + q] = idx[i];
      } else if (q < a.n) {
        store_sorted(a, off, q, static_cast<int64_t>(idx[i]));
      }
    }
    __syncthreads();  // before the next tile overwrites shared memory
  }
}

// Orders two pairs held in registers.
template <class K, class I>
__device__ __forceinline__ void order_regs(K& ka, I& ia, K& kb, I& ib) {
  if (pair_before(kb, ib, ka, ia)) {
    const K k = ka;
    const I i = ia;
    ka = kb;
    ia = ib;
    kb = k;
    ib = i;
  }
}

// The steps with distances 2^lh and 2^(lh-1) (both >= kTile) over all rows of the scratch, in one
// pass: thread t owns the four positions those two steps connect (`quads` = a quarter of the
// scratch's length). Flip step first when `flip`.
template <class K, class I>
__global__ void __launch_bounds__(kBlock) merge_two_steps_kernel(K* key, I* idx, int64_t quads, int lh, bool flip) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t h = int64_t{1} << lh, q = h / 2;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < quads; t += step) {
    const int64_t start = (t >> (lh - 1)) << (lh + 1), off = t & (q - 1);
    // a0 < a1 in the run's first half; b0, b1 their partners of the first step in the second.
    const int64_t a0 = start + off, a1 = a0 + q;
    const int64_t b0 = flip ? start + 2 * h - 1 - off : a0 + h, b1 = flip ? b0 - q : a1 + h;
    K ka0 = key[a0], ka1 = key[a1], kb0 = key[b0], kb1 = key[b1];
    I ia0 = idx[a0], ia1 = idx[a1], ib0 = idx[b0], ib1 = idx[b1];
    order_regs(ka0, ia0, kb0, ib0);
    order_regs(ka1, ia1, kb1, ib1);
    order_regs(ka0, ia0, ka1, ia1);
    if (flip)
      order_regs(kb1, ib1, kb0, ib0);  // b1 < b0 in the flip form
    else
      order_regs(kb0, ib0, kb1, ib1);
    key[a0] = ka0, key[a1] = ka1, key[b0] = kb0, key[b1] = kb1;
    idx[a0] = ia0, idx[a1] = ia1, idx[b0] = ib0, idx[b1] = ib1;
  }
}

// One step with distance 2^lh >= kTile over all rows of the scratch (`pairs` = half its length).
template <class K, class I>
__global__ void __launch_bounds__(kBlock) merge_step_kernel(K* key, I* idx, int64_t pairs, int lh, bool flip) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < pairs; t += step) {
    int64_t x, y;
    step_pair(t, lh, flip, &x, &y);
    order_pair(key, idx, x, y);
  }
}

// The steps with distance < kTile of a merge, tile by tile; the last merge writes the outputs.
template <class T, class I>
__global__ void __launch_bounds__(kSortThreads)
    merge_tiles_kernel(SortArgs<T> a, int64_t padded, sort_key_t<T>* tkey, I* tidx, bool last) {
  using K = sort_key_t<T>;
  constexpr int kTile = tile_len<K, I>();
  constexpr int kLogTile = __builtin_ctz(kTile);
  __shared__ K key[kTile];
  __shared__ I idx[kTile];
  const int64_t tiles = padded / kTile;
  for (int64_t b = blockIdx.x; b < a.rows * tiles; b += gridDim.x) {
    const int64_t r = b / tiles, q0 = (b % tiles) * kTile;
    K* gk = tkey + r * padded + q0;
    I* gi = tidx + r * padded + q0;
    for (int i = static_cast<int>(threadIdx.x); i < kTile; i += static_cast<int>(blockDim.x)) {
      key[i] = gk[i];
      idx[i] = gi[i];
    }
    __syncthreads();
    shared_steps(key, idx, kTile, kLogTile - 1, false);
    if (last) {
      if (q0 < a.n) {
        int64_t off[3];
        row_offsets(a.m, r, off);
        for (int i = static_cast<int>(threadIdx.x); i < kTile; i += static_cast<int>(blockDim.x))
          if (q0 + i < a.n) store_sorted(a, off, q0 + i, static_cast<int64_t>(idx[i]));
      }
    } else {
      for (int i = static_cast<int>(threadIdx.x); i < kTile; i += static_cast<int>(blockDim.x)) {
        gk[i] = key[i];
        gi[i] = idx[i];
      }
    }
    __syncthreads();
  }
}

constexpr int kDigits = 256;

// For one element per lane (Note [GPU long-row radix sort], step 3): the lane's rank among the warp's
// elements of digit d so far, counted in the warp's counters cnt (one per digit), which it
// advances by the warp's elements of d. Lanes with !valid take no part; every lane calls it.
__device__ __forceinline__ uint32_t warp_digit_rank(uint16_t* cnt, uint32_t d, bool valid) {
  const int lane = static_cast<int>(threadIdx.x) % gpu::warp_size();
  gpu::lane_mask_t peers = gpu::ballot(valid);
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const bool bit = (d >> b) & 1;
    const gpu::lane_mask_t m = gpu::ballot(bit);
    peers &= bit ? m : ~m;
  }
  const uint32_t before = valid ? cnt[d] : 0u;
  gpu::syncwarp();  // every lane has read before the last peer writes
  if (valid && (peers >> lane) == 1) cnt[d] = static_cast<uint16_t>(before + gpu::popc(peers));
  gpu::syncwarp();
  const gpu::lane_mask_t below = (gpu::lane_mask_t{1} << lane) - 1;
  return before + static_cast<uint32_t>(gpu::popc(peers & below));
}

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
// 8 distinct 16-byte bank groups (4-way conflicts before).
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
// the key bits of Note [GPU sort key digits].
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

// Note [GPU long-row radix sort]
// Rows longer than the one-block radix sort takes (more than 32768 f32 elements, or 64-bit keys)
// and longer than one bitonic tile are sorted by an LSD radix sort of 8-bit digits through global
// memory (over the digits of Note [GPU sort key digits]), three kernels per digit:
//   1. long_hist_kernel: for each tile of tile_len positions of a row, the count of every
//      digit, hist[row][tile][digit]; the tile also adds its counts to those of its chunk of
//      chunk_len consecutive tiles, chunk[row][chunk][digit] (zeroed before the first pass).
//   2. long_scan_kernel: one block per chunk, thread d for digit d. The chunk counts give the
//      digit's total in the row and its count in the chunks before this one; an exclusive scan of
//      the totals over the digits then gives the row position of the chunk's first element of
//      digit d, and a walk over the chunk's tiles turns hist[row][tile][d] into the position of
//      the tile's first element of digit d.
//   3. long_scatter_kernel: each tile ranks its elements by digit, stably (ballots per warp and
//      counts per (warp, digit), as in Note [GPU radix sort]), puts them in shared memory in
//      (digit, rank) order and writes them out from there: consecutive threads write consecutive
//      positions of a digit's run, at the position of step 2.
// The passes carry the source elements themselves (each pass computes their keys) with their
// indices: the first pass reads them from src (the indices are the positions), the last writes
// the outputs instead of the scratch buffers, so no pass reads src at random. Every pass is stable
// and the first starts in index order, so the result is the unique order of the pairs (key,
// index) again, the CPU's. Chunks of about sqrt(tiles) tiles keep step 2 short and spread over
// the GPU even for one row of millions of elements. Where rows have few tiles and there are few of
// them (kLongSelfScanTiles, kLongSelfScanReads), there are no chunks and no step 2: each tile of
// the scatter reads the counts of all its row's tiles and scans them itself (a thread reads 4
// digits of every 4th tile, 16 bytes at a time; the 4 slices are then summed in shared memory),
// which saves two launches a pass where the launches are most of the time (one row of a
// vocabulary). Tiles are kLongThreads * long_items() long (4096 positions for 32-bit keys, 2048
// for 64-bit ones), or a quarter of that (long_small_items) where the rows' small tiles all fit the
// GPU at once, two blocks a multiprocessor: one row of 128256 f32 has 32 tiles, which leave 100 of
// the H100's 132 multiprocessors idle, and each issues its tile's ranking alone; 126 small tiles
// spread it. Session 33, scripts/probes/sort_shapes.cpp on the H100, descending, ms, large tiles
// and self-scans of at most 64 tiles against this: f32 [1, 32000] 0.064 -> 0.044, [1, 128256]
// 0.067 -> 0.054, [1, 151936] 0.068 -> 0.058, [2, 128256] 0.067 -> 0.061; bf16 [1, 32000] 0.034 ->
// 0.026, [1, 128256] 0.035 -> 0.030 (torch 0.091, 0.095 for the last two there); [4, 128256] and
// more rows keep the large tiles (0.070 f32 there with either: 504 small tiles take two waves).
// Counting the next pass's digits in the scatter (global atomics by destination tile) instead of
// in a histogram kernel of the next pass saved 3-5% on one row and lost 30-50% from 4 rows on
// (f32 [8, 128256] 0.086 -> 0.127 ms); not kept. Very few long
// rows (at most kLongFewRows, and no more than the multiprocessors, each at least kLongFewRowsMin
// long) take this sort even where the one-block radix sort could: one block per row leaves most of
// the GPU idle, and a row of 32768 f32 takes that block about 85 us. Measured in session 18 on the
// H100 (scripts/probes/sort_shapes.cpp, this sort against the one-block one), f32 [1, 32000] 0.069
// against 0.083 ms, [16, 32000] 0.074 against 0.084, [32, 32000] 0.093 against 0.086, [128, 32000]
// 0.278 against 0.099, [1, 20000] 0.067 against 0.060, [32, 24000] 0.087 against 0.068; bf16
// [16, 32000] 0.040 against 0.055, [64, 32000] 0.075 against 0.056, [1, 20000] 0.038 against 0.041.
// Before, every row count up to the multiprocessors from 16384 long took this sort, from when the
// one-block sort was slower ([1, 32000] f32 0.124 ms).
//
// On the H100, descending f32 (torch in the same run): the first version of this sort kept keys
// in the scratch (the last pass gathered the values from src by index, at random for one long
// row), had one block scan a whole row and gave blocks up to 8 tiles each: [1, 32000] 0.076 ms,
// [1, 128256] 0.083, [256, 128256] 1.92, [1, 2^24] 1.77 (torch 0.110, 0.105, 2.83, 0.93); under
// ncu, for [1, 2^24], a pass took 290-530 us in the scatter and 51 us in the scan. This one:
// 0.069, 0.075, 1.64, 0.92 ms (torch 0.086, 0.093, 2.83, 0.94); a pass of [1, 2^24] is now about
// 34 us of histogram, 21 of scan and 210 of scatter, which issues about 200 instructions per
// warp's element at 0.57 a cycle per scheduler with a quarter of the warps active (128 registers).
// Three and four blocks per multiprocessor (80 and 64 registers, ranks packed in pairs) were no
// faster: within 10% either way, depending on the shape. bf16 takes 2 passes (Note [GPU sort key
// digits]): 0.037 ms for [1, 32000], 0.78 for [256, 128256], 0.42 for [1, 2^24] (torch 0.067,
// 1.31, 0.47). Ranking each tile as the one-block sort ranks a row (Note [GPU radix sort]: each
// thread's 16 positions loaded in a run, then two stable 4-bit sorts of the tile in shared memory
// with per-thread counters) was slower, measured in session 18: f32 [256, 128256] 1.64 -> 2.12 ms,
// [1, 2^24] 0.92 -> 1.23, bf16 [256, 128256] 0.79 -> 1.00; not kept.
constexpr int kLongThreads = 256;  // also the digit count: the scan's threads are the digits
static_assert(kLongThreads == kDigits);
constexpr int64_t kLongFewRows = 16;        // at most this many rows,
constexpr int64_t kLongFewRowsMin = 24576;  // each at least this long, take this sort
// Where the scatter finds its positions itself: at most this many tiles a row, and at most
// kLongSelfScanReads rows of counts read by all tiles together (each tile reads its row's).
constexpr int64_t kLongSelfScanTiles = 256;
constexpr int64_t kLongSelfScanReads = 32768;

template <class T>
constexpr int long_items() {  // positions per thread: tiles of 4096 (32-bit keys) or 2048
  return sizeof(sort_key_t<T>) == 4 ? 16 : 8;
}
// Positions per thread in the small tiles of rows that long_items' tiles would leave most
// multiprocessors without a block.
template <class T>
constexpr int long_small_items() {
  return long_items<T>() / 4;
}

template <class T>
struct LongPass {
  SortArgs<T> a;
  const T* vals_in;  // null in the first pass: the elements of src, the indices their positions
  const uint32_t* idx_in;
  T* vals_out;  // null in the last pass: the outputs are written
  uint32_t* idx_out;
  uint32_t* hist;     // [rows][tiles][kDigits]
  uint32_t* chunk;    // [rows][chunks][kDigits], this pass's
  int64_t tiles;      // per row
  int64_t chunk_len;  // tiles per chunk
  int64_t chunks;     // per row
  bool self_scan;     // the scatter finds its positions in hist itself: no chunks, no scan kernel
  int shift;
  int tile_len;  // kLongThreads * the scatter's items
};

// The element at position q of row r in this pass's input.
template <class T>
__device__ __forceinline__ T long_value(const LongPass<T>& p, const int64_t (&off)[3], int64_t r, int64_t q) {
  return p.vals_in ? p.vals_in[r * p.a.n + q] : p.a.src[off[0] + q * p.a.ss];
}

// The digit of this pass of element v's key.
template <class T>
__device__ __forceinline__ uint32_t long_digit(const LongPass<T>& p, T v) {
  return static_cast<uint32_t>(sort_key(v, p.a.descending) >> p.shift) & (kDigits - 1);
}

// Tile b's range: positions [q0, q0 + len) of row r, whose operand offsets go to off.
template <class T>
__device__ __forceinline__ void long_range(const LongPass<T>& p, int64_t b, int64_t* r, int64_t (&off)[3], int64_t* q0,
                                           int* len) {
  *r = b / p.tiles;
  *q0 = (b % p.tiles) * p.tile_len;
  *len = static_cast<int>(p.a.n - *q0 < p.tile_len ? p.a.n - *q0 : p.tile_len);
  row_offsets(p.a.m, *r, off);
}

__global__ void __launch_bounds__(kLongThreads) long_zero_kernel(uint32_t* p, int64_t n) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) p[i] = 0;
}

template <class T>
__global__ void __launch_bounds__(kLongThreads) long_hist_kernel(LongPass<T> p) {
  __shared__ uint32_t h[kDigits];
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t b = blockIdx.x; b < p.a.rows * p.tiles; b += gridDim.x) {
    int64_t r, q0, off[3];
    int len;
    long_range(p, b, &r, off, &q0, &len);
    h[t] = 0;  // thread t: digit t, here and in the copy out (no other thread writes it between)
    __syncthreads();
#pragma unroll 4
    for (int i = t; i < len; i += kLongThreads) atomicAdd(&h[long_digit(p, long_value(p, off, r, q0 + i))], 1u);
    __syncthreads();
    const uint32_t c = h[t];
    p.hist[b * kDigits + t] = c;
    if (!p.self_scan && c != 0) atomicAdd(&p.chunk[(r * p.chunks + (b % p.tiles) / p.chunk_len) * kDigits + t], c);
  }
}

__global__ void __launch_bounds__(kLongThreads) long_scan_kernel(uint32_t* hist, const uint32_t* chunk, int64_t rows,
                                                                 int64_t tiles, int64_t chunk_len, int64_t chunks) {
  __shared__ uint32_t part[2][kDigits];
  constexpr int kBatch = 32;  // tiles whose counts are loaded before any is rewritten
  const int d = static_cast<int>(threadIdx.x);
  for (int64_t b = blockIdx.x; b < rows * chunks; b += gridDim.x) {
    const int64_t r = b / chunks, c = b % chunks;
    const uint32_t* cs = chunk + r * chunks * kDigits + d;
    uint32_t before = 0, total = 0;
#pragma unroll 32
    for (int64_t k = 0; k < chunks; ++k) {
      const uint32_t v = cs[k * kDigits];
      before += k < c ? v : 0u;
      total += v;
    }
    uint32_t all = 0;
    uint32_t at = block_exclusive_scan(total, part, &all) + before;
    uint32_t* h = hist + (r * tiles + c * chunk_len) * kDigits + d;
    const int64_t len = tiles - c * chunk_len < chunk_len ? tiles - c * chunk_len : chunk_len;
    for (int64_t k0 = 0; k0 < len; k0 += kBatch) {
      uint32_t v[kBatch];
#pragma unroll
      for (int j = 0; j < kBatch; ++j) v[j] = k0 + j < len ? h[(k0 + j) * kDigits] : 0u;
#pragma unroll
      for (int j = 0; j < kBatch; ++j) {
        if (k0 + j < len) h[(k0 + j) * kDigits] = at;
        at += v[j];
      }
    }
  }
}

// The self-scan of long_start reads the counts 4 digits a thread, slice s of the threads taking
// every kScanSlices-th tile from tile s.
constexpr int kScanSlices = kLongThreads * 4 / kDigits;

// Shared memory of one tile of the scatter.
template <class T, int Items>
struct LongShared {
  static constexpr int kWarps = kLongThreads / gpu::warp_size(), kTile = kLongThreads * Items;
  uint16_t cnt[kWarps][kDigits];  // counts per (warp, digit), then the warp's first tile position
  int64_t base[kDigits];          // row position of the tile's digit run, less its tile position
  uint32_t part[2][kDigits];      // block_exclusive_scan's
  union alignas(16) {
    // The tile in (digit, rank) order; elements as their bits (HIP allows no __shared__ variable
    // with a constructor, and bf16, f16 and f8e4m3 have one).
    struct {
      raw_t<T> val[kTile];
      uint32_t idx[kTile];
      uint8_t digit[kTile];
    } tile;
    uint32_t slice[2][kScanSlices][kDigits];  // long_start's sums per slice: before, total
  };
};

// Thread t: the row position of tile b's first element of digit t, from the scan kernel, or where
// rows have few tiles, from the counts of the row's tiles. Every thread of the block calls it.
template <class T, int Items>
__device__ __forceinline__ uint32_t long_start(const LongPass<T>& p, int64_t b, int64_t r, LongShared<T, Items>& sh) {
  const int t = static_cast<int>(threadIdx.x);
  if (!p.self_scan) return p.hist[b * kDigits + t];
  // Thread t: digits 4g .. 4g + 3 of tiles s, s + kScanSlices, ...
  constexpr int kGroups = kDigits / 4;
  const int g = t % kGroups, s = t / kGroups;
  const uint4* h = reinterpret_cast<const uint4*>(p.hist + r * p.tiles * kDigits) + g;
  const int64_t mine = b - r * p.tiles;
  uint4 before{0, 0, 0, 0}, total{0, 0, 0, 0};
#pragma unroll 8
  for (int64_t k = s; k < p.tiles; k += kScanSlices) {
    const uint4 v = h[k * kGroups];
    total.x += v.x, total.y += v.y, total.z += v.z, total.w += v.w;
    if (k < mine) before.x += v.x, before.y += v.y, before.z += v.z, before.w += v.w;
  }
  reinterpret_cast<uint4*>(sh.slice[0][s])[g] = before;
  reinterpret_cast<uint4*>(sh.slice[1][s])[g] = total;
  __syncthreads();
  uint32_t b_sum = 0, t_sum = 0;  // thread t: digit t
#pragma unroll
  for (int k = 0; k < kScanSlices; ++k) b_sum += sh.slice[0][k][t], t_sum += sh.slice[1][k][t];
  uint32_t all = 0;
  return block_exclusive_scan(t_sum, sh.part, &all) + b_sum;
}

// Stores the pair (v, source index s) at sorted position q of a row.
template <class T>
__device__ __forceinline__ void store_pair(const SortArgs<T>& a, const int64_t (&off)[3], int64_t q, uint32_t s, T v) {
  a.indices[off[1] + q * a.is] = s;
  if (a.values) a.values[off[2] + q * a.vs] = v;
}

// Tile b (positions [q0, q0 + len) of row r): ranks, reorders and writes it.
template <class T, int kItems>
__device__ __forceinline__ void long_tile_pass(const LongPass<T>& p, const int64_t (&off)[3], int64_t b, int64_t r,
                                               int64_t q0, int len, LongShared<T, kItems>& sh) {
  constexpr int W = LongShared<T, kItems>::kWarps;
  constexpr int ws = gpu::warp_size();
  auto& cnt = sh.cnt;
  const int t = static_cast<int>(threadIdx.x), lane = t % ws, w = t / ws;
  for (int d = lane; d < kDigits; d += ws) cnt[w][d] = 0;
  // Warp w holds tile positions [w * kItems * ws, (w + 1) * kItems * ws), lane by lane.
  T val[kItems];
  uint32_t idx[kItems];
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const int j = (w * kItems + it) * ws + lane;
    val[it] = j < len ? long_value(p, off, r, q0 + j) : T();
    idx[it] = j < len ? (p.idx_in ? p.idx_in[r * p.a.n + q0 + j] : static_cast<uint32_t>(q0 + j)) : 0u;
  }
  const uint32_t start = long_start(p, b, r, sh);
  gpu::syncwarp();                    // the warp's counters are zero
  uint32_t rank[(kItems + 1) / 2];    // two 16-bit ranks a register
  uint32_t digits[(kItems + 3) / 4];  // four digits a register
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    const bool valid = (w * kItems + it) * ws + lane < len;
    const uint32_t d = long_digit(p, val[it]);
    digits[it / 4] = it % 4 ? digits[it / 4] | d << (8 * (it % 4)) : d;
    const uint32_t rk = warp_digit_rank(cnt[w], d, valid);
    rank[it / 2] = it % 2 ? rank[it / 2] | rk << 16 : rk;
  }
  __syncthreads();
  {  // thread t: digit t
    uint32_t total = 0;
    for (int v = 0; v < W; ++v) total += cnt[v][t];
    uint32_t all = 0;
    uint32_t at = block_exclusive_scan(total, sh.part, &all);
    sh.base[t] = static_cast<int64_t>(start) - at;
    for (int v = 0; v < W; ++v) {
      const uint32_t c = cnt[v][t];
      cnt[v][t] = static_cast<uint16_t>(at);
      at += c;
    }
  }
  __syncthreads();
#pragma unroll
  for (int it = 0; it < kItems; ++it) {
    if ((w * kItems + it) * ws + lane < len) {
      const uint32_t d = digits[it / 4] >> (8 * (it % 4)) & 0xffu;
      const int at = cnt[w][d] + static_cast<int>(rank[it / 2] >> (16 * (it % 2)) & 0xffffu);
      sh.tile.val[at] = bits_of<raw_t<T>>(val[it]);
      sh.tile.idx[at] = idx[it];
      sh.tile.digit[at] = static_cast<uint8_t>(d);
    }
  }
  __syncthreads();
  for (int i = t; i < len; i += kLongThreads) {
    const T v = bits_of<T>(sh.tile.val[i]);
    const uint32_t x = sh.tile.idx[i];
    const int64_t q = sh.base[sh.tile.digit[i]] + i;
    if (p.vals_out) {
      p.vals_out[r * p.a.n + q] = v;
      p.idx_out[r * p.a.n + q] = x;
    } else {
      store_pair(p.a, off, q, x, v);
    }
  }
  __syncthreads();  // before the next tile reuses shared memory
}

// Two blocks per multiprocessor: at most 128 registers (Note [GPU long-row radix sort] on three
// and four).
template <class T, int Items>
__global__ void __launch_bounds__(kLongThreads, 2) long_scatter_kernel(LongPass<T> p) {
  __shared__ LongShared<T, Items> sh;
  for (int64_t b = blockIdx.x; b < p.a.rows * p.tiles; b += gridDim.x) {
    int64_t r, q0, off[3];
    int len;
    long_range(p, b, &r, off, &q0, &len);
    long_tile_pass(p, off, b, r, q0, len, sh);
  }
}

// Sorts the rows with the long-row radix sort (Note [GPU long-row radix sort]) when their length
// fits its 32-bit positions; returns whether it did.
template <class T>
bool long_radix_sort(const LaunchCtx& ctx, Backend& be, const SortArgs<T>& a) {
  if (a.n > int64_t{UINT32_MAX}) return false;
  constexpr int first = first_key_bit<T>() / 8, passes = key_bits<T>() / 8 - first;
  const int64_t big = kLongThreads * long_items<T>();
  const int64_t small_len = kLongThreads * long_small_items<T>();
  // Small tiles where they all fit the GPU at once (two blocks a multiprocessor), so few rows
  // spread over more multiprocessors.
  const bool small = a.rows * ((a.n + small_len - 1) / small_len) <= 2 * static_cast<int64_t>(ctx.multiprocessors);
  const int tile_len = static_cast<int>(small ? small_len : big);
  const int64_t tiles = (a.n + tile_len - 1) / tile_len, total = a.rows * a.n;
  // Rows of few tiles: the scatter reads the counts of all the row's tiles itself. Otherwise chunks
  // of about sqrt(tiles) tiles.
  const bool self_scan = tiles <= kLongSelfScanTiles && a.rows * tiles * tiles <= kLongSelfScanReads;
  int64_t chunk_len = 1;
  while (chunk_len * chunk_len < tiles) chunk_len *= 2;
  const int64_t chunks = (tiles + chunk_len - 1) / chunk_len, chunk_words = self_scan ? 0 : a.rows * chunks * kDigits;
  Scratch hist(be, a.rows * tiles * kDigits * static_cast<int64_t>(sizeof(uint32_t)));
  Scratch chunk(be, passes * chunk_words * static_cast<int64_t>(sizeof(uint32_t)));
  Scratch vals[2], ids[2];
  for (int k = 0; k < std::min(passes - 1, 2); ++k) {
    vals[k] = Scratch(be, total * static_cast<int64_t>(sizeof(T)));
    ids[k] = Scratch(be, total * static_cast<int64_t>(sizeof(uint32_t)));
  }
  auto* chunk0 = static_cast<uint32_t*>(chunk.get());
  if (!self_scan) {
    gpu::launch<long_zero_kernel>(
        ctx, row_grid(std::min<int64_t>((passes * chunk_words + kLongThreads - 1) / kLongThreads, 1024)), kLongThreads,
        0, chunk0, passes * chunk_words);
  }
  const unsigned grid = row_grid(a.rows * tiles);
  LongPass<T> p{a,         nullptr, nullptr,   nullptr, nullptr, static_cast<uint32_t*>(hist.get()), nullptr, tiles,
                chunk_len, chunks,  self_scan, 0,       tile_len};
  for (int pass = 0; pass < passes; ++pass) {
    const bool last = pass == passes - 1;
    p.shift = 8 * (first + pass);
    p.chunk = self_scan ? nullptr : chunk0 + pass * chunk_words;
    p.vals_out = last ? nullptr : static_cast<T*>(vals[pass % 2].get());
    p.idx_out = last ? nullptr : static_cast<uint32_t*>(ids[pass % 2].get());
    gpu::launch<long_hist_kernel<T>>(ctx, grid, kLongThreads, 0, p);
    if (!self_scan) {
      gpu::launch<long_scan_kernel>(ctx, row_grid(a.rows * chunks), kLongThreads, 0, p.hist, p.chunk, a.rows, tiles,
                                    chunk_len, chunks);
    }
    by_flag(small, [&]<bool kSmall>() {
      constexpr int kItems = kSmall ? long_small_items<T>() : long_items<T>();
      gpu::launch<long_scatter_kernel<T, kItems>>(ctx, grid, kLongThreads, 0, p);
    });
    p.vals_in = p.vals_out;
    p.idx_in = p.idx_out;
  }
  return true;
}

int log2_ceil(int64_t n) {
  int l = 0;
  while ((int64_t{1} << l) < n) ++l;
  return l;
}

template <class T, class I>
void sort_slice(const LaunchCtx& ctx, Backend& be, const SortArgs<T>& a) {
  using K = sort_key_t<T>;
  constexpr int kTile = tile_len<K, I>();
  const int lp = log2_ceil(a.n);
  const int64_t padded = int64_t{1} << lp;
  if (padded <= kTile) {
    const int threads = static_cast<int>(std::clamp<int64_t>(padded / 2, 32, kSortThreads));
    gpu::launch<sort_tiles_kernel<T, I>>(ctx, row_grid(a.rows), threads, 0, a, lp, padded, nullptr, nullptr);
    return;
  }
  const int lt = log2_ceil(kTile);
  Scratch keys(be, a.rows * padded * static_cast<int64_t>(sizeof(K)));
  Scratch ids(be, a.rows * padded * static_cast<int64_t>(sizeof(I)));
  K* tk = static_cast<K*>(keys.get());
  I* ti = static_cast<I*>(ids.get());
  const unsigned tile_grid = row_grid(a.rows * (padded / kTile));
  gpu::launch<sort_tiles_kernel<T, I>>(ctx, tile_grid, kSortThreads, 0, a, lt, padded, tk, ti);
  const int64_t pairs = a.rows * padded / 2;
  for (int lk = lt + 1; lk <= lp; ++lk) {  // merge runs of 2^(lk-1) into runs of 2^lk
    for (int lh = lk - 1; lh >= lt;) {     // global steps, two per pass where two remain
      if (lh - 1 >= lt) {
        gpu::launch<merge_two_steps_kernel<K, I>>(ctx, grid_for(ctx, pairs / 2), kBlock, 0, tk, ti, pairs / 2, lh,
                                                  lh == lk - 1);
        lh -= 2;
      } else {
        gpu::launch<merge_step_kernel<K, I>>(ctx, grid_for(ctx, pairs), kBlock, 0, tk, ti, pairs, lh, lh == lk - 1);
        lh -= 1;
      }
    }
    gpu::launch<merge_tiles_kernel<T, I>>(ctx, tile_grid, kSortThreads, 0, a, padded, tk, ti, lk == lp);
  }
}

}  // namespace

void sort(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& values, const TensorArg& indices,
          bool descending) {
  if (src.numel() == 0) return;
  const bool want_values = values.data != nullptr;
  const TensorArg& vt = want_values ? values : indices;  // argsort: a stand-in with the right shape
  const int64_t n = src.shape().back();
  cpu::dispatch(
      src.dtype,
      [&]<class T>() {
        auto slice = [&](const RowMeta<3>& m, int64_t rows, const std::array<int64_t, 3>& base) {
          SortArgs<T> a{m,
                        rows,
                        n,
                        src.ptr<T>() + base[0],
                        src.layout.strides().back(),
                        indices.ptr<int64_t>() + base[1],
                        indices.layout.strides().back(),
                        want_values ? values.ptr<T>() + base[2] : nullptr,
                        vt.layout.strides().back(),
                        descending};
          // One row per block leaves most of the GPU idle when rows are few (Note [GPU long-row
          // radix sort]).
          const bool few = rows <= std::min<int64_t>(kLongFewRows, ctx.multiprocessors) && n >= kLongFewRowsMin;
          if (!few && radix_sort_rows(ctx, a)) return;
          if (n > tile_len<sort_key_t<T>, uint32_t>() && long_radix_sort(ctx, be, a)) return;
          // Positions of the padded row (Note [GPU sort keys]) in 32 bits when they fit.
          if (log2_ceil(n) <= 32)
            sort_slice<T, uint32_t>(ctx, be, a);
          else
            sort_slice<T, uint64_t>(ctx, be, a);
        };
        for_each_row_slice<3>(src.shape(), {&src.layout.strides(), &indices.layout.strides(), &vt.layout.strides()},
                              slice);
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
