// cumsum on the GPU, over the last dim, any src and dst strides.
//
// Note [GPU scans]
// Accumulators are the CPU's (scan_acc_t, Note [Reduction accumulators]): integers in 64 bits with
// wrap-around, so every order of additions gives the CPU's result exactly; f32 in f64, 8/16-bit
// floats in f32, f64 in f64, where the GPU's order differs from the CPU's sequential one only in
// rounding. Three kernels:
//  - rows: a block per row walks the row in chunks of kChunk elements, loaded coalesced into
//    shared memory; each thread adds up kScanItems consecutive elements, the block scans the
//    thread totals, each thread then runs its elements sequentially from its prefix, and the
//    running sum carries over to the next chunk.
//  - split rows: when there are too few rows to fill the device, each row is cut into segments;
//    a first pass sums every segment, a second scans each segment starting from the sum of the
//    segments before it (two reads and one write of the data).
//  - columns: when the rows are adjacent in memory (a cumsum over a leading dim arrives as a view
//    whose kept dims have unit stride) a thread per row adds sequentially, exactly the CPU's order,
//    and the threads of a warp read neighbouring addresses.
#include <algorithm>
#include <cstdint>

#include "backend/reduce_math.h"
#include "cpu/dispatch.h"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kScanThreads = 256;
constexpr int kScanItems = 8;
constexpr int kChunk = kScanThreads * kScanItems;
constexpr int64_t kColumnRows = 4096;  // rows that keep the column kernel's threads busy

// Shared-memory slot of chunk element j, padded to spread a thread's consecutive items over banks.
__device__ __forceinline__ int slot(int j) { return j + (j >> 5); }

template <class Acc>
struct ScanShared {
  Acc buf[kChunk + kChunk / 32];
  Acc part[2][kScanThreads];
};

// Exclusive prefix sum of v over the block's threads (in thread order); the block's total goes to
// *total. Shared memory only, so any warp width works.
template <class Acc>
__device__ Acc block_exclusive_scan(Acc v, Acc (&part)[2][kScanThreads], Acc* total) {
  const int t = static_cast<int>(threadIdx.x);
  part[0][t] = v;
  __syncthreads();
  int in = 0;
  for (int off = 1; off < kScanThreads; off <<= 1) {
    Acc x = part[in][t];
    if (t >= off) x = part[in][t - off] + x;
    part[in ^ 1][t] = x;
    in ^= 1;
    __syncthreads();
  }
  const Acc excl = t > 0 ? part[in][t - 1] : Acc(0);
  *total = part[in][kScanThreads - 1];
  __syncthreads();  // part is rewritten by the next call
  return excl;
}

// Scans elements [begin, end) of one row, starting from `carry`, and returns the running sum at
// `end`. Without kWrite nothing is stored: the return value is the segment's sum plus carry.
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

template <class T, class Acc>
__global__ void __launch_bounds__(kScanThreads)
    cumsum_rows_kernel(RowMeta<2> m, int64_t rows, int64_t n, const T* in, int64_t ss, T* out, int64_t ds) {
  __shared__ ScanShared<Acc> sh;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t off[2];
    row_offsets(m, r, off);
    scan_range<true>(sh, in + off[0], ss, out + off[1], ds, 0, n, Acc(0));
  }
}

// Block b sums segment b % segs of row b / segs into totals[b].
template <class T, class Acc>
__global__ void __launch_bounds__(kScanThreads)
    segment_sums_kernel(RowMeta<2> m, int64_t n, int64_t seg_len, int64_t segs, const T* in, int64_t ss, Acc* totals) {
  __shared__ ScanShared<Acc> sh;
  const int64_t b = blockIdx.x, r = b / segs, begin = (b % segs) * seg_len;
  int64_t off[2];
  row_offsets(m, r, off);
  const Acc s = scan_range<false, T, Acc>(sh, in + off[0], ss, nullptr, 0, begin, std::min(n, begin + seg_len), Acc(0));
  if (threadIdx.x == 0) totals[b] = s;
}

// Block b scans segment b % segs of row b / segs, starting from the sum of the segments before it.
template <class T, class Acc>
__global__ void __launch_bounds__(kScanThreads)
    segment_scan_kernel(RowMeta<2> m, int64_t n, int64_t seg_len, int64_t segs, const T* in, int64_t ss, T* out,
                        int64_t ds, const Acc* totals) {
  __shared__ ScanShared<Acc> sh;
  const int64_t b = blockIdx.x, r = b / segs, s = b % segs, begin = s * seg_len;
  Acc before = 0;
  for (int64_t k = threadIdx.x; k < s; k += kScanThreads) before += totals[r * segs + k];
  Acc carry;
  block_exclusive_scan(before, sh.part, &carry);
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

template <class T>
void cumsum_slice(const LaunchCtx& ctx, Backend& be, const RowMeta<2>& m, int64_t rows, int64_t n, const T* in,
                  int64_t ss, T* out, int64_t ds) {
  using Acc = scan_acc_t<T>;
  const auto stream = gpu::native_stream(ctx.stream);
  // Enough rows side by side in memory that a warp reads one line: a thread per row.
  const bool rows_adjacent = m.rank >= 1 && m.shape[0] > 1 && m.stride[0][0] == 1 && ss != 1;
  const int64_t fill = static_cast<int64_t>(std::max(ctx.multiprocessors, 1)) * 8;  // blocks that fill the device
  if (rows_adjacent && rows >= kColumnRows) {
    cumsum_columns_kernel<T, Acc><<<grid_for(ctx, rows), kBlock, 0, stream>>>(m, rows, n, in, ss, out, ds);
    gpu::check_launch(ctx.op, ctx.device);
    return;
  }
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (rows < fill && chunks > 2) {
    const int64_t want = std::min(chunks, (fill + rows - 1) / rows);
    const int64_t seg_len = (chunks + want - 1) / want * kChunk;
    const int64_t segs = (n + seg_len - 1) / seg_len;
    Scratch totals(be, rows * segs * static_cast<int64_t>(sizeof(Acc)));
    Acc* tp = static_cast<Acc*>(totals.get());
    const unsigned grid = row_grid(rows * segs);
    segment_sums_kernel<T, Acc><<<grid, kScanThreads, 0, stream>>>(m, n, seg_len, segs, in, ss, tp);
    gpu::check_launch(ctx.op, ctx.device);
    segment_scan_kernel<T, Acc><<<grid, kScanThreads, 0, stream>>>(m, n, seg_len, segs, in, ss, out, ds, tp);
    gpu::check_launch(ctx.op, ctx.device);
    return;
  }
  cumsum_rows_kernel<T, Acc><<<row_grid(rows), kScanThreads, 0, stream>>>(m, rows, n, in, ss, out, ds);
  gpu::check_launch(ctx.op, ctx.device);
}

}  // namespace

void cumsum(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& dst) {
  if (src.numel() == 0) return;
  const int64_t n = src.shape().back();
  const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
  cpu::dispatch(
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
