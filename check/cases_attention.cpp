// Conformance cases of attention_decode: the cache rows written and the output, against an f64
// softmax over the cache as it stands after the write (the new row rounded to the cache dtype).
#include <cmath>
#include <string>
#include <vector>

#include "check/harness.h"

namespace wick::check {

namespace {

struct AttnShape {
  int64_t heads, kv, d, cap, position;
};

// The expected output [H, D] from references of q [H, D] and of the caches [KV, C, D] (the new row
// already in place), over rows [0, position].
Ref expected_attention(const Ref& q, const Ref& kc, const Ref& vc, const AttnShape& s, double scale) {
  Ref e(Shape{s.heads, s.d});
  const int64_t group = s.heads / s.kv, n = s.position + 1;
  std::vector<double> w(static_cast<size_t>(n));
  for (int64_t h = 0; h < s.heads; ++h) {
    const int64_t j = h / group;
    double m = -INFINITY;
    for (int64_t t = 0; t < n; ++t) {
      double dot = 0;
      for (int64_t i = 0; i < s.d; ++i) dot += q.v[h * s.d + i] * kc.v[(j * s.cap + t) * s.d + i];
      w[t] = dot * scale;
      m = std::max(m, w[t]);
    }
    double sum = 0;
    for (double& x : w) sum += (x = std::exp(x - m));
    for (int64_t i = 0; i < s.d; ++i) {
      double acc = 0;
      for (int64_t t = 0; t < n; ++t) acc += w[t] * vc.v[(j * s.cap + t) * s.d + i];
      e.v[h * s.d + i] = acc / sum;
    }
  }
  return e;
}

// A cache [KV, C, D] of the case's dtype; with `gaps`, a window of a larger one (rows apart and
// not starting on a 16-byte boundary).
Tensor make_cache(Ctx& c, const AttnShape& s, bool gaps, Ref* ref) {
  const Tensor full = c.input_contiguous({s.kv, s.cap + (gaps ? 3 : 0), s.d + (gaps ? 5 : 0)}, c.dtype(), -1, 1);
  const Ref& rf = c.ref(full);
  const Tensor cache = gaps ? full.narrow(1, 2, s.cap).narrow(2, 1, s.d) : full;
  *ref = Ref(Shape{s.kv, s.cap, s.d});
  const int64_t fc = full.dim(1), fd = full.dim(2), c0 = gaps ? 2 : 0, d0 = gaps ? 1 : 0;
  for (int64_t j = 0; j < s.kv; ++j)
    for (int64_t t = 0; t < s.cap; ++t)
      for (int64_t i = 0; i < s.d; ++i) ref->v[(j * s.cap + t) * s.d + i] = rf.v[(j * fc + t + c0) * fd + i + d0];
  return cache;
}

void case_attention(Ctx& c, const AttnShape& s, bool gaps, bool device_position) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  const Tensor q = c.input({s.heads, s.d}, DType::F32, -1, 1);
  const Tensor k = c.input({s.kv, s.d}, DType::F32, -1, 1);
  const Tensor v = c.input({s.kv, s.d}, DType::F32, -1, 1);
  Ref rk, rv;
  const Tensor kc = make_cache(c, s, gaps, &rk), vc = make_cache(c, s, gaps, &rv);
  // The new row, as the cache stores it.
  Ref row_k(Shape{s.kv, 1, s.d}), row_v(Shape{s.kv, 1, s.d});
  for (int64_t j = 0; j < s.kv; ++j)
    for (int64_t i = 0; i < s.d; ++i) {
      const size_t at = static_cast<size_t>((j * s.cap + s.position) * s.d + i), r = static_cast<size_t>(j * s.d + i);
      rk.v[at] = row_k.v[r] = round_to(c.dtype(), c.ref(k).v[r]);
      rv.v[at] = row_v.v[r] = round_to(c.dtype(), c.ref(v).v[r]);
    }
  const Tensor out =
      device_position
          ? attention_decode(
                q, k, v, kc, vc,
                Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(s.position)}, {1}, c.device()), scale)
          : attention_decode(q, k, v, kc, vc, s.position, scale);
  // f32 sums of d products and of up to C weights.
  c.expect(out, expected_attention(c.ref(q), rk, rv, s, scale), DType::F32, tol_for(DType::F32, 16));
  c.expect(kc.narrow(1, s.position, 1), row_k, c.dtype(), Tol{0, 0});
  c.expect(vc.narrow(1, s.position, 1), row_v, c.dtype(), Tol{0, 0});
}

