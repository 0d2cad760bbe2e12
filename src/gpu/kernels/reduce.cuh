// sum, mean, min, max, argmin, argmax on the GPU: the kernels and their host launcher, included by
// reduce_sum.cu, reduce_minmax.cu and reduce_arg.cu (one translation unit per op family, so they
// compile in parallel).
//
// Note [GPU reductions]
// The reduced dims are the last n_reduced dims of src (the front end permutes them there); both
// sets are collapsed (plan.h). The host picks one of two kernels (DESIGN principle 3): rows, where
// one output's reduced elements are one contiguous run (or any layout, offsets from the collapsed
// reduced dims): a thread group per output (Note [GPU thread groups]), 16-byte loads from the first
// aligned element, four in flight per thread; columns, where a kept dim has src stride 1 and the
// reduced elements are strided: threads own adjacent outputs and walk down the reduced elements,
// each warp reading consecutive addresses, the block's y threads merged through shared memory.
// With too few outputs to fill the device, each output's range is cut into `splits` pieces
// (col_splits: whole waves of resident blocks) reduced into scratch accumulators and merged by a
// second kernel: no atomics, the same bits on every run. Accumulators and NaN rules are the CPU's
// (src/backend/reduce_math.h); argmin / argmax prefer the smaller index on ties. Float sums run in
// a short cascade per thread (every 16 elements, then every 64 flushes), then tree-wise.
//
// Index math is 32-bit when every count and offset fits, 64-bit otherwise. More than kMaxDims
// dims left after collapsing (rare): src is copied contiguous first and the result goes through a
// contiguous buffer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "backend/reduce_math.h"
#include "gpu/kernels/group.cuh"
#include "gpu/kernels/map.cuh"
#include "gpu/kernels/matmul.h"

