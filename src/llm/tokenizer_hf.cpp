// Tokenizer from a Hugging Face tokenizer.json (and the tokenizer_config.json beside it).
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "llm/tokenizer_impl.h"

namespace wick::llm {

using namespace tok;
using nlohmann::json;

namespace {

json read_json(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("[tokenizer] cannot open " + path.string());
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    format_error(path.string() + ": not JSON: " + e.what());
  }
}

// Reads fields of one file; every error names the file and the field.
struct Reader {
  std::string file;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    format_error(file + ": " + field + " " + what);
  }
  // The member `key` of `obj`; nullptr when absent or null.
  const json* member(const json& obj, const char* key, const std::string& field) const {
    if (!obj.is_object()) fail(field, "is not an object");
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const std::string& str(const json& v, const std::string& field) const {
    if (!v.is_string()) fail(field, "is not a string");
    return v.get_ref<const std::string&>();
  }
  bool boolean(const json& obj, const char* key, bool fallback, const std::string& field) const {
    const json* v = member(obj, key, field);
    if (v == nullptr) return fallback;
    if (!v->is_boolean()) fail(field + "." + key, "is not true or false");
    return v->get<bool>();
  }
  int64_t integer(const json& v, const std::string& field) const {
    if (!v.is_number_integer()) fail(field, "is not an integer");
    return v.get<int64_t>();
  }
  // A pre-tokenizer or normalizer list: the elements of a Sequence, else the one object.
  std::vector<const json*> sequence(const json& v, const char* list, const std::string& field) const {
    const json* type = member(v, "type", field);
    if (type == nullptr || str(*type, field + ".type") != "Sequence") return {&v};
    const json* items = member(v, list, field);
    if (items == nullptr || !items->is_array()) fail(field + "." + list, "is not an array");
    std::vector<const json*> out;
    for (const json& item : *items) out.push_back(&item);
    return out;
  }
  std::string type_of(const json& v, const std::string& field) const {
    const json* type = member(v, "type", field);
    if (type == nullptr) fail(field, "has no type");
    return str(*type, field + ".type");
  }
};

// What the normalizer and pre-tokenizer ask for.
struct Pipeline {
  bool prepend_space = false;  // Prepend "▁"
  bool escape_spaces = false;  // Replace " " -> "▁"
  bool byte_level = false;
  bool byte_level_prefix = false;  // ByteLevel add_prefix_space
  bool metaspace = false;
  std::string prepend_scheme;  // Metaspace: "always", "first", "never"
  bool metaspace_split = false;
  std::vector<std::string> splits;
};

void read_normalizer(const Reader& r, const json& j, Pipeline& p) {
  const json* norm = r.member(j, "normalizer", "normalizer");
  if (norm == nullptr) return;
  for (const json* n : r.sequence(*norm, "normalizers", "normalizer")) {
    const std::string type = r.type_of(*n, "normalizer");
    if (type == "Prepend" && n->value("prepend", json()) == kSpace) {
      p.prepend_space = true;
    } else if (type == "Replace" && n->contains("pattern") && (*n)["pattern"].value("String", json()) == " " &&
               n->value("content", json()) == kSpace) {
      p.escape_spaces = true;
    } else if (type != "NFC") {  // text is taken to be NFC already, as llama.cpp takes it
      r.fail("normalizer", type + " (" + n->dump() + ") is not one wick supports");
    }
  }
}

void read_pre_tokenizer(const Reader& r, const json& j, Pipeline& p) {
  const json* pre = r.member(j, "pre_tokenizer", "pre_tokenizer");
  if (pre == nullptr) return;
  for (const json* t : r.sequence(*pre, "pretokenizers", "pre_tokenizer")) {
    const std::string type = r.type_of(*t, "pre_tokenizer");
    if (type == "ByteLevel") {
      p.byte_level = true;
      p.byte_level_prefix = r.boolean(*t, "add_prefix_space", false, "pre_tokenizer ByteLevel");
      // Hugging Face adds the space to each piece the splits before it made; wick, to the text.
      if (p.byte_level_prefix && !p.splits.empty())
        r.fail("pre_tokenizer", "ByteLevel with add_prefix_space after a Split is not supported");
      if (r.boolean(*t, "use_regex", true, "pre_tokenizer ByteLevel")) p.splits.push_back(kGpt2Pattern);
    } else if (type == "Split") {
      const json* pattern = r.member(*t, "pattern", "pre_tokenizer Split");
      const json* regex = pattern ? r.member(*pattern, "Regex", "pre_tokenizer Split.pattern") : nullptr;
      const json* behavior = r.member(*t, "behavior", "pre_tokenizer Split");
      if (regex == nullptr || behavior == nullptr || r.str(*behavior, "pre_tokenizer Split.behavior") != "Isolated" ||
          r.boolean(*t, "invert", false, "pre_tokenizer Split"))
        r.fail("pre_tokenizer", "Split " + t->dump() + " is not a Regex split with behavior Isolated");
      p.splits.push_back(r.str(*regex, "pre_tokenizer Split.pattern.Regex"));
    } else if (type == "Metaspace") {
      const json* rep = r.member(*t, "replacement", "pre_tokenizer Metaspace");
      if (rep == nullptr || r.str(*rep, "pre_tokenizer Metaspace.replacement") != kSpace)
        r.fail("pre_tokenizer Metaspace.replacement", "is not U+2581");
      p.metaspace = true;
      const json* scheme = r.member(*t, "prepend_scheme", "pre_tokenizer Metaspace");
      p.prepend_scheme = scheme != nullptr ? r.str(*scheme, "pre_tokenizer Metaspace.prepend_scheme")
                         : r.boolean(*t, "add_prefix_space", true, "pre_tokenizer Metaspace") ? "always"
                                                                                              : "never";
      if (p.prepend_scheme != "always" && p.prepend_scheme != "first" && p.prepend_scheme != "never")
        r.fail("pre_tokenizer Metaspace.prepend_scheme", "is '" + p.prepend_scheme + "'");
      p.metaspace_split = r.boolean(*t, "split", true, "pre_tokenizer Metaspace");
    } else {
      r.fail("pre_tokenizer", type + " is not one wick supports (ByteLevel, Split, Metaspace)");
    }
  }
}

// The bos / eos a TemplateProcessing post-processor puts around a single text ("" for none).
std::pair<std::string, std::string> template_specials(const Reader& r, const json& j) {
  const json* post = r.member(j, "post_processor", "post_processor");
  if (post == nullptr) return {};
  for (const json* t : r.sequence(*post, "processors", "post_processor")) {
    if (r.type_of(*t, "post_processor") != "TemplateProcessing") continue;
    const json* single = r.member(*t, "single", "post_processor TemplateProcessing");
    if (single == nullptr || !single->is_array()) r.fail("post_processor TemplateProcessing.single", "is not an array");
    auto name = [&](const json& item) -> std::string {
      const json* special = r.member(item, "SpecialToken", "post_processor TemplateProcessing.single");
      if (special == nullptr) return "";
      const json* id_field = r.member(*special, "id", "post_processor SpecialToken");
      const std::string id = id_field ? r.str(*id_field, "post_processor SpecialToken.id") : "";
      // special_tokens maps the template's name to the token's text and id.
      const json* specials = r.member(*t, "special_tokens", "post_processor TemplateProcessing");
      const json* entry = specials ? r.member(*specials, id.c_str(), "post_processor special_tokens") : nullptr;
      if (entry != nullptr && entry->contains("tokens") && (*entry)["tokens"].is_array() && !(*entry)["tokens"].empty())
        return r.str((*entry)["tokens"][0], "post_processor special_tokens." + id + ".tokens[0]");
      return id;
    };
    std::pair<std::string, std::string> out;
    if (!single->empty()) out.first = name(single->front());
    if (single->size() > 1) out.second = name(single->back());
    return out;
  }
  return {};
}

// A token named by tokenizer_config.json: a string or {"content": ...}; "" when null or absent.
std::string config_token(const Reader& r, const json& config, const char* key) {
  const json* v = r.member(config, key, key);
  if (v == nullptr) return "";
  if (v->is_object()) {
    const json* content = r.member(*v, "content", key);
    return content == nullptr ? "" : r.str(*content, std::string(key) + ".content");
  }
  return r.str(*v, key);
}

void read_vocab(const Reader& r, const json& j, const json& model, Tokenizer::Impl& m) {
  const json* vocab = r.member(model, "vocab", "model");
  if (vocab == nullptr || !vocab->is_object()) r.fail("model.vocab", "is not an object");
  const json* added = r.member(j, "added_tokens", "added_tokens");
  if (added != nullptr && !added->is_array()) r.fail("added_tokens", "is not an array");
  const size_t entries = vocab->size() + (added ? added->size() : 0);
  auto place = [&](int64_t id, const std::string& text, const std::string& field, bool replace) {
    // Ids may leave gaps (filled with unused tokens), but not more than the entries.
    if (id < 0 || static_cast<uint64_t>(id) >= 2 * entries + 256)
      r.fail(field, "id " + std::to_string(id) + " is out of range for " + std::to_string(entries) + " tokens");
    const auto i = static_cast<size_t>(id);
    if (i >= m.tokens.size()) {
      m.tokens.resize(i + 1);
      m.types.resize(i + 1, kUnused);
    }
    if (!replace && m.types[i] != kUnused && m.tokens[i] != text)
      r.fail(field, "gives id " + std::to_string(id) + " to both '" + m.tokens[i] + "' and '" + text + "'");
    m.tokens[i] = text;
    m.types[i] = kNormal;
  };
  for (auto it = vocab->begin(); it != vocab->end(); ++it)
    place(r.integer(it.value(), "model.vocab['" + it.key() + "']"), it.key(), "model.vocab['" + it.key() + "']", false);
  if (added == nullptr) return;
  for (size_t k = 0; k < added->size(); ++k) {
    const json& a = (*added)[k];
    const std::string field = "added_tokens[" + std::to_string(k) + "]";
    const json* id = r.member(a, "id", field);
    const json* content = r.member(a, "content", field);
    if (id == nullptr || content == nullptr) r.fail(field, "needs an id and a content");
    const int64_t i = r.integer(*id, field + ".id");
    place(i, r.str(*content, field + ".content"), field, true);
    m.types[static_cast<size_t>(i)] = r.boolean(a, "special", false, field) ? kControl : kUserDefined;
  }
}

void read_merges(const Reader& r, const json& model, Tokenizer::Impl& m) {
  const json* merges = r.member(model, "merges", "model");
  if (merges == nullptr) return;
  if (!merges->is_array()) r.fail("model.merges", "is not an array");
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& e = (*merges)[i];
    const std::string field = "model.merges[" + std::to_string(i) + "]";
    std::string left, right;
    if (e.is_string()) {  // "a b"
      const std::string& s = e.get_ref<const std::string&>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        r.fail(field, "'" + s + "' is not two tokens separated by a space");
      left = s.substr(0, sp), right = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2) {  // ["a", "b"]
      left = r.str(e[0], field + "[0]"), right = r.str(e[1], field + "[1]");
    } else {
      r.fail(field, "is not a pair of tokens");
    }
    const int32_t l = m.find(left), rr = m.find(right);
    if (l < 0 || rr < 0) r.fail(field, "'" + (l < 0 ? left : right) + "' is not in the vocabulary");
    m.add_merge(l, rr, r.file + ": " + field);
  }
}

