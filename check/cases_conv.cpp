// Conformance cases of conv, pooling, resampling and rope.
//
// The references are direct nested loops in f64: a direct convolution (no im2col), the transposed
// convolution as the scatter of every input element through the kernel, windows scanned cell by
// cell. Shapes here are structural ([N, C, H, W]), so the conv / pool / resample cases leave out
// the rank-6 layout kind; the other kinds still apply to every input: c.input() lays the values
// out transposed (a strided view swapping the last two dims), narrowed (a window with gaps),
// broadcast (the batch dim stride 0) or contiguous, and c.shape() gives a zero batch for ZeroSize.
#include <algorithm>
#include <cmath>
#include <limits>

#include "check/harness.h"

namespace wick::check {

namespace {

constexpr uint32_t kSpatialLayouts = kAllLayouts & ~layout_bit(LayoutKind::HighRank);

// A convolution in 2-d form; 1-d cases use h = kh = 1.
struct ConvSpec {
  int64_t n, c_in, c_out, groups;
  int64_t h, w, kh, kw;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, oph = 0, opw = 0;
};

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}
int64_t convt_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op) {
  return (in - 1) * s - 2 * p + d * (k - 1) + op + 1;
}

// x [n, c_in, h, w], w [c_out, c_in/groups, kh, kw] -> [n, c_out, oh, ow], values row-major.
std::vector<double> ref_conv(const ConvSpec& s, int64_t n, const std::vector<double>& x, const std::vector<double>& w) {
  const int64_t oh = conv_out(s.h, s.kh, s.sh, s.ph, s.dh), ow = conv_out(s.w, s.kw, s.sw, s.pw, s.dw);
  const int64_t cg = s.c_in / s.groups, cog = s.c_out / s.groups;
  std::vector<double> out(static_cast<size_t>(n * s.c_out * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t co = 0; co < s.c_out; ++co)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t z = 0; z < ow; ++z) {
          double acc = 0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t i = 0; i < s.kh; ++i)
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t ih = y * s.sh - s.ph + i * s.dh, iw = z * s.sw - s.pw + j * s.dw;
                if (ih < 0 || ih >= s.h || iw < 0 || iw >= s.w) continue;
                const int64_t cx = (co / cog) * cg + ci;
                acc += x[static_cast<size_t>(((b * s.c_in + cx) * s.h + ih) * s.w + iw)] *
                       w[static_cast<size_t>(((co * cg + ci) * s.kh + i) * s.kw + j)];
              }
          out[static_cast<size_t>(((b * s.c_out + co) * oh + y) * ow + z)] = acc;
        }
  return out;
}

// x [n, c_in, h, w], w [c_in, c_out/groups, kh, kw]: every input element adds x * kernel into
// the output window it maps to.
std::vector<double> ref_conv_transpose(const ConvSpec& s, int64_t n, const std::vector<double>& x,
                                       const std::vector<double>& w) {
  const int64_t oh = convt_out(s.h, s.kh, s.sh, s.ph, s.dh, s.oph), ow = convt_out(s.w, s.kw, s.sw, s.pw, s.dw, s.opw);
  const int64_t cg = s.c_in / s.groups, cog = s.c_out / s.groups;
  std::vector<double> out(static_cast<size_t>(n * s.c_out * oh * ow), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ci = 0; ci < s.c_in; ++ci)
      for (int64_t y = 0; y < s.h; ++y)
        for (int64_t z = 0; z < s.w; ++z) {
          const double v = x[static_cast<size_t>(((b * s.c_in + ci) * s.h + y) * s.w + z)];
          for (int64_t co = 0; co < cog; ++co)
            for (int64_t i = 0; i < s.kh; ++i)
              for (int64_t j = 0; j < s.kw; ++j) {
                const int64_t a = y * s.sh - s.ph + i * s.dh, e = z * s.sw - s.pw + j * s.dw;
                if (a < 0 || a >= oh || e < 0 || e >= ow) continue;
                const int64_t cy = (ci / cg) * cog + co;
                out[static_cast<size_t>(((b * s.c_out + cy) * oh + a) * ow + e)] +=
                    v * w[static_cast<size_t>(((ci * cog + co) * s.kh + i) * s.kw + j)];
              }
        }
  return out;
}

