// The quantized ops on the CPU: quantize, dequantize and qmatmul over the block codecs of
// src/quant (Note [Quantizer rounding]: this file is compiled without FMA contraction).
#include <cblas.h>

#include <algorithm>
#include <type_traits>
#include <vector>

#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/parallel.h"
#include "cpu/simd_quant.h"
#include "quant/codecs.h"

namespace wick::cpu {
namespace {

using quant::Codec;

// Rows of the float side: contiguous [rows, k].
template <class T>
const T* float_row(const TensorArg& t, int64_t r, int64_t k) {
  return t.ptr<T>() + r * k;
}

// Every row's blocks of `src` (u8 [rows, row_bytes], row stride >= row_bytes) into f32 `dst` rows
// of `k` elements, rows [r0, r1).
template <QFormat F>
void dequantize_rows_f32(const TensorArg& src, int64_t r0, int64_t r1, int64_t k, float* dst, int64_t dst_stride) {
  using C = Codec<F>;
  const int64_t nb = k / C::kElems;
  const int64_t stride = src.layout.stride(0);
  for (int64_t r = r0; r < r1; ++r) {
    const uint8_t* row = src.ptr<uint8_t>() + r * stride;
    float* out = dst + (r - r0) * dst_stride;
    for (int64_t b = 0; b < nb; ++b)
      for (int s = 0; s < C::kElems / 32; ++s) C::dequantize_sub(row + b * C::kBytes, s, out + b * C::kElems + 32 * s);
  }
}

}  // namespace

void CpuBackend::quantize(const TensorArg& src, QFormat format, const TensorArg& dst) {
  const int64_t rows = dst.shape()[0], k = src.shape()[1];
  if (rows == 0 || k == 0) return;
  const int64_t stride = dst.layout.stride(0);
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = Codec<F>;
    const int64_t nb = k / C::kElems;
    dispatch_in<kQuantFloatTypes>(src.dtype, [&]<class T>() {
      // Blocks are independent: split over all blocks of all rows.
      parallel_for(rows * nb, 64, [&](int64_t begin, int64_t end) {
        float x[C::kElems];
        for (int64_t i = begin; i < end; ++i) {
          const int64_t r = i / nb, b = i % nb;
          const T* in = float_row<T>(src, r, k) + b * C::kElems;
          for (int j = 0; j < C::kElems; ++j) x[j] = static_cast<float>(in[j]);
          C::quantize(x, dst.ptr<uint8_t>() + r * stride + b * C::kBytes);
        }
      });
    });
  });
}

void CpuBackend::dequantize(const TensorArg& src, QFormat format, const TensorArg& dst) {
  const int64_t rows = src.shape()[0], k = dst.shape()[1];
  if (rows == 0 || k == 0) return;
  const int64_t stride = src.layout.stride(0);
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = Codec<F>;
    const int64_t nb = k / C::kElems;
    dispatch_in<kQuantFloatTypes>(dst.dtype, [&]<class T>() {
      parallel_for(rows * nb, 256, [&](int64_t begin, int64_t end) {
        float y[32];
        for (int64_t i = begin; i < end; ++i) {
          const int64_t r = i / nb, b = i % nb;
          const uint8_t* blk = src.ptr<uint8_t>() + r * stride + b * C::kBytes;
          T* out = dst.ptr<T>() + r * k + b * C::kElems;
          for (int s = 0; s < C::kElems / 32; ++s) {
            C::dequantize_sub(blk, s, y);
            for (int j = 0; j < 32; ++j) out[32 * s + j] = T(y[j]);
          }
        }
      });
    });
  });
}

// Note [CPU quantized matmul]: up to kMatVecRows rows of x, each weight block is decoded once into
// f32 and dotted with every row of x (the weights are read once, the decode is amortised over the
// rows); above that, the weights are decoded in slabs of columns into f32 and multiplied by
// OpenBLAS's sgemm, whose cost then dominates the decode.
namespace {
constexpr int64_t kMatVecRows = 16;
constexpr int64_t kSlabElems = int64_t{1} << 22;  // f32 elements of a decoded slab (16 MiB)
}  // namespace

