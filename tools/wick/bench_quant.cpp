// `wick bench --quant`: x [m, k] times a quantized weight W [n, k] transposed (wick::matmul(x, W_q)),
// the projection of a quantized LLM, for the formats models ship in, beside the same product with
// bf16 weights (a row bench/peers/torch_bench.py's make_quant_rows times too).
//
// Shapes: Llama 3 8B's MLP up/gate [14336 x 4096], down [4096 x 14336] and output head
// [128256 x 4096], for m = 1, 2, 4, 8, 16 (GB/s rows: the weights are read once whatever m is, so
// the floor is the weight bytes at the copy bandwidth) and m = 512 (TFLOP/s rows). The weights of
// a row are rotated among input sets that total > 200 MB, so that no run finds them in L2.
#include <cstdint>
#include <string>
#include <vector>

#include "bench_rows.h"
#include "wick/quant.h"

namespace wick::tool {
namespace {

constexpr double kRotateBytes = 256e6;

struct QuantSizes {
  int64_t copy;
  std::vector<std::pair<int64_t, int64_t>> nk;  // weight shapes [n, k]
  std::vector<int64_t> ms;
};

}  // namespace

std::vector<Spec> make_quant_specs(const std::string& set) {
  using D = DType;
  const QuantSizes gpu{int64_t{1} << 28, {{14336, 4096}, {4096, 14336}, {128256, 4096}}, {1, 2, 4, 8, 16, 512}};
  const QuantSizes cpu{int64_t{1} << 26, {{14336, 4096}, {4096, 14336}, {128256, 4096}}, {1, 2, 4, 8, 16, 512}};
  const QuantSizes quick{int64_t{1} << 14, {{96, 256}}, {1, 4, 32}};
  const QuantSizes& z = set == "cpu" ? cpu : set == "quick" ? quick : gpu;
  std::vector<Spec> v;
  auto f = [](int64_t x) { return static_cast<double>(x); };

  add_row(v, "copy", std::to_string(z.copy), "f32", 8 * f(z.copy), 0, 4 * f(z.copy), [=](const Device& d) {
    Tensor x = rnd({z.copy}, D::F32, d);
    return Run([x] { (void)x.clone(); });
  });
  const QFormat formats[] = {QFormat::Q4_0, QFormat::Q8_0,   QFormat::Q4_K, QFormat::Q5_K,
                             QFormat::Q6_K, QFormat::IQ4_XS, QFormat::MXFP4};
  for (auto [n, k] : z.nk) {
    for (int64_t m : z.ms) {
      const std::string shape = dims({m, k}) + " @ " + dims({n, k}) + "^T";
      const double act = 2 * (f(m * k) + f(m * n)), flops = m > 16 ? 2 * f(m) * f(n) * f(k) : 0;
      // bf16 weights: the peer's row (the same key in torch_bench.py)
      add_row(
          v, "linear", shape, "bf16", 2 * f(n * k) + act, flops, 2 * f(n * k) + 2 * f(m * k),
          [=](const Device& d) {
            Tensor x = rnd({m, k}, D::BF16, d), w = rnd({n, k}, D::BF16, d);
            return Run([x, w] { (void)x.matmul(w.t()); });
          },
          D::BF16);
      v.back().rotate = kRotateBytes;
      for (QFormat fmt : formats) {
        const QFormatInfo& info = qformat_info(fmt);
        const double wbytes = f(n) * f(k / info.block_elems * info.block_bytes);
        add_row(
            v, "linear", shape, std::string(info.name), wbytes + act, flops, wbytes + 2 * f(m * k),
            [=](const Device& d) {
              Tensor x = rnd({m, k}, D::BF16, d);
              QTensor w = quantize(rnd({n, k}, D::F32, d), fmt);
              return Run([x, w] { (void)matmul(x, w); });
            },
            D::BF16);
        v.back().rotate = kRotateBytes;
      }
    }
  }
  return v;
}

}  // namespace wick::tool
