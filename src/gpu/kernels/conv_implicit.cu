// Implicit-GEMM convolution: the GEMM of im2col + GEMM with the column matrix gathered from x tile
// by tile into shared memory, never written out.
//
// Note [GPU implicit GEMM conv]
// out[s, co, p] = sum over k of W[co, k] col[s, k, p], with k over the group's taps (i, j) and
// channels, p over the output pixels. im2col writes col (kh*kw times x's size) and the GEMM reads it
// back: for the conv2d benchmark row (N32 C64 56x56 3x3) that is 115 MB each way in bf16 against
// 13 MB of x and 13 MB of out, and cuBLAS's GEMM over it is memory-bound (64 output channels).
// Here a block owns kBM = 128 pixels (flattened over the samples, so small images fill the tiles) by
// kBN = 64 output channels of one group and walks K in steps of BK: each step gathers the [kBM, BK]
// tile of col^T from x (zero in the padding) and the [BK, kBN] tile of the packed weights into
// shared memory, then multiplies them. The next step's tiles are loaded into registers before the
// current ones are multiplied, so one barrier per step suffices (two shared buffers).
// The gather reads x channels-last with K ordered (i, j, channel): a thread fetches 16 bytes, i.e.
// consecutive channels of one tap of its pixel, with one load; whether the tap lies inside the image
// is bit t of a per-pixel mask made once (so at most 31 taps), and a table of the step's vectors
// (tap, offset) is built two steps ahead by a few threads, so no thread divides per element. A first
// version gathered one element at a time from NCHW: 20 instructions per element made it slower than
// im2col + cuBLAS (bf16 0.17 ms against 0.11). NCHW inputs are copied to channels-last first.
// The product: f32 runs on the FMA units, each thread an 8x4 register tile (BK 16); bf16 / f16 run
// on the tensor cores where the compiler targets them (CUDA sm_80+, warp-level 16x16x16 MMA, f32
// accumulators, BK 32), each warp a 32x32 tile. Elsewhere (ROCm for now) the 16-bit instantiation
// multiplies on the FMA units like f32, and the host keeps 16-bit convs on im2col + the vendor's
// GEMM there (implicit_conv_fast). The accumulators go through shared memory so that out is
// written along pixels (coalesced), rounded once to the dtype.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <type_traits>

#include "cpu/dispatch.h"
#include "gpu/kernels/conv_implicit.h"
#include "gpu/kernels/map.cuh"

#if defined(WICK_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>
#define WICK_CONV_WMMA 1
#endif

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kThreads = 256;
constexpr int kBM = 128, kBN = kImplicitConvChannels, kLdC = kBM + 4;
constexpr int kVecs = 4;  // 16-byte vectors of K per pixel and step: BK = 4 vectors
constexpr int kNoTap = 31;  // the tap of vectors past the group's K: its mask bit is never set

using Raw = uint4;  // 16 bytes, moved as they are

// A vector of the step's K range: its tap t = i * kw + j and its offset in x (tap shift + channel).
struct VecTap {
  int off, t;
};

template <class T>
__device__ inline VecTap vec_tap(const ImplicitConv& a, int v) {
  constexpr int V = 16 / sizeof(T);
  const int k = v * V;
  if (k >= a.kg) return {0, kNoTap};
  const int t = k / a.cg, c = k - t * a.cg, i = t / a.kw, j = t - i * a.kw;
  return {i * a.dh * a.x_h + j * a.dw * a.x_w + c, t};
}

// FMA-unit product: thread (tx, ty) of 16 x 16 owns pixels tx + 16 * {0..7} and output channels
// ty * 4 + {0..3}; A rows of consecutive pixels are 80 bytes apart, so a quarter warp's 16-byte reads
// fall in distinct banks.
template <class T>
struct Simt {
  static constexpr int kBK = kVecs * 16 / static_cast<int>(sizeof(T)), kLdA = kBK + 16 / static_cast<int>(sizeof(T)),
                       kLdB = kBN + 16 / static_cast<int>(sizeof(T));
  struct Acc {
    float v[4][8];
    __device__ void zero() {
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int j = 0; j < 8; ++j) v[c][j] = 0.0f;
    }
    __device__ void step(const T* as, const T* bs) {
      const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
      for (int k4 = 0; k4 < kBK; k4 += 4) {
        float av[8][4], bv[4][4];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const Vec<T, 4> x = *reinterpret_cast<const Vec<T, 4>*>(as + (tx + 16 * j) * kLdA + k4);
#pragma unroll
          for (int e = 0; e < 4; ++e) av[j][e] = convert<float>(x.v[e]);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const Vec<T, 4> y = *reinterpret_cast<const Vec<T, 4>*>(bs + (k4 + e) * kLdB + ty * 4);
#pragma unroll
          for (int c = 0; c < 4; ++c) bv[e][c] = convert<float>(y.v[c]);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e)
#pragma unroll
          for (int c = 0; c < 4; ++c)
#pragma unroll
            for (int j = 0; j < 8; ++j) v[c][j] = fmaf(bv[e][c], av[j][e], v[c][j]);
      }
    }
    __device__ void store(float* cs) const {
      const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
      for (int c = 0; c < 4; ++c)
#pragma unroll
        for (int j = 0; j < 8; ++j) cs[(ty * 4 + c) * kLdC + tx + 16 * j] = v[c][j];
    }
  };
};

