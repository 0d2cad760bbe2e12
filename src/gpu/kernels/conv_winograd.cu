// Winograd convolution F(2x2, 3x3) for f32 3x3 convolutions at stride 1 (forward, and the
// phases of transposed ones seen as forward with flipped taps).
//
// Note [GPU Winograd conv]
// Each 2x2 block of output pixels (a tile) is computed from the 4x4 input patch under it as
// Y = A^T [sum over c of U[c] . V[c]] A (elementwise products of 4x4 matrices) with
// V = B^T d B the patch's transform and U = G g G^T the 3x3 filter's (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2015):
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// So for each of the 16 positions e of the 4x4 matrices the sum over c is a GEMM of [tiles, c] by
// [c, c_out]: per tile, input and output channel 16 multiply-adds make 4 output pixels, 4 per pixel
// against 9 for the direct sum, 2.25 times fewer. The FMA units are the limit of f32 convolutions,
// so that is the gain over the implicit GEMM (Note [GPU implicit GEMM conv]). The weights are
// transformed once per call (winograd_filter_kernel) into U [group][e][c][co].
//
// Accuracy: the transforms add and halve (exact but for the adds' roundings), and the products'
// sums run in f32 as in the direct kernel; the results differ from the direct sum in the last bits
// (within the f32 accumulation bound the conv tests use). The transforms sum up to 4 (input, per
// dimension) and 3 (filter) terms, so magnitudes within a factor of about 16 of the f32 range can
// overflow to inf here where the direct sum stays finite, and an inf or NaN input can make inf or
// NaN of outputs of its tiles whose windows do not hold it, where the direct sum changes only those
// whose windows do (the transforms mix the patch; cuDNN's Winograd algorithms behave the same way).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>

#include "gpu/kernels/async_copy.cuh"
#include "gpu/kernels/conv_winograd.h"
#include "gpu/kernels/map.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {

namespace {

constexpr int kTiles = 16, kCo = 64, kStepC = 8, kThreads = 256;
constexpr int kPatchThreads = kTiles * kStepC;                  // 128: one (tile, channel) patch each per step
constexpr int kStageV = 16 * kStepC * kTiles;                   // [e][c][tile]
constexpr int kStageU = 16 * kStepC * kCo;                      // [e][c][co]
constexpr int kStage = kStageV + kStageU + 16 * kPatchThreads;  // and the raw patches
constexpr int kLdM = kCo + 4;  // [e][tile][co] rows of the sums at the end (16-byte aligned rows)
constexpr int kSums = 16 * kTiles * kLdM;
constexpr int kSmemFloats = 2 * kStage > kSums ? 2 * kStage : kSums;
constexpr int64_t kSmemBytes = kSmemFloats * 4;
static_assert(kPatchThreads <= kThreads && kThreads == 16 * 16 && kStageU % (4 * kThreads) == 0);

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// U[g][e][c][co] (c < cgp, co < cogp; zero past cg, cog) = (G g G^T)[e / 4][e % 4] of filter
// (g, co, c); one thread per (g, c, co).
__global__ void __launch_bounds__(kBlock)
    winograd_filter_kernel(WinogradWeights w, int cg, int cog, int cgp, int cogp, int64_t total, float* u) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= total) return;
  const int co = static_cast<int>(i % cogp), c = static_cast<int>(i / cogp % cgp);
  const int64_t g = i / cogp / cgp;
  float k[3][3] = {};
  if (c < cg && co < cog) {
    const float* p = w.p + g * w.s[0] + co * w.s[1] + c * w.s[2];
#pragma unroll
    for (int r = 0; r < 3; ++r)
#pragma unroll
      for (int q = 0; q < 3; ++q) k[r][q] = p[r * w.s[3] + q * w.s[4]];
  }
  float t[4][3];  // G g
#pragma unroll
  for (int q = 0; q < 3; ++q) {
    t[0][q] = k[0][q];
    t[1][q] = 0.5f * (k[0][q] + k[1][q] + k[2][q]);
    t[2][q] = 0.5f * (k[0][q] - k[1][q] + k[2][q]);
    t[3][q] = k[2][q];
  }
  float* const out = u + g * 16 * cgp * cogp + static_cast<int64_t>(c) * cogp + co;
  const int64_t e_step = static_cast<int64_t>(cgp) * cogp;
#pragma unroll
  for (int r = 0; r < 4; ++r) {  // (G g) G^T
    out[(r * 4 + 0) * e_step] = t[r][0];
    out[(r * 4 + 1) * e_step] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
    out[(r * 4 + 2) * e_step] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
    out[(r * 4 + 3) * e_step] = t[r][2];
  }
}

