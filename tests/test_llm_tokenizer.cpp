// Tokenizers: a hand-built SentencePiece vocabulary (scores, byte fallback, the space prefix) and a
// hand-built byte-level BPE (merges, the three pre-tokenizer splits), read from GGUF metadata and
// from tokenizer.json files written here (U+2581 normalizer, Metaspace, byte-level), with ids
// worked out by hand from the algorithms; round trips, special tokens, BOS / EOS, to_gguf, and the
// errors. tokenizer_interop.py compares with Hugging Face's tokenizers on trained vocabularies.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "llm_test_util.h"
#include "test_util.h"
#include "wick/error.h"
#include "wick/io.h"
#include "wick/llm.h"

namespace wick::llm {
namespace {

using Ids = std::vector<int32_t>;
using testing::byte_token;
using testing::expect_error;
using testing::kSp;
using testing::kSpmPieces;
using testing::kSpmVocab;
using testing::spm_metadata;
using testing::TempDir;

TEST(LlmTokenizer, SpmMergesByScore) {
  const Tokenizer t = Tokenizer::from_gguf(spm_metadata());
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Spm);
  EXPECT_EQ(t.vocab_size(), kSpmVocab);
  EXPECT_EQ(t.bos(), 1);
  EXPECT_EQ(t.eos(), 2);
  // "hello" -> "▁hello" = ▁ h e l l o. Pairs in the vocabulary: ▁h -3, he -1, ll -2. Highest
  // first: he -> (▁,he) -5; ll -> (ll,o) -4; ▁h is stale (h is gone); llo -> (he,llo) -6;
  // ▁he -> (▁he,llo) -7; hello is stale (he is gone); ▁hello. One token, 273.
  EXPECT_EQ(t.encode("hello", false), (Ids{273}));
  // add_bos defaults to true for SPM, add_eos to false.
  EXPECT_EQ(t.encode("hello"), (Ids{1, 273}));
  // "▁hello▁world": he (-1, left 1) and or (-1, left 8) tie: the left one first, then or; ll;
  // llo; ▁he; ▁hello; ▁w -8; ld -9. ▁hello ▁w or ld.
  EXPECT_EQ(t.encode("hello world", false), (Ids{273, 275, 274, 276}));
  // "▁lll": (l,l) at 1 and at 2 tie at -2: the leftmost merges, leaving ▁ ll l.
  EXPECT_EQ(t.encode("lll", false), (Ids{259, 268, 262}));
  // No prefix space without add_space_prefix: h e l l o ends as "hello", 272.
  GgufMetadata md = spm_metadata();
  md.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  EXPECT_EQ(Tokenizer::from_gguf(md).encode("hello", false), (Ids{272}));
}

TEST(LlmTokenizer, SpmByteFallback) {
  const Tokenizer t = Tokenizer::from_gguf(spm_metadata());
  // "▁hü!": ▁h merges; ü (C3 BC) and ! are not pieces: byte tokens 3 + 0xC3, 3 + 0xBC, 3 + 0x21.
  EXPECT_EQ(t.encode("h\xc3\xbc!", false), (Ids{269, 3 + 0xC3, 3 + 0xBC, 3 + 0x21}));
  // é is a piece; a b are not: "▁a▁é" -> ▁ <0x61> ▁ é.
  EXPECT_EQ(t.encode("a \xc3\xa9", false), (Ids{259, 3 + 'a', 259, 278}));
  // Bytes that are not UTF-8 fall back one by one and decode back to themselves.
  const std::string bad = "\xff\xc3 \xe2\x96";
  const Ids ids = t.encode(bad, false);
  EXPECT_EQ(ids, (Ids{259, 3 + 0xFF, 3 + 0xC3, 259, 3 + 0xE2, 3 + 0x96}));
  EXPECT_EQ(t.decode(ids), bad);
}

TEST(LlmTokenizer, SpmDecodeAndPieces) {
  const Tokenizer t = Tokenizer::from_gguf(spm_metadata());
  // Pieces " hello", " w", "or", "ld": the encoder's leading space is dropped.
  EXPECT_EQ(t.decode(Ids{1, 273, 275, 274, 276, 2}), "hello world");
  EXPECT_EQ(t.decode(Ids{1, 273, 275, 274, 276, 2}, false), "<s> hello world</s>");
  EXPECT_EQ(t.decode(Ids{269, 3 + 0xC3, 3 + 0xBC, 3 + 0x21}), "h\xc3\xbc!");
  EXPECT_EQ(t.decode(Ids{3 + 0xC3}), "\xc3");  // half a character passes through as a byte
  EXPECT_EQ(t.piece(273), " hello");
  EXPECT_EQ(t.piece(3 + 0x21), "!");
  EXPECT_EQ(t.piece(1), "<s>");
  EXPECT_EQ(t.piece(277), "<tool>");
  EXPECT_EQ(t.token(273), kSp + "hello");
  EXPECT_EQ(t.find(kSp + "w"), std::optional<int32_t>(275));
  EXPECT_EQ(t.find("nope"), std::nullopt);
  EXPECT_TRUE(t.is_special(0) && t.is_special(1) && t.is_special(2));
  EXPECT_FALSE(t.is_special(273) || t.is_special(277) || t.is_special(3));
  EXPECT_TRUE(t.is_end_of_generation(2));
  EXPECT_FALSE(t.is_end_of_generation(1) || t.is_end_of_generation(273));
  for (const std::string s : {"hello world", "  two  spaces ", "h\xc3\xbc! \xc3\xa9", "lll\nx\t"}) {
    const Ids ids = t.encode(s, false);
    EXPECT_EQ(t.decode(ids), s);
    std::string joined;
    for (int32_t id : ids) joined += t.piece(id);
    EXPECT_EQ(joined, " " + s);  // pieces keep the space the encoder added
  }
}

TEST(LlmTokenizer, SpmSpecialTokens) {
  const Tokenizer t = Tokenizer::from_gguf(spm_metadata());
  // <s> and </s> split the text; each text piece gets the space prefix, as in llama.cpp.
  EXPECT_EQ(t.encode("<s>hello</s>"), (Ids{1, 1, 273, 2}));
  // Unparsed, they are text: ▁ < s > hello < / s > (he, ll, llo, hello merge; the rest bytes).
  EXPECT_EQ(t.encode("<s>hello</s>", true, false),
            (Ids{1, 259, 3 + '<', 3 + 's', 3 + '>', 272, 3 + '<', 3 + '/', 3 + 's', 3 + '>'}));
  // A user-defined token is matched even without parse_special.
  const Ids tool = {259, 3 + 'a', 277, 259, 3 + 'b'};
  EXPECT_EQ(t.encode("a<tool>b", false, false), tool);
  EXPECT_EQ(t.encode("a<tool>b", false, true), tool);
  EXPECT_EQ(t.encode("", true), (Ids{1}));
  EXPECT_EQ(t.encode("", false), (Ids{}));
  GgufMetadata md = spm_metadata();
  md.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  md.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(true));
  EXPECT_EQ(Tokenizer::from_gguf(md).encode("hello"), (Ids{273, 2}));
}

