// attention_decode on every device: the cache rows it writes and its output, against the same
// attention through matmul and softmax in f64, and its errors.
#include <gtest/gtest.h>

#include <vector>

#include "test_util.h"
#include "wick/error.h"

namespace wick::testing {
namespace {

class DecodeAttention : public ::testing::TestWithParam<Device> {};

// softmax(scale q K^T) V per query head through matmul and softmax, over rows [0, n) of the caches.
Tensor grouped_reference(const Tensor& q, const Tensor& kc, const Tensor& vc, int64_t n, double scale) {
  const int64_t heads = q.dim(0), d = q.dim(1), kv = kc.dim(0);
  const Tensor k = kc.narrow(1, 0, n).to_dtype(DType::F64), v = vc.narrow(1, 0, n).to_dtype(DType::F64);
  const Tensor qg = q.to_dtype(DType::F64).reshape({kv, heads / kv, d});
  const Tensor p = qg.matmul(k.transpose(1, 2)).affine(scale, 0).softmax(-1);
  return p.matmul(v).reshape({heads, d}).to_dtype(DType::F32);
}

TEST_P(DecodeAttention, AStepAtATimeMatchesTheGroupedProducts) {
  const Device dev = GetParam();
  const int64_t heads = 8, kv = 2, d = 64, cap = 96;
  for (DType cd : {DType::F32, DType::BF16}) {
    const Tensor kc = Tensor::zeros({kv, cap, d}, cd, dev), vc = Tensor::zeros({kv, cap, d}, cd, dev);
    for (int64_t p = 0; p < 70; ++p) {
      const Tensor q = Tensor::rand_uniform({heads, d}, DType::F32, -1, 1, dev);
      const Tensor k = Tensor::rand_uniform({kv, d}, DType::F32, -1, 1, dev);
      const Tensor v = Tensor::rand_uniform({kv, d}, DType::F32, -1, 1, dev);
      const Tensor out = attention_decode(q, k, v, kc, vc, p, 0.125);
      expect_same(kc.narrow(1, p, 1).reshape({kv, d}), k.to_dtype(cd));
      expect_same(vc.narrow(1, p, 1).reshape({kv, d}), v.to_dtype(cd));
      if (p % 13 != 0 && p != 69) continue;
      const std::vector<float> got = host(out), want = host(grouped_reference(q, kc, vc, p + 1, 0.125));
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5) << dtype_name(cd) << " p " << p;
    }
  }
}

TEST_P(DecodeAttention, ErrorsNameTheOpShapesDTypesAndDevice) {
  const Device dev = GetParam();
  const Tensor q = Tensor::rand_uniform({6, 16}, DType::F32, -1, 1, dev);
  const Tensor k = Tensor::rand_uniform({4, 16}, DType::F32, -1, 1, dev);
  const Tensor kc = Tensor::zeros({4, 8, 16}, DType::BF16, dev), vc = Tensor::zeros({4, 8, 16}, DType::BF16, dev);
  const std::string where = dev.location();
  expect_error<ShapeError>([&] { (void)attention_decode(q, k, k, kc, vc, 0, 1.0); },
                           {"[attention_decode]", "[6, 16] f32 " + where, "[4, 8, 16] bf16 " + where});
  const Tensor q8 = q.narrow(0, 0, 4);
  expect_error<IndexError>([&] { (void)attention_decode(q8, k, k, kc, vc, 8, 1.0); },
                           {"[attention_decode]", "position 8", "8 rows", "bf16 " + where});
  expect_error<DTypeError>([&] { (void)attention_decode(q8, k, k, kc, vc.to_dtype(DType::F16), 0, 1.0); },
                           {"[attention_decode]", "bf16", "f16"});
  expect_error<DTypeError>([&] { (void)attention_decode(q8, k, k, kc.to_dtype(DType::F64), vc, 0, 1.0); },
                           {"[attention_decode]", "f64"});
  // Nothing written on error.
  for (float x : host(kc)) ASSERT_EQ(x, 0.0f);
}

WICK_INSTANTIATE_DEVICES(DecodeAttention);

}  // namespace
}  // namespace wick::testing