struct Geometry {
  WinogradConv a;
  int cgp, cogp, co_tiles, tiles_w;
  int64_t tiles_per_sample, tiles;
};

// Tile t's sample and its row and column among the sample's tiles (2x2 output pixels each).
struct TilePos {
  int64_t s;
  int ty, tx;
};
__device__ __forceinline__ TilePos tile_pos(const Geometry& q, int64_t t) {
  const int64_t s = t / q.tiles_per_sample;
  const int r = static_cast<int>(t - s * q.tiles_per_sample), ty = r / q.tiles_w;
  return {s, ty, r - ty * q.tiles_w};
}

// V = B^T d B of patch d (row-major 4x4), in place.
__device__ __forceinline__ void input_transform(float (&d)[16]) {
#pragma unroll
  for (int q = 0; q < 4; ++q) {  // columns: B^T d
    const float d0 = d[q], d1 = d[4 + q], d2 = d[8 + q], d3 = d[12 + q];
    d[q] = d0 - d2;
    d[4 + q] = d1 + d2;
    d[8 + q] = d2 - d1;
    d[12 + q] = d1 - d3;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {  // rows: (B^T d) B
    const float t0 = d[4 * r], t1 = d[4 * r + 1], t2 = d[4 * r + 2], t3 = d[4 * r + 3];
    d[4 * r] = t0 - t2;
    d[4 * r + 1] = t1 + t2;
    d[4 * r + 2] = t2 - t1;
    d[4 * r + 3] = t1 - t3;
  }
}

// A block owns kTiles = 16 tiles (64 output pixels, the tiles flattened over samples and tile rows)
// by kCo = 64 output channels of one group and walks the input channels in steps of kStepC = 8
// (U from winograd_filter_kernel, channels padded with zeros to whole steps and tiles). Two
// shared-memory stages, one barrier per step: while step s is multiplied, step s + 1's copies are
// in flight (cp.async): threads 0..127 each copy one (tile, channel) patch of 16 elements (zero
// outside the image), all threads U's [e][c][co] slice of the step; after the product each patch
// thread waits for its own copies and stores its patch's transform V [e][c][tile] into that stage.
// Thread (e, tiles, channels) multiplies its 8 tiles by 8 output channels of position e: per
// channel two 16-byte reads of V and two of U for 64 FMAs. Its tiles are {4t..4t+3, 8+4t..8+4t+3}
// and its channels {4q..4q+3, 32+4q..32+4q+3}, so that the eight threads of a quarter warp (same e
// and t, q = 0..7) read 128 consecutive bytes of U. At the end the 16 sums of each (tile, channel)
// meet in shared memory, and Y = A^T M A gives the tile's four pixels, written along the tiles
// (coalesced). A block uses 96 KB of shared memory (two blocks a multiprocessor at 128 registers a
// thread); devices that allow less per block (AMD's 64 KB) keep these convolutions on the implicit
// GEMM.
__global__ void __launch_bounds__(kThreads, 2)
    winograd_kernel(const float* __restrict__ x, const float* __restrict__ u, float* __restrict__ out, Geometry q) {
  extern __shared__ float4 winograd_smem[];
  float* const sm = reinterpret_cast<float*>(winograd_smem);
  const WinogradConv& a = q.a;
  const int tid = static_cast<int>(threadIdx.x);
  const int gi = static_cast<int>(blockIdx.y) / q.co_tiles, co0 = static_cast<int>(blockIdx.y) % q.co_tiles * kCo;
  const int64_t tile0 = static_cast<int64_t>(blockIdx.x) * kTiles;

  // The patch of thread tid < kPatchThreads: tile tid % kTiles, channel tid / kTiles of each step.
  const int ptile = tid % kTiles, pch = tid / kTiles;
  uint32_t inside = 0;  // bit 4r + c: patch row r, column c lies in the image
  const float* px = x;
  if (tid < kPatchThreads && tile0 + ptile < q.tiles) {
    const TilePos tp = tile_pos(q, tile0 + ptile);
    const int iy0 = 2 * tp.ty - a.ph, ix0 = 2 * tp.tx - a.pw;
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (static_cast<unsigned>(iy0 + i) < static_cast<unsigned>(a.h) &&
            static_cast<unsigned>(ix0 + j) < static_cast<unsigned>(a.w))
          inside |= 1u << (4 * i + j);
    px = x + tp.s * a.x_n + (static_cast<int64_t>(gi) * a.cg + pch) * a.x_c + static_cast<int64_t>(iy0) * a.x_h +
         static_cast<int64_t>(ix0) * a.x_w;
  }
  // Step `step`'s patches (raw, [element][patch thread]) and U's slice ([e][c][co0 .. co0 + 63], rows
  // of the cogp-wide array) into stage `stage`, in flight until wait().
  constexpr int kStageCo = kStepC * kCo / 4;  // 16-byte copies per position e: 128
  const int uc4 = tid % (kCo / 4), uc = tid / (kCo / 4) % kStepC, ue = tid / kStageCo;
  const float* const u_src =
      u + (static_cast<int64_t>(gi) * 16 + ue) * q.cgp * q.cogp + static_cast<int64_t>(uc) * q.cogp + co0 + 4 * uc4;
  const int u_dst = (ue * kStepC + uc) * kCo + 4 * uc4;
  const int64_t u_e2 = static_cast<int64_t>(kThreads / kStageCo) * q.cgp * q.cogp;  // copy r + 1: 2 positions on
  auto issue = [&](int step, int stage) {
    float* const st = sm + stage * kStage;
    if (tid < kPatchThreads) {
      const bool ok = step * kStepC + pch < a.cg;
      const float* const p = px + static_cast<int64_t>(step) * kStepC * a.x_c;
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const bool in = ok && ((inside >> (4 * i + j)) & 1u);
          copy_async<4>(st + kStageV + kStageU + (4 * i + j) * kPatchThreads + tid, in ? p + i * a.x_h + j * a.x_w : x,
                        in);
        }
    }
    // Copy r of this thread: 16 bytes at channels 4 * (tid % 16) of c = tid / 16 % 8, position tid / 128 + 2r.
    const float* const src = u_src + static_cast<int64_t>(step) * kStepC * q.cogp;
    float* const dst = st + kStageV + u_dst;
#pragma unroll
    for (int r = 0; r < kStageU / (4 * kThreads); ++r)
      copy_async<16>(dst + r * (kThreads / kStageCo) * kStepC * kCo, src + r * u_e2, true);
    commit();
  };
  // This thread's patch of stage `stage` (its own copies, landed) to V [e][c][tile] of the stage.
  auto transform = [&](int stage) {
    float* const st = sm + stage * kStage;
    float d[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) d[k] = st[kStageV + kStageU + k * kPatchThreads + tid];
    input_transform(d);
#pragma unroll
    for (int k = 0; k < 16; ++k) st[(k * kStepC + pch) * kTiles + ptile] = d[k];
  };

  // The product: position e of the 4x4 matrices, tiles {4t..4t+3, 8+4t..}, channels {4c..4c+3, 32+4c..}.
  const int e = tid / 16, tt = tid % 16 / 8, tc = tid % 8;
  float acc[8][8];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

  const int steps = q.cgp / kStepC;
  issue(0, 0);
  wait<0>();
  if (tid < kPatchThreads) transform(0);
  for (int step = 0; step < steps; ++step) {
    const int stage = step & 1;
    __syncthreads();  // stage's V and U are in; the other stage's last readers (step - 1) are done
    if (step + 1 < steps) issue(step + 1, stage ^ 1);
    const float* const vs = sm + stage * kStage + e * kStepC * kTiles + 4 * tt;
    const float* const us = sm + stage * kStage + kStageV + e * kStepC * kCo + 4 * tc;
#pragma unroll
    for (int c = 0; c < kStepC; ++c) {
      const float4 v0 = *reinterpret_cast<const float4*>(vs + c * kTiles);
      const float4 v1 = *reinterpret_cast<const float4*>(vs + c * kTiles + 8);
      const float4 u0 = *reinterpret_cast<const float4*>(us + c * kCo);
      const float4 u1 = *reinterpret_cast<const float4*>(us + c * kCo + 32);
      const float vv[8] = {v0.x, v0.y, v0.z, v0.w, v1.x, v1.y, v1.z, v1.w};
      const float uu[8] = {u0.x, u0.y, u0.z, u0.w, u1.x, u1.y, u1.z, u1.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(vv[i], uu[j], acc[i][j]);
    }
    if (step + 1 < steps) {
      wait<0>();
      if (tid < kPatchThreads) transform(stage ^ 1);
    }
  }
  __syncthreads();  // every product is done with the stages: the sums take their place

  // M [e][tile][co]
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    float* const m = sm + (e * kTiles + 4 * tt + (i % 4) + (i / 4) * 8) * kLdM + 4 * tc;
    *reinterpret_cast<float4*>(m) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(m + 32) = make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
  __syncthreads();

  // Y = A^T M A for (tile, channel) pairs, tiles fastest.
  for (int pair = tid; pair < kTiles * kCo; pair += kThreads) {
    const int tile = pair % kTiles, co = pair / kTiles;
    const int64_t t = tile0 + tile;
    if (t >= q.tiles || co0 + co >= a.cog) continue;
    float m[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) m[k] = sm[(k * kTiles + tile) * kLdM + co];
    float r0[4], r1[4];  // A^T M
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      r0[j] = m[j] + m[4 + j] + m[8 + j];
      r1[j] = m[4 + j] - m[8 + j] - m[12 + j];
    }
    const float y[2][2] = {{r0[0] + r0[1] + r0[2], r0[1] - r0[2] - r0[3]},
                           {r1[0] + r1[1] + r1[2], r1[1] - r1[2] - r1[3]}};
    const TilePos tp = tile_pos(q, t);
    float* const o = out + tp.s * (static_cast<int64_t>(a.groups) * a.cog * a.oh * a.ow) +
                     (static_cast<int64_t>(gi) * a.cog + co0 + co) * a.oh * a.ow;
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int oy = 2 * tp.ty + i, ox = 2 * tp.tx + j;
        if (oy < a.oh && ox < a.ow) o[static_cast<int64_t>(oy) * a.ow + ox] = y[i][j];
      }
  }
}

