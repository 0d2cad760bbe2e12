// Conformance cases of the index family: index_select, gather, scatter, scatter_add, index_add,
// copy_strided, copy2d, cat and matmul. References are plain f64 loops over multi-indices.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "check/harness.h"

namespace wick::check {
namespace {

const std::vector<DType> kIdDTypes = dtypes_in(kIntTypes);

// Random integers in [lo, hi] (clipped at 0 for unsigned dtypes): sums of a few of them are exact in
// every dtype, f8e4m3 included (integers up to 16 are), so accumulating ops compare exactly.
Ref small_ints(Ctx& c, const Shape& s, int64_t lo, int64_t hi) {
  if (!is_signed(c.dtype())) lo = std::max<int64_t>(lo, 0);
  std::uniform_int_distribution<int64_t> u(lo, hi);
  Ref r(s);
  for (double& v : r.v) v = static_cast<double>(u(c.rng()));
  return r;
}

std::vector<int64_t> with(std::vector<int64_t> idx, size_t d, int64_t v) {
  idx[d] = v;
  return idx;
}

// 1-d ids: the layout kind's shape adjustment would add dims, so only ZeroSize applies.
Shape ids_shape(const Ctx& c, int64_t n) { return {c.layout() == LayoutKind::ZeroSize ? 0 : n}; }

// ---- references ---------------------------------------------------------------------------------

Ref ref_index_select(const Ref& src, const Ref& ids, size_t dim) {
  Shape s = src.shape;
  s[dim] = ids.numel();
  Ref out(s);
  int64_t flat = 0;
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    out.v[static_cast<size_t>(flat++)] =
        src.at(with(idx, dim, static_cast<int64_t>(ids.v[static_cast<size_t>(idx[dim])])));
  });
  return out;
}

Ref ref_gather(const Ref& src, const Ref& ids, size_t dim) {
  Ref out(ids.shape);
  int64_t flat = 0;
  for_each_index(ids.shape, [&](const std::vector<int64_t>& idx) {
    out.v[static_cast<size_t>(flat)] = src.at(with(idx, dim, static_cast<int64_t>(ids.v[static_cast<size_t>(flat)])));
    ++flat;
  });
  return out;
}

Ref ref_scatter(const Ref& dst, const Ref& ids, const Ref& src, size_t dim, bool add) {
  Ref out = dst;
  int64_t flat = 0;
  for_each_index(ids.shape, [&](const std::vector<int64_t>& idx) {
    double& t = out.at(with(idx, dim, static_cast<int64_t>(ids.v[static_cast<size_t>(flat++)])));
    t = add ? t + src.at(idx) : src.at(idx);
  });
  return out;
}

Ref ref_index_add(const Ref& dst, const Ref& ids, const Ref& src, size_t dim) {
  Ref out = dst;
  for_each_index(src.shape, [&](const std::vector<int64_t>& idx) {
    out.at(with(idx, dim, static_cast<int64_t>(ids.v[static_cast<size_t>(idx[dim])]))) += src.at(idx);
  });
  return out;
}

Ref ref_cat(const std::vector<const Ref*>& parts, size_t dim) {
  Shape s = parts[0]->shape;
  s[dim] = 0;
  for (const Ref* p : parts) s[dim] += p->shape[dim];
  Ref out(s);
  int64_t at = 0;
  for (const Ref* p : parts) {
    for_each_index(p->shape,
                   [&](const std::vector<int64_t>& idx) { out.at(with(idx, dim, idx[dim] + at)) = p->at(idx); });
    at += p->shape[dim];
  }
  return out;
}

