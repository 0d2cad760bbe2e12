// llm_make: writes a tiny random-weight Llama-family model with wick's writers, as llama.cpp's
// convert_hf_to_gguf.py (+ llama-quantize) and Hugging Face would lay it out, for llm_reference.py.
//
//   llm_make OUTDIR --arch llama3 --format q4_k [--tied] [--seed N] [--layers 2]
//
// OUTDIR/model.gguf always; OUTDIR/hf/ (config.json, model.safetensors, tokenizer.json,
// tokenizer_config.json) for the dense formats f32, f16 and bf16, holding the same values.
// A bad argument prints a message and exits 2; a wick error exits 1.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numbers>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "wick/error.h"
#include "wick/io.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace {

using Json = nlohmann::ordered_json;

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- the architectures ----------------------------------------------------------------------

struct Arch {
  std::string name;       // the --arch value
  std::string gguf_arch;  // general.architecture
  std::string hf_class;   // config.json architectures[0]
  std::string model_type;
  bool spm = false;  // SentencePiece vocabulary (else byte-level BPE)
  bool qwen_vocab = false;
  double rope_theta = 10000;
  double rms_eps = 1e-5;
  int64_t head_dim = 64;
  bool qkv_bias = false;
  bool qk_norm = false;
  bool rope_scaling = false;  // Llama 3.1
};

const std::vector<Arch>& archs() {
  static const std::vector<Arch> a = {
      {"llama2", "llama", "LlamaForCausalLM", "llama", true, false, 10000, 1e-5, 64, false, false, false},
      {"llama3", "llama", "LlamaForCausalLM", "llama", false, false, 500000, 1e-5, 64, false, false, false},
      {"llama31", "llama", "LlamaForCausalLM", "llama", false, false, 500000, 1e-5, 64, false, false, true},
      {"mistral", "llama", "MistralForCausalLM", "mistral", true, false, 1000000, 1e-5, 64, false, false, false},
      {"qwen2", "qwen2", "Qwen2ForCausalLM", "qwen2", false, true, 1000000, 1e-6, 64, true, false, false},
      {"qwen3", "qwen3", "Qwen3ForCausalLM", "qwen3", false, true, 1000000, 1e-6, 128, false, true, false},
  };
  return a;
}

// Dims: every row (256 or 512 wide) is a whole number of blocks of every format, k-quants included.
constexpr int64_t kHidden = 256;
constexpr int64_t kHeads = 4;
constexpr int64_t kKvHeads = 2;
constexpr int64_t kFfn = 512;
constexpr int64_t kContext = 256;
// Llama 3.1 rope scaling. With rope_theta 500000 and head_dim 64, frequencies 15..17 of 32 fall in
// the smoothed band and 18..31 are divided by the factor, so the scaling shows at short positions.
constexpr double kRopeFactor = 8, kRopeLowFreq = 1, kRopeHighFreq = 4;
constexpr int64_t kRopeOriginalContext = 8192;

// ---- the weight format ----------------------------------------------------------------------

struct Format {
  std::string name;
  std::optional<wick::DType> dtype;      // dense formats
  std::optional<wick::QFormat> qformat;  // block formats (q4_k_m: q4_k, with q6_k for some tensors)
  bool q4_k_m = false;
  uint32_t file_type = 0;  // general.file_type: llama.cpp's LLAMA_FTYPE_*
};

std::optional<Format> parse_format(const std::string& s) {
  static const std::map<std::string, uint32_t> kFileType = {
      {"f32", 0},   {"f16", 1},   {"q4_0", 2},    {"q4_1", 3},    {"q8_0", 7},    {"q5_0", 8},
      {"q5_1", 9},  {"q2_k", 10}, {"q3_k", 11},   {"q4_k", 14},   {"q4_k_m", 15}, {"q5_k", 16},
      {"q6_k", 18}, {"bf16", 32}, {"iq4_nl", 25}, {"iq4_xs", 30}, {"mxfp4", 38},
  };
  auto it = kFileType.find(s);
  if (it == kFileType.end()) return std::nullopt;
  Format f{s, std::nullopt, std::nullopt, false, it->second};
  if (s == "f32" || s == "f16" || s == "bf16")
    f.dtype = s == "f32" ? wick::DType::F32 : (s == "f16" ? wick::DType::F16 : wick::DType::BF16);
  else
    f.qformat = wick::qformat_from_name(s == "q4_k_m" ? "q4_k" : s);
  f.q4_k_m = s == "q4_k_m";
  return f;
}

