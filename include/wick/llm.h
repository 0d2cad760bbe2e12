// Language models: Llama-family transformers read from GGUF files or Hugging Face checkpoints,
// their tokenizers, a KV cache, sampling and generation, composed of wick's public ops.
//
//   wick::llm::Model m = wick::llm::Model::load("llama-3-8b.Q4_K_M.gguf", wick::Device::cuda());
//   wick::llm::GenerateOptions g;
//   g.max_tokens = 64;
//   g.sampler.temperature = 0.7;
//   m.generate("The capital of France is", g, [](int32_t id, std::string_view text) {
//     std::fputs(std::string(text).c_str(), stdout);
//     return true;  // false stops
//   });
//
// Architectures: llama (Llama 2 / 3 / 3.1, Mistral), qwen2 (q/k/v biases), qwen3 (q/k norms).
// Weights may be f32, f16, bf16 or any block format of wick/quant.h, mixed per tensor.
// A model is a GGUF file, or a folder (or its config.json) holding config.json, the safetensors
// weights and tokenizer.json.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/io.h"
#include "wick/tensor.h"

namespace wick::llm {

// ---- tokenizers -----------------------------------------------------------------------------

// SentencePiece-style BPE with byte fallback (Llama 2, Mistral: GGUF tokenizer.ggml.model "llama")
// and byte-level BPE with the model's pre-tokenizer split (Llama 3, Qwen: GGUF "gpt2", or a
// tokenizer.json). Special tokens in the text (<|im_start|>, <s>, ...) are matched as whole tokens
// when parse_special is set.
class Tokenizer {
 public:
  enum class Kind { Spm, Bpe };

  Tokenizer();
  ~Tokenizer();
  Tokenizer(const Tokenizer&);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(const Tokenizer&);
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // From the tokenizer.ggml.* keys of a GGUF file (FormatError naming the key when one is
  // missing or malformed).
  static Tokenizer from_gguf(const GgufMetadata& metadata);
  // From a Hugging Face tokenizer.json (a path to the file or to its folder); tokenizer_config.json
  // beside it, when present, gives add_bos_token / add_eos_token and the bos / eos tokens.
  static Tokenizer from_hf(const std::string& path);

  Kind kind() const;
  int64_t vocab_size() const;
  // Text to ids; add_special prepends BOS (and appends EOS) as the model's tokenizer is set to.
  std::vector<int32_t> encode(std::string_view text, bool add_special = true, bool parse_special = true) const;
  // Ids to text; special tokens (BOS, EOS, control tokens) are left out when skip_special is set.
  std::string decode(std::span<const int32_t> ids, bool skip_special = true) const;
  // The bytes one token stands for (byte-fallback tokens and byte-level symbols decoded; a
  // leading-space marker as a space). Pieces of consecutive tokens concatenate to decode's text,
  // except that SPM drops the space the tokenizer adds in front of the text.
  std::string piece(int32_t id) const;
  const std::string& token(int32_t id) const;                 // as stored in the vocabulary
  std::optional<int32_t> find(std::string_view token) const;  // the id of a vocabulary string
  int32_t bos() const;                                        // -1 when the model has none
  int32_t eos() const;                                        // -1 when the model has none
  bool is_special(int32_t id) const;                          // control tokens: BOS, EOS, <|im_end|>, ...
  bool is_end_of_generation(int32_t id) const;                // EOS, EOT, <|eot_id|>, <|im_end|>, ...
  // Writes the tokenizer.ggml.* keys that from_gguf reads back into the same tokenizer.
  void to_gguf(GgufMetadata& metadata) const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// ---- model configuration --------------------------------------------------------------------

enum class RopeStyle {
  Interleaved,  // pairs (x[2i], x[2i+1]): GGUF llama files, whose q/k rows the converter permutes
  HalfSplit,    // pairs (x[i], x[i + d/2]): Hugging Face checkpoints, GGUF qwen2 / qwen3
};

struct ModelConfig {
  std::string architecture;  // "llama", "qwen2", "qwen3" (Mistral is "llama")
  int64_t vocab_size = 0;
  int64_t hidden = 0;  // model width
  int64_t layers = 0;
  int64_t heads = 0;     // query heads
  int64_t kv_heads = 0;  // key/value heads (GQA when fewer than heads)
  int64_t head_dim = 0;  // hidden / heads unless the model says otherwise (Qwen3)
  int64_t ffn = 0;       // SwiGLU width
  int64_t context = 0;   // the context length the model was trained for
  double rms_eps = 1e-5;
  double rope_theta = 10000;
  RopeStyle rope_style = RopeStyle::HalfSplit;
  // Llama 3.1 rope scaling (factor 0: none); a GGUF file may give rope_freqs.weight instead.
  double rope_factor = 0, rope_low_freq_factor = 1, rope_high_freq_factor = 4;
  int64_t rope_original_context = 8192;
  bool qkv_bias = false;         // Qwen2
  bool qk_norm = false;          // Qwen3
  bool tied_embeddings = false;  // the output head is the token embedding