void case_errors(Ctx& c) {
  const AttnShape s{4, 2, 8, 16, 3};
  const Tensor q = c.input({s.heads, s.d}, DType::F32, -1, 1);
  const Tensor k = c.input({s.kv, s.d}, DType::F32, -1, 1);
  Ref r;
  const Tensor kc = make_cache(c, s, false, &r), vc = make_cache(c, s, false, &r);
  c.expect_throw<IndexError>([&] { (void)attention_decode(q, k, k, kc, vc, s.cap, 1.0); }, "position past the cache");
  c.expect_throw<IndexError>([&] { (void)attention_decode(q, k, k, kc, vc, -1, 1.0); }, "negative position");
  c.expect_throw<IndexError>(
      [&] {
        (void)attention_decode(q, k, k, kc, vc, Tensor::from_vector(std::vector<int32_t>{16}, {1}, c.device()), 1.0);
      },
      "device position past the cache");
  c.expect_throw<DTypeError>(
      [&] {
        (void)attention_decode(q, k, k, kc, vc, Tensor::from_vector(std::vector<int64_t>{1}, {1}, c.device()), 1.0);
      },
      "i64 position");
  c.expect_throw<ShapeError>([&] { (void)attention_decode(q.narrow(0, 0, 3), k, k, kc, vc, 1, 1.0); },
                             "heads not a multiple of the KV heads");
  c.expect_throw<ShapeError>([&] { (void)attention_decode(q, k.narrow(1, 0, 4), k, kc, vc, 1, 1.0); },
                             "k of another head dim");
  c.expect_throw<DTypeError>(
      [&] {
        (void)attention_decode(q.to_dtype(c.dtype() == DType::F32 ? DType::F16 : c.dtype()), k, k, kc, vc, 1, 1.0);
      },
      "q not f32");
  c.expect_throw<InvalidArgument>(
      [&] {
        (void)attention_decode(q, k, k, kc.narrow(0, 0, 1).broadcast_as({s.kv, s.cap, s.d}), vc, 1, 1.0);
      },
      "a broadcast cache");
}

}  // namespace

void register_attention_cases(Cases& cases) {
  const AttnShape shapes[] = {
      {4, 4, 16, 40, 37},      // one query head a KV head
      {8, 2, 64, 300, 299},    // four a KV head, several chunks, the last row
      {14, 2, 64, 129, 64},    // seven a KV head
      {32, 1, 128, 700, 513},  // 32 a KV head: two slices of query heads; 16-byte rows
      {6, 3, 10, 20, 0},       // the first position; rows of odd length
  };
  for (const AttnShape& s : shapes) {
    const std::string name = std::to_string(s.heads) + "/" + std::to_string(s.kv) + " heads, d " + std::to_string(s.d) +
                             ", position " + std::to_string(s.position) + " of " + std::to_string(s.cap);
    const uint32_t layouts = layout_bit(LayoutKind::Contiguous) | layout_bit(LayoutKind::Transposed) |
                             layout_bit(LayoutKind::Narrowed) | layout_bit(LayoutKind::Broadcast);
    cases.push_back({Op::AttentionDecode, name, layouts, [s](Ctx& c) { case_attention(c, s, false, false); }});
    cases.push_back({Op::AttentionDecode, name + ", cache with gaps", kContiguousOnly,
                     [s](Ctx& c) { case_attention(c, s, true, false); }});
    cases.push_back({Op::AttentionDecode, name + ", position on the device", kContiguousOnly,
                     [s](Ctx& c) { case_attention(c, s, false, true); }});
  }
  cases.push_back({Op::AttentionDecode, "bad arguments", kContiguousOnly, [](Ctx& c) { case_errors(c); }});
}

}  // namespace wick::check