// ---- random weights -------------------------------------------------------------------------

class Normal {
 public:
  explicit Normal(uint64_t seed) : rng_(seed) {}
  // Box-Muller on the 53-bit uniforms of mt19937_64: the same numbers on every platform.
  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(rng_() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(rng_() >> 11) * 0x1.0p-53;          // [0, 1)
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare_ = r * std::sin(2.0 * std::numbers::pi * u2);
    has_spare_ = true;
    return r * std::cos(2.0 * std::numbers::pi * u2);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0;
  bool has_spare_ = false;
};

// A weight in HF orientation ([out, in] for a matrix), f32 values.
struct Weight {
  std::vector<int64_t> shape;
  std::vector<float> v;
};

Weight random_weight(Normal& n, std::vector<int64_t> shape, double mean, double std) {
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
  Weight w{std::move(shape), std::vector<float>(static_cast<size_t>(count))};
  for (float& x : w.v) x = static_cast<float>(mean + std * n.next());
  return w;
}

wick::Tensor to_tensor(const Weight& w, wick::DType dtype = wick::DType::F32) {
  wick::Tensor t = wick::Tensor::from_vector(w.v, wick::Shape(w.shape));
  return dtype == wick::DType::F32 ? t : t.to_dtype(dtype);
}

// Rounds the values to `dtype` (f16 / bf16 checkpoints): the GGUF's f32 norms then hold the
// checkpoint's values exactly, so both files are one model.
void round_to(Weight& w, wick::DType dtype) {
  w.v = wick::Tensor::from_vector(w.v, wick::Shape(w.shape))
            .to_dtype(dtype)
            .to_dtype(wick::DType::F32)
            .to_vector<float>();
}

// convert_hf_to_gguf.py's LlamaModel.permute: the rows of each head reordered from (half, i) to
// (i, half), so that ggml's interleaved rope on the GGUF equals HF's half-split rope.
Weight permute_rows(const Weight& w, int64_t n_head) {
  const int64_t rows = w.shape[0], cols = w.shape[1], hd = rows / n_head, half = hd / 2;
  Weight p{w.shape, std::vector<float>(w.v.size())};
  for (int64_t h = 0; h < n_head; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t dst = h * hd + 2 * i + s, src = h * hd + s * half + i;
        std::copy_n(w.v.begin() + src * cols, cols, p.v.begin() + dst * cols);
      }
  return p;
}

// ---- vocabularies ---------------------------------------------------------------------------

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 on; the 256
// symbols in the order GPT-2's vocabulary lists them (the printable ones first).
std::vector<std::pair<uint8_t, std::string>> byte_symbols() {
  std::vector<std::pair<uint8_t, std::string>> out;
  std::set<int> printable;
  for (int b = '!'; b <= '~'; ++b) printable.insert(b);
  for (int b = 0xA1; b <= 0xAC; ++b) printable.insert(b);
  for (int b = 0xAE; b <= 0xFF; ++b) printable.insert(b);
  for (int b : printable) out.emplace_back(static_cast<uint8_t>(b), utf8(static_cast<uint32_t>(b)));
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b)
    if (!printable.count(b)) out.emplace_back(static_cast<uint8_t>(b), utf8(next++));
  return out;
}

constexpr const char* kCorpus =
    "Hello world. The quick brown fox jumps over the lazy dog, and the dog sleeps in the sun. "
    "There is a house on the hill where the children play in the garden after their lessons. "
    "She said that the weather in the north is better than the weather in the south. "
    "Hello there, how are you? I am fine, thank you, and the world is a wonderful place. "
    "The river runs under the bridge and the boats go over the water in the morning and evening.";

