// The conformance harness: one body per op, run on every device, dtype and layout.
//
// A case body builds random inputs through its Ctx, runs the op, and states what it expects:
//
//   cases.push_back({Op::Exp, "", kAllLayouts, [](Ctx& c) {
//     Tensor x = c.input(c.shape({17, 33}));
//     c.expect(x.exp(), map(c.ref(x), [](double v) { return std::exp(v); }));
//   }});
//
// On the CPU, expect() compares with the f64 reference. On a GPU the harness runs the body twice,
// on the GPU and on the CPU with the same random inputs, and compares the outputs of the two runs
// with each other (the CPU backend is the reference for GPUs). `wick check` and the tests both run
// these cases.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wick/tensor.h"

namespace wick::check {

// How a case's inputs are laid out in memory.
enum class LayoutKind : uint8_t {
  Contiguous,  // row-major
  Transposed,  // the last two dims swapped in storage, viewed back through transpose
  Narrowed,    // a window (offset, gaps) of a larger tensor
  Broadcast,   // the outermost dim of size > 1 is a stride-0 broadcast of size 1
  ZeroSize,    // c.shape() puts a zero in the shape
  HighRank,    // c.shape() prepends dims up to rank 6; inputs narrowed
};
inline constexpr int kNumLayouts = 6;
inline constexpr LayoutKind kLayoutKinds[kNumLayouts] = {LayoutKind::Contiguous, LayoutKind::Transposed,
                                                         LayoutKind::Narrowed,   LayoutKind::Broadcast,
                                                         LayoutKind::ZeroSize,   LayoutKind::HighRank};
inline constexpr uint32_t layout_bit(LayoutKind k) { return 1u << static_cast<uint32_t>(k); }
inline constexpr uint32_t kAllLayouts = 0x3fu;
// Only the contiguous layout: for cases whose inputs are built with explicit layouts in the body.
inline constexpr uint32_t kContiguousOnly = layout_bit(LayoutKind::Contiguous);
std::string_view layout_name(LayoutKind k);

// A host reference tensor: contiguous row-major f64 values.
struct Ref {
  Shape shape;
  std::vector<double> v;

  Ref() = default;
  explicit Ref(Shape s, double fill = 0) : shape(std::move(s)), v(static_cast<size_t>(shape.numel()), fill) {}
  int64_t numel() const { return static_cast<int64_t>(v.size()); }
  // Flat index of a multi-index.
  int64_t index(const std::vector<int64_t>& idx) const;
  double& at(const std::vector<int64_t>& idx) { return v[static_cast<size_t>(index(idx))]; }
  double at(const std::vector<int64_t>& idx) const { return v[static_cast<size_t>(index(idx))]; }
};

// Calls f(multi_index) for every element of `shape`, row-major.
void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& f);
// Elementwise maps of references (b broadcast to a's shape numpy-style in map2).
Ref map(const Ref& a, const std::function<double(double)>& f);
Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f);
// The value as stored in dtype d (rounded, saturated, wrapped like a conversion to d).
double round_to(DType d, double v);
Ref round_to(DType d, const Ref& r);
// The dtypes of a mask (kIntTypes: the dtypes of ids and conditions), in table order.
std::vector<DType> dtypes_in(uint32_t mask);
// The least and greatest value of integer dtype d.
std::pair<double, double> int_limits(DType d);
// The exact integer v reduced modulo 2^bits of integer dtype d (two's complement when signed).
double wrap_to(DType d, __int128 v);
// A tensor's values as f64 on the host (through the host scalar conversions, not the backend).
Ref to_ref(const Tensor& t);

// Tolerance: |out - ref| <= atol + rtol * |ref|.
struct Tol {
  double atol = 0;
  double rtol = 0;
};
// For one rounding of a result to dtype d (exact for integers), scaled by `scale`.
Tol tol_for(DType d, double scale = 1);

class Ctx {
 public:
  enum class Mode { Reference, Record };
  Ctx(Device device, DType dtype, LayoutKind layout, uint64_t seed, Mode mode);