TEST(LlmTokenizer, SpmMergesByRankWithGgufMerges) {
  // Note [SPM merge order]: with tokenizer.ggml.merges, only the listed pairs merge, by rank.
  // "▁hello": (l,l) rank 0, then (▁,h) rank 1; (▁h,e) is not listed: ▁h e ll o.
  GgufMetadata md = spm_metadata();
  md.set("tokenizer.ggml.merges", GgufValue::strings({"l l", kSp + " h"}));
  const Tokenizer t = Tokenizer::from_gguf(md);
  EXPECT_EQ(t.encode("hello", false), (Ids{269, 261, 268, 263}));
  GgufMetadata out;
  t.to_gguf(out);
  EXPECT_EQ(Tokenizer::from_gguf(out).encode("hello", false), (Ids{269, 261, 268, 263}));
}

// ---- a byte-level BPE --------------------------------------------------------------------------

// GPT-2's byte-to-unicode map, written out here: printable bytes stand for themselves, the other
// 68 for U+0100, U+0101, ... in byte order.
std::string symbol(int b) {
  int cp = b, next = 256;
  const auto printable = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || x >= 174; };
  if (!printable(b)) {
    for (int x = 0; x < b; ++x) next += !printable(x);
    cp = next;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | cp >> 6));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}