namespace wick::WICK_GPU_NS::kern {

// ---- per-op math: init (identity), step (one element), merge, finish ------------------------

template <class T, bool Mean>
struct SumOp {
  using In = T;
  using Acc = sum_acc_t<T>;
  using Out = T;
  static constexpr bool kCascade = !std::is_integral_v<Acc>;
  WICK_HOST_DEVICE static Acc init() { return Acc(0); }
  __device__ static Acc step(Acc a, T x, int64_t) { return a + sum_load<Acc>(x); }
  __device__ static Acc merge(Acc a, Acc b) { return a + b; }
  WICK_HOST_DEVICE static Out finish(Acc a, int64_t count) {
    if constexpr (Mean) {
      return convert<T>(mean_of(a, count));
    } else {
      return sum_store<T>(a);
    }
  }
};

template <class T, bool IsMax>
struct MinMaxOp {
  using In = T;
  using Acc = cmp_t<T>;
  using Out = T;
  static constexpr bool kCascade = false;
  WICK_HOST_DEVICE static Acc init() { return minmax_identity<IsMax, Acc>(); }
  __device__ static Acc step(Acc a, T x, int64_t) { return minmax_step<IsMax>(a, static_cast<Acc>(x)); }
  __device__ static Acc merge(Acc a, Acc b) { return minmax_step<IsMax>(a, b); }
  WICK_HOST_DEVICE static Out finish(Acc a, int64_t) { return convert<T>(a); }
};

template <class V>
struct ArgState {
  V v;
  int64_t i;  // -1: no element yet
  __device__ ArgState shuffled(int mask) const { return {shfl_bits(v, mask), shfl_bits(i, mask)}; }
};

template <class T, bool IsMax>
struct ArgOp {
  using In = T;
  using V = cmp_t<T>;
  using Acc = ArgState<V>;
  using Out = int64_t;
  static constexpr bool kCascade = false;
  WICK_HOST_DEVICE static Acc init() { return {V(0), -1}; }
  // Elements of one thread arrive in increasing index: a strict improvement keeps the first.
  __device__ static Acc step(Acc a, T x, int64_t i) {
    const V v = static_cast<V>(x);
    return (a.i < 0 || arg_better<IsMax>(v, a.v)) ? Acc{v, i} : a;
  }
  // Any order: the better value, or on a tie (equal, or both NaN) the smaller index.
  __device__ static Acc merge(Acc a, Acc b) {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    if (arg_better<IsMax>(b.v, a.v)) return b;
    if (arg_better<IsMax>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
  WICK_HOST_DEVICE static Out finish(Acc a, int64_t) { return a.i; }
};

// A thread's running accumulator; float sums cascade (see Note [GPU reductions]).
template <class Op>
struct Cascade {
  using Acc = typename Op::Acc;
  Acc l0 = Op::init(), l1 = Op::init(), l2 = Op::init();
  int c1 = 0;
  __device__ void add(typename Op::In x, int64_t i) { l0 = Op::step(l0, x, i); }
  __device__ void flush() {
    if constexpr (Op::kCascade) {
      l1 = Op::merge(l1, l0);
      l0 = Op::init();
      if (++c1 == 64) {
        l2 = Op::merge(l2, l1);
        l1 = Op::init();
        c1 = 0;
      }
    }
  }
  __device__ Acc result() const {
    if constexpr (Op::kCascade) {
      return Op::merge(l2, Op::merge(l1, l0));
    } else {
      return l0;
    }
  }
};

// ---- row kernel ---------------------------------------------------------------------------

template <class Op, class Index>
struct RowArgs {
  Meta<Index, 2> outer;  // src, dst offsets of each output
  Meta<Index, 1> inner;  // offset of each reduced element (row-major flat index)
  const typename Op::In* src;
  typename Op::Out* dst;
  typename Op::Acc* parts;  // [output][piece] when splits > 1
  Index outputs, n, piece;  // piece: reduced elements per split piece
  unsigned splits, group;
  bool contig;  // the reduced elements of an output are one run of stride 1
  int64_t count;
};

// Elements [b, e) of a contiguous run p, thread `lane` of a group of G.
template <class Op, class Index>
__device__ __forceinline__ void run_span(Cascade<Op>& c, const typename Op::In* p, Index b, Index e, unsigned lane,
                                         unsigned group) {
  using T = typename Op::In;
  constexpr int V = 16 / sizeof(T);
  using Vt = Vec<T, V>;
  const Index mis = static_cast<Index>((reinterpret_cast<uintptr_t>(p + b) % 16) / sizeof(T));
  const Index head = mis == 0 ? Index(0) : std::min<Index>(Index(V) - mis, e - b);
  for (Index i = b + lane; i < b + head; i += group) c.add(p[i], i);
  const Index vb = b + head, nv = (e - vb) / V;
  const Vt* pv = reinterpret_cast<const Vt*>(p + vb);
  Index j = lane;
  for (; j + 3 * group < nv; j += 4 * group) {
    Vt x[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) x[u] = pv[j + u * group];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
#pragma unroll
      for (int k = 0; k < V; ++k) c.add(x[u].v[k], static_cast<int64_t>(vb) + (j + u * group) * V + k);
    }
    c.flush();
  }
  for (; j < nv; j += group) {
    const Vt x = pv[j];
#pragma unroll
    for (int k = 0; k < V; ++k) c.add(x.v[k], static_cast<int64_t>(vb) + j * V + k);
  }
  for (Index i = vb + nv * V + lane; i < e; i += group) c.add(p[i], i);
}

template <class Op, class Index>
__global__ void __launch_bounds__(kBlock) reduce_rows_kernel(RowArgs<Op, Index> a) {
  using Acc = typename Op::Acc;
  __shared__ Acc smem[kMaxWarpsPerBlock];
  const unsigned per_block = groups_per_block(kBlock, a.group);
  const auto [lane, slot] = group_slot(a.group);
  const Index items = a.outputs * a.splits;
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < items;
       base += static_cast<Index>(gridDim.x) * per_block) {
    const Index item = base + slot;
    Acc acc = Op::init();
    Index off[2] = {0, 0};
    if (item < items) {
      const Index out = item / a.splits, pc = item - out * a.splits;
      offsets_of(a.outer, out, off);
      const Index b = pc * a.piece, e = std::min(a.n, b + a.piece);
      const typename Op::In* p = a.src + off[0];
      Cascade<Op> c;
      if (a.contig) {
        run_span(c, p, b, e, lane, a.group);
      } else {
        int since = 0;
        for (Index i = b + lane; i < e; i += a.group) {
          Index io[1];
          offsets_of(a.inner, i, io);
          c.add(p[io[0]], i);
          if (++since == 16) {
            c.flush();
            since = 0;
          }
        }
      }
      acc = c.result();
    }
    acc = group_allreduce<Op>(acc, a.group, smem);
    if (lane == 0 && item < items) {
      if (a.splits == 1) {
        a.dst[off[1]] = Op::finish(acc, a.count);
      } else {
        a.parts[item] = acc;
      }
    }
  }
}

// ---- column kernel ------------------------------------------------------------------------

template <class Op, class Index>
struct ColArgs {
  Meta<Index, 2> other;  // src, dst offsets of the kept dims other than the unit-stride one
  Meta<Index, 1> inner;
  const typename Op::In* src;
  typename Op::Out* dst;
  typename Op::Acc* parts;  // [piece][output], outputs ordered (other dims, unit dim)
  Index others, vlen, dst_v, jblocks, n, piece;
  unsigned splits;
  int64_t count;
};

// V > 1: each thread owns V adjacent outputs along the unit-stride dim and reads them as one
// vector (the host checked alignment and that vlen and every src stride are multiples of V).
template <class Op, class Index, int V>
__global__ void __launch_bounds__(kBlock) reduce_cols_kernel(ColArgs<Op, Index> a) {
  using Acc = typename Op::Acc;
  using In = typename Op::In;
  __shared__ Acc smem[kBlock * V];
  const unsigned bx = blockDim.x, by = blockDim.y, tx = threadIdx.x, ty = threadIdx.y;
  const Index pc = blockIdx.y;
  const Index kb = pc * a.piece, ke = std::min(a.n, kb + a.piece);
  const Index blocks = a.others * a.jblocks, nvl = a.vlen / V;
  for (Index blk = blockIdx.x; blk < blocks; blk += gridDim.x) {
    const Index p = blk / a.jblocks, jv = (blk - p * a.jblocks) * bx + tx;
    Index off[2];
    offsets_of(a.other, p, off);
    Cascade<Op> c[V];
    if (jv < nvl) {
      const In* base = a.src + off[0] + jv * V;
      auto at = [&](Index k) {
        Index io[1];
        offsets_of(a.inner, k, io);
        return *reinterpret_cast<const Vec<In, V>*>(base + io[0]);
      };
      Index k = kb + ty;
      for (; k + 3 * by < ke; k += 4 * by) {
        Vec<In, V> x[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) x[u] = at(k + u * by);
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int e = 0; e < V; ++e) c[e].add(x[u].v[e], k + u * by);
#pragma unroll
        for (int e = 0; e < V; ++e) c[e].flush();
      }
      for (; k < ke; k += by) {
        const Vec<In, V> x = at(k);
#pragma unroll
        for (int e = 0; e < V; ++e) c[e].add(x.v[e], k);
      }
    }
    // smem[(ty * bx + tx) * V + e]: the y threads of a column are merged in a tree.
#pragma unroll
    for (int e = 0; e < V; ++e) smem[(ty * bx + tx) * V + e] = c[e].result();
    for (unsigned s = by / 2; s > 0; s /= 2) {
      __syncthreads();
      if (ty < s)
#pragma unroll
        for (int e = 0; e < V; ++e)
          smem[(ty * bx + tx) * V + e] = Op::merge(smem[(ty * bx + tx) * V + e], smem[((ty + s) * bx + tx) * V + e]);
    }
    __syncthreads();
    if (ty == 0 && jv < nvl) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const Acc acc = smem[tx * V + e];
        const Index j = jv * V + e;
        if (a.splits == 1) {
          a.dst[off[1] + j * a.dst_v] = Op::finish(acc, a.count);
        } else {
          a.parts[pc * (a.others * a.vlen) + p * a.vlen + j] = acc;
        }
      }
    }
    __syncthreads();
  }
}

