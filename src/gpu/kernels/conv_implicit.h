// The implicit-GEMM convolution kernel (conv_implicit.cu), launched by conv.cu.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "gpu/config.h"
#include "gpu/kernels/launch.h"

namespace wick::WICK_GPU_NS::kern {

// Output channels per block: a group with more is split over blocks that each gather its columns.
constexpr int kImplicitConvChannels = 64;

// One forward convolution (or a transposed one's phase seen as forward, with negative padding
// and dilation) over x [n, c_in, h, w], element (s, c, y, x) at s * x_n + c * x_c + y * x_h + x * x_w:
// channels-last (x_c 1, the other strides multiples of 16 bytes), or for f32 any channel stride (NCHW
// as it lies). Offsets and coordinates within a sample fit in 32 bits (implicit_conv_fits checks).
struct ImplicitConv {
  int64_t pixels;  // n * oh * ow: the GEMM's rows
  int64_t x_n;     // sample stride of x
  int64_t out_n;   // c_out * oh * ow: sample stride of out
  int plane, ow, h, w;
  int sh, sw, ph, pw, dh, dw, kh, kw;
  int cg, kg, cog;  // per group: input channels, c_in/groups * kh * kw, output channels
  int x_c, x_h, x_w;
  int n_tiles;  // output-channel tiles per group
};

// Phases per dim of one launch (ImplicitPhases).
constexpr int kImplicitPhases = 4;

// Several convolutions ImplicitConv that differ only in their padding, kernel size, weights and
// output, run by one launch (the phases of a transposed convolution, Note [GPU transposed convs as
// forward ones] in conv.cu): blocks with blockIdx.z = zh * nw + zw, zh < nh, zw < nw, take padding
// (ph[zh], pw[zw]) and a kernel of kh[zh] x kw[zw] taps (at most the ImplicitConv's) in place of
// the ImplicitConv's, the weights at wt + z * wt_step ([groups, kh, kw, cg, cog]) and the output
// at out + zh * out_h + zw * out_w, whose strides are (ImplicitConv::out_n, out_c, out_y, out_x).
// nh = nw = 1: the ImplicitConv alone, into a contiguous out.
struct ImplicitPhases {
  int nh = 1, nw = 1;
  int ph[kImplicitPhases] = {}, pw[kImplicitPhases] = {};
  int kh[kImplicitPhases] = {}, kw[kImplicitPhases] = {};
  int64_t wt_step = 0, out_h = 0, out_w = 0;
  int64_t out_c = 0, out_y = 0, out_x = 0;
};

// Whether the kernel handles this geometry for elements of `elem` bytes at `x` (nullptr: a buffer
// still to be allocated, aligned) with strides x_nchw:
// input channels per group a multiple of a 16-byte vector, at most 31 taps, x channels-last with
// 16-byte aligned pixels or f32, and sizes and offsets within its 32-bit and launch limits; fills `a`
// when it does.
bool implicit_conv_fits(int64_t n, int64_t c_in, int64_t h, int64_t w, int64_t c_out, int64_t kh, int64_t kw,
                        int64_t oh, int64_t ow, const int64_t stride[2], const int64_t pad[2], const int64_t dil[2],
                        int64_t groups, const void* x, const int64_t x_nchw[4], int64_t elem, ImplicitConv* a);

// Whether the kernel multiplies `t` (f32, bf16, f16) at full speed on a device of architecture
// `arch` ("sm_90", "gfx90a"): f32 everywhere, the 16-bit types where it has a warp-level matrix
// instruction for them.
bool implicit_conv_fast(DType t, const std::string& arch);

// out [n, c_out, oh, ow] (contiguous, x's dtype) = conv(x, w), with the weights packed as
// wt [groups, kh, kw, cg, cog] (contiguous, x's dtype): K runs over (i, j, channel); or that per
// phase of `phases`, with wt [phases, groups, kh, kw, cg, cog].
void conv_implicit(const LaunchCtx& ctx, DType t, const void* x, const void* wt, void* out, const ImplicitConv& a,
                   int64_t groups, const ImplicitPhases& phases = {});

// A 16-bit forward convolution at stride and dilation 1 with at most 3 x 3 taps over x [n, c_in, h,
// w] whose rows are contiguous (element (s, c, y, x) at s * x_n + c * x_c + y * x_h + x), run by
// the tiled kernel (Note [GPU tiled conv] in conv_implicit.cu); out has any strides.
struct TileConv {
  int64_t blocks;  // n * tiles_y * tiles_x
  int64_t x_n, x_c, x_h;
  int64_t out_n, out_c, out_y, out_x;
  int h, w, oh, ow, ph, pw, kh, kw;
  int cg, cog, n_tiles;      // per group: input and output channels; output-channel tiles
  int tw, tiles_x, tiles_y;  // the block's tile of output pixels: 128 / tw rows of tw
};

// Whether the tiled kernel takes this convolution of `t` on `device` (whose opt-in shared memory
// per block is shared_per_block), with x at `x` (strides x_nchw) and out's strides out_nchw: bf16
// or f16 where the kernel was compiled for tensor cores (CUDA sm_80+), stride and dilation 1, at
// most 3 x 3 taps, 8 or more input channels per group and K (those times the taps) up to 1152,
// output channels per group in whole 16-byte vectors, x's rows contiguous, 16-byte aligned and a
// whole number of vectors long, and tiles at least three quarters inside the output; fills `a` when
// it does.
bool tile_conv_fits(DType t, int device, int64_t shared_per_block, int64_t n, int64_t c_in, int64_t h, int64_t w,
                    int64_t c_out, int64_t kh, int64_t kw, int64_t oh, int64_t ow, const int64_t stride[2],
                    const int64_t pad[2], const int64_t dil[2], int64_t groups, const void* x, const int64_t x_nchw[4],
                    const int64_t out_nchw[4], TileConv* a);

// out = conv(x, w) with wt packed as for conv_implicit ([groups, kh, kw, cg, cog], contiguous).
void conv_tile(const LaunchCtx& ctx, DType t, const void* x, const void* wt, void* out, const TileConv& a,
               int64_t groups);

}  // namespace wick::WICK_GPU_NS::kern
