// Implicit-GEMM convolution: the GEMM of im2col + GEMM with the column matrix gathered from x tile
// by tile into shared memory, never written out.
//
// Note [GPU implicit GEMM conv]
// out[s, co, p] = sum over k of W[co, k] col[s, k, p], with k over the group's taps (i, j) and
// channels, p over the output pixels. im2col writes col (kh * kw times x's size) and the GEMM reads
// it back, so with few output channels that traffic bounds the GEMM. Here a block owns kBM = 128
// pixels (flattened over the samples, so small images fill the tiles) by kBN = 64 output channels
// of one group and walks K in steps of BK, gathering the [kBM, BK] tile of col^T from x (zero in the
// padding) and the [BK, kBN] tile of the packed weights into shared memory, then multiplying them.
// Three shared stages keep two steps' copies in flight while one is multiplied (cp.async on CUDA
// sm_80+: no pass through registers, padding zero-filled), one barrier per step. The gather reads x
// channels-last, K ordered (i, j, channel), 16 bytes at a time; a per-pixel mask of in-image taps
// (so at most 31 taps) and a cursor that carries replace divisions. f32 is gathered from NCHW with
// 4-byte copies (a warp's pixels read consecutive addresses), sparing x's channels-last copy; 16-bit
// inputs are copied to channels-last first.
//
// Note [GPU implicit conv gather lanes]
// A step's gather is kBM pixels by kVecs 16-byte vectors. With 16-bit elements, four consecutive
// lanes take the four vectors of one pixel (its 64 contiguous bytes of the step's tap and channels),
// and each thread does that for two pixels 64 apart, so a warp's copy touches 8 whole cache lines:
// L1, which serves the taps' overlapping reads, is the limit, and spreading a pixel over fewer lanes
// touches more lines with part of each. f32 keeps one pixel per thread: its copies from NCHW read 32
// consecutive pixels of one channel per warp, one line.
//
// The product: f32 runs on the FMA units, each thread an 8x8 register tile (BK 16, 128 threads);
// bf16 / f16 run on the tensor cores where the compiler targets them (CUDA sm_80+, ldmatrix and
// m16n8k16 MMAs, f32 accumulators, BK 32, 256 threads), each warp a 32x32 tile. Elsewhere (ROCm
// for now) the 16-bit instantiation multiplies on the FMA units in 8x4 tiles, and the host keeps
// 16-bit convs on im2col + the vendor's GEMM there (implicit_conv_fast). The accumulators go
// through shared memory so that out is written along pixels (coalesced), rounded once to the dtype.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

#include "backend/dispatch.h"
#include "gpu/kernels/async_copy.cuh"
#include "gpu/kernels/conv_implicit.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kBM = 128, kBN = kImplicitConvChannels, kLdC = kBM + 4;
constexpr int kVecs = 4;      // 16-byte vectors of K per pixel and step: BK = 4 vectors
constexpr int kStages = 3;    // shared-memory stages: steps s + 1 and s + 2 load while s multiplies
constexpr int kMaxTaps = 31;  // taps per pixel mask

// Threads of a block: the same for every target of a build (the host launches with it), so it
// depends on the element type only. f32 has the FMA product's 8 x 8 tiles; 16-bit types the tensor
// cores' eight warps, or 8 x 4 FMA tiles where they multiply on the FMA units.
template <class T>
constexpr int kConvThreads = sizeof(T) == 4 ? 128 : 256;

// FMA-unit product: thread (tx, ty) of 16 x (kThreads / 16) owns pixels tx + 16 * {0..7} and output
// channels ty * TN + {0..TN-1}, TN = 8 with 128 threads (f32). Per 4 k an 8 x 8 tile reads 8 A and 8 B
// vectors of 16 bytes from shared memory for 256 FMAs (8 x 4 tiles read 12 for 128, and shared memory
// became the limit). A rows of consecutive pixels are 80 bytes apart, so a quarter warp's 16-byte
// reads fall in distinct banks; B reads of a quarter warp are one broadcast.
template <class T>
struct Simt {
  static constexpr int kThreads = kConvThreads<T>, kBlocksPerSm = 3, TN = kBN * 16 / kThreads;
  static constexpr int kBK = kVecs * 16 / static_cast<int>(sizeof(T)), kLdA = kBK + 16 / static_cast<int>(sizeof(T)),
                       kLdB = kBN + 16 / static_cast<int>(sizeof(T));
  struct Acc {
    float v[TN][8];  // [channel][pixel]
    __device__ void zero() {
#pragma unroll
      for (int c = 0; c < TN; ++c)
#pragma unroll
        for (int j = 0; j < 8; ++j) v[c][j] = 0.0f;
    }
    __device__ void step(const T* as, const T* bs) {
      const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
      for (int k4 = 0; k4 < kBK; k4 += 4) {
        float av[8][4];
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const Vec<T, 4> x = *reinterpret_cast<const Vec<T, 4>*>(as + (tx + 16 * j) * kLdA + k4);
#pragma unroll
          for (int e = 0; e < 4; ++e) av[j][e] = convert<float>(x.v[e]);
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float bv[TN];
#pragma unroll
          for (int h = 0; h < TN / 4; ++h) {
            const Vec<T, 4> y = *reinterpret_cast<const Vec<T, 4>*>(bs + (k4 + e) * kLdB + ty * TN + h * 4);
#pragma unroll
            for (int c = 0; c < 4; ++c) bv[h * 4 + c] = convert<float>(y.v[c]);
          }
#pragma unroll
          for (int c = 0; c < TN; ++c)
#pragma unroll
            for (int j = 0; j < 8; ++j) v[c][j] = fmaf(bv[c], av[j][e], v[c][j]);
        }
      }
    }
    __device__ void store(float* cs) const {
      const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
#pragma unroll
      for (int c = 0; c < TN; ++c)
#pragma unroll
        for (int j = 0; j < 8; ++j) cs[(ty * TN + c) * kLdC + tx + 16 * j] = v[c][j];
    }
  };
};

