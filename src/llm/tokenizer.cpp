// wick::llm::Tokenizer: encoding and decoding. The readers are tokenizer_gguf.cpp and
// tokenizer_hf.cpp; the text helpers tokenizer_text.cpp.
#include <algorithm>
#include <queue>

#include "llm/tokenizer_impl.h"

namespace wick::llm {

using namespace tok;

namespace {

uint64_t pair_key(int32_t left, int32_t right) {
  return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
}

// Tokens llama.cpp takes for end of turn / end of generation when the file names none.
constexpr std::string_view kEotTexts[] = {"<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
                                          "<|endoftext|>", "<EOT>",      "_<EOT>"};
constexpr std::string_view kEndTexts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",  "<|endoftext|>",
                                          "<|eom_id|>", "<EOT>",      "_<EOT>",  "<|end_of_text|>"};

}  // namespace

// ---- setup shared by the readers ----

void Tokenizer::Impl::add_merge(int32_t left, int32_t right, const std::string& where) {
  const std::string merged = tokens[static_cast<size_t>(left)] + tokens[static_cast<size_t>(right)];
  const int32_t result = find(merged);
  if (result < 0)
    format_error(where + ": the merge of '" + tokens[static_cast<size_t>(left)] + "' and '" +
                 tokens[static_cast<size_t>(right)] + "' is not in the vocabulary");
  const auto rank = static_cast<int32_t>(merge_list.size());
  merge_list.emplace_back(left, right);
  merges.try_emplace(pair_key(left, right), Merge{rank, result});  // a repeated pair keeps its first rank
}

void Tokenizer::Impl::index_tokens() {
  ids.clear();
  ids.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (!tokens[i].empty()) ids.insert_or_assign(tokens[i], static_cast<int32_t>(i));
}

void Tokenizer::Impl::finish(const std::string& where) {
  const size_t n = tokens.size();
  if (n == 0) format_error(where + ": the vocabulary is empty");
  if (n > static_cast<size_t>(INT32_MAX)) format_error(where + ": " + std::to_string(n) + " tokens are too many");
  if (types.empty()) types.assign(n, kNormal);
  for (size_t b = 0; b < 256; ++b) {
    const auto byte = static_cast<uint8_t>(b);
    byte_ids[b] = find(kind == Kind::Spm ? std::string_view(byte_token(byte)) : std::string_view(byte_symbol(byte)));
  }
  for (auto& v : specials_by_byte) v.clear();
  end_ids.clear();
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const std::string& t = tokens[i];
    if (eot < 0 && std::find(std::begin(kEotTexts), std::end(kEotTexts), t) != std::end(kEotTexts)) eot = id;
    if (eom < 0 && t == "<|eom_id|>") eom = id;
    if (std::find(std::begin(kEndTexts), std::end(kEndTexts), t) != std::end(kEndTexts)) end_ids.push_back(id);
    if (special_type(id) && !t.empty()) specials_by_byte[static_cast<uint8_t>(t[0])].push_back(id);
  }
  for (int32_t id : {eos, eot, eom})
    if (id >= 0) end_ids.push_back(id);
  std::sort(end_ids.begin(), end_ids.end());
  end_ids.erase(std::unique(end_ids.begin(), end_ids.end()), end_ids.end());
  // Longest first, so that the scan in encode() takes the longest special token at a position.
  for (auto& v : specials_by_byte)
    std::stable_sort(v.begin(), v.end(), [&](int32_t a, int32_t b) {
      return tokens[static_cast<size_t>(a)].size() > tokens[static_cast<size_t>(b)].size();
    });
}

// ---- encoding ----

