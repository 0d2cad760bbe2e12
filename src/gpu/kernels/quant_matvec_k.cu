// The decode product of Q4_K and Q6_K weights: one row of x against W [n, k] (Notes [GPU Q4_K
// mat-vec] and [GPU Q6_K mat-vec]).
//
// Note [GPU Q4_K mat-vec]
// The general mat-vec kernels (quant_matmul.cu) decode a code with an int-to-float conversion and
// stage weights through shared memory, and were bound by instructions at about a fifth of the
// bandwidth for Q4_K. Here eight lanes own a 144-byte block of one row: lane c loads the 16 code
// bytes 16c .. 16c + 15 (32 codes: 16 of sub-block 2 (c / 2) in the low nibbles, 16 of the next
// in the high ones) and the block's 16-byte header, each with one 16-byte load. A code q becomes
// the float 1 + q / 16 by placing its 4 bits in the mantissa under the exponent of 1.0 (a shift
// and a masked or, no conversion instruction); the lane's 16 products per sub-block then sum to
// sum(x) + sum(q x) / 16, and sum(q x) = 16 (that - sum(x)), with sum(x) computed once per
// block for all rows. Each lane's x values serve kQ4Rows rows of W, so x's loads (from L1) stay
// below the weights' bytes. A row's block is d sc (sum q x) - dmin m (sum x) per sub-block.
// Rows must start on 16-byte boundaries (Q4_K blocks then do too, 144 being 9 x 16).
#include <algorithm>
#include <cstdint>

#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/strided.cuh"

