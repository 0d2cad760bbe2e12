// The quantized ops on the GPU against the CPU backend, for every format: quantize and dequantize
// bit for bit (Note [Quantizer rounding]), matmul within a tolerance of the f64 product of the
// dequantized weights on both paths (the mat-vec kernel up to 16 rows of x, dequantize + GEMM
// above: Note [GPU quantized mat-vec]), row views and misaligned rows as weights, embedding, and
// zero sizes. Every test skips when no GPU is present.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test_util.h"
#include "wick/quant.h"

namespace wick {
namespace {

constexpr DType kQuantFloats[] = {DType::F32, DType::F16, DType::BF16};

std::string name_of(QFormat f, DType t) { return std::string(qformat_name(f)) + " " + std::string(dtype_name(t)); }

Tensor random_rows(const Shape& s, uint64_t seed) {
  Device::cpu().set_seed(seed);
  return Tensor::rand_uniform(s, DType::F32, -2, 2);
}

// Rows of magnitudes 1e-3 .. 1e3, a zero row and rows with one large element, so that the
// quantizers' scale searches take their different branches.
Tensor varied_rows(int64_t rows, int64_t k, uint64_t seed) {
  std::vector<float> v = random_rows({rows, k}, seed).to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float scale = static_cast<float>(std::pow(10.0, static_cast<double>(r % 7) - 3));
    for (int64_t i = 0; i < k; ++i) {
      float& e = v[static_cast<size_t>(r * k + i)];
      e = r % 7 == 6 ? 0.0f : e * scale;
      if (r % 5 == 4 && i == (r * 37) % k) e = 50.0f * scale;
    }
  }
  return Tensor::from_vector(v, {rows, k});
}

std::vector<uint8_t> bytes(const QTensor& q) { return q.bytes().contiguous().to_vector<uint8_t>(); }

// The tolerance of a GPU product against the f64 one, relative to sum |x| |w| (f32 accumulation;
// the 16-bit types also round the result and, on the GEMM path, the dequantized weights).
double rtol_of(DType t) { return t == DType::F32 ? 1e-4 : 1e-2; }

// w's values in f64 as the [k, n] operand of x w^T, and their magnitudes.
struct F64Weights {
  Tensor wt, wt_abs;
  explicit F64Weights(const QTensor& w)
      : wt(w.to(Device::cpu()).dequantize(DType::F32).to_dtype(DType::F64).t()), wt_abs(wt.abs()) {}
};

// y = matmul(x, w) [m, n] against x w^T in f64 from w's dequantized values.
void expect_qmatmul_close(const Tensor& y, const Tensor& x, const F64Weights& w, const std::string& what) {
  const Device cpu = Device::cpu();
  const int64_t m = x.dim(0), n = w.wt.dim(1);
  ASSERT_EQ(y.shape(), Shape({m, n})) << what;
  ASSERT_EQ(y.dtype(), x.dtype()) << what;
  const Tensor x64 = x.to(cpu).to_dtype(DType::F64);
  const std::vector<double> want = x64.matmul(w.wt).to_vector<double>();
  const std::vector<double> mag = x64.abs().matmul(w.wt_abs).to_vector<double>();
  const std::vector<double> got = y.to(cpu).to_dtype(DType::F64).to_vector<double>();
  const double rtol = rtol_of(x.dtype());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), rtol * mag[i] + 1e-30)
        << what << " at (" << static_cast<int64_t>(i) / n << ", " << static_cast<int64_t>(i) % n << "): gpu " << got[i]
        << " f64 " << want[i];
}

