// cast: any dtype to any dtype over any strided layouts; equal dtypes are a strided copy. Both take
// the tiled path of Note [Tiled transpose] for a transposed source.
#include "cpu/dispatch.h"
#include "gpu/kernels/tile.cuh"

namespace wick::WICK_GPU_NS::kern {

namespace {
// A copy moves bits, so it instantiates per element size rather than per dtype.
template <class U>
struct Identity {
  __device__ U operator()(int64_t, U v) const { return v; }
};
}  // namespace

void cast(const LaunchCtx& ctx, const TensorArg& src, const TensorArg& dst) {
  if (src.dtype == dst.dtype) {
    switch (dtype_size(src.dtype)) {
      case 1:
        return map_tiled<uint8_t, uint8_t>(ctx, Identity<uint8_t>{}, dst, src);
      case 2:
        return map_tiled<uint16_t, uint16_t>(ctx, Identity<uint16_t>{}, dst, src);
      case 4:
        return map_tiled<uint32_t, uint32_t>(ctx, Identity<uint32_t>{}, dst, src);
      default:
        return map_tiled<uint64_t, uint64_t>(ctx, Identity<uint64_t>{}, dst, src);
    }
  }
  // The conversions are split over two files by source dtype so that they compile in parallel.
  if (is_int(src.dtype))
    cast_from_int(ctx, src, dst);
  else
    cast_from_float(ctx, src, dst);
}

}  // namespace wick::WICK_GPU_NS::kern
