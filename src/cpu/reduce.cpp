// sum, mean, min, max, argmin, argmax on the CPU.
//
// The reduced dims are the last n_reduced dims of src (the front end permutes them there). Two
// loop shapes, picked once per call (DESIGN principle 3):
//   row mode     each output reduces one row of memory (the innermost reduced dim is the one
//                with unit stride, or nothing is): lanes of accumulators, vectorisable.
//   column mode  a kept dim has unit stride (e.g. sum over dim 0 of a row-major matrix): each task
//                owns a strip of up to kColW adjacent outputs and adds whole reduced rows into a
//                strip of accumulators (kRowBlock rows at a time), so memory is read in order
//                rather than column by column.
// Outputs are split across threads; when there are fewer outputs than threads, each output's
// reduced range is split too and the partial results are merged in order.
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/dispatch.h"
#include "backend/reduce_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/simd.h"
#include "cpu/strided.h"

namespace wick::cpu {
namespace {

constexpr int kLanes = 16;
constexpr int64_t kBlock = 2048;  // elements per pairwise leaf in a row sum
constexpr int64_t kColW = 1024;   // outputs per column-mode strip
constexpr int kRowBlock = 8;      // reduced rows added at once in column mode

template <bool Unit, class T>
inline T at(const T* p, int64_t i, int64_t s) {
  return Unit ? p[i] : p[i * s];
}
template <bool Unit, class T>
inline const T* at_ptr(const T* p, int64_t i, int64_t s) {
  return Unit ? p + i : p + i * s;
}

// Column mode reads a strip's reduced rows kRowBlock at a time: f.template operator()<R>(r, k)
// gets r[0, R), the rows from reduced row k on, R = kRowBlock while that many are left, then 1.
// Several rows at once keep several streams of loads in flight (one row at a time stalls on
// memory: a strip's piece of a row is a few KB, too short for the prefetchers) and read and write
// the accumulators once per block.
// rows(k) is called with k in order.
template <class T, class Rows, class F>
inline void row_blocks(Rows& rows, int64_t k, int64_t count, F&& f) {
  const T* r[kRowBlock];
  while (k < count) {
    if (count - k >= kRowBlock) {
      for (int i = 0; i < kRowBlock; ++i) r[i] = rows(k + i);
      f.template operator()<kRowBlock>(r, k);
      k += kRowBlock;
    } else {
      r[0] = rows(k);
      f.template operator()<1>(r, k);
      ++k;
    }
  }
}

// lv[j] += the sum of element j of R rows, for j < w.
template <int R, class T, class Acc>
inline void add_rows(const T* const* r, int64_t w, Acc* lv) {
#pragma omp simd
  for (int64_t j = 0; j < w; ++j) {
    Acc s = sum_load<Acc>(r[0][j]);
    for (int i = 1; i < R; ++i) s += sum_load<Acc>(r[i][j]);
    lv[j] += s;
  }
}

// ---- per-op kernels ------------------------------------------------------------------------
// Each provides Acc, merge(left, right), empty() (the result of no elements), row<Unit>(p, n,
// stride, first_index) over n >= 1 elements, cols(...) over whole rows of a strip, and finish().

template <class T, bool Mean>
struct SumKernel {
  using Acc = sum_acc_t<T>;
  using Out = T;
  static Acc merge(Acc a, Acc b) { return a + b; }
  static Acc empty() { return Acc(0); }

  template <bool Unit>
  static Acc row(const T* p, int64_t n, int64_t s, int64_t) {
    Pairwise<Acc> pw;
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t e = std::min(n, b + kBlock);
      if constexpr (Unit && std::is_same_v<T, float>) {  // this block's sum, in the same order
        pw.push(simd::kernels().sum16_f32(p + b, e - b), merge);
        continue;
      }
      Acc lane[kLanes] = {};
      int64_t i = b;
      for (; i + kLanes <= e; i += kLanes)
        for (int l = 0; l < kLanes; ++l) lane[l] += sum_load<Acc>(at<Unit>(p, i + l, s));
      Acc tail = 0;
      for (; i < e; ++i) tail += sum_load<Acc>(at<Unit>(p, i, s));
      for (int w = kLanes / 2; w > 0; w /= 2)
        for (int l = 0; l < w; ++l) lane[l] += lane[l + w];
      pw.push(lane[0] + tail, merge);
    }
    return pw.result(Acc(0), merge);
  }