#if defined(WICK_GPU_SM80)
// ldmatrix x4 from shared address `at` (lanes 8q .. 8q + 7 give the rows of matrix q): four 8 x 8
// matrices of 16-bit elements into r[0..3], or transposed on the way.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(at));
}
// The transposed form for two B fragments (16 x 8 each): b0 takes matrices 0 and 1, b1 2 and 3.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&b0)[2], uint32_t (&b1)[2], unsigned at) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(b0[0]), "=r"(b0[1]), "=r"(b1[0]), "=r"(b1[1])
               : "r"(at));
}

// Tensor-core product: warp w of 8 owns pixels 32 * (w % 4) + [0, 32) and output channels
// 32 * (w / 4) + [0, 32): per 16 k, two 16 x 16 A fragments and four 16 x 8 B fragments loaded with
// ldmatrix (B transposed on the way, as its tile is [k][channel]) feed eight m16n8k16 MMAs with f32
// accumulators (nvcuda::wmma's loads compile to 4-byte generic loads and register shuffles). Rows
// of the tiles are padded by 16 bytes, so the eight 16-byte rows an ldmatrix phase reads fall in
// distinct banks.
template <class T>
struct Mma {
  static constexpr int kThreads = kConvThreads<T>, kBlocksPerSm = 3;
  static_assert(kThreads == 256, "eight warps");
  static constexpr int kBK = 32, kLdA = kBK + 8, kLdB = kBN + 8;
  struct Acc {
    float v[2][4][4];  // [16-pixel tile][8-channel tile][the m16n8 accumulator's four elements]
    __device__ void zero() {
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) v[i][j][e] = 0.0f;
    }
    __device__ static void mma(float* c, const uint32_t* fa, const uint32_t* fb) {
      if constexpr (std::is_same_v<T, bf16>) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
      } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};\n"
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
            : "r"(fa[0]), "r"(fa[1]), "r"(fa[2]), "r"(fa[3]), "r"(fb[0]), "r"(fb[1]));
      }
    }
    __device__ void step(const T* as, const T* bs) {
      const int lane = static_cast<int>(threadIdx.x % 32), w = static_cast<int>(threadIdx.x / 32);
      // ldmatrix x4: lanes 8q .. 8q + 7 give the rows of matrix q. A's matrices are (pixels 0-7,
      // k 0-7), (8-15, 0-7), (0-7, 8-15), (8-15, 8-15); B's (k 0-7, channels 0-7), (8-15, 0-7),
      // (0-7, 8-15), (8-15, 8-15), transposed: the fragments of two 8-channel tiles.
      const unsigned a0 = smem_addr(as + ((w % 4) * 32 + (lane & 15)) * kLdA + (lane >> 4) * 8);
      const unsigned b0 = smem_addr(bs + (lane & 15) * kLdB + (w / 4) * 32 + (lane >> 4) * 8);
#pragma unroll
      for (int k = 0; k < kBK; k += 16) {
        uint32_t fa[2][4], fb[4][2];
#pragma unroll
        for (int i = 0; i < 2; ++i) ldmatrix_x4(fa[i], a0 + static_cast<unsigned>((i * 16 * kLdA + k) * 2));
#pragma unroll
        for (int h = 0; h < 2; ++h)
          ldmatrix_x4_trans(fb[2 * h], fb[2 * h + 1], b0 + static_cast<unsigned>((k * kLdB + h * 16) * 2));
#pragma unroll
        for (int i = 0; i < 2; ++i)
#pragma unroll
          for (int j = 0; j < 4; ++j) mma(v[i][j], fa[i], fb[j]);
      }
    }
    // cs[n][m]: element (pixel m, channel n) at n * kLdC + m. Accumulator element e of lane l lies at
    // pixel l / 4 (+ 8 for e >= 2), channel 2 * (l % 4) + e % 2 of its tile.
    __device__ void store(float* cs) const {
      const int lane = static_cast<int>(threadIdx.x % 32), w = static_cast<int>(threadIdx.x / 32);
      const int m = (w % 4) * 32 + lane / 4, n = (w / 4) * 32 + 2 * (lane % 4);
#pragma unroll
      for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) cs[(n + j * 8 + e % 2) * kLdC + m + i * 16 + (e / 2) * 8] = v[i][j][e];
    }
  };
};
template <class T>
using Product = std::conditional_t<std::is_same_v<T, float>, Simt<T>, Mma<T>>;
#else
template <class T>
using Product = Simt<T>;
#endif

