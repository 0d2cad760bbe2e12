// softmax, log_softmax, rms_norm, layer_norm on the CPU: over the last dim, any src/dst strides.
//
// Each row is loaded once into a per-thread buffer of the compute type (f32 for the 16/8-bit
// floats and f32, f64 for f64), normalised there and rounded once on store. The buffer makes the
// strided case (softmax over a leading dim arrives as a transposed view) the same code as the
// contiguous one, and the loops over it vectorise.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/dispatch.h"
#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/row_loop.h"
#include "cpu/simd.h"

namespace wick::cpu {
namespace {

template <class C>
C row_max(const C* p, int64_t n) {
  constexpr int kL = 16;
  C lane[kL];
  for (C& l : lane) l = minmax_identity<true, C>();
  int64_t i = 0;
  for (; i + kL <= n; i += kL)
    for (int l = 0; l < kL; ++l) lane[l] = minmax_step<true>(lane[l], p[i + l]);
  C r = minmax_identity<true, C>();
  for (; i < n; ++i) r = minmax_step<true>(r, p[i]);
  for (int l = 0; l < kL; ++l) r = minmax_step<true>(r, lane[l]);
  return r;
}

// A per-parameter vector ([D] weight or bias) in the compute type; empty when undefined.
template <class T, class C>
std::vector<C> load_param(const TensorArg& a, int64_t n) {
  std::vector<C> v;
  if (a.data == nullptr) return v;
  v.resize(static_cast<size_t>(n));
  load_row(a.ptr<T>(), n, a.layout.stride(0), v.data());
  return v;
}

// Runs rows(buf, g, n) over every last-dim row, in groups of g <= `group` rows (Note [Softmax row
// groups]), buf holding the group's rows one after another in the compute type; the row function
// leaves the results in buf.
template <class T, class C, class F>
void normalise_rows(const TensorArg& src, const TensorArg& dst, int64_t cost, int64_t group, F&& rows) {
  if (src.numel() == 0) return;
  const int64_t n = src.layout.shape().back();
  const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
  const T* in = src.ptr<T>();
  T* out = dst.ptr<T>();
  for_each_last_dim_rows<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()}, n * cost, group,
                            [&](const std::array<int64_t, 2>* off, int64_t g) {
                              thread_local std::vector<C> buf;
                              buf.resize(static_cast<size_t>(g * n));
                              load_rows(in, off, g, 0, ss, n, buf.data());
                              rows(buf.data(), g, n);
                              store_rows(buf.data(), out, off, g, 1, ds, n);
                            });
}

// Runs rows(in, out, g, n) over every last-dim row of src and dst where both are f32 with unit
// stride along the rows (Note [Softmax rows], Note [Norm rows]), in groups of g <= `group` rows,
// in[j] / out[j] the starts of row j of the group; false, running nothing, otherwise.
template <class F>
bool direct_f32_rows(const TensorArg& src, const TensorArg& dst, int64_t cost, int64_t group, F&& rows) {
  const int64_t n = src.numel() == 0 ? 0 : src.layout.shape().back();
  if (src.dtype != DType::F32 || n == 0 || src.layout.strides().back() != 1 || dst.layout.strides().back() != 1)
    return false;
  const float* in = src.ptr<float>();
  float* out = dst.ptr<float>();
  for_each_last_dim_rows<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()}, n * cost, group,
                            [&](const std::array<int64_t, 2>* off, int64_t g) {
                              const float* x[kMaxRowGroup];
                              float* o[kMaxRowGroup];
                              for (int64_t j = 0; j < g; ++j) {
                                x[j] = in + off[j][0];
                                o[j] = out + off[j][1];
                              }
                              rows(x, o, g, n);
                            });
  return true;
}

// Note [Softmax rows]
// A softmax row of f32 (or of f16 / bf16, widened into the thread's row buffer) takes three passes:
// the maximum m; exp(x + (-m)) written out while its sum accumulates (simd's exp_sum16_f32, in
// lane_sum's blocks of 2048, each block's sum taken while the block is in L1); the multiplication
// by 1 / sum in place. An f32 row with unit strides on both sides goes from src to dst without the
// row buffer. The values and their order are fixed: x + (-m) rounded, then exp_f32, then
// lane_sum's order. The last pass multiplies by the reciprocal rather than dividing: a vector
// division holds the divider for several cycles, and in a pass of its own nothing hides that. The
// reciprocal's rounding adds at most an ulp of f32 (the exponentials' error is 2), and it is what
// the GPU kernels (Note [GPU row normalisation]) and PyTorch compute.