void CpuBackend::qmatmul(const TensorArg& x, const TensorArg& w, QFormat format, const TensorArg& dst) {
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[0];
  if (m == 0 || n == 0) return;
  // x as f32 [m, k] (copied once when it is f16 / bf16).
  std::vector<float> xf;
  const float* xs = nullptr;
  dispatch_in<kQuantFloatTypes>(x.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, float>) {
      xs = x.ptr<float>();
    } else {
      xf.resize(static_cast<size_t>(m * k));
      const T* p = x.ptr<T>();
      for (int64_t i = 0; i < m * k; ++i) xf[static_cast<size_t>(i)] = static_cast<float>(p[i]);
      xs = xf.data();
    }
  });
  auto store = [&](int64_t i, int64_t j, float v) {
    dispatch_in<kQuantFloatTypes>(dst.dtype, [&]<class T>() { dst.ptr<T>()[i * n + j] = T(v); });
  };
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = Codec<F>;
    const int64_t nb = k / C::kElems;
    const int64_t stride = w.layout.stride(0);
    if (m <= kMatVecRows) {
      // The vector kernels write f32 rows [m, n]: dst itself when it is f32.
      const bool f32_out = dst.dtype == DType::F32;
      Scratch<float> outf = scratch<float>(f32_out ? 0 : m * n);
      float* o = f32_out ? dst.ptr<float>() : outf.get();
      parallel_for(n, 64, [&](int64_t begin, int64_t end) {
        if (simd::qmatvec_f32(F, w.ptr<uint8_t>(), stride, begin, end, k, xs, k, m, o, n)) return;
        float y[C::kElems];
        float acc[kMatVecRows];
        for (int64_t j = begin; j < end; ++j) {
          std::fill(acc, acc + m, 0.0f);
          const uint8_t* row = w.ptr<uint8_t>() + j * stride;
          for (int64_t b = 0; b < nb; ++b) {
            for (int s = 0; s < C::kElems / 32; ++s) C::dequantize_sub(row + b * C::kBytes, s, y + 32 * s);
            for (int64_t i = 0; i < m; ++i) {
              const float* xr = xs + i * k + b * C::kElems;
              float sum = 0;
              for (int e = 0; e < C::kElems; ++e) sum += xr[e] * y[e];
              acc[i] += sum;
            }
          }
          for (int64_t i = 0; i < m; ++i) o[i * n + j] = acc[i];
        }
      });
      if (!f32_out)
        dispatch_in<kQuantFloatTypes>(dst.dtype, [&]<class T>() {
          T* d = dst.ptr<T>();
          for (int64_t i = 0; i < m * n; ++i) d[i] = T(o[i]);
        });
      return;
    }
    // Large m: decode a slab of columns [j0, j1) to f32, then dst[:, j0:j1] = x * slab^T.
    const int64_t slab_cols = std::max<int64_t>(1, std::min<int64_t>(n, kSlabElems / std::max<int64_t>(k, 1)));
    Scratch<float> slab = scratch<float>(slab_cols * k);
    const bool f32_out = dst.dtype == DType::F32;
    Scratch<float> out = scratch<float>(f32_out ? 0 : m * slab_cols);
    for (int64_t j0 = 0; j0 < n; j0 += slab_cols) {
      const int64_t cols = std::min(slab_cols, n - j0);
      parallel_for(cols, 8, [&](int64_t begin, int64_t end) {
        dequantize_rows_f32<F>(w, j0 + begin, j0 + end, k, slab.get() + begin * k, k);
      });
      if (k == 0) {
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < cols; ++j) store(i, j0 + j, 0.0f);
        continue;
      }
      float* c = f32_out ? dst.ptr<float>() + j0 : out.get();
      const int64_t ldc = f32_out ? n : cols;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(cols),
                  static_cast<int>(k), 1.0f, xs, static_cast<int>(k), slab.get(), static_cast<int>(k), 0.0f, c,
                  static_cast<int>(ldc));
      if (!f32_out)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < cols; ++j) store(i, j0 + j, c[i * cols + j]);
    }
  });
}

}  // namespace wick::cpu
