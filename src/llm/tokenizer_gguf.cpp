// Tokenizer <-> the tokenizer.ggml.* keys of a GGUF file (llama.cpp's names and defaults).
#include <cmath>

#include "llm/tokenizer_impl.h"

namespace wick::llm {

using namespace tok;

namespace {

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kPre = "tokenizer.ggml.pre";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kBos = "tokenizer.ggml.bos_token_id";
constexpr const char* kEos = "tokenizer.ggml.eos_token_id";
constexpr const char* kUnk = "tokenizer.ggml.unknown_token_id";
constexpr const char* kPad = "tokenizer.ggml.padding_token_id";
constexpr const char* kEot = "tokenizer.ggml.eot_token_id";
constexpr const char* kEom = "tokenizer.ggml.eom_token_id";
constexpr const char* kAddBos = "tokenizer.ggml.add_bos_token";
constexpr const char* kAddEos = "tokenizer.ggml.add_eos_token";
constexpr const char* kAddSpace = "tokenizer.ggml.add_space_prefix";

// The elements of a numeric array of any element type, as double.
std::vector<double> numbers(const GgufValue& v) {
  auto conv = [](const auto& a) { return std::vector<double>(a.begin(), a.end()); };
  switch (v.elem_type()) {
    case GgufType::U8:
      return conv(v.as_array<uint8_t>());
    case GgufType::I8:
      return conv(v.as_array<int8_t>());
    case GgufType::U16:
      return conv(v.as_array<uint16_t>());
    case GgufType::I16:
      return conv(v.as_array<int16_t>());
    case GgufType::U32:
      return conv(v.as_array<uint32_t>());
    case GgufType::I32:
      return conv(v.as_array<int32_t>());
    case GgufType::F32:
      return conv(v.as_array<float>());
    case GgufType::U64:
      return conv(v.as_array<uint64_t>());
    case GgufType::I64:
      return conv(v.as_array<int64_t>());
    case GgufType::F64:
      return v.as_array<double>();
    default:
      format_error(v.key() + " is an array of " + gguf_type_name(v.elem_type()) + ", not of numbers");
  }
}

std::vector<double> sized(const GgufMetadata& md, const char* key, size_t n) {
  std::vector<double> v = numbers(md.get(key));
  if (v.size() != n)
    format_error(std::string(key) + " has " + std::to_string(v.size()) + " values for " + std::to_string(n) +
                 " tokens");
  return v;
}

int32_t read_id(const GgufMetadata& md, const char* key, size_t n) {
  const GgufValue* v = md.find(key);
  if (v == nullptr) return -1;
  const int64_t id = v->as_int();
  if (id < 0 || static_cast<uint64_t>(id) >= n)
    format_error(std::string(key) + " is " + std::to_string(id) + ", outside the vocabulary of " + std::to_string(n) +
                 " tokens");
  return static_cast<int32_t>(id);
}

bool read_bool(const GgufMetadata& md, const char* key, bool fallback) {
  const GgufValue* v = md.find(key);
  return v == nullptr ? fallback : v->as_bool();
}

void read_merges(Tokenizer::Impl& m, const GgufValue& v) {
  const std::vector<std::string>& merges = v.as_strings();
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string& s = merges[i];
    const std::string where = std::string(kMerges) + "[" + std::to_string(i) + "]";
    // As llama.cpp: the first space after the first character separates the two tokens.
    const size_t sp = s.size() > 1 ? s.find(' ', 1) : std::string::npos;
    if (sp == std::string::npos) format_error(where + " '" + s + "' is not two tokens separated by a space");
    const int32_t left = m.find(std::string_view(s).substr(0, sp));
    const int32_t right = m.find(std::string_view(s).substr(sp + 1));
    if (left < 0 || right < 0)
      format_error(where + " '" + s + "': '" + (left < 0 ? s.substr(0, sp) : s.substr(sp + 1)) +
                   "' is not in the vocabulary");
    m.add_merge(left, right, where);
  }
}

}  // namespace

