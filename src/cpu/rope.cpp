// Rotary position embeddings on the CPU. x [..., T, D] is walked row by row (a row is the D
// values of one position); rows are split across threads, and each thread advances a
// multi-index over the leading dims instead of dividing per row, so any strides cost the same.
#include <algorithm>
#include <vector>

#include "backend/conv_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/dispatch.h"
#include "cpu/parallel.h"

namespace wick::cpu {

namespace {

template <class T>
void rope_typed(const TensorArg& x, const TensorArg& cs, const TensorArg& sn, const TensorArg& dst, bool interleaved) {
  using A = compute_t<T>;
  const size_t rank = x.shape().size();
  const size_t lead = rank - 1;  // dims before D; the last of them is T
  const int64_t d = x.shape()[rank - 1], half = d / 2;
  const int64_t rows = x.numel() / std::max<int64_t>(d, 1);
  const Strides& xs = x.layout.strides();
  const Strides& ys = dst.layout.strides();
  const int64_t xd = xs[rank - 1], yd = ys[rank - 1];
  const int64_t ct = cs.layout.stride(0), ci = cs.layout.stride(1);
  const int64_t st = sn.layout.stride(0), si = sn.layout.stride(1);
  // Element distance between the two members of a pair, and between consecutive pairs.
  const int64_t x_pair = interleaved ? xd : half * xd, x_step = interleaved ? 2 * xd : xd;
  const int64_t y_pair = interleaved ? yd : half * yd, y_step = interleaved ? 2 * yd : yd;
  const T* xp = x.ptr<T>();
  const T* cp = cs.ptr<T>();
  const T* sp = sn.ptr<T>();
  T* yp = dst.ptr<T>();
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(d, 1)), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(lead, 0);
    int64_t r = begin, xo = 0, yo = 0;
    for (size_t k = lead; k-- > 0;) {
      idx[k] = r % x.shape()[k];
      r /= x.shape()[k];
      xo += idx[k] * xs[k];
      yo += idx[k] * ys[k];
    }
    for (int64_t row = begin; row < end; ++row) {
      const int64_t t = idx[lead - 1];
      const T* xr = xp + xo;
      T* yr = yp + yo;
      const T* cr = cp + t * ct;
      const T* sr = sp + t * st;
      for (int64_t i = 0; i < half; ++i) {
        A oa, ob;
        convmath::rope_rotate<A>(convert<A>(xr[i * x_step]), convert<A>(xr[i * x_step + x_pair]),
                                 convert<A>(cr[i * ci]), convert<A>(sr[i * si]), &oa, &ob);
        yr[i * y_step] = convert<T>(oa);
        yr[i * y_step + y_pair] = convert<T>(ob);
      }
      for (size_t k = lead; k-- > 0;) {  // next row
        ++idx[k];
        xo += xs[k];
        yo += ys[k];
        if (idx[k] < x.shape()[k]) break;
        xo -= idx[k] * xs[k];
        yo -= idx[k] * ys[k];
        idx[k] = 0;
      }
    }
  });
}

}  // namespace

void CpuBackend::rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst,
                      bool interleaved) {
  dispatch_in<kFloatTypes>(
      x.dtype, [&]<class T>() { rope_typed<T>(x, cos, sin, dst, interleaved); }, interleaved ? "rope_i" : "rope");
}

}  // namespace wick::cpu