// The sum of exp(x[i] + shift), each written to out[i] (out may be x), in lane_sum's order.
float exp_lane_sum(const float* x, float* out, int64_t n, float shift) {
  const simd::Kernels& k = simd::kernels();
  return leaf_sum<float>(n, [&](int64_t b, int64_t e) { return k.exp_sum16_f32(x + b, out + b, e - b, shift); });
}

// Note [Softmax row groups]
// Each pass of a softmax row waits for the one before it: the exponentials for the maximum (a
// horizontal reduction at the end of max_f32), the scaling for the sum of the exponentials. A
// short row (attention scores over 128 keys: 8 vectors of 16) is little work next to the latency
// of those chains, and one row's passes are more instructions than the processor looks ahead
// over, so rows one after another ran mostly one chain at a time. Short rows are taken in groups
// of up to kMaxRowGroup (softmax_group: about kGroupElems elements) and every pass runs over the
// whole group before the next (all maxima, then all exponentials and sums, then all scalings):
// the rows of a group are independent, and their chains overlap. The operations on each row and
// their order are those of one row at a time, so the results do not change by a bit. f16 / bf16
// rows go through the row buffer a group at a time, converted in one call where the group's rows
// lie end to end (normalise_rows). Rows of kGroupElems or more run one at a time.
constexpr int64_t kGroupElems = 2048;

int64_t softmax_group(int64_t n) { return std::clamp<int64_t>(kGroupElems / std::max<int64_t>(n, 1), 1, kMaxRowGroup); }

// softmax (or log_softmax) of the f32 rows x[j] into out[j] (which may be x[j]), j < g: see Note
// [Softmax rows] and Note [Softmax row groups].
void softmax_rows_f32(const float* const* x, float* const* out, int64_t g, int64_t n, bool log) {
  const simd::Kernels& k = simd::kernels();
  float m[kMaxRowGroup], s[kMaxRowGroup];
  // A row of -inf (or with +inf) gives NaN, as exp(-inf - -inf) does in every framework.
  for (int64_t j = 0; j < g; ++j) m[j] = k.max_f32(x[j], n);
  if (!log) {
    for (int64_t j = 0; j < g; ++j) s[j] = exp_lane_sum(x[j], out[j], n, -m[j]);
    for (int64_t j = 0; j < g; ++j) k.scale_f32(out[j], n, 1.0f / s[j]);
    return;
  }
  // log: the exponentials only feed the sum; they go to out where that is not x.
  thread_local std::vector<float> e;
  if (out[0] == x[0]) e.resize(static_cast<size_t>(n));  // a group is in place (the row buffer) or not
  for (int64_t j = 0; j < g; ++j) s[j] = std::log(exp_lane_sum(x[j], out[j] == x[j] ? e.data() : out[j], n, -m[j]));
  for (int64_t j = 0; j < g; ++j)
    for (int64_t i = 0; i < n; ++i) out[j][i] = (x[j][i] + -m[j]) - s[j];
}

// Note [Softmax of few long rows]
// Rows split across threads leave most of them idle when there are fewer rows than threads, and
// one long row (logits over a vocabulary: 128256 f32) ran on one. f32 rows with unit strides,
// fewer than the threads and at least two chunks long, are cut into chunks of kChunkLeaves of
// lane_sum's leaves, and each pass of Note [Softmax rows] runs over all (row, chunk) pairs in
// parallel: the chunks' maxima (merged per row), the exponentials with each leaf's sum kept apart,
// then the scaling. The leaf sums are added per row in leaf_sum's pairwise order, so the results
// are the bits of the unsplit rows.
constexpr int64_t kChunkLeaves = 8;