#if defined(WICK_CONV_WMMA)
// Tensor-core product: warp w of 8 owns pixels 32 * (w % 4) + [0, 32) and output channels
// 32 * (w / 4) + [0, 32) as 2 x 2 fragments. Rows of the tiles are padded by 16 bytes so that the
// fragment loads of consecutive rows fall in distinct banks.
template <class T>
struct Wmma {
  using V = std::conditional_t<std::is_same_v<T, bf16>, __nv_bfloat16, __half>;
  static constexpr int kBK = 32, kLdA = kBK + 8, kLdB = kBN + 8;
  template <class U, class L>
  using Frag = nvcuda::wmma::fragment<U, 16, 16, 16, V, L>;
  struct Acc {
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> v[2][2];
    __device__ void zero() {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j) nvcuda::wmma::fill_fragment(v[i][j], 0.0f);
    }
    __device__ void step(const T* as, const T* bs) {
      const int wm = (threadIdx.x / 32) % 4, wn = threadIdx.x / 128;
      const V* a = reinterpret_cast<const V*>(as) + wm * 32 * kLdA;
      const V* b = reinterpret_cast<const V*>(bs) + wn * 32;
#pragma unroll
      for (int k = 0; k < kBK; k += 16) {
        Frag<nvcuda::wmma::matrix_a, nvcuda::wmma::row_major> fa[2];
        Frag<nvcuda::wmma::matrix_b, nvcuda::wmma::row_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; ++i) nvcuda::wmma::load_matrix_sync(fa[i], a + i * 16 * kLdA + k, kLdA);
#pragma unroll
        for (int j = 0; j < 2; ++j) nvcuda::wmma::load_matrix_sync(fb[j], b + k * kLdB + j * 16, kLdB);
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) nvcuda::wmma::mma_sync(v[i][j], fa[i], fb[j], v[i][j]);
      }
    }
    // cs[n][m]: element (pixel m, channel n) at n * kLdC + m, i.e. column-major.
    __device__ void store(float* cs) const {
      const int wm = (threadIdx.x / 32) % 4, wn = threadIdx.x / 128;
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 2; ++j)
          nvcuda::wmma::store_matrix_sync(cs + (wn * 32 + j * 16) * kLdC + wm * 32 + i * 16, v[i][j], kLdC,
                                          nvcuda::wmma::mem_col_major);
    }
  };
};
template <class T>
using Product = std::conditional_t<std::is_same_v<T, float>, Simt<T>, Wmma<T>>;
#else
template <class T>
using Product = Simt<T>;
#endif

template <class T, class P>
constexpr int smem_bytes() {
  constexpr int tiles = 2 * (kBM * P::kLdA + P::kBK * P::kLdB) * static_cast<int>(sizeof(T));
  constexpr int c = kBN * kLdC * static_cast<int>(sizeof(float));
  return tiles > c ? tiles : c;
}