// f32 accumulates `terms` products of values in [-1, 1] before one rounding.
Tol conv_tol(DType d, int64_t terms) { return tol_for(d, std::sqrt(static_cast<double>(std::max<int64_t>(terms, 1)))); }

void conv_case(Cases& cases, Op op, const std::string& variant, ConvSpec s) {
  cases.push_back({op, variant, kSpatialLayouts, [op, s](Ctx& c) {
                     const bool two_d = op == Op::Conv2d || op == Op::ConvTranspose2d;
                     const bool transposed = op == Op::ConvTranspose1d || op == Op::ConvTranspose2d;
                     const Shape xs = two_d ? Shape{s.n, s.c_in, s.h, s.w} : Shape{s.n, s.c_in, s.w};
                     const int64_t w0 = transposed ? s.c_in : s.c_out,
                                   w1 = transposed ? s.c_out / s.groups : s.c_in / s.groups;
                     const Shape ws = two_d ? Shape{w0, w1, s.kh, s.kw} : Shape{w0, w1, s.kw};
                     const Tensor x = c.input(c.shape(xs), -1, 1);
                     const Tensor w = c.input(ws, -1, 1);
                     const int64_t n = x.dim(0);
                     Tensor out;
                     std::vector<double> ref;
                     int64_t terms;
                     if (!transposed) {
                       ref = ref_conv(s, n, c.ref(x).v, c.ref(w).v);
                       terms = s.c_in / s.groups * s.kh * s.kw;
                       if (two_d) {
                         Conv2dParams p;
                         p.stride = {s.sh, s.sw};
                         p.padding = {s.ph, s.pw};
                         p.dilation = {s.dh, s.dw};
                         p.groups = s.groups;
                         out = x.conv2d(w, p);
                       } else {
                         out = x.conv1d(w, {s.sw, s.pw, s.dw, s.groups, 0});
                       }
                     } else {
                       ref = ref_conv_transpose(s, n, c.ref(x).v, c.ref(w).v);
                       terms = s.c_in / s.groups * s.kh * s.kw;
                       if (two_d) {
                         Conv2dParams p;
                         p.stride = {s.sh, s.sw};
                         p.padding = {s.ph, s.pw};
                         p.dilation = {s.dh, s.dw};
                         p.groups = s.groups;
                         p.output_padding = {s.oph, s.opw};
                         out = x.conv_transpose2d(w, p);
                       } else {
                         out = x.conv_transpose1d(w, {s.sw, s.pw, s.dw, s.groups, s.opw});
                       }
                     }
                     const int64_t oh = transposed ? convt_out(s.h, s.kh, s.sh, s.ph, s.dh, s.oph)
                                                   : conv_out(s.h, s.kh, s.sh, s.ph, s.dh);
                     const int64_t ow = transposed ? convt_out(s.w, s.kw, s.sw, s.pw, s.dw, s.opw)
                                                   : conv_out(s.w, s.kw, s.sw, s.pw, s.dw);
                     Ref expected(two_d ? Shape{n, s.c_out, oh, ow} : Shape{n, s.c_out, ow});
                     expected.v = ref;
                     c.expect(out, expected, conv_tol(c.dtype(), terms));
                   }});
}