bool softmax_few_long_rows_f32(const TensorArg& src, const TensorArg& dst, bool log) {
  const int64_t n = src.numel() == 0 ? 0 : src.layout.shape().back();
  const int64_t span = kChunkLeaves * kLaneBlock;
  if (src.dtype != DType::F32 || n < 2 * span || src.layout.strides().back() != 1 || dst.layout.strides().back() != 1 ||
      src.data == dst.data)
    return false;
  const int64_t rows = src.numel() / n;
  if (rows >= num_threads()) return false;
  const auto start = last_dim_row_starts<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()});
  const int64_t leaves = (n + kLaneBlock - 1) / kLaneBlock, chunks = (leaves + kChunkLeaves - 1) / kChunkLeaves;
  const int64_t tasks = rows * chunks;
  const float* in = src.ptr<float>();
  float* out = dst.ptr<float>();
  const simd::Kernels& k = simd::kernels();
  // f(row, first element, end) over the chunks of tasks [b, e).
  auto each_chunk = [&](auto&& f) {
    parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t r = t / chunks, first = (t % chunks) * span;
        f(r, first, std::min(n, first + span));
      }
    });
  };
  std::vector<float> part(static_cast<size_t>(tasks)), leaf(static_cast<size_t>(rows * leaves));
  std::vector<float> m(static_cast<size_t>(rows)), s(static_cast<size_t>(rows));
  each_chunk([&](int64_t r, int64_t b, int64_t e) {
    part[static_cast<size_t>(r * chunks + b / span)] = k.max_f32(in + start[static_cast<size_t>(r)][0] + b, e - b);
  });
  for (int64_t r = 0; r < rows; ++r) {
    float v = part[static_cast<size_t>(r * chunks)];
    for (int64_t c = 1; c < chunks; ++c) v = minmax_step<true>(v, part[static_cast<size_t>(r * chunks + c)]);
    m[static_cast<size_t>(r)] = v;
  }
  // The exponentials go to out: the result for softmax, scratch for log_softmax.
  each_chunk([&](int64_t r, int64_t b, int64_t e) {
    const auto& o = start[static_cast<size_t>(r)];
    for (int64_t l = b; l < e; l += kLaneBlock)
      leaf[static_cast<size_t>(r * leaves + l / kLaneBlock)] =
          k.exp_sum16_f32(in + o[0] + l, out + o[1] + l, std::min(e, l + kLaneBlock) - l, -m[static_cast<size_t>(r)]);
  });
  for (int64_t r = 0; r < rows; ++r)
    s[static_cast<size_t>(r)] =
        leaf_sum<float>(n, [&](int64_t b, int64_t) { return leaf[static_cast<size_t>(r * leaves + b / kLaneBlock)]; });
  each_chunk([&](int64_t r, int64_t b, int64_t e) {
    const auto& o = start[static_cast<size_t>(r)];
    if (!log) return k.scale_f32(out + o[1] + b, e - b, 1.0f / s[static_cast<size_t>(r)]);
    const float neg_m = -m[static_cast<size_t>(r)], lse = std::log(s[static_cast<size_t>(r)]);
    for (int64_t i = b; i < e; ++i) out[o[1] + i] = (in[o[0] + i] + neg_m) - lse;
  });
  return true;
}

// Note [Norm rows]
// rms_norm and layer_norm of an f32 row with unit strides on both sides read src and write dst
// directly, without the row buffer: the sums of squares take the mean's shift inside simd's
// sumsq16_f32 ((x + -mean)^2, each step rounded as when x - mean was stored first), and norm_f32
// writes ((x + shift) * scale) * w + b from src to dst. rms_norm's shift is -0, which changes no
// value. The values and their order are those of the buffered path, which other dtypes and strides
// keep (with its buffer as both src and dst).

// The row norm of x into out (which may be x) in f32: rms_norm (rms true; b unused) or layer_norm;
// w / b null where absent.
void norm_row_f32(const float* x, float* out, int64_t n, bool rms, double eps, const float* w, const float* b) {
  const simd::Kernels& k = simd::kernels();
  if (rms) {
    k.norm_f32(x, out, n, -0.0f, rms_scale(lane_sum<true>(x, n), n, eps), w, nullptr);
    return;
  }
  // Two passes (mean, then squared deviations): no cancellation when |mean| >> std.
  const float mean = lane_sum(x, n) / static_cast<float>(n);
  const float inv = inv_std(lane_sum<true>(x, n, -mean) / static_cast<float>(n), eps);
  k.norm_f32(x, out, n, -mean, inv, w, b);
}

