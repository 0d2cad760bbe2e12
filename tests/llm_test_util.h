// Shared by the language-model tests: a small hand-built SentencePiece vocabulary as GGUF
// metadata, its ids worked out in test_llm_tokenizer.cpp.
#pragma once

#include <string>
#include <vector>

#include "llm/spm_vocab.h"
#include "wick/io.h"

namespace wick::testing {

// 0 <unk>, 1 <s>, 2 </s>, 3 + b the byte tokens <0xbb>, then these pieces from 259 on.
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

inline GgufMetadata spm_metadata() { return spm_metadata(kSpmPieces); }

}  // namespace wick::testing
