#include "check/harness.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "backend/dispatch.h"

namespace wick::check {

std::string_view layout_name(LayoutKind k) {
  switch (k) {
    case LayoutKind::Contiguous:
      return "contiguous";
    case LayoutKind::Transposed:
      return "transposed";
    case LayoutKind::Narrowed:
      return "narrowed";
    case LayoutKind::Broadcast:
      return "broadcast";
    case LayoutKind::ZeroSize:
      return "zero-size";
    case LayoutKind::HighRank:
      return "rank-6";
  }
  return "?";
}

int64_t Ref::index(const std::vector<int64_t>& idx) const {
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) flat = flat * shape[i] + idx[i];
  return flat;
}

void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f) {
  const int64_t n = shape.numel();
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(idx);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

Ref map(const Ref& a, const std::function<double(double)>& f) {
  Ref r(a.shape);
  for (size_t i = 0; i < a.v.size(); ++i) r.v[i] = f(a.v[i]);
  return r;
}

Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  const Shape s = broadcast_shapes(a.shape, b.shape, "map2");
  Ref r(s);
  int64_t flat = 0;
  for_each_index(s, [&](const std::vector<int64_t>& idx) {
    auto pick = [&](const Ref& x) {
      std::vector<int64_t> j(x.shape.size());
      const size_t lead = s.size() - x.shape.size();
      for (size_t d = 0; d < x.shape.size(); ++d) j[d] = x.shape[d] == 1 ? 0 : idx[lead + d];
      return x.at(j);
    };
    r.v[static_cast<size_t>(flat++)] = f(pick(a), pick(b));
  });
  return r;
}

double round_to(DType d, double v) {
  return dispatch(d, [&]<class T>() { return static_cast<double>(convert<double>(convert<T>(v))); });
}

Ref round_to(DType d, const Ref& r) {
  return map(r, [d](double v) { return round_to(d, v); });
}

std::vector<DType> dtypes_in(uint32_t mask) {
  std::vector<DType> v;
  for (DType d : kAllDTypes)
    if (mask & dtype_bit(d)) v.push_back(d);
  return v;
}

std::pair<double, double> int_limits(DType d) {
  return dispatch_in<kIntTypes>(d, [&]<class T>() {
    return std::pair<double, double>{static_cast<double>(std::numeric_limits<T>::lowest()),
                                     static_cast<double>(std::numeric_limits<T>::max())};
  });
}

double wrap_to(DType d, __int128 v) {
  return dispatch_in<kIntTypes>(d, [&]<class T>() {
    // Unsigned conversion wraps modulo 2^bits; to a signed type it is two's complement (C++20).
    return static_cast<double>(static_cast<T>(static_cast<std::make_unsigned_t<T>>(v)));
  });
}

Ref to_ref(const Tensor& t) {
  Ref r(t.shape());
  if (t.numel() == 0) return r;
  const Tensor c = t.to(Device::cpu()).contiguous();
  std::vector<char> bytes(static_cast<size_t>(c.numel() * dtype_size(c.dtype())));
  c.to_host(bytes.data(), static_cast<int64_t>(bytes.size()));
  dispatch(c.dtype(), [&]<class T>() {
    const T* p = reinterpret_cast<const T*>(bytes.data());
    for (size_t i = 0; i < r.v.size(); ++i) r.v[i] = convert<double>(p[i]);
  });
  return r;
}

Tol tol_for(DType d, double scale) {
  switch (d) {
    case DType::F64:
      return {1e-12 * scale, 1e-10 * scale};
    case DType::F32:
      return {1e-6 * scale, 2e-6 * scale};
    case DType::F16:
      return {1e-4 * scale, 1.5e-3 * scale};
    case DType::BF16:
      return {1e-3 * scale, 1e-2 * scale};
    case DType::F8E4M3:
      return {4e-3 * scale, 0.07 * scale};
    default:
      return {0, 0};
  }
}

Ctx::Ctx(Device device, DType dtype, LayoutKind layout, uint64_t seed, Mode mode)
    : device_(device), dtype_(dtype), layout_(layout), mode_(mode), rng_(seed) {}

Shape Ctx::shape(const Shape& base, size_t zero_dim) const {
  Shape s = base;
  if (layout_ == LayoutKind::ZeroSize) {
    if (s.empty()) return Shape{0};
    s[std::min(zero_dim, s.size() - 1)] = 0;
  } else if (layout_ == LayoutKind::HighRank) {
    static const int64_t lead[] = {2, 1, 3, 2, 1, 2};
    size_t k = 0;
    while (s.size() < 6) s.insert(0, lead[k++]);
  }
  return s;
}

