// libFuzzer target: the tokenizers (src/llm/tokenizer*.cpp). The first byte picks what the rest is:
//   0: text for a SentencePiece-style tokenizer (byte fallback, space prefix), encoded with and
//      without special-token parsing; the ids decoded back must give the text again;
//   1: the same for a byte-level BPE tokenizer with the Llama 3 pre-tokenizer split;
//   2: a tokenizer.json (untrusted, as a downloaded checkpoint's is), read and, if it parses,
//      used to encode a fixed text and decode ids of every value.
// Any exception but wick::Error, and any sanitizer report, is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fuzz_touch.h"
#include "llm/spm_vocab.h"
#include "wick/io.h"
#include "wick/llm.h"

namespace {

using wick::GgufMetadata;
using wick::GgufValue;
using wick::llm::Tokenizer;

// A SentencePiece vocabulary (tests/llm/spm_vocab.h) with pieces over U+2581 and a few scores.
Tokenizer spm() {
  using wick::testing::kSp;
  std::vector<wick::testing::Piece> pieces;
  for (const std::string& p :
       std::vector<std::string>{kSp, kSp + "t", "h", "e", kSp + "th", "the", kSp + "the", "in", "g", "ing", "\xc3\xa9"})
    pieces.push_back({p, -static_cast<float>(pieces.size() % 17), 1});
  return Tokenizer::from_gguf(wick::testing::spm_metadata(pieces));
}

// UTF-8 of a code point below 0x800.
std::string utf8(uint32_t cp) {
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
}

// The 256 byte symbols of GPT-2's byte-level vocabularies (printable bytes stand for themselves,
// the rest for U+0100 on), a few merges over them, and two special tokens.
Tokenizer bpe() {
  std::vector<std::string> tokens;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    tokens.push_back(utf8(printable ? b : next++));
  }
  const std::string space = utf8(0x120);  // the symbol of ' '
  std::vector<std::string> merges = {space + " t", "h e", space + "t he", "i n", "in g", "1 2"};
  for (const std::string& m : merges) {
    const size_t sp = m.find(' ');
    tokens.push_back(m.substr(0, sp) + m.substr(sp + 1));
  }
  std::vector<int32_t> types(tokens.size(), 1);
  for (const char* s : {"<|begin_of_text|>", "<|eot_id|>"}) {
    tokens.push_back(s);
    types.push_back(3);
  }
  GgufMetadata md;
  md.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  md.set("tokenizer.ggml.pre", GgufValue::string("llama-bpe"));
  md.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  md.set("tokenizer.ggml.token_type", GgufValue::array(types));
  md.set("tokenizer.ggml.merges", GgufValue::strings(merges));
  md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(tokens.size() - 2)));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(tokens.size() - 1)));
  return Tokenizer::from_gguf(md);
}

void round_trip(const Tokenizer& t, const std::string& text) {
  for (bool parse_special : {false, true}) {
    const std::vector<int32_t> ids = t.encode(text, false, parse_special);
    std::string pieces;
    for (int32_t id : ids) pieces += t.piece(id);
    wick::fuzz::touch(pieces);
    // Without special tokens every byte of the text comes back (the SentencePiece tokenizer adds a
    // space in front, which decode drops), except that SentencePiece decodes a U+2581 of the text
    // as the space it stands for.
    const bool sp_in_text = text.find("\xe2\x96\x81") != std::string::npos;
    if (!parse_special && !(t.kind() == Tokenizer::Kind::Spm && sp_in_text) && t.decode(ids, false) != text)
      std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Tokenizer kSpm = spm(), kBpe = bpe();
  static const std::string kJson =
      (std::filesystem::temp_directory_path() / ("wick_fuzz_tokenizer_" + std::to_string(::getpid()) + ".json"))
          .string();
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 3) {
      case 0:
        round_trip(kSpm, rest);
        break;
      case 1:
        round_trip(kBpe, rest);
        break;
      default: {
        std::ofstream(kJson, std::ios::binary) << rest;
        const Tokenizer t = Tokenizer::from_hf(kJson);
        const std::vector<int32_t> ids = t.encode("Hello wick, 123 \xc3\xa9t\xc3\xa9 <s></s>\n", true, true);
        wick::fuzz::touch(t.decode(ids));
        for (int32_t id = 0; id < t.vocab_size() && id < 4096; ++id) wick::fuzz::touch(t.piece(id));
        break;
      }
    }
  } catch (const wick::Error&) {
  }
  return 0;
}
