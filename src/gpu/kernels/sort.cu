// sort and argsort on the GPU, over the last dim, any src / values / indices strides: the launcher,
// which picks one of three sorts for each slice of rows, all giving the CPU's stable order (Note
// [GPU sort keys] in sort.cuh): the one-block radix sort (sort_radix.cu), the long-row radix sort
// (sort_long.cu) or the bitonic sort (sort_bitonic.cu), which takes every row the others leave.
#include <algorithm>
#include <array>
#include <cstdint>

#include "backend/dispatch.h"
#include "gpu/kernels/rows.cuh"
#include "gpu/kernels/sort.cuh"

namespace wick::WICK_GPU_NS::kern {

void sort(const LaunchCtx& base, const TensorArg& src, const TensorArg& values, const TensorArg& indices,
          bool descending) {
  const LaunchCtx ctx = base.with_op(values.data ? "sort" : "argsort");
  Backend& be = backend_of(ctx);
  if (src.numel() == 0) return;
  const bool want_values = values.data != nullptr;
  const TensorArg& vt = want_values ? values : indices;  // argsort: a stand-in with the right shape
  const int64_t n = src.shape().back();
  wick::dispatch(
      src.dtype,
      [&]<class T>() {
        auto slice = [&](const RowMeta<3>& m, int64_t rows, const std::array<int64_t, 3>& base) {
          SortArgs<T> a{m,
                        rows,
                        n,
                        src.ptr<T>() + base[0],
                        src.layout.strides().back(),
                        indices.ptr<int64_t>() + base[1],
                        indices.layout.strides().back(),
                        want_values ? values.ptr<T>() + base[2] : nullptr,
                        vt.layout.strides().back(),
                        descending};
          // One row per block leaves most of the GPU idle when rows are few (Note [GPU long-row
          // radix sort]).
          const bool few = rows <= std::min<int64_t>(kLongFewRows, ctx.multiprocessors) && n >= kLongFewRowsMin;
          if (!few && radix_sort_rows(ctx, a)) return;
          if (n > tile_len<sort_key_t<T>, uint32_t>() && long_radix_sort(ctx, be, a)) return;
          // Positions of the padded row (Note [GPU sort keys]) in 32 bits when they fit.
          if (log2_ceil(n) <= 32)
            sort_slice<T, uint32_t>(ctx, be, a);
          else
            sort_slice<T, uint64_t>(ctx, be, a);
        };
        for_each_row_slice<3>(src.shape(), {&src.layout.strides(), &indices.layout.strides(), &vt.layout.strides()},
                              slice);
      },
      ctx.op);
}

}  // namespace wick::WICK_GPU_NS::kern