// Runs norm_row_f32 over every row: straight from src to dst where both have unit strides along
// the rows (f32 only), else through normalise_rows' buffer (Note [Norm rows]); the generic loop
// for f64.
template <class T>
void norm_rows(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst, bool rms,
               double eps) {
  using C = compute_t<T>;
  const int64_t n = x.numel() == 0 ? 0 : x.layout.shape().back();
  const std::vector<C> w = load_param<T, C>(weight, n);
  const std::vector<C> b = load_param<T, C>(bias, n);
  const C* wp = w.empty() ? nullptr : w.data();
  const C* bp = b.empty() ? nullptr : b.data();
  const int64_t cost = rms ? 3 : 4;
  if constexpr (std::is_same_v<T, float>) {
    if (direct_f32_rows(x, dst, cost, 1, [&](const float* const* in, float* const* out, int64_t, int64_t len) {
          norm_row_f32(in[0], out[0], len, rms, eps, wp, bp);
        }))
      return;
  }
  normalise_rows<T, C>(x, dst, cost, 1, [&](C* v, int64_t, int64_t len) {
    if constexpr (std::is_same_v<C, float>) {
      norm_row_f32(v, v, len, rms, eps, wp, bp);
    } else if (rms) {
      const C scale = rms_scale(lane_sum<true>(v, len), len, eps);
      for (int64_t i = 0; i < len; ++i) v[i] = wp ? v[i] * scale * wp[i] : v[i] * scale;
    } else {
      const C mean = lane_sum(v, len) / static_cast<C>(len);
      for (int64_t i = 0; i < len; ++i) v[i] -= mean;
      const C inv = inv_std(lane_sum<true>(v, len) / static_cast<C>(len), eps);
      for (int64_t i = 0; i < len; ++i) v[i] *= inv;
      if (wp)
        for (int64_t i = 0; i < len; ++i) v[i] *= wp[i];
      if (bp)
        for (int64_t i = 0; i < len; ++i) v[i] += bp[i];
    }
  });
}

// softmax (or log_softmax) of a row in place, in a compute type without simd kernels (f64).
template <class C>
void softmax_row(C* x, int64_t n, bool log) {
  // A row of -inf (or with +inf) gives NaN, as exp(-inf - -inf) does in every framework.
  const C m = row_max(x, n);
  for (int64_t i = 0; i < n; ++i) x[i] -= m;
  if (log) {
    thread_local std::vector<C> e;
    e.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) e[static_cast<size_t>(i)] = std::exp(x[i]);
    const C lse = std::log(lane_sum(e.data(), n));
    for (int64_t i = 0; i < n; ++i) x[i] -= lse;
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
    const C sum = lane_sum(x, n);
    for (int64_t i = 0; i < n; ++i) x[i] /= sum;
  }
}

}  // namespace

void CpuBackend::softmax(const TensorArg& src, const TensorArg& dst, bool log) {
  dispatch_in<kFloatTypes>(
      src.dtype,
      [&]<class T>() {
        using C = compute_t<T>;
        if (softmax_few_long_rows_f32(src, dst, log)) return;
        const int64_t n = src.numel() == 0 ? 0 : src.layout.shape().back();
        const int64_t group = std::is_same_v<C, float> ? softmax_group(n) : 1;
        if (direct_f32_rows(src, dst, 8, group,
                            [log](const float* const* x, float* const* out, int64_t g, int64_t len) {
                              softmax_rows_f32(x, out, g, len, log);
                            }))
          return;
        normalise_rows<T, C>(src, dst, 8, group, [log](C* buf, int64_t g, int64_t len) {
          if constexpr (std::is_same_v<C, float>) {
            float* x[kMaxRowGroup];
            for (int64_t j = 0; j < g; ++j) x[j] = buf + j * len;
            softmax_rows_f32(x, x, g, len, log);
          } else {
            for (int64_t j = 0; j < g; ++j) softmax_row(buf + j * len, len, log);
          }
        });
      },
      log ? "log_softmax" : "softmax");
}

void CpuBackend::rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, const NormParams& p) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { norm_rows<T>(x, weight, TensorArg(), dst, true, p.eps); }, "rms_norm");
}

void CpuBackend::layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst,
                            const NormParams& p) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { norm_rows<T>(x, weight, bias, dst, false, p.eps); }, "layer_norm");
}

}  // namespace wick::cpu
