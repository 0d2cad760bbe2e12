// Conformance cases of the reductions, normalisations, cumsum and sort. The references are plain
// f64 loops over the Ref values, written independently of the library's kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "check/harness.h"

namespace wick::check {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An integer sum as stored in dtype d: u8/u32 wrap modulo 2^bits (the harness's round_to
// saturates, which is a conversion, not an accumulation).
double wrap_int(DType d, double v) {
  if (dtype_size(d) == 8) return v;
  return wrap_to(d, static_cast<__int128>(static_cast<int64_t>(v)));
}

// The dims a case names for its base shape, moved to where they are after Ctx::shape() has
// prepended dims (HighRank). Empty stays empty (all dims).
Dims shift_dims(const Dims& dims, size_t base_rank, size_t rank) {
  Dims out;
  for (int64_t d : dims) out.push_back(d < 0 ? d : d + static_cast<int64_t>(rank - base_rank));
  return out;
}

std::vector<size_t> norm_dims(const Dims& dims, size_t rank) {
  std::vector<size_t> out;
  if (dims.empty()) {
    for (size_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(rank) : d));
  std::sort(out.begin(), out.end());
  return out;
}

enum class RK { Sum, Mean, Min, Max, ArgMin, ArgMax };

// Reference reduction. Elements are visited in row-major order, so for each output the reduced
// elements arrive in increasing flattened (row-major over the reduced dims) index.
Ref reduce_ref(const Ref& x, const std::vector<size_t>& red, bool keepdim, RK kind, DType dt) {
  std::vector<bool> is_red(x.shape.size(), false);
  for (size_t d : red) is_red[d] = true;
  Shape out_shape, red_shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!is_red[d])
      out_shape.push_back(x.shape[d]);
    else if (keepdim)
      out_shape.push_back(1);
    if (is_red[d]) red_shape.push_back(x.shape[d]);
  }
  const size_t n_out = static_cast<size_t>(out_shape.numel());
  std::vector<double> acc(n_out, 0), best(n_out, 0);
  std::vector<int64_t> count(n_out, 0), best_i(n_out, -1);
  int64_t flat = 0;
  for_each_index(x.shape, [&](const std::vector<int64_t>& idx) {
    int64_t o = 0, r = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (!is_red[d])
        o = o * x.shape[d] + idx[d];
      else
        r = r * x.shape[d] + idx[d];
    }
    const double v = x.v[static_cast<size_t>(flat++)];
    const size_t k = static_cast<size_t>(o);
    acc[k] += v;
    const bool first = count[k]++ == 0;
    bool take = first;
    if (!first && !std::isnan(best[k])) {
      const bool want_max = kind == RK::Max || kind == RK::ArgMax;
      take = std::isnan(v) || (want_max ? v > best[k] : v < best[k]);
    }
    if (take) {
      best[k] = v;
      best_i[k] = r;
    }
  });
  Ref out(out_shape);
  for (size_t k = 0; k < n_out; ++k) {
    switch (kind) {
      case RK::Sum:
        out.v[k] = is_int(dt) ? wrap_int(dt, acc[k]) : acc[k];
        break;
      case RK::Mean:
        out.v[k] = count[k] == 0 ? kNaN : acc[k] / static_cast<double>(count[k]);
        break;
      case RK::Min:
      case RK::Max:
        out.v[k] = best[k];
        break;
      case RK::ArgMin:
      case RK::ArgMax:
        out.v[k] = static_cast<double>(best_i[k]);
        break;
    }
  }
  return out;
}

struct RedVariant {
  const char* name;
  Shape shape;
  Dims dims;
  bool keepdim;
  bool large = false;  // rank 6 would multiply the size by 24 for no new coverage
};

const std::vector<RedVariant>& red_variants() {
  static const std::vector<RedVariant> v = {
      {"last", {17, 33}, {-1}, false},
      {"first", {33, 17}, {0}, false},
      {"middle keepdim", {5, 7, 9}, {1}, true},
      {"multiple", {4, 5, 6, 3}, {0, 2}, false},
      {"multiple keepdim", {4, 5, 6, 3}, {3, 1}, true},
      {"all", {6, 7, 8}, {}, false},
      {"all keepdim", {6, 7, 8}, {0, 1, 2}, true},
      {"long rows", {3, 5000}, {-1}, false, true},     // several pairwise blocks per row
      {"long columns", {1500, 20}, {0}, false, true},  // column mode with a cascade flush
      {"split", {1, 140001}, {-1}, false, true},       // fewer outputs than threads: range split
      {"split columns", {70001, 2}, {0}, false, true},
  };
  return v;
}