// numpy matmul; *abs_sum gets the largest sum_k |a_ik b_kj| (what bounds the rounding error).
Ref ref_matmul(Ref a, Ref b, double* abs_sum) {
  const bool va = a.shape.size() == 1, vb = b.shape.size() == 1;
  if (va) a.shape = {1, a.shape[0]};
  if (vb) b.shape = {b.shape[0], 1};
  const size_t ra = a.shape.size(), rb = b.shape.size();
  const int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
  const Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                       Shape(b.shape.begin(), b.shape.end() - 2), "ref_matmul");
  Shape s = batch;
  s.push_back(m);
  s.push_back(n);
  Ref out(s);
  *abs_sum = 0;
  auto operand_index = [&](const Ref& x, const std::vector<int64_t>& idx, int64_t r, int64_t col) {
    const size_t rx = x.shape.size(), lead = batch.size() - (rx - 2);
    std::vector<int64_t> j(rx);
    for (size_t d = 0; d + 2 < rx; ++d) j[d] = x.shape[d] == 1 ? 0 : idx[lead + d];
    j[rx - 2] = r;
    j[rx - 1] = col;
    return j;
  };
  int64_t flat = 0;
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    const int64_t i = idx[idx.size() - 2], jj = idx[idx.size() - 1];
    double acc = 0, abs_acc = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const double p = a.at(operand_index(a, idx, i, kk)) * b.at(operand_index(b, idx, kk, jj));
      acc += p;
      abs_acc += std::fabs(p);
    }
    out.v[static_cast<size_t>(flat++)] = acc;
    *abs_sum = std::max(*abs_sum, abs_acc);
  });
  Shape final_shape = batch;
  if (!va) final_shape.push_back(m);
  if (!vb) final_shape.push_back(n);
  out.shape = final_shape;
  return out;
}

// Checks a @ b against the reference: the output rounded once to its dtype, plus the accumulation
// error of f32 (bf16 / f16 / f8 / f32 inputs) or f64 sums, about sqrt(K) roundings of the partial
// sums (2x margin), bounded by the largest sum of |products|.
void expect_matmul(Ctx& c, const Tensor& a, const Tensor& b, const Ref& ra, const Ref& rb) {
  double abs_sum = 0;
  const Ref exact = ref_matmul(ra, rb, &abs_sum);
  const int64_t k = a.shape()[a.rank() - 1];
  const double u = c.dtype() == DType::F64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  Tol tol = tol_for(c.dtype());
  tol.atol += 2 * std::sqrt(static_cast<double>(k)) * u * abs_sum;
  c.expect(a.matmul(b), round_to(c.dtype(), exact), tol);
}

// ---- case bodies --------------------------------------------------------------------------------

void case_index_select(Ctx& c) {
  const Tensor src = c.input(c.shape({5, 7, 3}));
  const size_t r = src.rank();
  for (DType idt : kIdDTypes)
    for (size_t dim : {size_t{0}, r - 3, r - 2, r - 1}) {
      const int64_t size = src.shape()[dim];
      if (size == 0) {  // only empty ids fit an empty dim
        const Tensor none = Tensor::zeros({0}, idt, c.device());
        c.expect(src.index_select(none, static_cast<int64_t>(dim)), ref_index_select(c.ref(src), Ref({0}), dim));
        continue;
      }
      const double hi = static_cast<double>(size - 1);
      const Tensor ids = c.input(ids_shape(c, 6), idt, 0, hi);
      c.expect(src.index_select(ids, static_cast<int64_t>(dim)), ref_index_select(c.ref(src), c.ref(ids), dim));
      // ids with a stride of 3: a column of a 2-d tensor
      const Tensor table = c.input_contiguous({5, 3}, idt, 0, hi);
      Ref column({5});
      for (int64_t i = 0; i < 5; ++i) column.v[static_cast<size_t>(i)] = c.ref(table).at({i, 1});
      c.expect(src.index_select(table.select(1, 1), static_cast<int64_t>(dim)),
               ref_index_select(c.ref(src), column, dim));
    }
}