Geometry geometry(const WinogradConv& a) {
  Geometry q{};
  q.a = a;
  q.cgp = static_cast<int>(round_up(a.cg, kStepC));
  q.cogp = static_cast<int>(round_up(a.cog, kCo));
  q.co_tiles = q.cogp / kCo;
  q.tiles_w = (a.ow + 1) / 2;
  q.tiles_per_sample = static_cast<int64_t>((a.oh + 1) / 2) * q.tiles_w;
  q.tiles = a.n * q.tiles_per_sample;
  return q;
}

}  // namespace

bool winograd_conv_fits(const WinogradConv& a, int64_t shared_per_block) {
  constexpr int64_t kMax = INT32_MAX / 8;
  if (kSmemBytes > shared_per_block || a.groups < 1 || a.cg < 1 || a.cog < 1) return false;
  for (const int64_t v : {int64_t{a.h}, int64_t{a.w}, int64_t{a.oh}, int64_t{a.ow}, int64_t{a.cg}, int64_t{a.cog}})
    if (v > kMax) return false;
  // Patch origins 2 * ty - ph within 32 bits; offsets inside a patch (3 * (|x_h| + |x_w|)) too.
  if (std::abs(int64_t{a.ph}) > kMax || std::abs(int64_t{a.pw}) > kMax) return false;
  if (3 * (std::abs(int64_t{a.x_h}) + std::abs(int64_t{a.x_w})) > kMax) return false;
  const Geometry q = geometry(a);
  const int64_t blocks = (q.tiles + kTiles - 1) / kTiles;
  return blocks <= INT32_MAX && static_cast<int64_t>(a.groups) * q.co_tiles <= 65535 && q.tiles_per_sample <= kMax;
}