int32_t id_of(const Reader& r, const Tokenizer::Impl& m, const std::string& text, const std::string& field) {
  if (text.empty()) return -1;
  const int32_t id = m.find(text);
  if (id < 0) r.fail(field, "'" + text + "' is not in the vocabulary");
  return id;
}

}  // namespace

Tokenizer Tokenizer::from_hf(const std::string& path_in) {
  namespace fs = std::filesystem;
  fs::path path(path_in);
  std::error_code ec;
  if (fs::is_directory(path, ec)) path /= "tokenizer.json";
  const json j = read_json(path);
  const Reader r{path.string()};
  if (!j.is_object()) r.fail("the file", "is not a JSON object");
  Tokenizer t;
  Impl& m = *t.impl_;

  const json* model = r.member(j, "model", "");
  if (model == nullptr) r.fail("model", "is missing");
  const json* type = r.member(*model, "type", "model");
  if (type != nullptr && r.str(*type, "model.type") != "BPE")
    r.fail("model.type", "is '" + type->get<std::string>() + "': wick reads BPE tokenizers");
  for (const char* key : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
    const json* v = r.member(*model, key, "model");
    if (v != nullptr && !(v->is_string() && v->get_ref<const std::string&>().empty()))
      r.fail(std::string("model.") + key, "is set (" + v->dump() + "); wick does not support it");
  }
  read_vocab(r, j, *model, m);
  m.index_tokens();
  read_merges(r, *model, m);

  Pipeline p;
  read_normalizer(r, j, p);
  read_pre_tokenizer(r, j, p);
  const bool ignore_merges = r.boolean(*model, "ignore_merges", false, "model");
  m.fuse_unk = r.boolean(*model, "fuse_unk", false, "model");
  if (p.byte_level) {
    m.kind = Kind::Bpe;
    if (p.prepend_space || p.escape_spaces || p.metaspace)
      r.fail("normalizer", "replaces spaces by U+2581 in a byte-level tokenizer; wick does not support that");
    for (const std::string& s : p.splits) m.splits.push_back(std::make_shared<const Regex>(s));
    m.ignore_merges = ignore_merges;
    m.add_space_prefix = p.byte_level_prefix;
    if (m.splits.size() == 1)
      if (const char* name = pre_tokenizer_name(m.splits[0]->pattern(), ignore_merges)) m.pre = name;
  } else if (p.escape_spaces || p.metaspace) {
    // SentencePiece written as BPE (Llama 2, Mistral): Note [SPM merge order].
    m.kind = Kind::Spm;
    if (!p.splits.empty())
      r.fail("pre_tokenizer", "splits a SentencePiece-style tokenizer; wick does not support that");
    if (ignore_merges)
      r.fail("model.ignore_merges", "is set in a SentencePiece-style tokenizer; wick does not support that");
    if (p.metaspace && (p.prepend_space || p.escape_spaces))
      r.fail("normalizer", "and the Metaspace pre-tokenizer both replace spaces; wick does not support that");
    m.spm_by_rank = true;
    m.add_space_prefix = p.prepend_space || (p.metaspace && p.prepend_scheme != "never");
    m.prefix_unless_space = p.metaspace;
    m.prefix_first_only = p.metaspace && p.prepend_scheme == "first";
    m.split_words = p.metaspace && p.metaspace_split;
    m.byte_fallback = r.boolean(*model, "byte_fallback", false, "model");
    if (m.byte_fallback)
      for (size_t i = 0; i < m.tokens.size(); ++i)
        if (m.types[i] == kNormal && parse_byte_token(m.tokens[i]) >= 0) m.types[i] = kByte;
    // Scores for GGUF readers that merge by score: a token ranks as the first merge making it.
    m.scores.assign(m.tokens.size(), -1e9f);
    for (size_t rank = m.merge_list.size(); rank-- > 0;) {
      const auto [l, rr] = m.merge_list[rank];
      const int32_t made = m.find(m.tokens[static_cast<size_t>(l)] + m.tokens[static_cast<size_t>(rr)]);
      m.scores[static_cast<size_t>(made)] = -static_cast<float>(rank);
    }
  } else {
    r.fail("pre_tokenizer",
           "is neither ByteLevel nor SentencePiece-style (' ' replaced by U+2581 in the normalizer or a Metaspace "
           "pre-tokenizer); wick reads those two");
  }

  if (const json* unk = r.member(*model, "unk_token", "model")) {
    m.unk = id_of(r, m, r.str(*unk, "model.unk_token"), "model.unk_token");
    if (m.types[static_cast<size_t>(m.unk)] == kControl) m.types[static_cast<size_t>(m.unk)] = kUnknown;
  }

  // BOS / EOS: tokenizer_config.json, else what the post-processor adds.
  auto [template_bos, template_eos] = template_specials(r, j);
  m.bos = id_of(r, m, template_bos, "post_processor");
  m.add_bos = m.bos >= 0;
  m.add_eos = !template_eos.empty();
  if (m.add_eos) m.eos = id_of(r, m, template_eos, "post_processor");
  const fs::path config_path = path.parent_path() / "tokenizer_config.json";
  if (fs::exists(config_path, ec)) {
    const json config = read_json(config_path);
    const Reader c{config_path.string()};
    if (!config.is_object()) c.fail("the file", "is not a JSON object");
    if (std::string bos = config_token(c, config, "bos_token"); !bos.empty()) m.bos = id_of(c, m, bos, "bos_token");
    if (std::string eos = config_token(c, config, "eos_token"); !eos.empty()) m.eos = id_of(c, m, eos, "eos_token");
    if (std::string pad = config_token(c, config, "pad_token"); !pad.empty()) m.pad = id_of(c, m, pad, "pad_token");
    if (m.unk < 0)
      if (std::string unk = config_token(c, config, "unk_token"); !unk.empty()) m.unk = id_of(c, m, unk, "unk_token");
    m.add_bos = c.boolean(config, "add_bos_token", m.add_bos, "the file");
    m.add_eos = c.boolean(config, "add_eos_token", m.add_eos, "the file");
  }
  m.finish(path.string());
  return t;
}

}  // namespace wick::llm