Tensor Ctx::input(const Shape& shape, DType dtype, double lo, double hi) {
  Ref r(shape);
  if (is_float(dtype)) {
    std::uniform_real_distribution<double> u(lo, hi);
    for (double& x : r.v) x = round_to(dtype, u(rng_));
  } else {
    double tlo = std::ceil(lo), thi = std::floor(hi);
    if (!is_signed(dtype)) tlo = std::max(tlo, 0.0);
    if (dtype == DType::U8) thi = std::min(thi, 255.0);
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(tlo), static_cast<int64_t>(thi));
    for (double& x : r.v) x = static_cast<double>(u(rng_));
  }
  return place(r, dtype, true);
}

Tensor Ctx::input_contiguous(const Shape& shape, DType dtype, double lo, double hi) {
  const LayoutKind saved = layout_;
  layout_ = LayoutKind::Contiguous;
  Tensor t = input(shape, dtype, lo, hi);
  layout_ = saved;
  return t;
}

Tensor Ctx::input_values(const Ref& values, DType dtype) { return place(round_to(dtype, values), dtype, true); }

namespace {
// Writes the values of `r` (at multi-index idx) into a host buffer of `storage_shape` elements,
// through `layout`; other elements get `filler`.
std::vector<double> scatter_into(const Ref& r, const Layout& layout, int64_t storage_elems, std::mt19937_64& rng) {
  std::vector<double> buf(static_cast<size_t>(storage_elems));
  std::uniform_real_distribution<double> u(-1, 1);
  for (double& x : buf) x = std::round(u(rng) * 7) + 100;  // distinct from the data: catches reads of gaps
  int64_t flat = 0;
  for_each_index(r.shape, [&](const std::vector<int64_t>& idx) {
    int64_t off = layout.offset();
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * layout.stride(d);
    buf[static_cast<size_t>(off)] = r.v[static_cast<size_t>(flat++)];
  });
  return buf;
}
}  // namespace

Tensor Ctx::place(const Ref& values, DType dtype, bool apply_layout) {
  const Shape& s = values.shape;
  LayoutKind k = apply_layout ? layout_ : LayoutKind::Contiguous;
  Layout layout(s);
  int64_t storage_elems = s.numel();
  Ref stored = values;
  if (k == LayoutKind::Transposed && s.size() >= 2) {
    Shape ts = s;
    std::swap(ts[s.size() - 1], ts[s.size() - 2]);
    layout = Layout(ts).transpose(s.size() - 1, s.size() - 2);
  } else if ((k == LayoutKind::Narrowed || k == LayoutKind::HighRank) && s.numel() > 0) {
    Shape big = s;
    for (size_t d = 0; d < s.size(); ++d) big[d] = s[d] + (d % 2 == 0 ? 2 : 1);
    Layout l(big);
    for (size_t d = 0; d < s.size(); ++d) l = l.narrow(d, 1, s[d]);
    layout = l;
    storage_elems = big.numel();
  } else if (k == LayoutKind::Broadcast) {
    size_t bd = s.size();
    for (size_t d = 0; d < s.size(); ++d)
      if (s[d] > 1) {
        bd = d;
        break;
      }
    if (bd < s.size()) {
      // Make the values constant along dim bd, store one slice, broadcast it.
      Shape one = s;
      one[bd] = 1;
      Ref slice(one);
      for_each_index(s, [&](const std::vector<int64_t>& idx) {
        if (idx[bd] == 0) slice.at(idx) = values.at(idx);
      });
      for_each_index(s, [&](const std::vector<int64_t>& idx) {
        std::vector<int64_t> j = idx;
        j[bd] = 0;
        stored.at(idx) = slice.at(j);
      });
      layout = Layout(one).broadcast_as(s);
      storage_elems = one.numel();
    }
  }
  std::vector<double> buf = scatter_into(stored, layout, storage_elems, rng_);
  std::vector<char> bytes(static_cast<size_t>(storage_elems * dtype_size(dtype)));
  dispatch(dtype, [&]<class T>() {
    T* p = reinterpret_cast<T*>(bytes.data());
    for (size_t i = 0; i < buf.size(); ++i) p[i] = convert<T>(buf[i]);
  });
  const Tensor flat = Tensor::from_host(bytes.data(), {storage_elems}, dtype, device_);
  Tensor t(flat.storage(), layout, dtype, device_);
  refs_[t.storage().get()] = stored;
  return t;
}

const Ref& Ctx::ref(const Tensor& t) const {
  auto it = refs_.find(t.storage().get());
  if (it == refs_.end() || it->second.shape != t.shape())
    throw InvalidArgument("[check] ref() of a tensor not made by this Ctx's input functions (or a view of one)");
  return it->second;
}

void Ctx::fail(const std::string& msg) { failures_.push_back(msg); }