// Characters outside the vocabulary: their <0xXX> byte tokens (all of them, or none), else the
// unknown token, else nothing (Hugging Face's BPE drops a character it cannot represent).
void Tokenizer::Impl::fallback(std::string_view chars, std::vector<int32_t>& out) const {
  if (byte_fallback &&
      std::all_of(chars.begin(), chars.end(), [&](char c) { return byte_ids[static_cast<uint8_t>(c)] >= 0; })) {
    for (char c : chars) out.push_back(byte_ids[static_cast<uint8_t>(c)]);
    return;
  }
  if (unk >= 0 && !(fuse_unk && !out.empty() && out.back() == unk)) out.push_back(unk);
}

// Note [SPM merge order]
// Two merge orders. llama.cpp's SentencePiece tokenizer (a GGUF "llama" vocabulary) merges the
// adjacent pair whose concatenation is a token with the highest score, leftmost on ties; any such
// pair may merge. Hugging Face's BPE (every tokenizer.json, and GGUF "gpt2") merges only the
// listed pairs, the lowest rank first, leftmost on ties. A Llama-2-style tokenizer.json is the
// first kind of vocabulary written as the second; to keep its exact behaviour, an SPM tokenizer
// that has merges (read from tokenizer.json, or a GGUF file that lists tokenizer.ggml.merges)
// merges by rank, and to_gguf writes its merges beside scores that order them the same way.
void Tokenizer::Impl::merge_by_rank(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<int32_t> id;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_char_len(text, i);
    const std::string_view c = text.substr(i, len);
    const int32_t t = find(c);
    if (t >= 0) {
      id.push_back(t);
    } else {
      fallback(c, id);
    }
    i += len;
  }
  const auto n = static_cast<int32_t>(id.size());
  std::vector<int32_t> prev(id.size()), next(id.size());
  std::vector<char> alive(id.size(), 1);
  for (int32_t i = 0; i < n; ++i)
    prev[static_cast<size_t>(i)] = i - 1, next[static_cast<size_t>(i)] = i + 1 < n ? i + 1 : -1;
  using Entry = std::pair<int32_t, int32_t>;  // rank, left symbol
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  auto rank_of = [&](int32_t l, int32_t r) -> const Merge* {
    if (l < 0 || r < 0) return nullptr;
    auto it = merges.find(pair_key(id[static_cast<size_t>(l)], id[static_cast<size_t>(r)]));
    return it == merges.end() ? nullptr : &it->second;
  };
  auto push = [&](int32_t l, int32_t r) {
    if (const Merge* m = rank_of(l, r)) queue.emplace(m->rank, l);
  };
  for (int32_t i = 0; i + 1 < n; ++i) push(i, i + 1);
  while (!queue.empty()) {
    const auto [rank, l] = queue.top();
    queue.pop();
    const auto ul = static_cast<size_t>(l);
    if (!alive[ul]) continue;
    const int32_t r = next[ul];
    const Merge* m = rank_of(l, r);
    if (m == nullptr || m->rank != rank) continue;  // the pair changed since it was queued
    const auto ur = static_cast<size_t>(r);
    id[ul] = m->result;
    alive[ur] = 0;
    next[ul] = next[ur];
    if (next[ur] >= 0) prev[static_cast<size_t>(next[ur])] = l;
    push(prev[ul], l);
    push(l, next[ul]);
  }
  for (int32_t i = n > 0 ? 0 : -1; i >= 0; i = next[static_cast<size_t>(i)]) out.push_back(id[static_cast<size_t>(i)]);
}

