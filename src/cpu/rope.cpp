// Rotary position embeddings on the CPU. x [..., T, D] is walked in groups of up to 16 rows (a row
// is the D values of one position) by for_each_last_dim_rows, with cos and sin as operands of
// stride 0 on every leading dim but T, so any strides cost the same. A group's rows of x, cosines
// and sines are widened into buffers of the compute type (one call of simd.h's conversions where
// the group's rows lie end to end, else one a row), rotated in a loop the compiler vectorises and
// rounded back once, rather than converted element by element inside the rotation.
#include <algorithm>
#include <array>
#include <vector>

#include "backend/conv_math.h"
#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/row_loop.h"

namespace wick::cpu {

namespace {

template <class T>
void rope_typed(const TensorArg& x, const TensorArg& cs, const TensorArg& sn, const TensorArg& dst, bool interleaved) {
  using A = compute_t<T>;
  const size_t rank = x.shape().size();
  const int64_t d = x.shape()[rank - 1], half = d / 2;
  if (x.numel() == 0 || half == 0) return;
  const int64_t xd = x.layout.stride(rank - 1), yd = dst.layout.stride(rank - 1);
  const Strides cst = rope_table_strides(cs, rank), sst = rope_table_strides(sn, rank);
  const int64_t ci = cst[rank - 1], si = sst[rank - 1];
  const T* xp = x.ptr<T>();
  const T* cp = cs.ptr<T>();
  const T* sp = sn.ptr<T>();
  T* yp = dst.ptr<T>();
  // A work of 4 a value (4 reads, 2 products, 2 conversions a pair), as the norms count theirs;
  // groups of as many rows as make up to kGrain values (at least one), so that a thread's buffers
  // stay near 3 * kGrain values unless one row is longer.
  const int64_t group = std::clamp<int64_t>(kGrain / d, 1, kMaxRowGroup);
  for_each_last_dim_rows<4>(x.shape(), {&dst.layout.strides(), &x.layout.strides(), &cst, &sst}, 4 * d, group,
                            [&](const std::array<int64_t, 4>* o, int64_t g) {
                              thread_local std::vector<A> buf;  // g rows of x, then of cos, of sin, of the result
                              buf.resize(static_cast<size_t>(g * (2 * d + 2 * half)));
                              A *xb = buf.data(), *cb = xb + g * d, *sb = cb + g * half, *yb = sb + g * half;
                              load_rows(xp, o, g, 1, xd, d, xb);
                              load_rows(cp, o, g, 2, ci, half, cb);
                              load_rows(sp, o, g, 3, si, half, sb);
                              for (int64_t j = 0; j < g; ++j) {
                                const A *xr = xb + j * d, *c = cb + j * half, *s = sb + j * half;
                                A* yr = yb + j * d;
                                if (interleaved) {
                                  for (int64_t i = 0; i < half; ++i)
                                    convmath::rope_rotate<A>(xr[2 * i], xr[2 * i + 1], c[i], s[i], &yr[2 * i],
                                                             &yr[2 * i + 1]);
                                } else {
                                  for (int64_t i = 0; i < half; ++i)
                                    convmath::rope_rotate<A>(xr[i], xr[half + i], c[i], s[i], &yr[i], &yr[half + i]);
                                }
                              }
                              store_rows(yb, yp, o, g, 0, yd, d);
                            });
}

}  // namespace

void CpuBackend::rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst,
                      bool interleaved) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { rope_typed<T>(x, cos, sin, dst, interleaved); }, interleaved ? "rope_i" : "rope");
}

}  // namespace wick::cpu