// ---- merge of split pieces ----------------------------------------------------------------

// Output f's pieces are parts[f * so + s * ss], s < splits; `outer` gives its dst offset ([1]).
template <class Op, class Index>
__global__ void __launch_bounds__(kBlock)
    reduce_merge_kernel(const typename Op::Acc* parts, Index outputs, unsigned splits, Index so, Index ss,
                        Meta<Index, 2> outer, typename Op::Out* dst, int64_t count, unsigned group) {
  using Acc = typename Op::Acc;
  __shared__ Acc smem[kMaxWarpsPerBlock];
  const unsigned per_block = groups_per_block(kBlock, group);
  const auto [lane, slot] = group_slot(group);
  for (Index base = static_cast<Index>(blockIdx.x) * per_block; base < outputs;
       base += static_cast<Index>(gridDim.x) * per_block) {
    const Index f = base + slot;
    Acc acc = Op::init();
    if (f < outputs)
      for (Index s = lane; s < splits; s += group) acc = Op::merge(acc, parts[f * so + s * ss]);
    acc = group_allreduce<Op>(acc, group, smem);
    if (lane == 0 && f < outputs) {
      Index off[2];
      offsets_of(outer, f, off);
      dst[off[1]] = Op::finish(acc, count);
    }
  }
}

template <class Out>
struct FillValue {
  Out v;
  __device__ Out operator()(int64_t) const { return v; }
};