template <class T, class P>
constexpr int smem_bytes() {
  constexpr int tiles = kStages * (kBM * P::kLdA + P::kBK * P::kLdB) * static_cast<int>(sizeof(T));
  constexpr int c = kBN * kLdC * static_cast<int>(sizeof(float));
  return tiles > c ? tiles : c;
}

// Where a 16-byte vector of the group's K lies: tap t = i * kw + j, channel c. next() moves it on by one
// vector without a branch: the channels per group are whole vectors, so it carries at most once.
// cg channels per group, kw taps per kernel row.
template <int V>
struct Cursor {
  int c, t, i, j;
  __device__ Cursor(int cg, int kw, int k) {
    t = k / cg;
    c = k - t * cg;
    i = t / kw;
    j = t - i * kw;
  }
  __device__ void next(int cg, int kw) {
    c += V;
    const bool carry = c == cg;
    c = carry ? 0 : c;
    t += carry;
    j += carry;
    const bool wrap = j == kw;
    j = wrap ? 0 : j;
    i += wrap;
  }
};

// v[i] for a phase index i < kImplicitPhases, by selects: an array of the kernel's parameters indexed
// at run time would be copied to local memory first.
__device__ __forceinline__ int phase_pick(const int (&v)[kImplicitPhases], int i) {
  int r = v[0];
#pragma unroll
  for (int q = 1; q < kImplicitPhases; ++q) r = i == q ? v[q] : r;
  return r;
}