  std::string str() const;  // one line for logs: "llama 2 layers, 64 wide, 4/2 heads of 16, ..."
};

// ---- sampling -------------------------------------------------------------------------------

struct SamplerOptions {
  double temperature = 0;      // 0: greedy (the first highest logit)
  int64_t top_k = 0;           // 0: off
  double top_p = 1;            // nucleus; 1: off
  double min_p = 0;            // drop tokens below min_p x the top probability; 0: off
  double repeat_penalty = 1;   // divides positive logits (multiplies negative ones) of recent tokens
  int64_t repeat_last_n = 64;  // how many recent tokens the penalty looks at
  uint64_t seed = 0;
};

// Picks the next token from a row of logits. The same seed gives the same tokens for the same
// logits; filters apply in the order repetition penalty, top-k, temperature, top-p, min-p.
class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options = {});
  // logits: f32 values of one position (host memory); history: the tokens so far.
  int32_t sample(std::span<const float> logits, std::span<const int32_t> history);
  const SamplerOptions& options() const { return options_; }

 private:
  SamplerOptions options_;
  uint64_t state_;
  std::vector<std::pair<float, int32_t>> work_;  // (logit, id), reused from call to call
  std::vector<double> probs_;
};

// ---- models ---------------------------------------------------------------------------------

struct ModelOptions {
  int64_t context = 4096;       // KV cache positions (at most the model's context; 0: the model's)
  DType kv_dtype = DType::F16;  // f32, f16 or bf16
  int64_t prefill_chunk = 512;  // prompt tokens per forward pass
  bool progress_bar = true;     // while loading weights, when stderr is a terminal
  // Decode steps (one token) recorded as graphs on GPUs (wick/graph.h), one per power-of-two
  // prefix of the cache: the host then queues a step with one launch. Off: every op is queued.
  bool graphs = true;
};

struct GenerateOptions {
  int64_t max_tokens = 128;  // new tokens at most
  SamplerOptions sampler;
  bool add_special = true;  // BOS as the tokenizer adds it
  bool stop_at_end = true;  // stop at an end-of-generation token (it is not emitted)
};

struct GenerateStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  double prefill_seconds = 0;
  double decode_seconds = 0;  // from the first sampled token to the last
  double prefill_tokens_per_second() const;
  double decode_tokens_per_second() const;
};

// Called with each new token and its text (whole UTF-8 characters; a character split over tokens
// arrives with its last token); returning false stops generation. Bytes left over at the end that
// complete no character arrive in one last call with id -1 (not after a call that returned false).
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;

class Model {
 public:
  Model();
  ~Model();
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;

  // Reads the configuration, checks every tensor's presence and shape, checks that the weights and
  // the KV cache fit the device, then loads. Errors name the file, the tensor or key and the sizes.
  static Model load(const std::string& path, const Device& device = Device::cpu(), const ModelOptions& options = {});

  const ModelConfig& config() const;
  const Tokenizer& tokenizer() const;
  const Device& device() const;
  int64_t context() const;   // KV cache positions
  int64_t position() const;  // positions filled so far
  int64_t weight_bytes() const;

  // Runs `tokens` at positions position() .. position() + n - 1 (in chunks of prefill_chunk),
  // appending their keys and values to the cache. Returns f32 logits on the model's device:
  // [n, vocab] with all_logits, else [1, vocab] of the last token. InvalidArgument when the
  // tokens do not fit the remaining context or an id is outside the vocabulary.
  Tensor forward(std::span<const int32_t> tokens, bool all_logits = false);
  void reset();                     // empties the cache
  void truncate(int64_t position);  // keeps the first `position` positions

  // Encodes the prompt, runs it, then samples up to max_tokens tokens (the cache continues from
  // position(); call reset() first for a fresh conversation).
  GenerateStats generate(std::string_view prompt, const GenerateOptions& options, const TokenCallback& on_token = {});
  GenerateStats generate(std::span<const int32_t> prompt, const GenerateOptions& options,
                         const TokenCallback& on_token = {});

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace wick::llm