const std::string kG = "\xc4\xa0";  // Ġ, the symbol of the space byte

// Ids 0-255: the byte symbols (id = byte); then these tokens.
const std::vector<std::pair<std::string, int32_t>> kBpeTokens = {
    {kG + "t", 1},         // 256
    {"he", 1},             // 257
    {kG + "the", 1},       // 258
    {"bc", 1},             // 259
    {"ab", 1},             // 260
    {"bcd", 1},            // 261
    {"abc", 1},            // 262
    {"<|endoftext|>", 3},  // 263
    {"<|im_end|>", 3},     // 264
    {kG + "cat", 1},       // 265: no merge makes it (only ignore_merges finds it)
    {"34", 1},             // 266
    {"<tool>", 4},         // 267
    {"'S", 1},             // 268
};
const std::vector<std::string> kBpeMerges = {kG + " t", "h e", kG + "t he", "b c", "a b", "bc d", "a bc", "3 4", "' S"};

GgufMetadata bpe_metadata(const std::string& pre) {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (int b = 0; b < 256; ++b) tokens.push_back(symbol(b)), types.push_back(1);
  for (const auto& [text, type] : kBpeTokens) tokens.push_back(text), types.push_back(type);
  GgufMetadata md;
  md.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  if (!pre.empty()) md.set("tokenizer.ggml.pre", GgufValue::string(pre));
  md.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  md.set("tokenizer.ggml.token_type", GgufValue::array(types));
  md.set("tokenizer.ggml.merges", GgufValue::strings(kBpeMerges));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::u32(263));
  return md;
}

TEST(LlmTokenizer, BpeMergesByRank) {
  const Tokenizer t = Tokenizer::from_gguf(bpe_metadata("gpt2"));
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Bpe);
  EXPECT_EQ(t.bos(), -1);
  // The GPT-2 split: "the", " cat". t h e: only (h,e) rank 1 -> t he. Ġ c a t: no merges.
  EXPECT_EQ(t.encode("the cat"), (Ids{'t', 257, ' ', 'c', 'a', 't'}));
  // Ġ t h e: (Ġ,t) rank 0, (h,e) rank 1, then (Ġt,he) rank 2: one token.
  EXPECT_EQ(t.encode(" the"), (Ids{258}));
  // a b c d: (b,c) rank 3 first; the queued (a,b) rank 4 is now (a,bc), rank 6: stale, skipped;
  // (bc,d) rank 5 -> a bcd. Merging (a,bc) at rank 4's turn would give abc d.
  EXPECT_EQ(t.encode("abcd"), (Ids{'a', 261}));
  EXPECT_EQ(t.encode("abc"), (Ids{262}));
  // The split keeps digits together: 1 2 3 4 5 with (3,4) merged.
  EXPECT_EQ(t.encode("12345"), (Ids{'1', '2', 266, '5'}));
  // Contractions split off: "I" "'m" " don" "'t".
  EXPECT_EQ(t.encode("I'm don't"), (Ids{'I', '\'', 'm', ' ', 'd', 'o', 'n', '\'', 't'}));
  // Bytes of é (C3 A9) as their symbols, ids 0xC3 and 0xA9.
  EXPECT_EQ(t.encode("\xc3\xa9"), (Ids{0xC3, 0xA9}));
  // No ignore_merges: " cat" does not become 265.
  EXPECT_EQ(t.encode(" cat"), (Ids{' ', 'c', 'a', 't'}));
}