void add_reduce_cases(Cases& cases, Op op, RK kind) {
  for (const RedVariant& rv : red_variants()) {
    const uint32_t layouts = rv.large ? kAllLayouts & ~layout_bit(LayoutKind::HighRank) : kAllLayouts;
    cases.push_back({op, rv.name, layouts, [rv, op, kind](Ctx& c) {
                       const bool arg = kind == RK::ArgMin || kind == RK::ArgMax;
                       const bool is_minmax = arg || kind == RK::Min || kind == RK::Max;
                       // Wide ranges make ties rare for the arg ops; the reference follows the
                       // first-index rule, so the remaining ties (f8, u8, broadcast) check it.
                       const double lo = arg ? (is_int(c.dtype()) ? 0 : -100) : -2;
                       const double hi = arg ? (is_int(c.dtype()) ? 250 : 100) : 2;
                       const Shape s = c.shape(rv.shape);
                       Tensor x = c.input(s, lo, hi);
                       const Dims dims = shift_dims(rv.dims, rv.shape.size(), s.size());
                       const std::vector<size_t> red = norm_dims(dims, s.size());
                       int64_t n = 1;
                       for (size_t d : red) n *= s[d];
                       auto run = [&]() {
                         switch (kind) {
                           case RK::Sum:
                             return x.sum(dims, rv.keepdim);
                           case RK::Mean:
                             return x.mean(dims, rv.keepdim);
                           case RK::Min:
                             return x.min(dims, rv.keepdim);
                           case RK::Max:
                             return x.max(dims, rv.keepdim);
                           case RK::ArgMin:
                             return x.argmin(dims, rv.keepdim);
                           case RK::ArgMax:
                             return x.argmax(dims, rv.keepdim);
                         }
                         return Tensor();
                       };
                       if (is_minmax && n == 0) {
                         c.expect_throw<ShapeError>(run, std::string(op_name(op)) + " over zero elements");
                         return;
                       }
                       // Rounded to the dtype, so that a sum beyond f16/f8 range is inf/NaN there too.
                       const Ref expected = round_to(c.dtype(), reduce_ref(c.ref(x), red, rv.keepdim, kind, c.dtype()));
                       const double scale = kind == RK::Sum || kind == RK::Mean ? std::sqrt(std::max<double>(n, 1)) : 1;
                       // mean of n values of magnitude <= 2: the error is that of the sum over n.
                       const Tol tol = kind == RK::Mean ? tol_for(c.dtype(), 2) : tol_for(c.dtype(), scale);
                       c.expect(run(), arg ? reduce_ref(c.ref(x), red, rv.keepdim, kind, c.dtype()) : expected,
                                arg ? DType::I64 : c.dtype(), tol);
                     }});
  }
}

// ---- last-dim ops --------------------------------------------------------------------------

struct DimVariant {
  const char* name;
  Shape shape;
  int64_t dim;
};

const std::vector<DimVariant>& dim_variants() {
  static const std::vector<DimVariant> v = {
      {"dim -1", {9, 31}, -1},
      {"dim 0", {31, 9}, 0},
      {"middle dim", {4, 13, 6}, 1},
      {"long rows", {3, 3000}, -1},
  };
  return v;
}

// Calls f(row values, row multi-indices) for every line of `shape` along `dim`.
template <class F>
void for_each_line(const Shape& shape, size_t dim, F&& f) {
  Shape outer = shape;
  outer[dim] = 1;
  for_each_index(outer, [&](const std::vector<int64_t>& o) {
    std::vector<std::vector<int64_t>> line;
    for (int64_t i = 0; i < shape[dim]; ++i) {
      std::vector<int64_t> idx = o;
      idx[dim] = i;
      line.push_back(idx);
    }
    f(line);
  });
}

