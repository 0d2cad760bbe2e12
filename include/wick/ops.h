// The op table: every op wick has, with its name and the dtypes it is defined for.
//
// This is the one place an op is declared (DESIGN principle 1). The Op enum, supports(), the rows of
// `wick check` and the op list in the README all come from it. Adding an op = a row here, a CPU
// kernel, a GPU kernel, a check case.
#pragma once

#include <cstdint>
#include <string_view>

#include "wick/device.h"
#include "wick/dtype.h"

namespace wick {

// dtype sets, as bit masks over DType
inline constexpr uint32_t dtype_bit(DType d) { return 1u << static_cast<uint32_t>(d); }
inline constexpr uint32_t kAllTypes = 0xffu;
inline constexpr uint32_t kFloatTypes = dtype_bit(DType::BF16) | dtype_bit(DType::F16) | dtype_bit(DType::F32) |
                                        dtype_bit(DType::F64) | dtype_bit(DType::F8E4M3);
inline constexpr uint32_t kSignedTypes = kFloatTypes | dtype_bit(DType::I64);

// X(enum name, printed name, dtype mask)
#define WICK_OPS(X)                                    \
  /* creation and transfer */                          \
  X(Zeros, "zeros", kAllTypes)                         \
  X(Ones, "ones", kAllTypes)                           \
  X(Full, "full", kAllTypes)                           \
  X(Arange, "arange", kAllTypes)                       \
  X(FromHost, "from_host", kAllTypes)                  \
  X(ToHost, "to_host", kAllTypes)                      \
  X(ConstSet, "const_set", kAllTypes)                  \
  X(AllocUninit, "alloc_uninit", kAllTypes)            \
  /* random */                                         \
  X(RandUniform, "rand_uniform", kFloatTypes)          \
  X(RandNormal, "rand_normal", kFloatTypes)            \
  /* elementwise with parameters */                    \
  X(Affine, "affine", kAllTypes)                       \
  X(Powf, "powf", kFloatTypes)                         \
  X(Elu, "elu", kFloatTypes)                           \
  X(Clamp, "clamp", kAllTypes)                         \
  /* unary */                                          \
  X(Exp, "exp", kFloatTypes)                           \
  X(Log, "log", kFloatTypes)                           \
  X(Sin, "sin", kFloatTypes)                           \
  X(Cos, "cos", kFloatTypes)                           \
  X(Tanh, "tanh", kFloatTypes)                         \
  X(Neg, "neg", kSignedTypes)                          \
  X(Recip, "recip", kFloatTypes)                       \
  X(Sqr, "sqr", kAllTypes)                             \
  X(Sqrt, "sqrt", kFloatTypes)                         \
  X(Abs, "abs", kAllTypes)                             \
  X(Ceil, "ceil", kAllTypes)                           \
  X(Floor, "floor", kAllTypes)                         \
  X(Round, "round", kAllTypes)                         \
  X(Sign, "sign", kAllTypes)                           \
  X(Relu, "relu", kAllTypes)                           \
  X(Gelu, "gelu", kFloatTypes)                         \
  X(GeluErf, "gelu_erf", kFloatTypes)                  \
  X(Erf, "erf", kFloatTypes)                           \
  X(Silu, "silu", kFloatTypes)                         \
  X(Sigmoid, "sigmoid", kFloatTypes)                   \
  /* binary, numpy broadcasting */                     \
  X(Add, "add", kAllTypes)                             \
  X(Sub, "sub", kAllTypes)                             \
  X(Mul, "mul", kAllTypes)                             \
  X(Div, "div", kAllTypes)                             \
  X(Maximum, "maximum", kAllTypes)                     \
  X(Minimum, "minimum", kAllTypes)                     \
  X(Pow, "pow", kFloatTypes)                           \
  /* comparisons, u8 result */                         \
  X(Eq, "eq", kAllTypes)                               \
  X(Ne, "ne", kAllTypes)                               \
  X(Lt, "lt", kAllTypes)                               \
  X(Le, "le", kAllTypes)                               \
  X(Gt, "gt", kAllTypes)                               \
  X(Ge, "ge", kAllTypes)                               \
  X(WhereCond, "where_cond", kAllTypes)                \
  X(ToDType, "to_dtype", kAllTypes)                    \
  /* reductions and normalisation */                   \
  X(Sum, "sum", kAllTypes)                             \
  X(Mean, "mean", kFloatTypes)                         \
  X(Min, "min", kAllTypes)                             \
  X(Max, "max", kAllTypes)                             \
  X(ArgMin, "argmin", kAllTypes)                       \
  X(ArgMax, "argmax", kAllTypes)                       \
  X(Softmax, "softmax", kFloatTypes)                   \
  X(LogSoftmax, "log_softmax", kFloatTypes)            \
  X(RmsNorm, "rms_norm", kFloatTypes)                  \
  X(LayerNorm, "layer_norm", kFloatTypes)              \
  X(Cumsum, "cumsum", kAllTypes)                       \
  X(Sort, "sort", kAllTypes)                           \
  X(Argsort, "argsort", kAllTypes)                     \
  /* indexing */                                       \
  X(IndexSelect, "index_select", kAllTypes)            \
  X(Gather, "gather", kAllTypes)                       \
  X(Scatter, "scatter", kAllTypes)                     \
  X(ScatterAdd, "scatter_add", kAllTypes)              \
  X(IndexAdd, "index_add", kAllTypes)                  \
  /* copies */                                         \
  X(CopyStrided, "copy_strided", kAllTypes)            \
  X(Copy2d, "copy2d", kAllTypes)                       \
  X(Cat, "cat", kAllTypes)                             \
  /* matmul, conv, pooling, resampling */              \
  X(Matmul, "matmul", kFloatTypes)                     \
  X(Conv1d, "conv1d", kFloatTypes)                     \
  X(Conv2d, "conv2d", kFloatTypes)                     \
  X(ConvTranspose1d, "conv_transpose1d", kFloatTypes)  \
  X(ConvTranspose2d, "conv_transpose2d", kFloatTypes)  \
  X(AvgPool2d, "avg_pool2d", kFloatTypes)              \
  X(MaxPool2d, "max_pool2d", kAllTypes)                \
  X(UpsampleNearest1d, "upsample_nearest1d", kAllTypes) \
  X(UpsampleNearest2d, "upsample_nearest2d", kAllTypes) \
  X(UpsampleBilinear2d, "upsample_bilinear2d", kFloatTypes) \
  /* positional embeddings */                          \
  X(Rope, "rope", kFloatTypes)                         \
  X(RopeI, "rope_i", kFloatTypes)

enum class Op : uint16_t {
#define WICK_X(name, str, mask) name,
  WICK_OPS(WICK_X)
#undef WICK_X
};

inline constexpr int kNumOps = 0
#define WICK_X(name, str, mask) +1
    WICK_OPS(WICK_X)
#undef WICK_X
    ;

struct OpInfo {
  Op op;
  std::string_view name;
  uint32_t dtypes;  // mask of dtype_bit()
};

inline constexpr OpInfo kOpTable[kNumOps] = {
#define WICK_X(name, str, mask) {Op::name, str, mask},
    WICK_OPS(WICK_X)
#undef WICK_X
};

constexpr const OpInfo& op_info(Op op) { return kOpTable[static_cast<int>(op)]; }
constexpr std::string_view op_name(Op op) { return op_info(op).name; }
// Whether the op is defined for the dtype at all (the table).
constexpr bool op_defined_for(Op op, DType d) { return (op_info(op).dtypes & dtype_bit(d)) != 0; }
// Whether the op is defined for the dtype and the device's backend implements it.
bool supports(Op op, DType d, const Device& device);
// Looks an op up by its printed name; returns false when there is none.
bool parse_op(std::string_view name, Op* out);

}  // namespace wick