void case_gather(Ctx& c) {
  const Tensor src = c.input(c.shape({4, 6, 5}));
  const size_t r = src.rank();
  for (DType idt : kIdDTypes)
    for (size_t dim : {size_t{0}, r - 3, r - 2, r - 1}) {
      Shape is = src.shape();
      for (size_t d = 0; d < r; ++d) {
        if (d == dim)
          is[d] = src.shape()[d] == 0 ? 0 : 7;  // longer than src along dim: ids may repeat
        else if (is[d] > 1)
          is[d] -= 1;  // shorter than src elsewhere
      }
      const int64_t size = src.shape()[dim];
      const Tensor ids = c.input(is, idt, 0, static_cast<double>(std::max<int64_t>(size - 1, 0)));
      c.expect(src.gather(ids, static_cast<int64_t>(dim)), ref_gather(c.ref(src), c.ref(ids), dim));
    }
}

// Ids along dim with no repeated target on any line (scatter's result is unspecified with repeats).
Ref distinct_ids(Ctx& c, const Shape& ids_shape, size_t dim, int64_t size) {
  Ref r(ids_shape);
  std::vector<int64_t> perm(static_cast<size_t>(size));
  for_each_index(ids_shape, [&](const std::vector<int64_t>& idx) {
    if (idx[dim] != 0) return;
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), c.rng());
    for (int64_t i = 0; i < ids_shape[dim]; ++i)
      r.at(with(idx, dim, i)) = static_cast<double>(perm[static_cast<size_t>(i)]);
  });
  return r;
}

// Shapes for scatter: ids no larger than dst (off dim) and src (everywhere); src one larger.
void scatter_shapes(const Shape& dst, size_t dim, int64_t along, Shape* ids, Shape* src) {
  *ids = dst;
  *src = dst;
  for (size_t d = 0; d < dst.size(); ++d) {
    if (d == dim)
      (*ids)[d] = dst[d] == 0 ? 0 : along;
    else if ((*ids)[d] > 1)
      (*ids)[d] -= 1;
    (*src)[d] = (*ids)[d] + 1;
  }
}

void case_scatter(Ctx& c) {
  const Tensor dst = c.input(c.shape({5, 6, 4}));
  const size_t r = dst.rank();
  for (DType idt : kIdDTypes)
    for (size_t dim : {size_t{0}, r - 3, r - 2, r - 1}) {
      Shape is, ss;
      scatter_shapes(dst.shape(), dim, std::min<int64_t>(3, dst.shape()[dim]), &is, &ss);
      // A broadcast layout repeats ids along its broadcast dim: along dim that would repeat targets.
      if (c.layout() == LayoutKind::Broadcast) {
        size_t bd = 0;
        while (bd < r && is[bd] <= 1) ++bd;
        if (bd == dim) continue;
      }
      const Tensor ids = c.input_values(distinct_ids(c, is, dim, dst.shape()[dim]), idt);
      const Tensor src = c.input(ss);
      c.expect(dst.scatter(ids, src, static_cast<int64_t>(dim)),
               ref_scatter(c.ref(dst), c.ref(ids), c.ref(src), dim, false));
    }
}

void case_scatter_add(Ctx& c) {
  const Tensor dst = c.input_values(small_ints(c, c.shape({5, 6, 4}), -2, 2), c.dtype());
  const size_t r = dst.rank();
  for (DType idt : kIdDTypes)
    for (size_t dim : {size_t{0}, r - 3, r - 2, r - 1}) {
      Shape is, ss;
      scatter_shapes(dst.shape(), dim, 3, &is, &ss);  // up to 3 adds per target: repeats included
      const int64_t size = dst.shape()[dim];
      const Tensor ids = c.input(is, idt, 0, static_cast<double>(std::max<int64_t>(size - 1, 0)));
      const Tensor src = c.input_values(small_ints(c, ss, -2, 2), c.dtype());
      c.expect(dst.scatter_add(ids, src, static_cast<int64_t>(dim)),
               ref_scatter(c.ref(dst), c.ref(ids), c.ref(src), dim, true));
    }
}