// Three blocks per multiprocessor: the most the registers allow (85 a thread with 256 threads, 170
// with 128). Phased: the launch runs the phases f (ImplicitPhases); else a alone, f unread (reading
// the phases in every launch costs registers and time).
template <class T, bool Phased>
__global__ void __launch_bounds__(Product<T>::kThreads, Product<T>::kBlocksPerSm)
    conv_implicit_kernel(const T* __restrict__ x, const T* __restrict__ wt, T* __restrict__ out, ImplicitConv a,
                         ImplicitPhases f) {
  using P = Product<T>;
  constexpr int kThreads = P::kThreads, V = 16 / sizeof(T), BK = P::kBK, kRowVecs = kBN / V;
  constexpr int kStageA = kBM * P::kLdA, kStageB = BK * P::kLdB;
  // Per thread and step: kBV vectors of weights, and kPP pixels' kAV vectors each of the gather
  // (Note [GPU implicit conv gather lanes]).
  constexpr bool kSpread = sizeof(T) == 2;
  constexpr int kPixelThreads = kSpread ? kVecs : kThreads / kBM, kAV = kVecs / kPixelThreads;
  constexpr int kPP = kSpread ? kBM * kVecs / kThreads : 1, kBV = BK * kRowVecs / kThreads;
  static_assert(BK == kVecs * V && kThreads % kBM == 0 && kAV * kPixelThreads == kVecs &&
                kPP * kAV * kThreads == kBM * kVecs && kBV * kThreads == BK * kRowVecs);
  __shared__ __align__(128) unsigned char smem[smem_bytes<T, P>()];
  T* const as = reinterpret_cast<T*>(smem);          // [kStages][kBM][kLdA]
  T* const bs = as + kStages * kStageA;              // [kStages][BK][kLdB]
  float* const cs = reinterpret_cast<float*>(smem);  // [kBN][kLdC], after the last step

  const int tid = static_cast<int>(threadIdx.x);
  const int gi = static_cast<int>(blockIdx.y) / a.n_tiles, n0 = (static_cast<int>(blockIdx.y) % a.n_tiles) * kBN;
  const int zh = Phased ? static_cast<int>(blockIdx.z) / f.nw : 0;
  const int zw = Phased ? static_cast<int>(blockIdx.z) - zh * f.nw : 0;
  const int ph = Phased ? phase_pick(f.ph, zh) : a.ph, pw = Phased ? phase_pick(f.pw, zw) : a.pw;
  const int kh = Phased ? phase_pick(f.kh, zh) : a.kh, kw = Phased ? phase_pick(f.kw, zw) : a.kw;
  const int kg = Phased ? a.cg * kh * kw : a.kg;
  // The gather: vectors av .. av + kAV - 1 of each step, for pixels am[0 .. kPP - 1].
  const int av = (tid % kPixelThreads) * kAV;
  int am[kPP];
  uint32_t mask[kPP];  // bit t: tap t of the pixel lies inside the image (none past the last pixel)
  const T* xa[kPP];
#pragma unroll
  for (int q = 0; q < kPP; ++q) {
    am[q] = tid / kPixelThreads + q * (kThreads / kPixelThreads);
    const int64_t pa = static_cast<int64_t>(blockIdx.x) * kBM + am[q];
    mask[q] = 0;
    xa[q] = x;
    if (pa < a.pixels) {
      const int64_t s = pa / a.plane;
      const int rest = static_cast<int>(pa - s * a.plane), oy = rest / a.ow, ox = rest - oy * a.ow;
      const int iy0 = oy * a.sh - ph, ix0 = ox * a.sw - pw;
      for (int i = 0, t = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j, ++t)
          if (static_cast<unsigned>(iy0 + i * a.dh) < static_cast<unsigned>(a.h) &&
              static_cast<unsigned>(ix0 + j * a.dw) < static_cast<unsigned>(a.w))
            mask[q] |= 1u << t;
      xa[q] = x + s * a.x_n + static_cast<int64_t>(gi) * a.cg * a.x_c + static_cast<int64_t>(iy0) * a.x_h +
              static_cast<int64_t>(ix0) * a.x_w;
    }
  }
  const int tap_h = a.dh * a.x_h, tap_w = a.dw * a.x_w, taps = kh * kw;
  Cursor<V> cur(a.cg, kw, av * V);
  // The weights: vector q = tid + r * kThreads is V output channels of K row q / kRowVecs of a step.
  const bool vec_w = a.cog % V == 0;
  const T* const wg = wt + (Phased ? blockIdx.z * f.wt_step : 0) + static_cast<int64_t>(gi) * kg * a.cog + n0;

  // Step `step`'s tiles into stage buf; the cursors stand at that step and move on to the next.
  auto issue = [&](int step, int buf) {
  // The cursor walks this thread's vectors, then the other threads' of the pixel, to the next step.
#pragma unroll
    for (int r = 0; r < kVecs; ++r) {
      if (r < kAV) {
        const int64_t off = cur.i * tap_h + cur.j * tap_w + cur.c * a.x_c;
#pragma unroll
        for (int q = 0; q < kPP; ++q) {
          T* const at = as + buf * kStageA + am[q] * P::kLdA + (av + r) * V;
          const bool in = cur.t < taps && ((mask[q] >> cur.t) & 1u);
          const T* const src = in ? xa[q] + off : x;
          if (sizeof(T) == 4 && a.x_c != 1) {  // f32 channels a plane apart: V loads of 4 bytes
#pragma unroll
            for (int e = 0; e < V; ++e) copy_async<4>(at + e, src + (in ? e * a.x_c : 0), in);
          } else {
            copy_async<16>(at, src, in);
          }
        }
      }
      cur.next(a.cg, kw);
    }
#pragma unroll
    for (int r = 0; r < kBV; ++r) {
      const int q = tid + r * kThreads, kb = q / kRowVecs, cb = (q % kRowVecs) * V;
      T* const bt = bs + buf * kStageB + kb * P::kLdB + cb;
      const int k = step * BK + kb;
      if (vec_w) {
        const bool in = k < kg && n0 + cb < a.cog;
        copy_async<16>(bt, in ? wg + static_cast<int64_t>(k) * a.cog + cb : wt, in);
      } else {
#pragma unroll
        for (int c = 0; c < V; ++c)
          bt[c] = k < kg && n0 + cb + c < a.cog ? wg[static_cast<int64_t>(k) * a.cog + cb + c] : T(0.0f);
      }
    }
  };

  // kStages - 1 steps in flight ahead of the one multiplied. The barrier at the top of step s
  // publishes step s's copies and frees the stage of step s - 1 for step s + kStages - 1.
  const int steps = (kg + BK - 1) / BK;
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < steps) issue(s, s);
    commit();
  }
  typename P::Acc acc;
  acc.zero();
  for (int step = 0, buf = 0, next = kStages - 1; step < steps; ++step) {
    wait<kStages - 2>();
    __syncthreads();
    if (step + kStages - 1 < steps) issue(step + kStages - 1, next);
    commit();
    acc.step(as + buf * kStageA, bs + buf * kStageB);
    buf = buf + 1 == kStages ? 0 : buf + 1;
    next = next + 1 == kStages ? 0 : next + 1;
  }
  wait<0>();
  __syncthreads();
  acc.store(cs);
  __syncthreads();
  const int m = tid % kBM;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kBM + m;
  if (p >= a.pixels) return;
  const int64_t s = p / a.plane;
  const int rows = a.cog - n0 < kBN ? a.cog - n0 : kBN;
  if constexpr (Phased) {
    const int rest = static_cast<int>(p - s * a.plane), oy = rest / a.ow, ox = rest - oy * a.ow;
    T* const o = out + zh * f.out_h + zw * f.out_w + s * a.out_n + oy * f.out_y + ox * f.out_x +
                 (static_cast<int64_t>(gi) * a.cog + n0) * f.out_c;
    for (int c = tid / kBM; c < rows; c += kThreads / kBM) o[c * f.out_c] = convert<T>(cs[c * kLdC + m]);
  } else {
    T* const o = out + s * a.out_n + (p - s * a.plane) + (static_cast<int64_t>(gi) * a.cog + n0) * a.plane;
    for (int c = tid / kBM; c < rows; c += kThreads / kBM)
      o[static_cast<int64_t>(c) * a.plane] = convert<T>(cs[c * kLdC + m]);
  }
}

