// The tiled path of a one-input map: a transposed copy (x.t().contiguous()), a batched transpose,
// or a cast of either. map_tiled<Out, In>(ctx, f, dst, src) takes it when it applies and falls
// back to map otherwise. Included only by the kernel translation units.
//
// Note [Tiled transpose]
// After collapsing (Note [GPU launch plans]), let a be the innermost dim (the output's stride 1)
// and b the innermost other dim where the input has stride 1. The strided path has neighbouring
// threads read the input s_a elements apart, each load pulling its own 32-byte sector for one
// element. Here a block moves a kTile x kTile tile of the (b, a) plane through shared memory,
// reading along b and writing along a, so both sides are coalesced; the other dims are a batch
// (a Meta, innermost first). Rows of the shared tile are padded to an odd number of 32-bit words,
// so the write phase's column walk touches 32 different banks (8-byte elements: two half-warp
// phases over 16 even banks each). Taken when the output is contiguous (f receives the output
// offset as the flat index), the input's innermost stride is neither 1 nor 0 (a broadcast is
// served from cache), a and b both span at least kMinTileExtent (below that most of a tile's
// threads idle), and the dims other than a and b fit a Meta.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "gpu/kernels/map.cuh"

namespace wick::WICK_GPU_NS::kern {

inline constexpr int kTileThreadsX = 32;                      // threads along the tile's rows
inline constexpr int kTileThreadsY = kBlock / kTileThreadsX;  // 8
inline constexpr int64_t kMinTileExtent = 16;

// 64 x 64 tiles keep 16 loads in flight per thread (enough bytes in flight per SM to cover the
// memory latency, even for 1-byte elements); 8-byte elements use 32 x 32 to keep the shared tile
// at 8.4 KB.
template <class Out, class In>
constexpr int tile_size() {
  return sizeof(Out) == 8 || sizeof(In) == 8 ? 32 : 64;
}

// Elements per row of the shared tile: kTile plus one 32-bit word (one element for 4 and 8 bytes).
template <class T, int kTile>
constexpr int tile_pitch() {
  return kTile + (sizeof(T) < 4 ? static_cast<int>(4 / sizeof(T)) : 1);
}

template <class Index>
struct TileMeta {
  Meta<Index, 2> batch;  // the dims other than a and b: {output, input} strides
  Index size_a, size_b;
  Index in_stride_a;   // input stride along a (the output's stride there is 1)
  Index out_stride_b;  // output stride along b (the input's stride there is 1)
  int64_t tiles_a, tiles_b, tiles;
};

// fn(r, c) for the tile positions of this thread: columns c = tx + 32 j (neighbouring threads on
// neighbouring columns), rows r = ty + 8 i.
template <int kTile, class Fn>
__device__ __forceinline__ void for_tile(const Fn& fn) {
  const int tx = static_cast<int>(threadIdx.x) % kTileThreadsX;
  const int ty = static_cast<int>(threadIdx.x) / kTileThreadsX;
#pragma unroll
  for (int i = 0; i < kTile / kTileThreadsY; ++i)
#pragma unroll
    for (int j = 0; j < kTile / kTileThreadsX; ++j) fn(ty + i * kTileThreadsY, tx + j * kTileThreadsX);
}

template <class Index, int kTile, class F, class Out, class In>
__global__ void __launch_bounds__(kBlock) map_tiled_kernel(F f, TileMeta<Index> m, Out* out, const In* in) {
  constexpr int kPitch = tile_pitch<Out, kTile>();
  // Unsigned words of Out's size: the 16- and 8-bit float types have default member initialisers,
  // which a __shared__ variable may not run.
  using Raw = std::conditional_t<
      sizeof(Out) == 8, uint64_t,
      std::conditional_t<sizeof(Out) == 4, uint32_t, std::conditional_t<sizeof(Out) == 2, uint16_t, uint8_t>>>;
  static_assert(sizeof(Raw) == sizeof(Out) && alignof(Raw) >= alignof(Out));
  __shared__ Raw raw[kTile * kPitch];
  Out* const tile = reinterpret_cast<Out*>(raw);
  for (int64_t t = blockIdx.x; t < m.tiles; t += gridDim.x) {
    const int64_t rest = t / m.tiles_a;
    const Index a0 = static_cast<Index>((t - rest * m.tiles_a) * kTile);
    const Index b0 = static_cast<Index>((rest % m.tiles_b) * kTile);
    Index base[2];
    offsets_of(m.batch, static_cast<Index>(rest / m.tiles_b), base);
    // Read along b (input stride 1): thread column c is b = b0 + c; tile row r holds a = a0 + r.
    for_tile<kTile>([&](int r, int c) {
      const Index a = a0 + r, b = b0 + c;
      if (a < m.size_a && b < m.size_b)
        tile[r * kPitch + c] =
            f(static_cast<int64_t>(base[0] + b * m.out_stride_b + a), in[base[1] + b + a * m.in_stride_a]);
    });
    __syncthreads();
    // Write along a (output stride 1): thread column c is a = a0 + c, read down tile column c.
    for_tile<kTile>([&](int r, int c) {
      const Index a = a0 + c, b = b0 + r;
      if (a < m.size_a && b < m.size_b) out[base[0] + b * m.out_stride_b + a] = tile[c * kPitch + r];
    });
    __syncthreads();  // the next tile overwrites the shared one
  }
}

// Dims a and b of the Note for p, or false when the tiled path does not apply.
inline bool tiled_dims(const Plan<2>& p, int* a, int* b) {
  const int rank = p.rank();
  if (rank < 2 || rank > kMaxDims + 2) return false;
  int64_t expect = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (p.strides[0][d] != expect) return false;  // the output is not contiguous
    expect *= p.shape[d];
  }
  *a = rank - 1;
  const int64_t sa = p.strides[1][*a];
  if (sa == 1 || sa == 0) return false;
  for (int d = rank - 2; d >= 0; --d)
    if (p.strides[1][d] == 1) {
      *b = d;
      return p.shape[*a] >= kMinTileExtent && p.shape[*b] >= kMinTileExtent;
    }
  return false;
}

