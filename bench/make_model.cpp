// wick_make_model: writes a random-weight Llama-family model of real size to GGUF, for
// `wick bench-model` (decode and prefill rates depend on the sizes, not on the values).
//
//   wick_make_model OUT.gguf [--format bf16|f16|f32|q8_0|q4_k_m|<block format>] [--shape 8b|1b]
//                   [--device cuda]
//
// 8b is Llama 3 8B (32 layers, 4096 wide, 32/8 heads of 128, ffn 14336, vocab 128256); 1b is
// Llama 3.2 1B (16 layers, 2048 wide, 32/8 heads of 64, ffn 8192, vocab 128256). q4_k_m mixes
// formats as llama.cpp's Q4_K_M does: q6_k for the output head and for attn_v and ffn_down of the
// first and last eighth of the layers and every third layer between, q4_k elsewhere. Weights are
// drawn and quantized on --device (default: a GPU when present). The vocabulary is SentencePiece
// style: <unk> <s> </s>, the 256 byte tokens, then filler pieces.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "llm/spm_vocab.h"
#include "wick/wick.h"

namespace {

using namespace wick;

struct Shape8 {
  int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab;
};

bool more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

int usage() {
  std::fprintf(stderr,
               "usage: wick_make_model OUT.gguf [--format bf16|f16|f32|q8_0|q4_k_m|FORMAT] [--shape 8b|1b] "
               "[--device D]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string out = argv[1];
  std::string format = "q4_k_m", shape = "8b";
  Device dev = Device::gpu_if_available();
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i], v = argv[i + 1];
    if (a == "--format") {
      format = v;
    } else if (a == "--shape") {
      shape = v;
    } else if (a == "--device") {
      dev = Device::parse(v);
    } else {
      return usage();
    }
  }
  if (shape != "8b" && shape != "1b") return usage();
  const Shape8 s =
      shape == "8b" ? Shape8{32, 4096, 32, 8, 128, 14336, 128256} : Shape8{16, 2048, 32, 8, 64, 8192, 128256};
  try {
    std::optional<DType> dense;
    std::optional<QFormat> quant;
    if (format == "bf16") dense = DType::BF16;
    if (format == "f16") dense = DType::F16;
    if (format == "f32") dense = DType::F32;
    if (!dense && format != "q4_k_m") quant = qformat_from_name(format);
    dev.set_seed(1);
    GgufWriter w;
    GgufMetadata& md = w.metadata();
    md.set("general.architecture", GgufValue::string("llama"));
    md.set("general.name", GgufValue::string("random llama " + shape + " " + format));
    md.set("llama.context_length", GgufValue::u32(8192));
    md.set("llama.embedding_length", GgufValue::u32(static_cast<uint32_t>(s.hidden)));
    md.set("llama.block_count", GgufValue::u32(static_cast<uint32_t>(s.layers)));
    md.set("llama.feed_forward_length", GgufValue::u32(static_cast<uint32_t>(s.ffn)));
    md.set("llama.attention.head_count", GgufValue::u32(static_cast<uint32_t>(s.heads)));
    md.set("llama.attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(s.kv_heads)));
    md.set("llama.attention.key_length", GgufValue::u32(static_cast<uint32_t>(s.head_dim)));
    md.set("llama.attention.value_length", GgufValue::u32(static_cast<uint32_t>(s.head_dim)));
    md.set("llama.attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
    md.set("llama.rope.freq_base", GgufValue::f32(500000.0f));
    std::vector<testing::Piece> filler;  // after <unk> <s> </s> and the 256 byte tokens
    for (int64_t id = 259; id < s.vocab; ++id) filler.push_back({testing::kSp + "t" + std::to_string(id), 0, 1});
    const GgufMetadata vocab = testing::spm_metadata(filler);
    for (const auto& [key, value] : vocab.items()) md.set(key, value);

    auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, QFormat mixed) {
      Tensor v = Tensor::rand_normal({rows, cols}, DType::F32, 0, 0.02, dev);
      if (dense) {
        w.add(name, v.to_dtype(*dense));
      } else {
        w.add(name, quantize(v, quant ? *quant : mixed));
      }
    };
    auto norm = [&](const std::string& name) {
      w.add(name, Tensor::rand_normal({s.hidden}, DType::F32, 1, 0.05, dev));
    };
    const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
    matrix("token_embd.weight", s.vocab, s.hidden, QFormat::Q4_K);
    norm("output_norm.weight");
    matrix("output.weight", s.vocab, s.hidden, QFormat::Q6_K);
    for (int64_t i = 0; i < s.layers; ++i) {
      const std::string b = "blk." + std::to_string(i) + ".";
      const QFormat extra = more_bits(i, s.layers) ? QFormat::Q6_K : QFormat::Q4_K;
      norm(b + "attn_norm.weight");
      matrix(b + "attn_q.weight", q, s.hidden, QFormat::Q4_K);
      matrix(b + "attn_k.weight", kv, s.hidden, QFormat::Q4_K);
      matrix(b + "attn_v.weight", kv, s.hidden, extra);
      matrix(b + "attn_output.weight", s.hidden, q, QFormat::Q4_K);
      norm(b + "ffn_norm.weight");
      matrix(b + "ffn_gate.weight", s.ffn, s.hidden, QFormat::Q4_K);
      matrix(b + "ffn_up.weight", s.ffn, s.hidden, QFormat::Q4_K);
      matrix(b + "ffn_down.weight", s.hidden, s.ffn, extra);
    }
    w.write(out);
    std::printf("wrote %s (%s, %s) on %s\n", out.c_str(), shape.c_str(), format.c_str(), dev.location().c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
