// Creation kernels: const_set, arange, rand_uniform, rand_normal.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/philox.h"
#include "cpu/dispatch.h"
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

// Element i of the call's Philox stream; see Note [Random streams] in src/core/philox.h.
template <class T>
struct Uniform {
  uint64_t seed, counter;
  double lo, span;
  float lo_f, span_f, up_f;
  __device__ T operator()(int64_t i) const {
    if constexpr (std::is_same_v<T, double>)
      return philox::uniform_f64(seed, counter, static_cast<uint64_t>(i), lo, span);
    else
      return convert<T>(philox::uniform_f32(seed, counter, static_cast<uint64_t>(i), lo_f, span_f, up_f));
  }
};

template <class T>
struct Normal {
  uint64_t seed, counter;
  double mean, std;
  float mean_f, std_f;
  __device__ T operator()(int64_t i) const {
    if constexpr (std::is_same_v<T, double>)
      return philox::normal_f64(seed, counter, static_cast<uint64_t>(i), mean, std);
    else
      return convert<T>(philox::normal_f32(seed, counter, static_cast<uint64_t>(i), mean_f, std_f));
  }
};

}  // namespace

void const_set(const LaunchCtx& ctx, const TensorArg& dst, Scalar value) {
  cpu::dispatch(
      dst.dtype,
      [&]<class T>() {
        const T v = value.as<T>();
        if constexpr (sizeof(T) == 1) fill_as<uint8_t>(ctx, dst, v);
        else if constexpr (sizeof(T) == 2) fill_as<uint16_t>(ctx, dst, v);
        else if constexpr (sizeof(T) == 4) fill_as<uint32_t>(ctx, dst, v);
        else fill_as<uint64_t>(ctx, dst, v);
      },
      "const_set");
}

void arange(const LaunchCtx& ctx, const TensorArg& dst, double start, double step) {
  // The same rule as the CPU backend (src/cpu/cpu_backend.cpp), so both give the same values.
  const double last = start + static_cast<double>(dst.numel() - 1) * step;
  const bool integral = std::floor(start) == start && std::floor(step) == step && std::fabs(start) < 0x1p62 &&
                        std::fabs(step) < 0x1p62 && std::fabs(last) < 0x1p62;
  cpu::dispatch(
      dst.dtype,
      [&]<class T>() {
        const Arange<T> f{start, step, integral ? static_cast<int64_t>(start) : 0,
                          integral ? static_cast<int64_t>(step) : 0, integral};
        map<T>(ctx, f, dst);
      },
      "arange");
}

void rand_uniform(const LaunchCtx& ctx, const TensorArg& dst, double lo, double up, RandomStream rs) {
  cpu::dispatch_in<kFloatTypes>(
      dst.dtype,
      [&]<class T>() {
        const Uniform<T> f{rs.seed, rs.counter, lo, up - lo, static_cast<float>(lo), static_cast<float>(up - lo), static_cast<float>(up)};
        map<T>(ctx, f, dst);
      },
      "rand_uniform");
}

void rand_normal(const LaunchCtx& ctx, const TensorArg& dst, double mean, double std, RandomStream rs) {
  cpu::dispatch_in<kFloatTypes>(
      dst.dtype,
      [&]<class T>() {
        const Normal<T> f{rs.seed, rs.counter, mean, std, static_cast<float>(mean), static_cast<float>(std)};
        map<T>(ctx, f, dst);
      },
      "rand_normal");
}

}  // namespace wick::WICK_GPU_NS::kern
