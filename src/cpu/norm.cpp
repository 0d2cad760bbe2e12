// softmax, log_softmax, rms_norm, layer_norm on the CPU: over the last dim, any src/dst strides.
//
// Each row is loaded once into a per-thread buffer of the compute type (f32 for the 16/8-bit
// floats and f32, f64 for f64), normalised there and rounded once on store. The buffer makes the
// strided case (softmax over a leading dim arrives as a transposed view) the same code as the
// contiguous one, and the loops over it vectorise.
#include <cmath>
#include <type_traits>
#include <vector>

#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/dispatch.h"
#include "cpu/row_loop.h"
#include "cpu/simd.h"

namespace wick::cpu {
namespace {

template <class T, class C>
void load_row(const T* p, int64_t n, int64_t s, C* buf) {
  if (s == 1 && simd::converter<C, T>()) {
    simd::converter<C, T>()(p, buf, n);
  } else if (s == 1) {
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(p[i * s]);
  }
}

template <class T, class C>
void store_row(const C* buf, int64_t n, T* p, int64_t s) {
  if (s == 1 && simd::converter<T, C>()) {
    simd::converter<T, C>()(buf, p, n);
  } else if (s == 1) {
    for (int64_t i = 0; i < n; ++i) p[i] = convert<T>(buf[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) p[i * s] = convert<T>(buf[i]);
  }
}

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

// Runs row(buf, n) over every last-dim row, buf holding the row in the compute type; the row
// function leaves the result in buf.
template <class T, class C, class F>
void normalise_rows(const TensorArg& src, const TensorArg& dst, int64_t cost, F&& row) {
  if (src.numel() == 0) return;
  const int64_t n = src.layout.shape().back();
  const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
  const T* in = src.ptr<T>();
  T* out = dst.ptr<T>();
  for_each_last_dim_row<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()}, n * cost,
                           [&](const std::array<int64_t, 2>& off) {
                             thread_local std::vector<C> buf;
                             buf.resize(static_cast<size_t>(n));
                             load_row(in + off[0], n, ss, buf.data());
                             row(buf.data(), n);
                             store_row(buf.data(), n, out + off[1], ds);
                           });
}

}  // namespace

void CpuBackend::softmax(const TensorArg& src, const TensorArg& dst, bool log) {
  dispatch_in<kFloatTypes>(src.dtype, [&]<class T>() {
    using C = compute_t<T>;
    normalise_rows<T, C>(src, dst, 8, [log](C* x, int64_t n) {
      C m;
      if constexpr (std::is_same_v<C, float>) {
        m = simd::kernels().max_f32(x, n);
      } else {
        m = row_max(x, n);
      }
      // A row of -inf (or with +inf) gives NaN, as exp(-inf - -inf) does in every framework.
      if constexpr (std::is_same_v<C, float>) {
        simd::kernels().add_f32(x, n, -m);  // x + (-m) is x - m, exactly
      } else {
        for (int64_t i = 0; i < n; ++i) x[i] -= m;
      }
      // exp of f32 rows through the vector kernel of simd.h.
      auto exp_row = [](const C* in, C* out, int64_t len) {
        if constexpr (std::is_same_v<C, float>) {
          simd::kernels().exp_f32(in, out, len);
        } else {
          for (int64_t i = 0; i < len; ++i) out[i] = std::exp(in[i]);
        }
      };
      if (log) {
        thread_local std::vector<C> e;
        e.resize(static_cast<size_t>(n));
        exp_row(x, e.data(), n);
        const C lse = std::log(lane_sum(e.data(), n));
        for (int64_t i = 0; i < n; ++i) x[i] -= lse;
      } else {
        exp_row(x, x, n);
        const C sum = lane_sum(x, n);
        if constexpr (std::is_same_v<C, float>) {
          simd::kernels().div_f32(x, n, sum);
        } else {
          for (int64_t i = 0; i < n; ++i) x[i] /= sum;
        }
      }
    });
  }, log ? "log_softmax" : "softmax");
}

void CpuBackend::rms_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& dst, double eps) {
  dispatch_in<kFloatTypes>(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    const int64_t n = x.numel() == 0 ? 0 : x.layout.shape().back();
    const std::vector<C> w = load_param<T, C>(weight, n);
    normalise_rows<T, C>(x, dst, 3, [&](C* v, int64_t len) {
      const C scale = rms_scale(lane_sum<true>(v, len), len, eps);
      if constexpr (std::is_same_v<C, float>) {
        simd::kernels().norm_f32(v, len, scale, w.empty() ? nullptr : w.data(), nullptr);
      } else if (w.empty()) {
        for (int64_t i = 0; i < len; ++i) v[i] *= scale;
      } else {
        for (int64_t i = 0; i < len; ++i) v[i] = v[i] * scale * w[static_cast<size_t>(i)];
      }
    });
  }, "rms_norm");
}

void CpuBackend::layer_norm(const TensorArg& x, const TensorArg& weight, const TensorArg& bias, const TensorArg& dst,
                            double eps) {
  dispatch_in<kFloatTypes>(x.dtype, [&]<class T>() {
    using C = compute_t<T>;
    const int64_t n = x.numel() == 0 ? 0 : x.layout.shape().back();
    const std::vector<C> w = load_param<T, C>(weight, n);
    const std::vector<C> b = load_param<T, C>(bias, n);
    normalise_rows<T, C>(x, dst, 4, [&](C* v, int64_t len) {
      // Two passes (mean, then squared deviations): no cancellation when |mean| >> std.
      const C mean = lane_sum(v, len) / static_cast<C>(len);
      if constexpr (std::is_same_v<C, float>) {
        const simd::Kernels& k = simd::kernels();
        k.add_f32(v, len, -mean);  // x + (-m) is x - m, exactly
        const C inv = inv_std(lane_sum<true>(v, len) / static_cast<C>(len), eps);
        k.norm_f32(v, len, inv, w.empty() ? nullptr : w.data(), b.empty() ? nullptr : b.data());
        return;
      }
      for (int64_t i = 0; i < len; ++i) v[i] -= mean;
      const C inv = inv_std(lane_sum<true>(v, len) / static_cast<C>(len), eps);
      for (int64_t i = 0; i < len; ++i) v[i] *= inv;
      if (!w.empty())
        for (int64_t i = 0; i < len; ++i) v[i] *= w[static_cast<size_t>(i)];
      if (!b.empty())
        for (int64_t i = 0; i < len; ++i) v[i] += b[static_cast<size_t>(i)];
    });
  }, "layer_norm");
}

}  // namespace wick::cpu
