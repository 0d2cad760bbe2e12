// Text helpers of the tokenizers: UTF-8, GPT-2's byte symbols, byte tokens and the PCRE2 splits.
#include <pcre2.h>

#include <cstdio>

#include "llm/tokenizer_impl.h"

namespace wick::llm::tok {

void format_error(const std::string& what) { throw FormatError("[tokenizer] " + what); }

size_t utf8_char_len(std::string_view s, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t c = at(i);
  size_t n;
  uint32_t min;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2, min = 0x80;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3, min = 0x800;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4, min = 0x10000;
  } else {
    return 1;
  }
  if (i + n > s.size()) return 1;
  uint32_t cp = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((at(i + k) & 0xC0) != 0x80) return 1;
    cp = cp << 6 | (at(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and code points past U+10FFFF are not characters.
  if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return 1;
  return n;
}

namespace {

// GPT-2's bytes_to_unicode: the printable bytes stand for themselves, the other 68 bytes for
// U+0100 onwards, in byte order.
struct ByteLevelTable {
  std::array<std::string, 256> symbol;
  std::array<int16_t, 324> byte;  // code point -> byte, -1 for none

  ByteLevelTable() {
    byte.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const int cp = printable ? b : next++;
      byte[static_cast<size_t>(cp)] = static_cast<int16_t>(b);
      std::string& s = symbol[static_cast<size_t>(b)];
      if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
      } else {
        s.push_back(static_cast<char>(0xC0 | cp >> 6));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
    }
  }
};

const ByteLevelTable& byte_level_table() {
  static const ByteLevelTable table;
  return table;
}

}  // namespace

const std::string& byte_symbol(uint8_t b) { return byte_level_table().symbol[b]; }

std::string byte_level_encode(std::string_view bytes) {
  const ByteLevelTable& t = byte_level_table();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += t.symbol[static_cast<uint8_t>(c)];
  return out;
}

bool byte_level_decode(std::string_view symbols, std::string& out) {
  const ByteLevelTable& t = byte_level_table();
  for (size_t i = 0; i < symbols.size();) {
    const auto c = static_cast<uint8_t>(symbols[i]);
    uint32_t cp;
    if (c < 0x80) {
      cp = c, i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < symbols.size() && utf8_char_len(symbols, i) == 2) {
      cp = (c & 0x1Fu) << 6 | (static_cast<uint8_t>(symbols[i + 1]) & 0x3Fu), i += 2;
    } else {
      return false;
    }
    if (cp >= t.byte.size() || t.byte[cp] < 0) return false;
    out.push_back(static_cast<char>(t.byte[cp]));
  }
  return true;
}

std::string byte_token(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int v = 0;
  for (char c : text.substr(3, 2)) {
    v *= 16;
    if (c >= '0' && c <= '9') {
      v += c - '0';
    } else if (c >= 'A' && c <= 'F') {
      v += c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      v += c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return v;
}

// ---- pre-tokenizer regexes ----

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE at = 0;
  // MATCH_INVALID_UTF: text that is not UTF-8 is searched too; no pattern item matches the bad
  // bytes, so they land between matches, in pieces of their own.
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &at, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    format_error("the pre-tokenizer regex '" + pattern + "' does not compile at offset " + std::to_string(at) + ": " +
                 reinterpret_cast<const char*>(msg));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // where JIT is unavailable the interpreter serves
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  auto* code = static_cast<pcre2_code*>(code_);
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code, nullptr), &pcre2_match_data_free);
  if (!md) throw OutOfMemory("[tokenizer] no memory for a regex match");
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t last = 0, start = 0;
  uint32_t flags = 0;
  while (start <= text.size()) {
    const int rc = pcre2_match(code, subject, text.size(), start, flags, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (flags == 0 || start >= text.size()) break;
      // No non-empty match at `start` after an empty one there: step over one character.
      start += utf8_char_len(text, start);
      flags = 0;
      continue;
    }
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw InvalidArgument("[tokenizer] the pre-tokenizer regex failed: " +
                            std::string(reinterpret_cast<const char*>(msg)));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t b = ov[0], e = ov[1];
    if (b == e) {  // an empty match adds nothing; look for a longer one at the same place
      start = b;
      flags = PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
      continue;
    }
    if (b > last) pieces.push_back(text.substr(last, b - last));
    pieces.push_back(text.substr(b, e - b));
    last = start = e;
    flags = 0;
  }
  if (last < text.size()) pieces.push_back(text.substr(last));
}

// ---- named pre-tokenizers ----

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
namespace {
const char* const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The first row of a pattern is the name to_gguf writes for it.
const PreTokenizer kPreTokenizers[] = {
    {"gpt2", kGpt2Pattern, false, false},
    {"default", kGpt2Pattern, false, false},
    {"llama-bpe", kLlama3Pattern, true, true},
    {"llama3", kLlama3Pattern, true, true},
    {"llama-v3", kLlama3Pattern, true, true},
    {"smaug-bpe", kLlama3Pattern, false, false},
    {"dbrx", kLlama3Pattern, false, false},
    {"qwen2", kQwen2Pattern, false, false},
    {"deepseek-r1-qwen", kQwen2Pattern, false, false},
};
}  // namespace

const PreTokenizer* find_pre_tokenizer(std::string_view name) {
  for (const PreTokenizer& p : kPreTokenizers)
    if (name == p.name) return &p;
  return nullptr;
}

const char* pre_tokenizer_name(std::string_view pattern, bool ignore_merges) {
  for (const PreTokenizer& p : kPreTokenizers)
    if (pattern == p.pattern && ignore_merges == p.ignore_merges) return p.name;
  return nullptr;
}

}  // namespace wick::llm::tok
