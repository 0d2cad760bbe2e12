// Conformance cases of the elementwise ops: unary (with and without parameters), binary with
// numpy broadcasting, comparisons, where_cond and to_dtype. The references are written here in
// double (integer ops in exact integer arithmetic, wrapping where the op wraps).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "check/harness.h"

namespace wick::check {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Range {
  double lo, hi;
};

// [lo, hi] cut to what dtype d holds, so that integer inputs are stored exactly.
Range clip(DType d, Range r) {
  if (is_float(d)) return r;
  const auto [lo, hi] = int_limits(d);
  return {std::max(r.lo, lo), std::min(r.hi, hi)};
}

// The exact integer v reduced modulo 2^bits of d (two's complement for i64).
double wrap_int(DType d, __int128 v) { return wrap_to(d, v); }
__int128 as_int(double v) { return static_cast<__int128>(static_cast<int64_t>(v)); }

Ref map3(const Ref& a, const Ref& b, const Ref& c, const std::function<double(double, double, double)>& f) {
  const Shape s = broadcast_shapes(broadcast_shapes(a.shape, b.shape, "map3"), c.shape, "map3");
  Ref r(s);
  int64_t flat = 0;
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    auto pick = [&](const Ref& x) {
      std::vector<int64_t> j(x.shape.size());
      const size_t lead = s.size() - x.shape.size();
      for (size_t d = 0; d < x.shape.size(); ++d) j[d] = x.shape[d] == 1 ? 0 : idx[lead + d];
      return x.at(j);
    };
    r.v[static_cast<size_t>(flat++)] = f(pick(a), pick(b), pick(c));
  });
  return r;
}

// ---- unary -----------------------------------------------------------------------------------

using UnaryRun = std::function<Tensor(const Tensor&)>;
using FloatRef = std::function<double(double)>;
using IntRef = std::function<double(DType, double)>;  // integer dtypes; nullptr: use the FloatRef

struct UnarySpec {
  Op op;
  std::string variant;
  UnaryRun run;
  FloatRef fref;
  Range frange{-2, 2};
  Range irange{-1e12, 1e12};
  IntRef iref = nullptr;
  double tol_scale = 1;
};

void add_unary(Cases& cases, UnarySpec s) {
  cases.push_back({s.op, s.variant, kAllLayouts, [s](Ctx& c) {
                     const DType d = c.dtype();
                     const Range r = is_float(d) ? s.frange : clip(d, s.irange);
                     Tensor x = c.input(c.shape({23, 17}), r.lo, r.hi);
                     const Ref& rx = c.ref(x);
                     Ref e = (is_int(d) && s.iref) ? map(rx, [&](double v) { return s.iref(d, v); }) : map(rx, s.fref);
                     c.expect(s.run(x), e, tol_for(d, s.tol_scale));
                   }});
}

// Integer rounding ops and abs of unsigned values are the identity; these refs say so per dtype.
double sign_ref(double v) {
  if (std::isnan(v)) return v;
  return v > 0 ? 1 : (v < 0 ? -1 : 0);
}

