// Conformance cases for creation, transfer and random ops.
//
// Creation ops take no input tensors, so their cases run on the layout kinds that change the output
// shape (contiguous, zero-size, rank 6); const_set and to_host read or write through every layout.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/dispatch.h"
#include "backend/philox.h"
#include "check/harness.h"

namespace wick::check {

namespace {

constexpr uint32_t kShapeLayouts =
    layout_bit(LayoutKind::Contiguous) | layout_bit(LayoutKind::ZeroSize) | layout_bit(LayoutKind::HighRank);
constexpr Tol kExact{0, 0};

std::string num(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// The fill values for a dtype and what each must read back as (saturated for integers, rounded
// once for floats).
std::vector<std::pair<Scalar, double>> fill_values(DType d) {
  switch (d) {
    case DType::U8:
      return {{Scalar(200), 200}, {Scalar(255), 255}, {Scalar(300), 255},
              {Scalar(-1), 0},    {Scalar(2.9), 2},   {Scalar(1e9), 255}};
    case DType::U32:
      return {{Scalar(4000000000u), 4e9},
              {Scalar(4294967295u), 4294967295.0},
              {Scalar(-1), 0},
              {Scalar(int64_t{1} << 40), 4294967295.0},
              {Scalar(7.9), 7}};
    case DType::I64:
      return {{Scalar(int64_t{-123456789012}), -123456789012.0},
              {Scalar(-2.7), -2},
              {Scalar(1e30), 0x1p63},
              {Scalar(-1e30), -0x1p63}};
    case DType::I32:
      return {{Scalar(-2000000000), -2000000000.0},
              {Scalar(int64_t{3000000000}), 2147483647.0},
              {Scalar(int64_t{-3000000000}), -2147483648.0},
              {Scalar(-2.7), -2},
              {Scalar(1e30), 2147483647.0}};
    default:
      return {{Scalar(0.5), 0.5},
              {Scalar(-3.25), -3.25},
              {Scalar(7), 7},
              {Scalar(-2), -2},
              {Scalar(0.1), round_to(d, 0.1)},
              {Scalar(1e6), round_to(d, 1e6)},  // inf for f16, NaN for f8e4m3 (non-saturating)
              {Scalar(std::numeric_limits<double>::quiet_NaN()), std::numeric_limits<double>::quiet_NaN()}};
  }
}

// Element offsets of a layout, row-major.
std::vector<int64_t> offsets_of(const Layout& l) {
  std::vector<int64_t> out;
  for_each_index(l.shape(), [&](const std::vector<int64_t>& idx) {
    int64_t off = l.offset();
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * l.stride(d);
    out.push_back(off);
  });
  return out;
}

// The whole storage of t as a flat tensor (to see what a write into a view left alone).
Tensor whole_storage(const Tensor& t) {
  const int64_t elems = t.storage()->nbytes() / dtype_size(t.dtype());
  return Tensor(t.storage(), Layout(Shape{elems}), t.dtype(), t.device());
}

// const_set(v) into the view `x`: the view reads back v, the rest of its storage is unchanged. A
// view with a zero stride on a dim of size > 1 (a broadcast) is refused with InvalidArgument and
// nothing is written, as PyTorch refuses writes where several elements share one location.
void check_const_set(Ctx& c, Tensor x, Scalar v, double expected, const std::string& what) {
  const Tensor flat = whole_storage(x);
  Ref want = flat.numel() > 0 ? to_ref(flat) : Ref(flat.shape());
  bool shared = false;
  for (size_t d = 0; d < x.rank(); ++d) shared = shared || (x.strides()[d] == 0 && x.shape()[d] > 1);
  if (shared && x.numel() > 0) {
    c.expect_throw<InvalidArgument>([&] { x.const_set(v); }, what + ": const_set into a broadcast view");
    c.expect(flat, want, kExact);
    return;
  }
  for (int64_t off : offsets_of(x.layout())) want.v[static_cast<size_t>(off)] = expected;
  x.const_set(v);
  const size_t before = c.failures().size();
  c.expect(x, Ref(x.shape(), expected), kExact);
  c.expect(flat, want, kExact);
  if (c.failures().size() > before) c.fail(what + " (view " + x.layout().str() + ")");
}

// A value between lo and hi that reads back exactly in every dtype.
double set_value(DType d) {
  switch (d) {
    case DType::U8:
      return 77;
    case DType::U32:
      return 4000000000.0;
    case DType::I64:
      return -1099511627776.0;  // -2^40
    case DType::I32:
      return -1073741824.0;  // -2^30
    default:
      return -1.375;
  }
}
Scalar as_scalar(DType d, double v) {
  if (is_int(d)) return Scalar(static_cast<int64_t>(v));
  return Scalar(v);
}

void creation_cases(Cases& cases) {
  cases.push_back({Op::Zeros, "", kShapeLayouts, [](Ctx& c) {
                     const Shape s = c.shape({5, 7});
                     const Tensor t = Tensor::zeros(s, c.dtype(), c.device());
                     c.check(t.is_contiguous() && t.offset() == 0, "zeros is not a fresh contiguous tensor");
                     c.expect(t, Ref(s, 0), kExact);
                     // Every byte is zero (so also +0.0, not -0.0).
                     if (t.numel() > 0) {
                       std::vector<uint8_t> b(static_cast<size_t>(t.numel() * dtype_size(t.dtype())), 0xff);
                       t.to_host(b.data(), static_cast<int64_t>(b.size()));
                       bool zero = true;
                       for (uint8_t x : b) zero = zero && x == 0;
                       c.check(zero, "zeros has non-zero bytes");
                     }
                     c.expect(Tensor::zeros({}, c.dtype(), c.device()), Ref(Shape{}, 0), kExact);
                   }});
  cases.push_back({Op::Ones, "", kShapeLayouts, [](Ctx& c) {
                     const Shape s = c.shape({3, 11});
                     c.expect(Tensor::ones(s, c.dtype(), c.device()), Ref(s, 1), kExact);
                     c.expect(Tensor::ones({70001}, c.dtype(), c.device()), Ref(Shape{70001}, 1), kExact);
                   }});
  cases.push_back(
      {Op::Full, "", kShapeLayouts, [](Ctx& c) {
         const Shape s = c.shape({4, 9});
         for (const auto& [v, want] : fill_values(c.dtype())) {
           const Tensor t = Tensor::full(s, v, c.dtype(), c.device());
           const size_t before = c.failures().size();
           c.expect(t, Ref(s, want), kExact);
           if (c.failures().size() > before) c.fail("full with " + num(v.is_int ? double(v.i) : v.f));
         }
         // Integers beyond 2^53 are exact (the reference values are doubles, so check here).
         if (c.dtype() == DType::I64) {
           const int64_t big = (int64_t{1} << 62) + 1;
           for (int64_t v : {big, -big, INT64_MAX, INT64_MIN}) {
             const auto got = Tensor::full(s, Scalar(v), DType::I64, c.device()).to(Device::cpu()).to_vector<int64_t>();
             for (int64_t g : got) c.check(g == v, "full i64 " + std::to_string(v) + " read back " + std::to_string(g));
           }
         }
         if (c.dtype() == DType::U32) {
           const auto got =
               Tensor::full(s, Scalar(4000000001u), DType::U32, c.device()).to(Device::cpu()).to_vector<uint32_t>();
           for (uint32_t g : got) c.check(g == 4000000001u, "full u32 4000000001 read back " + std::to_string(g));
         }
         // A negative float keeps its sign bit through zero.
         if (is_float(c.dtype())) {
           const Tensor z = Tensor::full({1}, Scalar(-0.0), c.dtype(), c.device());
           c.check(std::signbit(to_ref(z).v[0]), "full(-0.0) lost the sign");
         }
       }});
  cases.push_back({Op::Arange, "", layout_bit(LayoutKind::Contiguous) | layout_bit(LayoutKind::ZeroSize), [](Ctx& c) {
                     const DType d = c.dtype();
                     std::vector<std::array<double, 3>> args;
                     if (c.layout() == LayoutKind::ZeroSize) {
                       args = {{3, 3, 1}, {5, 0, 1}, {0, 5, -1}, {-2, -2, -0.5}};
                     } else {
                       args = {{0, 10, 1}, {2, 11, 3}, {7, 3, -1}, {9, 0, -4}, {0, 256, 1}};
                       if (d != DType::U8) args.push_back({0, 5000, 1});
                       if (d != DType::U8) args.push_back({100000, 100037, 7});
                       if (is_signed(d)) args.insert(args.end(), {{-5, 5, 2}, {4, -4, -3}, {-20, -1, 5}});
                       if (is_float(d))
                         args.insert(args.end(), {{0, 1, 0.125}, {2.5, -1, -0.5}, {-1, 1, 0.1}, {0.25, 3, 0.3}});
                     }
                     for (const auto& a : args) {
                       // The reference count: every start + i * step strictly before end.
                       Ref want(Shape{0});
                       for (int64_t i = 0;; ++i) {
                         const double x = a[0] + static_cast<double>(i) * a[2];
                         if (a[2] > 0 ? !(x < a[1]) : !(x > a[1])) break;
                         want.v.push_back(round_to(d, x));
                       }
                       want.shape = Shape{want.numel()};
                       const Tensor t = Tensor::arange(a[0], a[1], a[2], d, c.device());
                       const size_t before = c.failures().size();
                       c.expect(t, want, kExact);
                       if (c.failures().size() > before)
                         c.fail("arange(" + num(a[0]) + ", " + num(a[1]) + ", " + num(a[2]) + ")");
                     }
                     c.expect_throw<InvalidArgument>([&] { (void)Tensor::arange(0, 1, 0, d, c.device()); },
                                                     "arange step 0");
                   }});
}

void transfer_cases(Cases& cases) {
  // Bits go in and come back unchanged, NaN payloads and signalling NaNs included.
  cases.push_back({Op::FromHost, "", kShapeLayouts, [](Ctx& c) {
                     const DType d = c.dtype();
                     const Shape s = c.shape({4, 9});
                     const size_t es = static_cast<size_t>(dtype_size(d));
                     std::vector<uint8_t> bytes(static_cast<size_t>(s.numel()) * es);
                     for (uint8_t& b : bytes) b = static_cast<uint8_t>(c.rng()());
                     // Special patterns at the start: NaNs with payloads (quiet and signalling) and -0.
                     std::vector<uint64_t> special;
                     switch (d) {
                       case DType::F32:
                         special = {0x7fc12345, 0xffa00001, 0x7f800001, 0x80000000, 0x7f800000};
                         break;
                       case DType::F64:
                         special = {0x7ff8000000abcdefull, 0xfff0000000000001ull, 0x8000000000000000ull};
                         break;
                       case DType::F16:
                         special = {0x7d01, 0xfe3f, 0x7c01, 0x8000, 0xfc00};
                         break;
                       case DType::BF16:
                         special = {0x7f81, 0xffc1, 0x8000, 0x7f80};
                         break;
                       case DType::F8E4M3:
                         special = {0x7f, 0xff, 0x80, 0x78};
                         break;
                       default:
                         special = {0, ~uint64_t{0}, 1};
                         break;
                     }
                     for (size_t i = 0; i < special.size() && (i + 1) * es <= bytes.size(); ++i)
                       std::memcpy(bytes.data() + i * es, &special[i], es);  // little endian
                     const Tensor t = Tensor::from_host(bytes.data(), s, d, c.device());
                     c.check(t.shape() == s && t.dtype() == d && t.device() == c.device() && t.is_contiguous(),
                             "from_host made " + t.str());
                     // The values, decoded on the host from the bytes.
                     Ref want(s);
                     dispatch(d, [&]<class T>() {
                       for (size_t i = 0; i < want.v.size(); ++i) {
                         T v;
                         std::memcpy(&v, bytes.data() + i * es, es);
                         want.v[i] = convert<double>(v);
                       }
                     });
                     c.expect(t, want, kExact);
                     std::vector<uint8_t> back(bytes.size() + 8, 0xa5);
                     t.to_host(back.data(), static_cast<int64_t>(back.size()));
                     c.check(std::memcmp(back.data(), bytes.data(), bytes.size()) == 0, "bits changed in a round trip");
                     for (size_t i = bytes.size(); i < back.size(); ++i)
                       c.check(back[i] == 0xa5, "to_host wrote past the tensor's bytes");
                     // And through to_vector.
                     dispatch(d, [&]<class T>() {
                       const std::vector<T> v = t.to_vector<T>();
                       c.check(v.size() * es == bytes.size() &&
                                   (bytes.empty() || std::memcmp(v.data(), bytes.data(), bytes.size()) == 0),
                               "to_vector changed bits");
                     });
                   }});
  // to_host of any view gives its elements row-major.
  cases.push_back({Op::ToHost, "", kAllLayouts, [](Ctx& c) {
                     const DType d = c.dtype();
                     const Tensor x = c.input(c.shape({6, 5}), -100, 100);
                     const Ref& r = c.ref(x);
                     const size_t es = static_cast<size_t>(dtype_size(d));
                     const size_t n = static_cast<size_t>(x.numel()) * es;
                     std::vector<uint8_t> buf(n + 16, 0x5a);
                     x.to_host(buf.data(), static_cast<int64_t>(buf.size()));
                     bool guard = true;
                     for (size_t i = n; i < buf.size(); ++i) guard = guard && buf[i] == 0x5a;
                     c.check(guard, "to_host wrote past numel * element size");
                     dispatch(d, [&]<class T>() {
                       for (size_t i = 0; i < r.v.size(); ++i) {
                         T v;
                         std::memcpy(&v, buf.data() + i * es, es);
                         if (convert<double>(v) != r.v[i]) {
                           c.fail("to_host element " + std::to_string(i) + " is " + num(convert<double>(v)) +
                                  ", expected " + num(r.v[i]));
                           break;
                         }
                       }
                     });
                     c.expect(Tensor::from_host(buf.data(), x.shape(), d, c.device()), r, kExact);
                     c.expect_throw<InvalidArgument>(
                         [&] {
                           if (n == 0) throw InvalidArgument("empty tensors need no buffer");
                           x.to_host(buf.data(), static_cast<int64_t>(n) - 1);
                         },
                         "to_host into a buffer one byte short");
                   }});
}

void const_set_cases(Cases& cases) {
  // Into a view laid out per the layout kind (transposed, narrowed with gaps, broadcast, ...).
  cases.push_back({Op::ConstSet, "", kAllLayouts, [](Ctx& c) {
                     const DType d = c.dtype();
                     const double v = set_value(d);
                     check_const_set(c, c.input(c.shape({5, 6})), as_scalar(d, v), v, "layout view");
                     // Big enough for the threaded path.
                     check_const_set(c, c.input(c.shape({301, 203})), as_scalar(d, v), v, "large view");
                   }});
  // Explicit views of a larger tensor: the rest of the storage keeps its values.
  cases.push_back(
      {Op::ConstSet, "views", kContiguousOnly, [](Ctx& c) {
         const DType d = c.dtype();
         const double v = set_value(d);
         const Scalar sv = as_scalar(d, v);
         auto fresh = [&] { return c.input(Shape{6, 8}, 0, 50); };
         check_const_set(c, fresh().t(), sv, v, "transposed");
         check_const_set(c, fresh().narrow(1, 2, 3), sv, v, "narrowed columns");
         check_const_set(c, fresh().narrow(0, 1, 2), sv, v, "rows 1..2");
         check_const_set(c, fresh().select(0, 4), sv, v, "row 4");
         check_const_set(c, fresh().select(1, 5), sv, v, "column 5");
         check_const_set(c, fresh().t().narrow(0, 3, 4).narrow(1, 1, 3), sv, v, "transposed window");
         check_const_set(c, fresh().reshape({2, 3, 8}).permute({2, 0, 1}).narrow(0, 0, 5), sv, v, "permuted");
         check_const_set(c, fresh().narrow(1, 0, 0), sv, v, "empty view");
         check_const_set(c, fresh().select(0, 2).narrow(0, 1, 1).broadcast_as({4, 1}), sv, v, "broadcast");
         check_const_set(c, c.input(Shape{2, 3, 4, 2, 3, 5}, 0, 50).narrow(5, 1, 3).narrow(3, 1, 1), sv, v, "rank 6");
         // Fill values that saturate or round.
         for (const auto& [fv, want] : fill_values(d)) check_const_set(c, fresh().t(), fv, want, "fill value");
       }});
}

void alloc_cases(Cases& cases) {
  cases.push_back(
      {Op::AllocUninit, "", kShapeLayouts, [](Ctx& c) {
         const DType d = c.dtype();
         const Shape s = c.shape({7, 13});
         Tensor t = Tensor::empty(s, d, c.device());
         c.check(t.shape() == s, "empty has shape " + t.shape().str());
         c.check(t.dtype() == d, "empty has dtype " + std::string(dtype_name(t.dtype())));
         c.check(t.device() == c.device(), "empty is on " + t.device().location());
         c.check(t.is_contiguous() && t.offset() == 0 && t.strides() == contiguous_strides(s),
                 "empty is not contiguous: " + t.layout().str());
         c.check(t.storage() && t.storage()->nbytes() >= t.numel() * dtype_size(d), "storage too small");
         const Tensor x = c.input_contiguous(s, d, -50, 50);
         t.copy_from(x);
         c.expect(t, c.ref(x), kExact);
         Tensor u = Tensor::empty(s, d, c.device());
         u.const_set(as_scalar(d, set_value(d)));
         c.expect(u, Ref(s, set_value(d)), kExact);
         c.expect_throw<ShapeError>([&] { (void)Tensor::empty({2, -3}, d, c.device()); }, "empty with a negative dim");
       }});
}

// ---- random ---------------------------------------------------------------------------------

// After set_seed(seed) the device's counter is 0 and each call takes ceil(n / per_block) blocks
// (Note [Random streams] in src/backend/philox.h), so the reference below knows where every call
// reads. The CPU run is the reference for GPUs (bit for bit for uniforms); the statistics checks
// are what make the case meaningful on the CPU.
// The largest value of dtype d below up, found by bisection on round_to (whose results are the
// dtype's values), or lo rounded to d where no value of d lies in [lo, up).
double largest_below(DType d, double lo, double up) {
  double hi = round_to(d, up);
  if (hi < up) return std::max(hi, round_to(d, lo));
  double a = round_to(d, hi - std::max(std::fabs(hi), 1e-300) * 0.25);  // a value of d below hi
  double b = hi;                                                        // a < answer's successor <= b
  for (int i = 0; i < 200 && a < b; ++i) {
    const double mid = a + (b - a) / 2, r = round_to(d, mid);
    if (r >= hi) {
      if (b == mid) break;
      b = mid;
    } else {
      if (r <= a) break;
      a = r;
    }
  }
  return std::max(a, round_to(d, lo));
}

// The stream of Note [Random streams], rounded to d, with values that reach up replaced by the
// largest value below it (Note [Uniform upper bound] in src/backend/philox.h).
Ref uniform_ref(DType d, const Shape& s, uint64_t seed, uint64_t start, double lo, double up) {
  Ref r(s);
  const philox::Keys ks = philox::seed_keys(seed);
  const double top = largest_below(d, lo, up);
  for (size_t i = 0; i < r.v.size(); ++i) {
    if (d == DType::F64) {
      r.v[i] = philox::uniform_f64(ks, start, i, lo, up - lo);
    } else {
      r.v[i] = round_to(d, philox::uniform_f32(ks, start, i, static_cast<float>(lo), static_cast<float>(up - lo),
                                               static_cast<float>(up)));
    }
    if (r.v[i] >= up) r.v[i] = top;
  }
  return r;
}

void check_moments(Ctx& c, const Ref& got, double mean, double sd, double bias, const std::string& what) {
  const double n = static_cast<double>(got.numel());
  if (n < 500) return;
  double s = 0, s2 = 0;
  for (double x : got.v) s += x;
  const double m = s / n;
  for (double x : got.v) s2 += (x - m) * (x - m);
  const double sample_sd = std::sqrt(s2 / (n - 1));
  c.check(std::fabs(m - mean) <= 6 * sd / std::sqrt(n) + bias,
          what + ": mean " + num(m) + ", expected " + num(mean) + " (n " + num(n) + ")");
  c.check(std::fabs(sample_sd - sd) <= 0.15 * sd + bias,
          what + ": standard deviation " + num(sample_sd) + ", expected " + num(sd));
}

void random_cases(Cases& cases) {
  cases.push_back({Op::RandUniform, "", kShapeLayouts, [](Ctx& c) {
                     const DType d = c.dtype();
                     const Shape s = c.shape({37, 29});  // 1073 elements: the last block is partly used
                     const uint64_t seed = 4242;
                     const uint64_t per_block = d == DType::F64 ? 2 : 4;
                     const uint64_t blocks = (static_cast<uint64_t>(s.numel()) + per_block - 1) / per_block;
                     c.device().set_seed(seed);
                     const double ranges[2][2] = {{-1.5, 2.5}, {0.25, 0.375}};
                     uint64_t start = 0;
                     std::vector<Ref> outs;
                     for (const auto& r : ranges) {
                       const Tensor t = Tensor::rand_uniform(s, d, r[0], r[1], c.device());
                       c.expect(t, uniform_ref(d, s, seed, start, r[0], r[1]), kExact);
                       start += blocks;
                       const Ref got = to_ref(t);
                       const double lo = round_to(d, r[0]);  // both ranges hold values of every dtype
                       for (double x : got.v)
                         if (!(x >= lo && x < r[1])) {
                           c.fail("rand_uniform value " + num(x) + " outside [" + num(r[0]) + ", " + num(r[1]) + ")");
                           break;
                         }
                       // f8e4m3 / bf16 round values to coarse grids; allow the rounding bias.
                       const double w = r[1] - r[0];
                       const double bias = d == DType::F8E4M3 ? 0.05 * w : d == DType::BF16 ? 0.01 * w : 0;
                       check_moments(c, got, (r[0] + r[1]) / 2, w / std::sqrt(12.0), bias, "rand_uniform");
                       outs.push_back(got);
                     }
                     // Each call draws new numbers: scaled to [0, 1] the two calls differ.
                     if (s.numel() > 0) {
                       int same = 0;
                       for (size_t i = 0; i < outs[0].v.size(); ++i)
                         same += (outs[0].v[i] + 1.5) / 4 == (outs[1].v[i] - 0.25) / 0.125;
                       c.check(same < s.numel() / 2, "two rand_uniform calls gave the same stream");
                     }
                   }});
  cases.push_back({Op::RandNormal, "", kShapeLayouts, [](Ctx& c) {
                     const DType d = c.dtype();
                     const Shape s = c.shape({33, 31});  // 1023: the last block is partly used
                     const uint64_t seed = 777;
                     const double mean = 0.5, sd = 2;
                     c.device().set_seed(seed);
                     // Takes block 0 (4 normals per block), or blocks 0 and 1 in f64 (2 per block).
                     (void)Tensor::rand_normal({3}, d, 0, 1, c.device());
                     const uint64_t start = d == DType::F64 ? 2 : 1;
                     const Tensor t = Tensor::rand_normal(s, d, mean, sd, c.device());
                     Ref want(s);
                     const philox::Keys ks = philox::seed_keys(seed);
                     for (size_t i = 0; i < want.v.size(); ++i)
                       want.v[i] = d == DType::F64
                                       ? philox::normal_f64(ks, start, i, mean, sd)
                                       : round_to(d, philox::normal_f32(ks, start, i, static_cast<float>(mean),
                                                                        static_cast<float>(sd)));
                     // GPUs may differ from the CPU's libm in the last bits of log / sin / cos.
                     const Tol tol = tol_for(d, 2);
                     c.expect(t, want, Tol{tol.atol * sd, tol.rtol});
                     const Ref got = to_ref(t);
                     for (double x : got.v)
                       if (!std::isfinite(x)) {
                         c.fail("rand_normal gave " + num(x));
                         break;
                       }
                     check_moments(c, got, mean, sd, d == DType::F8E4M3 ? 0.05 * sd : 0, "rand_normal");
                     c.expect_throw<DTypeError>([&] { (void)Tensor::rand_normal({2}, DType::U8, 0, 1, c.device()); },
                                                "rand_normal on u8");
                   }});
}

}  // namespace

void register_creation_cases(Cases& cases) {
  creation_cases(cases);
  transfer_cases(cases);
  const_set_cases(cases);
  alloc_cases(cases);
  random_cases(cases);
}

}  // namespace wick::check
