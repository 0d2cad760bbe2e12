// Internals of wick::llm::Tokenizer, shared by tokenizer.cpp (encoding, decoding),
// tokenizer_text.cpp (UTF-8, GPT-2 byte symbols, the PCRE2 pre-tokenizer), tokenizer_gguf.cpp
// and tokenizer_hf.cpp (the two readers).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wick/error.h"
#include "wick/llm.h"

namespace wick::llm {
namespace tok {

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

inline constexpr std::string_view kSpace = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// The length of the UTF-8 character at s[i]: 1 to 4 for a well-formed one, 1 for a byte that
// does not start one (so that text that is not UTF-8 still splits into pieces).
size_t utf8_char_len(std::string_view s, size_t i);

// GPT-2's byte-to-unicode map: every byte as a printable character (byte-level BPE vocabularies
// hold these characters, never raw bytes).
std::string byte_level_encode(std::string_view bytes);
// The bytes of a string of byte symbols; false (out unspecified) when a character is not one.
bool byte_level_decode(std::string_view symbols, std::string& out);
const std::string& byte_symbol(uint8_t b);

// "<0xAB>" for byte tokens; parse_byte_token gives -1 for any other text.
std::string byte_token(uint8_t b);
int parse_byte_token(std::string_view text);

// A pre-tokenizer split (Hugging Face's Split with behaviour Isolated): the matches of a
// Unicode regex (PCRE2, UTF + UCP) and the text between them, in order. Immutable once compiled,
// so one instance serves any number of threads.
class Regex {
 public:
  explicit Regex(const std::string& pattern);  // FormatError naming the pattern when it does not compile
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  const std::string& pattern() const { return pattern_; }
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
};

// The pre-tokenizers tokenizer.ggml.pre names (llama.cpp's names and regexes, in the spelling of
// the Hugging Face tokenizer.json files they come from).
struct PreTokenizer {
  const char* name;
  const char* pattern;
  bool ignore_merges;  // a word that is a token is taken whole (Llama 3)
  bool add_bos;        // the default of tokenizer.ggml.add_bos_token
};
const PreTokenizer* find_pre_tokenizer(std::string_view name);  // nullptr when unknown
// The name to_gguf writes for a split pattern and ignore_merges; nullptr when none fits.
const char* pre_tokenizer_name(std::string_view pattern, bool ignore_merges);
extern const char* const kGpt2Pattern;

[[noreturn]] void format_error(const std::string& what);  // FormatError("[tokenizer] " + what)

}  // namespace tok

struct Tokenizer::Impl {
  struct Merge {
    int32_t rank;
    int32_t result;
  };

  Impl() { byte_ids.fill(-1); }

  Kind kind = Kind::Spm;
  std::vector<std::string> tokens;
  std::vector<float> scores;   // SPM: merge priority of the token (higher first); empty: all 0
  std::vector<int32_t> types;  // tok::TokenType of each token
  tok::TokenMap ids;           // text -> id (the last id of a text that appears twice, as llama.cpp)

  // Merges by rank: BPE, and SPM when the tokenizer came with merges (Note [SPM merge order]).
  std::unordered_map<uint64_t, Merge> merges;           // (left id << 32 | right id) -> rank, merged id
  std::vector<std::pair<int32_t, int32_t>> merge_list;  // in rank order
  bool spm_by_rank = false;

  // BPE pre-tokenizer: the splits applied in order, and tokenizer.ggml.pre ("" when none fits).
  std::vector<std::shared_ptr<const tok::Regex>> splits;
  std::string pre;
  bool ignore_merges = false;

  bool add_space_prefix = false;  // SPM: "▁" in front of each text; BPE: " " unless there is one
  // SPM read from a tokenizer.json with a Metaspace pre-tokenizer (no GGUF keys for these): the
  // prefix only where the text does not start with a space, only at the start of the whole text
  // (prepend_scheme "first"), and words split in front of each "▁" (split).
  bool prefix_unless_space = false, prefix_first_only = false, split_words = false;
  bool byte_fallback = false;  // a character outside the vocabulary as <0xXX> byte tokens
  bool fuse_unk = false;       // consecutive unknown characters as one unk token
  bool add_bos = false, add_eos = false;
  int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1, eom = -1;

  // Derived by finish().
  std::array<int32_t, 256> byte_ids{};                     // SPM: the <0xXX> token; BPE: the byte's symbol; -1: none
  std::vector<int32_t> end_ids;                            // end of generation
  std::array<std::vector<int32_t>, 256> specials_by_byte;  // matched in text; longest first

  void index_tokens();  // fills `ids` from `tokens`
  // Builds the derived tables; `where` names the source in errors.
  void finish(const std::string& where);
  void add_merge(int32_t left, int32_t right, const std::string& where);
  int32_t find(std::string_view text) const {
    auto it = ids.find(text);
    return it == ids.end() ? -1 : it->second;
  }
  bool special_type(int32_t id) const {
    const int32_t t = types[static_cast<size_t>(id)];
    return t == tok::kControl || t == tok::kUnknown || t == tok::kUserDefined;
  }

  // at_start: the text begins the string given to encode().
  void encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const;
  void encode_bpe_word(std::string_view symbols, std::vector<int32_t>& out) const;
  void merge_by_rank(std::string_view text, std::vector<int32_t>& out) const;
  void merge_by_score(std::string_view text, std::vector<int32_t>& out) const;
  void fallback(std::string_view chars, std::vector<int32_t>& out) const;
  std::string piece(int32_t id) const;
};

}  // namespace wick::llm
