// cumsum on the CPU (CpuBackend::cumsum): over the last dim, any src / dst strides; a scan over a
// leading dim walks it outermost (cumsum_columns), few long rows are cut into chunks scanned in
// parallel (Note [Parallel cumsum]), other rows go one per task.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "backend/dispatch.h"
#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
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

// Inclusive scan of a run of n elements (a row, or a chunk of one: Note [Parallel cumsum]). One
// running sum is a chain of dependent adds (4 cycles each in f64); runs are cut into kSeg segments
// whose scans run interleaved, each starting from the exact (Acc) sum of the segments before it, so
// the adds of different segments overlap. totals() reads the run once for the segments' sums;
// scan() reads it again and writes it.
template <class T>
struct RunScan {
  using Acc = scan_acc_t<T>;
  static constexpr int kSeg = 8;
  const T* in;
  int64_t ss, n;
  // Segments a power-of-two apart would read and write lines of one cache set; 17 fewer elements
  // each keeps them apart (the rest goes to the tail). Below 64, the run is one sequential tail.
  int64_t len = n / kSeg - 17;
  Acc base[kSeg] = {};  // the segments' totals

  bool segmented() const { return len >= 64; }

  // (The loops run on local copies of base: a member array may alias an integer row, which would
  // keep the sums in memory, next to other threads' runs.)
  void totals() {
    if (!segmented()) return;
    Acc b[kSeg] = {};
    for (int64_t i = 0; i < len; ++i)
      for (int k = 0; k < kSeg; ++k) b[k] += sum_load<Acc>(in[(k * len + i) * ss]);
    std::copy(b, b + kSeg, base);
  }

  // The run's sum after totals(): the segments' totals in order, then the tail's elements.
  Acc total() const {
    Acc run = 0;
    const int64_t tail = segmented() ? kSeg * len : 0;
    if (segmented())
      for (int k = 0; k < kSeg; ++k) run += base[k];
    for (int64_t i = tail; i < n; ++i) run += sum_load<Acc>(in[i * ss]);
    return run;
  }

  // After totals(): out[i * ds] = start + the first i + 1 elements.
  void scan(T* out, int64_t ds, Acc start) const {
    Acc run = start;
    int64_t i = 0;
    if (segmented()) {
      Acc b[kSeg];
      for (int k = 0; k < kSeg; ++k) {
        b[k] = run;
        run += base[k];
      }
      for (; i < len; ++i)
        for (int k = 0; k < kSeg; ++k) {
          const int64_t j = k * len + i;
          b[k] += sum_load<Acc>(in[j * ss]);
          out[j * ds] = sum_store<T>(b[k]);
        }
      i = kSeg * len;
    }
    for (; i < n; ++i) {  // one running sum over the elements past the segments
      run += sum_load<Acc>(in[i * ss]);
      out[i * ds] = sum_store<T>(run);
    }
  }
};

// Inclusive scan of one row.
template <class T>
void scan_row(const T* in, int64_t ss, T* out, int64_t ds, int64_t n) {
  RunScan<T> r{in, ss, n};
  r.totals();
  r.scan(out, ds, 0);
}

// Note [Parallel cumsum]
// Rows split across threads leave most of them idle when there are fewer rows than threads, and
// one long row (top-p sampling's cumsum over a vocabulary: 128256 f32) ran on one. Rows fewer than
// the threads and at least two kScanChunk long are cut into chunks (as many per row as there are
// threads per row, each at least kScanChunk), and a blocked scan runs over all (row, chunk) pairs
// in parallel: each chunk's segment totals and sum (RunScan::totals, total), then, serially, each
// row's chunk sums scanned into the chunks' starting sums, then each chunk's scan from its start.
// That is the serial scan's work (two reads of every element, one write), in the same accumulator
// (f64 for f32, Note [Reduction accumulators]); only where the running sums are cut changes. An
// f32 result can then differ from the serial scan's only where two f64 sums that differ in their
// last bits round to neighbouring f32 values; integers stay exact (their sums wrap in 64 bits).
constexpr int64_t kScanChunk = 8192;

template <class T>
bool cumsum_few_long_rows(const TensorArg& src, const TensorArg& dst) {
  using Acc = scan_acc_t<T>;
  const int64_t n = src.layout.shape().back(), rows = src.numel() / n, threads = num_threads();
  if (rows >= threads || n < 2 * kScanChunk || in_parallel()) return false;
  const int64_t chunks = std::min((threads + rows - 1) / rows, n / kScanChunk), tasks = rows * chunks;
  const auto start = last_dim_row_starts<2>(src.shape(), {&src.layout.strides(), &dst.layout.strides()});
  const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
  const T* in = src.ptr<T>();
  T* out = dst.ptr<T>();
  // Task t is chunk t % chunks of row t / chunks, which covers [first(t), end(t)).
  auto first = [&](int64_t t) { return n * (t % chunks) / chunks; };
  auto end = [&](int64_t t) { return n * (t % chunks + 1) / chunks; };
  std::vector<RunScan<T>> part;
  part.reserve(static_cast<size_t>(tasks));
  for (int64_t t = 0; t < tasks; ++t)
    part.push_back({in + start[static_cast<size_t>(t / chunks)][0] + first(t) * ss, ss, end(t) - first(t)});
  std::vector<Acc> sum(static_cast<size_t>(tasks));
  parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      part[static_cast<size_t>(t)].totals();
      sum[static_cast<size_t>(t)] = part[static_cast<size_t>(t)].total();
    }
  });
  for (int64_t r = 0; r < rows; ++r) {  // each chunk's start: the sum of the row's chunks before it
    Acc run = 0;
    for (int64_t t = r * chunks; t < (r + 1) * chunks; ++t) {
      const Acc c = sum[static_cast<size_t>(t)];
      sum[static_cast<size_t>(t)] = run;
      run += c;
    }
  }
  parallel_for(tasks, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      part[static_cast<size_t>(t)].scan(out + start[static_cast<size_t>(t / chunks)][1] + first(t) * ds, ds,
                                        sum[static_cast<size_t>(t)]);
  });
  return true;
}

}  // namespace

void CpuBackend::cumsum(const TensorArg& src, const TensorArg& dst) {
  dispatch(
      src.dtype,
      [&]<class T>() {
        if (src.numel() == 0) return;
        if (cumsum_columns<T>(src, dst)) return;
        if (cumsum_few_long_rows<T>(src, dst)) return;
        const int64_t n = src.layout.shape().back();
        const int64_t ss = src.layout.strides().back(), ds = dst.layout.strides().back();
        const T* in = src.ptr<T>();
        T* out = dst.ptr<T>();
        for_each_last_dim_row<2>(
            src.shape(), {&src.layout.strides(), &dst.layout.strides()}, n,
            [&](const std::array<int64_t, 2>& off) { scan_row<T>(in + off[0], ss, out + off[1], ds, n); });
      },
      "cumsum");
}

}  // namespace wick::cpu
