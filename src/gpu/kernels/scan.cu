// cumsum on the GPU, over the last dim, any src and dst strides.
//
// Note [GPU scans]
// Accumulators are the CPU's (scan_acc_t, Note [Reduction accumulators]): integers in 64 bits with
// wrap-around, exact in any order; f32 in f64, 8/16-bit floats in f32, f64 in f64, where the GPU's
// order differs from the CPU's sequential one only in rounding. A block scans a range of one row
// chunk by chunk, the carry passing from chunk to chunk, in one of two ways:
//  - vector: unit-stride rows whose starts are all vector-aligned; thread t's vector j of a chunk
//    holds elements (j * threads + t) * V on, loads coalesced and issued a chunk ahead.
//  - staged (any strides): a chunk of kChunk elements is loaded coalesced into shared memory, each
//    thread adds up kScanItems consecutive ones, the block scans the thread totals.
// Three kernels: rows (a block per row); split rows, where too few rows fill the device (one pass
// sums segments of whole chunks, a second scans each from the sum of those before it); columns,
// where the rows are adjacent in memory (a thread per row adds in the CPU's order, a warp reading
// neighbouring addresses).
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/dispatch.h"
#include "backend/reduce_math.h"
#include "gpu/kernels/block_scan.cuh"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kScanThreads = 256;
constexpr int kScanItems = 8;
constexpr int kChunk = kScanThreads * kScanItems;
constexpr int kMaxScanWarps = kScanThreads / 32;  // warps per block at the narrowest warp width
constexpr int64_t kColumnRows = 4096;             // rows that keep the column kernel's threads busy

// The vector way's chunk: kScanVecs vectors of kScanVec elements per thread; 32 bytes (two 16-byte
// vectors) for 4- and 8-byte types, 8 elements (one vector) for 2- and 1-byte types, whose
// conversions leave no registers for more.
template <class T>
constexpr int kScanVec = sizeof(T) >= 2 ? static_cast<int>(16 / sizeof(T)) : 8;
template <class T>
constexpr int kScanVecs = sizeof(T) >= 4 ? 2 : 1;
template <class T>
constexpr int vec_chunk() {
  return kScanThreads * kScanVecs<T> * kScanVec<T>;
}
// Resident blocks per multiprocessor the block kernels are compiled for: at most 64 registers a
// thread on NVIDIA, so that 4 blocks of the vector way keep 32 KiB of reads in flight per SM (HIP
// reads it as at least 4 waves per SIMD).
constexpr int kScanMinBlocks = 4;

// Shared-memory slot of chunk element j, padded to spread a thread's consecutive items over banks.
__device__ __forceinline__ int slot(int j) { return j + (j >> 5); }

template <class Acc>
struct ScanShared {
  Acc buf[kChunk + kChunk / 32];
  Acc part[2][kScanThreads];
};

// The vector way's warp sums of a chunk, [buffer][vector round][warp] (Note [GPU scans]).
template <class T, class Acc>
struct VecScanShared {
  Acc warp[2][kScanVecs<T>][kMaxScanWarps];
};

template <bool kVec, class T, class Acc>
using ScanSharedOf = std::conditional_t<kVec, VecScanShared<T, Acc>, ScanShared<Acc>>;

// Sum of v over the block's threads, the same value in every thread (one call per kernel: `warps`
// is not free again afterwards).
template <class Acc>
__device__ Acc block_sum(Acc v, Acc (&warps)[kMaxScanWarps]) {
  constexpr int kLanes = gpu::warp_size();
  for (int m = kLanes / 2; m > 0; m >>= 1) v += gpu::shfl_xor(v, m);
  const int t = static_cast<int>(threadIdx.x);
  if (t % kLanes == 0) warps[t / kLanes] = v;
  __syncthreads();
  Acc s = 0;
  for (int w = 0; w < kScanThreads / kLanes; ++w) s += warps[w];
  return s;
}

