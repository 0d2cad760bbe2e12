// `wick bench --llm`: the ops of a decoder-only transformer on its own shapes, beside the ANCHORS.md
// rows of bench.cpp (same method, timer and JSON; bench/peers/torch_bench.py's make_llm_rows
// mirrors these rows and their keys).
//
// Prefill runs T tokens of one sequence through the layer's ops: the token embedding, rms_norm, the
// fused q/k/v projection, rope, the [T, heads, head_dim] -> [heads, T, head_dim] copy, attention as
// two batched products around a softmax over [heads, T, T], the residual add, the fused gate/up
// projection whose halves go to silu and mul as strided views, and the down projection. Decode runs
// one token: rms_norm of one row, a projection against the MLP weight, the attention scores against
// a K cache of C positions (k given as a transposed view), the cache grown by one position with cat,
// the logits projection, and sampling's ops over the vocabulary (softmax, argmax, a descending sort
// and cumsum for top-p), for one sequence and for a batch of B.
//
// The GPU set has Llama 3 8B's sizes, the CPU set Llama 3.2 1B's with fewer tokens.
#include <cstdint>
#include <string>
#include <vector>

#include "bench_rows.h"
#include "wick/ops.h"

namespace wick::tool {
namespace {

struct LlmSizes {
  int64_t copy;                   // the copy row's elements (the "% copy" reference)
  int64_t hidden, heads, kv, hd;  // model width, attention heads, K/V heads, head size
  int64_t ffn, vocab;             // MLP width, vocabulary
  int64_t tokens;                 // prefill tokens (T)
  int64_t ctx;                    // decode: cached positions (C)
  int64_t batch;                  // decode: sequences in the batched sampling rows (B)
};

// clang-format off
constexpr LlmSizes kLlmGpu{.copy = int64_t{1} << 28, .hidden = 4096, .heads = 32, .kv = 8, .hd = 128,
                           .ffn = 14336, .vocab = 128256, .tokens = 2048, .ctx = 4096, .batch = 64};
constexpr LlmSizes kLlmCpu{.copy = int64_t{1} << 24, .hidden = 2048, .heads = 32, .kv = 8, .hd = 64,
                           .ffn = 8192, .vocab = 128256, .tokens = 128, .ctx = 1024, .batch = 8};
constexpr LlmSizes kLlmQuick{.copy = int64_t{1} << 14, .hidden = 64, .heads = 4, .kv = 2, .hd = 16,
                             .ffn = 128, .vocab = 1000, .tokens = 16, .ctx = 32, .batch = 2};
// clang-format on

}  // namespace

std::vector<Spec> make_llm_specs(const std::string& set) {
  using D = DType;
  const LlmSizes& z = set == "cpu" ? kLlmCpu : set == "quick" ? kLlmQuick : kLlmGpu;
  std::vector<Spec> v;
  auto row = [&](auto&&... a) { add_row(v, std::forward<decltype(a)>(a)...); };
  auto f = [](int64_t x) { return static_cast<double>(x); };
  const int64_t H = z.hidden, nh = z.heads, hd = z.hd, F = z.ffn, V = z.vocab, T = z.tokens, C = z.ctx;
  const int64_t Q = (z.heads + 2 * z.kv) * z.hd;  // fused q, k, v projection's outputs

  row("copy", std::to_string(z.copy), "f32", 8 * f(z.copy), 0, 4 * f(z.copy), [=](const Device& d) {
    Tensor x = rnd({z.copy}, D::F32, d);
    return Run([x] { (void)x.clone(); });
  });

  // ---- prefill ----
  row("index_select", dims({V, H}) + " ids " + std::to_string(T) + " dim 0", "bf16", 4 * f(T * H) + 8 * f(T), 0,
      2 * f(V * H) + 8 * f(T), [=](const Device& d) {
        Tensor t = rnd({V, H}, D::BF16, d), i = ids({T}, V, d);
        return Run([t, i] { (void)t.index_select(i, 0); });
      });
  auto rms = [&](int64_t rows) {
    row("rms_norm", dims({rows, H}), "bf16", 4 * f(rows * H) + 2 * f(H), 0, 2 * f(rows * H + H), [=](const Device& d) {
      Tensor x = rnd({rows, H}, D::BF16, d), w = rnd({H}, D::BF16, d, 0.5, 1.5);
      return Run([x, w] { (void)x.rms_norm(w, 1e-5); });
    });
  };
  rms(T);
  // x [m, k] @ W^T, W stored [n, k]: a TFLOP/s row for a batch of tokens, a GB/s row for one.
  auto linear = [&](int64_t m, int64_t n, int64_t k) {
    const double bytes = 2 * (f(m * k) + f(n * k) + f(m * n)), in = 2 * (f(m * k) + f(n * k));
    row(
        "linear", dims({m, k}) + " @ " + dims({n, k}) + "^T", "bf16", bytes, m > 1 ? 2 * f(m) * f(n) * f(k) : 0, in,
        [=](const Device& d) {
          Tensor x = rnd({m, k}, D::BF16, d), w = rnd({n, k}, D::BF16, d);
          return Run([x, w] { (void)x.matmul(w.t()); });
        },
        D::BF16);
  };
  linear(T, Q, H);
  row("rope", dims({1, nh, T, hd}), "bf16", 4 * f(nh * T * hd) + 2 * f(T * hd), 0, 2 * f(nh * T * hd + T * hd),
      [=](const Device& d) {
        Tensor x = rnd({1, nh, T, hd}, D::BF16, d);
        Tensor c = rnd({T, hd / 2}, D::BF16, d), s = rnd({T, hd / 2}, D::BF16, d);
        return Run([x, c, s] { (void)rope(x, c, s); });
      });
  row("transpose_copy", dims({1, T, nh, hd}) + " dims 1,2", "bf16", 4 * f(T * nh * hd), 0, 2 * f(T * nh * hd),
      [=](const Device& d) {
        Tensor x = rnd({1, T, nh, hd}, D::BF16, d);
        return Run([x] { (void)x.transpose(1, 2).contiguous(); });
      });
  // Attention scores q @ k^T (k [heads, T, hd] as a transposed view) and probabilities @ v.
  row(
      "bmm", std::to_string(nh) + "x(" + dims({T, hd}) + " @ (" + dims({T, hd}) + ")^T)", "bf16",
      2 * f(nh) * (2 * f(T * hd) + f(T * T)), 2 * f(nh) * f(T * T) * f(hd), 4 * f(nh * T * hd),
      [=](const Device& d) {
        Tensor q = rnd({nh, T, hd}, D::BF16, d), k = rnd({nh, T, hd}, D::BF16, d);
        return Run([q, k] { (void)q.matmul(k.t()); });
      },
      D::BF16);
  row("softmax", dims({nh, T, T}) + " dim -1", "bf16", 4 * f(nh * T * T), 0, 2 * f(nh * T * T), [=](const Device& d) {
    Tensor x = rnd({nh, T, T}, D::BF16, d, -4.0, 4.0);
    return Run([x] { (void)x.softmax(-1); });
  });
  row(
      "bmm", std::to_string(nh) + "x(" + dims({T, T}) + " @ " + dims({T, hd}) + ")", "bf16",
      2 * f(nh) * (f(T * T) + 2 * f(T * hd)), 2 * f(nh) * f(T * T) * f(hd), 2 * f(nh) * (f(T * T) + f(T * hd)),
      [=](const Device& d) {
        Tensor p = rnd({nh, T, T}, D::BF16, d, 0.0, 1.0), x = rnd({nh, T, hd}, D::BF16, d);
        return Run([p, x] { (void)p.matmul(x); });
      },
      D::BF16);
  row("add", dims({T, H}), "bf16", 6 * f(T * H), 0, 4 * f(T * H), [=](const Device& d) {
    Tensor a = rnd({T, H}, D::BF16, d), b = rnd({T, H}, D::BF16, d);
    return Run([a, b] { (void)a.add(b); });
  });
  linear(T, 2 * F, H);
  // The gate/up projection's [T, 2F] output split in halves: silu(gate) * up, both strided views.
  const std::string half = dims({T, F}) + " of " + dims({T, 2 * F});
  row("silu", half, "bf16", 4 * f(T * F), 0, 4 * f(T * F), [=](const Device& d) {
    Tensor y = rnd({T, 2 * F}, D::BF16, d, -4.0, 4.0);
    return Run([y, F] { (void)y.narrow(1, 0, F).silu(); });
  });
  row("mul", dims({T, F}) + " * " + half, "bf16", 6 * f(T * F), 0, 2 * f(T * F) + 4 * f(T * F), [=](const Device& d) {
    Tensor g = rnd({T, F}, D::BF16, d), y = rnd({T, 2 * F}, D::BF16, d);
    return Run([g, y, F] { (void)g.mul(y.narrow(1, F, F)); });
  });
  linear(T, H, F);

  // ---- decode ----
  rms(1);
  linear(1, F, H);
  row("bmm", std::to_string(nh) + "x(" + dims({1, hd}) + " @ (" + dims({C, hd}) + ")^T)", "bf16",
      2 * f(nh) * (f(hd) + f(C * hd) + f(C)), 0, 2 * f(nh) * (f(hd) + f(C * hd)), [=](const Device& d) {
        Tensor q = rnd({nh, 1, hd}, D::BF16, d), k = rnd({nh, C, hd}, D::BF16, d);
        return Run([q, k] { (void)q.matmul(k.t()); });
      });
  // The decode step's probabilities times V: one row times a [C, hd] matrix that lies along hd.
  row("bmm", std::to_string(nh) + "x(" + dims({1, C}) + " @ " + dims({C, hd}) + ")", "bf16",
      2 * f(nh) * (f(C) + f(C * hd) + f(hd)), 0, 2 * f(nh) * (f(C) + f(C * hd)), [=](const Device& d) {
        Tensor p = rnd({nh, 1, C}, D::BF16, d), v = rnd({nh, C, hd}, D::BF16, d);
        return Run([p, v] { (void)p.matmul(v); });
      });
  row("cat", dims({1, z.kv, C - 1, hd}) + " + " + dims({1, z.kv, 1, hd}) + " dim 2", "bf16", 4 * f(z.kv * C * hd), 0,
      2 * f(z.kv * C * hd), [=](const Device& d) {
        Tensor a = rnd({1, z.kv, C - 1, hd}, D::BF16, d), b = rnd({1, z.kv, 1, hd}, D::BF16, d);
        return Run([a, b] { (void)cat({a, b}, 2); });
      });
  linear(1, V, H);
  for (int64_t rows : {int64_t{1}, z.batch}) {
    const double e = f(rows * V);
    const std::string shape = dims({rows, V}) + " dim -1";
    auto logits = [=](const Device& d) { return rnd({rows, V}, D::F32, d, -8.0, 8.0); };
    row("softmax", shape, "f32", 8 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = logits(d);
      return Run([x] { (void)x.softmax(-1); });
    });
    row("argmax", shape, "f32", 4 * e + 8 * f(rows), 0, 4 * e, [=](const Device& d) {
      Tensor x = logits(d);
      return Run([x] { (void)x.argmax({-1}); });
    });
    row("sort", shape + " desc", "f32", 16 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = logits(d);
      return Run([x] { (void)x.sort(-1, true); });
    });
    row("cumsum", shape, "f32", 8 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = logits(d);
      return Run([x] { (void)x.cumsum(-1); });
    });
  }
  return v;
}

}  // namespace wick::tool