// Words of letters (the learner's units), each with the space marker in front.
std::vector<std::vector<std::string>> corpus_words(const std::string& marker, bool byte_level) {
  const auto sym = byte_symbols();
  std::map<uint8_t, std::string> to_sym(sym.begin(), sym.end());
  std::vector<std::vector<std::string>> words;
  std::string text = kCorpus;
  for (size_t i = 0; i < text.size();) {
    if (!std::isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j;
    std::vector<std::string> w = {marker};
    for (size_t k = i; k < j; ++k)
      w.push_back(byte_level ? to_sym[static_cast<uint8_t>(text[k])] : std::string(1, text[k]));
    words.push_back(std::move(w));
    i = j;
  }
  return words;
}

// A plain BPE learner: the most frequent adjacent pair merges first (ties: the smaller pair).
std::vector<std::pair<std::string, std::string>> learn_merges(std::vector<std::vector<std::string>> words, int count) {
  std::vector<std::pair<std::string, std::string>> merges;
  while (static_cast<int>(merges.size()) < count) {
    std::map<std::pair<std::string, std::string>, int> freq;
    for (const auto& w : words)
      for (size_t i = 0; i + 1 < w.size(); ++i) ++freq[{w[i], w[i + 1]}];
    if (freq.empty()) break;
    auto best = freq.begin();
    for (auto it = freq.begin(); it != freq.end(); ++it)
      if (it->second > best->second) best = it;
    const auto pair = best->first;
    merges.push_back(pair);
    for (auto& w : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == pair.first && w[i + 1] == pair.second) {
          out.push_back(pair.first + pair.second);
          ++i;
        } else {
          out.push_back(w[i]);
        }
      }
      w = std::move(out);
    }
  }
  return merges;
}

enum TokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kByte = 6 };

struct Vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;  // SPM only
  std::vector<int32_t> types;
  std::vector<std::pair<std::string, std::string>> merges;  // tokenizer merges, in rank order
  int32_t bos = -1, eos = -1, unk = -1, pad = -1;
  bool add_bos = true;
  std::string pre;  // tokenizer.ggml.pre (byte-level BPE only, as the converter writes it)

  int32_t add(std::string t, int32_t type, float score = 0) {
    tokens.push_back(std::move(t));
    types.push_back(type);
    scores.push_back(score);
    return static_cast<int32_t>(tokens.size()) - 1;
  }
  int32_t id(const std::string& t) const {
    auto it = std::find(tokens.begin(), tokens.end(), t);
    return it == tokens.end() ? -1 : static_cast<int32_t>(it - tokens.begin());
  }
};

const std::string kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// Llama 2 / Mistral: <unk> <s> </s>, the 256 byte-fallback tokens, merged pieces (score: -rank),
// then the single characters (lower scores, as in Llama's vocabulary).
Vocab spm_vocab() {
  Vocab v;
  v.unk = v.add("<unk>", kUnknown);
  v.bos = v.add("<s>", kControl);
  v.eos = v.add("</s>", kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    v.add(buf, kByte);
  }
  const auto merges = learn_merges(corpus_words(kSpace, false), 100);
  float score = 1;
  for (const auto& [a, b] : merges)
    if (v.id(a + b) < 0) v.add(a + b, kNormal, -(score++));
  std::set<std::string> chars = {kSpace};
  for (const char* p = kCorpus; *p; ++p)
    if (*p != ' ') chars.insert(std::string(1, *p));
  for (const auto& c : chars) v.add(c, kNormal, -(score++));
  // The tokenizer.json merges, as transformers' SentencePiece converter derives them: every split
  // of a piece into two pieces, by the piece's rank.
  const int32_t first_piece = 3 + 256;
  std::map<std::string, int32_t> piece_id;
  for (int32_t i = first_piece; i < static_cast<int32_t>(v.tokens.size()); ++i) piece_id[v.tokens[i]] = i;
  std::vector<std::tuple<int32_t, int32_t, int32_t>> ranked;
  for (int32_t i = first_piece; i < static_cast<int32_t>(v.tokens.size()); ++i) {
    const std::string& t = v.tokens[i];
    for (size_t cut = 1; cut < t.size(); ++cut) {
      auto l = piece_id.find(t.substr(0, cut)), r = piece_id.find(t.substr(cut));
      if (l != piece_id.end() && r != piece_id.end()) ranked.emplace_back(i, l->second, r->second);
    }
  }
  std::sort(ranked.begin(), ranked.end());
  for (const auto& [m, l, r] : ranked) v.merges.emplace_back(v.tokens[l], v.tokens[r]);
  return v;
}