void register_unary(Cases& cases) {
  auto ex = [](double v) { return std::exp(v); };
  add_unary(cases, {Op::Affine,
                    "",
                    [](const Tensor& x) { return x.affine(1.5, -0.25); },
                    [](double v) { return v * 1.5 - 0.25; },
                    {-2, 2},
                    {-1e12, 1e12},
                    // integers: computed in f64, converted with saturation and truncation
                    [](DType d, double v) { return round_to(d, v * 1.5 - 0.25); },
                    2});
  add_unary(cases, {Op::Affine,
                    "negative mul",
                    [](const Tensor& x) { return x.affine(-3, 7); },
                    [](double v) { return 7 - 3 * v; },
                    {-2, 2},
                    {-1e12, 1e12},
                    [](DType d, double v) { return round_to(d, 7 - 3 * v); },
                    2});
  add_unary(cases, {Op::Powf,
                    "",
                    [](const Tensor& x) { return x.powf(2.5); },
                    [](double v) { return std::pow(v, 2.5); },
                    {0.1, 2.5},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::Powf,
                    "integer exponent, negative base",
                    [](const Tensor& x) { return x.powf(3); },
                    [](double v) { return v * v * v; },
                    {-2, 2},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::Elu,
                    "",
                    [](const Tensor& x) { return x.elu(0.7); },
                    [](double v) { return v > 0 ? v : 0.7 * (std::exp(v) - 1); },
                    {-3, 2},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::LeakyRelu,
                    "",
                    [](const Tensor& x) { return x.leaky_relu(); },
                    [](double v) { return v > 0 ? v : 0.01 * v; },
                    {-3, 2},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::LeakyRelu,
                    "slope above 1",
                    [](const Tensor& x) { return x.leaky_relu(1.75); },
                    [](double v) { return v > 0 ? v : 1.75 * v; },
                    {-3, 2},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::Clamp,
                    "",
                    [](const Tensor& x) { return x.clamp(-0.5, 1.25); },
                    [](double v) { return std::min(std::max(v, -0.5), 1.25); },
                    {-2, 2},
                    {-1e12, 1e12},
                    // fractional bounds of an integer tensor move inward: [0, 1]
                    [](DType, double v) { return std::min(std::max(v, 0.0), 1.0); }});
  add_unary(cases, {Op::Clamp,
                    "integer bounds",
                    [](const Tensor& x) { return x.clamp(int64_t{-7}, int64_t{200}); },
                    [](double v) { return std::min(std::max(v, -7.0), 200.0); },
                    {-300, 300},
                    {-1000, 1000}});
  add_unary(cases, {Op::Exp, "", [](const Tensor& x) { return x.exp(); }, ex});
  add_unary(cases,
            {Op::Log, "", [](const Tensor& x) { return x.log(); }, [](double v) { return std::log(v); }, {0.05, 4}});
  add_unary(cases,
            {Op::Sin, "", [](const Tensor& x) { return x.sin(); }, [](double v) { return std::sin(v); }, {-4, 4}});
  add_unary(cases,
            {Op::Cos, "", [](const Tensor& x) { return x.cos(); }, [](double v) { return std::cos(v); }, {-4, 4}});
  add_unary(cases,
            {Op::Tanh, "", [](const Tensor& x) { return x.tanh(); }, [](double v) { return std::tanh(v); }, {-3, 3}});
  add_unary(cases, {Op::Neg, "", [](const Tensor& x) { return x.neg(); }, [](double v) { return -v; }});
  add_unary(cases,
            {Op::Recip, "", [](const Tensor& x) { return x.recip(); }, [](double v) { return 1 / v; }, {0.25, 3}});
  add_unary(
      cases,
      {Op::Recip, "negative", [](const Tensor& x) { return x.recip(); }, [](double v) { return 1 / v; }, {-3, -0.25}});
  // Integer squares wrap: u8 and u32 over their whole range, i64 up to 1e12 (1e24 wraps).
  add_unary(cases, {Op::Sqr,
                    "",
                    [](const Tensor& x) { return x.sqr(); },
                    [](double v) { return v * v; },
                    {-2, 2},
                    {-1e12, 1e12},
                    [](DType d, double v) { return wrap_int(d, as_int(v) * as_int(v)); }});
  add_unary(cases,
            {Op::Sqrt, "", [](const Tensor& x) { return x.sqrt(); }, [](double v) { return std::sqrt(v); }, {0, 4}});
  add_unary(cases, {Op::Abs, "", [](const Tensor& x) { return x.abs(); }, [](double v) { return std::fabs(v); }});
  add_unary(cases,
            {Op::Ceil, "", [](const Tensor& x) { return x.ceil(); }, [](double v) { return std::ceil(v); }, {-3, 3}});
  add_unary(
      cases,
      {Op::Floor, "", [](const Tensor& x) { return x.floor(); }, [](double v) { return std::floor(v); }, {-3, 3}});
  // Half away from zero; bf16/f16/f8 inputs include the ties +-0.5, +-1.5, +-2.5.
  add_unary(cases, {Op::Round,
                    "",
                    [](const Tensor& x) { return x.round(); },
                    [](double v) {
                      const double a = std::floor(std::fabs(v) + 0.5);
                      return v < 0 ? -a : a;
                    },
                    {-3, 3}});
  add_unary(cases, {Op::Sign, "", [](const Tensor& x) { return x.sign(); }, sign_ref, {-2, 2}, {-3, 3}});
  add_unary(cases, {Op::Relu, "", [](const Tensor& x) { return x.relu(); }, [](double v) { return v > 0 ? v : 0.0; }});
  add_unary(cases, {Op::Gelu,
                    "",
                    [](const Tensor& x) { return x.gelu(); },
                    [](double v) {
                      const double k = std::sqrt(2 / 3.14159265358979323846);
                      return 0.5 * v * (1 + std::tanh(k * (v + 0.044715 * v * v * v)));
                    },
                    {-3, 3},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::GeluErf,
                    "",
                    [](const Tensor& x) { return x.gelu_erf(); },
                    [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); },
                    {-3, 3},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::Erf, "", [](const Tensor& x) { return x.erf(); }, [](double v) { return std::erf(v); }});
  add_unary(cases, {Op::Silu,
                    "",
                    [](const Tensor& x) { return x.silu(); },
                    [](double v) { return v / (1 + std::exp(-v)); },
                    {-4, 4},
                    {},
                    nullptr,
                    2});
  add_unary(cases, {Op::Sigmoid,
                    "",
                    [](const Tensor& x) { return x.sigmoid(); },
                    [](double v) { return 1 / (1 + std::exp(-v)); },
                    {-6, 6}});
}

