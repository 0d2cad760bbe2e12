// qmatmul on the GPU: x [m, k] times a quantized w [n, k] transposed, accumulated in f32. Up to
// kQmvMaxRows rows of x take the mat-vec kernel of Note [GPU quantized mat-vec]; more rows
// dequantize w into scratch memory of x's dtype, a bounded chunk of w's rows at a time, and run
// kern::matmul's GEMM on each chunk, writing a column slice of dst.
//
// Note [GPU quantized mat-vec]
// For m <= kQmvMaxRows (M: m rounded up to 1, 2, 4, 8, 16) each weight byte is read once for all
// rows. A block owns `cols` consecutive rows of w, `group` = kQmvThreads / cols lanes each (a power
// of two of at most 32: inside one warp at any warp size), and walks k in tiles of `tile_blocks`:
//  - the tile's weight bytes go to shared memory in 16-byte units aligned down from each row's
//    start (any row stride or view offset), copy_async'd while the previous tile computes;
//  - x's tile is staged there as f32, converted once per block, 36 floats per 32-element
//    sub-block: a group's lanes (consecutive sub-blocks) spread over the banks, the groups of a
//    warp (one sub-block) read one broadcast address;
//  - lanes take the tile's (block, sub-block) pairs in turn: Codec<F>::dequantize_sub from shared
//    memory into 32 registers, then M dot products in f32; butterfly shuffles sum a group.
// A thread issues M FMAs, M / 4 shared loads of x and the decode per weight element: from M of
// about 4 the FMAs, not the bytes, bound it. `cols` aims at two blocks per multiprocessor.
#include <algorithm>
#include <cstdint>
#include <string>

#include "backend/dispatch.h"
#include "gpu/kernels/async_copy.cuh"
#include "gpu/kernels/map.cuh"
#include "gpu/kernels/scratch.h"
#include "quant/codecs.h"