// Llama 3 / Qwen: the 256 byte symbols, merged tokens in merge order, then the special tokens.
Vocab bpe_vocab(bool qwen, const std::string& arch) {
  Vocab v;
  for (const auto& [b, s] : byte_symbols()) v.add(s, kNormal);
  v.merges = learn_merges(corpus_words("\xc4\xa0", true), 110);  // U+0120 'Ġ', the byte-level space
  for (const auto& [a, b] : v.merges)
    if (v.id(a + b) < 0) v.add(a + b, kNormal);
  if (qwen) {
    const int32_t end_of_text = v.add("<|endoftext|>", kControl);
    v.add("<|im_start|>", kControl);
    const int32_t im_end = v.add("<|im_end|>", kControl);
    v.bos = end_of_text;
    v.pad = end_of_text;
    v.eos = arch == "qwen3" ? im_end : end_of_text;
    v.add_bos = false;
    v.pre = "qwen2";
  } else {
    v.bos = v.add("<|begin_of_text|>", kControl);
    v.eos = v.add("<|end_of_text|>", kControl);
    v.add("<|start_header_id|>", kControl);
    v.add("<|end_header_id|>", kControl);
    v.add("<|eot_id|>", kControl);
    v.pre = "llama-bpe";
  }
  v.scores.clear();
  return v;
}

void vocab_to_gguf(const Vocab& v, bool spm, wick::GgufMetadata& m) {
  m.set("tokenizer.ggml.model", wick::GgufValue::string(spm ? "llama" : "gpt2"));
  if (!spm) m.set("tokenizer.ggml.pre", wick::GgufValue::string(v.pre));
  m.set("tokenizer.ggml.tokens", wick::GgufValue::strings(v.tokens));
  if (spm) m.set("tokenizer.ggml.scores", wick::GgufValue::array(v.scores));
  m.set("tokenizer.ggml.token_type", wick::GgufValue::array(v.types));
  if (!spm) {
    std::vector<std::string> merges;
    for (const auto& [a, b] : v.merges) merges.push_back(a + " " + b);
    m.set("tokenizer.ggml.merges", wick::GgufValue::strings(std::move(merges)));
  }
  m.set("tokenizer.ggml.bos_token_id", wick::GgufValue::u32(static_cast<uint32_t>(v.bos)));
  m.set("tokenizer.ggml.eos_token_id", wick::GgufValue::u32(static_cast<uint32_t>(v.eos)));
  if (v.unk >= 0) m.set("tokenizer.ggml.unknown_token_id", wick::GgufValue::u32(static_cast<uint32_t>(v.unk)));
  if (v.pad >= 0) m.set("tokenizer.ggml.padding_token_id", wick::GgufValue::u32(static_cast<uint32_t>(v.pad)));
  m.set("tokenizer.ggml.add_bos_token", wick::GgufValue::boolean(v.add_bos));
  m.set("tokenizer.ggml.add_eos_token", wick::GgufValue::boolean(false));
  if (spm) m.set("tokenizer.ggml.add_space_prefix", wick::GgufValue::boolean(true));
}

// ---- Hugging Face tokenizer files -----------------------------------------------------------

constexpr const char* kLlama3Split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";
constexpr const char* kQwen2Split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

Json added_token(const Vocab& v, int32_t id) {
  return Json{{"id", id},
              {"content", v.tokens[static_cast<size_t>(id)]},
              {"single_word", false},
              {"lstrip", false},
              {"rstrip", false},
              {"normalized", false},
              {"special", true}};
}