void index_add_body(Ctx& c, const Shape& dst_shape, int64_t n_ids) {
  const Tensor dst = c.input_values(small_ints(c, dst_shape, -2, 2), c.dtype());
  const size_t r = dst.rank();
  for (DType idt : kIdDTypes)
    for (size_t dim : {size_t{0}, r - 2, r - 1}) {
      const int64_t size = dst.shape()[dim];
      const Tensor ids = c.input(size == 0 ? Shape{0} : ids_shape(c, n_ids), idt, 0,
                                 static_cast<double>(std::max<int64_t>(size - 1, 0)));
      Shape ss = dst.shape();
      ss[dim] = ids.numel();
      const Tensor src = c.input_values(small_ints(c, ss, -2, 2), c.dtype());
      c.expect(dst.index_add(ids, src, static_cast<int64_t>(dim)),
               ref_index_add(c.ref(dst), c.ref(ids), c.ref(src), dim));
    }
}

void case_copy_strided(Ctx& c) {
  const Tensor src = c.input(c.shape({4, 5, 6}));
  const Shape s = src.shape();
  const size_t r = s.size();
  // Destination 1: a transposed window of a larger tensor. Destination 2: a narrowed window.
  for (bool transposed : {true, false}) {
    Shape big_shape = s;
    if (transposed) std::swap(big_shape[r - 1], big_shape[r - 2]);
    Shape window = big_shape;
    for (int64_t& d : big_shape) d += 2;
    const Tensor big = c.input_contiguous(big_shape, c.dtype(), -2, 2);
    Tensor view = big;
    for (size_t d = 0; d < r; ++d) view = view.narrow(static_cast<int64_t>(d), 1, window[d]);
    if (transposed) view = view.transpose(-1, -2);
    Ref expected = c.ref(big);
    view.copy_from(src);
    for_each_index(s, [&](const std::vector<int64_t>& idx) {
      std::vector<int64_t> at = idx;
      if (transposed) std::swap(at[r - 1], at[r - 2]);
      for (int64_t& v : at) v += 1;
      expected.at(at) = c.ref(src).at(idx);
    });
    c.expect(big, expected);
  }
  // A source of another dtype, broadcast along its first dim: cast on the way.
  Shape one = s;
  one[0] = 1;
  const Tensor f64src = c.input_contiguous(one, DType::F64, -2, 2);
  Tensor dst = Tensor::zeros(s, c.dtype(), c.device());
  dst.copy_from(f64src);
  Ref expected(s);
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    expected.at(idx) = round_to(c.dtype(), c.ref(f64src).at(with(idx, 0, 0)));
  });
  c.expect(dst, expected);
}

void case_copy2d(Ctx& c) {
  const Tensor src = c.input_contiguous({8, 13}, c.dtype(), -2, 2);
  struct Args {
    int64_t rows, cols, src_stride, dst_stride, src_offset, dst_offset;
  };
  for (const Args& a : {Args{5, 7, 13, 17, 14, 3}, Args{3, 13, 13, 13, 0, 0}, Args{4, 6, 0, 20, 90, 1},
                        Args{0, 5, 13, 17, 0, 0}, Args{8, 13, 13, 19, 0, 7}}) {
    Tensor dst = c.input_contiguous({9, 17}, c.dtype(), -2, 2);
    Ref expected = c.ref(dst);
    copy2d(src, dst, a.rows, a.cols, a.src_stride, a.dst_stride, a.src_offset, a.dst_offset);
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t j = 0; j < a.cols; ++j)
        expected.v[static_cast<size_t>(a.dst_offset + i * a.dst_stride + j)] =
            c.ref(src).v[static_cast<size_t>(a.src_offset + i * a.src_stride + j)];
    c.expect(dst, expected);
  }
}

void case_cat(Ctx& c) {
  const Shape base = c.shape({4, 3, 5});
  for (size_t dim = 0; dim < base.size(); ++dim) {
    std::vector<Tensor> parts;
    std::vector<const Ref*> refs;
    for (int64_t len : {2, 0, 3, 1}) {
      Shape s = base;
      s[dim] = len;
      parts.push_back(c.input(s));
    }
    for (const Tensor& t : parts) refs.push_back(&c.ref(t));
    c.expect(cat(parts, static_cast<int64_t>(dim)), ref_cat(refs, dim));
  }
}