TEST(LlmTokenizer, BpePreTokenizers) {
  const Tokenizer llama3 = Tokenizer::from_gguf(bpe_metadata("llama-bpe"));
  const Tokenizer qwen2 = Tokenizer::from_gguf(bpe_metadata("qwen2"));
  const Tokenizer dflt = Tokenizer::from_gguf(bpe_metadata(""));
  // Llama 3: digits in threes ("123", "45": no (3,4) pair); Qwen2: one digit at a time.
  EXPECT_EQ(llama3.encode("12345"), (Ids{'1', '2', '3', '4', '5'}));
  EXPECT_EQ(qwen2.encode("12345"), (Ids{'1', '2', '3', '4', '5'}));
  EXPECT_EQ(llama3.encode("2345"), (Ids{'2', 266, '5'}));
  EXPECT_EQ(qwen2.encode("2345"), (Ids{'2', '3', '4', '5'}));
  EXPECT_EQ(dflt.encode("2345"), (Ids{'2', 266, '5'}));
  // Llama 3 takes a word that is a token whole (ignore_merges): " cat" is 265.
  EXPECT_EQ(llama3.encode(" cat"), (Ids{265}));
  EXPECT_EQ(qwen2.encode(" cat"), (Ids{' ', 'c', 'a', 't'}));
  // Llama 3's and Qwen2's contractions ignore case, GPT-2's do not: "'S" is one piece in the
  // first two (where (',S) merges), "'" and "S" in GPT-2's.
  EXPECT_EQ(llama3.encode("it'S"), (Ids{'i', 't', 268}));
  EXPECT_EQ(qwen2.encode("it'S"), (Ids{'i', 't', 268}));
  EXPECT_EQ(dflt.encode("it'S"), (Ids{'i', 't', '\'', 'S'}));
}

TEST(LlmTokenizer, BpeSpecialTokensAndBos) {
  GgufMetadata md = bpe_metadata("llama-bpe");
  md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(264));
  const Tokenizer t = Tokenizer::from_gguf(md);
  // llama-bpe adds BOS by default.
  EXPECT_EQ(t.encode(" the"), (Ids{264, 258}));
  EXPECT_EQ(t.encode(" the", false), (Ids{258}));
  md.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  EXPECT_EQ(Tokenizer::from_gguf(md).encode(" the"), (Ids{258}));

  const Tokenizer g = Tokenizer::from_gguf(bpe_metadata("gpt2"));
  EXPECT_EQ(g.encode("<|endoftext|> the"), (Ids{263, 258}));
  EXPECT_EQ(g.encode("x<|im_end|><|endoftext|>"), (Ids{'x', 264, 263}));
  // Unparsed: "<|" "endoftext" "|>" " the".
  EXPECT_EQ(g.encode("<|endoftext|> the", true, false),
            (Ids{'<', '|', 'e', 'n', 'd', 'o', 'f', 't', 'e', 'x', 't', '|', '>', 258}));
  EXPECT_EQ(g.encode("a<tool>b", true, false), (Ids{'a', 267, 'b'}));
  EXPECT_EQ(g.decode(Ids{263, 258}), " the");
  EXPECT_EQ(g.decode(Ids{263, 258}, false), "<|endoftext|> the");
  EXPECT_EQ(g.decode(Ids{'a', 267, 'b'}), "a<tool>b");
  EXPECT_EQ(g.decode(Ids{0xC3}), "\xc3");
  EXPECT_EQ(g.piece(' '), " ");
  EXPECT_EQ(g.piece(258), " the");
  EXPECT_EQ(g.token(' '), kG);
  EXPECT_TRUE(g.is_end_of_generation(263));  // eos
  EXPECT_TRUE(g.is_end_of_generation(264));  // <|im_end|>, by its text
  EXPECT_FALSE(g.is_end_of_generation(258));
  EXPECT_TRUE(g.is_special(264));
  EXPECT_FALSE(g.is_special(267));
  for (const std::string s : {"the cat sat", " x  y\n\n\tz ", "\xff\xfe\x80 mixed \xe6\x97\xa5\xe6\x9c\xac", ""}) {
    const Ids ids = g.encode(s, false, false);
    EXPECT_EQ(g.decode(ids, false), s);
    std::string joined;
    for (int32_t id : ids) joined += g.piece(id);
    EXPECT_EQ(joined, s);
  }
}