void register_convolutions(Cases& cases) {
  // 1-d specs: h = kh = 1.
  conv_case(cases, Op::Conv1d, "basic", {2, 3, 4, 1, 1, 10, 1, 3});
  conv_case(cases, Op::Conv1d, "stride 2, padding 2, dilation 2, groups 2",
            {3, 4, 6, 2, 1, 13, 1, 3, 1, 2, 0, 2, 1, 2});
  conv_case(cases, Op::Conv1d, "kernel 1", {2, 5, 3, 1, 1, 7, 1, 1});
  conv_case(cases, Op::Conv1d, "depthwise, stride 3, padding 1", {2, 4, 4, 4, 1, 11, 1, 2, 1, 3, 0, 1});
  conv_case(cases, Op::Conv2d, "basic, kernel 3x2", {2, 3, 4, 1, 7, 9, 3, 2});
  conv_case(cases, Op::Conv2d, "stride (2,1), padding (1,2), dilation (2,1), groups 2",
            {2, 4, 6, 2, 9, 8, 3, 3, 2, 1, 1, 2, 2, 1});
  conv_case(cases, Op::Conv2d, "kernel 1x1", {2, 5, 3, 1, 6, 5, 1, 1});
  conv_case(cases, Op::Conv2d, "stride (3,2), padding (0,1), kernel 2x3", {1, 2, 2, 1, 5, 7, 2, 3, 3, 2, 0, 1});
  conv_case(cases, Op::ConvTranspose1d, "basic", {2, 3, 4, 1, 1, 6, 1, 3});
  conv_case(cases, Op::ConvTranspose1d, "stride 2, padding 1, dilation 2, groups 2, output_padding 1",
            {2, 4, 6, 2, 1, 7, 1, 3, 1, 2, 0, 1, 1, 2, 0, 1});
  conv_case(cases, Op::ConvTranspose1d, "kernel 1, dilation 2, output_padding 1",
            {2, 3, 2, 1, 1, 5, 1, 1, 1, 1, 0, 0, 1, 2, 0, 1});
  conv_case(cases, Op::ConvTranspose2d, "basic, kernel 2x3", {2, 3, 4, 1, 4, 5, 2, 3});
  conv_case(cases, Op::ConvTranspose2d, "stride (2,3), padding (1,0), dilation (1,2), groups 2, output_padding (1,2)",
            {2, 4, 6, 2, 5, 4, 3, 2, 2, 3, 1, 0, 1, 2, 1, 2});
  conv_case(cases, Op::ConvTranspose2d, "kernel 1x1", {2, 3, 5, 1, 4, 3, 1, 1});
}

// ---- pooling --------------------------------------------------------------------------------

Ref ref_pool(const Ref& x, const Pool2dParams& p, bool is_max) {
  const int64_t n = x.shape[0], ch = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t oh = (h + 2 * p.padding[0] - p.kernel[0]) / p.stride[0] + 1;
  const int64_t ow = (w + 2 * p.padding[1] - p.kernel[1]) / p.stride[1] + 1;
  Ref out(Shape{n, ch, oh, ow});
  for_each_index(out.shape, [&](const std::vector<int64_t>& o) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    int64_t real = 0;
    for (int64_t i = 0; i < p.kernel[0]; ++i)
      for (int64_t j = 0; j < p.kernel[1]; ++j) {
        const int64_t ih = o[2] * p.stride[0] - p.padding[0] + i, iw = o[3] * p.stride[1] - p.padding[1] + j;
        if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
        const double v = x.at({o[0], o[1], ih, iw});
        ++real;
        acc = is_max ? std::max(acc, v) : acc + v;
      }
    if (!is_max) acc /= static_cast<double>(p.count_include_pad ? p.kernel[0] * p.kernel[1] : real);
    out.at(o) = acc;
  });
  return out;
}

void pool_case(Cases& cases, Op op, const std::string& variant, Shape shape, Pool2dParams p) {
  cases.push_back({op, variant, kSpatialLayouts, [op, shape, p](Ctx& c) {
                     const bool is_max = op == Op::MaxPool2d;
                     const Tensor x = c.input(c.shape(shape), is_max ? -50 : -2, is_max ? 50 : 2);
                     const Ref expected = ref_pool(c.ref(x), p, is_max);
                     if (is_max) {
                       c.expect(x.max_pool2d(p), expected, Tol{0, 0});  // a selection: exact
                     } else {
                       c.expect(x.avg_pool2d(p), expected, tol_for(c.dtype(), 2));
                     }
                   }});
}

