// Creation kernels: const_set, arange, rand_uniform, rand_normal.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "backend/dispatch.h"
#include "backend/philox.h"
#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {

// Fills with a bit pattern: const_set instantiates per element size, not per dtype.
template <class U>
struct Fill {
  U bits;
  __device__ U operator()(int64_t) const { return bits; }
};

template <class U, class T>
void fill_as(const LaunchCtx& ctx, const TensorArg& dst, T value) {
  static_assert(sizeof(U) == sizeof(T));
  U bits;
  std::memcpy(&bits, &value, sizeof(U));
  map<U>(ctx, Fill<U>{bits}, dst);
}

// The same expressions as CpuBackend::arange, with the product never fused into an fma, so that
// both backends give the same values.
template <class T>
struct Arange {
  double start, step;
  int64_t istart, istep;
  bool integral;
  __device__ T operator()(int64_t i) const {
    if constexpr (std::is_integral_v<T>) {
      if (integral) return saturate_int<T>(istart + i * istep);
    }
    return convert<T>(gpu::add_no_fma(start, gpu::mul_no_fma(static_cast<double>(i), step)));
  }
};

// The contiguous path of rand: one thread per Philox block (10 rounds, then its kPer elements),
// where the strided path computes the block once per element; the elements go out in one vector
// store when dst is aligned to it. The Philox rounds (about 100 integer instructions per block)
// cost about as much as the writes.
template <class G, class T>
__global__ void __launch_bounds__(kBlock) rand_blocks_kernel(G g, int64_t n, bool aligned, T* out) {
  constexpr int P = G::kPer;
  const int64_t blocks = (n + P - 1) / P;
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < blocks; k += step) {
    Vec<T, P> r;
    g.block(static_cast<uint64_t>(k), r.v);
    const int64_t i0 = k * P;
    if (aligned && i0 + P <= n) {
      *reinterpret_cast<Vec<T, P>*>(out + i0) = r;
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j)
        if (i0 + j < n) out[i0 + j] = r.v[j];
    }
  }
}

template <class T, class G>
void rand_fill(const LaunchCtx& ctx, const G& g, const TensorArg& dst) {
  if (!dst.layout.is_contiguous()) return map<T>(ctx, g, dst);
  const int64_t n = dst.numel();
  if (n == 0) return;
  T* const out = dst.ptr<T>();
  const bool aligned = aligned_to(out, sizeof(Vec<T, G::kPer>));
  gpu::launch<rand_blocks_kernel<G, T>>(ctx, grid_for(ctx, (n + G::kPer - 1) / G::kPer), kBlock, 0, g, n, aligned, out);
}

}  // namespace

void const_set(const LaunchCtx& ctx, const TensorArg& dst, Scalar value) {
  wick::dispatch(
      dst.dtype,
      [&]<class T>() {
        const T v = value.as<T>();
        if constexpr (sizeof(T) == 1)
          fill_as<uint8_t>(ctx, dst, v);
        else if constexpr (sizeof(T) == 2)
          fill_as<uint16_t>(ctx, dst, v);
        else if constexpr (sizeof(T) == 4)
          fill_as<uint32_t>(ctx, dst, v);
        else
          fill_as<uint64_t>(ctx, dst, v);
      },
      "const_set");
}

void arange(const LaunchCtx& ctx, const TensorArg& dst, const ArangeParams& p) {
  const double start = p.start, step = p.step;
  // The same rule as the CPU backend (src/cpu/cpu_backend.cpp), so both give the same values.
  const double last = start + static_cast<double>(dst.numel() - 1) * step;
  const bool integral = std::floor(start) == start && std::floor(step) == step && std::fabs(start) < 0x1p62 &&
                        std::fabs(step) < 0x1p62 && std::fabs(last) < 0x1p62;
  wick::dispatch(
      dst.dtype,
      [&]<class T>() {
        const Arange<T> f{start, step, integral ? static_cast<int64_t>(start) : 0,
                          integral ? static_cast<int64_t>(step) : 0, integral};
        map<T>(ctx, f, dst);
      },
      "arange");
}

void rand_uniform(const LaunchCtx& ctx, const TensorArg& dst, const RandomParams& p) {
  const double lo = p.a, up = p.b;
  const RandomStream& rs = p.stream;
  wick::dispatch_in<kFloatTypes>(
      dst.dtype, [&]<class T>() { rand_fill<T>(ctx, philox::Uniform<T>(rs.seed, rs.counter, lo, up), dst); },
      "rand_uniform");
}

void rand_normal(const LaunchCtx& ctx, const TensorArg& dst, const RandomParams& p) {
  const double mean = p.a, std = p.b;
  const RandomStream& rs = p.stream;
  wick::dispatch_in<kFloatTypes>(
      dst.dtype, [&]<class T>() { rand_fill<T>(ctx, philox::Normal<T>(rs.seed, rs.counter, mean, std), dst); },
      "rand_normal");
}

}  // namespace wick::WICK_GPU_NS::kern
