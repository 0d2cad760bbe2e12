// softmax and log_softmax on the GPU (Note [GPU row normalisation] in norm.cuh).
//
// Note [GPU split softmax]
// Few long rows (logits over a vocabulary: [1, 128256], [64, 128256]) would get one block per row
// from run_lastdim, leaving most multiprocessors idle, and rows too long to hold on chip would take
// the streamed loop, whose threads wait on each load in turn. Such rows are cut into `splits`
// chunks, a block each, in two kernels: the first reduces its chunk to a softmax state (max m, sum
// of exp(x - m)) in scratch; the second merges its row's states, in the same fixed order in every
// block of the row, and writes exp(x - m) / s (or x - m - log s) over its chunk. A thread loads
// kSplitVecs vectors before it uses any, and folds each batch into its state with one rescale
// rather than one per element. The second kernel's read of a chunk is served by L2 where the rows
// fit. A NaN, a +inf or a row of only -inf gives a row of NaN, as in the held and streamed ways
// (SoftmaxState::merge).
#include <cmath>
#include <limits>

#include "backend/dispatch.h"
#include "gpu/kernels/norm.cuh"
#include "gpu/kernels/scratch.h"

namespace wick::WICK_GPU_NS::kern {
namespace {

constexpr int kSplitThreads = 256;
constexpr int kSplitVecs = 4;                                         // vectors a thread loads before it uses them
constexpr int64_t kSplitMinRow = 16384;                               // shorter rows are not split
constexpr int64_t kMaxSplits = kSplitThreads;                         // one state per thread of the merging block
constexpr int64_t kSplitBatch = int64_t{kSplitThreads} * kSplitVecs;  // vectors of a block's load batch

// Block `blk`'s chunk (chunk blk % splits of row blk / splits): the row in src and dst, and the
// chunk's vectors [c0, c1).
template <class T>
struct Chunk {
  const T* x;
  T* y;
  int64_t c0, c1;
};

template <class T, class Index>
__device__ __forceinline__ Chunk<T> chunk_of(const RowArgsN<T, Index>& a, int64_t blk, unsigned splits, int64_t chunk,
                                             int64_t nv) {
  Index off[2];
  offsets_of(a.outer, static_cast<Index>(blk / splits), off);
  const int64_t c0 = (blk % splits) * chunk;
  return {a.src + off[0], a.dst + off[1], c0, c0 + chunk < nv ? c0 + chunk : nv};
}

// Vectors base + u * kSplitThreads (u < kSplitVecs) of the chunk into v, all loads in flight
// together; those past the chunk's end are left alone (live() says which are in it).
template <int V, class T, class C>
__device__ __forceinline__ void load_batch(const Chunk<T>& ch, int64_t ss, int64_t base, C (&v)[kSplitVecs][V]) {
#pragma unroll
  for (int u = 0; u < kSplitVecs; ++u) {
    const int64_t j = base + u * kSplitThreads;
    if (j >= ch.c1) continue;
    if constexpr (V == 1) {
      v[u][0] = static_cast<C>(ch.x[j * ss]);
    } else {
      const Vec<T, V> t = reinterpret_cast<const Vec<T, V>*>(ch.x)[j];
#pragma unroll
      for (int e = 0; e < V; ++e) v[u][e] = static_cast<C>(t.v[e]);
    }
  }
}

template <class T>
__device__ __forceinline__ bool live(const Chunk<T>& ch, int64_t base, int u) {
  return base + u * kSplitThreads < ch.c1;
}

template <class T, class Index, int V>
__global__ void __launch_bounds__(kSplitThreads)
    softmax_part_kernel(RowArgsN<T, Index> a, unsigned splits, int64_t chunk, SoftmaxState<compute_t<T>>* part) {
  using C = compute_t<T>;
  using S = SoftmaxState<C>;
  __shared__ S smem[kMaxWarpsPerBlock];
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  const Chunk<T> ch = chunk_of(a, blockIdx.x, splits, chunk, static_cast<int64_t>(a.n) / V);
  S st{kNegInf, C(0)};
  for (int64_t base = ch.c0 + threadIdx.x; base < ch.c1; base += int64_t{kSplitVecs} * kSplitThreads) {
    C v[kSplitVecs][V];
    load_batch<V>(ch, a.ss, base, v);
    C m = kNegInf;
#pragma unroll
    for (int u = 0; u < kSplitVecs; ++u)
      if (live(ch, base, u))
#pragma unroll
        for (int e = 0; e < V; ++e) m = minmax_step<true>(m, v[u][e]);
    if (m == kNegInf) continue;  // only -inf so far in this batch: nothing to add
    C s = 0;
#pragma unroll
    for (int u = 0; u < kSplitVecs; ++u)
      if (live(ch, base, u))
#pragma unroll
        for (int e = 0; e < V; ++e) s += std::exp(v[u][e] - m);
    st = S::merge(st, S{m, s});
  }
  st = group_allreduce<S>(st, kSplitThreads, smem);
  if (threadIdx.x == 0) part[blockIdx.x] = st;
}

template <class T, class Index, int V>
__global__ void __launch_bounds__(kSplitThreads)
    softmax_write_kernel(RowArgsN<T, Index> a, unsigned splits, int64_t chunk, const SoftmaxState<compute_t<T>>* part,
                         bool log) {
  using C = compute_t<T>;
  using S = SoftmaxState<C>;
  __shared__ S smem[kMaxWarpsPerBlock];
  const Chunk<T> ch = chunk_of(a, blockIdx.x, splits, chunk, static_cast<int64_t>(a.n) / V);
  const int64_t first = blockIdx.x - blockIdx.x % splits;  // the row's first state
  S st = threadIdx.x < splits ? part[first + threadIdx.x] : S{-std::numeric_limits<C>::infinity(), C(0)};
  st = group_allreduce<S>(st, kSplitThreads, smem);
  const C lse = std::log(st.s), inv = C(1) / st.s;  // a multiply per element, as in row_held
  for (int64_t base = ch.c0 + threadIdx.x; base < ch.c1; base += int64_t{kSplitVecs} * kSplitThreads) {
    C v[kSplitVecs][V];
    load_batch<V>(ch, a.ss, base, v);
#pragma unroll
    for (int u = 0; u < kSplitVecs; ++u) {
      if (!live(ch, base, u)) continue;
      const int64_t j = base + u * kSplitThreads;
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const C d = v[u][e] - st.m;
        v[u][e] = log ? d - lse : std::exp(d) * inv;
      }
      const Vec<T, V> t = vec_of<T>(v[u]);
      if constexpr (V == 1)
        ch.y[j * a.ds] = t.v[0];
      else
        reinterpret_cast<Vec<T, V>*>(ch.y)[j] = t;
    }
  }
}

// Chunks per row for the split way (Note [GPU split softmax]), or 1 when the rows are not split:
// as many blocks as the first kernel keeps resident on the device at once, chunks of whole load
// batches (kSplitVecs vectors a thread): more, shorter chunks in flight together rather than
// fewer chunks whose batches run one after another.
template <class T>
int64_t softmax_splits(const LaunchCtx& ctx, int64_t rows, const LastDimRows& L) {
  const int64_t sms = std::max(ctx.multiprocessors, 1);
  const bool streamed = row_shape<T>(ctx, L.n, L.vec).path == RowPath::Streamed;
  if (L.n < kSplitMinRow || (rows >= sms && !streamed)) return 1;
  const int64_t v = L.vec ? kRowVec<T> : 1;
  const int64_t most = std::min(kMaxSplits, (L.n / v + kSplitBatch - 1) / kSplitBatch);
  const int64_t fill = resident_grid<softmax_part_kernel<T, uint32_t, kRowVec<T>>>(ctx, kSplitThreads) / rows;
  const int64_t splits = std::max<int64_t>(std::min(fill, most), streamed ? 2 : 1);
  return rows * splits <= INT32_MAX ? splits : 1;  // one block per chunk in a 1-d grid
}

template <class T>
void split_softmax(const LaunchCtx& ctx, Backend& be, const TensorArg& src, const TensorArg& dst, const LastDimRows& L,
                   int64_t splits, bool log) {
  using S = SoftmaxState<compute_t<T>>;
  for_each_lastdim_launch<T>(L, src, dst, 0, [&]<class Index>(const RowArgsN<T, Index>& a) {
    const auto run = [&]<int V>() {
      const int64_t nv = L.n / V, chunk = piece_length(nv, kSplitBatch, splits), chunks = (nv + chunk - 1) / chunk;
      const int64_t blocks = static_cast<int64_t>(a.rows) * chunks;
      Scratch states(be, blocks * static_cast<int64_t>(sizeof(S)));
      S* part = static_cast<S*>(states.get());
      const auto s = static_cast<unsigned>(chunks);
      gpu::launch<softmax_part_kernel<T, Index, V>>(ctx, static_cast<unsigned>(blocks), kSplitThreads, 0, a, s, chunk,
                                                    part);
      gpu::launch<softmax_write_kernel<T, Index, V>>(ctx, static_cast<unsigned>(blocks), kSplitThreads, 0, a, s, chunk,
                                                     part, log);
    };
    if (L.vec)
      run.template operator()<kRowVec<T>>();
    else
      run.template operator()<1>();
  });
}

}  // namespace

void softmax(const LaunchCtx& base, const TensorArg& src, const TensorArg& dst, bool log) {
  const LaunchCtx ctx = base.with_op(log ? "log_softmax" : "softmax");
  Backend& be = backend_of(ctx);
  wick::dispatch_in<kFloatTypes>(
      src.dtype,
      [&]<class T>() {
        if (src.numel() == 0) return;
        const LastDimRows L = lastdim_rows<T>(src, dst);
        const int64_t splits = softmax_splits<T>(ctx, src.numel() / L.n, L);
        if (splits > 1) return split_softmax<T>(ctx, be, src, dst, L, splits, log);
        NormParams<T> p;
        p.log = log;
        run_lastdim<RowOp::Softmax, T>(ctx, L, src, dst, p);
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