namespace wick::WICK_GPU_NS::kern {
namespace {

inline constexpr int kQmvThreads = 256;
inline constexpr int64_t kQmvMaxRows = 16;
inline constexpr int kQmvMaxCols = 64;  // columns per block sharing one x tile
inline constexpr int kXSub = 36;        // floats per 32-element sub-block of the x tile
inline constexpr int64_t kQmvSharedBudget = 64 * 1024;
inline constexpr int64_t kQmvMaxTileElems = 2048;
// Scratch of one dequantized chunk of w on the GEMM path.
inline constexpr int64_t kDequantChunkBytes = int64_t{256} << 20;

struct QmvArgs {
  const void* x;        // [m, k] contiguous, of `dtype`
  const uint8_t* w;     // row c at w + c * ws
  const uint8_t* wend;  // one past the last byte of the last row
  void* dst;            // [m, n] contiguous, of `dtype`
  int64_t m, n, k, ws, bpr;
  DType dtype;
  int cols, tile_blocks;
  int row_smem;  // shared bytes per column in one weight buffer: an odd number of 16-byte units
  bool x_vec;    // x's rows start 4-element aligned: 4 elements load as one vector
};

inline constexpr int kUnit = 16;

__device__ __forceinline__ const uint8_t* align_down(const uint8_t* p) {
  return p - (reinterpret_cast<uintptr_t>(p) & (kUnit - 1));
}

// The tile of blocks [kb0, kb0 + kb) of columns c0 .. c0 + cols into buf: column c's units at
// buf + c * row_smem, from the unit holding the tile's first byte on.
template <int kBytes>
__device__ __forceinline__ void issue_weights(const QmvArgs& a, int64_t c0, int64_t kb0, int64_t kb, uint8_t* buf) {
  const int64_t seg = kb * kBytes;
  const int units = a.row_smem / kUnit;
  // Unit i = threadIdx.x + s kQmvThreads (s = 0, 1, ...) is unit u of column c: one division per
  // call, then steps.
  const int dc = kQmvThreads / units, du = kQmvThreads % units;
  int c = static_cast<int>(threadIdx.x) / units, u = static_cast<int>(threadIdx.x) % units;
  for (; c < a.cols; c += dc, u += du) {
    if (u >= units) {
      u -= units;
      ++c;
      if (c >= a.cols) break;
    }
    if (c0 + c >= a.n) break;  // so are the later columns
    const uint8_t* start = a.w + (c0 + c) * a.ws + kb0 * kBytes;
    const uint8_t* src = align_down(start) + u * kUnit;
    if (src >= start + seg) continue;
    uint8_t* d = buf + c * a.row_smem + u * kUnit;
    if (src >= a.w && src + kUnit <= a.wend) {
      copy_async<kUnit>(d, src, true);
    } else {
      for (int e = 0; e < kUnit; ++e)
        if (src + e >= a.w && src + e < a.wend) d[e] = src[e];
    }
  }
}

// x's elements [e0, e0 + span) of rows r < M into xs (row r at xs + r * xrow, element p at
// (p / 32) * kXSub + p % 32), as f32; zeros past k (len) and for rows r >= m.
template <class T, int M>
__device__ __forceinline__ void stage_x(const QmvArgs& a, int64_t e0, int len, int span, int xrow, float* xs) {
  const T* x = static_cast<const T*>(a.x);
  for (int r = 0; r < M; ++r) {
    for (int q = threadIdx.x; q < span / 4; q += kQmvThreads) {
      const int p = 4 * q;
      Vec<float, 4> v = {{0.0f, 0.0f, 0.0f, 0.0f}};
      if (r < a.m && p < len) {
        const T* src = x + r * a.k + e0 + p;  // len is whole sub-blocks: p + 3 < len
        if (a.x_vec) {
          const Vec<T, 4> u = *reinterpret_cast<const Vec<T, 4>*>(src);
#pragma unroll
          for (int e = 0; e < 4; ++e) v.v[e] = convert<float>(u.v[e]);
        } else {
#pragma unroll
          for (int e = 0; e < 4; ++e) v.v[e] = convert<float>(src[e]);
        }
      }
      *reinterpret_cast<Vec<float, 4>*>(xs + r * xrow + (p / 32) * kXSub + p % 32) = v;
    }
  }
}

__device__ __forceinline__ void store_out(const QmvArgs& a, int64_t i, float v) {
  switch (a.dtype) {
    case DType::F16:
      static_cast<f16*>(a.dst)[i] = convert<f16>(v);
      break;
    case DType::BF16:
      static_cast<bf16*>(a.dst)[i] = convert<bf16>(v);
      break;
    default:
      static_cast<float*>(a.dst)[i] = v;
      break;
  }
}

// Resident blocks per multiprocessor the kernel is compiled for (at most 64, 80, 128 registers a
// thread on NVIDIA): unbounded, ptxas trades occupancy for x loads hoisted ahead of their FMAs,
// down to one resident block for M = 16.
template <int M>
inline constexpr int kQmvMinBlocks = M >= 16  ? 2
                                     : M >= 4 ? 3
                                              : 4;

// Note [GPU quantized mat-vec].
template <QFormat F, int M>
__global__ void __launch_bounds__(kQmvThreads, kQmvMinBlocks<M>) qmv_kernel(const QmvArgs a) {
  using C = quant::Codec<F>;
  constexpr int kSubs = C::kElems / 32;
  // Independent partial sums per row where few rows leave the FMA chains short of latency.
  constexpr int kAcc = M >= 4 ? 1 : 4 / M;
  extern __shared__ Vec<float, 4> qmv_shared[];
  uint8_t* const smem = reinterpret_cast<uint8_t*>(qmv_shared);
  const int group = kQmvThreads / a.cols;
  const int col = static_cast<int>(threadIdx.x) >> gpu::ctz(static_cast<unsigned>(group));
  const int lane = static_cast<int>(threadIdx.x) & (group - 1);
  const int kbt = a.tile_blocks, xrow = kbt * kSubs * kXSub;
  // Weight buffer i at smem + i * wbuf_bytes (an index into a pointer array would go to local memory).
  const int wbuf_bytes = a.cols * a.row_smem;
  float* const xs = reinterpret_cast<float*>(smem + 2 * wbuf_bytes);
  const int64_t tiles = (a.bpr + kbt - 1) / kbt, col_tiles = (a.n + a.cols - 1) / a.cols;
  // Every loop bound below is the block's, not the thread's: all threads reach every barrier.
  for (int64_t ct = blockIdx.x; ct < col_tiles; ct += gridDim.x) {
    const int64_t c0 = ct * a.cols, c = c0 + col;
    float acc[M][kAcc] = {};
    issue_weights<C::kBytes>(a, c0, 0, std::min<int64_t>(kbt, a.bpr), smem);
    commit();
    for (int64_t t = 0; t < tiles; ++t) {
      const int64_t kb0 = t * kbt;
      const int kb = static_cast<int>(std::min<int64_t>(kbt, a.bpr - kb0));
      if (t + 1 < tiles)
        issue_weights<C::kBytes>(a, c0, kb0 + kbt, std::min<int64_t>(kbt, a.bpr - kb0 - kbt),
                                 smem + ((t + 1) & 1) * wbuf_bytes);
      commit();  // possibly empty: the group count per tile stays one
      // The previous tile's trailing barrier freed xs.
      const int64_t e0 = kb0 * C::kElems;
      const int len = kb * C::kElems, span = kbt * C::kElems;
      switch (a.dtype) {
        case DType::F16:
          stage_x<f16, M>(a, e0, len, span, xrow, xs);
          break;
        case DType::BF16:
          stage_x<bf16, M>(a, e0, len, span, xrow, xs);
          break;
        default:
          stage_x<float, M>(a, e0, len, span, xrow, xs);
          break;
      }
      wait<1>();  // this tile's weights have landed; the next tile's may be in flight
      __syncthreads();
      if (c < a.n) {
        const uint8_t* start = a.w + c * a.ws + kb0 * C::kBytes;
        const uint8_t* row =
            smem + (t & 1) * wbuf_bytes + col * a.row_smem + (reinterpret_cast<uintptr_t>(start) & (kUnit - 1));
        for (int j = lane; j < kb * kSubs; j += group) {
          const int b = j / kSubs, s = j - b * kSubs;
          float w[32];
          C::dequantize_sub(row + b * C::kBytes, s, w);
          const Vec<float, 4>* xj = reinterpret_cast<const Vec<float, 4>*>(xs + j * kXSub);
#pragma unroll
          for (int r = 0; r < M; ++r)
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              const Vec<float, 4> xv = xj[r * (xrow / 4) + q];
              float& part = acc[r][q % kAcc];
#pragma unroll
              for (int e = 0; e < 4; ++e) part = fmaf(w[4 * q + e], xv.v[e], part);
            }
        }
      }
      __syncthreads();  // this tile's weight buffer and xs are rewritten by the next tiles
    }
    float sum[M];
#pragma unroll
    for (int r = 0; r < M; ++r) {
      sum[r] = acc[r][0];
#pragma unroll
      for (int q = 1; q < kAcc; ++q) sum[r] += acc[r][q];
    }
    for (int o = group / 2; o > 0; o /= 2)
#pragma unroll
      for (int r = 0; r < M; ++r) sum[r] += gpu::shfl_xor(sum[r], o);
    if (c < a.n)
#pragma unroll
      for (int r = 0; r < M; ++r)
        if (r < a.m && (r & (group - 1)) == lane) store_out(a, r * a.n + c, sum[r]);
  }
}

// Note [GPU quantized mat-vec, few rows]
// For m <= kQsMaxRows (M: 1, 2, 4) a warp owns kQsCols<F> consecutive rows of w and walks them
// with no shared memory and no barriers: lane l takes blocks l, l + lanes, ... of every owned
// row (a warp's loads cover consecutive blocks), kQsUnroll<F> blocks per row at a time, all loaded
// before any is used. A block is read straight from global memory as the 4-byte words from the
// one holding its first byte on (blocks are only byte aligned), then funnel-shifted into a
// register array; Codec<F>::dequantize_sub reads it through a local byte array indexed only by
// constants (the sub-block loop is unrolled), so everything stays in registers and a sub-block's
// unused words are never loaded twice. A block whose words would reach outside [w, wend) (the
// last bytes of the last row) is assembled byte by byte instead. x is read from global memory
// (through L1) once per block for all of the warp's rows; butterfly shuffles sum each row.
// Only the 32-element formats take this kernel: a lane walking whole 256-element blocks strides
// its loads by the block size, and the tiled kernel above does better for them.
inline constexpr int kQsThreads = 128;
inline constexpr int64_t kQsMaxRows = 4;
template <QFormat F>
inline constexpr bool kQsFormat = quant::Codec<F>::kElems == 32;

// Rows of w per warp: two share each x load where a block is small enough to keep several in
// registers.
template <QFormat F>
inline constexpr int kQsCols = quant::Codec<F>::kBytes <= 36 ? 2 : 1;
// Blocks per row in flight per lane.
template <QFormat F>
inline constexpr int kQsUnroll = quant::Codec<F>::kBytes <= 36 ? 2 : 1;

// The kBytes bytes at p (byte aligned, inside [lo, hi)) into blk: aligned 4-byte words from the
// one holding p on, shifted into place; bytewise where those words would leave [lo, hi).
template <int kBytes>
__device__ __forceinline__ void load_block(const uint8_t* p, const uint8_t* lo, const uint8_t* hi,
                                           uint32_t (&blk)[(kBytes + 3) / 4]) {
  // Words holding the block's bytes from any offset 0..3 (kNeed), and one more where the shifts below
  // read past them: those bytes are past the block's end, so zero stands in.
  constexpr int kWords = (kBytes + 3) / 4, kNeed = (kBytes + 6) / 4;
  static_assert(kNeed == kWords || kNeed == kWords + 1);
  const unsigned off = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p) & 3);
  const uint8_t* base = p - off;
  uint32_t raw[kWords + 1];
  raw[kWords] = 0;
  if (base >= lo && base + 4 * kNeed <= hi) {
    const uint32_t* q = reinterpret_cast<const uint32_t*>(base);
#pragma unroll
    for (int i = 0; i < kNeed; ++i) raw[i] = q[i];
  } else {
#pragma unroll
    for (int i = 0; i < kNeed; ++i) {
      uint32_t v = 0;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const uint8_t* b = base + 4 * i + e;
        if (b >= p && b < p + kBytes) v |= static_cast<uint32_t>(*b) << (8 * e);
      }
      raw[i] = v;
    }
  }
  const unsigned sh = 8 * off;
