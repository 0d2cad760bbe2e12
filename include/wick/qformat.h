// The GGML block formats: their table, ids and sizes (no tensor types, so that device code can
// include it). QTensor and the quantized ops are in wick/quant.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace wick {

// The formats: X(Enum, "name", ggml type id, elements per block, bytes per block).
// The ids are ggml's `enum ggml_type` values, which GGUF files store.
#define WICK_QFORMATS(X)            \
  X(Q4_0, "q4_0", 2, 32, 18)        \
  X(Q4_1, "q4_1", 3, 32, 20)        \
  X(Q5_0, "q5_0", 6, 32, 22)        \
  X(Q5_1, "q5_1", 7, 32, 24)        \
  X(Q8_0, "q8_0", 8, 32, 34)        \
  X(Q8_1, "q8_1", 9, 32, 36)        \
  X(Q2_K, "q2_k", 10, 256, 84)      \
  X(Q3_K, "q3_k", 11, 256, 110)     \
  X(Q4_K, "q4_k", 12, 256, 144)     \
  X(Q5_K, "q5_k", 13, 256, 176)     \
  X(Q6_K, "q6_k", 14, 256, 210)     \
  X(Q8_K, "q8_k", 15, 256, 292)     \
  X(IQ4_NL, "iq4_nl", 20, 32, 18)   \
  X(IQ4_XS, "iq4_xs", 23, 256, 136) \
  X(MXFP4, "mxfp4", 39, 32, 17)

enum class QFormat : uint8_t {
#define WICK_X(e, name, id, elems, bytes) e,
  WICK_QFORMATS(WICK_X)
#undef WICK_X
};

struct QFormatInfo {
  std::string_view name;
  uint32_t ggml_type;
  int64_t block_elems;
  int64_t block_bytes;
};

inline constexpr QFormatInfo kQFormatInfo[] = {
#define WICK_X(e, name, id, elems, bytes) {name, id, elems, bytes},
    WICK_QFORMATS(WICK_X)
#undef WICK_X
};
inline constexpr int kNumQFormats = sizeof(kQFormatInfo) / sizeof(kQFormatInfo[0]);
inline constexpr QFormat kAllQFormats[] = {
#define WICK_X(e, name, id, elems, bytes) QFormat::e,
    WICK_QFORMATS(WICK_X)
#undef WICK_X
};

inline constexpr const QFormatInfo& qformat_info(QFormat f) { return kQFormatInfo[static_cast<int>(f)]; }
inline constexpr std::string_view qformat_name(QFormat f) { return qformat_info(f).name; }
// The format of a ggml type id, or nullopt for an id that is not a block format wick knows.
std::optional<QFormat> qformat_from_ggml(uint32_t ggml_type);
// The format named `name` ("q4_k", case-insensitive); throws DTypeError for an unknown name.
QFormat qformat_from_name(std::string_view name);

}  // namespace wick