template <class Index, class F, class Out, class In>
void launch_tiled(const LaunchCtx& ctx, const F& f, const Plan<2>& p, int a, int b, Out* out, const In* in) {
  constexpr int kTile = tile_size<Out, In>();
  TileMeta<Index> m{};
  int64_t batch = 1;
  for (int d = p.rank() - 1; d >= 0; --d) {
    if (d == a || d == b) continue;
    const int k = m.batch.rank++;
    m.batch.shape[k] = static_cast<Index>(p.shape[d]);
    m.batch.stride[k][0] = static_cast<Index>(p.strides[0][d]);
    m.batch.stride[k][1] = static_cast<Index>(p.strides[1][d]);
    batch *= p.shape[d];
  }
  m.size_a = static_cast<Index>(p.shape[a]);
  m.size_b = static_cast<Index>(p.shape[b]);
  m.in_stride_a = static_cast<Index>(p.strides[1][a]);
  m.out_stride_b = static_cast<Index>(p.strides[0][b]);
  m.tiles_a = (p.shape[a] + kTile - 1) / kTile;
  m.tiles_b = (p.shape[b] + kTile - 1) / kTile;
  m.tiles = m.tiles_a * m.tiles_b * batch;
  // One tile per block, so the hardware balances the blocks over the SMs (a capped grid with the
  // tile loop would leave a tail when the cap is not a multiple of the resident blocks); the loop
  // only serves grids past the launch limit.
  const auto grid = static_cast<unsigned>(std::min<int64_t>(m.tiles, INT32_MAX));
  gpu::launch<map_tiled_kernel<Index, kTile, F, Out, In>>(ctx, grid, kBlock, 0, f, m, out, in);
}

template <class Out, class In, class F>
void map_tiled(const LaunchCtx& ctx, const F& f, const TensorArg& dst, const TensorArg& src) {
  if (dst.numel() > 0) {
    const Plan<2> p = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
    int a = 0, b = 0;
    if (tiled_dims(p, &a, &b)) {
      if (p.fits_32bit())
        launch_tiled<uint32_t>(ctx, f, p, a, b, dst.template ptr<Out>(), src.template ptr<In>());
      else
        launch_tiled<int64_t>(ctx, f, p, a, b, dst.template ptr<Out>(), src.template ptr<In>());
      return;
    }
  }
  map<Out, In>(ctx, f, dst, src);
}

}  // namespace wick::WICK_GPU_NS::kern
