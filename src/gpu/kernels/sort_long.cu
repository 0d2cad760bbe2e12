// The long-row radix sort of the GPU's sort and argsort (Note [GPU long-row radix sort]): rows past
// what the one-block radix sort holds, or with 64-bit keys, sorted by passes of three kernels over
// the whole GPU through global memory.
//
// Note [GPU long-row radix sort]
// Rows longer than the one-block radix sort takes (more than 32768 32-bit keys, or 64-bit keys) and
// longer than one bitonic tile are sorted by an LSD radix sort of 8-bit digits through global memory
// (over the digits of Note [GPU sort key digits]), three kernels a digit: long_hist_kernel counts
// each tile's digits, long_scan_kernel turns the counts into each tile's first row position of each
// digit (by chunks of about sqrt(tiles) tiles, which spread even one row of millions over the GPU),
// long_scatter_kernel ranks each tile's elements by digit, stably, and writes them in runs. The
// passes carry the elements themselves with their indices (the first reads src, the last writes
// the outputs), so no pass reads src at random; every pass is stable and the first starts in index
// order, so the result is the unique order of the pairs (key, index), the CPU's. Where rows have
// few tiles and are few, the scatter scans its row's counts itself (self_scan: two launches a pass
// fewer); where the rows' small tiles (long_small_items) all fit the GPU at once, those spread few
// rows over more multiprocessors. Very few long rows (kLongFewRows) take this sort even where the
// one-block sort could, which would leave most of the GPU idle.
#include <algorithm>
#include <cstdint>

#include "gpu/kernels/block_scan.cuh"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"
#include "gpu/kernels/sort.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kDigits = 256;

// For one element per lane (step 3 of a pass, long_tile_pass): the lane's rank among the warp's
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

constexpr int kLongThreads = 256;  // also the digit count: the scan's threads are the digits
static_assert(kLongThreads == kDigits);
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

// Step 1 of a pass: for each tile of tile_len positions of a row, the count of every digit,
// hist[row][tile][digit]; the tile also adds its counts to those of its chunk of chunk_len
// consecutive tiles, chunk[row][chunk][digit] (zeroed before the first pass).
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

// Step 2 (without self_scan): one block per chunk, thread d for digit d. The chunk counts give the
// digit's total in the row and its count in the chunks before this one; an exclusive scan of the
// totals over the digits then gives the row position of the chunk's first element of digit d, and a
// walk over the chunk's tiles turns hist[row][tile][d] into the position of the tile's first
// element of digit d.
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

// Step 3, tile b (positions [q0, q0 + len) of row r): ranks its elements by digit, stably (ballots
// per warp and counts per (warp, digit)), puts them in shared memory in (digit, rank) order and
// writes them out from there, consecutive threads at consecutive positions of a digit's run.
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

// Two blocks per multiprocessor: at most 128 registers.
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

}  // namespace

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

#define WICK_X(name, type, str) \
  template bool long_radix_sort<type>(const LaunchCtx& ctx, Backend& be, const SortArgs<type>& a);
WICK_DTYPES(WICK_X)
#undef WICK_X

}  // namespace wick::WICK_GPU_NS::kern