  // rows(k) points at the k-th reduced row of the strip (k in [0, count)); w outputs.
  template <class Rows>
  static void cols(Rows rows, int64_t count, int64_t, int64_t w, Acc* out) {
    // Cascade of four levels, each flushed into the next every 64 rows, keeps float error at
    // about 64 * log64(count) roundings instead of count.
    // Blocks of rows start at multiples of kRowBlock, which divides 64, so a block ends at every
    // 64th row.
    static_assert(64 % kRowBlock == 0);
    Acc lv[4][kColW] = {};
    row_blocks<T>(rows, 0, count, [&]<int R>(const T* const* r, int64_t k) {
      add_rows<R>(r, w, lv[0]);
      if constexpr (!std::is_integral_v<Acc>) {
        const int64_t c = k + R;
        for (int level = 0, period = 64; level < 3 && c % period == 0; ++level, period *= 64)
          for (int64_t j = 0; j < w; ++j) {
            lv[level + 1][j] += lv[level][j];
            lv[level][j] = 0;
          }
      }
    });
    for (int64_t j = 0; j < w; ++j) out[j] = lv[3][j] + (lv[2][j] + (lv[1][j] + lv[0][j]));
  }

  static Out finish(Acc a, int64_t count) {
    if constexpr (Mean) {
      return convert<T>(mean_of(a, count));
    } else {
      return sum_store<T>(a);
    }
  }
};

// NaN-propagating min/max of n >= 0 elements (the identity when n == 0). The select loop is an
// OpenMP simd reduction, which lets the compiler keep vector lanes (it may not reorder a float
// select chain on its own); NaN is tracked by a separate flag, because a NaN test in the
// select would defeat the vector min/max instruction.
template <bool IsMax, bool Unit, class T>
cmp_t<T> minmax_span(const T* p, int64_t n, int64_t s) {
  using V = cmp_t<T>;
  V r = minmax_identity<IsMax, V>();
  int nan = 0;
  if constexpr (IsMax) {
#pragma omp simd reduction(max : r) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      const V x = static_cast<V>(at<Unit>(p, i, s));
      r = minmax_select<true>(r, x);
      nan |= static_cast<int>(is_nan_value(x));
    }
  } else {
#pragma omp simd reduction(min : r) reduction(| : nan)
    for (int64_t i = 0; i < n; ++i) {
      const V x = static_cast<V>(at<Unit>(p, i, s));
      r = minmax_select<false>(r, x);
      nan |= static_cast<int>(is_nan_value(x));
    }
  }
  if constexpr (std::is_floating_point_v<V>) {
    if (nan) return std::numeric_limits<V>::quiet_NaN();
  }
  return r;
}

// minmax_span, with contiguous f32 rows through simd.h's kernels: the processor's full vector
// width and several accumulators, where the loop above is built for the baseline ISA and keeps one
// chain of dependent selects (Note [Vector min / max] in simd_rows.cpp). The same results (NaN included;
// the sign of a zero result may differ, as between the lanes of the loop above).
template <bool IsMax, bool Unit, class T>
cmp_t<T> row_minmax(const T* p, int64_t n, int64_t s) {
  if constexpr (Unit && std::is_same_v<T, float>) {
    return IsMax ? simd::kernels().max_f32(p, n) : simd::kernels().min_f32(p, n);
  } else {
    return minmax_span<IsMax, Unit>(p, n, s);
  }
}

template <class T, bool IsMax>
struct MinMaxKernel {
  using Acc = cmp_t<T>;
  using Out = T;
  static Acc merge(Acc a, Acc b) { return minmax_step<IsMax>(a, b); }
  static Acc empty() { return minmax_identity<IsMax, Acc>(); }

  template <bool Unit>
  static Acc row(const T* p, int64_t n, int64_t s, int64_t) {
    return row_minmax<IsMax, Unit>(p, n, s);
  }

  template <class Rows>
  static void cols(Rows rows, int64_t count, int64_t, int64_t w, Acc* out) {
    uint8_t nan[kColW] = {};
    for (int64_t j = 0; j < w; ++j) out[j] = minmax_identity<IsMax, Acc>();
    row_blocks<T>(rows, 0, count, [&]<int R>(const T* const* r, int64_t) {
#pragma omp simd
      for (int64_t j = 0; j < w; ++j) {
        Acc m = out[j];
        uint8_t n = nan[j];
        for (int i = 0; i < R; ++i) {
          const Acc x = static_cast<Acc>(r[i][j]);
          m = minmax_select<IsMax>(m, x);
          n |= static_cast<uint8_t>(is_nan_value(x));
        }
        out[j] = m;
        nan[j] = n;
      }
    });
    if constexpr (std::is_floating_point_v<Acc>) {
      for (int64_t j = 0; j < w; ++j)
        if (nan[j]) out[j] = std::numeric_limits<Acc>::quiet_NaN();
    }
  }

