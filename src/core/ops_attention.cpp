// The front end of attention_decode: argument checks, the position, the cache writes' guards.
//
// Note [Decode attention]
// A decoder's step meets a KV cache that grows by one row per token. attention_decode writes the
// new row and attends over the rows [0, position] in one op, so that a step's shapes do not depend
// on the position: the cache is passed whole (or a fixed prefix of it) and the position may be a
// device value. A recorded graph (wick/graph.h) then serves every position of a prefix, where the
// grouped products of a prefill (Note [Attention by grouped products] in src/llm/model.cpp) have
// shapes that change with each token. The host checks the position when it can read it; a
// recorded kernel cannot report, so a position outside the cache writes nothing and gives zeros,
// the same on every backend. Query head h reads KV head h / (H / KV) (grouped-query attention).
#include <cmath>
#include <string>

#include "core/front.h"
#include "wick/error.h"

namespace wick {

namespace {

using front::backend;
using front::op_tag;

constexpr Op kOp = Op::AttentionDecode;

std::string operands(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& kc, const Tensor& vc) {
  return "q " + q.str() + ", k " + k.str() + ", v " + v.str() + ", k_cache " + kc.str() + ", v_cache " + vc.str();
}

// position_t: the position tensor, or null for the integer form.
Tensor attention_front(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& kc, const Tensor& vc,
                       const Tensor* position_t, int64_t position, double scale) {
  front::check_defined(kOp, q, "q");
  front::check_defined(kOp, k, "k");
  front::check_defined(kOp, v, "v");
  front::check_defined(kOp, kc, "k_cache");
  front::check_defined(kOp, vc, "v_cache");
  front::check_op_dtype(kOp, kc);
  front::check_same_dtype(kOp, kc, vc);
  for (const Tensor* t : {&q, &k, &v})
    if (t->dtype() != DType::F32)
      throw DTypeError(op_tag(kOp) + "q, k and v must be f32: " + operands(q, k, v, kc, vc));
  for (const Tensor* t : {&k, &v, &kc, &vc}) front::check_same_device(kOp, q, *t);
  if (q.rank() != 2 || k.rank() != 2 || v.rank() != 2 || kc.rank() != 3 || vc.rank() != 3)
    throw ShapeError(op_tag(kOp) +
                     "expects q [H, D], k and v [KV, D], caches [KV, C, D]: " + operands(q, k, v, kc, vc));
  const int64_t heads = q.dim(0), d = q.dim(1), kv = kc.dim(0), c = kc.dim(1);
  if (kc.shape() != vc.shape() || k.shape() != Shape{kv, d} || v.shape() != Shape{kv, d} || kc.dim(2) != d)
    throw ShapeError(op_tag(kOp) +
                     "shapes disagree (q [H, D], k and v [KV, D], caches [KV, C, D]): " + operands(q, k, v, kc, vc));
  if (kv == 0 || heads % kv != 0)
    throw ShapeError(op_tag(kOp) +
                     "the query heads must be a positive multiple of the KV heads: " + operands(q, k, v, kc, vc));
  if (d > 1 && (kc.strides()[2] != 1 || vc.strides()[2] != 1))
    throw InvalidArgument(op_tag(kOp) + "cache rows must have unit stride: " + operands(q, k, v, kc, vc));
  if (!std::isfinite(scale))
    throw InvalidArgument(op_tag(kOp) + "scale " + std::to_string(scale) + " is not finite (" + q.device().str() + ")");
  front::before_write(kOp, kc);
  front::before_write(kOp, vc);

  Backend& b = backend(q);
  TensorArg pos_arg;  // undefined: the kernel uses `position`
  if (position_t) {
    const Tensor& pt = *position_t;
    front::check_defined(kOp, pt, "position");
    if (pt.dtype() != DType::I32 || pt.numel() != 1)
      throw DTypeError(op_tag(kOp) + "position must be an i32 tensor of one element, got " + pt.str());
    if (!pt.device().is_cpu()) front::check_same_device(kOp, q, pt);
    if (!pt.device().is_cpu() && b.capturing()) {
      pos_arg = TensorArg(pt);  // read by the recorded kernel at each replay
    } else {
      position = pt.to_vector<int32_t>()[0];
    }
  }
  if (pos_arg.data == nullptr) {
    if (position < 0 || position >= c)
      throw IndexError(op_tag(kOp) + "position " + std::to_string(position) + " is outside the cache of " +
                       std::to_string(c) + " rows: " + operands(q, k, v, kc, vc));
  }
  Tensor out = front::new_like(q, {heads, d}, DType::F32);
  if (d > 0)
    b.attention_decode(TensorArg(q), TensorArg(k), TensorArg(v), TensorArg(kc), TensorArg(vc), pos_arg,
                       AttentionParams{position, scale}, TensorArg(out));
  return out;
}

}  // namespace

Tensor attention_decode(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache, const Tensor& v_cache,
                        int64_t position, double scale) {
  return attention_front(q, k, v, k_cache, v_cache, nullptr, position, scale);
}

Tensor attention_decode(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& k_cache, const Tensor& v_cache,
                        const Tensor& position, double scale) {
  return attention_front(q, k, v, k_cache, v_cache, &position, 0, scale);
}

}  // namespace wick
