// The bitonic sort of the GPU's sort and argsort (Note [GPU bitonic sort]): rows of up to one tile
// sorted by one block in shared memory, longer ones as sorted tiles merged through scratch memory.
// It takes every row the radix sorts leave (sort.cu picks).
//
// Note [GPU bitonic sort]
// A row of up to kTile pairs is sorted by one block in shared memory. Longer rows are cut into
// tiles sorted that way, then merged in global scratch memory: merging runs of length 2h into one
// of 4h ... is the usual bitonic network in its "flip" form (the first step compares position p of
// a run with its mirror image, the later steps p with p + h, h halving), so every run stays
// ascending. Steps with h >= kTile run as global passes (two steps per pass where two remain);
// the rest of each merge runs in shared memory, tile by tile, and the last merge writes the outputs.
#include <algorithm>
#include <cstdint>

#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"
#include "gpu/kernels/sort.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

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

}  // namespace

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

#define WICK_X(name, type, str)                                                                         \
  template void sort_slice<type, uint32_t>(const LaunchCtx& ctx, Backend& be, const SortArgs<type>& a); \
  template void sort_slice<type, uint64_t>(const LaunchCtx& ctx, Backend& be, const SortArgs<type>& a);
WICK_DTYPES(WICK_X)
#undef WICK_X

}  // namespace wick::WICK_GPU_NS::kern