TEST(LlmTokenizer, ToGgufRoundTrip) {
  const std::vector<std::string> texts = {"hello world", "<s>hello</s> a<tool>b", "h\xc3\xbc! \xc3\xa9",
                                          "\xff",        " the cat 12345 abcd",   "<|endoftext|>I'm\n\n"};
  for (const GgufMetadata& md :
       {spm_metadata(), bpe_metadata("gpt2"), bpe_metadata("llama-bpe"), bpe_metadata("qwen2")}) {
    const Tokenizer a = Tokenizer::from_gguf(md);
    GgufMetadata out;
    out.set("general.architecture", GgufValue::string("llama"));
    a.to_gguf(out);
    const Tokenizer b = Tokenizer::from_gguf(out);
    EXPECT_EQ(out.get("tokenizer.ggml.model").as_string(), md.get("tokenizer.ggml.model").as_string());
    EXPECT_EQ(b.vocab_size(), a.vocab_size());
    EXPECT_EQ(b.bos(), a.bos());
    EXPECT_EQ(b.eos(), a.eos());
    for (const std::string& s : texts)
      for (bool parse : {true, false}) EXPECT_EQ(b.encode(s, true, parse), a.encode(s, true, parse)) << s;
    for (int32_t id = 0; id < a.vocab_size(); ++id) {
      EXPECT_EQ(b.piece(id), a.piece(id));
      EXPECT_EQ(b.is_special(id), a.is_special(id));
      EXPECT_EQ(b.is_end_of_generation(id), a.is_end_of_generation(id));
    }
  }
}

TEST(LlmTokenizer, CopyMoveAndThreads) {
  const Tokenizer a = Tokenizer::from_gguf(bpe_metadata("llama-bpe"));
  Tokenizer b = a;
  Tokenizer c = std::move(b);
  EXPECT_EQ(c.encode(" the cat"), a.encode(" the cat"));
  Tokenizer d;
  EXPECT_EQ(d.vocab_size(), 0);
  EXPECT_EQ(d.encode("anything"), (Ids{}));
  d = c;
  EXPECT_EQ(d.encode("abcd"), (Ids{'a', 261}));
  // One tokenizer, many threads: encode is const and caches nothing.
  const std::string text = "the cat 12345 abcd <|endoftext|> I'm \xc3\xa9\xe6\x97\xa5 \n\n x";
  const Ids want = a.encode(text);
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int i = 0; i < 200; ++i) bad[static_cast<size_t>(k)] += a.encode(text) != want;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad, (std::vector<int>{0, 0, 0, 0}));
}

TEST(LlmTokenizer, IdErrors) {
  const Tokenizer t = Tokenizer::from_gguf(spm_metadata());
  expect_error<IndexError>([&] { t.decode(Ids{1, kSpmVocab}); }, {"token id 279", "vocabulary of 279 tokens"});
  expect_error<IndexError>([&] { t.piece(-1); }, {"token id -1"});
  expect_error<IndexError>([&] { t.token(kSpmVocab); }, {"token id 279"});
  EXPECT_FALSE(t.is_special(kSpmVocab));
  EXPECT_FALSE(t.is_end_of_generation(-1));
}