// ---- host side ------------------------------------------------------------------------------

// Plan<N> of the dims `keep` of p, in that order (an empty set is one dim of size 1).
template <size_t N>
StridedPlan<N> sub_plan(const StridedPlan<N>& p, const std::vector<int>& keep) {
  StridedPlan<N> s;
  for (int d : keep) {
    s.shape.push_back(p.shape[d]);
    for (size_t k = 0; k < N; ++k) s.strides[k].push_back(p.strides[k][d]);
    s.numel *= p.shape[d];
  }
  if (s.shape.empty()) {
    s.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) s.strides[k].push_back(0);
  }
  return s;
}

template <class Op, class Index>
void launch_merge(const LaunchCtx& ctx, const typename Op::Acc* parts, int64_t outputs, unsigned splits, int64_t so,
                  int64_t ss, const Plan<2>& outer, typename Op::Out* dst, int64_t count) {
  const unsigned group = pow2_at_least(splits, kBlock);
  const int64_t blocks = (outputs + kBlock / group - 1) / (kBlock / group);
  const unsigned grid = capped_grid(ctx, blocks);
  gpu::launch<reduce_merge_kernel<Op, Index>>(ctx, grid, kBlock, 0, parts, static_cast<Index>(outputs), splits,
                                              static_cast<Index>(so), static_cast<Index>(ss),
                                              make_meta<Index, 2>(outer, 0), dst, count, group);
}

// Blocks that fill the device (a few resident per multiprocessor).
inline int64_t target_blocks(const LaunchCtx& ctx) { return int64_t{std::max(ctx.multiprocessors, 1)} * 8; }

// Pieces to cut each reduced range into when `blocks` blocks would leave the device idle: at most
// `most`, and at most 1024 (the merge kernel's group reads them all).
inline unsigned split_count(const LaunchCtx& ctx, int64_t blocks, int64_t most) {
  if (blocks >= target_blocks(ctx)) return 1;
  const int64_t want = target_blocks(ctx) / blocks;  // no more blocks than fill the device once
  return static_cast<unsigned>(std::clamp<int64_t>(std::min(want, most), 1, 1024));
}