namespace wick::WICK_GPU_NS::kern {
namespace {

constexpr int kQ4Threads = 128;
constexpr int kQ4Lanes = 8;  // lanes per block of a row
constexpr int kQ4Groups = kQ4Threads / kQ4Lanes;
constexpr int kQ4Rows = 4;      // rows of W a block reduces at a time
constexpr int kQ4Resident = 8;  // blocks per multiprocessor the grid asks for

struct Q4Args {
  const void* x;  // [k], 16-byte aligned
  const uint8_t* w;
  void* dst;  // [n] of x's dtype
  int64_t n, ws, bpr;
};

// The float 1 + q / 16 of the 4-bit code at bit `at` of word v.
template <int At>
__device__ __forceinline__ float code_float(uint32_t v) {
  const uint32_t placed = At <= 19 ? v << (19 - At) : v >> (At - 19);
  return __uint_as_float((placed & 0x00780000u) | 0x3F800000u);
}

// x[i .. i + 16) as f32.
template <class T>
__device__ __forceinline__ void load16(const T* p, float (&out)[16]) {
  constexpr int kV = 16 / sizeof(T);
#pragma unroll
  for (int u = 0; u < 16 / kV; ++u) {
    const Vec<T, kV> v = *reinterpret_cast<const Vec<T, kV>*>(p + u * kV);
#pragma unroll
    for (int e = 0; e < kV; ++e) out[u * kV + e] = convert<float>(v.v[e]);
  }
}

// Byte i of the block's 12 scale bytes (words y, z, w of its header), without an indexed array.
__device__ __forceinline__ uint32_t scale_byte(const uint4& h, int i) {
  const uint32_t word = i < 4 ? h.y : i < 8 ? h.z : h.w;
  return (word >> (8 * (i % 4))) & 0xFF;
}

// quant::kq::get_scale_min_k4 on the header's scale bytes.
__device__ __forceinline__ void scale_min(const uint4& h, int j, uint32_t* sc, uint32_t* m) {
  if (j < 4) {
    *sc = scale_byte(h, j) & 63;
    *m = scale_byte(h, j + 4) & 63;
  } else {
    *sc = (scale_byte(h, j + 4) & 0xF) | ((scale_byte(h, j - 4) >> 6) << 4);
    *m = (scale_byte(h, j + 4) >> 4) | ((scale_byte(h, j) >> 6) << 4);
  }
}

// The block's sums of acc[r] written to dst[r0 + r] (rows < n): warp butterflies, then one slot a
// warp in shared memory.
template <int R, class T>
__device__ __forceinline__ void block_sums(float (&acc)[R], T* dst, int64_t r0, int64_t n) {
  constexpr int kWarpsMax = kQ4Threads / 32;  // the most warps of a block at any warp width
  __shared__ float red[R][kWarpsMax];
  const int lanes = gpu::warp_size(), warps = kQ4Threads / lanes;
  const int t = threadIdx.x, lane = t % lanes, warp = t / lanes;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    for (int o = lanes / 2; o > 0; o /= 2) acc[r] += gpu::shfl_xor(acc[r], o);
    if (lane == 0) red[r][warp] = acc[r];
  }
  __syncthreads();
  if (t < R && r0 + t < n) {
    float v = 0.0f;
    for (int w = 0; w < warps; ++w) v += red[t][w];
    dst[r0 + t] = convert<T>(v);
  }
  __syncthreads();  // red is rewritten by the block's next rows
}

template <class T>
__global__ void __launch_bounds__(kQ4Threads) q4k_matvec_kernel(const Q4Args a) {
  const int t = threadIdx.x, c = t % kQ4Lanes, grp = t / kQ4Lanes;
  const T* x = static_cast<const T*>(a.x);
  const int g = c / 2, half = c % 2;
  for (int64_t r0 = int64_t{blockIdx.x} * kQ4Rows; r0 < a.n; r0 += int64_t{gridDim.x} * kQ4Rows) {
    float acc[kQ4Rows] = {};
    for (int64_t b = grp; b < a.bpr; b += kQ4Groups) {
      // Every row's bytes first, so that their loads are in flight together (rows past n read the
      // last row, and are not stored).
      uint4 head[kQ4Rows], qs[kQ4Rows];
#pragma unroll
      for (int r = 0; r < kQ4Rows; ++r) {
        const uint8_t* blk = a.w + std::min(r0 + r, a.n - 1) * a.ws + b * 144;
        head[r] = gpu::load_streaming(reinterpret_cast<const uint4*>(blk));
        qs[r] = gpu::load_streaming(reinterpret_cast<const uint4*>(blk + 16 + 16 * c));
      }
      float xl[16], xh[16];
      const int64_t e0 = b * 256 + 64 * g + 16 * half;
      load16(x + e0, xl);
      load16(x + e0 + 32, xh);
      float sl = 0.0f, sh = 0.0f;
#pragma unroll
      for (int i = 0; i < 16; ++i) sl += xl[i], sh += xh[i];
#pragma unroll
      for (int r = 0; r < kQ4Rows; ++r) {
        const uint32_t q[4] = {qs[r].x, qs[r].y, qs[r].z, qs[r].w};
        float pl = 0.0f, ph = 0.0f;
#pragma unroll
        for (int wd = 0; wd < 4; ++wd) {
          pl = fmaf(code_float<0>(q[wd]), xl[4 * wd + 0], pl);
          pl = fmaf(code_float<8>(q[wd]), xl[4 * wd + 1], pl);
          pl = fmaf(code_float<16>(q[wd]), xl[4 * wd + 2], pl);
          pl = fmaf(code_float<24>(q[wd]), xl[4 * wd + 3], pl);
          ph = fmaf(code_float<4>(q[wd]), xh[4 * wd + 0], ph);
          ph = fmaf(code_float<12>(q[wd]), xh[4 * wd + 1], ph);
          ph = fmaf(code_float<20>(q[wd]), xh[4 * wd + 2], ph);
          ph = fmaf(code_float<28>(q[wd]), xh[4 * wd + 3], ph);
        }
        // The header: f16 d and dmin, then the 12 scale bytes (quant::kq::get_scale_min_k4).
        uint32_t sc0, m0, sc1, m1;
        scale_min(head[r], 2 * g, &sc0, &m0);
        scale_min(head[r], 2 * g + 1, &sc1, &m1);
        const float d = f16::to_f32(static_cast<uint16_t>(head[r].x & 0xFFFF));
        const float dmin = f16::to_f32(static_cast<uint16_t>(head[r].x >> 16));
        const float ql = 16.0f * (pl - sl), qh = 16.0f * (ph - sh);  // sum q x of each sub-block
        acc[r] += d * (static_cast<float>(sc0) * ql + static_cast<float>(sc1) * qh) -
                  dmin * (static_cast<float>(m0) * sl + static_cast<float>(m1) * sh);
      }
    }
    block_sums(acc, static_cast<T*>(a.dst), r0, a.n);
  }
}

// Note [GPU Q6_K mat-vec]
// The same scheme for Q6_K's 210-byte blocks (only 2-byte aligned, so read in 16-bit words): lane
// c takes half c / 4 of the block (elements 128 h ..) and the 8 columns l0 = 8 (c % 4) of it, that
// is the codes of elements l0 + {0, 32, 64, 96} + 0..7 under four int8 scales. Four 6-bit codes
// are assembled at once in the bytes of a word (low nibbles from ql, bit pairs from qh, and bit 7
// set), and a byte permute puts each under the exponent of 1.0: the float 1 + q / 128. Then
// sum(q x) = 128 (sum - sum(x)) and a run is d sc (sum(q x) - 32 sum(x)).
constexpr int kQ6Rows = 2;

__device__ __forceinline__ uint32_t load_u32_2aligned(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
}

// 1 + q / 128 for the code in byte j of a word whose bytes are 0x80 | q.
template <int J>
__device__ __forceinline__ float code6_float(uint32_t bytes) {
  return __uint_as_float(__byte_perm(bytes, 0x3F000000u, 0x7044u | (J << 8)));
}

template <class T>
__global__ void __launch_bounds__(kQ4Threads) q6k_matvec_kernel(const Q4Args a) {
  const int t = threadIdx.x, c = t % kQ4Lanes, grp = t / kQ4Lanes;
  const T* x = static_cast<const T*>(a.x);
  const int h = c / 4, l0 = 8 * (c % 4), is = l0 / 16;
  for (int64_t r0 = int64_t{blockIdx.x} * kQ6Rows; r0 < a.n; r0 += int64_t{gridDim.x} * kQ6Rows) {
    float acc[kQ6Rows] = {};
    for (int64_t b = grp; b < a.bpr; b += kQ4Groups) {
      // Every row's bytes first (Note [GPU Q4_K mat-vec]): for columns l0 + 4 wd .. + 4, the words
      // of ql[l], ql[l + 32] and qh[l]; the four scales; d.
      uint32_t lo_a[kQ6Rows][2], lo_b[kQ6Rows][2], hi[kQ6Rows][2];
      int8_t sc[kQ6Rows][4];
      uint16_t dbits[kQ6Rows];
#pragma unroll
      for (int r = 0; r < kQ6Rows; ++r) {
        const uint8_t* blk = a.w + std::min(r0 + r, a.n - 1) * a.ws + b * 210;
        const uint8_t* ql = blk + 64 * h + l0;
#pragma unroll
        for (int wd = 0; wd < 2; ++wd) {
          lo_a[r][wd] = load_u32_2aligned(ql + 4 * wd);
          lo_b[r][wd] = load_u32_2aligned(ql + 32 + 4 * wd);
          hi[r][wd] = load_u32_2aligned(blk + 128 + 32 * h + l0 + 4 * wd);
        }
#pragma unroll
        for (int run = 0; run < 4; ++run) sc[r][run] = static_cast<int8_t>(blk[192 + 8 * h + is + 2 * run]);
        dbits[r] = *reinterpret_cast<const uint16_t*>(blk + 208);
      }
      float xv[4][8];
      const T* xb = x + b * 256 + 128 * h + l0;
#pragma unroll
      for (int run = 0; run < 4; ++run) {
        const Vec<T, 8> v0 = *reinterpret_cast<const Vec<T, 8>*>(xb + 32 * run);
#pragma unroll
        for (int e = 0; e < 8; ++e) xv[run][e] = convert<float>(v0.v[e]);
      }
      float s4[4][2];  // x's sums over each run's 4-column halves
#pragma unroll
      for (int run = 0; run < 4; ++run)
#pragma unroll
        for (int wd = 0; wd < 2; ++wd)
          s4[run][wd] = xv[run][4 * wd] + xv[run][4 * wd + 1] + xv[run][4 * wd + 2] + xv[run][4 * wd + 3];
#pragma unroll
      for (int r = 0; r < kQ6Rows; ++r) {
        float part = 0.0f;
#pragma unroll
        for (int wd = 0; wd < 2; ++wd) {
          // Runs 0..3: low nibbles of ql[l], ql[l + 32], high nibbles of ql[l], ql[l + 32]; qh bit
          // pairs 0, 2, 4, 6.
          const uint32_t la = lo_a[r][wd], lb = lo_b[r][wd], hw = hi[r][wd];
          const uint32_t q[4] = {
              (la & 0x0F0F0F0Fu) | ((hw << 4) & 0x30303030u) | 0x80808080u,
              (lb & 0x0F0F0F0Fu) | ((hw << 2) & 0x30303030u) | 0x80808080u,
              ((la >> 4) & 0x0F0F0F0Fu) | (hw & 0x30303030u) | 0x80808080u,
              ((lb >> 4) & 0x0F0F0F0Fu) | ((hw >> 2) & 0x30303030u) | 0x80808080u,
          };
#pragma unroll
          for (int run = 0; run < 4; ++run) {
            float p = 0.0f;
            p = fmaf(code6_float<0>(q[run]), xv[run][4 * wd + 0], p);
            p = fmaf(code6_float<1>(q[run]), xv[run][4 * wd + 1], p);
            p = fmaf(code6_float<2>(q[run]), xv[run][4 * wd + 2], p);
            p = fmaf(code6_float<3>(q[run]), xv[run][4 * wd + 3], p);
            const float qx = 128.0f * (p - s4[run][wd]);  // sum q x over these 4 columns
            part = fmaf(static_cast<float>(sc[r][run]), qx - 32.0f * s4[run][wd], part);
          }
        }
        acc[r] = fmaf(f16::to_f32(dbits[r]), part, acc[r]);
      }
    }
    block_sums(acc, static_cast<T*>(a.dst), r0, a.n);
  }
}

}  // namespace