#pragma unroll
  for (int i = 0; i < kWords; ++i)
    blk[i] = static_cast<uint32_t>(((static_cast<uint64_t>(raw[i + 1]) << 32) | raw[i]) >> sh);
}

// Sub-block `sub` of the block held in words blk, decoded by the codec from a byte-array view.
template <QFormat F>
__device__ __forceinline__ void decode_sub(const uint32_t (&blk)[(quant::Codec<F>::kBytes + 3) / 4], int sub,
                                           float (&y)[32]) {
  constexpr int kBytes = quant::Codec<F>::kBytes;
  uint8_t bytes[kBytes];
#pragma unroll
  for (int j = 0; j < kBytes; ++j) bytes[j] = static_cast<uint8_t>(blk[j / 4] >> (8 * (j % 4)));
  quant::Codec<F>::dequantize_sub(bytes, sub, y);
}

// 32 consecutive elements of x from xp as f32, four at a time, into xv[4 q .. 4 q + 4).
template <class T>
__device__ __forceinline__ void load_x4(const T* xp, bool vec, float (&xv)[4]) {
  if (vec) {
    const Vec<T, 4> u = *reinterpret_cast<const Vec<T, 4>*>(xp);
#pragma unroll
    for (int e = 0; e < 4; ++e) xv[e] = convert<float>(u.v[e]);
  } else {
#pragma unroll
    for (int e = 0; e < 4; ++e) xv[e] = convert<float>(xp[e]);
  }
}

