// Convolutions on the GPU: Winograd F(2x2, 3x3) for f32 3x3 ones at stride 1 (Note [GPU Winograd
// conv] in conv_winograd.cu), an implicit GEMM (Note [GPU implicit GEMM conv] in conv_implicit.cu) or
// im2col + GEMM, the explicit GEMMs through the BLAS shim; transposed convolutions as forward ones,
// one per output phase (Note [GPU transposed convs as forward ones]). Same semantics as
// src/cpu/conv.cpp, with the index math of src/backend/conv_math.h; the 1-d ops run as 2-d ones with
// a height of 1.
//
// Note [GPU conv batching]
// The samples of a batch share one column buffer (im2col writes [n, c_in*kh*kw, oh*ow] for a
// chunk of n samples), so each group's GEMM is one strided-batched call over the samples, or over
// the groups when there are more groups than samples (depthwise convolutions); the other of the
// two is looped on the host. Chunks over the samples keep the buffer under kColumnBytes (always at
// least one sample). Dtypes: the GEMMs write the dtype itself (f32 for f8e4m3, Note [GPU GEMM
// dtypes]). im2col reads x in any layout and widens f8e4m3 to f16 on the way.
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include "backend/conv_geom.h"
#include "backend/dispatch.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/conv_implicit.h"
#include "gpu/kernels/conv_winograd.h"
#include "gpu/kernels/map.cuh"
#include "gpu/kernels/matmul.h"