TEST(LlmTokenizer, GgufErrors) {
  auto with = [](GgufMetadata md, const std::string& key, GgufValue v) {
    md.set(key, std::move(v));
    return md;
  };
  auto without = [](GgufMetadata md, const std::string& key) {
    md.erase(key);
    return md;
  };
  auto load = [](const GgufMetadata& md) { return [md] { Tokenizer::from_gguf(md); }; };
  const GgufMetadata spm = spm_metadata(), bpe = bpe_metadata("gpt2");
  expect_error<FormatError>(load(without(spm, "tokenizer.ggml.model")), {"tokenizer.ggml.model"});
  expect_error<FormatError>(load(without(spm, "tokenizer.ggml.tokens")), {"tokenizer.ggml.tokens"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.model", GgufValue::string("bert"))),
                            {"tokenizer.ggml.model", "'bert'"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.bos_token_id", GgufValue::u32(279))),
                            {"tokenizer.ggml.bos_token_id", "279", "279 tokens"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.eot_token_id", GgufValue::i32(-2))),
                            {"tokenizer.ggml.eot_token_id", "-2"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.scores", GgufValue::array(std::vector<float>{1, 2}))),
                            {"tokenizer.ggml.scores", "2 values for 279 tokens"});
  std::vector<int32_t> types(kSpmVocab, 1);
  types[5] = 9;
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.token_type", GgufValue::array(types))),
                            {"tokenizer.ggml.token_type[5]", "9"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.tokens", GgufValue::strings({}))),
                            {"tokenizer.ggml.tokens"});
  expect_error<FormatError>(load(with(spm, "tokenizer.ggml.bos_token_id", GgufValue::string("1"))),
                            {"tokenizer.ggml.bos_token_id"});
  expect_error<FormatError>(load(with(bpe, "tokenizer.ggml.pre", GgufValue::string("foo"))),
                            {"tokenizer.ggml.pre", "'foo'"});
  expect_error<FormatError>(load(without(bpe, "tokenizer.ggml.merges")), {"tokenizer.ggml.merges"});
  expect_error<FormatError>(load(with(bpe, "tokenizer.ggml.merges", GgufValue::strings({"h e", "a zz"}))),
                            {"tokenizer.ggml.merges[1]", "'zz'"});
  expect_error<FormatError>(load(with(bpe, "tokenizer.ggml.merges", GgufValue::strings({"abc"}))),
                            {"tokenizer.ggml.merges[0]", "two tokens"});
  expect_error<FormatError>(load(with(bpe, "tokenizer.ggml.merges", GgufValue::strings({"c a"}))),
                            {"tokenizer.ggml.merges[0]", "not in the vocabulary"});
}

// ---- tokenizer.json ----------------------------------------------------------------------------

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string quote(const std::string& s) {  // a JSON string of UTF-8 text without control characters
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// Llama 2 style: the U+2581 normalizer, byte fallback, merges by rank.
std::string llama2_json(const std::string& merges) {
  std::string vocab = "\"<unk>\": 0, \"<s>\": 1, \"</s>\": 2";
  for (int b = 0; b < 256; ++b) vocab += ", " + quote(byte_token(b)) + ": " + std::to_string(3 + b);
  const std::vector<std::string> pieces = {kSp,  "h",       "e",        "l",   "o",     "he",
                                           "ll", kSp + "h", kSp + "he", "llo", "hello", kSp + "hello"};
  for (size_t i = 0; i < pieces.size(); ++i) vocab += ", " + quote(pieces[i]) + ": " + std::to_string(259 + i);
  const std::string added =
      R"([{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
      {"id": 2, "content": "</s>", "special": true}, {"id": 271, "content": "<tool>", "special": false}])";
  return R"({"version": "1.0", "added_tokens": )" + added + R"(,
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": ")" +
         kSp + R"("},
      {"type": "Replace", "pattern": {"String": " "}, "content": ")" +
         kSp + R"("}]},
    "pre_tokenizer": null,
    "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
      {"Sequence": {"id": "A", "type_id": 0}}], "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1],
      "tokens": ["<s>"]}}},
    "decoder": null,
    "model": {"type": "BPE", "dropout": null, "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
      "vocab": {)" +
         vocab + "}, \"merges\": " + merges + "}}";
}