// Note [GPU quantized mat-vec, few rows].
template <QFormat F, int M, class T>
__global__ void __launch_bounds__(kQsThreads) qmv_small_kernel(const QmvArgs a) {
  using C = quant::Codec<F>;
  constexpr int kSubs = C::kElems / 32, kWords = (C::kBytes + 3) / 4;
  constexpr int NC = kQsCols<F>, U = kQsUnroll<F>;
  constexpr int kAcc = M * NC >= 4 ? 1 : 4 / (M * NC);  // partial sums per (row, column)
  constexpr int lanes = gpu::warp_size(), warps = kQsThreads / lanes;
  const int lane = static_cast<int>(threadIdx.x) % lanes;
  const T* const x = static_cast<const T*>(a.x);
  const int64_t groups = (a.n + NC - 1) / NC;
  for (int64_t g = int64_t{blockIdx.x} * warps + static_cast<int>(threadIdx.x) / lanes; g < groups;
       g += int64_t{gridDim.x} * warps) {
    const int64_t c0 = g * NC;
    const uint8_t* row[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c) row[c] = a.w + std::min<int64_t>(c0 + c, a.n - 1) * a.ws;  // a valid row
    float acc[M][NC][kAcc] = {};
    for (int64_t b0 = lane; b0 < a.bpr; b0 += int64_t{U} * lanes) {
      uint32_t blk[U][NC][kWords];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        // A block past the row's end loads the last one (valid memory) and is skipped below.
        const int64_t b = std::min<int64_t>(b0 + u * lanes, a.bpr - 1);
#pragma unroll
        for (int c = 0; c < NC; ++c) load_block<C::kBytes>(row[c] + b * C::kBytes, a.w, a.wend, blk[u][c]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int64_t b = b0 + u * lanes;
        if (u > 0 && b >= a.bpr) break;
#pragma unroll
        for (int s = 0; s < kSubs; ++s) {
          float wv[NC][32];
#pragma unroll
          for (int c = 0; c < NC; ++c) decode_sub<F>(blk[u][c], s, wv[c]);
#pragma unroll
          for (int r = 0; r < M; ++r) {
            if (r >= a.m) break;  // rows of x past m: nothing to load
            const T* xp = x + r * a.k + b * C::kElems + 32 * s;
#pragma unroll
            for (int q = 0; q < 8; ++q) {
              float xv[4];
              load_x4(xp + 4 * q, a.x_vec, xv);
#pragma unroll
              for (int c = 0; c < NC; ++c)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                  float& part = acc[r][c][q % kAcc];
                  part = fmaf(wv[c][4 * q + e], xv[e], part);
                }
            }
          }
        }
      }
    }
    float sum[M][NC];
#pragma unroll
    for (int r = 0; r < M; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        sum[r][c] = acc[r][c][0];
#pragma unroll
        for (int q = 1; q < kAcc; ++q) sum[r][c] += acc[r][c][q];
      }
#pragma unroll
    for (int o = lanes / 2; o > 0; o /= 2)
#pragma unroll
      for (int r = 0; r < M; ++r)
#pragma unroll
        for (int c = 0; c < NC; ++c) sum[r][c] += gpu::shfl_xor(sum[r][c], o);
#pragma unroll
    for (int r = 0; r < M; ++r)
#pragma unroll
      for (int c = 0; c < NC; ++c)
        if (r < a.m && c0 + c < a.n && (r * NC + c) % lanes == lane) store_out(a, r * a.n + c0 + c, sum[r][c]);
  }
}