TEST(GpuQuant, QuantizeMatchesCpuBitForBit) {
  WICK_REQUIRE_GPU(devs);
  const int64_t rows = 21, k = 512;
  const Tensor x = varied_rows(rows, k, 1);
  for (const Device& d : devs)
    for (DType t : kQuantFloats) {
      const Tensor xt = x.to_dtype(t);
      // The same values 3 elements into their storage: inputs that are not 16-byte aligned.
      const Tensor shifted = cat({Tensor::zeros({3}, t), xt.flatten()}, 0).to(d).narrow(0, 3, rows * k);
      for (QFormat f : kAllQFormats) {
        const std::string what = name_of(f, t);
        const QTensor qc = quantize(xt, f), qg = quantize(xt.to(d), f);
        ASSERT_EQ(qg.device(), d) << what;
        ASSERT_EQ(qg.shape(), qc.shape()) << what;
        ASSERT_EQ(bytes(qg), bytes(qc)) << what;
        ASSERT_EQ(bytes(quantize(shifted.reshape({rows, k}), f)), bytes(qc)) << what << " misaligned";
      }
    }
}

TEST(GpuQuant, DequantizeMatchesCpuBitForBit) {
  WICK_REQUIRE_GPU(devs);
  const Tensor x = varied_rows(19, 768, 2);
  for (const Device& d : devs)
    for (QFormat f : kAllQFormats) {
      const QTensor qc = quantize(x, f), qg = qc.to(d);
      for (DType t : kQuantFloats) {
        const std::string what = name_of(f, t);
        const Tensor yc = qc.dequantize(t), yg = qg.dequantize(t);
        ASSERT_EQ(yg.device(), d) << what;
        ASSERT_EQ(testing::bytes_of(yg), testing::bytes_of(yc)) << what;
        // a row view 3 rows in (for some formats not a multiple of 16 bytes)
        ASSERT_EQ(testing::bytes_of(qg.narrow(0, 3, 11).dequantize(t)),
                  testing::bytes_of(qc.narrow(0, 3, 11).dequantize(t)))
            << what << " row view";
      }
    }
}

// Both paths (m <= 16: the mat-vec kernel with M = 1, 4, 8, 16; m > 16: dequantize + GEMM), k of
// one to several blocks per lane, rows that are not 16-byte multiples, and a row view as w.
TEST(GpuQuant, MatmulAgreesWithF64) {
  WICK_REQUIRE_GPU(devs);
  const int64_t n = 67;
  for (const Device& d : devs)
    for (QFormat f : kAllQFormats) {
      const int64_t be = qformat_info(f).block_elems;
      std::vector<int64_t> ks = {256, 768, 2048};
      if (be == 32) ks.push_back(96);  // rows of 3 blocks
      for (const int64_t k : ks) {
        const QTensor w = quantize(random_rows({n, k}, 3 + static_cast<uint64_t>(k)), f).to(d);
        const QTensor wv = w.narrow(0, 5, n - 9);  // a row view, its first byte 5 rows in
        const F64Weights ref(w), ref_view(wv);
        for (const int64_t m : {1, 3, 8, 16, 17, 64}) {
          const Tensor x32 = random_rows({m, k}, 100 + static_cast<uint64_t>(m));
          for (DType t : kQuantFloats) {
            const std::string what = name_of(f, t) + " m " + std::to_string(m) + " k " + std::to_string(k);
            const Tensor x = x32.to_dtype(t).to(d);
            expect_qmatmul_close(matmul(x, w), x, ref, what);
            if (m == 1 || m == 17) expect_qmatmul_close(matmul(x, wv), x, ref_view, what + " row view");
          }
        }
      }
    }
}

// The mat-vec kernel's other shapes: many columns (more columns per block), long rows (many k
// tiles), and weights quantized on the GPU.
TEST(GpuQuant, MatVecShapes) {
  WICK_REQUIRE_GPU(devs);
  struct Case {
    int64_t n, k;
  };
  for (const Device& d : devs)
    for (QFormat f : kAllQFormats)
      for (const Case c : {Case{20000, 256}, Case{4500, 512}, Case{40, 16384}}) {
        d.set_seed(7);
        const QTensor w = quantize(Tensor::rand_uniform({c.n, c.k}, DType::F32, -1, 1, d), f);
        const F64Weights ref(w);
        for (const int64_t m : {1, 5, 16})
          for (DType t : {DType::F32, DType::BF16}) {
            const std::string what =
                name_of(f, t) + " n " + std::to_string(c.n) + " k " + std::to_string(c.k) + " m " + std::to_string(m);
            const Tensor x = random_rows({m, c.k}, 200 + static_cast<uint64_t>(m)).to_dtype(t).to(d);
            expect_qmatmul_close(matmul(x, w), x, ref, what);
          }
      }
}