TEST(LlmTokenizer, HfSentencePieceStyle) {
  TempDir dir("tok_hf_spm");
  // Ranks: 0 (l,l), 1 (h,e), 2 (▁,he), 3 (ll,o), 4 (▁he,llo), 5 (▁,h). "▁hello": ll; he;
  // (▁,he) rank 2 before (ll,o) rank 3; then (▁he,llo): one token, 270. (▁,h) never comes.
  const std::string merges =
      "[\"l l\", [\"h\", \"e\"], \"" + kSp + " he\", \"ll o\", \"" + kSp + "he llo\", \"" + kSp + " h\"]";
  write(dir / "tokenizer.json", llama2_json(merges));
  const Tokenizer t = Tokenizer::from_hf(dir.path().string());
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Spm);
  EXPECT_EQ(t.vocab_size(), 272);
  EXPECT_EQ(t.bos(), 1);   // from the post-processor
  EXPECT_EQ(t.eos(), -1);  // none without tokenizer_config.json
  EXPECT_EQ(t.encode("hello"), (Ids{1, 270}));
  // "▁hi": i is not a piece: <0x69>. (▁,h) rank 5 merges.
  EXPECT_EQ(t.encode("hi", false), (Ids{266, 3 + 'i'}));
  EXPECT_EQ(t.encode("<s>hello<tool>", false), (Ids{1, 270, 271}));
  EXPECT_EQ(t.decode(Ids{1, 270, 3 + 'i'}), "helloi");
  EXPECT_TRUE(t.is_special(0));  // <unk>
  // tokenizer_config.json sets eos and add_eos_token.
  write(dir / "tokenizer_config.json",
        R"({"add_bos_token": true, "add_eos_token": true, "bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  const Tokenizer c = Tokenizer::from_hf((dir / "tokenizer.json"));
  EXPECT_EQ(c.eos(), 2);
  EXPECT_EQ(c.encode("hello"), (Ids{1, 270, 2}));
  // to_gguf keeps the merges (and scores in their order): the GGUF tokenizer encodes the same.
  GgufMetadata md;
  c.to_gguf(md);
  EXPECT_EQ(md.get("tokenizer.ggml.merges").size(), 6u);
  const Tokenizer g = Tokenizer::from_gguf(md);
  for (const std::string s : {"hello", "hi hello", "<s>x</s>", "\xe6\x97\xa5 h e"}) EXPECT_EQ(g.encode(s), c.encode(s));
  EXPECT_EQ(g.decode(c.encode("hi hello")), "hi hello");
}

TEST(LlmTokenizer, HfMetaspace) {
  // transformers' non-legacy Llama conversion: no normalizer, Metaspace with prepend_scheme first.
  TempDir dir("tok_hf_meta");
  const std::string merges =
      "[\"l l\", [\"h\", \"e\"], \"" + kSp + " he\", \"ll o\", \"" + kSp + "he llo\", \"" + kSp + " h\"]";
  std::string j = llama2_json(merges);
  const size_t a = j.find("\"normalizer\""), b = j.find("\"post_processor\"");
  j.replace(a, b - a,
            R"("normalizer": null, "pre_tokenizer": {"type": "Metaspace", "replacement": ")" + kSp +
                R"(", "prepend_scheme": "first", "split": false}, )");
  write(dir / "tokenizer.json", j);
  const Tokenizer t = Tokenizer::from_hf(dir.path().string());
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Spm);
  EXPECT_EQ(t.encode("hello", false), (Ids{270}));   // "▁hello"
  EXPECT_EQ(t.encode(" hello", false), (Ids{270}));  // no second "▁" in front of a space
  // Only the start of the text gets the prefix: after <s>, h e l l o -> he llo ((he,llo) is no merge).
  EXPECT_EQ(t.encode("<s>hello", false), (Ids{1, 264, 268}));
  EXPECT_EQ(t.decode(Ids{1, 270}), "hello");
  GgufMetadata md;
  expect_error<UnsupportedError>([&] { t.to_gguf(md); }, {"Metaspace"});
}

std::string qwen_json(const std::string& extra_model = "") {
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += (b ? ", " : "") + quote(symbol(b)) + ": " + std::to_string(b);
  for (size_t i = 0; i < kBpeTokens.size(); ++i)
    if (kBpeTokens[i].second == 1) vocab += ", " + quote(kBpeTokens[i].first) + ": " + std::to_string(256 + i);
  std::string merges;
  for (size_t i = 0; i < kBpeMerges.size(); ++i) {
    const std::string& m = kBpeMerges[i];
    const size_t sp = m.find(' ');
    merges += (i ? ", [" : "[") + quote(m.substr(0, sp)) + ", " + quote(m.substr(sp + 1)) + "]";
  }
  const std::string regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+)";
  return R"({"added_tokens": [{"id": 263, "content": "<|endoftext|>", "special": true},
      {"id": 264, "content": "<|im_end|>", "special": true}, {"id": 267, "content": "<tool>", "special": false}],
    "normalizer": {"type": "NFC"},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": ")" +
         regex + R"("}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}]},
    "post_processor": {"type": "ByteLevel"}, "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", )" +
         extra_model + R"("vocab": {)" + vocab + "}, \"merges\": [" + merges + "]}}";
}