void Tokenizer::Impl::merge_by_score(std::string_view text, std::vector<int32_t>& out) const {
  struct Sym {
    size_t off, len;
    int32_t prev, next;
  };
  std::vector<Sym> sym;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_char_len(text, i);
    const auto k = static_cast<int32_t>(sym.size());
    sym.push_back({i, len, k - 1, i + len < text.size() ? k + 1 : -1});
    i += len;
  }
  struct Bigram {
    float score;
    int32_t left, right;
    size_t size;
  };
  auto lower = [](const Bigram& a, const Bigram& b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(lower)> queue(lower);
  auto push = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const Sym &a = sym[static_cast<size_t>(l)], &b = sym[static_cast<size_t>(r)];
    const int32_t t = find(text.substr(a.off, a.len + b.len));
    if (t < 0) return;
    queue.push({scores.empty() ? 0.0f : scores[static_cast<size_t>(t)], l, r, a.len + b.len});
  };
  for (size_t i = 1; i < sym.size(); ++i) push(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
  while (!queue.empty()) {
    const Bigram g = queue.top();
    queue.pop();
    Sym &a = sym[static_cast<size_t>(g.left)], &b = sym[static_cast<size_t>(g.right)];
    if (a.len == 0 || b.len == 0 || a.next != g.right || a.len + b.len != g.size) continue;  // stale
    a.len += b.len;
    b.len = 0;
    a.next = b.next;
    if (b.next >= 0) sym[static_cast<size_t>(b.next)].prev = g.left;
    push(a.prev, g.left);
    push(g.left, a.next);
  }
  for (int32_t i = sym.empty() ? -1 : 0; i >= 0; i = sym[static_cast<size_t>(i)].next) {
    const Sym& s = sym[static_cast<size_t>(i)];
    const std::string_view piece = text.substr(s.off, s.len);
    const int32_t t = find(piece);
    if (t >= 0) {
      out.push_back(t);
    } else {
      fallback(piece, out);
    }
  }
}

void Tokenizer::Impl::encode_spm(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  std::string s;
  s.reserve(text.size() + 16);
  for (char c : text) {
    if (c == ' ') {
      s += kSpace;
    } else {
      s.push_back(c);
    }
  }
  const bool prefix = add_space_prefix && (at_start || !prefix_first_only) &&
                      !(prefix_unless_space && s.compare(0, kSpace.size(), kSpace) == 0);
  if (prefix) s.insert(0, kSpace);
  auto merge = [&](std::string_view word) {
    if (spm_by_rank) {
      merge_by_rank(word, out);
    } else {
      merge_by_score(word, out);
    }
  };
  if (!split_words) {
    merge(s);
    return;
  }
  // Each "▁" starts a word (Hugging Face's Metaspace split, MergedWithNext).
  const std::string_view v = s;
  size_t begin = 0;
  for (size_t i = v.find(kSpace, 1); i != std::string_view::npos; i = v.find(kSpace, i + 1)) {
    merge(v.substr(begin, i - begin));
    begin = i;
  }
  merge(v.substr(begin));
}

void Tokenizer::Impl::encode_bpe_word(std::string_view symbols, std::vector<int32_t>& out) const {
  if (ignore_merges) {
    const int32_t t = find(symbols);
    if (t >= 0) {
      out.push_back(t);
      return;
    }
  }
  merge_by_rank(symbols, out);
}

// Text between special tokens.
void Tokenizer::Impl::encode_text(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  if (kind == Kind::Spm) {
    encode_spm(text, at_start, out);
    return;
  }
  std::string prefixed;
  if (add_space_prefix && text[0] != ' ') {
    prefixed = " ";
    prefixed += text;
    text = prefixed;
  }
  std::vector<std::string_view> pieces{text}, next;
  for (const auto& split : splits) {
    next.clear();
    for (std::string_view p : pieces) split->split(p, next);
    pieces.swap(next);
  }
  for (std::string_view p : pieces) encode_bpe_word(byte_level_encode(p), out);
}

std::string Tokenizer::Impl::piece(int32_t id) const {
  const std::string& t = tokens[static_cast<size_t>(id)];
  if (special_type(id)) return t;
  if (kind == Kind::Spm) {
    if (types[static_cast<size_t>(id)] == kByte) {
      const int b = parse_byte_token(t);
      if (b >= 0) return std::string(1, static_cast<char>(b));
    }
    std::string out;
    for (size_t i = 0; i < t.size();) {
      if (t.compare(i, kSpace.size(), kSpace) == 0) {
        out.push_back(' ');
        i += kSpace.size();
      } else {
        out.push_back(t[i++]);
      }
    }
    return out;
  }
  std::string out;
  if (byte_level_decode(t, out)) return out;
  return t;  // not byte symbols (a token added by hand): its text
}