  static Out finish(Acc a, int64_t) { return convert<T>(a); }
};

template <class V>
struct ArgAcc {
  V v;
  int64_t i;  // -1: no element yet
};

template <class T, bool IsMax>
struct ArgKernel {
  using V = cmp_t<T>;
  using Acc = ArgAcc<V>;
  using Out = int64_t;
  // a covers smaller indices than b, so on a tie a wins.
  static Acc merge(Acc a, Acc b) { return (a.i < 0 || (b.i >= 0 && arg_better<IsMax>(b.v, a.v))) ? b : a; }
  static Acc empty() { return {V(0), -1}; }

  // The extreme value of each block (a vectorised pass), the first block holding the overall
  // extreme, then the first index in that block holding it.
  template <bool Unit>
  static Acc row(const T* p, int64_t n, int64_t s, int64_t first) {
    V best = minmax_identity<IsMax, V>();
    int64_t best_block = -1;
    for (int64_t b = 0; b < n; b += kBlock) {
      const V m = row_minmax<IsMax, Unit>(at_ptr<Unit>(p, b, s), std::min(kBlock, n - b), s);
      if (best_block < 0 || arg_better<IsMax>(m, best)) {
        best = m;
        best_block = b;
      }
    }
    const bool nan = is_nan_value(best);
    const int64_t e = std::min(n, best_block + kBlock);
    for (int64_t i = best_block; i < e; ++i) {
      const V x = static_cast<V>(at<Unit>(p, i, s));
      if (nan ? is_nan_value(x) : x == best) return {best, first + i};
    }
    return {best, first + best_block};  // unreachable: best is one of the block's elements
  }

  template <class Rows>
  static void cols(Rows rows, int64_t count, int64_t first, int64_t w, Acc* out) {
    V val[kColW];
    int64_t idx[kColW];
    const T* r0 = rows(0);
    for (int64_t j = 0; j < w; ++j) {
      val[j] = static_cast<V>(r0[j]);
      idx[j] = first;
    }
    row_blocks<T>(rows, 1, count, [&]<int R>(const T* const* r, int64_t k) {
      for (int64_t j = 0; j < w; ++j) {
        V v = val[j];
        int64_t at = idx[j];
        for (int i = 0; i < R; ++i) {
          const V x = static_cast<V>(r[i][j]);
          const bool b = arg_better<IsMax>(x, v);
          v = b ? x : v;
          at = b ? first + k + i : at;
        }
        val[j] = v;
        idx[j] = at;
      }
    });
    for (int64_t j = 0; j < w; ++j) out[j] = {val[j], idx[j]};
  }

  static Out finish(Acc a, int64_t) { return a.i; }
};

// ---- index spaces ----------------------------------------------------------------------------

// Row-major walk over dims with one stride set: seek(flat), then next() per element.
struct Odometer {
  const Dims* shape;
  const Dims* stride;
  Dims idx;
  int64_t off = 0;

  Odometer(const Dims& sh, const Dims& st) : shape(&sh), stride(&st), idx(sh.size()) {}
  void seek(int64_t flat) {
    off = 0;
    for (size_t d = shape->size(); d-- > 0;) {
      idx[d] = flat % (*shape)[d];
      flat /= (*shape)[d];
      off += idx[d] * (*stride)[d];
    }
  }
  void next() {
    for (size_t d = shape->size(); d-- > 0;) {
      off += (*stride)[d];
      if (++idx[d] < (*shape)[d]) return;
      off -= (*stride)[d] * (*shape)[d];
      idx[d] = 0;
    }
  }
};

// Outer (kept) dims walked with two stride sets: src and dst.
struct Outer {
  Dims shape, src, dst;
  int64_t count = 1;
};

// How many pieces to cut each of `outputs` reductions of `elems` elements into, so that all
// threads have work when outputs are few.
int64_t split_count(int64_t outputs, int64_t elems, int64_t units) {
  const int64_t threads = num_threads();
  if (outputs >= threads || units < 2) return 1;
  const int64_t want = (threads + outputs - 1) / outputs;
  return std::max<int64_t>(1, std::min({want, elems / kGrain, units}));
}