// Note [GPU tiled conv]
// 16-bit convolutions at stride and dilation 1 with at most 3 x 3 taps, x as it lies (NCHW, rows
// contiguous): the implicit GEMM above gathers every tap of every pixel again, from a channels-last
// copy of x. Here a block owns 128 output pixels of one sample (128 / TW rows of TW, tile_width) by
// kBN = 64 output channels of one group, and walks the input channels in chunks of kTileC = 16:
//   1. issue: cp.async copies of the tile's raw halo (TH + 2 rows of 16 channel planes, read from
//      the 16-byte boundary before its first column, zero outside the image) and of the chunk's
//      weights; a thread's offsets and bounds are the same in every chunk, worked out once.
//   2. spread: the raw halo into a channels-last one by transposing ldmatrix, every column kept.
//   3. compute: each tap (i, j) is one k16 step of Mma's product, A read with ldmatrix from the
//      halo shifted by i rows and j pixels. Two stages, two barriers per chunk.
// Deep K with few pixels splits better as im2col + the vendor's GEMM: tile_conv_fits leaves K above
// 1152 (128 channels of 3 x 3 taps) to the paths before it.
constexpr int kTileC = 16, kTileTaps = 3, kLdW = kBN + 8, kLdH = kTileC + 8;

template <int TW>
struct TileShape {
  static constexpr int TH = kBM / TW, HR = TH + kTileTaps - 1;
  static constexpr int RS = TW + 16;  // a raw halo row: TW + 2 columns from `lead` < 8 on, whole vectors
  static constexpr int PS = HR * RS + (40 - HR * RS % 32) % 32;  // raw channel planes: PS = 8 (mod 32)
  static constexpr int kRaw = kTileC * PS, kWeights = kTileTaps * kTileTaps * kTileC * kLdW;
  static constexpr int kStage = kRaw + kWeights;  // elements
  static constexpr int kHalo = HR * RS * kLdH;    // the channels-last halo, after the two stages
  static constexpr int64_t bytes(int elem) {
    const int64_t tiles = (2 * int64_t{kStage} + kHalo) * elem, sums = int64_t{kBN} * kLdC * 4;
    return tiles > sums ? tiles : sums;
  }
  static_assert(PS % 32 == 8 && PS >= HR * RS && kRaw % 8 == 0 && TH * TW == kBM);
  static constexpr int kRowVecs = RS / 8, kUnits = HR * kRowVecs;  // 16-byte vectors of a raw row, plane
  static_assert(kUnits % 2 == 0);  // the spread's ldmatrix x4 takes two units' channel octets
};

