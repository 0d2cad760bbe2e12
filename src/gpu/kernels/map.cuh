// Host launcher of the strided elementwise framework: map<Out, In...>(ctx, f, dst, src...) runs
// dst[i] = f(i, src0[i], ...) over dst's shape, each operand with its own layout (the sources have
// dst's shape; broadcast inputs carry stride 0). See Note [GPU launch plans] in plan.h.
// Included only by the kernel translation units (src/gpu/kernels/*.cu).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>

#include "backend/backend.h"
#include "backend/dispatch.h"
#include "gpu/kernels/launch.h"
#include "gpu/kernels/strided.cuh"
#include "gpu/runtime/runtime.h"

namespace wick::WICK_GPU_NS::kern {

// `blocks` capped at enough to fill the device a few times over (32 per multiprocessor), at least
// one: the kernels' grid-stride loops cover the rest.
inline unsigned capped_grid(const LaunchCtx& ctx, int64_t blocks) {
  const int64_t cap = static_cast<int64_t>(std::max(ctx.multiprocessors, 1)) * 32;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, cap)));
}

// Blocks of `block` threads of Kernel that the device holds at once (the resident count of every
// multiprocessor, at least one each): a grid that fills the device once.
template <auto Kernel>
int64_t resident_grid(const LaunchCtx& ctx, int block) {
  const int per_sm = gpu::resident_blocks<Kernel>(block, 0, ctx.op, ctx.device);
  return int64_t{std::max(ctx.multiprocessors, 1)} * std::max(per_sm, 1);
}

// The length of the pieces that cut n elements into at most `parts` of whole units of `unit`
// elements (all but the last piece the same length): how the split kernels of few long rows
// (reductions, softmax, cumsum) keep every thread's loads in whole batches.
inline int64_t piece_length(int64_t n, int64_t unit, int64_t parts) {
  const int64_t units = (n + unit - 1) / unit;
  return (units + parts - 1) / parts * unit;
}

// Blocks of kBlock threads for `work` elements, capped as above.
inline unsigned grid_for(const LaunchCtx& ctx, int64_t work) { return capped_grid(ctx, (work + kBlock - 1) / kBlock); }

// Note [GPU flat grid]
// The contiguous elementwise kernel gets one block per kBlock vectors, uncapped (up to the grid
// limit; its grid-stride loop covers the rest): a capped grid of looping blocks streams a large
// copy more slowly. The strided kernels keep the cap, under which they are faster (broadcasts
// among them).
inline unsigned flat_grid(int64_t work) {
  return static_cast<unsigned>(std::clamp<int64_t>((work + kBlock - 1) / kBlock, 1, INT32_MAX));
}

template <class Index, int N>
Meta<Index, N> make_meta(const Plan<N>& p, int first) {
  Meta<Index, N> m{};
  m.rank = p.rank() - first;
  for (int d = 0; d < m.rank; ++d) {
    const int src = p.rank() - 1 - d;  // innermost first
    m.shape[d] = static_cast<Index>(p.shape[src]);
    for (int k = 0; k < N; ++k) m.stride[d][k] = static_cast<Index>(p.strides[k][src]);
  }
  return m;
}

template <class Index, class F, class Out, class... In>
void launch_strided(const LaunchCtx& ctx, const F& f, const Plan<1 + sizeof...(In)>& p, int first, int64_t base,
                    Out* out, const In*... in) {
  constexpr int N = 1 + sizeof...(In);
  const Meta<Index, N> m = make_meta<Index, N>(p, first);
  int64_t n = 1;
  for (int d = first; d < p.rank(); ++d) n *= p.shape[d];
  gpu::launch<map_strided_kernel<Index, F, Out, In...>>(ctx, grid_for(ctx, n), kBlock, 0, f, m, static_cast<Index>(n),
                                                        base, out, in...);
}

// launch_strided over the whole of p (rank <= kMaxDims), in 32-bit index math where it fits.
template <class F, class Out, class... In>
void launch_strided_plan(const LaunchCtx& ctx, const F& f, const Plan<1 + sizeof...(In)>& p, Out* out,
                         const In*... in) {
  if (p.fits_32bit())
    launch_strided<uint32_t>(ctx, f, p, 0, 0, out, in...);
  else
    launch_strided<int64_t>(ctx, f, p, 0, 0, out, in...);
}

// dispatch_bits (backend/dispatch.h), with Bytes16 for 16 bytes where kWidest is 16: the unit of
// the copies that move bits, instantiated per size.
template <size_t kWidest = 8, class F>
void by_size(int64_t bytes, F&& f) {
  static_assert(kWidest == 8 || kWidest == 16);
  if constexpr (kWidest == 16)
    if (bytes == 16) return f.template operator()<Bytes16>();
  dispatch_bits(bytes, f);
}

