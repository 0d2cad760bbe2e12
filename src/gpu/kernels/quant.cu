// quantize and dequantize on the GPU with the block codecs of src/quant, whose bytes and values
// must be the CPU's bit for bit (Note [Quantizer rounding]): cmake/WickGpu.cmake compiles this file
// without FMA contraction. quantize runs one thread per block; dequantize one thread per 32-element
// sub-block, its values staged in shared memory so that a block of threads writes one contiguous
// run of the output as 16-byte vectors.
#include <algorithm>
#include <cstdint>

#include "backend/dispatch.h"
#include "gpu/kernels/map.cuh"
#include "quant/codecs.h"

namespace wick::WICK_GPU_NS::kern {
namespace {

inline constexpr int kQuantBlock = 128;
inline constexpr int kDequantBlock = 128;
// Floats per thread in the dequantize tile: 32 plus one, so that the 32 lanes of a store round
// (thread t writes its element e to word 33 t + e) fall in distinct banks.
inline constexpr int kDequantRow = 33;

// Elements of T in a 16-byte vector.
template <class T>
inline constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

// Block i of the contiguous rows (i < blocks) into the u8 rows of stride ds (Note [Quantizer
// rounding]). Vec: src is 16-byte aligned, so each block's kElems inputs load as vectors.
template <QFormat F, class T, bool Vec16>
__global__ void __launch_bounds__(kQuantBlock)
    quantize_kernel(const T* src, uint8_t* dst, int64_t blocks, int64_t bpr, int64_t ds) {
  using C = quant::Codec<F>;
  constexpr int V = kVec16<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < blocks; i += step) {
    const int64_t row = i / bpr, b = i - row * bpr;
    const T* x = src + i * C::kElems;
    float v[C::kElems];
    if constexpr (Vec16) {
      static_assert(C::kElems % V == 0);
      for (int j = 0; j < C::kElems / V; ++j) {
        const Vec<T, V> u = reinterpret_cast<const Vec<T, V>*>(x)[j];
#pragma unroll
        for (int e = 0; e < V; ++e) v[j * V + e] = convert<float>(u.v[e]);
      }
    } else {
      for (int e = 0; e < C::kElems; ++e) v[e] = convert<float>(x[e]);
    }
    C::quantize(v, dst + row * ds + b * C::kBytes);
  }
}

// Sub-block g (g < subs) of the u8 rows of stride ss into dst[32 g, 32 g + 32): a block of threads
// decodes kDequantBlock consecutive sub-blocks into its tile, then stores the tile's contiguous run
// of dst. Vec16: dst is 16-byte aligned, so the run stores as vectors.
template <QFormat F, class T, bool Vec16>
__global__ void __launch_bounds__(kDequantBlock)
    dequantize_kernel(const uint8_t* src, T* dst, int64_t subs, int64_t bpr, int64_t ss) {
  using C = quant::Codec<F>;
  constexpr int kSubs = C::kElems / 32;
  constexpr int V = Vec16 ? kVec16<T> : 1;
  static_assert(32 % V == 0);
  __shared__ float tile[kDequantBlock * kDequantRow];
  const unsigned t = threadIdx.x;
  // The trip count depends on the block only: every thread reaches the barriers.
  for (int64_t base = static_cast<int64_t>(blockIdx.x) * kDequantBlock; base < subs;
       base += static_cast<int64_t>(gridDim.x) * kDequantBlock) {
    const int64_t g = base + t;
    if (g < subs) {
      const int64_t blk = g / kSubs, row = blk / bpr;
      const int sub = static_cast<int>(g - blk * kSubs);
      float y[32];
      C::dequantize_sub(src + row * ss + (blk - row * bpr) * C::kBytes, sub, y);
#pragma unroll
      for (int e = 0; e < 32; ++e) tile[t * kDequantRow + e] = y[e];
    }
    __syncthreads();
    const int count = static_cast<int>(std::min<int64_t>(subs - base, kDequantBlock)) * 32;
    T* const out = dst + base * 32;
    for (int i = static_cast<int>(t) * V; i < count; i += kDequantBlock * V) {
      const float* s = tile + (i / 32) * kDequantRow + i % 32;  // V divides 32: one sub-block
      if constexpr (V > 1) {
        float c[V];
#pragma unroll
        for (int e = 0; e < V; ++e) c[e] = s[e];
        reinterpret_cast<Vec<T, V>*>(out)[i / V] = vec_of<T>(c);
      } else {
        out[i] = convert<T>(s[0]);
      }
    }
    __syncthreads();  // the tile is rewritten by the next round
  }
}

}  // namespace

void quantize(const LaunchCtx& base, const TensorArg& src, QFormat format, const TensorArg& dst) {
  const LaunchCtx ctx = base.with_op("quantize");
  const int64_t rows = dst.layout.dim(0), row_bytes = dst.layout.dim(1);
  if (rows == 0 || row_bytes == 0) return;
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = quant::Codec<F>;
    const int64_t bpr = row_bytes / C::kBytes, blocks = rows * bpr;
    const int64_t grid = capped_grid(ctx, (blocks + kQuantBlock - 1) / kQuantBlock);
    wick::dispatch_in<kQuantFloatTypes>(
        src.dtype,
        [&]<class T>() {
          const T* x = src.ptr<T>();
          by_flag(aligned_to(x, 16), [&]<bool Vec16>() {
            gpu::launch<quantize_kernel<F, T, Vec16>>(ctx, static_cast<unsigned>(grid), kQuantBlock, 0, x,
                                                      dst.ptr<uint8_t>(), blocks, bpr, dst.layout.stride(0));
          });
        },
        ctx.op);
  });
}

void dequantize(const LaunchCtx& base, const TensorArg& src, QFormat format, const TensorArg& dst) {
  const LaunchCtx ctx = base.with_op("dequantize");
  const int64_t rows = src.layout.dim(0), row_bytes = src.layout.dim(1);
  if (rows == 0 || row_bytes == 0) return;
  quant::dispatch_qformat(format, [&]<QFormat F>() {
    using C = quant::Codec<F>;
    const int64_t bpr = row_bytes / C::kBytes, subs = rows * bpr * (C::kElems / 32);
    const int64_t grid = capped_grid(ctx, (subs + kDequantBlock - 1) / kDequantBlock);
    wick::dispatch_in<kQuantFloatTypes>(
        dst.dtype,
        [&]<class T>() {
          T* const y = dst.ptr<T>();
          by_flag(aligned_to(y, 16), [&]<bool Vec16>() {
            gpu::launch<dequantize_kernel<F, T, Vec16>>(ctx, static_cast<unsigned>(grid), kDequantBlock, 0,
                                                        src.ptr<uint8_t>(), y, subs, bpr, src.layout.stride(0));
          });
        },
        ctx.op);
  });
}

}  // namespace wick::WICK_GPU_NS::kern