// Built for tensor cores only (the host checks the compiled version, tile_compiled); elsewhere the
// kernel is empty and never launched.
template <class T, int TW>
__global__ void __launch_bounds__(256, 2)
    conv_tile_kernel(const T* __restrict__ x, const T* __restrict__ wt, T* __restrict__ out, TileConv a) {
#if defined(WICK_GPU_SM80)
  using S = TileShape<TW>;
  using Acc = typename Mma<T>::Acc;
  constexpr int kThreads = 256, kRowVecs = S::kRowVecs;
  extern __shared__ __align__(128) unsigned char tile_smem[];
  // [2][raw halo [kTileC][PS], weights [taps * kTileC][kLdW]], then the halo [HR * RS][kLdH]
  T* const st = reinterpret_cast<T*>(tile_smem);
  T* const halo = st + 2 * S::kStage;
  float* const cs = reinterpret_cast<float*>(tile_smem);  // [kBN][kLdC], after the last chunk

  const int tid = static_cast<int>(threadIdx.x), lane = tid % 32, w = tid / 32;
  const int tx = static_cast<int>(blockIdx.x % static_cast<unsigned>(a.tiles_x));
  const int64_t rest = blockIdx.x / static_cast<unsigned>(a.tiles_x);
  const int ty = static_cast<int>(rest % a.tiles_y);
  const int64_t s = rest / a.tiles_y;
  const int gi = static_cast<int>(blockIdx.y) / a.n_tiles, n0 = (static_cast<int>(blockIdx.y) % a.n_tiles) * kBN;
  const int y0 = ty * S::TH, x0 = tx * TW, row0 = y0 - a.ph;
  const int first = x0 - a.pw, col0 = first >= 0 ? first / 8 * 8 : -((7 - first) / 8) * 8, lead = first - col0;
  const T* const xs = x + s * a.x_n + static_cast<int64_t>(gi) * a.cg * a.x_c;
  const int taps = a.kh * a.kw;
  const T* const wg = wt + static_cast<int64_t>(gi) * taps * a.cg * a.cog + n0;

  // The copies of a chunk (step 1). Thread tid copies vector `unit` (row r, vector v) of the raw
  // planes tid / kUnits + k * kUnitSpan, and weight vectors (channel wc, columns wcb on) of the taps
  // tid / kWeightsPerTap + k * kTapSpan: offsets and bounds fixed for the block, computed here once.
  constexpr int kUnitSpan = kThreads / S::kUnits, kWeightsPerTap = kTileC * (kBN / 8);
  constexpr int kTapSpan = kThreads / kWeightsPerTap;
  static_assert(kUnitSpan >= 1 && kThreads % kWeightsPerTap == 0);
  const int unit = tid % S::kUnits, plane0 = tid / S::kUnits;
  const int unit_dst = unit / kRowVecs * S::RS + unit % kRowVecs * 8;
  const int iy = row0 + unit / kRowVecs, ix = col0 + unit % kRowVecs * 8;
  const bool unit_in =
      static_cast<unsigned>(iy) < static_cast<unsigned>(a.h) && static_cast<unsigned>(ix) < static_cast<unsigned>(a.w);
  const T* const unit_src = xs + (unit_in ? static_cast<int64_t>(iy) * a.x_h + ix : 0);
  const int wc = tid / (kBN / 8) % kTileC, wcb = tid % (kBN / 8) * 8;
  const bool w_in = n0 + wcb < a.cog;
  const T* const w_src = wg + static_cast<int64_t>(wc) * a.cog + wcb;
  const int64_t tap_step = static_cast<int64_t>(a.cg) * a.cog;
  auto issue = [&](int c0, T* stage) {
    if (plane0 < kUnitSpan)
      for (int c = plane0; c < kTileC; c += kUnitSpan) {
        const bool in = unit_in && c0 + c < a.cg;
        copy_async<16>(stage + c * S::PS + unit_dst, in ? unit_src + static_cast<int64_t>(c0 + c) * a.x_c : x, in);
      }
    T* const ws = stage + S::kRaw + wc * kLdW + wcb;
    const bool in = w_in && c0 + wc < a.cg;
    const T* const src = w_src + static_cast<int64_t>(c0) * a.cog;
    for (int tp = tid / kWeightsPerTap; tp < taps; tp += kTapSpan)
      copy_async<16>(ws + tp * kTileC * kLdW, in ? src + tp * tap_step : wt, in);
  };
  // The raw halo of a stage into `halo`, channels-last (step 2), with transposing ldmatrix: matrix
  // (unit u, channel octet o) has the rows of channels 8o .. 8o + 7 at vector u, and comes out as
  // lane l's pixel l / 4 of the vector with channels 8o + 2 (l % 4) and the next, one 4-byte word.
  // The halo keeps every raw column (RS a row), so no column is tested; the products start `lead`
  // columns in. Rows of kLdH elements keep both the ldmatrix reads (planes PS = 8 mod 32 apart) and
  // the stores (8 pixels 48 bytes apart) in distinct banks.
  auto spread = [&](const T* stage) {
    for (int g = w; g < S::kUnits / 2; g += kThreads / 32) {
      const int mi = 4 * g + lane / 8, u = mi / 2, o = mi % 2;
      uint32_t r[2][2];
      ldmatrix_x4_trans(r[0], r[1],
                        smem_addr(stage + (o * 8 + lane % 8) * S::PS + u / kRowVecs * S::RS + u % kRowVecs * 8));
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const int uq = (4 * g + q) / 2, oq = q % 2;
        *reinterpret_cast<uint32_t*>(halo + (uq / kRowVecs * S::RS + uq % kRowVecs * 8 + lane / 4) * kLdH + oq * 8 +
                                     2 * (lane % 4)) = r[q / 2][q % 2];
      }
    }
  };

  // ldmatrix rows of this lane: pixel (lane & 15) of its warp's two 16-pixel fragments, channels
  // (lane >> 4) * 8 on, at tap (0, 0); B's as in Mma.
  const int wm = w % 4, wn = w / 4;
  unsigned a_lane[2];
#pragma unroll
  for (int f = 0; f < 2; ++f) {
    const int m = wm * 32 + f * 16 + (lane & 15);
    a_lane[f] = smem_addr(halo + ((m / TW) * S::RS + m % TW + lead) * kLdH + (lane >> 4) * 8);
  }
  const unsigned b_lane = static_cast<unsigned>(((lane & 15) * kLdW + wn * 32 + (lane >> 4) * 8) * 2);
  Acc acc;
  acc.zero();
  auto compute = [&](const T* stage) {
    const unsigned wb = smem_addr(stage + S::kRaw) + b_lane;
    for (int tp = 0, i = 0, j = 0; tp < taps; ++tp) {
      const unsigned toff = static_cast<unsigned>((i * S::RS + j) * kLdH * 2);
      uint32_t fa[2][4], fb[4][2];
#pragma unroll
      for (int f = 0; f < 2; ++f) ldmatrix_x4(fa[f], a_lane[f] + toff);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        ldmatrix_x4_trans(fb[2 * hh], fb[2 * hh + 1], wb + static_cast<unsigned>((tp * kTileC * kLdW + hh * 16) * 2));
#pragma unroll
      for (int f = 0; f < 2; ++f)
#pragma unroll
        for (int q = 0; q < 4; ++q) Acc::mma(acc.v[f][q], fa[f], fb[q]);
      j = j + 1 == a.kw ? 0 : j + 1;
      i += j == 0;
    }
  };

  // Per chunk: the first barrier publishes its copies and ends the reads of the halo (and of the
  // other stage) by chunk ch - 1's product; the second publishes the spread halo. Chunk ch + 1's
  // copies fly while ch is spread and multiplied.
  const int chunks = (a.cg + kTileC - 1) / kTileC;
  issue(0, st);
  commit();
  for (int ch = 0; ch < chunks; ++ch) {
    T* const stage = st + (ch & 1) * S::kStage;
    wait<0>();
    __syncthreads();
    if (ch + 1 < chunks) issue((ch + 1) * kTileC, st + ((ch + 1) & 1) * S::kStage);
    commit();
    spread(stage);
    __syncthreads();
    compute(stage);
  }
  __syncthreads();
  acc.store(cs);
  __syncthreads();
  const int m = tid % kBM, oy = y0 + m / TW, ox = x0 + m % TW;
  if (oy >= a.oh || ox >= a.ow) return;
  const int rows = a.cog - n0 < kBN ? a.cog - n0 : kBN;
  T* const o = out + s * a.out_n + (static_cast<int64_t>(gi) * a.cog + n0) * a.out_c + oy * a.out_y + ox * a.out_x;
  for (int c = tid / kBM; c < rows; c += kThreads / kBM) o[c * a.out_c] = convert<T>(cs[c * kLdC + m]);