Json bos_template(const Vocab& v) {
  const std::string& bos = v.tokens[static_cast<size_t>(v.bos)];
  Json single = Json::array(
      {Json{{"SpecialToken", {{"id", bos}, {"type_id", 0}}}}, Json{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}});
  Json pair = single;
  pair.push_back(Json{{"SpecialToken", {{"id", bos}, {"type_id", 1}}}});
  pair.push_back(Json{{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
  return Json{
      {"type", "TemplateProcessing"},
      {"single", single},
      {"pair", pair},
      {"special_tokens", {{bos, {{"id", bos}, {"ids", Json::array({v.bos})}, {"tokens", Json::array({bos})}}}}}};
}

Json tokenizer_json(const Vocab& v, bool spm, bool qwen) {
  Json added = Json::array();
  Json vocab = Json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    if (v.types[i] == kControl || v.types[i] == kUnknown) added.push_back(added_token(v, id));
    // Llama 3 and Qwen keep their special tokens out of the BPE model's vocab; SentencePiece's are in.
    if (spm || v.types[i] != kControl) vocab[v.tokens[i]] = id;
  }
  Json merges = Json::array();
  for (const auto& [a, b] : v.merges) merges.push_back(a + " " + b);
  Json j;
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  j["added_tokens"] = added;
  if (spm) {
    j["normalizer"] = {{"type", "Sequence"},
                       {"normalizers",
                        {{{"type", "Prepend"}, {"prepend", kSpace}},
                         {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSpace}}}}};
    j["pre_tokenizer"] = nullptr;
    j["post_processor"] = bos_template(v);
    j["decoder"] = {{"type", "Sequence"},
                    {"decoders",
                     {{{"type", "Replace"}, {"pattern", {{"String", kSpace}}}, {"content", " "}},
                      {{"type", "ByteFallback"}},
                      {{"type", "Fuse"}},
                      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
  } else {
    j["normalizer"] = qwen ? Json{{"type", "NFC"}} : Json(nullptr);
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"},
           {"pattern", {{"Regex", qwen ? kQwen2Split : kLlama3Split}}},
           {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", !qwen}, {"use_regex", false}}}}};
    Json byte_level = {
        {"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
    if (qwen)
      j["post_processor"] = byte_level;
    else
      j["post_processor"] = {{"type", "Sequence"}, {"processors", {byte_level, bos_template(v)}}};
    j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  }
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", spm ? Json("<unk>") : Json(nullptr)},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", spm},
                {"byte_fallback", spm},
                {"ignore_merges", !spm && !qwen},
                {"vocab", vocab},
                {"merges", merges}};
  return j;
}

Json tokenizer_config_json(const Vocab& v, bool spm, bool qwen) {
  Json decoder = Json::object();
  for (size_t i = 0; i < v.tokens.size(); ++i)
    if (v.types[i] == kControl || v.types[i] == kUnknown) {
      Json t = added_token(v, static_cast<int32_t>(i));
      t.erase("id");
      decoder[std::to_string(i)] = t;
    }
  Json j;
  j["add_bos_token"] = v.add_bos;
  j["add_eos_token"] = false;
  j["added_tokens_decoder"] = decoder;
  j["bos_token"] = qwen ? Json(nullptr) : Json(v.tokens[static_cast<size_t>(v.bos)]);
  j["eos_token"] = v.tokens[static_cast<size_t>(v.eos)];
  if (v.pad >= 0) j["pad_token"] = v.tokens[static_cast<size_t>(v.pad)];
  if (v.unk >= 0) j["unk_token"] = v.tokens[static_cast<size_t>(v.unk)];
  j["clean_up_tokenization_spaces"] = false;
  j["model_max_length"] = kContext;
  if (spm) j["legacy"] = true;
  j["tokenizer_class"] = spm ? "LlamaTokenizer" : (qwen ? "Qwen2Tokenizer" : "PreTrainedTokenizerFast");
  return j;
}

// ---- the model ------------------------------------------------------------------------------

struct Options {
  std::string out;
  const Arch* arch = nullptr;
  Format format;
  bool tied = false;
  uint64_t seed = 1;
  int64_t layers = 2;
};

// HF-named weights in HF orientation, in the order a checkpoint lists them.
std::vector<std::pair<std::string, Weight>> make_weights(const Options& o, int64_t vocab) {
  const Arch& a = *o.arch;
  const int64_t q_out = kHeads * a.head_dim, kv_out = kKvHeads * a.head_dim;
  Normal n(o.seed);
  // Linear weights at 1/sqrt(fan_in): each projection keeps an RMS-normalised input near unit
  // scale, so attention is far from uniform. The projections back into the residual stream get
  // twice that, so the layers outweigh the token's own embedding (std 0.1): with a tied head the
  // embedding alone would make the current token the likeliest next one and greedy ids repeat.
  // The head (std 0.1 over 256 wide, unit-RMS input) gives logits of std ~1.6.
  const double s_in = 1.0 / std::sqrt(static_cast<double>(kHidden));
  const double s_ffn = 2.0 / std::sqrt(static_cast<double>(kFfn));
  const double s_o = 2.0 / std::sqrt(static_cast<double>(q_out));
  std::vector<std::pair<std::string, Weight>> w;
  w.emplace_back("model.embed_tokens.weight", random_weight(n, {vocab, kHidden}, 0, 0.1));
  for (int64_t l = 0; l < o.layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    w.emplace_back(p + "input_layernorm.weight", random_weight(n, {kHidden}, 1, 0.1));
    w.emplace_back(p + "self_attn.q_proj.weight", random_weight(n, {q_out, kHidden}, 0, s_in));
    w.emplace_back(p + "self_attn.k_proj.weight", random_weight(n, {kv_out, kHidden}, 0, s_in));
    w.emplace_back(p + "self_attn.v_proj.weight", random_weight(n, {kv_out, kHidden}, 0, s_in));
    if (a.qkv_bias) {
      w.emplace_back(p + "self_attn.q_proj.bias", random_weight(n, {q_out}, 0, 0.2));
      w.emplace_back(p + "self_attn.k_proj.bias", random_weight(n, {kv_out}, 0, 0.2));
      w.emplace_back(p + "self_attn.v_proj.bias", random_weight(n, {kv_out}, 0, 0.2));
    }
    w.emplace_back(p + "self_attn.o_proj.weight", random_weight(n, {kHidden, q_out}, 0, s_o));
    if (a.qk_norm) {
      w.emplace_back(p + "self_attn.q_norm.weight", random_weight(n, {a.head_dim}, 1, 0.1));
      w.emplace_back(p + "self_attn.k_norm.weight", random_weight(n, {a.head_dim}, 1, 0.1));
    }
    w.emplace_back(p + "post_attention_layernorm.weight", random_weight(n, {kHidden}, 1, 0.1));
    w.emplace_back(p + "mlp.gate_proj.weight", random_weight(n, {kFfn, kHidden}, 0, s_in));
    w.emplace_back(p + "mlp.up_proj.weight", random_weight(n, {kFfn, kHidden}, 0, s_in));
    w.emplace_back(p + "mlp.down_proj.weight", random_weight(n, {kHidden, kFfn}, 0, s_ffn));
  }
  w.emplace_back("model.norm.weight", random_weight(n, {kHidden}, 1, 0.1));
  if (!o.tied) w.emplace_back("lm_head.weight", random_weight(n, {vocab, kHidden}, 0, 0.1));
  if (o.format.dtype && *o.format.dtype != wick::DType::F32)
    for (auto& [name, weight] : w) round_to(weight, *o.format.dtype);
  return w;
}

// The GGUF name of an HF tensor (convert_hf_to_gguf.py's tensor map for these architectures).
std::string gguf_name(const std::string& hf) {
  static const std::vector<std::pair<std::string, std::string>> kLayer = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  const size_t dot = hf.find('.', prefix.size());
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size()), rest = hf.substr(dot + 1);
  for (const auto& [from, to] : kLayer)
    if (rest == from) return "blk." + layer + "." + to;
  throw std::logic_error("no GGUF name for " + hf);
}

// llama.cpp's Q4_K_M, simplified: q6_k for attn_v, ffn_down and the output head, q4_k elsewhere.
wick::QFormat block_format(const Format& f, const std::string& gguf) {
  if (f.q4_k_m && (gguf.find("attn_v.weight") != std::string::npos ||
                   gguf.find("ffn_down.weight") != std::string::npos || gguf == "output.weight"))
    return wick::QFormat::Q6_K;
  return *f.qformat;
}

// convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors for rope_type "llama3": per frequency,
// the divisor of its angle.
std::vector<float> llama3_rope_factors(double theta, int64_t head_dim) {
  std::vector<float> f;
  const double low_wavelen = kRopeOriginalContext / kRopeLowFreq;
  const double high_wavelen = kRopeOriginalContext / kRopeHighFreq;
  for (int64_t i = 0; i < head_dim; i += 2) {
    const double freq = 1.0 / std::pow(theta, static_cast<double>(i) / static_cast<double>(head_dim));
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < high_wavelen) {
      f.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      f.push_back(static_cast<float>(kRopeFactor));
    } else {
      const double smooth = (kRopeOriginalContext / wavelen - kRopeLowFreq) / (kRopeHighFreq - kRopeLowFreq);
      f.push_back(static_cast<float>(1.0 / ((1 - smooth) / kRopeFactor + smooth)));
    }
  }
  return f;
}

void write_gguf(const Options& o, const Vocab& v, const std::vector<std::pair<std::string, Weight>>& weights) {
  const Arch& a = *o.arch;
  const std::string k = a.gguf_arch + ".";
  wick::GgufWriter g;
  auto& m = g.metadata();
  auto u32 = [](int64_t x) { return wick::GgufValue::u32(static_cast<uint32_t>(x)); };
  m.set("general.architecture", wick::GgufValue::string(a.gguf_arch));
  m.set("general.name", wick::GgufValue::string("wick tiny " + a.name));
  m.set(k + "vocab_size", u32(static_cast<int64_t>(v.tokens.size())));
  m.set(k + "context_length", u32(kContext));
  m.set(k + "embedding_length", u32(kHidden));
  m.set(k + "block_count", u32(o.layers));
  m.set(k + "feed_forward_length", u32(kFfn));
  m.set(k + "attention.head_count", u32(kHeads));
  m.set(k + "attention.head_count_kv", u32(kKvHeads));
  m.set(k + "rope.freq_base", wick::GgufValue::f32(static_cast<float>(a.rope_theta)));
  m.set(k + "attention.layer_norm_rms_epsilon", wick::GgufValue::f32(static_cast<float>(a.rms_eps)));
  m.set(k + "attention.key_length", u32(a.head_dim));
  m.set(k + "attention.value_length", u32(a.head_dim));
  m.set(k + "rope.dimension_count", u32(a.head_dim));
  m.set("general.file_type", u32(o.format.file_type));
  if (o.format.qformat) m.set("general.quantization_version", u32(2));
  vocab_to_gguf(v, a.spm, m);

  const bool permute = a.gguf_arch == "llama";
  auto add = [&](const std::string& name, const Weight& w) {
    if (w.shape.size() == 1) {
      g.add(name, to_tensor(w));  // norms, biases, rope factors: f32 as the converter keeps them
    } else if (o.format.dtype) {
      g.add(name, to_tensor(w, *o.format.dtype));
    } else {
      g.add(name, wick::quantize(to_tensor(w), block_format(o.format, name)));
    }
  };
  for (const auto& [hf, w] : weights) {
    if (hf == "model.embed_tokens.weight" && a.rope_scaling) {
      add(gguf_name(hf), w);
      const std::vector<float> f = llama3_rope_factors(a.rope_theta, a.head_dim);
      add("rope_freqs.weight", Weight{{static_cast<int64_t>(f.size())}, f});
      continue;
    }
    const std::string name = gguf_name(hf);
    if (permute && hf.ends_with("q_proj.weight"))
      add(name, permute_rows(w, kHeads));
    else if (permute && hf.ends_with("k_proj.weight"))
      add(name, permute_rows(w, kKvHeads));
    else
      add(name, w);
  }
  g.write(o.out + "/model.gguf");
}

void write_json(const std::string& path, const Json& j) {
  std::ofstream f(path, std::ios::binary);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

Json config_json(const Options& o, const Vocab& v) {
  const Arch& a = *o.arch;
  const wick::DType dt = *o.format.dtype;
  Json c;
  c["architectures"] = Json::array({a.hf_class});
  c["model_type"] = a.model_type;
  c["hidden_size"] = kHidden;
  c["intermediate_size"] = kFfn;
  c["num_hidden_layers"] = o.layers;
  c["num_attention_heads"] = kHeads;
  c["num_key_value_heads"] = kKvHeads;
  c["head_dim"] = a.head_dim;
  c["hidden_act"] = "silu";
  c["rms_norm_eps"] = a.rms_eps;
  c["rope_theta"] = a.rope_theta;
  c["max_position_embeddings"] = kContext;
  c["vocab_size"] = static_cast<int64_t>(v.tokens.size());
  c["tie_word_embeddings"] = o.tied;
  c["torch_dtype"] = dt == wick::DType::F32 ? "float32" : (dt == wick::DType::F16 ? "float16" : "bfloat16");
  if (a.rope_scaling)
    c["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", kRopeFactor},
                         {"low_freq_factor", kRopeLowFreq},
                         {"high_freq_factor", kRopeHighFreq},
                         {"original_max_position_embeddings", kRopeOriginalContext}};
  else
    c["rope_scaling"] = nullptr;
  if (a.model_type != "qwen2") c["attention_bias"] = a.qkv_bias;
  if (a.model_type == "llama") c["mlp_bias"] = false;
  if (a.model_type == "mistral" || a.qwen_vocab) c["sliding_window"] = nullptr;
  if (a.qwen_vocab) {
    c["use_sliding_window"] = false;
    c["max_window_layers"] = o.layers;
  }
  c["bos_token_id"] = v.bos;
  c["eos_token_id"] = v.eos;
  c["initializer_range"] = 0.02;
  c["use_cache"] = true;
  return c;
}

void write_hf(const Options& o, const Vocab& v, const std::vector<std::pair<std::string, Weight>>& weights) {
  const std::string dir = o.out + "/hf";
  std::filesystem::create_directories(dir);
  std::vector<std::pair<std::string, wick::Tensor>> tensors;
  for (const auto& [name, w] : weights) tensors.emplace_back(name, to_tensor(w, *o.format.dtype));
  wick::save_safetensors(dir + "/model.safetensors", tensors, {{"format", "pt"}});
  write_json(dir + "/config.json", config_json(o, v));
  write_json(dir + "/tokenizer.json", tokenizer_json(v, o.arch->spm, o.arch->qwen_vocab));
  write_json(dir + "/tokenizer_config.json", tokenizer_config_json(v, o.arch->spm, o.arch->qwen_vocab));
}

// ---- command line ---------------------------------------------------------------------------

int64_t parse_int(const std::string& flag, const std::string& s, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || v < lo || v > hi)
    throw UsageError(flag + " wants an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" + s +
                     "'");
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  std::string format;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(a + " wants a value");
      return argv[++i];
    };
    if (a == "--arch") {
      const std::string name = value();
      for (const Arch& x : archs())
        if (x.name == name) o.arch = &x;
      if (!o.arch) throw UsageError("unknown --arch '" + name + "' (llama2, llama3, llama31, mistral, qwen2, qwen3)");
    } else if (a == "--format") {
      format = value();
      auto f = parse_format(format);
      if (!f)
        throw UsageError("unknown --format '" + format +
                         "' (f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, "
                         "iq4_xs, mxfp4, q4_k_m)");
      o.format = *f;
    } else if (a == "--tied") {
      o.tied = true;
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(parse_int(a, value(), 0, INT64_MAX));
    } else if (a == "--layers") {
      o.layers = parse_int(a, value(), 1, 64);
    } else if (a.starts_with("-")) {
      throw UsageError("unknown option " + a);
    } else if (o.out.empty()) {
      o.out = a;
    } else {
      throw UsageError("one OUTDIR only ('" + o.out + "', then '" + a + "')");
    }
  }
  if (o.out.empty()) throw UsageError("no OUTDIR");
  if (!o.arch) throw UsageError("no --arch");
  if (format.empty()) throw UsageError("no --format");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "llm_make: %s\nusage: llm_make OUTDIR --arch A --format F [--tied] [--seed N] [--layers L]\n",
                 e.what());
    return 2;
  }
  try {
    std::filesystem::create_directories(o.out);
    const Vocab v = o.arch->spm ? spm_vocab() : bpe_vocab(o.arch->qwen_vocab, o.arch->name);
    const auto weights = make_weights(o, static_cast<int64_t>(v.tokens.size()));
    write_gguf(o, v, weights);
    if (o.format.dtype) write_hf(o, v, weights);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "llm_make: %s\n", e.what());
    return 1;
  }
  return 0;
}
