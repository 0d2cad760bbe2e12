// A SentencePiece-style vocabulary as GGUF metadata, for the programs that make tokenizers and
// models of their own (tests, fuzz targets, bench models): <unk>, <s>, </s>, the 256 byte tokens,
// then the caller's pieces. Needs only wick's public headers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "wick/io.h"

namespace wick::testing {

inline const std::string kSp = "\xe2\x96\x81";  // U+2581, SentencePiece's space

inline std::string byte_token(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

struct Piece {
  std::string text;
  float score;
  int32_t type;  // tokenizer.ggml.token_type: 1 normal, 4 user-defined, ...
};

// 0 <unk>, 1 <s> (BOS), 2 </s> (EOS), 3 + b the byte token <0xbb>, then `pieces` from 259 on.
inline GgufMetadata spm_metadata(const std::vector<Piece>& pieces) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_token(b)), scores.push_back(0), types.push_back(6);
  for (const Piece& p : pieces) tokens.push_back(p.text), scores.push_back(p.score), types.push_back(p.type);
  GgufMetadata md;
  md.set("tokenizer.ggml.model", GgufValue::string("llama"));
  md.set("tokenizer.ggml.tokens", GgufValue::strings(tokens));
  md.set("tokenizer.ggml.scores", GgufValue::array(scores));
  md.set("tokenizer.ggml.token_type", GgufValue::array(types));
  md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::u32(2));
  md.set("tokenizer.ggml.unknown_token_id", GgufValue::u32(0));
  return md;
}

}  // namespace wick::testing