Pool2dParams pool(std::array<int64_t, 2> k, std::array<int64_t, 2> s, std::array<int64_t, 2> pad, bool include = true) {
  Pool2dParams p;
  p.kernel = k;
  p.stride = s;
  p.padding = pad;
  p.count_include_pad = include;
  return p;
}

void register_pools(Cases& cases) {
  for (Op op : {Op::AvgPool2d, Op::MaxPool2d}) {
    pool_case(cases, op, "kernel 2, stride 2", {2, 3, 8, 9}, pool({2, 2}, {2, 2}, {0, 0}));
    pool_case(cases, op, "kernel 3, stride 2, padding 1", {2, 2, 7, 7}, pool({3, 3}, {2, 2}, {1, 1}));
    pool_case(cases, op, "kernel (3,2), stride (2,1), padding (1,1)", {3, 2, 7, 6}, pool({3, 2}, {2, 1}, {1, 1}));
  }
  pool_case(cases, Op::AvgPool2d, "padding excluded from the count", {2, 3, 7, 6}, pool({3, 2}, {2, 1}, {1, 1}, false));
  pool_case(cases, Op::MaxPool2d, "kernel (2,3), stride (1,2)", {2, 2, 5, 8}, pool({2, 3}, {1, 2}, {1, 1}));
}

// ---- resampling -----------------------------------------------------------------------------

int64_t nearest_src(int64_t o, int64_t in, int64_t out) {
  return std::min(
      static_cast<int64_t>(std::floor(static_cast<double>(o) * static_cast<double>(in) / static_cast<double>(out))),
      in - 1);
}

// Source coordinate of a bilinear output position, PyTorch's convention.
double bilinear_src(int64_t o, int64_t in, int64_t out, bool align_corners) {
  if (align_corners)
    return out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  return std::max(0.0, (static_cast<double>(o) + 0.5) * static_cast<double>(in) / static_cast<double>(out) - 0.5);
}

double lerp_at(const Ref& x, int64_t n, int64_t ch, double sy, double sx) {
  const int64_t h = x.shape[2], w = x.shape[3];
  const int64_t y0 = static_cast<int64_t>(std::floor(sy)), x0 = static_cast<int64_t>(std::floor(sx));
  const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const double fy = sy - static_cast<double>(y0), fx = sx - static_cast<double>(x0);
  const double top = x.at({n, ch, y0, x0}) * (1 - fx) + x.at({n, ch, y0, x1}) * fx;
  const double bot = x.at({n, ch, y1, x0}) * (1 - fx) + x.at({n, ch, y1, x1}) * fx;
  return top * (1 - fy) + bot * fy;
}