// Three blocks of 16-bit elements per multiprocessor (at most 85 registers a thread: a few bytes
// spill) hide the gather's latency better than two.
template <class T>
__global__ void __launch_bounds__(kThreads, sizeof(T) == 2 ? 3 : 2)
    conv_implicit_kernel(const T* __restrict__ x, const T* __restrict__ wt, T* __restrict__ out, ImplicitConv a) {
  using P = Product<T>;
  constexpr int V = 16 / sizeof(T), BK = P::kBK, kRowVecs = kBN / V;
  static_assert(BK == kVecs * V && BK * kRowVecs == kThreads && kBM * kVecs == 2 * kThreads);
  __shared__ __align__(128) unsigned char smem[smem_bytes<T, P>()];
  __shared__ VecTap taps[2][kVecs];
  T* const as = reinterpret_cast<T*>(smem);         // [2][kBM][kLdA]
  T* const bs = as + 2 * kBM * P::kLdA;              // [2][BK][kLdB]
  float* const cs = reinterpret_cast<float*>(smem);  // [kBN][kLdC], after the last step

  const int tid = static_cast<int>(threadIdx.x);
  const int gi = static_cast<int>(blockIdx.y) / a.n_tiles, n0 = (static_cast<int>(blockIdx.y) % a.n_tiles) * kBN;
  // The gather: thread pair (2m, 2m + 1) loads pixel m's vectors 0, 1 and 2, 3 of each step.
  const int am = tid / 2, av = (tid % 2) * 2;
  const int64_t pa = static_cast<int64_t>(blockIdx.x) * kBM + am;
  uint32_t mask = 0;  // bit t: tap t of pixel pa lies inside the image
  const T* xa = x;
  if (pa < a.pixels) {
    const int64_t s = pa / a.plane;
    const int q = static_cast<int>(pa - s * a.plane), oy = q / a.ow, ox = q - oy * a.ow;
    const int iy0 = oy * a.sh - a.ph, ix0 = ox * a.sw - a.pw;
    for (int i = 0, t = 0; i < a.kh; ++i)
      for (int j = 0; j < a.kw; ++j, ++t)
        if (static_cast<unsigned>(iy0 + i * a.dh) < static_cast<unsigned>(a.h) &&
            static_cast<unsigned>(ix0 + j * a.dw) < static_cast<unsigned>(a.w))
          mask |= 1u << t;
    xa = x + s * a.x_n + static_cast<int64_t>(gi) * a.cg + static_cast<int64_t>(iy0) * a.x_h +
         static_cast<int64_t>(ix0) * a.x_w;
  }
  // The weights: thread (kb, cb) loads V output channels of K row kb of each step.
  const int kb = tid / kRowVecs, cb = (tid % kRowVecs) * V;
  const bool vec_w = a.cog % V == 0;
  const T* const wg = wt + static_cast<int64_t>(gi) * a.kg * a.cog + n0 + cb;

  Raw ra[2], rb;
  auto load = [&](int step) {
    const VecTap* tb = taps[step & 1];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const VecTap tp = tb[av + r];
      ra[r] = (mask >> tp.t) & 1u ? *reinterpret_cast<const Raw*>(xa + tp.off) : Raw{0, 0, 0, 0};
    }
    const int k = step * BK + kb;
    if (k < a.kg && vec_w) {
      rb = n0 + cb < a.cog ? *reinterpret_cast<const Raw*>(wg + static_cast<int64_t>(k) * a.cog) : Raw{0, 0, 0, 0};
    } else {
      Vec<T, V> e;
#pragma unroll
      for (int c = 0; c < V; ++c)
        e.v[c] = k < a.kg && n0 + cb + c < a.cog ? wg[static_cast<int64_t>(k) * a.cog + c] : T(0.0f);
      rb = *reinterpret_cast<const Raw*>(&e);
    }
  };
  auto store = [&](int buf) {
    T* at = as + (buf * kBM + am) * P::kLdA + av * V;
    *reinterpret_cast<Raw*>(at) = ra[0];
    *reinterpret_cast<Raw*>(at + V) = ra[1];
    *reinterpret_cast<Raw*>(bs + (buf * BK + kb) * P::kLdB + cb) = rb;
  };

  const int steps = (a.kg + BK - 1) / BK;
  if (tid < 2 * kVecs) taps[tid / kVecs][tid % kVecs] = vec_tap<T>(a, tid);
  __syncthreads();
  typename P::Acc acc;
  acc.zero();
  load(0);
  store(0);
  __syncthreads();
  for (int step = 0; step < steps; ++step) {
    const int cur = step & 1;
    const bool more = step + 1 < steps;
    if (more) load(step + 1);
    acc.step(as + cur * kBM * P::kLdA, bs + cur * BK * P::kLdB);
    // taps[cur] served load(step) in the previous iteration; load(step + 2) reads it after the barrier.
    if (tid < kVecs) taps[cur][tid] = vec_tap<T>(a, (step + 2) * kVecs + tid);
    if (more) store(cur ^ 1);
    __syncthreads();
  }
  acc.store(cs);
  __syncthreads();
  const int m = tid % kBM;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kBM + m;
  if (p >= a.pixels) return;
  const int64_t s = p / a.plane;
  T* const o = out + s * a.out_n + (p - s * a.plane) + (static_cast<int64_t>(gi) * a.cog + n0) * a.plane;
  const int rows = a.cog - n0 < kBN ? a.cog - n0 : kBN;
  for (int c = tid / kBM; c < rows; c += kThreads / kBM)
    o[static_cast<int64_t>(c) * a.plane] = convert<T>(cs[c * kLdC + m]);
}

}  // namespace

