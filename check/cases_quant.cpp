// Conformance cases of the quantized ops, one per block format: quantize (the bytes of the host
// codec, so a GPU row is bit-exact against the CPU backend), dequantize (exact), matmul for
// m = 1, 7 and 64 (f64 math on the dequantized weights) and embedding (exact), plus the typed
// errors of bad arguments.
#include <cmath>
#include <string>

#include "check/harness.h"
#include "quant/codecs.h"
#include "wick/quant.h"

namespace wick::check {
namespace {

// The host codec's decode of packed rows (rows x row_bytes), as f64 values [rows, k].
Ref host_decode(QFormat f, const std::vector<uint8_t>& bytes, int64_t rows, int64_t k) {
  Ref out({rows, k});
  quant::dispatch_qformat(f, [&]<QFormat F>() {
    using C = quant::Codec<F>;
    const int64_t nb = k / C::kElems;
    float y[32];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < nb; ++b)
        for (int s = 0; s < C::kElems / 32; ++s) {
          C::dequantize_sub(bytes.data() + (r * nb + b) * C::kBytes, s, y);
          for (int j = 0; j < 32; ++j) out.v[static_cast<size_t>(r * k + b * C::kElems + 32 * s + j)] = y[j];
        }
  });
  return out;
}

// The host codec's bytes of rows of f64 values (each exactly a float of the input dtype).
Ref host_encode(QFormat f, const Ref& x) {
  const int64_t k = x.shape.back(), rows = x.numel() / std::max<int64_t>(k, 1);
  const QFormatInfo& info = qformat_info(f);
  Ref out({rows, k / info.block_elems * info.block_bytes});
  quant::dispatch_qformat(f, [&]<QFormat F>() {
    using C = quant::Codec<F>;
    float in[C::kElems];
    uint8_t blk[C::kBytes];
    size_t o = 0;
    for (int64_t i = 0; i < x.numel(); i += C::kElems) {
      for (int j = 0; j < C::kElems; ++j) in[j] = static_cast<float>(x.v[static_cast<size_t>(i + j)]);
      C::quantize(in, blk);
      for (int j = 0; j < C::kBytes; ++j) out.v[o++] = blk[j];
    }
  });
  return out;
}

Ref decoded(const QTensor& q) {
  return host_decode(q.format(), q.contiguous().bytes().to_vector<uint8_t>(), q.rows(), q.row_elems());
}

// The largest error of a round trip through the format, as a fraction of the block's largest
// magnitude: about half a quantization step (plus the f16 rounding of the scales) with a margin.
// The K formats fit their scales to minimise the squared error of a block, which may leave one
// element past half a step: their bounds have room for that.
double roundtrip_bound(QFormat f) {
  switch (f) {
    case QFormat::Q8_0:
    case QFormat::Q8_1:
    case QFormat::Q8_K:
      return 0.006;
    case QFormat::Q6_K:
      return 0.04;
    case QFormat::Q5_1:
      return 0.05;
    case QFormat::Q5_0:  // the scale is amax / -16: a full step where the codes clamp at 15
    case QFormat::Q5_K:
      return 0.08;
    case QFormat::Q4_0:  // amax / -8, likewise
    case QFormat::Q4_1:
    case QFormat::IQ4_NL:
      return 0.13;
    case QFormat::Q4_K:
    case QFormat::IQ4_XS:
      return 0.15;
    case QFormat::MXFP4:  // the shared exponent is floor(log2 amax) - 2: values past 6 * 2^e clip
      return 0.26;
    case QFormat::Q3_K:
      return 0.35;
    case QFormat::Q2_K:
      return 0.6;
  }
  return 1;
}

// Two rows of blocks for every format (k = 512 holds 2 super-blocks or 16 small blocks).
constexpr int64_t kK = 512;

void case_quantize(Ctx& c, QFormat f) {
  const Tensor x = c.input(c.shape({6, kK}), -2, 2);
  const QTensor q = quantize(x, f);
  c.check(q.shape() == x.shape(), "quantize: shape " + q.str() + " for " + x.str());
  const Ref xr = c.ref(x);
  Ref bytes = host_encode(f, xr);
  bytes.shape = q.bytes().shape();
  c.expect(q.bytes(), bytes, DType::U8, Tol{0, 0});
  c.expect(q.dequantize(DType::F32), xr, DType::F32, Tol{roundtrip_bound(f) * 2, 0});
}

void case_dequantize(Ctx& c, QFormat f) {
  const Tensor x = c.input_contiguous({3, 4, kK}, DType::F32, -3, 3);
  const QTensor q = quantize(x, f);
  // the whole tensor, then a view of rows 1..2 of every leading index (a row stride that is not
  // the row's length)
  Ref all = round_to(c.dtype(), decoded(q));
  all.shape = q.shape();
  c.expect(q.dequantize(c.dtype()), all, Tol{0, 0});
  const QTensor v = q.narrow(1, 1, 2);
  Ref part = round_to(c.dtype(), decoded(v));
  part.shape = v.shape();
  c.expect(v.dequantize(c.dtype()), part, Tol{0, 0});
}

// dst = x w^T in f64 over the decoded weights; the tolerance covers the f32 accumulation of k
// products of magnitude <= 4 and the rounding to the output dtype.
void case_qmatmul(Ctx& c, QFormat f, int64_t m) {
  const int64_t n = 40;
  const QTensor w = quantize(c.input_contiguous({n, kK}, DType::F32, -2, 2), f);
  const Shape xs = m == 64 ? Shape{2, 32, kK} : Shape{m, kK};
  const Tensor x = c.input(c.shape(xs), -2, 2);
  const Ref xr = c.ref(x), wr = decoded(w);
  Shape os = xr.shape;
  os.back() = n;
  Ref out(os);
  const int64_t rows = xr.numel() / kK;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t e = 0; e < kK; ++e)
        s += xr.v[static_cast<size_t>(i * kK + e)] * wr.v[static_cast<size_t>(j * kK + e)];
      out.v[static_cast<size_t>(i * n + j)] = s;
    }
  // A GPU may decode the weights to the activation dtype for a tensor-core GEMM: one rounding of
  // each weight, a random walk over k terms.
  const double eps = c.dtype() == DType::BF16 ? 0x1p-8 : c.dtype() == DType::F16 ? 0x1p-11 : 0x1p-22;
  Tol tol = tol_for(c.dtype(), 8);
  tol.atol += 8.0 * std::sqrt(static_cast<double>(kK)) * eps + 4.0 * static_cast<double>(kK) * 0x1p-22;
  c.expect(matmul(x, w), out, tol);
}