// f.template operator()<M>() for M = m rounded up to a power of two (at most kQmvMaxRows).
template <class Fn>
void by_rows(int64_t m, Fn&& f) {
  if (m <= 1) return f.template operator()<1>();
  if (m <= 2) return f.template operator()<2>();
  if (m <= 4) return f.template operator()<4>();
  if (m <= 8) return f.template operator()<8>();
  return f.template operator()<16>();
}

// by_rows for m <= kQsMaxRows: M = 1, 2 or 4 only.
template <class Fn>
void by_few_rows(int64_t m, Fn&& f) {
  if (m <= 1) return f.template operator()<1>();
  if (m <= 2) return f.template operator()<2>();
  return f.template operator()<4>();
}

struct QmvShape {
  int cols, tile_blocks, row_smem;
  int64_t shared;
};

// Shared bytes per column for a tile of `bytes` weight bytes: the units from the aligned-down start
// on, an odd number of them so that the columns of a warp start in distinct banks.
inline int row_smem_for(int64_t bytes) {
  int64_t units = (bytes + 2 * (kUnit - 1)) / kUnit;
  if (units % 2 == 0) ++units;
  return static_cast<int>(units * kUnit);
}

// Note [GPU quantized mat-vec]: the columns per block, then the largest tile (at most
// kQmvMaxTileElems elements) whose double-buffered weights and x fit the budget, with at least a
// pair per lane where the rows are long enough.
template <QFormat F, int M>
QmvShape qmv_shape(const LaunchCtx& ctx, int64_t n, int64_t bpr) {
  using C = quant::Codec<F>;
  constexpr int kSubs = C::kElems / 32;
  const int64_t budget = std::min<int64_t>(ctx.shared_per_block, kQmvSharedBudget);
  const int64_t per_sm = n / (2 * int64_t{std::max(ctx.multiprocessors, 1)});
  int cols = 8;
  while (cols < kQmvMaxCols && 2 * cols <= per_sm) cols *= 2;
  // Short rows: no more lanes per column than twice the row's sub-blocks.
  while (cols < kQmvThreads && kQmvThreads / cols > 2 * bpr * kSubs) cols *= 2;
  const int64_t kb_cap = std::max<int64_t>(1, std::min(bpr, kQmvMaxTileElems / C::kElems));
  for (; cols <= kQmvThreads; cols *= 2) {
    const int64_t group = kQmvThreads / cols;
    const int64_t kb_min = std::min(kb_cap, (group + kSubs - 1) / kSubs);
    for (int64_t kb = kb_cap; kb >= kb_min; --kb) {
      const int rs = row_smem_for(kb * C::kBytes);
      const int64_t shared = 2 * int64_t{cols} * rs + int64_t{M} * kb * kSubs * kXSub * 4;
      if (shared <= budget) return {cols, static_cast<int>(kb), rs, shared};
    }
  }
  throw UnsupportedError(std::string("[") + ctx.op + "] the device's shared memory per block is too small");
}