Tokenizer Tokenizer::from_gguf(const GgufMetadata& md) {
  Tokenizer t;
  Impl& m = *t.impl_;
  const std::string& model = md.get(kModel).as_string();
  if (model == "llama") {
    m.kind = Kind::Spm;
  } else if (model == "gpt2") {
    m.kind = Kind::Bpe;
  } else {
    format_error(std::string(kModel) + " is '" + model +
                 "': wick reads 'llama' (SentencePiece) and 'gpt2' (byte-level BPE) tokenizers");
  }
  m.tokens = md.get(kTokens).as_strings();
  const size_t n = m.tokens.size();
  if (n == 0) format_error(std::string(kTokens) + " is empty");
  if (md.contains(kScores)) {
    const std::vector<double> s = sized(md, kScores, n);
    m.scores.assign(s.begin(), s.end());
  }
  if (md.contains(kTypes)) {
    const std::vector<double> types = sized(md, kTypes, n);
    m.types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (!(types[i] >= 0 && types[i] <= 6) || types[i] != std::floor(types[i]))
        format_error(std::string(kTypes) + "[" + std::to_string(i) + "] is " + std::to_string(types[i]) +
                     ", not a token type (0 to 6)");
      m.types[i] = static_cast<int32_t>(types[i]);
    }
  } else {
    m.types.assign(n, kNormal);
    if (m.kind == Kind::Spm)
      for (size_t i = 0; i < n; ++i)
        if (parse_byte_token(m.tokens[i]) >= 0) m.types[i] = kByte;
  }
  m.index_tokens();
  m.bos = read_id(md, kBos, n);
  m.eos = read_id(md, kEos, n);
  m.unk = read_id(md, kUnk, n);
  m.pad = read_id(md, kPad, n);
  m.eot = read_id(md, kEot, n);
  m.eom = read_id(md, kEom, n);

  bool add_bos = true;
  if (m.kind == Kind::Bpe) {
    const GgufValue* pre = md.find(kPre);
    m.pre = pre == nullptr ? "default" : pre->as_string();
    const PreTokenizer* p = find_pre_tokenizer(m.pre);
    if (p == nullptr)
      format_error(std::string(kPre) + " is '" + m.pre +
                   "': wick knows default, gpt2, llama-bpe (llama3, llama-v3), smaug-bpe, dbrx, qwen2 and "
                   "deepseek-r1-qwen");
    if (m.pre == "default") m.pre = "gpt2";  // the same split; to_gguf writes one name for it
    m.splits = {std::make_shared<const Regex>(p->pattern)};
    m.ignore_merges = p->ignore_merges;
    add_bos = p->add_bos;
    read_merges(m, md.get(kMerges));
  } else {
    m.byte_fallback = true;
    if (const GgufValue* merges = md.find(kMerges)) {  // Note [SPM merge order]
      m.spm_by_rank = true;
      m.fuse_unk = true;
      read_merges(m, *merges);
    }
  }
  m.add_bos = read_bool(md, kAddBos, add_bos);
  m.add_eos = read_bool(md, kAddEos, false);
  m.add_space_prefix = read_bool(md, kAddSpace, m.kind == Kind::Spm);
  m.finish(kTokens);
  return t;
}

void Tokenizer::to_gguf(GgufMetadata& md) const {
  if (!impl_) throw InvalidArgument("[tokenizer] use of a moved-from tokenizer");
  const Impl& m = *impl_;
  if (m.kind == Kind::Bpe && m.pre.empty())
    throw UnsupportedError(
        "[tokenizer] to_gguf: the pre-tokenizer split of this tokenizer has no tokenizer.ggml.pre name (wick "
        "writes gpt2, llama-bpe, smaug-bpe and qwen2)");
  if (m.prefix_unless_space || m.prefix_first_only || m.split_words)
    throw UnsupportedError(
        "[tokenizer] to_gguf: GGUF has no keys for a Metaspace pre-tokenizer (the space prefix only where the text "
        "has none, only at its start, or words split at spaces)");
  for (const char* key : {kModel, kPre, kTokens, kScores, kTypes, kMerges, kBos, kEos, kUnk, kPad, kEot, kEom, kAddBos,
                          kAddEos, kAddSpace})
    md.erase(key);
  md.set(kModel, GgufValue::string(m.kind == Kind::Spm ? "llama" : "gpt2"));
  if (m.kind == Kind::Bpe) md.set(kPre, GgufValue::string(m.pre));
  md.set(kTokens, GgufValue::strings(m.tokens));
  if (m.kind == Kind::Spm)
    md.set(kScores, GgufValue::array(m.scores.empty() ? std::vector<float>(m.tokens.size(), 0.0f) : m.scores));
  md.set(kTypes, GgufValue::array(m.types));
  if (m.kind == Kind::Bpe || m.spm_by_rank) {
    std::vector<std::string> merges;
    merges.reserve(m.merge_list.size());
    for (const auto& [l, r] : m.merge_list)
      merges.push_back(m.tokens[static_cast<size_t>(l)] + " " + m.tokens[static_cast<size_t>(r)]);
    md.set(kMerges, GgufValue::strings(std::move(merges)));
  }
  const std::pair<const char*, int32_t> ids[] = {{kBos, m.bos}, {kEos, m.eos}, {kUnk, m.unk},
                                                 {kPad, m.pad}, {kEot, m.eot}, {kEom, m.eom}};
  for (const auto& [key, id] : ids)
    if (id >= 0) md.set(key, GgufValue::u32(static_cast<uint32_t>(id)));
  md.set(kAddBos, GgufValue::boolean(m.add_bos));
  md.set(kAddEos, GgufValue::boolean(m.add_eos));
  md.set(kAddSpace, GgufValue::boolean(m.add_space_prefix));
}

}  // namespace wick::llm