bool implicit_conv_fits(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh, int64_t kw,
                        int64_t oh, int64_t ow, const int64_t stride[2], const int64_t pad[2], const int64_t dil[2],
                        int64_t groups, const int64_t x_nhw[3], int64_t elem, ImplicitConv* a) {
  constexpr int64_t kMax = INT32_MAX / 4;  // headroom for the sums of a few such terms
  auto mag = [](int64_t v) { return v < 0 ? -v : v; };
  const int64_t vec = 16 / elem, cg = c_in / groups, cog = c_out / groups, kg = cg * kh * kw, plane = oh * ow;
  const int64_t n_tiles = (cog + kBN - 1) / kBN;
  if (cg % vec != 0 || kh * kw > kNoTap || x_nhw[1] % vec != 0 || x_nhw[2] % vec != 0 || x_nhw[0] % vec != 0)
    return false;
  for (const int64_t v : {h, w, oh, ow, kh, kw, kg, plane, cog})
    if (v > kMax) return false;
  for (const int64_t v : {stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]})
    if (mag(v) > kMax) return false;
  // Pixel origins (oy * sh - ph) and tap shifts (i * dh) with their sums, and the offsets in x.
  const int64_t reach_h = oh * mag(stride[0]) + mag(pad[0]) + kh * mag(dil[0]) + h;
  const int64_t reach_w = ow * mag(stride[1]) + mag(pad[1]) + kw * mag(dil[1]) + w;
  if (reach_h > kMax || reach_w > kMax) return false;
  const int64_t xh = mag(x_nhw[1]), xw = mag(x_nhw[2]);
  if (xh > kMax || xw > kMax) return false;
  const double span = static_cast<double>(c_in) + static_cast<double>(reach_h) * static_cast<double>(xh) +
                      static_cast<double>(reach_w) * static_cast<double>(xw);
  if (span > static_cast<double>(kMax)) return false;
  if (groups * n_tiles > 65535 || (n * plane + kBM - 1) / kBM > INT32_MAX) return false;
  a->pixels = n * plane;
  a->x_n = x_nhw[0];
  a->out_n = c_out * plane;
  a->plane = static_cast<int>(plane);
  a->ow = static_cast<int>(ow);
  a->h = static_cast<int>(h);
  a->w = static_cast<int>(w);
  a->sh = static_cast<int>(stride[0]);
  a->sw = static_cast<int>(stride[1]);
  a->ph = static_cast<int>(pad[0]);
  a->pw = static_cast<int>(pad[1]);
  a->dh = static_cast<int>(dil[0]);
  a->dw = static_cast<int>(dil[1]);
  a->kh = static_cast<int>(kh);
  a->kw = static_cast<int>(kw);
  a->cg = static_cast<int>(cg);
  a->kg = static_cast<int>(kg);
  a->cog = static_cast<int>(cog);
  a->x_h = static_cast<int>(x_nhw[1]);
  a->x_w = static_cast<int>(x_nhw[2]);
  a->n_tiles = static_cast<int>(n_tiles);
  return true;
}

bool implicit_conv_fast(DType t, const std::string& arch) {
  if (t == DType::F32) return true;
  if (t != DType::BF16 && t != DType::F16) return false;
#if defined(WICK_GPU_CUDA)
  // "sm_XY": the MMA path is compiled for sm_80 and newer.
  return arch.size() >= 5 && arch.compare(0, 3, "sm_") == 0 && std::stoi(arch.substr(3)) >= 80;
#else
  return false;
#endif
}

void conv_implicit(const LaunchCtx& ctx, DType t, const void* x, const void* wt, void* out, const ImplicitConv& a,
                   int64_t groups) {
  const dim3 grid(static_cast<unsigned>((a.pixels + kBM - 1) / kBM), static_cast<unsigned>(groups * a.n_tiles));
  const auto st = gpu::native_stream(ctx.stream);
  cpu::dispatch_in<dtype_bit(DType::F32) | dtype_bit(DType::BF16) | dtype_bit(DType::F16)>(
      t,
      [&]<class T>() {
        conv_implicit_kernel<T><<<grid, kThreads, 0, st>>>(static_cast<const T*>(x), static_cast<const T*>(wt),
                                                            static_cast<T*>(out), a);
      },
      ctx.op);
  gpu::check_launch(ctx.op, ctx.device);
}

}  // namespace wick::WICK_GPU_NS::kern
