// cumsum and sort on the CPU: over the last dim, any src/dst strides.
#include <algorithm>
#include <vector>

#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/dispatch.h"
#include "cpu/row_loop.h"

namespace wick::cpu {
namespace {

constexpr int64_t kScanW = 256;  // scan columns per task in the column-mode cumsum

// cumsum over a leading dim arrives as a view whose scan dim has a large stride and some kept
// dim has unit stride: walk the scan dim outermost and carry a strip of running sums, so that
// memory is read row by row.
template <class T>
bool cumsum_columns(const TensorArg& src, const TensorArg& dst) {
  using Acc = scan_acc_t<T>;
  const Shape& shape = src.shape();
  const size_t last = shape.size() - 1;
  if (src.layout.stride(last) == 1) return false;
  size_t v = last;
  for (size_t d = 0; d < last; ++d)
    if (src.layout.stride(d) == 1 && shape[d] > 1) v = d;
  if (v == last) return false;
  std::vector<int64_t> pshape, psrc, pdst;
  for (size_t d = 0; d < last; ++d)
    if (d != v) {
      pshape.push_back(shape[d]);
      psrc.push_back(src.layout.stride(d));
      pdst.push_back(dst.layout.stride(d));
    }
  const int64_t n = shape[last], vlen = shape[v], vdst = dst.layout.stride(v);
  const int64_t ss = src.layout.stride(last), ds = dst.layout.stride(last);
  const int64_t strips_per = (vlen + kScanW - 1) / kScanW;
  const int64_t strips = (src.numel() / (vlen * n)) * strips_per;
  const T* in = src.ptr<T>();
  T* out = dst.ptr<T>();
  parallel_for(strips, std::max<int64_t>(1, kGrain / (n * kScanW) + 1), [&](int64_t b, int64_t e) {
    Acc acc[kScanW];
    for (int64_t t = b; t < e; ++t) {
      int64_t p = t / strips_per, so = 0, dso = 0;
      const int64_t v0 = (t % strips_per) * kScanW, w = std::min(kScanW, vlen - v0);
      for (size_t d = pshape.size(); d-- > 0;) {
        so += (p % pshape[d]) * psrc[d];
        dso += (p % pshape[d]) * pdst[d];
        p /= pshape[d];
      }
      const T* s = in + so + v0;
      T* o = out + dso + v0 * vdst;
      for (int64_t j = 0; j < w; ++j) acc[j] = 0;
      for (int64_t k = 0; k < n; ++k) {
        for (int64_t j = 0; j < w; ++j) acc[j] += sum_load<Acc>(s[k * ss + j]);
        for (int64_t j = 0; j < w; ++j) o[k * ds + j * vdst] = sum_store<T>(acc[j]);
      }
    }
  });
  return true;
}

// Inclusive scan of one row. One running sum is a chain of dependent adds (4 cycles each in f64);
// long rows are cut into kSeg segments whose scans run interleaved, each starting from the exact
// (Acc) sum of the segments before it, so the adds of different segments overlap.
template <class T>
void scan_row(const T* in, int64_t ss, T* out, int64_t ds, int64_t n) {
  using Acc = scan_acc_t<T>;
  constexpr int kSeg = 8;
  // Segments a power-of-two apart would read and write lines of one cache set; 17 fewer elements
  // each keeps them apart (the rest goes to the tail loop).
  const int64_t len = n / kSeg - 17;
  // One running sum from `acc` over elements [b, n).
  const auto sequential = [&](int64_t b, Acc acc) {
    for (int64_t i = b; i < n; ++i) {
      acc += sum_load<Acc>(in[i * ss]);
      out[i * ds] = sum_store<T>(acc);
    }
  };
  if (len < 64) return sequential(0, Acc(0));
  Acc base[kSeg] = {};  // segment totals, then each segment's starting sum
  for (int64_t i = 0; i < len; ++i)
    for (int k = 0; k < kSeg; ++k) base[k] += sum_load<Acc>(in[(k * len + i) * ss]);
  Acc run = 0;
  for (int k = 0; k < kSeg; ++k) {
    const Acc t = base[k];
    base[k] = run;
    run += t;
  }
  for (int64_t i = 0; i < len; ++i)
    for (int k = 0; k < kSeg; ++k) {
      const int64_t j = k * len + i;
      base[k] += sum_load<Acc>(in[j * ss]);
      out[j * ds] = sum_store<T>(base[k]);
    }
  sequential(kSeg * len, run);  // the elements past the segments
}

template <class V>
struct Keyed {
  V key;
  int64_t index;
};

}  // namespace

void CpuBackend::cumsum(const TensorArg& src, const TensorArg& dst) {
  dispatch(src.dtype, [&]<class T>() {
    if (src.numel() == 0) return;
    if (cumsum_columns<T>(src, dst)) return;
    const int64_t n = src.layout.shape().back();
    const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
    const T* in = src.ptr<T>();
    T* out = dst.ptr<T>();
    for_each_last_dim_row<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()}, n,
                             [&](const std::array<int64_t, 2>& off) {
                               scan_row<T>(in + off[0], ss, out + off[1], ds, n);
                             });
  }, "cumsum");
}

void CpuBackend::sort(const TensorArg& src, const TensorArg& values, const TensorArg& indices, bool descending) {
  dispatch(src.dtype, [&]<class T>() {
    using V = cmp_t<T>;
    if (src.numel() == 0) return;
    const int64_t n = src.layout.shape().back();
    const int64_t ss = src.layout.strides().back(), is = indices.layout.strides().back();
    const bool want_values = values.data != nullptr;
    const T* in = src.ptr<T>();
    int64_t* idx = indices.ptr<int64_t>();
    T* val = want_values ? values.ptr<T>() : nullptr;
    const int64_t vs = want_values ? values.layout.strides().back() : 0;
    const Strides& vstr = want_values ? values.layout.strides() : indices.layout.strides();
    const int64_t log_n = 64 - __builtin_clzll(static_cast<unsigned long long>(n) | 1);
    for_each_last_dim_row<3>(src.shape(), {&src.layout.strides(), &indices.layout.strides(), &vstr}, n * log_n,
                             [&](const std::array<int64_t, 3>& off) {
      thread_local std::vector<Keyed<V>> row;
      row.resize(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) row[static_cast<size_t>(i)] = {static_cast<V>(in[off[0] + i * ss]), i};
      std::stable_sort(row.begin(), row.end(), [descending](const Keyed<V>& a, const Keyed<V>& b) {
        return sort_before(a.key, b.key, descending);
      });
      for (int64_t i = 0; i < n; ++i) idx[off[1] + i * is] = row[static_cast<size_t>(i)].index;
      if (want_values)
        for (int64_t i = 0; i < n; ++i) val[off[2] + i * vs] = in[off[0] + row[static_cast<size_t>(i)].index * ss];
    });
  }, "sort");
}

}  // namespace wick::cpu
