// The Winograd convolution kernels (conv_winograd.cu) for f32 3x3 convolutions at stride 1,
// launched by conv.cu.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "gpu/config.h"
#include "gpu/kernels/launch.h"

namespace wick::WICK_GPU_NS::kern {

// One f32 forward convolution with a 3x3 kernel, stride 1 and dilation 1 over x [n, c_in, h, w],
// element (s, c, y, x) at s * x_n + c * x_c + y * x_h + x * x_w (any strides), into a contiguous
// out [n, c_out, oh, ow]; output pixel (oy, ox) reads the input rows oy - ph .. oy - ph + 2 and
// columns ox - pw .. ox - pw + 2 (0 outside the image).
struct WinogradConv {
  int64_t n, x_n, x_c;
  int x_h, x_w;
  int h, w, oh, ow, ph, pw;
  int groups, cg, cog;  // input and output channels per group
};

// The weights of a WinogradConv: element (group, co, c, i, j) at
// p + g * s[0] + co * s[1] + c * s[2] + i * s[3] + j * s[4] (strides may be negative: flipped taps).
struct WinogradWeights {
  const float* p;
  int64_t s[5];
};

// Whether the kernel takes this convolution on a device whose blocks may use `shared_per_block`
// bytes of shared memory (its sizes and strides within the kernel's 32-bit offsets and grid).
bool winograd_conv_fits(const WinogradConv& a, int64_t shared_per_block);

// out = conv(x, w) for a geometry that winograd_conv_fits; scratch for the transformed weights from
// `be`.
void conv_winograd(const LaunchCtx& ctx, Backend& be, const float* x, const WinogradWeights& w, float* out,
                   const WinogradConv& a);

}  // namespace wick::WICK_GPU_NS::kern