void qmatvec(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst,
             int64_t m, int64_t n, int64_t k) {
  const int64_t es = dtype_size(x.dtype);
  const char* xb = static_cast<const char*>(x.data) + x.layout.offset() * es;
  const uint8_t* wp = w.ptr<uint8_t>();
  const int64_t ws = w.layout.stride(0), row_bytes = w.layout.dim(1);
  // The arguments both kernels share; the tiled one adds its tile shape.
  const QmvArgs base{xb,
                     wp,
                     wp + (n - 1) * ws + row_bytes,
                     static_cast<char*>(dst.data) + dst.layout.offset() * es,
                     m,
                     n,
                     k,
                     ws,
                     0,
                     x.dtype,
                     0,
                     0,
                     0,
                     false};
  const bool x_aligned = reinterpret_cast<uintptr_t>(xb) % (4 * es) == 0;
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = quant::Codec<F>;
    QmvArgs a = base;
    a.bpr = k / C::kElems;
    if constexpr (kQsFormat<F>) {
      if (m <= kQsMaxRows) {
        a.x_vec = x_aligned && k % 4 == 0;
        by_few_rows(m, [&]<int M>() {
          const int64_t warps = kQsThreads / ctx.warp_size;
          const int64_t groups = (n + kQsCols<F> - 1) / kQsCols<F>;
          const unsigned grid = static_cast<unsigned>(std::min<int64_t>((groups + warps - 1) / warps, INT32_MAX));
          dispatch_in<kQuantFloatTypes>(
              x.dtype, [&]<class T>() { gpu::launch<qmv_small_kernel<F, M, T>>(ctx, grid, kQsThreads, 0, a); });
        });
        return;
      }
    }
    a.x_vec = x_aligned;
    by_rows(m, [&]<int M>() {
      const QmvShape s = qmv_shape<F, M>(ctx, n, a.bpr);
      a.cols = s.cols;
      a.tile_blocks = s.tile_blocks;
      a.row_smem = s.row_smem;
      constexpr auto kernel = qmv_kernel<F, M>;
      if (s.shared > 48 * 1024) gpu::allow_dynamic_shared<kernel>(s.shared, ctx.op, ctx.device);
      const int64_t col_tiles = (n + s.cols - 1) / s.cols;
      gpu::launch<kernel>(ctx, static_cast<unsigned>(std::min<int64_t>(col_tiles, INT32_MAX)), kQmvThreads,
                          static_cast<size_t>(s.shared), a);
    });
  });
}