namespace wick::WICK_GPU_NS {

namespace {

using conv::as_2d;
using conv::Geom;
using conv::geom;
using conv::params_2d;

// Column buffers up to 1 GiB: chunks small enough to stay in the L2 give the GEMMs fewer samples
// per call, which costs more than the traffic they save.
constexpr int64_t kColumnBytes = int64_t{1} << 30;

// The 2-d geometry (for transposed convolutions (h, w) is the input, (oh, ow) the larger output).
struct Strides4 {
  int64_t n, c, h, w;
};

Strides4 strides4(const TensorArg& t) {
  const Strides& s = t.layout.strides();
  return {s[0], s[1], s[2], s[3]};
}

// col[r, q] for rows r over [samples, c_in, kh, kw] and pixels q over [oh, ow] (row-major) =
// x[n, c, ih, iw], 0 in the padding.
//
// Note [GPU im2col]
// The kernel is bound by its integer work, not by memory: a 2-byte element leaves room for a few
// instructions at the copy bandwidth, so divisions, bounds tests and addresses are shared. A thread
// owns PX consecutive pixels q..q+PX-1 of one output row (ow % PX == 0: they share oy) and, for
// each (sample, channel) plane it visits (blocks in y walk the planes), writes its kh*kw taps: per
// tap PX guarded loads at iw + t*sw (t < PX; the padding reads 0; mostly L1 hits) and one aligned
// PX-element store, a warp's stores one coalesced run per tap. Per element there remain an add and
// a compare (the column's bounds test), the input offset (one Index from x, so that the address is
// one widening multiply-add) and the load. PX = 4 rather than 8 keeps a warp's loads of one t
// within 2-3 L1 lines of bf16, holds fewer registers and divides the common widths (112, 56, 28);
// PX = 1 serves other widths and a column buffer not aligned to PX elements. Index is int32_t where
// fits_32bit holds, else int64_t; each bounds test is one unsigned compare of that width.
template <class Index, int PX, class A, class T>
__global__ void __launch_bounds__(kern::kBlock)
    im2col_kernel(const T* __restrict__ x, Strides4 xs, Geom g, Index planes, Index plane, A* __restrict__ col) {
  using U = std::make_unsigned_t<Index>;
  const auto I = [](int64_t v) { return static_cast<Index>(v); };
  const auto below = [](Index v, Index bound) { return static_cast<U>(v) < static_cast<U>(bound); };
  const Index q = (I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x)) * PX;
  if (q >= plane) return;
  const Index ow = I(g.ow), oy = static_cast<Index>(static_cast<U>(q) / static_cast<U>(ow)), ox = q - oy * ow;
  const Index h = I(g.h), w = I(g.w), kh = I(g.kh), kw = I(g.kw), dh = I(g.dh), dw = I(g.dw), sw = I(g.sw);
  const Index xsn = I(xs.n), xsc = I(xs.c), xsh = I(xs.h), xsw = I(xs.w), sx = sw * xsw;
  const Index c_in = I(g.c_in), taps_plane = kh * kw * plane;
  // Tap (i, j) of pixel q + t reads (ih0 + i*dh, iw0 + t*sw + j*dw): convmath::conv_in_pos.
  const Index ih0 = oy * I(g.sh) - I(g.ph), iw0 = ox * sw - I(g.pw);
  const A zero = convert<A>(0.0f);
  for (Index pc = I(blockIdx.y); pc < planes; pc += I(gridDim.y)) {
    const Index n = static_cast<Index>(static_cast<U>(pc) / static_cast<U>(c_in)), c = pc - n * c_in;
    const Index xc = n * xsn + c * xsc;
    Index o = pc * taps_plane + q;
    Index ih = ih0;
    for (Index i = 0; i < kh; ++i, ih += dh) {
      const bool row_in = below(ih, h);
      const Index row = xc + ih * xsh;
      Index iw = iw0;
      for (Index j = 0; j < kw; ++j, iw += dw, o += plane) {
        const Index at = row + iw * xsw;
        kern::Vec<A, PX> v;
#pragma unroll
        for (int t = 0; t < PX; ++t) v.v[t] = row_in && below(iw + t * sw, w) ? convert<A>(x[at + t * sx]) : zero;
        *reinterpret_cast<kern::Vec<A, PX>*>(col + o) = v;
      }
    }
  }
}

// Whether im2col_kernel's 32-bit arithmetic holds for `planes` planes: every input coordinate a
// tap can reach (padding included) times its stride, their offset sums from x (sample and channel
// included), and the column offsets stay below 2^31. Magnitudes are capped at 2^31 and bounded
// before they are multiplied, so that no product here overflows.
bool fits_32bit(const Geom& g, const Strides4& xs, int64_t planes) {
  constexpr int64_t kMax = INT32_MAX;
  auto a = [](int64_t v) { return std::min(v < 0 ? -v : v, kMax + 1); };
  const int64_t lim_h = a(g.oh) * a(g.sh) + a(g.ph) + a(g.kh) * a(g.dh) + a(g.h);
  const int64_t lim_w = a(g.ow) * a(g.sw) + a(g.pw) + a(g.kw) * a(g.dw) + a(g.w);
  if (xs.h < 0 || xs.w < 0 || lim_h > kMax || lim_w > kMax || planes > kMax / 2) return false;
  const int64_t spans[] = {(planes / g.c_in - 1) * a(xs.n), (g.c_in - 1) * a(xs.c),
                           lim_h * std::max<int64_t>(a(xs.h), 1), lim_w * std::max<int64_t>(a(xs.w), 1)};
  int64_t offsets = 0;
  for (const int64_t s : spans) offsets += std::min(s, kMax + 1);
  const int64_t plane = g.oh * g.ow, taps = g.kh * g.kw;
  if (offsets > kMax || plane > kMax || taps > kMax || planes * taps > kMax) return false;
  return planes * taps * plane + plane <= kMax;
}

// Output pixels per thread of the vectorised im2col (Note [GPU im2col]).
constexpr int kIm2colPixels = 4;

template <class Index, class A, class T>
void launch_im2col(const kern::LaunchCtx& ctx, const T* x, const Strides4& xs, const Geom& g, int64_t planes, A* col) {
  constexpr int PX = kIm2colPixels;
  const bool vec = g.ow % PX == 0 && kern::aligned_to(col, sizeof(kern::Vec<A, PX>));
  const int64_t plane = g.oh * g.ow, threads = vec ? plane / PX : plane;
  const dim3 grid(static_cast<unsigned>((threads + kern::kBlock - 1) / kern::kBlock),
                  static_cast<unsigned>(std::min<int64_t>(planes, 65535)));
  const Index pl = static_cast<Index>(planes), pix = static_cast<Index>(plane);
  if (vec)
    gpu::launch<im2col_kernel<Index, PX, A, T>>(ctx, grid, kern::kBlock, 0, x, xs, g, pl, pix, col);
  else
    gpu::launch<im2col_kernel<Index, 1, A, T>>(ctx, grid, kern::kBlock, 0, x, xs, g, pl, pix, col);
}

// col is of gemm_input_dtype(x.dtype) (Note [GPU GEMM dtypes]).
void im2col(const kern::LaunchCtx& ctx, const TensorArg& x, int64_t n0, const Geom& g, int64_t samples, void* col) {
  const int64_t total = samples * g.c_in * g.kh * g.kw * g.oh * g.ow;
  if (total == 0) return;
  const Strides4 xs = strides4(x);
  const int64_t planes = samples * g.c_in;
  wick::dispatch_in<kFloatTypes>(
      x.dtype,
      [&]<class T>() {
        const T* xp = x.ptr<T>() + n0 * xs.n;
        auto run = [&]<class A>() {
          A* c = static_cast<A*>(col);
          if (fits_32bit(g, xs, planes))
            launch_im2col<int32_t>(ctx, xp, xs, g, planes, c);
          else
            launch_im2col<int64_t>(ctx, xp, xs, g, planes, c);
        };
        if constexpr (std::is_same_v<T, f8e4m3>) {
          run.template operator()<f16>();
        } else {
          run.template operator()<T>();
        }
      },
      ctx.op);
}

// Leading dimension of x's per-sample [c, h*w] matrix seen column-major ([h*w, c]), or -1 when
// its pixels are not one unit-stride run.
int64_t plane_ld(const TensorArg& x) {
  const Strides4 s = strides4(x);
  const int64_t c = x.shape()[1], h = x.shape()[2], w = x.shape()[3], plane = h * w;
  const bool unit = plane <= 1 || (h == 1 && s.w == 1) || (w == 1 && s.h == 1) || (s.w == 1 && s.h == w);
  if (!unit) return -1;
  if (c == 1) return std::max<int64_t>(plane, 1);
  return s.c >= std::max<int64_t>(plane, 1) ? s.c : -1;
}

// x (or w) converted to `to` in a fresh contiguous buffer.
TensorArg contiguous_copy(Backend& be, const kern::LaunchCtx& ctx, const TensorArg& x, DType to, kern::Scratch& hold) {
  const Layout packed(x.shape());
  hold = kern::Scratch(be, packed.numel() * static_cast<int64_t>(dtype_size(to)));
  const TensorArg out(hold.get(), to, packed);
  kern::cast(ctx, x, out);
  return out;
}

const char* byte_ptr(const void* base, int64_t elems, DType t) {
  return static_cast<const char*>(base) + elems * static_cast<int64_t>(dtype_size(t));
}

// Per group gi and sample s of a chunk: C_s,gi = op(A_s,gi) op(B_s,gi), as strided-batched calls over
// the samples or the groups, whichever is more (Note [GPU conv batching]). The *_s / *_g members
// are the element strides between samples / groups.
struct GroupedGemm {
  int64_t m, n, k;
  gpu::GemmOperand a, b;
  gpu::GemmOutput c;
  DType at, bt, ct;
  int64_t a_s, a_g, b_s, b_g, c_s, c_g;
};

void run_grouped(const kern::LaunchCtx& ctx, const GroupedGemm& q, int64_t samples, int64_t groups) {
  const bool over_groups = groups > samples;
  const int64_t batch = over_groups ? groups : samples, loops = over_groups ? samples : groups;
  for (int64_t l = 0; l < loops; ++l) {
    gpu::GemmOperand a = q.a, b = q.b;
    gpu::GemmOutput c = q.c;
    a.data = byte_ptr(q.a.data, l * (over_groups ? q.a_s : q.a_g), q.at);
    b.data = byte_ptr(q.b.data, l * (over_groups ? q.b_s : q.b_g), q.bt);
    c.data = const_cast<char*>(byte_ptr(q.c.data, l * (over_groups ? q.c_s : q.c_g), q.ct));
    a.batch_stride = over_groups ? q.a_g : q.a_s;
    b.batch_stride = over_groups ? q.b_g : q.b_s;
    c.batch_stride = over_groups ? q.c_g : q.c_s;
    gpu::gemm_strided_batched(ctx.stream, ctx.device, q.m, q.n, q.k, a, b, c, batch, ctx.op);
  }
}

int64_t chunk_samples(int64_t n, int64_t bytes_per_sample) {
  if (bytes_per_sample <= 0) return std::max<int64_t>(n, 1);
  return std::clamp<int64_t>(kColumnBytes / bytes_per_sample, 1, std::max<int64_t>(n, 1));
}

// The output as a contiguous [n, c_out, oh*ow] array of `t`: dst itself when it is one, else a
// scratch buffer (held by `hold`) that the caller casts into dst.
TensorArg contiguous_output(Backend& be, const TensorArg& dst, DType t, kern::Scratch& hold) {
  if (t == dst.dtype && dst.layout.is_contiguous()) return dst;
  hold = kern::Scratch(be, dst.numel() * static_cast<int64_t>(dtype_size(t)));
  return TensorArg(hold.get(), t, Layout(dst.shape()));
}

// Forward convolutions of geometry g over one x that differ only in their padding, kernel size,
// weights and output, run by one launch where the implicit GEMM takes them (the output phases of a
// transposed convolution, Note [GPU transposed convs as forward ones]): phase (zh, zw), zh < nh,
// zw < nw, has padding (pad_h[zh], pad_w[zw]), kh[zh] x kw[zw] taps (at most g's), weights
// w5[zh * nw + zw] ([groups, c_out/groups, c_in/groups, kh, kw] in any layout) and writes dst
// offset by zh * out_h + zw * out_w elements. One phase: g's padding and kernel, w5 and dst.
struct ConvPhases {
  int nh = 1, nw = 1;
  int64_t pad_h[kern::kImplicitPhases] = {}, pad_w[kern::kImplicitPhases] = {};
  int64_t kh[kern::kImplicitPhases] = {}, kw[kern::kImplicitPhases] = {};
  std::vector<TensorArg> w5;
  int64_t out_h = 0, out_w = 0;
  ConvPhases(const TensorArg& w, const Geom& g) : w5{w} {
    pad_h[0] = g.ph, pad_w[0] = g.pw, kh[0] = g.kh, kw[0] = g.kw;
  }
  ConvPhases() = default;
};

// The implicit-GEMM paths where they are fast on this device and the problem suits them, else
// false: 16-bit NCHW convolutions at stride 1 with small kernels on the tiled kernel (Note [GPU tiled
// conv], any number of output channels), the others on the implicit GEMM (Note [GPU implicit GEMM
// conv]), which reads x as it lies when its channels have unit stride or it is f32, else from a
// channels-last copy. The implicit GEMM pays where a group's output channels fill one block's
// tile (32 to 64) and K is at least 32; with more output channels every tile gathers the columns
// again, and im2col + the vendor's GEMM is faster.
bool conv_implicit_gemm(GpuBackend& be, const kern::LaunchCtx& ctx, const TensorArg& x, const ConvPhases& ph,
                        const TensorArg& dst, const Geom& g) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups, elem = static_cast<int64_t>(dtype_size(x.dtype));
  // (implicit_conv_fits checks the vector widths of the channels and strides.)
  if (!kern::implicit_conv_fast(x.dtype, be.properties().architecture) || dst.dtype != x.dtype || cog < 32 ||
      cg * g.kh * g.kw < 32)
    return false;
  // One phase: its padding. Several: checked with the largest magnitude of theirs (all that
  // implicit_conv_fits reads of it), each phase's then set in ImplicitPhases.
  const bool phased = ph.w5.size() > 1;
  int64_t pad[2] = {ph.pad_h[0], ph.pad_w[0]};
  for (int z = 0; phased && z < ph.nh; ++z) pad[0] = std::max(std::abs(pad[0]), std::abs(ph.pad_h[z]));
  for (int z = 0; phased && z < ph.nw; ++z) pad[1] = std::max(std::abs(pad[1]), std::abs(ph.pad_w[z]));
  const int64_t stride[2] = {g.sh, g.sw}, dil[2] = {g.dh, g.dw};
  const Strides4 xs = strides4(x);
  const char* xp = byte_ptr(x.data, x.layout.offset(), x.dtype);
  kern::Scratch hx, hw, ho;
  kern::ImplicitConv a{};
  kern::TileConv tc{};
  const int64_t as_is[4] = {xs.n, xs.c, xs.h, xs.w};
  const Strides4 os = strides4(dst);
  const int64_t out_nchw[4] = {os.n, os.c, os.h, os.w};
  // The tiled kernel (Note [GPU tiled conv]) reads x as it lies, NCHW included; channels-last x stays
  // on the implicit GEMM, which reads it in place.
  const bool tiled = !phased && xs.c != 1 &&
                     kern::tile_conv_fits(x.dtype, ctx.device, ctx.shared_per_block, g.n, g.c_in, g.h, g.w, g.c_out,
                                          g.kh, g.kw, g.oh, g.ow, stride, pad, dil, g.groups, xp, as_is, out_nchw, &tc);
  if (!tiled && cog > kern::kImplicitConvChannels) return false;
  if (!tiled && !kern::implicit_conv_fits(g.n, g.c_in, g.h, g.w, g.c_out, g.kh, g.kw, g.oh, g.ow, stride, pad, dil,
                                          g.groups, xp, as_is, elem, &a)) {
    const TensorArg nhwc(x.data, x.dtype,
                         Layout(Shape{g.n, g.h, g.w, g.c_in}, Strides{xs.n, xs.h, xs.w, xs.c}, x.layout.offset()));
    const int64_t packed[4] = {g.h * g.w * g.c_in, 1, g.w * g.c_in, g.c_in};
    if (!kern::implicit_conv_fits(g.n, g.c_in, g.h, g.w, g.c_out, g.kh, g.kw, g.oh, g.ow, stride, pad, dil, g.groups,
                                  nullptr, packed, elem, &a))
      return false;
    xp = static_cast<const char*>(contiguous_copy(be, ctx, nhwc, x.dtype, hx).data);
  }
  // Weights packed as [phases, groups, kh, kw, cg, cog] (a phase's part at a stride of g's kernel
  // size): each w5 read in that order.
  const int64_t per_phase = g.groups * g.kh * g.kw * cg * cog;
  hw = kern::Scratch(be, static_cast<int64_t>(ph.w5.size()) * per_phase * elem);
  for (size_t z = 0; z < ph.w5.size(); ++z) {
    const TensorArg& w5 = ph.w5[z];
    const Shape packed_w{g.groups, w5.shape()[3], w5.shape()[4], cg, cog};
    const Strides& ws = w5.layout.strides();
    kern::cast(
        ctx,
        TensorArg(w5.data, w5.dtype, Layout(packed_w, Strides{ws[0], ws[3], ws[4], ws[2], ws[1]}, w5.layout.offset())),
        TensorArg(hw.get(), x.dtype,
                  Layout(packed_w, Layout(packed_w).strides(), static_cast<int64_t>(z) * per_phase)));
  }
  if (tiled) {
    kern::conv_tile(ctx, x.dtype, xp, hw.get(), const_cast<char*>(byte_ptr(dst.data, dst.layout.offset(), dst.dtype)),
                    tc, g.groups);
    return true;
  }
  // One phase writes a contiguous output (the kernel's faster form); several write dst as it lies.
  kern::ImplicitPhases f;
  TensorArg oc = dst;
  if (phased) {
    f.nh = ph.nh, f.nw = ph.nw;
    for (int z = 0; z < ph.nh; ++z) f.ph[z] = static_cast<int>(ph.pad_h[z]), f.kh[z] = static_cast<int>(ph.kh[z]);
    for (int z = 0; z < ph.nw; ++z) f.pw[z] = static_cast<int>(ph.pad_w[z]), f.kw[z] = static_cast<int>(ph.kw[z]);
    f.wt_step = per_phase, f.out_h = ph.out_h, f.out_w = ph.out_w;
    a.out_n = os.n, f.out_c = os.c, f.out_y = os.h, f.out_x = os.w;
  } else {
    oc = contiguous_output(be, dst, x.dtype, ho);
  }
  kern::conv_implicit(ctx, x.dtype, xp, hw.get(), const_cast<char*>(byte_ptr(oc.data, oc.layout.offset(), oc.dtype)), a,
                      g.groups, f);
  if (oc.data != dst.data) kern::cast(ctx, oc, dst);
  return true;
}