template <class T>
bool aligned_to(const T* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

template <class T>
using ArgOf = TensorArg;

template <class Out, class... In, class F, size_t... K>
void map_impl(const LaunchCtx& ctx, const F& f, const TensorArg& dst, std::index_sequence<K...>,
              const ArgOf<In>&... src) {
  constexpr int N = 1 + sizeof...(In);
  if (dst.numel() == 0) return;
  const Plan<N> p = collapse<N>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()...});
  Out* const out = dst.template ptr<Out>();
  const std::tuple<const In*...> in{src.template ptr<In>()...};

  unsigned broadcast = 0;
  if (p.flat(&broadcast)) {
    constexpr int V = vec_width<Out, In...>();
    // A misaligned operand (a narrowed view) takes the strided path instead of a second,
    // unvectorised instantiation of the flat kernel.
    const bool aligned = aligned_to(out, sizeof(Vec<Out, V>)) &&
                         (((broadcast >> K) & 1u || aligned_to(std::get<K>(in), sizeof(Vec<In, V>))) && ...);
    if (aligned) {
      const int64_t n = p.numel;
      gpu::launch<map_flat_kernel<V, F, Out, In...>>(ctx, flat_grid((n + V - 1) / V), kBlock, 0, f, n, int64_t{0},
                                                     broadcast, out, std::get<K>(in)...);
      return;
    }
  }

  if (p.rank() == 2) {
    // Note [GPU row path]
    // Two dims with unit-stride rows in every operand, e.g. x[m, n] * bias[n]: vector loads along
    // the rows and one split of the vector index per 16 bytes, instead of the strided kernel's
    // split per element. Operands broadcast along the rows must be scalars here; other layouts
    // take the strided kernel.
    constexpr int V = vec_width<Out, In...>();
    const int64_t rows = p.shape[0], inner = p.shape[1];
    auto fits = [&](const void* ptr, size_t elem, int64_t outer) {
      return aligned_to(static_cast<const char*>(ptr), elem * V) && outer % V == 0;
    };
    bool ok = V > 1 && inner % V == 0 && p.strides[0][1] == 1 && fits(out, sizeof(Out), p.strides[0][0]);
    unsigned bcast = 0;
    (
        [&] {
          const int64_t si = p.strides[K + 1][1], so = p.strides[K + 1][0];
          if (si == 0 && so == 0) {
            bcast |= 1u << K;
          } else if (si != 1 || !fits(std::get<K>(in), sizeof(In), so)) {
            ok = false;
          }
        }(),
        ...);
    if (ok) {
      RowStrides<N> rs{};
      rs.s[0] = p.strides[0][0];
      ((rs.s[K + 1] = p.strides[K + 1][0]), ...);
      const int64_t nvec = rows * (inner / V);
      if (p.numel <= INT32_MAX)
        gpu::launch<map_rows_kernel<uint32_t, V, F, Out, In...>>(
            ctx, flat_grid(nvec), kBlock, 0, f, static_cast<uint32_t>(rows), static_cast<uint32_t>(inner), rs, bcast,
            out, std::get<K>(in)...);
      else
        gpu::launch<map_rows_kernel<int64_t, V, F, Out, In...>>(ctx, flat_grid(nvec), kBlock, 0, f, rows, inner, rs,
                                                                bcast, out, std::get<K>(in)...);
      return;
    }
  }

  if (p.rank() <= kMaxDims) return launch_strided_plan(ctx, f, p, out, std::get<K>(in)...);

  // Too many dims for one Meta: one launch per index of the outer dims (Note [GPU launch plans]).
  const int outer = p.rank() - kMaxDims;
  int64_t inner_numel = 1;
  for (int d = outer; d < p.rank(); ++d) inner_numel *= p.shape[d];
  int64_t slices = 1;
  for (int d = 0; d < outer; ++d) slices *= p.shape[d];
  for (int64_t s = 0; s < slices; ++s) {
    const std::array<int64_t, N> off = p.slice_offsets(outer, s);
    launch_strided<int64_t>(ctx, f, p, outer, s * inner_numel, out + off[0], (std::get<K>(in) + off[K + 1])...);
  }
}

template <class Out, class... In, class F>
void map(const LaunchCtx& ctx, const F& f, const TensorArg& dst, const ArgOf<In>&... src) {
  map_impl<Out, In...>(ctx, f, dst, std::index_sequence_for<In...>{}, src...);
}

}  // namespace wick::WICK_GPU_NS::kern