  const Device& device() const { return device_; }
  DType dtype() const { return dtype_; }
  LayoutKind layout() const { return layout_; }
  std::mt19937_64& rng() { return rng_; }

  // `base` adjusted for the layout kind: ZeroSize zeroes the first dim (or `zero_dim`), HighRank
  // prepends dims up to rank 6. Other kinds return base.
  Shape shape(const Shape& base, size_t zero_dim = 0) const;

  // A random tensor of `shape` on the device, laid out per the layout kind. Floats are uniform in
  // [lo, hi]; integers uniform over the integers in [lo, hi] (clipped to the dtype's range).
  Tensor input(const Shape& shape, DType dtype, double lo, double hi);
  Tensor input(const Shape& shape, double lo = -2, double hi = 2) { return input(shape, dtype_, lo, hi); }
  // Like input() but contiguous whatever the layout kind.
  Tensor input_contiguous(const Shape& shape, DType dtype, double lo, double hi);
  // A tensor of exactly these (already representable) values, laid out per the layout kind.
  Tensor input_values(const Ref& values, DType dtype);
  // The reference values of a tensor made by input*(); throws if t was not made here.
  const Ref& ref(const Tensor& t) const;

  // States that `out` must match `expected` within `tol` (default: tol_for(out.dtype())), and that
  // its shape and dtype are `expected.shape` and `dtype`.
  void expect(const Tensor& out, const Ref& expected, DType dtype, Tol tol);
  void expect(const Tensor& out, const Ref& expected, Tol tol) { expect(out, expected, out.dtype(), tol); }
  void expect(const Tensor& out, const Ref& expected) { expect(out, expected, out.dtype(), tol_for(out.dtype())); }
  // States that f throws E (a wick::Error subclass).
  template <class E, class F>
  void expect_throw(F&& f, const std::string& what) {
    try {
      f();
    } catch (const E&) {
      return;
    } catch (const std::exception& e) {
      fail(what + ": threw the wrong error: " + e.what());
      return;
    }
    fail(what + ": did not throw");
  }
  // Records a failure (the case goes on; the first failure is reported).
  void fail(const std::string& msg);
  void check(bool ok, const std::string& msg) {
    if (!ok) fail(msg);
  }

  // Results, read by the runner.
  const std::vector<std::string>& failures() const { return failures_; }
  struct Recorded {
    Ref value;
    DType dtype;
    Tol tol;
  };
  const std::vector<Recorded>& recorded() const { return recorded_; }

 private:
  Tensor place(const Ref& values, DType dtype, bool apply_layout);
  Device device_;
  DType dtype_;
  LayoutKind layout_;
  Mode mode_;
  std::mt19937_64 rng_;
  std::map<const void*, Ref> refs_;  // keyed by storage
  std::vector<std::string> failures_;
  std::vector<Recorded> recorded_;
};

struct Case {
  Op op;                // the row in `wick check`
  std::string variant;  // what this body covers, for messages ("keepdim", "dim 0", ...)
  uint32_t layouts = kAllLayouts;
  std::function<void(Ctx&)> body;
};
using Cases = std::vector<Case>;

// The registration function of each op family (check/cases_*.cpp).
void register_creation_cases(Cases& cases);
void register_elementwise_cases(Cases& cases);
void register_reduce_cases(Cases& cases);
void register_index_cases(Cases& cases);  // indexing, copies, cat, matmul
void register_conv_cases(Cases& cases);   // conv, pooling, upsampling, rope
void register_attention_cases(Cases& cases);
void register_quant_cases(Cases& cases);  // quantize, dequantize, quantized matmul and embedding
const Cases& all_cases();

enum class Status : uint8_t { Pass, Fail, Unsupported, NotApplicable };
struct Outcome {
  Status status = Status::Pass;
  std::string message;
};
// Runs one case for one device, dtype and layout kind.
Outcome run_case(const Case& c, const Device& device, DType dtype, LayoutKind layout);

}  // namespace wick::check