#endif
}

}  // namespace

bool implicit_conv_fits(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh, int64_t kw,
                        int64_t oh, int64_t ow, const int64_t stride[2], const int64_t pad[2], const int64_t dil[2],
                        int64_t groups, const void* x, const int64_t x_nchw[4], int64_t elem, ImplicitConv* a) {
  constexpr int64_t kMax = INT32_MAX / 4;  // headroom for the sums of a few such terms
  auto mag = [](int64_t v) { return v < 0 ? -v : v; };
  const int64_t vec = 16 / elem, cg = c_in / groups, cog = c_out / groups, kg = cg * kh * kw, plane = oh * ow;
  const int64_t n_tiles = (cog + kBN - 1) / kBN;
  if (cg % vec != 0 || kh * kw > kMaxTaps) return false;
  if (x_nchw[1] == 1) {  // channels-last: 16-byte copies of whole pixels' channel runs
    if (x_nchw[0] % vec != 0 || x_nchw[2] % vec != 0 || x_nchw[3] % vec != 0 || (x && !aligned_to(x, 16))) return false;
  } else if (elem != 4 || (x && !aligned_to(x, 4))) {  // else 4-byte copies of f32
    return false;
  }
  for (const int64_t v : {h, w, oh, ow, kh, kw, kg, plane, cog})
    if (v > kMax) return false;
  for (const int64_t v : {stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]})
    if (mag(v) > kMax) return false;
  // Pixel origins (oy * sh - ph) and tap shifts (i * dh) with their sums, and the offsets in x.
  const int64_t reach_h = oh * mag(stride[0]) + mag(pad[0]) + kh * mag(dil[0]) + h;
  const int64_t reach_w = ow * mag(stride[1]) + mag(pad[1]) + kw * mag(dil[1]) + w;
  if (reach_h > kMax || reach_w > kMax) return false;
  const int64_t xc = mag(x_nchw[1]), xh = mag(x_nchw[2]), xw = mag(x_nchw[3]);
  if (xc > kMax || xh > kMax || xw > kMax) return false;
  const double span = static_cast<double>(c_in) * static_cast<double>(xc) +
                      static_cast<double>(reach_h) * static_cast<double>(xh) +
                      static_cast<double>(reach_w) * static_cast<double>(xw);
  if (span > static_cast<double>(kMax)) return false;
  if (groups * n_tiles > 65535 || (n * plane + kBM - 1) / kBM > INT32_MAX) return false;
  a->pixels = n * plane;
  a->x_n = x_nchw[0];
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
  a->x_c = static_cast<int>(x_nchw[1]);
  a->x_h = static_cast<int>(x_nchw[2]);
  a->x_w = static_cast<int>(x_nchw[3]);
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
                   int64_t groups, const ImplicitPhases& phases) {
  const int z = phases.nh * phases.nw;
  const dim3 grid(static_cast<unsigned>((a.pixels + kBM - 1) / kBM), static_cast<unsigned>(groups * a.n_tiles),
                  static_cast<unsigned>(z));
  wick::dispatch_in<dtype_bit(DType::F32) | dtype_bit(DType::BF16) | dtype_bit(DType::F16)>(
      t,
      [&]<class T>() {
        const auto run = [&]<bool Phased>() {
          gpu::launch<conv_implicit_kernel<T, Phased>>(ctx, grid, kConvThreads<T>, 0, static_cast<const T*>(x),
                                                       static_cast<const T*>(wt), static_cast<T*>(out), a, phases);
        };
        by_flag(z > 1, run);
      },
      ctx.op);
}

