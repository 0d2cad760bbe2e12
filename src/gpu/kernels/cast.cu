// cast: any dtype to any dtype over any strided layouts; equal dtypes are a strided copy. Both take
// the tiled path of Note [Tiled transpose] for a transposed source; a copy that keeps a contiguous last
// dim moves it in wide units (Note [GPU wide copies]). copy_batch: cat's inputs in one launch (Note [GPU
// batched copies]).
#include <algorithm>
#include <span>
#include <vector>

#include "backend/dispatch.h"
#include "gpu/kernels/tile.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {
// A copy moves bits, so it instantiates per element size rather than per dtype.
template <class U>
struct Identity {
  __device__ U operator()(int64_t, U v) const { return v; }
};

// Note [GPU wide copies]
// A copy whose innermost dim is contiguous in dst and src but whose other dims do not collapse
// into it, a permute that keeps the last dim (attention's [B, T, H, D] -> [B, H, T, D]), would take
// the strided path at one element per thread, 2 bytes for bf16, each with its own index splits.
// Copies move bits, so such a copy moves 16, 8 or 4 bytes per thread instead, the widest unit
// that the run length, the other strides and both pointers allow (widen_inner). Two dims are the
// map's row path (Note [GPU row path]), already 16 bytes per thread; one is the flat path.

// The bytes of dst's and src's first elements.
struct CopyEnds {
  char* out;
  const char* in;
};
CopyEnds ends_of(const TensorArg& dst, const TensorArg& src) {
  const int64_t elem = dtype_size(src.dtype);
  return {static_cast<char*>(dst.data) + dst.layout.offset() * elem,
          static_cast<const char*>(src.data) + src.layout.offset() * elem};
}

// Rewrites p (dst, src) in units of `width` bytes, elements of `elem` bytes, where the pointers
// and widen_inner allow it; true, p unchanged, for width == elem.
bool in_units(Plan<2>& p, const CopyEnds& e, int64_t elem, int64_t width) {
  return width == elem || (aligned_to(e.out, width) && aligned_to(e.in, width) && widen_inner(p, width / elem, 0b11u));
}

// The widest unit (16, 8 or 4 bytes, else the element) that in_units allows for p. A unit that
// fits allows every narrower one, so a batch's unit is the narrowest of its pairs' widest.
int64_t widest_unit(const Plan<2>& p, const CopyEnds& e, int64_t elem) {
  for (const int64_t width : {16, 8, 4}) {
    if (width <= elem) break;
    Plan<2> w = p;
    if (in_units(w, e, elem, width)) return width;
  }
  return elem;
}

bool copy_wide(const LaunchCtx& ctx, const TensorArg& dst, const TensorArg& src) {
  Plan<2> p = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
  if (p.rank() < 3 || p.rank() > kMaxDims) return false;
  const int64_t elem = dtype_size(src.dtype);
  const CopyEnds e = ends_of(dst, src);
  const int64_t width = widest_unit(p, e, elem);
  if (width == elem) return false;
  in_units(p, e, elem, width);
  by_size<16>(width, [&]<class U>() {
    launch_strided_plan(ctx, Identity<U>{}, p, reinterpret_cast<U*>(e.out), reinterpret_cast<const U*>(e.in));
  });
  return true;
}

// Note [GPU batched copies]
// cat copies each input into its slice of the output. One launch per input costs the host a
// launch and the GPU a kernel's ramp-up and tail per input, most of the time where an input is
// small (the K / V cache grown by a token). copy_batch runs up to kBatchCopies pairs in one
// launch: pair k is a strided copy (its own Meta) over its own range of blocks, one unit per
// thread, every pair in the widest unit (16, 8 or 4 bytes, or the element) that all of them allow
// (Note [GPU wide copies]). Pairs whose plan needs 64-bit offsets or more than kMaxDims dims, and
// a batch of one, take cast's paths.
constexpr int kBatchCopies = 8;