void conv_winograd(const LaunchCtx& ctx, Backend& be, const float* x, const WinogradWeights& w, float* out,
                   const WinogradConv& a) {
  const Geometry q = geometry(a);
  if (q.tiles == 0) return;
  const int64_t u_elems = static_cast<int64_t>(a.groups) * 16 * q.cgp * q.cogp;
  Scratch u(be, u_elems * static_cast<int64_t>(sizeof(float)));
  const int64_t filters = static_cast<int64_t>(a.groups) * q.cgp * q.cogp;
  gpu::launch<winograd_filter_kernel>(ctx, flat_grid(filters), kBlock, 0, w, a.cg, a.cog, q.cgp, q.cogp, filters,
                                      static_cast<float*>(u.get()));
  gpu::allow_dynamic_shared<winograd_kernel>(kSmemBytes, ctx.op, ctx.device);
  const dim3 grid(static_cast<unsigned>((q.tiles + kTiles - 1) / kTiles),
                  static_cast<unsigned>(static_cast<int64_t>(a.groups) * q.co_tiles));
  gpu::launch<winograd_kernel>(ctx, grid, kThreads, static_cast<size_t>(kSmemBytes), x,
                               static_cast<const float*>(u.get()), out, q);
}

}  // namespace wick::WICK_GPU_NS::kern