void case_matmul(Ctx& c) {
  const int64_t m = 13, k = 21, n = 10;
  auto check = [&](const Tensor& a, const Tensor& b) { expect_matmul(c, a, b, c.ref(a), c.ref(b)); };
  switch (c.layout()) {
    case LayoutKind::Contiguous:
      check(c.input({m, k}), c.input({k, n}));
      check(c.input({3, m, k}), c.input({3, k, n}));
      check(c.input({1, 1}), c.input({1, 1}));
      check(c.input({70, 130}), c.input({130, 90}));  // big enough for a multithreaded BLAS call
      break;
    case LayoutKind::Transposed:  // unit stride in the second-to-last dim: passed with a transpose flag
      check(c.input({m, k}), c.input({k, n}));
      check(c.input({2, m, k}), c.input_contiguous({2, k, n}, c.dtype(), -2, 2));
      check(c.input_contiguous({2, m, k}, c.dtype(), -2, 2), c.input({2, k, n}));
      check(c.input({1, k}), c.input({k, 1}));
      break;
    case LayoutKind::Narrowed:
      check(c.input({m, k}), c.input({k, n}));
      check(c.input({2, m, k}), c.input({2, k, n}));
      break;
    case LayoutKind::Broadcast:  // stride-0 batch dims, and a stride-0 row dim of a 2-d operand
      check(c.input({2, 1, m, k}), c.input({3, k, n}));
      check(c.input({m, k}), c.input({k, n}));
      check(c.input({4, m, k}), c.input({k, n}));
      break;
    case LayoutKind::ZeroSize:
      check(c.input({0, k}), c.input({k, n}));
      check(c.input({m, 0}), c.input({0, n}));  // K == 0: zeros
      check(c.input({m, k}), c.input({k, 0}));
      check(c.input({0, m, k}), c.input({1, k, n}));
      check(c.input({2, m, 0}), c.input({1, 0, n}));
      break;
    case LayoutKind::HighRank:
      check(c.input(c.shape({m, k})), c.input({3, 1, k, n}));
      check(c.input(c.shape({m, k})), c.input(c.shape({k, n})));
      break;
  }
}

void case_matmul_vectors(Ctx& c) {
  const int64_t m = 9, k = 17, n = 11;
  auto check = [&](const Tensor& a, const Tensor& b) { expect_matmul(c, a, b, c.ref(a), c.ref(b)); };
  check(c.input({k}), c.input({k, n}));
  check(c.input({m, k}), c.input({k}));
  check(c.input({k}), c.input({k}));
  check(c.input({k}), c.input({2, k, n}));
  check(c.input({2, 3, m, k}), c.input({k}));
}

}  // namespace

void register_index_cases(Cases& cases) {
  cases.push_back({Op::IndexSelect, "", kAllLayouts, case_index_select});
  cases.push_back({Op::Gather, "", kAllLayouts, case_gather});
  cases.push_back({Op::Scatter, "", kAllLayouts, case_scatter});
  cases.push_back({Op::ScatterAdd, "", kAllLayouts, case_scatter_add});
  cases.push_back({Op::IndexAdd, "", kAllLayouts, [](Ctx& c) { index_add_body(c, c.shape({5, 6, 4}), 4); }});
  // Slices big enough for the CPU backend to split one slice across threads.
  cases.push_back({Op::IndexAdd, "large slices", kContiguousOnly, [](Ctx& c) { index_add_body(c, {6, 190, 190}, 5); }});
  cases.push_back({Op::CopyStrided, "", kAllLayouts, case_copy_strided});
  cases.push_back({Op::Copy2d, "", kContiguousOnly, case_copy2d});
  cases.push_back({Op::Cat, "", kAllLayouts, case_cat});
  cases.push_back({Op::Matmul, "", kAllLayouts, case_matmul});
  cases.push_back({Op::Matmul, "1-d operands", kContiguousOnly, case_matmul_vectors});
}

}  // namespace wick::check