// ---- binary ----------------------------------------------------------------------------------

using BinaryRun = std::function<Tensor(const Tensor&, const Tensor&)>;
using FloatRef2 = std::function<double(double, double)>;
using IntRef2 = std::function<double(DType, double, double)>;

struct BinarySpec {
  Op op;
  BinaryRun run;
  FloatRef2 fref;
  IntRef2 iref;  // nullptr: the FloatRef2 is exact for integers too
  Range fa{-2, 2}, fb{-2, 2};
  Range ia{-1e12, 1e12}, ib{-1e12, 1e12};
};

void add_binary(Cases& cases, const BinarySpec& s) {
  auto expected = [s](DType d, const Ref& a, const Ref& b) {
    if (is_int(d) && s.iref) return map2(a, b, [&](double x, double y) { return s.iref(d, x, y); });
    return map2(a, b, s.fref);
  };
  auto ranges = [s](DType d) {
    return is_float(d) ? std::pair<Range, Range>{s.fa, s.fb} : std::pair<Range, Range>{clip(d, s.ia), clip(d, s.ib)};
  };
  // Both operands in the layout kind, same shape.
  cases.push_back({s.op, "same shape", kAllLayouts, [=](Ctx& c) {
                     const auto [ra, rb] = ranges(c.dtype());
                     Tensor a = c.input(c.shape({19, 23}), ra.lo, ra.hi);
                     Tensor b = c.input(c.shape({19, 23}), rb.lo, rb.hi);
                     c.expect(s.run(a, b), expected(c.dtype(), c.ref(a), c.ref(b)));
                   }});
  // [.., 5, 1, 7] (layout kind) with [4, 1] (contiguous), both orders: real broadcasting on both
  // sides and mixed layouts.
  cases.push_back({s.op, "broadcast", kAllLayouts, [=](Ctx& c) {
                     const auto [ra, rb] = ranges(c.dtype());
                     Tensor a = c.input(c.shape({5, 1, 7}), ra.lo, ra.hi);
                     Tensor b = c.input_contiguous({4, 1}, c.dtype(), rb.lo, rb.hi);
                     c.expect(s.run(a, b), expected(c.dtype(), c.ref(a), c.ref(b)));
                     Tensor a2 = c.input_contiguous({4, 1}, c.dtype(), ra.lo, ra.hi);
                     Tensor b2 = c.input(c.shape({5, 1, 7}), rb.lo, rb.hi);
                     c.expect(s.run(a2, b2), expected(c.dtype(), c.ref(a2), c.ref(b2)));
                   }});
  // A rank-0 operand on either side (the scalar-broadcast fast path).
  cases.push_back({s.op, "scalar", kAllLayouts, [=](Ctx& c) {
                     const auto [ra, rb] = ranges(c.dtype());
                     Tensor a = c.input(c.shape({29, 31}), ra.lo, ra.hi);
                     Tensor b = c.input_contiguous(Shape{}, c.dtype(), rb.lo, rb.hi);
                     c.expect(s.run(a, b), expected(c.dtype(), c.ref(a), c.ref(b)));
                     Tensor a2 = c.input_contiguous(Shape{}, c.dtype(), ra.lo, ra.hi);
                     Tensor b2 = c.input(c.shape({29, 31}), rb.lo, rb.hi);
                     c.expect(s.run(a2, b2), expected(c.dtype(), c.ref(a2), c.ref(b2)));
                   }});
  // Big enough to be split over threads (and chunks within a row); a row broadcast along dim 0.
  cases.push_back({s.op, "large", layout_bit(LayoutKind::Contiguous) | layout_bit(LayoutKind::Transposed), [=](Ctx& c) {
                     const auto [ra, rb] = ranges(c.dtype());
                     Tensor a = c.input(c.shape({150, 520}), ra.lo, ra.hi);
                     Tensor b = c.input(c.shape({150, 520}), rb.lo, rb.hi);
                     c.expect(s.run(a, b), expected(c.dtype(), c.ref(a), c.ref(b)));
                     Tensor row = c.input_contiguous({520}, c.dtype(), rb.lo, rb.hi);
                     c.expect(s.run(a, row), expected(c.dtype(), c.ref(a), c.ref(row)));
                   }});
}

