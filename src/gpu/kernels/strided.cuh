// Device side of the strided elementwise framework (Note [GPU launch plans] in plan.h).
//
// A functor f is called as f(flat_index, inputs...) and returns the output element; flat_index is
// the element's row-major index in the output's shape (creation ops use it, the rest ignore it).
#pragma once

#include <concepts>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "gpu/kernels/plan.h"
#include "gpu/runtime/vendor.cuh"
#include "wick/dtype.h"

namespace wick::WICK_GPU_NS::kern {

inline constexpr int kBlock = 256;

// Shape and strides of a launch, innermost dim first, passed to the kernel by value.
template <class Index, int N>
struct Meta {
  int rank;
  Index shape[kMaxDims];
  Index stride[kMaxDims][N];
};

// Element offsets of every operand for the flat index i (< product of the shape).
template <class Index, int N>
__device__ __forceinline__ void offsets_of(const Meta<Index, N>& m, Index i, Index (&off)[N]) {
#pragma unroll
  for (int k = 0; k < N; ++k) off[k] = 0;
#pragma unroll
  for (int d = 0; d < kMaxDims; ++d) {
    if (d == m.rank) break;
    Index r = i;
    if (d + 1 < m.rank) {
      const Index q = i / m.shape[d];
      r = i - q * m.shape[d];
      i = q;
    }
#pragma unroll
    for (int k = 0; k < N; ++k) off[k] += r * m.stride[d][k];
  }
}

template <class F, class Index, class Out, class... In, size_t... K>
__device__ __forceinline__ void strided_step(const F& f, int64_t idx, const Index* off, Out* out,
                                             std::index_sequence<K...>, const In*... in) {
  out[off[0]] = f(idx, in[off[K + 1]]...);
}

template <class Index, class F, class Out, class... In>
__global__ void __launch_bounds__(kBlock)
    map_strided_kernel(F f, Meta<Index, 1 + sizeof...(In)> m, Index n, int64_t base, Out* out, const In*... in) {
  constexpr int N = 1 + sizeof...(In);
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    Index off[N];
    offsets_of(m, i, off);
    strided_step(f, base + static_cast<int64_t>(i), off, out, std::index_sequence_for<In...>{}, in...);
  }
}

// 16 bytes moved as one aligned load / store (the widest unit of the copies that move bits).
struct alignas(16) Bytes16 {
  uint64_t lo, hi;
};

// V elements of T in one aligned load or store (16 bytes for the widest operand of a launch).
template <class T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// c rounded to T (convert<T> of each) as one vector; bf16 and f16 a pair at a time (pack2: one
// instruction a pair on NVIDIA GPUs from sm_80 on, against five an element for bf16 alone).
template <class T, int V, class C>
__device__ __forceinline__ Vec<T, V> vec_of(const C (&c)[V]) {
  Vec<T, V> t;
  constexpr bool kPairs = std::is_same_v<C, float> && V % 2 == 0;
  if constexpr (kPairs && (std::is_same_v<T, bf16> || std::is_same_v<T, f16>)) {
    uint32_t w[V / 2];
#pragma unroll
    for (int k = 0; k < V / 2; ++k) w[k] = pack2<T>(c[2 * k], c[2 * k + 1]);
    static_assert(sizeof w == sizeof t);
    memcpy(&t, w, sizeof t);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) t.v[e] = convert<T>(c[e]);
  }
  return t;
}

template <class Out, class... In>
constexpr int vec_width() {
  size_t widest = sizeof(Out);
  ((widest = sizeof(In) > widest ? sizeof(In) : widest), ...);
  return widest >= 16 ? 1 : static_cast<int>(16 / widest);
}

template <size_t K, int V, class T>
__device__ __forceinline__ Vec<T, V> load_vec(const T* p, int64_t i0, unsigned broadcast) {
  if ((broadcast >> K) & 1u) {
    Vec<T, V> r;
    const T x = p[0];
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = x;
    return r;
  }
  return *reinterpret_cast<const Vec<T, V>*>(p + i0);
}

// A functor whose wide(i, x...) is the f32 value that its operator() rounds to a 16-bit float. A
// named concept: nvcc 13 took the same requirement written inline in compute_store, on its own
// parameters (`requires { f.wide(idx0, x.v[0]...); }`), as false (no cvt.rn.bf16x2 in the PTX).
template <class F, class... In>
concept WideF32 = requires(const F& f, int64_t i, In... x) {
  { f.wide(i, x...) } -> std::same_as<float>;
};