// The Winograd path (Note [GPU Winograd conv] in conv_winograd.cu) for f32 3x3 convolutions at
// stride 1 and dilation 1, or -1 (a transposed convolution's phase seen as forward: the taps
// flipped, the padding grown by 2), where the channels fill its tiles: at least 16 input and 48 output channels
// per group (its blocks compute 64 output channels). Else false.
bool conv_winograd(GpuBackend& be, const kern::LaunchCtx& ctx, const TensorArg& x, const TensorArg& w5,
                   const TensorArg& dst, const Geom& g) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  if (x.dtype != DType::F32 || w5.dtype != DType::F32 || g.kh != 3 || g.kw != 3 || g.sh != 1 || g.sw != 1 ||
      std::abs(g.dh) != 1 || std::abs(g.dw) != 1 || cg < 16 || cog < 48)
    return false;
  const Strides4 xs = strides4(x);
  const int64_t ph = g.dh < 0 ? g.ph + 2 : g.ph, pw = g.dw < 0 ? g.pw + 2 : g.pw;
  for (const int64_t v : {g.h, g.w, g.oh, g.ow, ph, pw, xs.h, xs.w, cg, cog, g.groups})
    if (std::abs(v) > INT32_MAX) return false;
  auto i32 = [](int64_t v) { return static_cast<int>(v); };
  const kern::WinogradConv a{g.n,       xs.n,      xs.c,    i32(xs.h), i32(xs.w),     i32(g.h), i32(g.w),
                             i32(g.oh), i32(g.ow), i32(ph), i32(pw),   i32(g.groups), i32(cg),  i32(cog)};
  if (!kern::winograd_conv_fits(a, ctx.shared_per_block)) return false;
  // w5 [groups, cog, cg, kh, kw]; flipped taps where the dilation is -1.
  const Strides& ws = w5.layout.strides();
  kern::WinogradWeights wt{static_cast<const float*>(w5.data) + w5.layout.offset(),
                           {ws[0], ws[1], ws[2], ws[3], ws[4]}};
  if (g.dh < 0) {
    wt.p += 2 * ws[3];
    wt.s[3] = -ws[3];
  }
  if (g.dw < 0) {
    wt.p += 2 * ws[4];
    wt.s[4] = -ws[4];
  }
  kern::Scratch ho;
  const TensorArg oc = contiguous_output(be, dst, DType::F32, ho);
  kern::conv_winograd(ctx, be, static_cast<const float*>(x.data) + x.layout.offset(), wt,
                      static_cast<float*>(oc.data) + oc.layout.offset(), a);
  if (oc.data != dst.data) kern::cast(ctx, oc, dst);
  return true;
}