template <class Op, class Index>
void launch_rows(const LaunchCtx& ctx, Backend& be, const Plan<2>& outer, const Plan<1>& inner, bool contig,
                 const typename Op::In* src, typename Op::Out* dst, int64_t n) {
  using Acc = typename Op::Acc;
  const int64_t outputs = outer.numel;
  const unsigned group = pow2_at_least((n + 15) / 16, kBlock);
  // Only rows long enough for a whole block are split, into pieces of whole batches of loads (four
  // vectors a thread, run_span: 4096 f32), so that no thread of a piece ends on vectors loaded one
  // at a time, and no more pieces than fill the device once (a few blocks past that make a whole
  // second wave).
  constexpr int64_t kBatch = int64_t{4} * kBlock * (16 / sizeof(typename Op::In));
  const int64_t batches = (n + kBatch - 1) / kBatch;
  const int64_t want = group == kBlock ? split_count(ctx, outputs, batches) : 1;
  const int64_t piece = want > 1 ? piece_length(n, kBatch, want) : n;
  const auto splits = static_cast<unsigned>((n + piece - 1) / piece);
  Scratch parts(be, splits > 1 ? outputs * splits * static_cast<int64_t>(sizeof(Acc)) : 0);
  RowArgs<Op, Index> a{make_meta<Index, 2>(outer, 0),
                       make_meta<Index, 1>(inner, 0),
                       src,
                       dst,
                       static_cast<Acc*>(parts.get()),
                       static_cast<Index>(outputs),
                       static_cast<Index>(n),
                       static_cast<Index>(piece),
                       splits,
                       group,
                       contig,
                       n};
  const int64_t per_block = kBlock / group;
  const int64_t blocks = (outputs * splits + per_block - 1) / per_block;
  const unsigned grid = capped_grid(ctx, blocks);
  gpu::launch<reduce_rows_kernel<Op, Index>>(ctx, grid, kBlock, 0, a);
  if (splits > 1) launch_merge<Op, Index>(ctx, a.parts, outputs, splits, splits, 1, outer, dst, n);
}

// Pieces per output for the column kernel: the count (at most `most`) that fills the resident
// block slots best over at most four waves, fewest pieces on a tie. Whole waves matter here: the
// blocks all do the same work, so a last partial wave leaves the device part idle.
inline unsigned col_splits(int64_t blocks, int64_t resident, int64_t most) {
  if (blocks >= resident) return 1;
  unsigned best = 1;
  double best_fill = 0;
  for (int64_t s = 1; s <= std::min<int64_t>(most, 1024) && blocks * s <= 4 * resident; ++s) {
    const int64_t total = blocks * s, waves = (total + resident - 1) / resident;
    const double fill = static_cast<double>(total) / static_cast<double>(waves * resident);
    if (fill > best_fill + 1e-9) best = static_cast<unsigned>(s), best_fill = fill;
  }
  return best;
}

template <class Op, class Index, int V>
void launch_cols(const LaunchCtx& ctx, Backend& be, const Plan<2>& outer, int vdim, const Plan<1>& inner,
                 const typename Op::In* src, typename Op::Out* dst, int64_t n) {
  using Acc = typename Op::Acc;
  std::vector<int> rest, perm;
  for (int d = 0; d < outer.rank(); ++d)
    if (d != vdim) rest.push_back(d);
  perm = rest;
  perm.push_back(vdim);
  const Plan<2> other = sub_plan(outer, rest), ordered = sub_plan(outer, perm);
  const int64_t vlen = outer.shape[vdim], outputs = outer.numel, others = outputs / vlen;
  const unsigned bx = pow2_at_least(vlen / V, 64), by = kBlock / bx;
  const int64_t jblocks = (vlen / V + bx - 1) / bx, blocks = others * jblocks;
  constexpr auto kernel = reduce_cols_kernel<Op, Index, V>;
  // Each thread row of a piece gets at least 16 reduced elements.
  const unsigned splits = col_splits(blocks, resident_grid<kernel>(ctx, kBlock), n / (by * 16));
  const int64_t piece = (n + splits - 1) / splits;
  Scratch parts(be, splits > 1 ? outputs * splits * static_cast<int64_t>(sizeof(Acc)) : 0);
  ColArgs<Op, Index> a{make_meta<Index, 2>(other, 0),
                       make_meta<Index, 1>(inner, 0),
                       src,
                       dst,
                       static_cast<Acc*>(parts.get()),
                       static_cast<Index>(others),
                       static_cast<Index>(vlen),
                       static_cast<Index>(outer.strides[1][vdim]),
                       static_cast<Index>(jblocks),
                       static_cast<Index>(n),
                       static_cast<Index>(piece),
                       splits,
                       n};
  const dim3 grid(capped_grid(ctx, blocks), splits);
  gpu::launch<kernel>(ctx, grid, dim3(bx, by), 0, a);
  if (splits > 1) launch_merge<Op, Index>(ctx, a.parts, outputs, splits, 1, outputs, ordered, dst, n);
}

// The column kernel reads kColVec<In> outputs per thread (16 bytes, at most 4 accumulators) when
// the unit-stride dim, the pointer and every other src stride allow it.
template <class In>
inline constexpr int kColVec = sizeof(In) >= 16 ? 1 : std::min<int>(4, static_cast<int>(16 / sizeof(In)));