void register_resampling(Cases& cases) {
  const std::pair<Shape, int64_t> n1[] = {{{2, 3, 5}, 12}, {{2, 3, 9}, 4}, {{1, 2, 7}, 7}};
  for (const auto& [shape, out_len] : n1)
    cases.push_back({Op::UpsampleNearest1d, shape.str() + " -> " + std::to_string(out_len), kSpatialLayouts,
                     [shape, out_len](Ctx& c) {
                       const Tensor x = c.input(c.shape(shape), -50, 50);
                       const Ref& r = c.ref(x);
                       Ref e(Shape{x.dim(0), x.dim(1), out_len});
                       for_each_index(e.shape, [&](const std::vector<int64_t>& o) {
                         e.at(o) = r.at({o[0], o[1], nearest_src(o[2], shape[2], out_len)});
                       });
                       c.expect(x.upsample_nearest1d(out_len), e, Tol{0, 0});
                     }});
  const std::tuple<Shape, int64_t, int64_t> n2[] = {{{2, 3, 4, 5}, 9, 11}, {{2, 2, 7, 6}, 3, 4}, {{1, 3, 5, 4}, 5, 10}};
  for (const auto& [shape, oh, ow] : n2)
    cases.push_back({Op::UpsampleNearest2d, shape.str() + " -> " + std::to_string(oh) + "x" + std::to_string(ow),
                     kSpatialLayouts, [shape, oh, ow](Ctx& c) {
                       const Tensor x = c.input(c.shape(shape), -50, 50);
                       const Ref& r = c.ref(x);
                       Ref e(Shape{x.dim(0), x.dim(1), oh, ow});
                       for_each_index(e.shape, [&](const std::vector<int64_t>& o) {
                         e.at(o) = r.at({o[0], o[1], nearest_src(o[2], shape[2], oh), nearest_src(o[3], shape[3], ow)});
                       });
                       c.expect(x.upsample_nearest2d(oh, ow), e, Tol{0, 0});
                     }});
  const std::tuple<Shape, int64_t, int64_t> bl[] = {{{2, 3, 4, 5}, 9, 7}, {{2, 2, 7, 8}, 3, 5}, {{1, 2, 5, 4}, 1, 3}};
  for (bool align : {false, true})
    for (const auto& [shape, oh, ow] : bl)
      cases.push_back({Op::UpsampleBilinear2d,
                       shape.str() + " -> " + std::to_string(oh) + "x" + std::to_string(ow) +
                           (align ? ", align_corners" : ", half-pixel"),
                       kSpatialLayouts, [shape, oh, ow, align](Ctx& c) {
                         const Tensor x = c.input(c.shape(shape), -2, 2);
                         const Ref& r = c.ref(x);
                         Ref e(Shape{x.dim(0), x.dim(1), oh, ow});
                         for_each_index(e.shape, [&](const std::vector<int64_t>& o) {
                           e.at(o) = lerp_at(r, o[0], o[1], bilinear_src(o[2], shape[2], oh, align),
                                             bilinear_src(o[3], shape[3], ow, align));
                         });
                         c.expect(x.upsample_bilinear2d(oh, ow, align), e, tol_for(c.dtype(), 2));
                       }});
}

// ---- rope -----------------------------------------------------------------------------------

void register_rope(Cases& cases) {
  const Shape shapes[] = {{2, 3, 5, 8}, {6, 4}, {4, 9, 32}};  // the last on 16-byte vectors of pairs
  for (bool inter : {false, true})
    for (const Shape& base : shapes)
      cases.push_back({inter ? Op::RopeI : Op::Rope, base.str(), kAllLayouts, [inter, base](Ctx& c) {
                         const Tensor x = c.input(c.shape(base), -2, 2);
                         const int64_t t = x.dim(-2), d = x.dim(-1), half = d / 2;
                         const Tensor cs = c.input({t, half}, -1, 1);
                         const Tensor sn = c.input({t, half}, -1, 1);
                         const Ref &rx = c.ref(x), &rc = c.ref(cs), &rs = c.ref(sn);
                         Ref e(rx.shape);
                         const int64_t rows = d > 0 ? rx.numel() / d : 0;
                         for (int64_t row = 0; row < rows; ++row) {
                           const int64_t pos = row % t;  // rows run over the flattened [..., T]
                           const double* xr = rx.v.data() + row * d;
                           double* er = e.v.data() + row * d;
                           for (int64_t i = 0; i < half; ++i) {
                             const int64_t a = inter ? 2 * i : i, b = inter ? 2 * i + 1 : i + half;
                             const double co = rc.v[static_cast<size_t>(pos * half + i)],
                                          si = rs.v[static_cast<size_t>(pos * half + i)];
                             er[a] = xr[a] * co - xr[b] * si;
                             er[b] = xr[b] * co + xr[a] * si;
                           }
                         }
                         c.expect(inter ? rope_i(x, cs, sn) : rope(x, cs, sn), e, tol_for(c.dtype(), 2));
                       }});
}

}  // namespace

void register_conv_cases(Cases& cases) {
  register_convolutions(cases);
  register_pools(cases);
  register_resampling(cases);
  register_rope(cases);
}

}  // namespace wick::check