// dst = conv(x, w) with geometry g (which may carry the negative paddings and dilations of a
// transposed convolution's phase, Note [GPU transposed convs as forward ones]); w5 is the weights as
// [groups, c_out/groups, c_in/groups, kh, kw] in any layout.
void conv_gemm(GpuBackend& be, const kern::LaunchCtx& ctx, const TensorArg& x, const TensorArg& w5,
               const TensorArg& dst, const Geom& g) {
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  const int64_t kg = cg * g.kh * g.kw, out_plane = g.oh * g.ow;
  if (kg == 0) {  // no input channels: empty sums
    kern::const_set(ctx, dst, Scalar(0.0));
    return;
  }
  const DType in_t = kern::gemm_input_dtype(x.dtype);
  const DType out_t = x.dtype == DType::F8E4M3 ? DType::F32 : x.dtype;
  // A 1x1 kernel at stride 1 without padding reads the input as it lies: no im2col. (The output
  // plane can still be larger: a transposed conv's output_padding.)
  const bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h &&
                         g.ow == g.w && x.dtype == in_t && plane_ld(x) > 0;
  if (!pointwise &&
      (conv_winograd(be, ctx, x, w5, dst, g) || conv_implicit_gemm(be, ctx, x, ConvPhases(w5, g), dst, g)))
    return;
  kern::Scratch hw, ho, hcol;
  // Weights as a row-major [c_out, kg] matrix.
  const TensorArg wc = w5.dtype == in_t && w5.layout.is_contiguous() ? w5 : contiguous_copy(be, ctx, w5, in_t, hw);
  const TensorArg oc = contiguous_output(be, dst, out_t, ho);
  const int64_t col_rows = g.c_in * g.kh * g.kw;
  const int64_t per_sample = pointwise ? 0 : col_rows * out_plane * static_cast<int64_t>(dtype_size(in_t));
  const int64_t chunk = chunk_samples(g.n, per_sample);
  if (!pointwise) hcol = kern::Scratch(be, chunk * per_sample);
  for (int64_t n0 = 0; n0 < g.n; n0 += chunk) {
    const int64_t ns = std::min(chunk, g.n - n0);
    // out[s, gi*cog + co, pix] = sum_kk w[gi*cog + co, kk] col[s, gi*kg + kk, pix], i.e. column-major
    // C[pix, co] = col^T[pix, kk] W^T[kk, co]: m = pixels, n = cog, k = kg.
    GroupedGemm q{};
    q.m = out_plane;
    q.n = cog;
    q.k = kg;
    q.at = q.bt = in_t;
    q.ct = out_t;
    if (pointwise) {
      const int64_t ld = plane_ld(x);
      q.a = {byte_ptr(x.data, x.layout.offset() + n0 * x.layout.stride(0), in_t), kern::blas_type(in_t), false, ld, 0};
      q.a_s = x.layout.stride(0);
      q.a_g = cg * ld;
    } else {
      im2col(ctx, x, n0, g, ns, hcol.get());
      q.a = {hcol.get(), kern::blas_type(in_t), false, out_plane, 0};
      q.a_s = col_rows * out_plane;
      q.a_g = kg * out_plane;
    }
    q.b = {byte_ptr(wc.data, wc.layout.offset(), in_t), kern::blas_type(in_t), false, kg, 0};
    q.b_s = 0;
    q.b_g = cog * kg;
    q.c = {const_cast<char*>(byte_ptr(oc.data, oc.layout.offset() + n0 * g.c_out * out_plane, out_t)),
           kern::blas_type(out_t), out_plane, 0};
    q.c_s = g.c_out * out_plane;
    q.c_g = cog * out_plane;
    run_grouped(ctx, q, ns, g.groups);
  }
  if (oc.data != dst.data) kern::cast(ctx, oc, dst);
}