// Staged way (Note [GPU scans]): scans elements [begin, end) of one row, starting from `carry`, and
// returns the running sum at `end`. Without kWrite nothing is stored: the return value is the
// range's sum plus carry.
template <bool kWrite, class T, class Acc>
__device__ Acc scan_range(ScanShared<Acc>& sh, const T* in, int64_t ss, T* out, int64_t ds, int64_t begin, int64_t end,
                          Acc carry) {
  const int t = static_cast<int>(threadIdx.x);
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
#pragma unroll
    for (int k = 0; k < kScanItems; ++k) {
      const int j = k * kScanThreads + t;
      const int64_t i = c0 + j;
      sh.buf[slot(j)] = i < end ? sum_load<Acc>(in[i * ss]) : Acc(0);
    }
    __syncthreads();
    Acc mine = 0;
#pragma unroll
    for (int k = 0; k < kScanItems; ++k) mine += sh.buf[slot(t * kScanItems + k)];
    Acc total;
    const Acc excl = block_exclusive_scan(mine, sh.part, &total);  // its barriers end the reads above
    if constexpr (kWrite) {
      Acc acc = carry + excl;
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        Acc& e = sh.buf[slot(t * kScanItems + k)];
        acc += e;
        e = acc;
      }
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kScanItems; ++k) {
        const int j = k * kScanThreads + t;
        const int64_t i = c0 + j;
        if (i < end) out[i * ds] = sum_store<T>(sh.buf[slot(j)]);
      }
      carry = sh.buf[slot(kChunk - 1)];  // the running sum at the chunk's last element
      __syncthreads();
    } else {
      carry = carry + total;
    }
  }
  return carry;
}

// This thread's vectors of the chunk at c0 (vector j starts at element c0 + (j * kScanThreads +
// thread) * V); elements at or past `end` are not read and come back zero.
template <class T, int V>
__device__ __forceinline__ void load_chunk(Vec<T, V> (&x)[kScanVecs<T>], const T* in, int64_t c0, int64_t end) {
  const int64_t first = c0 + static_cast<int64_t>(threadIdx.x) * V;
#pragma unroll
  for (int j = 0; j < kScanVecs<T>; ++j) {
    const int64_t i = first + j * kScanThreads * V;
    if (i + V <= end) {
      x[j] = *reinterpret_cast<const Vec<T, V>*>(in + i);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) x[j].v[k] = i + k < end ? in[i + k] : T{};
    }
  }
}

// One chunk of the vector way at c0, its vectors x already loaded; `warp` holds the chunk's warp
// sums. Returns carry plus the chunk's sum. Each thread adds up its vectors, warp scans (shuffles,
// any warp width) give each vector its prefix inside the warp, each warp's last lane puts the
// warp's sums in shared memory, and after one barrier every thread adds the sums before its own in
// the same order, so all hold the same carry. The warp sums are double-buffered, so one barrier per
// chunk suffices: a buffer is rewritten only after the next chunk's barrier, which every reader of
// its previous contents has passed (a trailing barrier ends each range).
template <bool kWrite, class T, class Acc, int V>
__device__ __forceinline__ Acc scan_chunk(const Vec<T, V> (&x)[kScanVecs<T>], Acc (&warp)[kScanVecs<T>][kMaxScanWarps],
                                          T* out, int64_t c0, int64_t end, Acc carry) {
  constexpr int kLanes = gpu::warp_size();
  const int t = static_cast<int>(threadIdx.x), lane = t % kLanes, w_self = t / kLanes;
  Acc incl[kScanVecs<T>], excl[kScanVecs<T>];
#pragma unroll
  for (int j = 0; j < kScanVecs<T>; ++j) {
    Acc s = sum_load<Acc>(x[j].v[0]);
#pragma unroll
    for (int k = 1; k < V; ++k) s += sum_load<Acc>(x[j].v[k]);
    incl[j] = s;
  }
#pragma unroll
  for (int d = 1; d < kLanes; d <<= 1) {
#pragma unroll
    for (int j = 0; j < kScanVecs<T>; ++j) {
      const Acc y = gpu::shfl_up(incl[j], static_cast<unsigned>(d));
      if (lane >= d) incl[j] += y;
    }
  }
#pragma unroll
  for (int j = 0; j < kScanVecs<T>; ++j) {
    if constexpr (kWrite) {
      const Acc y = gpu::shfl_up(incl[j], 1u);  // not incl minus the own sum, which rounds for floats
      excl[j] = lane > 0 ? y : Acc(0);
    }
    if (lane == kLanes - 1) warp[j][w_self] = incl[j];
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < kScanVecs<T>; ++j) {
    Acc before = 0, total = 0;
#pragma unroll
    for (int w = 0; w < kScanThreads / kLanes; ++w) {
      const Acc s = warp[j][w];
      if (w < w_self) before += s;
      total += s;
    }
    if constexpr (kWrite) {
      Acc acc = carry + before + excl[j];
      Vec<T, V> y;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        acc += sum_load<Acc>(x[j].v[k]);
        y.v[k] = sum_store<T>(acc);
      }
      const int64_t i = c0 + static_cast<int64_t>(j * kScanThreads + t) * V;
      if (i + V <= end) {
        *reinterpret_cast<Vec<T, V>*>(out + i) = y;
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) {
          if (i + k < end) out[i + k] = y.v[k];
        }
      }
    }
    carry = carry + total;
  }
  return carry;
}

