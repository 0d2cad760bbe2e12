// Shared by the language-model tests: typed-error checks and a small hand-built SentencePiece
// vocabulary as GGUF metadata.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "wick/io.h"

namespace wick::testing {

inline const std::string kSp = "\xe2\x96\x81";  // U+2581, SentencePiece's space

// f() must throw E whose message holds every one of `parts`.
template <class E, class F>
void expect_error(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

inline std::string byte_token(int b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "<0x%02X>", b);
  return buf;
}

// ---- a SentencePiece vocabulary ----------------------------------------------------------------
// 0 <unk>, 1 <s>, 2 </s>, 3 + b the byte tokens <0xbb>, then these pieces from 259 on.
struct Piece {
  std::string text;
  float score;
  int32_t type;
};
inline const std::vector<Piece> kSpmPieces = {
    {kSp, -100, 1},          // 259
    {"h", -100, 1},          // 260
    {"e", -100, 1},          // 261
    {"l", -100, 1},          // 262
    {"o", -100, 1},          // 263
    {"w", -100, 1},          // 264
    {"r", -100, 1},          // 265
    {"d", -100, 1},          // 266
    {"he", -1, 1},           // 267
    {"ll", -2, 1},           // 268
    {kSp + "h", -3, 1},      // 269
    {"llo", -4, 1},          // 270
    {kSp + "he", -5, 1},     // 271
    {"hello", -6, 1},        // 272
    {kSp + "hello", -7, 1},  // 273
    {"or", -1, 1},           // 274
    {kSp + "w", -8, 1},      // 275
    {"ld", -9, 1},           // 276
    {"<tool>", 0, 4},        // 277, user-defined
    {"\xc3\xa9", -100, 1},   // 278, e acute
};
inline constexpr int32_t kSpmVocab = 279;

inline GgufMetadata spm_metadata() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) tokens.push_back(byte_token(b)), scores.push_back(0), types.push_back(6);
  for (const Piece& p : kSpmPieces) tokens.push_back(p.text), scores.push_back(p.score), types.push_back(p.type);
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