namespace {

// Whether the tiled kernel was compiled for tensor cores for `device` (Note [GPU tiled conv]): the
// code the runtime loads there comes from PTX of sm_80 or newer. A build for older targets alone,
// run on a newer GPU, compiles their PTX, without the kernel's body.
bool tile_compiled(int device) {
#if defined(WICK_GPU_CUDA)
  static std::mutex* mu = new std::mutex;
  static auto* known = new std::map<int, bool>;
  std::lock_guard<std::mutex> lock(*mu);
  const auto it = known->find(device);
  if (it != known->end()) return it->second;
  const bool ok = gpu::kernel_ptx_version(reinterpret_cast<const void*>(conv_tile_kernel<bf16, 16>)) >= 80;
  return (*known)[device] = ok;
#else
  (void)device;
  return false;
#endif
}

// The tile width whose tiles cover the output with the fewest pixels; on ties the smaller halo.
int tile_width(int64_t oh, int64_t ow) {
  int best = 0;
  int64_t best_area = 0, best_halo = 0;
  for (const int tw : {16, 8, 32}) {
    const int64_t th = kBM / tw, area = (oh + th - 1) / th * th * ((ow + tw - 1) / tw * tw);
    const int64_t halo = (th + kTileTaps - 1) * (tw + kTileTaps - 1);
    if (best == 0 || area < best_area || (area == best_area && halo < best_halo))
      best = tw, best_area = area, best_halo = halo;
  }
  return best;
}

// f.template operator()<TW>() for the tile width tw (8, 16 or 32) as a constant.
template <class F>
decltype(auto) with_tile_width(int tw, F&& f) {
  if (tw == 8) return f.template operator()<8>();
  if (tw == 16) return f.template operator()<16>();
  return f.template operator()<32>();
}

int64_t tile_smem_bytes(int tw, int64_t elem) {
  return with_tile_width(tw, [&]<int TW>() { return TileShape<TW>::bytes(static_cast<int>(elem)); });
}

}  // namespace

bool tile_conv_fits(DType t, int device, int64_t shared_per_block, int64_t n, int64_t c_in, int64_t h, int64_t w,
                    int64_t c_out, int64_t kh, int64_t kw, int64_t oh, int64_t ow, const int64_t stride[2],
                    const int64_t pad[2], const int64_t dil[2], int64_t groups, const void* x, const int64_t x_nchw[4],
                    const int64_t out_nchw[4], TileConv* a) {
  constexpr int64_t kMax = INT32_MAX / 4;
  constexpr int64_t vec = 8;  // elements of a 16-byte vector
  if (t != DType::BF16 && t != DType::F16) return false;
  const int64_t cg = c_in / groups, cog = c_out / groups;
  if (stride[0] != 1 || stride[1] != 1 || dil[0] != 1 || dil[1] != 1 || kh < 1 || kw < 1 || kh > kTileTaps ||
      kw > kTileTaps || pad[0] < 0 || pad[1] < 0 || cg < 8 || cg * kh * kw > 1152 || cog < 1 || cog % vec != 0)
    return false;
  if (x_nchw[3] != 1 || w % vec != 0 || x_nchw[0] % vec != 0 || x_nchw[1] % vec != 0 || x_nchw[2] % vec != 0 ||
      !aligned_to(x, 16))
    return false;
  for (const int64_t v : {h, w, oh, ow, pad[0], pad[1], cg, cog})
    if (v > kMax) return false;
  const int tw = tile_width(oh, ow);
  const int64_t th = kBM / tw, tiles_x = (ow + tw - 1) / tw, tiles_y = (oh + th - 1) / th;
  if (4 * oh * ow < 3 * tiles_y * th * tiles_x * tw) return false;  // a quarter of the tiles' pixels idle
  const int64_t n_tiles = (cog + kBN - 1) / kBN;
  if (n * tiles_y * tiles_x > INT32_MAX || groups * n_tiles > 65535) return false;
  if (tile_smem_bytes(tw, 2) > shared_per_block || !tile_compiled(device)) return false;
  *a = TileConv{n * tiles_y * tiles_x,
                x_nchw[0],
                x_nchw[1],
                x_nchw[2],
                out_nchw[0],
                out_nchw[1],
                out_nchw[2],
                out_nchw[3],
                static_cast<int>(h),
                static_cast<int>(w),
                static_cast<int>(oh),
                static_cast<int>(ow),
                static_cast<int>(pad[0]),
                static_cast<int>(pad[1]),
                static_cast<int>(kh),
                static_cast<int>(kw),
                static_cast<int>(cg),
                static_cast<int>(cog),
                static_cast<int>(n_tiles),
                tw,
                static_cast<int>(tiles_x),
                static_cast<int>(tiles_y)};
  return true;
}

void conv_tile(const LaunchCtx& ctx, DType t, const void* x, const void* wt, void* out, const TileConv& a,
               int64_t groups) {
  const dim3 grid(static_cast<unsigned>(a.blocks), static_cast<unsigned>(groups * a.n_tiles));
  wick::dispatch_in<dtype_bit(DType::BF16) | dtype_bit(DType::F16)>(
      t,
      [&]<class T>() {
        with_tile_width(a.tw, [&]<int TW>() {
          constexpr auto kernel = conv_tile_kernel<T, TW>;
          const int64_t bytes = TileShape<TW>::bytes(static_cast<int>(sizeof(T)));
          gpu::allow_dynamic_shared<kernel>(bytes, ctx.op, ctx.device);
          gpu::launch<kernel>(ctx, grid, 256, static_cast<size_t>(bytes), static_cast<const T*>(x),
                              static_cast<const T*>(wt), static_cast<T*>(out), a);
        });
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