template <class K, class T>
void reduce_rows(const T* src, const Outer& outer, const Dims& ishape, const Dims& istride, int64_t total,
                 typename K::Out* dst) {
  using Acc = typename K::Acc;
  const int64_t n = ishape.back(), s = istride.back();
  const Dims sub_shape(ishape.begin(), ishape.end() - 1), sub_stride(istride.begin(), istride.end() - 1);
  const int64_t sub_rows = total / n;
  // A unit is a sub-row when there are several, else one element of the single row.
  const int64_t units = sub_rows > 1 ? sub_rows : n;
  auto row = [&](const T* p, int64_t len, int64_t first) {
    return s == 1 ? K::template row<true>(p, len, s, first) : K::template row<false>(p, len, s, first);
  };
  auto reduce_units = [&](const T* base, int64_t u0, int64_t u1) -> Acc {
    if (sub_rows == 1) return row(base + u0 * s, u1 - u0, u0);
    Odometer od(sub_shape, sub_stride);
    od.seek(u0);
    Pairwise<Acc> pw;
    for (int64_t u = u0; u < u1; ++u, od.next()) pw.push(row(base + od.off, n, u * n), K::merge);
    return pw.result(K::empty(), K::merge);
  };

  const int64_t pieces = split_count(outer.count, total, units);
  if (pieces == 1) {
    // Note [Memory-bound shares] in parallel.h
    parallel_ranges(outer.count, std::max<int64_t>(1, kGrain / total), [&](int64_t b, int64_t e) {
      Odometer so(outer.shape, outer.src), doff(outer.shape, outer.dst);
      so.seek(b);
      doff.seek(b);
      for (int64_t o = b; o < e; ++o, so.next(), doff.next())
        dst[doff.off] = K::finish(reduce_units(src + so.off, 0, units), total);
    });
    return;
  }
  std::vector<Acc> parts(static_cast<size_t>(outer.count * pieces));
  parallel_for(outer.count * pieces, 1, [&](int64_t b, int64_t e) {
    Odometer so(outer.shape, outer.src);
    for (int64_t t = b; t < e; ++t) {
      const int64_t o = t / pieces, piece = t % pieces;
      so.seek(o);
      parts[static_cast<size_t>(t)] = reduce_units(src + so.off, units * piece / pieces, units * (piece + 1) / pieces);
    }
  });
  Odometer doff(outer.shape, outer.dst);
  doff.seek(0);
  for (int64_t o = 0; o < outer.count; ++o, doff.next()) {
    Acc a = parts[static_cast<size_t>(o * pieces)];
    for (int64_t piece = 1; piece < pieces; ++piece) a = K::merge(a, parts[static_cast<size_t>(o * pieces + piece)]);
    dst[doff.off] = K::finish(a, total);
  }
}

// Column mode; `v` is the kept dim with unit src stride.
template <class K, class T>
void reduce_cols(const T* src, const Outer& outer, size_t v, const Dims& ishape, const Dims& istride, int64_t total,
                 typename K::Out* dst) {
  using Acc = typename K::Acc;
  Dims pshape, psrc, pdst;
  for (size_t d = 0; d < outer.shape.size(); ++d)
    if (d != v) {
      pshape.push_back(outer.shape[d]);
      psrc.push_back(outer.src[d]);
      pdst.push_back(outer.dst[d]);
    }
  const int64_t vlen = outer.shape[v], vdst = outer.dst[v];
  const int64_t strips_per = (vlen + kColW - 1) / kColW;
  const int64_t strips = (outer.count / vlen) * strips_per;
  const int64_t pieces = split_count(strips, total * std::min(vlen, kColW), total);

  // Reduces reduced rows [k0, k1) of one strip into out[0, w).
  auto strip = [&](int64_t t, int64_t k0, int64_t k1, Acc* out, int64_t* dst_off, int64_t* w) {
    const int64_t p = t / strips_per, v0 = (t % strips_per) * kColW;
    *w = std::min(kColW, vlen - v0);
    Odometer po(pshape, psrc), pd(pshape, pdst);
    po.seek(p);
    pd.seek(p);
    *dst_off = pd.off + v0 * vdst;
    const T* base = src + po.off + v0;
    Odometer ro(ishape, istride);
    ro.seek(k0);
    int64_t at_k = 0;
    // rows(k) is called with k = 0, 1, 2, ... in order; the odometer follows.
    auto rows = [&](int64_t k) {
      while (at_k < k) {
        ro.next();
        ++at_k;
      }
      return base + ro.off;
    };
    K::cols(rows, k1 - k0, k0, *w, out);
  };

  if (pieces == 1) {
    parallel_for(strips, std::max<int64_t>(1, kGrain / (total * kColW) + 1), [&](int64_t b, int64_t e) {
      Acc acc[kColW];
      for (int64_t t = b; t < e; ++t) {
        int64_t off = 0, w = 0;
        strip(t, 0, total, acc, &off, &w);
        for (int64_t j = 0; j < w; ++j) dst[off + j * vdst] = K::finish(acc[j], total);
      }
    });
    return;
  }
  std::vector<Acc> parts(static_cast<size_t>(strips * pieces * kColW));
  std::vector<int64_t> offs(static_cast<size_t>(strips)), widths(static_cast<size_t>(strips));
  parallel_for(strips * pieces, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t st = t / pieces, piece = t % pieces;
      int64_t off = 0, w = 0;
      strip(st, total * piece / pieces, total * (piece + 1) / pieces, &parts[static_cast<size_t>(t * kColW)], &off, &w);
      if (piece == 0) {
        offs[static_cast<size_t>(st)] = off;
        widths[static_cast<size_t>(st)] = w;
      }
    }
  });
  for (int64_t st = 0; st < strips; ++st)
    for (int64_t j = 0; j < widths[static_cast<size_t>(st)]; ++j) {
      Acc a = parts[static_cast<size_t>(st * pieces * kColW + j)];
      for (int64_t piece = 1; piece < pieces; ++piece)
        a = K::merge(a, parts[static_cast<size_t>((st * pieces + piece) * kColW + j)]);
      dst[offs[static_cast<size_t>(st)] + j * vdst] = K::finish(a, total);
    }
}