// Vector way (Note [GPU scans]); the same contract as the staged scan_range. The host checked that
// ss == ds == 1 and that in and out are aligned to Vec<T, V>; begin is a multiple of V.
template <bool kWrite, class T, class Acc>
__device__ Acc scan_range(VecScanShared<T, Acc>& sh, const T* in, int64_t, T* out, int64_t, int64_t begin, int64_t end,
                          Acc carry) {
  Vec<T, kScanVec<T>> x[kScanVecs<T>];
  load_chunk(x, in, begin, end);
  int buf = 0;
  for (int64_t c0 = begin; c0 < end; c0 += vec_chunk<T>()) {
    Vec<T, kScanVec<T>> next[kScanVecs<T>];
    load_chunk(next, in, c0 + vec_chunk<T>(), end);  // in flight while x is scanned
    carry = scan_chunk<kWrite>(x, sh.warp[buf], out, c0, end, carry);
    buf ^= 1;
#pragma unroll
    for (int j = 0; j < kScanVecs<T>; ++j) x[j] = next[j];
  }
  __syncthreads();  // sh is rewritten by the next call
  return carry;
}

template <class T, class Acc, bool kVec>
__global__ void __launch_bounds__(kScanThreads, kScanMinBlocks)
    cumsum_rows_kernel(RowMeta<2> m, int64_t rows, int64_t n, const T* in, int64_t ss, T* out, int64_t ds) {
  __shared__ ScanSharedOf<kVec, T, Acc> sh;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t off[2];
    row_offsets(m, r, off);
    scan_range<true>(sh, in + off[0], ss, out + off[1], ds, 0, n, Acc(0));
  }
}

// Block b sums segment b % segs of row b / segs into totals[b].
template <class T, class Acc, bool kVec>
__global__ void __launch_bounds__(kScanThreads, kScanMinBlocks)
    segment_sums_kernel(RowMeta<2> m, int64_t n, int64_t seg_len, int64_t segs, const T* in, int64_t ss, Acc* totals) {
  __shared__ ScanSharedOf<kVec, T, Acc> sh;
  const int64_t b = blockIdx.x, r = b / segs, begin = (b % segs) * seg_len;
  int64_t off[2];
  row_offsets(m, r, off);
  const Acc s = scan_range<false, T, Acc>(sh, in + off[0], ss, nullptr, 0, begin, std::min(n, begin + seg_len), Acc(0));
  if (threadIdx.x == 0) totals[b] = s;
}

// Block b scans segment b % segs of row b / segs, starting from the sum of the segments before it.
template <class T, class Acc, bool kVec>
__global__ void __launch_bounds__(kScanThreads, kScanMinBlocks)
    segment_scan_kernel(RowMeta<2> m, int64_t n, int64_t seg_len, int64_t segs, const T* in, int64_t ss, T* out,
                        int64_t ds, const Acc* totals) {
  __shared__ ScanSharedOf<kVec, T, Acc> sh;
  __shared__ Acc warps[kMaxScanWarps];
  const int64_t b = blockIdx.x, r = b / segs, s = b % segs, begin = s * seg_len;
  Acc before = 0;
  for (int64_t k = threadIdx.x; k < s; k += kScanThreads) before += totals[r * segs + k];
  const Acc carry = block_sum(before, warps);
  int64_t off[2];
  row_offsets(m, r, off);
  scan_range<true>(sh, in + off[0], ss, out + off[1], ds, begin, std::min(n, begin + seg_len), carry);
}

template <class T, class Acc>
__global__ void __launch_bounds__(kBlock)
    cumsum_columns_kernel(RowMeta<2> m, int64_t rows, int64_t n, const T* in, int64_t ss, T* out, int64_t ds) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += step) {
    int64_t off[2];
    row_offsets(m, r, off);
    Acc acc = 0;
    for (int64_t i = 0; i < n; ++i) {
      acc += sum_load<Acc>(in[off[0] + i * ss]);
      out[off[1] + i * ds] = sum_store<T>(acc);
    }
  }
}