void conv_forward(GpuBackend& be, const kern::LaunchCtx& ctx, const TensorArg& x, const TensorArg& w,
                  const TensorArg& dst, const Conv2dParams& p) {
  if (dst.numel() == 0) return;
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  const Strides& ws = w.layout.strides();
  const int64_t cog = g.c_out / g.groups;
  const TensorArg w5(w.data, w.dtype,
                     Layout(Shape{g.groups, cog, g.c_in / g.groups, g.kh, g.kw},
                            Strides{cog * ws[0], ws[0], ws[1], ws[2], ws[3]}, w.layout.offset()));
  conv_gemm(be, ctx, x, w5, dst, g);
}

// Note [GPU transposed convs as forward ones]
// A transposed convolution runs as s_h * s_w forward ones (Note [Transposed conv phases] in
// backend/conv_geom.h), one per output phase, each through conv_gemm (the implicit GEMM, Winograd,
// or im2col + one GEMM that writes the output dtype) over the weights with c_in and c_out swapped
// per group and a strided slice of the taps, writing a strided slice of dst (through a contiguous
// buffer and a copy where conv_gemm's path needs one). At stride 1 that is one forward convolution
// with negated padding and dilation. Phases with taps, alike in their output counts (an output a
// multiple of the stride), run in one launch of the implicit GEMM where it takes them, each block
// reading its phase's kernel size, writing dst in place (ImplicitPhases): one phase alone fills few
// blocks. A GEMM into columns [c_out * kh * kw, h * w] and a col2im gather would write and read the
// columns (kh * kw / (s_h * s_w) times the output) and spend its GEMMs on k = c_in / groups.
void conv_transposed(GpuBackend& be, const kern::LaunchCtx& ctx, const TensorArg& x, const TensorArg& w,
                     const TensorArg& dst, const Conv2dParams& p) {
  if (dst.numel() == 0) return;
  const Geom g = geom(x, dst, w.shape()[2], w.shape()[3], p);
  const int64_t cg = g.c_in / g.groups, cog = g.c_out / g.groups;
  if (cg == 0 || g.h * g.w == 0 || g.n == 0) {  // nothing reaches the output
    kern::const_set(ctx, dst, Scalar(0.0));
    return;
  }
  const Strides& ws = w.layout.strides();  // w [groups * cg, cog, kh, kw]
  const Strides4 os = strides4(dst);
  const std::vector<conv::TransposedPhase> py = conv::transposed_phases(g.kh, g.sh, g.ph, g.dh, g.oh);
  const std::vector<conv::TransposedPhase> px = conv::transposed_phases(g.kw, g.sw, g.pw, g.dw, g.ow);
  // Phase (rh, rw): its taps of w read as [groups, cog, cg, taps_h, taps_w], its outputs of dst, and
  // its geometry as a forward convolution.
  auto weights = [&](const conv::TransposedPhase& y, const conv::TransposedPhase& z) {
    return TensorArg(w.data, w.dtype,
                     Layout(Shape{g.groups, cog, cg, y.taps, z.taps},
                            Strides{cg * ws[0], ws[1], ws[0], y.tap_step * ws[2], z.tap_step * ws[3]},
                            w.layout.offset() + y.tap0 * ws[2] + z.tap0 * ws[3]));
  };
  auto outputs = [&](const conv::TransposedPhase& y, const conv::TransposedPhase& z) {
    return TensorArg(dst.data, dst.dtype,
                     Layout(Shape{g.n, g.c_out, y.outs, z.outs}, Strides{os.n, os.c, g.sh * os.h, g.sw * os.w},
                            dst.layout.offset() + y.out0 * os.h + z.out0 * os.w));
  };
  auto forward = [&](const conv::TransposedPhase& y, const conv::TransposedPhase& z) {
    Geom f = g;
    f.kh = y.taps, f.kw = z.taps, f.oh = y.outs, f.ow = z.outs;
    f.sh = f.sw = 1;
    f.ph = y.pad, f.pw = z.pad, f.dh = y.dil, f.dw = z.dil;
    return f;
  };
  // Phases with taps and alike in their output counts: the implicit GEMM in one launch where it
  // takes them, checked with the most taps of any phase (the launch's kernel size).
  auto alike = [](const std::vector<conv::TransposedPhase>& v) {
    for (const conv::TransposedPhase& t : v)
      if (t.outs != v[0].outs || t.taps == 0) return false;
    return v.size() <= static_cast<size_t>(kern::kImplicitPhases);
  };
  auto most_taps = [](const std::vector<conv::TransposedPhase>& v) {
    return *std::max_element(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.taps < b.taps; });
  };
  if (py.size() * px.size() > 1 && alike(py) && alike(px)) {
    ConvPhases b;
    b.nh = static_cast<int>(py.size()), b.nw = static_cast<int>(px.size());
    for (size_t rh = 0; rh < py.size(); ++rh) b.pad_h[rh] = py[rh].pad, b.kh[rh] = py[rh].taps;
    for (size_t rw = 0; rw < px.size(); ++rw) b.pad_w[rw] = px[rw].pad, b.kw[rw] = px[rw].taps;
    for (const conv::TransposedPhase& y : py)
      for (const conv::TransposedPhase& z : px) b.w5.push_back(weights(y, z));
    b.out_h = os.h, b.out_w = os.w;  // phase r's first output is r
    if (conv_implicit_gemm(be, ctx, x, b, outputs(py[0], px[0]), forward(most_taps(py), most_taps(px)))) return;
  }
  for (const conv::TransposedPhase& y : py)
    for (const conv::TransposedPhase& z : px) {
      const TensorArg out = outputs(y, z);
      if (y.taps == 0 || z.taps == 0)
        kern::const_set(ctx, out, Scalar(0.0));
      else
        conv_gemm(be, ctx, x, weights(y, z), out, forward(y, z));
    }
}

}  // namespace

void kern::conv1d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                  const Conv1dParams& p) {
  conv_forward(*base.backend, base.with_op("conv1d"), as_2d(x), as_2d(w), as_2d(dst), params_2d(p));
}

void kern::conv2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                  const Conv2dParams& p) {
  conv_forward(*base.backend, base.with_op("conv2d"), x, w, dst, p);
}

void kern::conv_transpose1d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                            const Conv1dParams& p) {
  conv_transposed(*base.backend, base.with_op("conv_transpose1d"), as_2d(x), as_2d(w), as_2d(dst), params_2d(p));
}

void kern::conv_transpose2d(const kern::LaunchCtx& base, const TensorArg& x, const TensorArg& w, const TensorArg& dst,
                            const Conv2dParams& p) {
  conv_transposed(*base.backend, base.with_op("conv_transpose2d"), x, w, dst, p);
}

}  // namespace wick::WICK_GPU_NS