template <class Op, class Index>
void launch_cols_any(const LaunchCtx& ctx, Backend& be, const Plan<2>& outer, int vdim, const Plan<1>& inner,
                     const typename Op::In* src, typename Op::Out* dst, int64_t n) {
  constexpr int kV = kColVec<typename Op::In>;
  bool vec = kV > 1 && outer.shape[vdim] % kV == 0 && aligned_to(src, sizeof(Vec<typename Op::In, kV>));
  for (int d = 0; d < outer.rank(); ++d) vec = vec && (d == vdim || outer.strides[0][d] % kV == 0);
  for (int d = 0; d < inner.rank(); ++d) vec = vec && inner.strides[0][d] % kV == 0;
  if constexpr (kV > 1) {
    if (vec) return launch_cols<Op, Index, kV>(ctx, be, outer, vdim, inner, src, dst, n);
  }
  launch_cols<Op, Index, 1>(ctx, be, outer, vdim, inner, src, dst, n);
}

// The entry of one op: see Note [GPU reductions].
template <class Op>
void run_reduce(const LaunchCtx& ctx, Backend& be, const TensorArg& src, int n_reduced, const TensorArg& dst) {
  using Out = typename Op::Out;
  if (dst.numel() == 0) return;
  const size_t rank = src.layout.rank(), lead = rank - static_cast<size_t>(n_reduced);
  Shape oshape, ishape;
  Strides osrc, istride;
  for (size_t d = 0; d < rank; ++d) {
    (d < lead ? oshape : ishape).push_back(src.layout.dim(d));
    (d < lead ? osrc : istride).push_back(src.layout.stride(d));
  }
  const int64_t n = ishape.numel();
  if (n == 0) {  // sum / mean over nothing (the front end rejects the others)
    map<Out>(ctx, FillValue<Out>{Op::finish(Op::init(), 0)}, dst);
    return;
  }
  const Plan<2> outer = collapse<2>(oshape, {&osrc, &dst.layout.strides()});
  const Plan<1> inner = collapse<1>(ishape, {&istride});
  if (outer.rank() > kMaxDims || inner.rank() > kMaxDims) {
    Scratch in(be, src.numel() * dtype_size(src.dtype)), out(be, dst.numel() * dtype_size(dst.dtype));
    const TensorArg cin(in.get(), src.dtype, Layout(src.shape())), cout(out.get(), dst.dtype, Layout(dst.shape()));
    cast(ctx, src, cin);
    run_reduce<Op>(ctx, be, cin, n_reduced, cout);
    cast(ctx, cout, dst);
    return;
  }
  const bool contig = inner.rank() == 1 && inner.strides[0][0] == 1;
  int vdim = -1;
  if (!contig)
    for (int d = 0; d < outer.rank() && vdim < 0; ++d)
      if (outer.strides[0][d] == 1 && outer.shape[d] > 1) vdim = d;

  // Headroom for loop bounds (j + 3 * group). Pieces are split only when outputs are fewer than
  // target_blocks(), so outputs * splits stays below target_blocks() * 1024.
  const int64_t so = outer.max_offset(0), si = inner.max_offset(0), dm = outer.max_offset(1);
  const int64_t limit = INT32_MAX / 2;
  const bool fits = so >= 0 && si >= 0 && dm >= 0 && so + si < limit && dm < limit && n < limit &&
                    std::max(outer.numel, target_blocks(ctx) * 1024) < limit;
  const auto* in = src.ptr<typename Op::In>();
  Out* out = dst.ptr<Out>();
  if (vdim >= 0) {
    if (fits)
      launch_cols_any<Op, uint32_t>(ctx, be, outer, vdim, inner, in, out, n);
    else
      launch_cols_any<Op, int64_t>(ctx, be, outer, vdim, inner, in, out, n);
  } else {
    if (fits)
      launch_rows<Op, uint32_t>(ctx, be, outer, inner, contig, in, out, n);
    else
      launch_rows<Op, int64_t>(ctx, be, outer, inner, contig, in, out, n);
  }
}

}  // namespace wick::WICK_GPU_NS::kern