Ref softmax_ref(const Ref& x, size_t dim, bool log) {
  Ref out(x.shape);
  for_each_line(x.shape, dim, [&](const std::vector<std::vector<int64_t>>& line) {
    double m = -std::numeric_limits<double>::infinity();
    for (const auto& i : line) m = std::max(m, x.at(i));
    double sum = 0;
    for (const auto& i : line) sum += std::exp(x.at(i) - m);
    for (const auto& i : line) out.at(i) = log ? x.at(i) - m - std::log(sum) : std::exp(x.at(i) - m) / sum;
  });
  return out;
}

Ref cumsum_ref(const Ref& x, size_t dim, DType dt) {
  Ref out(x.shape);
  for_each_line(x.shape, dim, [&](const std::vector<std::vector<int64_t>>& line) {
    double acc = 0;
    for (const auto& i : line) {
      acc += x.at(i);
      out.at(i) = is_int(dt) ? wrap_int(dt, acc) : acc;
    }
  });
  return out;
}

// Stable sort with NaN above +inf; returns (values, indices).
std::pair<Ref, Ref> sort_ref(const Ref& x, size_t dim, bool descending) {
  Ref vals(x.shape), ids(x.shape);
  for_each_line(x.shape, dim, [&](const std::vector<std::vector<int64_t>>& line) {
    std::vector<size_t> order(line.size());
    std::iota(order.begin(), order.end(), size_t{0});
    auto key = [&](size_t k) { return x.at(line[k]); };
    // rank: NaN is the largest; descending flips the order but not the stability.
    auto less = [&](size_t a, size_t b) {
      const double va = key(a), vb = key(b);
      if (std::isnan(va) || std::isnan(vb)) return !std::isnan(va) && std::isnan(vb);
      return va < vb;
    };
    if (descending) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return less(b, a); });
    } else {
      std::stable_sort(order.begin(), order.end(), less);
    }
    for (size_t k = 0; k < line.size(); ++k) {
      vals.at(line[k]) = key(order[k]);
      ids.at(line[k]) = static_cast<double>(order[k]);
    }
  });
  return {vals, ids};
}

Ref norm_ref(const Ref& x, const Ref* w, const Ref* b, double eps, bool layer) {
  Ref out(x.shape);
  const size_t dim = x.shape.size() - 1;
  for_each_line(x.shape, dim, [&](const std::vector<std::vector<int64_t>>& line) {
    const double n = static_cast<double>(line.size());
    double mean = 0;
    if (layer) {
      for (const auto& i : line) mean += x.at(i);
      mean /= n;
    }
    double ss = 0;
    for (const auto& i : line) ss += (x.at(i) - mean) * (x.at(i) - mean);
    const double inv = 1.0 / std::sqrt(ss / n + eps);
    for (size_t k = 0; k < line.size(); ++k) {
      double y = (x.at(line[k]) - mean) * inv;
      if (w) y *= w->v[k];
      if (b) y += b->v[k];
      out.at(line[k]) = y;
    }
  });
  return out;
}

size_t case_dim(int64_t dim, size_t base_rank, size_t rank) {
  return static_cast<size_t>(dim < 0 ? dim + static_cast<int64_t>(rank) : dim + static_cast<int64_t>(rank - base_rank));
}