bool qmatvec_k(const LaunchCtx& ctx, const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst,
               int64_t m, int64_t n, int64_t k) {
  if ((format != QFormat::Q4_K && format != QFormat::Q6_K) || m != 1 || k % 256 != 0) return false;
  const int64_t es = dtype_size(x.dtype);
  const char* xb = static_cast<const char*>(x.data) + x.layout.offset() * es;
  const uint8_t* wp = w.ptr<uint8_t>();
  const int64_t ws = w.layout.stride(0);
  if (reinterpret_cast<uintptr_t>(xb) % 16 != 0 || reinterpret_cast<uintptr_t>(wp) % 16 != 0 || ws % 16 != 0)
    return false;
  const Q4Args a{xb, wp, static_cast<char*>(dst.data) + dst.layout.offset() * es, n, ws, k / 256};
  const bool q6 = format == QFormat::Q6_K;
  // Blocks that stay resident and walk the row tiles, so that x stays in their L1.
  const int64_t rows = q6 ? kQ6Rows : kQ4Rows;
  const unsigned grid = static_cast<unsigned>(
      std::min<int64_t>((n + rows - 1) / rows, int64_t{kQ4Resident} * std::max(ctx.multiprocessors, 1)));
  dispatch_in<kQuantFloatTypes>(x.dtype, [&]<class T>() {
    if (q6)
      gpu::launch<q6k_matvec_kernel<T>>(ctx, grid, kQ4Threads, 0, a);
    else
      gpu::launch<q4k_matvec_kernel<T>>(ctx, grid, kQ4Threads, 0, a);
  });
  return true;
}

}  // namespace wick::WICK_GPU_NS::kern