// out[0, V) = f(idx0 + j, x[j]...). Where Out is bf16 or f16 and f has its f32 value (WideF32), the
// values are rounded a pair at a time (vec_of), the same bits as one by one in half the
// conversion instructions: rows bound by their arithmetic (silu) gain, rows at the copy rate do not.
template <int V, class F, class Out, class... In>
__device__ __forceinline__ void compute_store(const F& f, int64_t idx0, Out* out, const Vec<In, V>&... x) {
  constexpr bool kPairs = V % 2 == 0 && (std::is_same_v<Out, bf16> || std::is_same_v<Out, f16>);
  if constexpr (kPairs && WideF32<F, In...>) {
    float c[V];
#pragma unroll
    for (int j = 0; j < V; ++j) c[j] = f.wide(idx0 + j, x.v[j]...);
    *reinterpret_cast<Vec<Out, V>*>(out) = vec_of<Out>(c);
  } else {
    Vec<Out, V> r;
#pragma unroll
    for (int j = 0; j < V; ++j) r.v[j] = f(idx0 + j, x.v[j]...);
    *reinterpret_cast<Vec<Out, V>*>(out) = r;
  }
}

template <int V, class F, class Out, class... In, size_t... K>
__device__ __forceinline__ void flat_vec_step(const F& f, int64_t i0, int64_t base, unsigned broadcast, Out* out,
                                              std::index_sequence<K...>, const In*... in) {
  compute_store<V>(f, base + i0, out + i0, load_vec<K, V>(in, i0, broadcast)...);
}

template <class F, class Out, class... In, size_t... K>
__device__ __forceinline__ void flat_step(const F& f, int64_t i, int64_t base, unsigned broadcast, Out* out,
                                          std::index_sequence<K...>, const In*... in) {
  out[i] = f(base + i, in[((broadcast >> K) & 1u) ? 0 : i]...);
}

// The contiguous path: output stride 1, inputs stride 1 or 0 (bit k of `broadcast`), every
// non-broadcast pointer aligned to its Vec.
template <int V, class F, class Out, class... In>
__global__ void __launch_bounds__(kBlock)
    map_flat_kernel(F f, int64_t n, int64_t base, unsigned broadcast, Out* out, const In*... in) {
  const int64_t step = static_cast<int64_t>(blockDim.x) * gridDim.x;
  const int64_t tid = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t nvec = n / V;
  for (int64_t v = tid; v < nvec; v += step)
    flat_vec_step<V>(f, v * V, base, broadcast, out, std::index_sequence_for<In...>{}, in...);
  for (int64_t i = nvec * V + tid; i < n; i += step)
    flat_step(f, i, base, broadcast, out, std::index_sequence_for<In...>{}, in...);
}

// The two-dim contiguous path (Note [GPU row path] in map.cuh): `rows` rows of `inner` elements,
// every operand unit-stride along a row (or a broadcast scalar: bit k of `broadcast`), operand k's
// rows rs.s[k] elements apart. Index is the type of the vector-to-row split (32-bit where it fits).
template <int N>
struct RowStrides {
  int64_t s[N];
};

template <int V, class F, class Out, class... In, size_t... K>
__device__ __forceinline__ void row_vec_step(const F& f, int64_t r, int64_t c, int64_t inner,
                                             const RowStrides<1 + sizeof...(In)>& rs, unsigned broadcast, Out* out,
                                             std::index_sequence<K...>, const In*... in) {
  compute_store<V>(f, r * inner + c, out + r * rs.s[0] + c, load_vec<K, V>(in + r * rs.s[K + 1], c, broadcast)...);
}

template <class Index, int V, class F, class Out, class... In>
__global__ void __launch_bounds__(kBlock)
    map_rows_kernel(F f, Index rows, Index inner, RowStrides<1 + sizeof...(In)> rs, unsigned broadcast, Out* out,
                    const In*... in) {
  const Index per_row = inner / V, nvec = rows * per_row;
  const Index step = static_cast<Index>(blockDim.x) * gridDim.x;
  for (Index v = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; v < nvec; v += step) {
    const Index r = v / per_row, c = (v - r * per_row) * V;
    row_vec_step<V>(f, static_cast<int64_t>(r), static_cast<int64_t>(c), static_cast<int64_t>(inner), rs, broadcast,
                    out, std::index_sequence_for<In...>{}, in...);
  }
}

}  // namespace wick::WICK_GPU_NS::kern