// Whether the vector way applies (Note [GPU scans]): unit-stride rows, and every row start in src
// and dst aligned to a vector, i.e. aligned base pointers and outer strides that are multiples of V.
template <class T>
bool vector_rows(const RowMeta<2>& m, const T* in, int64_t ss, const T* out, int64_t ds) {
  constexpr int V = kScanVec<T>;
  constexpr size_t kAlign = sizeof(Vec<T, V>);
  bool ok = ss == 1 && ds == 1 && aligned_to(in, kAlign) && aligned_to(out, kAlign);
  // (A single row's meta is one dim of size 1 with strides 1, which moves nothing.)
  for (int d = 0; d < m.rank; ++d) ok = ok && (m.shape[d] == 1 || (m.stride[d][0] % V == 0 && m.stride[d][1] % V == 0));
  return ok;
}

// The row and split-row kernels, in the vector or the staged way.
template <bool kVec, class T>
void launch_rows(const LaunchCtx& ctx, Backend& be, const RowMeta<2>& m, int64_t rows, int64_t n, const T* in,
                 int64_t ss, T* out, int64_t ds) {
  using Acc = scan_acc_t<T>;
  // Blocks that fill the device once: the segment scan's resident blocks on every multiprocessor
  // (more segments than fit at once only add a second wave).
  const int64_t fill = resident_grid<segment_scan_kernel<T, Acc, kVec>>(ctx, kScanThreads);
  const int64_t chunk = kVec ? vec_chunk<T>() : kChunk;
  const int64_t chunks = (n + chunk - 1) / chunk;
  if (rows < fill && chunks > 2) {
    const int64_t want = std::min(chunks, std::max<int64_t>(fill / rows, 1));
    const int64_t seg_len = piece_length(n, chunk, want);  // whole chunks: segments start aligned
    const int64_t segs = (n + seg_len - 1) / seg_len;
    Scratch totals(be, rows * segs * static_cast<int64_t>(sizeof(Acc)));
    Acc* tp = static_cast<Acc*>(totals.get());
    const unsigned grid = row_grid(rows * segs);
    gpu::launch<segment_sums_kernel<T, Acc, kVec>>(ctx, grid, kScanThreads, 0, m, n, seg_len, segs, in, ss, tp);
    gpu::launch<segment_scan_kernel<T, Acc, kVec>>(ctx, grid, kScanThreads, 0, m, n, seg_len, segs, in, ss, out, ds,
                                                   tp);
    return;
  }
  gpu::launch<cumsum_rows_kernel<T, Acc, kVec>>(ctx, row_grid(rows), kScanThreads, 0, m, rows, n, in, ss, out, ds);
}

template <class T>
void cumsum_slice(const LaunchCtx& ctx, Backend& be, const RowMeta<2>& m, int64_t rows, int64_t n, const T* in,
                  int64_t ss, T* out, int64_t ds) {
  // Enough rows side by side in memory that a warp reads one line: a thread per row.
  const bool rows_adjacent = m.rank >= 1 && m.shape[0] > 1 && m.stride[0][0] == 1 && ss != 1;
  if (rows_adjacent && rows >= kColumnRows) {
    gpu::launch<cumsum_columns_kernel<T, scan_acc_t<T>>>(ctx, grid_for(ctx, rows), kBlock, 0, m, rows, n, in, ss, out,
                                                         ds);
  } else if (vector_rows(m, in, ss, out, ds)) {
    launch_rows<true>(ctx, be, m, rows, n, in, ss, out, ds);
  } else {
    launch_rows<false>(ctx, be, m, rows, n, in, ss, out, ds);
  }
}

}  // namespace

void cumsum(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  Backend& be = backend_of(ctx);
  if (src.numel() == 0) return;
  const int64_t n = src.shape().back();
  const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
  wick::dispatch(
      src.dtype,
      [&]<class T>() {
        for_each_row_slice<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()},
                              [&](const RowMeta<2>& m, int64_t rows, const std::array<int64_t, 2>& base) {
                                cumsum_slice<T>(ctx, be, m, rows, n, src.ptr<T>() + base[0], ss, dst.ptr<T>() + base[1],
                                                ds);
                              });
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