double idiv(double x, double y) {  // the Note [Integer elementwise semantics] rules
  if (y == 0) return 0;
  const int64_t a = static_cast<int64_t>(x), b = static_cast<int64_t>(y);
  return static_cast<double>(a / b);  // |a| <= 1e12 here, so no INT64_MIN / -1 (tested separately)
}

void register_binary(Cases& cases) {
  add_binary(cases, {Op::Add, [](const Tensor& a, const Tensor& b) { return a.add(b); },
                     [](double x, double y) { return x + y; },
                     [](DType d, double x, double y) { return wrap_int(d, as_int(x) + as_int(y)); }});
  add_binary(cases, {Op::Sub, [](const Tensor& a, const Tensor& b) { return a.sub(b); },
                     [](double x, double y) { return x - y; },
                     [](DType d, double x, double y) { return wrap_int(d, as_int(x) - as_int(y)); }});
  add_binary(cases, {Op::Mul, [](const Tensor& a, const Tensor& b) { return a.mul(b); },
                     [](double x, double y) { return x * y; },
                     [](DType d, double x, double y) { return wrap_int(d, as_int(x) * as_int(y)); }});
  // Float divisors away from 0; integer divisors small, zero included.
  add_binary(cases, {Op::Div,
                     [](const Tensor& a, const Tensor& b) { return a.div(b); },
                     [](double x, double y) { return x / y; },
                     [](DType, double x, double y) { return idiv(x, y); },
                     {-2, 2},
                     {0.4, 2},
                     {-1e12, 1e12},
                     {-5, 5}});
  add_binary(cases, {Op::Maximum, [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
                     [](double x, double y) { return x > y ? x : y; }, nullptr});
  add_binary(cases, {Op::Minimum, [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
                     [](double x, double y) { return x < y ? x : y; }, nullptr});
  add_binary(cases, {Op::Pow,
                     [](const Tensor& a, const Tensor& b) { return a.pow(b); },
                     [](double x, double y) { return std::pow(x, y); },
                     nullptr,
                     {0.1, 2},
                     {-2, 2}});
  add_binary(cases, {Op::SiluMul, [](const Tensor& a, const Tensor& b) { return a.silu_mul(b); },
                     [](double x, double y) { return x / (1 + std::exp(-x)) * y; }, nullptr});
}

// Values from a small set (so that equal pairs are common), NaN included for floats.
Ref pick_values(Ctx& c, const Shape& s) {
  static const double kFloatSet[] = {-1.5, -1, 0, 0.5, 1, 2, kNaN};
  static const double kIntSet[] = {0, 1, 2, 3, 7};
  Ref r(s);
  const bool fl = is_float(c.dtype());
  std::uniform_int_distribution<int> u(0, fl ? 6 : 4);
  for (double& v : r.v) v = fl ? kFloatSet[u(c.rng())] : kIntSet[u(c.rng())];
  return r;
}

void add_compare(Cases& cases, Op op, BinaryRun run, std::function<bool(double, double)> f) {
  auto expected = [f](const Ref& a, const Ref& b) {
    return map2(a, b, [&](double x, double y) { return f(x, y) ? 1.0 : 0.0; });
  };
  cases.push_back({op, "same shape", kAllLayouts, [=](Ctx& c) {
                     Tensor a = c.input_values(pick_values(c, c.shape({17, 13})), c.dtype());
                     Tensor b = c.input_values(pick_values(c, c.shape({17, 13})), c.dtype());
                     c.expect(run(a, b), expected(c.ref(a), c.ref(b)), DType::U8, Tol{});
                   }});
  cases.push_back({op, "broadcast", kAllLayouts, [=](Ctx& c) {
                     Tensor a = c.input_values(pick_values(c, c.shape({5, 1, 7})), c.dtype());
                     Tensor b = c.input_contiguous({4, 1}, c.dtype(), -2, 2);
                     c.expect(run(a, b), expected(c.ref(a), c.ref(b)), DType::U8, Tol{});
                     c.expect(run(b, a), expected(c.ref(b), c.ref(a)), DType::U8, Tol{});
                     Tensor s = c.input_contiguous(Shape{}, c.dtype(), 0, 1);
                     c.expect(run(a, s), expected(c.ref(a), c.ref(s)), DType::U8, Tol{});
                   }});
}

void register_compare(Cases& cases) {
  // IEEE in double: every comparison with NaN is false except !=.
  add_compare(
      cases, Op::Eq, [](const Tensor& a, const Tensor& b) { return a.eq(b); },
      [](double x, double y) { return x == y; });
  add_compare(
      cases, Op::Ne, [](const Tensor& a, const Tensor& b) { return a.ne(b); },
      [](double x, double y) { return x != y; });
  add_compare(
      cases, Op::Lt, [](const Tensor& a, const Tensor& b) { return a.lt(b); },
      [](double x, double y) { return x < y; });
  add_compare(
      cases, Op::Le, [](const Tensor& a, const Tensor& b) { return a.le(b); },
      [](double x, double y) { return x <= y; });
  add_compare(
      cases, Op::Gt, [](const Tensor& a, const Tensor& b) { return a.gt(b); },
      [](double x, double y) { return x > y; });
  add_compare(
      cases, Op::Ge, [](const Tensor& a, const Tensor& b) { return a.ge(b); },
      [](double x, double y) { return x >= y; });
}

// ---- where_cond ------------------------------------------------------------------------------

void register_where(Cases& cases) {
  for (DType cd : dtypes_in(kIntTypes)) {
    const std::string name = "cond " + std::string(dtype_name(cd));
    auto select = [](double k, double t, double f) { return k != 0 ? t : f; };
    cases.push_back({Op::WhereCond, name + " same shape", kAllLayouts, [=](Ctx& c) {
                       Tensor k = c.input(c.shape({13, 11}), cd, 0, 2);
                       Tensor t = c.input(c.shape({13, 11}));
                       Tensor f = c.input(c.shape({13, 11}));
                       c.expect(k.where_cond(t, f), map3(c.ref(k), c.ref(t), c.ref(f), select));
                     }});
    // cond [.., 5, 1, 7] in the layout kind, on_true [4, 1], on_false [7] or a scalar.
    cases.push_back({Op::WhereCond, name + " broadcast", kAllLayouts, [=](Ctx& c) {
                       Tensor k = c.input(c.shape({5, 1, 7}), cd, 0, 2);
                       Tensor t = c.input_contiguous({4, 1}, c.dtype(), -2, 2);
                       Tensor f = c.input_contiguous({7}, c.dtype(), -2, 2);
                       c.expect(k.where_cond(t, f), map3(c.ref(k), c.ref(t), c.ref(f), select));
                       Tensor s = c.input_contiguous(Shape{}, c.dtype(), -2, 2);
                       Tensor x = c.input(c.shape({5, 4, 7}));
                       c.expect(k.where_cond(x, s), map3(c.ref(k), c.ref(x), c.ref(s), select));
                       c.expect(k.where_cond(s, x), map3(c.ref(k), c.ref(s), c.ref(x), select));
                     }});
  }
}

// ---- layouts that choose a GPU launch path ---------------------------------------------------
//
// A contiguous view that starts a few elements in is flat but misaligned for vector loads (the
// GPU takes its strided path instead of the flat one); nine dims that do not merge are more than
// one strided GPU launch describes, so the GPU launches once per index of the outer dims (Note
// [GPU launch plans] in src/gpu/kernels/plan.h). Inputs stay within [-2, 2]: no integer wraps.

struct View {
  Tensor t;
  Ref r;  // its values
};

// Elements [start, start + n) of a contiguous 1-d input.
View offset_view(Ctx& c, int64_t n, int64_t start, DType d, Range r) {
  const Tensor base = c.input_contiguous({n + start}, d, r.lo, r.hi);
  const Ref& rb = c.ref(base);
  Ref v(Shape{n});
  for (int64_t i = 0; i < n; ++i) v.v[static_cast<size_t>(i)] = rb.v[static_cast<size_t>(start + i)];
  return {base.narrow(0, start, n), v};
}

Shape rank9_shape(int64_t first = 2) {
  Shape s{first};
  for (int i = 1; i < 9; ++i) s.push_back(i % 2 ? 3 : 2);
  return s;
}

// A rank-9 input stored with its dims in reverse order, so that no two neighbours merge.
View reversed_view(Ctx& c, DType d, Range r) {
  const Shape s = rank9_shape();
  Shape stored;
  std::vector<int64_t> order;
  for (int i = 8; i >= 0; --i) {
    stored.push_back(s[static_cast<size_t>(i)]);
    order.push_back(i);
  }
  const Tensor base = c.input_contiguous(stored, d, r.lo, r.hi);
  const Ref& rb = c.ref(base);
  Ref v(s);
  for_each_index(
      s, [&](const std::vector<int64_t>& idx) { v.at(idx) = rb.at(std::vector<int64_t>(idx.rbegin(), idx.rend())); });
  return {base.permute(Dims(order)), v};
}

void register_launch_paths(Cases& cases) {
  auto sqr = [](double v) { return v * v; };
  auto plus = [](double x, double y) { return x + y; };
  auto select = [](double k, double t, double f) { return k != 0 ? t : f; };
  constexpr int64_t kN = 1003;  // not a multiple of any vector width
  cases.push_back({Op::Sqr, "misaligned view", kContiguousOnly, [=](Ctx& c) {
                     const View x = offset_view(c, kN, 1, c.dtype(), clip(c.dtype(), {-2, 2}));
                     c.expect(x.t.sqr(), map(x.r, sqr));
                   }});
  cases.push_back({Op::Sqr, "rank 9", kContiguousOnly, [=](Ctx& c) {
                     const View x = reversed_view(c, c.dtype(), clip(c.dtype(), {-2, 2}));
                     c.expect(x.t.sqr(), map(x.r, sqr));
                   }});
  cases.push_back({Op::Add, "misaligned view", kContiguousOnly, [=](Ctx& c) {
                     const Range r = clip(c.dtype(), {-2, 2});
                     const View a = offset_view(c, kN, 1, c.dtype(), r);
                     const View b = offset_view(c, kN, 3, c.dtype(), r);
                     c.expect(a.t.add(b.t), map2(a.r, b.r, plus));
                     const Tensor s = c.input_contiguous(Shape{}, c.dtype(), r.lo, r.hi);
                     c.expect(s.add(a.t), map2(c.ref(s), a.r, plus));
                   }});
  cases.push_back({Op::Add, "rank 9", kContiguousOnly, [=](Ctx& c) {
                     const Range r = clip(c.dtype(), {-2, 2});
                     const View a = reversed_view(c, c.dtype(), r);
                     const Tensor b = c.input_contiguous(rank9_shape(), c.dtype(), r.lo, r.hi);
                     c.expect(a.t.add(b), map2(a.r, c.ref(b), plus));
                     // broadcast along the outermost dim, the one the slices are taken over
                     const Tensor row = c.input_contiguous(rank9_shape(1), c.dtype(), r.lo, r.hi);
                     c.expect(row.add(a.t), map2(c.ref(row), a.r, plus));
                   }});
  cases.push_back({Op::WhereCond, "misaligned view", kContiguousOnly, [=](Ctx& c) {
                     const Range r = clip(c.dtype(), {-2, 2});
                     const View k = offset_view(c, kN, 1, DType::U8, {0, 2});
                     const View t = offset_view(c, kN, 2, c.dtype(), r);
                     const Tensor f = c.input_contiguous(Shape{}, c.dtype(), r.lo, r.hi);
                     c.expect(k.t.where_cond(t.t, f), map3(k.r, t.r, c.ref(f), select));
                   }});
  cases.push_back({Op::WhereCond, "rank 9", kContiguousOnly, [=](Ctx& c) {
                     const Range r = clip(c.dtype(), {-2, 2});
                     const View k = reversed_view(c, DType::I64, {0, 2});
                     const Tensor t = c.input_contiguous(rank9_shape(), c.dtype(), r.lo, r.hi);
                     const Tensor f = c.input_contiguous(rank9_shape(1), c.dtype(), r.lo, r.hi);
                     c.expect(k.t.where_cond(t, f), map3(k.r, c.ref(t), c.ref(f), select));
                   }});
}

// ---- to_dtype --------------------------------------------------------------------------------

// Inputs of the conversions: ties, bounds of every dtype, overflow, subnormals, inf and NaN. They
// are first stored in the source dtype (rounded, saturated) by input_values.
const std::vector<double>& float_specials() {
  static const std::vector<double> v = {0,
                                        -0.0,
                                        0.25,
                                        -0.75,
                                        1,
                                        -1,
                                        1.5,
                                        2.5,
                                        -2.5,
                                        3.5,
                                        100.7,
                                        255,
                                        255.9,
                                        256,
                                        257,
                                        -1.5,
                                        300,
                                        448,
                                        464,
                                        480,
                                        500,
                                        1000,
                                        65504,
                                        65520,
                                        70000,
                                        1e6 + 0.5,
                                        16777217,
                                        4294967295.0,
                                        4294967296.0,
                                        5e9,
                                        -5e9,
                                        3.0e38,
                                        1e300,
                                        9.3e18,
                                        -9.3e18,
                                        9223372036854775808.0,
                                        1e-3,
                                        1e-5,
                                        6e-8,
                                        1e-40,
                                        kInf,
                                        -kInf,
                                        kNaN,
                                        -200.5};
  return v;
}
const std::vector<double>& int_specials() {
  static const std::vector<double> v = {
      0, 1, 2, 127, 128, 255, 256, 257, -1, -255, 65535, 65536, 4294967295.0, 4294967296.0, -4294967296.0,
      // above a bf16 tie by less than an f32 ulp: one rounding, not two
      1077936129.0,                                          // 2^30 + 2^22 + 1
      4629700416936869888.0 + 18014398509481984.0 + 1024.0,  // 2^62 + 2^54 + 2^10
      16777217, 16777219, 9007199254740992.0, -9007199254740992.0, 123456789, -987654321, 448, 449, 65519, 65520};
  return v;
}

void register_to_dtype(Cases& cases) {
  cases.push_back({Op::ToDType, "", kAllLayouts, [](Ctx& c) {
                     const DType src = c.dtype();
                     Ref vals(c.shape({7, 13}));
                     const std::vector<double>& sp = is_float(src) ? float_specials() : int_specials();
                     std::uniform_real_distribution<double> mag(-12, 40);
                     std::uniform_int_distribution<int> sign(0, 1);
                     for (size_t i = 0; i < vals.v.size(); ++i) {
                       if (i < sp.size()) {
                         vals.v[i] = sp[i];
                       } else {  // log-uniform magnitudes over every dtype's range, both signs
                         const double m = std::exp2(mag(c.rng()));
                         vals.v[i] = sign(c.rng()) ? -m : m;
                         if (is_int(src)) vals.v[i] = std::trunc(vals.v[i]);
                       }
                     }
                     Tensor x = c.input_values(vals, src);
                     const Ref& rx = c.ref(x);
                     for (DType d : kAllDTypes) {
                       // Integer -> integer wraps (modulo 2^bits, as a C++ / PyTorch cast); every
                       // other conversion rounds to nearest even and saturates (round_to).
                       const Ref e = map(rx, [&](double v) {
                         return is_int(src) && is_int(d) ? wrap_int(d, as_int(v)) : round_to(d, v);
                       });
                       c.expect(x.to_dtype(d), e, d, Tol{});
                     }
                   }});
}

}  // namespace

void register_elementwise_cases(Cases& cases) {
  register_unary(cases);
  register_binary(cases);
  register_compare(cases);
  register_where(cases);
  register_launch_paths(cases);
  register_to_dtype(cases);
}

}  // namespace wick::check