// ---- public API ----

namespace {
const Tokenizer::Impl& checked(const std::unique_ptr<Tokenizer::Impl>& impl) {
  if (!impl) throw InvalidArgument("[tokenizer] use of a moved-from tokenizer");
  return *impl;
}

void check_id(const Tokenizer::Impl& m, int32_t id) {
  if (id < 0 || static_cast<size_t>(id) >= m.tokens.size())
    throw IndexError("[tokenizer] token id " + std::to_string(id) + " is outside the vocabulary of " +
                     std::to_string(m.tokens.size()) + " tokens");
}
}  // namespace

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(const Tokenizer& o) : impl_(std::make_unique<Impl>(checked(o.impl_))) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(const Tokenizer& o) {
  if (this != &o) impl_ = std::make_unique<Impl>(checked(o.impl_));
  return *this;
}
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer::Kind Tokenizer::kind() const { return checked(impl_).kind; }
int64_t Tokenizer::vocab_size() const { return static_cast<int64_t>(checked(impl_).tokens.size()); }
int32_t Tokenizer::bos() const { return checked(impl_).bos; }
int32_t Tokenizer::eos() const { return checked(impl_).eos; }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  const Impl& m = checked(impl_);
  std::vector<int32_t> out;
  if (add_special && m.add_bos && m.bos >= 0) out.push_back(m.bos);
  // Special tokens split the text (leftmost, then longest); without parse_special only the
  // user-defined ones do, as llama.cpp and Hugging Face's encode_special_tokens have it.
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    int32_t hit = -1;
    for (int32_t id : m.specials_by_byte[static_cast<uint8_t>(text[i])]) {
      if (!parse_special && m.types[static_cast<size_t>(id)] != kUserDefined) continue;
      const std::string& s = m.tokens[static_cast<size_t>(id)];
      if (text.compare(i, s.size(), s) == 0) {
        hit = id;
        break;
      }
    }
    if (hit < 0) {
      ++i;
      continue;
    }
    m.encode_text(text.substr(start, i - start), start == 0, out);
    out.push_back(hit);
    i += m.tokens[static_cast<size_t>(hit)].size();
    start = i;
  }
  m.encode_text(text.substr(start), start == 0, out);
  if (add_special && m.add_eos && m.eos >= 0) out.push_back(m.eos);
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  const Impl& m = checked(impl_);
  std::string out;
  for (int32_t id : ids) {
    check_id(m, id);
    if (skip_special && is_special(id)) continue;
    out += m.piece(id);
  }
  // The space the encoder put in front of the text (Hugging Face's Strip decoder: one space).
  if (m.kind == Kind::Spm && m.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string Tokenizer::piece(int32_t id) const {
  const Impl& m = checked(impl_);
  check_id(m, id);
  return m.piece(id);
}

const std::string& Tokenizer::token(int32_t id) const {
  const Impl& m = checked(impl_);
  check_id(m, id);
  return m.tokens[static_cast<size_t>(id)];
}

std::optional<int32_t> Tokenizer::find(std::string_view token) const {
  const int32_t id = checked(impl_).find(token);
  return id < 0 ? std::nullopt : std::optional<int32_t>(id);
}

bool Tokenizer::is_special(int32_t id) const {
  const Impl& m = checked(impl_);
  if (id < 0 || static_cast<size_t>(id) >= m.tokens.size()) return false;
  const int32_t t = m.types[static_cast<size_t>(id)];
  return t == kControl || t == kUnknown || id == m.bos || id == m.eos;
}

bool Tokenizer::is_end_of_generation(int32_t id) const {
  const Impl& m = checked(impl_);
  return std::binary_search(m.end_ids.begin(), m.end_ids.end(), id);
}

}  // namespace wick::llm