struct BatchCopies {
  Meta<uint32_t, 2> m[kBatchCopies];
  char* dst[kBatchCopies];
  const char* src[kBatchCopies];
  uint32_t n[kBatchCopies];          // units of pair k
  uint32_t first[kBatchCopies + 1];  // pair k's blocks: [first[k], first[k + 1])
  int count;
};

template <class U>
__global__ void __launch_bounds__(kBlock) copy_batch_kernel(BatchCopies b) {
  // Pair k's fields are read at constant indices (no local copy of the parameters).
#pragma unroll
  for (int k = 0; k < kBatchCopies; ++k) {
    if (k >= b.count || blockIdx.x < b.first[k] || blockIdx.x >= b.first[k + 1]) continue;
    U* const out = reinterpret_cast<U*>(b.dst[k]);
    const U* const in = reinterpret_cast<const U*>(b.src[k]);
    const uint32_t i = (blockIdx.x - b.first[k]) * blockDim.x + threadIdx.x;
    if (i < b.n[k]) {
      uint32_t off[2];
      offsets_of(b.m[k], i, off);
      out[off[0]] = in[off[1]];
    }
  }
}

struct CopyPair {
  Plan<2> plan;
  CopyEnds ends;
  size_t index;  // in copy_batch's arguments
};

// Pairs [0, count) of `pairs` in one launch, in the widest unit they all allow.
void launch_batch(const LaunchCtx& ctx, std::span<const CopyPair> pairs, int64_t elem) {
  int64_t width = 16;
  for (const CopyPair& c : pairs) width = std::min(width, widest_unit(c.plan, c.ends, elem));
  BatchCopies b{};
  b.count = static_cast<int>(pairs.size());
  for (int k = 0; k < b.count; ++k) {
    Plan<2> p = pairs[k].plan;
    in_units(p, pairs[k].ends, elem, width);
    b.m[k] = make_meta<uint32_t, 2>(p, 0);
    b.dst[k] = pairs[k].ends.out;
    b.src[k] = pairs[k].ends.in;
    b.n[k] = static_cast<uint32_t>(p.numel);
    b.first[k + 1] = b.first[k] + static_cast<uint32_t>((p.numel + kBlock - 1) / kBlock);
  }
  by_size<16>(width, [&]<class U>() { gpu::launch<copy_batch_kernel<U>>(ctx, b.first[b.count], kBlock, 0, b); });
}

}  // namespace

void cast(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  if (src.dtype == dst.dtype) {
    if (copy_wide(ctx, dst, src)) return;
    return by_size(dtype_size(src.dtype), [&]<class U>() { map_tiled<U, U>(ctx, Identity<U>{}, dst, src); });
  }
  // The conversions are split over two files by source dtype so that they compile in parallel.
  if (is_int(src.dtype))
    cast_from_int(ctx, src, dst);
  else
    cast_from_float(ctx, src, dst);
}

void copy_batch(const LaunchCtx& ctx, std::span<const TensorArg> srcs, std::span<const TensorArg> dsts) {
  // The pairs one launch can take, by element size (cat's are all of one dtype).
  std::vector<CopyPair> pairs;
  const int64_t elem = srcs.empty() ? 0 : dtype_size(srcs[0].dtype);
  for (size_t i = 0; i < srcs.size(); ++i) {
    const TensorArg &src = srcs[i], &dst = dsts[i];
    if (src.numel() == 0) continue;
    Plan<2> p = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
    if (src.dtype == dst.dtype && dtype_size(src.dtype) == elem && p.rank() <= kMaxDims && p.fits_32bit())
      pairs.push_back({std::move(p), ends_of(dst, src), i});
    else
      cast(ctx, src, dst);
  }
  for (size_t i = 0; i < pairs.size(); i += kBatchCopies) {
    const size_t count = std::min<size_t>(kBatchCopies, pairs.size() - i);
    if (count == 1)
      cast(ctx, srcs[pairs[i].index], dsts[pairs[i].index]);
    else
      launch_batch(ctx, std::span<const CopyPair>(pairs).subspan(i, count), elem);
  }
}

}  // namespace wick::WICK_GPU_NS::kern