// m > kQmvMaxRows: w dequantized to x's dtype a chunk of rows at a time, each chunk seen as the
// [k, chunk] matrix b (strides 1, k) of kern::matmul, whose dst is the column slice of dst.
void qmatmul_gemm(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst,
                  int64_t m, int64_t n, int64_t k) {
  const DType t = x.dtype;
  const int64_t es = dtype_size(t), ws = w.layout.stride(0), row_bytes = w.layout.dim(1);
  const int64_t chunk = std::clamp<int64_t>(kDequantChunkBytes / (k * es), 1, n);
  // One buffer for every chunk: the chunks' kernels run in stream order.
  Scratch buf(backend_of(ctx), chunk * k * es);
  for (int64_t n0 = 0; n0 < n; n0 += chunk) {
    const int64_t nc = std::min(chunk, n - n0);
    dequantize(ctx, TensorArg(w.data, DType::U8, Layout({nc, row_bytes}, {ws, 1}, w.layout.offset() + n0 * ws)), format,
               TensorArg(buf.get(), t, Layout({nc, k})));
    matmul(ctx, x, TensorArg(buf.get(), t, Layout({k, nc}, {1, k}, 0)),
           TensorArg(dst.data, t, Layout({m, nc}, {n, 1}, dst.layout.offset() + n0)));
  }
}

}  // namespace

void qmatmul(const LaunchCtx& base, const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst) {
  const LaunchCtx ctx = base.with_op("qmatmul");
  const int64_t m = dst.layout.dim(0), n = dst.layout.dim(1), k = x.layout.dim(1);
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum
    const_set(ctx, dst, Scalar(0.0));
    return;
  }
  if (qmatvec_k(ctx, x, w, format, dst, m, n, k)) return;
  if (m <= kQmvMaxRows) return qmatvec(ctx, x, w, format, dst, m, n, k);
  qmatmul_gemm(ctx, x, w, format, dst, m, n, k);
}

}  // namespace wick::WICK_GPU_NS::kern
