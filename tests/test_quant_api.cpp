// QTensor and the quantized ops through the public API (wick/quant.h): the format table, adopting
// bytes, row views, reshapes, 1-d and batched operands, and the typed errors of bad arguments.
// The bit-exactness of the codecs is tested in test_quant_legacy.cpp and test_quant_k.cpp, the
// ops on every device by the conformance cases (check/cases_quant.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "test_util.h"
#include "wick/quant.h"

namespace wick {
namespace {

Tensor random_rows(const Shape& s, uint64_t seed) {
  Device::cpu().set_seed(seed);
  return Tensor::rand_uniform(s, DType::F32, -2, 2);
}

TEST(QuantApi, FormatTableMatchesGgmlIds) {
  // ggml's enum ggml_type values of the formats (the ids GGUF stores).
  EXPECT_EQ(qformat_info(QFormat::Q4_0).ggml_type, 2u);
  EXPECT_EQ(qformat_info(QFormat::Q8_0).ggml_type, 8u);
  EXPECT_EQ(qformat_info(QFormat::Q4_K).ggml_type, 12u);
  EXPECT_EQ(qformat_info(QFormat::Q6_K).ggml_type, 14u);
  EXPECT_EQ(qformat_info(QFormat::IQ4_XS).ggml_type, 23u);
  EXPECT_EQ(qformat_info(QFormat::MXFP4).ggml_type, 39u);
  for (QFormat f : kAllQFormats) {
    ASSERT_EQ(qformat_from_ggml(qformat_info(f).ggml_type), f);
    ASSERT_EQ(qformat_from_name(qformat_name(f)), f);
  }
  EXPECT_EQ(qformat_from_name("Q4_K"), QFormat::Q4_K);
  EXPECT_FALSE(qformat_from_ggml(0).has_value());  // f32 is not a block format
  EXPECT_FALSE(qformat_from_ggml(4).has_value());  // the removed Q4_2
  EXPECT_FALSE(qformat_from_ggml(999).has_value());
  EXPECT_THROW(qformat_from_name("q4_3"), DTypeError);
}

TEST(QuantApi, QuantizeShapesAndBytes) {
  const Tensor x = random_rows({2, 3, 512}, 1);
  const QTensor q = quantize(x, QFormat::Q4_K);
  EXPECT_EQ(q.shape(), Shape({2, 3, 512}));
  EXPECT_EQ(q.rows(), 6);
  EXPECT_EQ(q.row_bytes(), 2 * 144);
  EXPECT_EQ(q.nbytes(), 6 * 2 * 144);
  EXPECT_EQ(q.bytes().shape(), Shape({2, 3, 288}));
  EXPECT_EQ(q.bytes().dtype(), DType::U8);
  EXPECT_EQ(q.str(), "[2, 3, 512] q4_k cpu");
  // One row quantized alone gives the same bytes as inside the tensor.
  const QTensor one = quantize(x.select(0, 1).select(0, 2), QFormat::Q4_K);
  EXPECT_EQ(testing::bytes_of(one.bytes()), testing::bytes_of(q.select(0, 1).select(0, 2).bytes().contiguous()));
}

TEST(QuantApi, FromBytesAdoptsWithoutCopy) {
  const Tensor x = random_rows({4, 64}, 2);
  const QTensor q = quantize(x, QFormat::Q8_0);
  const Tensor flat = q.bytes().flatten();
  const QTensor back = QTensor::from_bytes(flat, QFormat::Q8_0, {4, 64});
  EXPECT_EQ(back.bytes().storage(), q.bytes().storage());
  EXPECT_EQ(testing::bytes_of(back.dequantize()), testing::bytes_of(q.dequantize()));
  // wrong dtype, too few bytes, a row that is not whole blocks, no dims
  EXPECT_THROW(QTensor::from_bytes(flat.to_dtype(DType::I32), QFormat::Q8_0, {4, 64}), DTypeError);
  EXPECT_THROW(QTensor::from_bytes(flat.narrow(0, 0, flat.numel() - 1), QFormat::Q8_0, {4, 64}), ShapeError);
  EXPECT_THROW(QTensor::from_bytes(flat, QFormat::Q8_0, {8, 32 + 16}), ShapeError);
  EXPECT_THROW(QTensor::from_bytes(flat, QFormat::Q8_0, {}), ShapeError);
  EXPECT_THROW(QTensor::from_bytes(flat, static_cast<QFormat>(kNumQFormats), {4, 64}), DTypeError);
}

TEST(QuantApi, RowViewsDequantizeTheirRows) {
  const Tensor x = random_rows({5, 4, 256}, 3);
  for (QFormat f : {QFormat::Q4_0, QFormat::Q6_K, QFormat::MXFP4}) {
    const QTensor q = quantize(x, f);
    const Tensor all = q.dequantize();
    const QTensor v = q.narrow(0, 1, 3).narrow(1, 2, 2);  // rows with gaps between them
    EXPECT_EQ(v.shape(), Shape({3, 2, 256}));
    EXPECT_EQ(testing::bytes_of(v.dequantize()), testing::bytes_of(all.narrow(0, 1, 3).narrow(1, 2, 2).contiguous()));
    EXPECT_EQ(testing::bytes_of(q.select(1, 3).dequantize()), testing::bytes_of(all.select(1, 3).contiguous()));
    const QTensor r = v.reshape({6, 256});  // not a view of strided rows: copies them
    EXPECT_EQ(testing::bytes_of(r.dequantize()), testing::bytes_of(v.dequantize().reshape({6, 256})));
    EXPECT_THROW(q.narrow(2, 0, 32), ShapeError);
    EXPECT_THROW(q.select(-1, 0), ShapeError);
    EXPECT_THROW(q.reshape({20, 2, 128}), ShapeError);
  }
}

TEST(QuantApi, DequantizeDTypes) {
  const QTensor q = quantize(random_rows({3, 64}, 4), QFormat::Q5_1);
  const Tensor f = q.dequantize(DType::F32);
  EXPECT_EQ(testing::bytes_of(q.dequantize(DType::F16)), testing::bytes_of(f.to_dtype(DType::F16)));
  EXPECT_EQ(testing::bytes_of(q.dequantize(DType::BF16)), testing::bytes_of(f.to_dtype(DType::BF16)));
  EXPECT_THROW(q.dequantize(DType::F64), DTypeError);
  EXPECT_THROW(q.dequantize(DType::U8), DTypeError);
}

TEST(QuantApi, QuantizeFromHalfTypesMatchesF32OfTheSameValues) {
  const Tensor x = random_rows({4, 256}, 5).to_dtype(DType::BF16);
  for (QFormat f : kAllQFormats) {
    const QTensor a = quantize(x, f), b = quantize(x.to_dtype(DType::F32), f);
    ASSERT_EQ(testing::bytes_of(a.bytes()), testing::bytes_of(b.bytes())) << qformat_name(f);
  }
}

TEST(QuantApi, MatmulShapes) {
  const QTensor w = quantize(random_rows({24, 256}, 6), QFormat::Q8_0);
  const Tensor wd = w.dequantize();
  const Tensor x1 = random_rows({256}, 7);
  const Tensor y1 = matmul(x1, w);
  EXPECT_EQ(y1.shape(), Shape({24}));
  testing::expect_product_close(y1.unsqueeze(0), x1.unsqueeze(0), wd.t());
  const Tensor x3 = random_rows({2, 20, 256}, 8);  // 40 rows: the large-m path
  const Tensor y3 = matmul(x3, w);
  EXPECT_EQ(y3.shape(), Shape({2, 20, 24}));
  testing::expect_product_close(y3.reshape({40, 24}), x3.reshape({40, 256}), wd.t());
  const Tensor xt = random_rows({256, 5}, 9).t();  // a transposed operand
  testing::expect_product_close(matmul(xt, w), xt, wd.t());
  // k = 0 and m = 0
  const QTensor w0 = quantize(Tensor::zeros({3, 0}, DType::F32), QFormat::Q4_0);
  EXPECT_EQ(testing::bytes_of(matmul(Tensor::ones({2, 0}, DType::F32), w0)),
            testing::bytes_of(Tensor::zeros({2, 3}, DType::F32)));
  EXPECT_EQ(matmul(Tensor::ones({0, 256}, DType::F32), w).shape(), Shape({0, 24}));
}

TEST(QuantApi, MatmulErrors) {
  const QTensor w = quantize(random_rows({8, 64}, 10), QFormat::Q4_0);
  EXPECT_THROW(matmul(random_rows({2, 32}, 11), w), ShapeError);
  EXPECT_THROW(matmul(random_rows({2, 64}, 11).to_dtype(DType::F64), w), DTypeError);
  EXPECT_THROW(matmul(random_rows({2, 64}, 11), quantize(random_rows({2, 4, 64}, 12), QFormat::Q4_0)), ShapeError);
  EXPECT_THROW(matmul(random_rows({2, 64}, 11), QTensor()), InvalidArgument);
  try {
    matmul(random_rows({2, 32}, 11), w);
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[qmatmul]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("q4_0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 32]"), std::string::npos) << msg;
  }
}

TEST(QuantApi, EmbeddingPicksRows) {
  const QTensor w = quantize(random_rows({10, 64}, 13), QFormat::IQ4_NL);
  const Tensor all = w.dequantize(DType::F16);
  const Tensor ids = Tensor::from_vector<int32_t>({3, 0, 9, 3, 7, 1}, {2, 3});
  const Tensor e = embedding(ids, w, DType::F16);
  EXPECT_EQ(e.shape(), Shape({2, 3, 64}));
  EXPECT_EQ(testing::bytes_of(e), testing::bytes_of(all.index_select(ids.flatten(), 0).reshape({2, 3, 64})));
  EXPECT_EQ(embedding(Tensor::zeros({0}, DType::I64), w).shape(), Shape({0, 64}));
  EXPECT_THROW(embedding(Tensor::from_vector<int64_t>({10}, {1}), w), IndexError);
  EXPECT_THROW(embedding(Tensor::from_vector<int64_t>({-1}, {1}), w), IndexError);
  EXPECT_THROW(embedding(Tensor::ones({2}, DType::F32), w), DTypeError);
}

TEST(QuantApi, ZeroSize) {
  const QTensor q = quantize(Tensor::zeros({0, 64}, DType::F32), QFormat::Q4_1);
  EXPECT_EQ(q.rows(), 0);
  EXPECT_EQ(q.dequantize().shape(), Shape({0, 64}));
}

}  // namespace
}  // namespace wick