TEST(LlmTokenizer, HfByteLevel) {
  TempDir dir("tok_hf_bpe");
  write(dir / "tokenizer.json", qwen_json());
  write(dir / "tokenizer_config.json", R"({"bos_token": null, "eos_token": "<|im_end|>"})");
  const Tokenizer t = Tokenizer::from_hf(dir / "tokenizer.json");
  const Tokenizer gguf = Tokenizer::from_gguf(bpe_metadata("qwen2"));
  EXPECT_EQ(t.kind(), Tokenizer::Kind::Bpe);
  EXPECT_EQ(t.bos(), -1);
  EXPECT_EQ(t.eos(), 264);
  EXPECT_TRUE(t.is_end_of_generation(263));  // <|endoftext|>, by its text
  EXPECT_EQ(t.encode(" the 2345"), (Ids{258, ' ', '2', '3', '4', '5'}));
  EXPECT_EQ(t.encode("a<tool>b<|im_end|>", true, false),
            (Ids{'a', 267, 'b', '<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>'}));
  for (const std::string s : {"the cat 12345 abcd", "<|endoftext|>it'S\n\n x", "\xc3\xa9\xe6\x97\xa5 \xf0\x9f\x98\x80"})
    EXPECT_EQ(t.encode(s), gguf.encode(s)) << s;
  GgufMetadata md;
  t.to_gguf(md);
  EXPECT_EQ(md.get("tokenizer.ggml.pre").as_string(), "qwen2");
  EXPECT_EQ(Tokenizer::from_gguf(md).encode("x 2345 abcd<|im_end|>"), t.encode("x 2345 abcd<|im_end|>"));
  // With ignore_merges, the Llama 3 regex names it llama-bpe; with the Qwen2 regex no name fits.
  write(dir / "tokenizer.json", qwen_json("\"ignore_merges\": true, "));
  const Tokenizer ig = Tokenizer::from_hf(dir.path().string());
  EXPECT_EQ(ig.encode(" cat"), (Ids{265}));
  expect_error<UnsupportedError>([&] { ig.to_gguf(md); }, {"tokenizer.ggml.pre"});
}

TEST(LlmTokenizer, HfErrors) {
  TempDir dir("tok_hf_bad");
  const std::string path = dir / "tokenizer.json";
  auto load_text = [&](const std::string& text) {
    return [&, text] {
      write(path, text);
      Tokenizer::from_hf(path);
    };
  };
  expect_error<IoError>([&] { Tokenizer::from_hf(dir / "missing.json"); }, {"missing.json"});
  expect_error<FormatError>(load_text("{\"model\": "), {"tokenizer.json", "not JSON"});
  expect_error<FormatError>(load_text(R"({"model": {"type": "WordPiece", "vocab": {}}})"), {"model.type", "WordPiece"});
  std::string j = qwen_json();
  expect_error<FormatError>(load_text(j.replace(j.find("\"NFC\""), 5, "\"Lowercase\"")), {"normalizer", "Lowercase"});
  j = qwen_json();
  expect_error<FormatError>(load_text(j.replace(j.find("\"merges\": [[") + 12, 0, "\"zz\", \"a\"], [")),
                            {"model.merges[0]", "'zz'"});
  j = qwen_json();
  expect_error<FormatError>(load_text(j.replace(j.find("\"Isolated\""), 10, "\"Removed\"")),
                            {"pre_tokenizer", "Split"});
  j = qwen_json();
  expect_error<FormatError>(load_text(j.replace(j.find("\"id\": 263"), 9, "\"id\": -4")), {"added_tokens[0]", "-4"});
  expect_error<FormatError>(load_text(qwen_json("\"dropout\": 0.1, ")), {"model.dropout"});
  write(path, qwen_json());
  write(dir / "tokenizer_config.json", R"({"bos_token": "<nope>"})");
  expect_error<FormatError>([&] { Tokenizer::from_hf(path); }, {"tokenizer_config.json", "bos_token", "<nope>"});
}

}  // namespace
}  // namespace wick::llm