void case_embedding(Ctx& c, QFormat f) {
  const int64_t vocab = 37;
  const QTensor w = quantize(c.input_contiguous({vocab, kK}, DType::F32, -2, 2), f);
  const Ref wr = decoded(w);
  for (DType id : {DType::I64, DType::U32}) {
    const Tensor ids = c.input(c.shape({3, 5}), id, 0, vocab - 1);
    const Ref ir = c.ref(ids);
    Shape s = ir.shape;
    s.push_back(kK);
    Ref out(s);
    for (int64_t i = 0; i < ir.numel(); ++i)
      for (int64_t e = 0; e < kK; ++e)
        out.v[static_cast<size_t>(i * kK + e)] =
            round_to(c.dtype(), wr.v[static_cast<size_t>(static_cast<int64_t>(ir.v[static_cast<size_t>(i)]) * kK + e)]);
    c.expect(embedding(ids, w, c.dtype()), out, Tol{0, 0});
  }
}

// Bad arguments: typed errors, before anything is allocated or written.
void case_errors(Ctx& c, QFormat f) {
  const int64_t be = qformat_info(f).block_elems;
  const Tensor x = c.input_contiguous({2, 2 * be}, c.dtype(), -1, 1);
  const QTensor q = quantize(x, f);
  c.expect_throw<ShapeError>(
      [&] {
        quantize(c.input_contiguous({2, be + 16}, c.dtype(), -1, 1), f);
      },
      "quantize of rows that are not whole blocks");
  c.expect_throw<DTypeError>(
      [&] {
        quantize(c.input_contiguous({2, be}, DType::I32, -1, 1), f);
      },
      "quantize of an integer tensor");
  c.expect_throw<ShapeError>(
      [&] {
        matmul(c.input_contiguous({3, be}, c.dtype(), -1, 1), q);
      },
      "matmul with mismatched k");
  c.expect_throw<ShapeError>(
      [&] { QTensor::from_bytes(q.bytes().flatten().narrow(0, 0, q.nbytes() - 1), f, q.shape()); },
      "from_bytes of a truncated block buffer");
  c.expect_throw<ShapeError>([&] { q.narrow(1, 0, 1); }, "narrow inside a row");
  c.expect_throw<DTypeError>([&] { q.dequantize(DType::I32); }, "dequantize to an integer dtype");
  c.expect_throw<DTypeError>([&] { QTensor::from_bytes(q.bytes(), static_cast<QFormat>(99), q.shape()); },
                             "an unknown format id");
  c.expect_throw<IndexError>(
      [&] {
        embedding(Tensor::from_vector<int64_t>({0, 2}, {2}, c.device()), q, c.dtype());
      },
      "embedding with an id past the table");
}

}  // namespace

void register_quant_cases(Cases& cases) {
  for (QFormat f : kAllQFormats) {
    const std::string name(qformat_name(f));
    cases.push_back({Op::Quantize, name, kAllLayouts, [f](Ctx& c) { case_quantize(c, f); }});
    cases.push_back({Op::Quantize, name + " bad arguments", kContiguousOnly, [f](Ctx& c) { case_errors(c, f); }});
    cases.push_back({Op::Dequantize, name, kContiguousOnly, [f](Ctx& c) { case_dequantize(c, f); }});
    for (int64_t m : {1, 7, 64})
      cases.push_back({Op::QMatmul, name + " m=" + std::to_string(m), m == 7 ? kAllLayouts : kContiguousOnly,
                       [f, m](Ctx& c) { case_qmatmul(c, f, m); }});
    cases.push_back({Op::QEmbedding, name, kContiguousOnly, [f](Ctx& c) { case_embedding(c, f); }});
  }
}

}  // namespace wick::check