namespace {
bool close(double out, double ref, Tol tol) {
  if (std::isnan(ref)) return std::isnan(out);
  if (std::isinf(ref)) return out == ref;
  return std::fabs(out - ref) <= tol.atol + tol.rtol * std::fabs(ref);
}
std::string idx_str(const Shape& s, int64_t flat) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = flat % std::max<int64_t>(s[d], 1);
    flat /= std::max<int64_t>(s[d], 1);
  }
  return Dims(idx).str();
}
// First mismatch of out against ref, or "" when all match.
std::string compare(const Ref& out, const Ref& ref, Tol tol) {
  if (out.shape != ref.shape) return "shape " + out.shape.str() + ", expected " + ref.shape.str();
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (size_t i = 0; i < out.v.size(); ++i)
    if (!close(out.v[i], ref.v[i], tol)) {
      if (first < 0) first = static_cast<int64_t>(i);
      ++bad;
      worst = std::max(worst, std::fabs(out.v[i] - ref.v[i]));
    }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(10);
  os << bad << " of " << out.v.size() << " values differ (max abs err " << worst << "); first at "
     << idx_str(out.shape, first) << ": got " << out.v[static_cast<size_t>(first)] << ", expected "
     << ref.v[static_cast<size_t>(first)] << " (atol " << tol.atol << ", rtol " << tol.rtol << ")";
  return os.str();
}
}  // namespace

void Ctx::expect(const Tensor& out, const Ref& expected, DType dtype, Tol tol) {
  if (!out.defined()) return fail("output is undefined");
  if (out.dtype() != dtype)
    return fail("output dtype " + std::string(dtype_name(out.dtype())) + ", expected " +
                std::string(dtype_name(dtype)));
  if (!out.device().same_device(device_)) return fail("output on " + out.device().location());
  if (out.shape() != expected.shape)
    return fail("output shape " + out.shape().str() + ", expected " + expected.shape.str());
  Ref got = to_ref(out);
  if (mode_ == Mode::Record) {
    recorded_.push_back({std::move(got), dtype, tol});
    return;
  }
  const std::string err = compare(got, expected, tol);
  if (!err.empty()) fail("output " + std::to_string(recorded_.size()) + ": " + err);
  recorded_.push_back({std::move(got), dtype, tol});
}

Outcome run_case(const Case& c, const Device& device, DType dtype, LayoutKind layout) {
  if (!op_defined_for(c.op, dtype) || !(c.layouts & layout_bit(layout))) return {Status::NotApplicable, ""};
  if (!supports(c.op, dtype, device)) return {Status::Unsupported, "not implemented on " + device.location()};
  // The seed depends on the case and dtype only, so the CPU and GPU runs draw the same inputs.
  uint64_t seed = 1469598103934665603ull;
  for (char ch : std::string(op_name(c.op)) + "/" + c.variant)
    seed = (seed ^ static_cast<uint8_t>(ch)) * 1099511628211ull;
  seed ^= static_cast<uint64_t>(dtype) * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(layout);
  auto run = [&](const Device& d, Ctx::Mode mode, Ctx* ctx) -> Outcome {
    (void)d;
    (void)mode;
    try {
      c.body(*ctx);
    } catch (const UnsupportedError& e) {
      return {Status::Unsupported, e.what()};
    } catch (const std::exception& e) {
      return {Status::Fail, std::string("threw: ") + e.what()};
    }
    if (!ctx->failures().empty()) return {Status::Fail, ctx->failures().front()};
    return {Status::Pass, ""};
  };
  if (device.is_cpu()) {
    Ctx ctx(device, dtype, layout, seed, Ctx::Mode::Reference);
    return run(device, Ctx::Mode::Reference, &ctx);
  }
  Ctx gpu(device, dtype, layout, seed, Ctx::Mode::Record);
  Outcome o = run(device, Ctx::Mode::Record, &gpu);
  if (o.status != Status::Pass) return o;
  Ctx cpu(Device::cpu(), dtype, layout, seed, Ctx::Mode::Record);
  Outcome oc = run(Device::cpu(), Ctx::Mode::Record, &cpu);
  if (oc.status != Status::Pass) return {Status::Fail, "the CPU reference run failed: " + oc.message};
  if (gpu.recorded().size() != cpu.recorded().size())
    return {Status::Fail, "the GPU and CPU runs made different outputs"};
  for (size_t i = 0; i < gpu.recorded().size(); ++i) {
    const std::string err = compare(gpu.recorded()[i].value, cpu.recorded()[i].value, gpu.recorded()[i].tol);
    if (!err.empty()) return {Status::Fail, "output " + std::to_string(i) + " vs cpu: " + err};
  }
  return {Status::Pass, ""};
}

const Cases& all_cases() {
  static const Cases cases = [] {
    Cases c;
    register_creation_cases(c);
    register_elementwise_cases(c);
    register_reduce_cases(c);
    register_index_cases(c);
    register_conv_cases(c);
    register_attention_cases(c);
    register_quant_cases(c);
    return c;
  }();
  return cases;
}

}  // namespace wick::check