template <class K, class T>
void run_reduce(const TensorArg& src, int n_reduced, const TensorArg& dst) {
  using Out = typename K::Out;
  const size_t rank = src.layout.rank();
  const size_t lead = rank - static_cast<size_t>(n_reduced);
  Shape oshape, ishape_full;
  Strides osrc, ishape_stride;
  for (size_t d = 0; d < rank; ++d) {
    if (d < lead) {
      oshape.push_back(src.layout.dim(d));
      osrc.push_back(src.layout.stride(d));
    } else {
      ishape_full.push_back(src.layout.dim(d));
      ishape_stride.push_back(src.layout.stride(d));
    }
  }
  const int64_t total = ishape_full.numel();
  Out* out = dst.ptr<Out>();
  if (dst.numel() == 0) return;
  if (total == 0) {  // only sum and mean get here (the front end rejects the others)
    const Out v = K::finish(K::empty(), 0);
    map<Out>([v]() { return v; }, dst);
    return;
  }
  const Collapsed<1> in = collapse<1>(ishape_full, {&ishape_stride});
  const Collapsed<2> oc = collapse<2>(oshape, {&osrc, &dst.layout.strides()});
  Outer outer{oc.shape, oc.strides[0], oc.strides[1], oc.numel};
  const T* base = src.ptr<T>();
  if (in.strides[0].back() != 1) {
    for (size_t d = 0; d < outer.shape.size(); ++d)
      if (outer.src[d] == 1 && outer.shape[d] > 1) {
        reduce_cols<K>(base, outer, d, in.shape, in.strides[0], total, out);
        return;
      }
  }
  reduce_rows<K>(base, outer, in.shape, in.strides[0], total, out);
}

}  // namespace

void CpuBackend::reduce(Op op, const TensorArg& src, int n_reduced, const TensorArg& dst) {
  dispatch(
      src.dtype,
      [&]<class T>() {
        switch (op) {
          case Op::Sum:
            return run_reduce<SumKernel<T, false>, T>(src, n_reduced, dst);
          case Op::Mean:
            if constexpr (is_float_v<T>) return run_reduce<SumKernel<T, true>, T>(src, n_reduced, dst);
            break;
          case Op::Min:
            return run_reduce<MinMaxKernel<T, false>, T>(src, n_reduced, dst);
          case Op::Max:
            return run_reduce<MinMaxKernel<T, true>, T>(src, n_reduced, dst);
          case Op::ArgMin:
            return run_reduce<ArgKernel<T, false>, T>(src, n_reduced, dst);
          case Op::ArgMax:
            return run_reduce<ArgKernel<T, true>, T>(src, n_reduced, dst);
          default:
            break;
        }
        throw UnsupportedError("[" + std::string(op_name(op)) + "] is not a reduction for dtype " +
                               std::string(dtype_name(src.dtype)));
      },
      "reduce");
}

}  // namespace wick::cpu