TEST(GpuQuant, EmbeddingMatchesCpu) {
  WICK_REQUIRE_GPU(devs);
  const Tensor ids64 = Tensor::from_vector<int64_t>({3, 0, 9, 3, 7, 1}, {2, 3});
  const Tensor ids32 = ids64.to_dtype(DType::I32);
  for (const Device& d : devs)
    for (QFormat f : kAllQFormats) {
      const QTensor qc = quantize(varied_rows(10, 256, 4), f), qg = qc.to(d);
      for (DType t : kQuantFloats) {
        const std::string what = name_of(f, t);
        const Tensor e = embedding(ids64.to(d), qg, t);
        ASSERT_EQ(e.device(), d) << what;
        ASSERT_EQ(e.shape(), Shape({2, 3, 256})) << what;
        ASSERT_EQ(testing::bytes_of(e), testing::bytes_of(embedding(ids64, qc, t))) << what;
        ASSERT_EQ(testing::bytes_of(embedding(ids32.to(d), qg, t)), testing::bytes_of(e)) << what << " i32 ids";
      }
    }
}

TEST(GpuQuant, ZeroSizes) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs)
    for (QFormat f : {QFormat::Q4_0, QFormat::Q4_K}) {
      const std::string what(qformat_name(f));
      const QTensor w = quantize(random_rows({6, 256}, 5).to(d), f);
      EXPECT_EQ(matmul(Tensor::ones({0, 256}, DType::F32, d), w).shape(), Shape({0, 6})) << what;
      const QTensor none = quantize(Tensor::zeros({0, 256}, DType::F32, d), f);
      EXPECT_EQ(none.rows(), 0) << what;
      EXPECT_EQ(none.dequantize().shape(), Shape({0, 256})) << what;
      EXPECT_EQ(matmul(Tensor::ones({3, 256}, DType::F32, d), none).shape(), Shape({3, 0})) << what;
      // k = 0: an empty sum on both paths
      const QTensor w0 = quantize(Tensor::zeros({3, 0}, DType::F32, d), f);
      for (const int64_t m : {2, 20})
        EXPECT_EQ(testing::bytes_of(matmul(Tensor::ones({m, 0}, DType::F32, d), w0)),
                  testing::bytes_of(Tensor::zeros({m, 3}, DType::F32)))
            << what << " m " << m;
    }
}

// Past 2^31 elements (64-bit indices in every kernel): a Q4_K tensor of 2^31 + 4096 elements made on
// the GPU, decoded there to f16; its last rows against the CPU's decode of the same bytes, and
// the mat-vec's last outputs against the f64 product. About 10 GB of device memory.
TEST(GpuQuant, LargeTensorPast2To31Elements) {
  WICK_REQUIRE_GPU(devs);
  const Device d = devs.front();
  const int64_t k = 4096, rows = (int64_t{1} << 31) / k + 1;
  d.set_seed(7);
  QTensor q = quantize(Tensor::rand_normal({rows, k}, DType::F16, 0, 1, d), QFormat::Q4_K);
  const Tensor y = q.dequantize(DType::F16);
  ASSERT_EQ(y.numel(), (int64_t{1} << 31) + k);
  const QTensor tail = q.narrow(0, rows - 3, 3);
  EXPECT_EQ(testing::bytes_of(y.narrow(0, rows - 3, 3).contiguous()),
            testing::bytes_of(tail.to(Device::cpu()).dequantize(DType::F16)));
  const Tensor x = random_rows({1, k}, 8).to_dtype(DType::BF16).to(d);
  const Tensor out = matmul(x, q);
  ASSERT_EQ(out.shape(), Shape({1, rows}));
  expect_qmatmul_close(out.narrow(1, rows - 3, 3).contiguous(), x, F64Weights(tail), "last rows of the mat-vec");
}

}  // namespace
}  // namespace wick