void add_last_dim_cases(Cases& cases) {
  for (const DimVariant& dv : dim_variants()) {
    for (bool log : {false, true}) {
      const Op op = log ? Op::LogSoftmax : Op::Softmax;
      cases.push_back({op, dv.name, kAllLayouts, [dv, log](Ctx& c) {
                         const Shape s = c.shape(dv.shape);
                         Tensor x = c.input(s, -4, 4);
                         const size_t d = case_dim(dv.dim, dv.shape.size(), s.size());
                         const int64_t dim = dv.dim < 0 ? dv.dim : static_cast<int64_t>(d);
                         Tensor y = log ? x.log_softmax(dim) : x.softmax(dim);
                         // exp and log of values of order 1 each lose about an ulp; the row
                         // sum a few more.
                         c.expect(y, softmax_ref(c.ref(x), d, log), tol_for(c.dtype(), 4));
                       }});
    }
    cases.push_back({Op::Cumsum, dv.name, kAllLayouts, [dv](Ctx& c) {
                       const Shape s = c.shape(dv.shape);
                       Tensor x = c.input(s, -2, 2);
                       const size_t d = case_dim(dv.dim, dv.shape.size(), s.size());
                       const double n = static_cast<double>(std::max<int64_t>(s[d], 1));
                       c.expect(x.cumsum(dv.dim < 0 ? dv.dim : static_cast<int64_t>(d)),
                                cumsum_ref(c.ref(x), d, c.dtype()), tol_for(c.dtype(), std::sqrt(n)));
                     }});
    for (bool desc : {false, true}) {
      const std::string name = std::string(dv.name) + (desc ? " descending" : "");
      cases.push_back({Op::Sort, name, kAllLayouts, [dv, desc](Ctx& c) {
                         const Shape s = c.shape(dv.shape);
                         // A narrow integer range gives ties, which check stability.
                         Tensor x = c.input(s, is_int(c.dtype()) ? 0 : -8, is_int(c.dtype()) ? 9 : 8);
                         const size_t d = case_dim(dv.dim, dv.shape.size(), s.size());
                         auto [v, i] = x.sort(dv.dim < 0 ? dv.dim : static_cast<int64_t>(d), desc);
                         const auto [rv, ri] = sort_ref(c.ref(x), d, desc);
                         c.expect(v, rv);
                         c.expect(i, ri, DType::I64, Tol{});
                       }});
      cases.push_back({Op::Argsort, name, kAllLayouts, [dv, desc](Ctx& c) {
                         const Shape s = c.shape(dv.shape);
                         Tensor x = c.input(s, is_int(c.dtype()) ? 0 : -8, is_int(c.dtype()) ? 9 : 8);
                         const size_t d = case_dim(dv.dim, dv.shape.size(), s.size());
                         Tensor i = x.argsort(dv.dim < 0 ? dv.dim : static_cast<int64_t>(d), desc);
                         c.expect(i, sort_ref(c.ref(x), d, desc).second, DType::I64, Tol{});
                       }});
    }
  }
}

struct NormVariant {
  const char* name;
  Shape shape;
  bool weight, bias;
};

void add_norm_cases(Cases& cases) {
  const std::vector<NormVariant> variants = {
      {"weight", {13, 37}, true, true},
      {"no weight", {5, 4, 29}, false, false},
      {"weight only", {6, 11}, true, false},
      {"long rows", {3, 4100}, true, true},
  };
  for (const NormVariant& nv : variants) {
    for (bool layer : {false, true}) {
      if (!layer && nv.bias != nv.weight) continue;  // rms_norm has no bias: "weight" covers it
      cases.push_back({layer ? Op::LayerNorm : Op::RmsNorm, nv.name, kAllLayouts, [nv, layer](Ctx& c) {
                         const Shape s = c.shape(nv.shape);
                         // An offset mean checks that layer_norm does not lose precision to it.
                         Tensor x = c.input(s, layer ? 1 : -2, layer ? 5 : 2);
                         const int64_t dlen = s.back();
                         Tensor w = nv.weight ? c.input({dlen}, -1.5, 1.5) : Tensor();
                         Tensor b = layer && nv.bias ? c.input({dlen}, -1, 1) : Tensor();
                         const double eps = 1e-5;
                         const Ref* wr = nv.weight ? &c.ref(w) : nullptr;
                         const Ref* br = b.defined() ? &c.ref(b) : nullptr;
                         Tensor y = layer ? x.layer_norm(w, b, eps) : x.rms_norm(w, eps);
                         c.expect(y, norm_ref(c.ref(x), wr, br, eps, layer), tol_for(c.dtype(), 8));
                       }});
    }
  }
}

}  // namespace

void register_reduce_cases(Cases& cases) {
  add_reduce_cases(cases, Op::Sum, RK::Sum);
  add_reduce_cases(cases, Op::Mean, RK::Mean);
  add_reduce_cases(cases, Op::Min, RK::Min);
  add_reduce_cases(cases, Op::Max, RK::Max);
  add_reduce_cases(cases, Op::ArgMin, RK::ArgMin);
  add_reduce_cases(cases, Op::ArgMax, RK::ArgMax);
  add_last_dim_cases(cases);
  add_norm_cases(cases);
}

}  // namespace wick::check
