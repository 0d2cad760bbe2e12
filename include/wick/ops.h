// The op table: every op wick has, one row each.
//
// This is the one place an op is declared (DESIGN principle 1). A row is
//   X(Enum, "name", Kind, dtype mask, Functor)
// Kind says which backend method runs the op (src/backend/backend_ops.h lists one per kind);
// Functor names the per-element math in src/backend/elementwise_math.h (namespace ew) for the
// elementwise kinds, and is `_` for the others. From the rows come the Op enum, the names and
// masks, supports(), both backends' elementwise dispatch (CPU and GPU expand WICK_UNARY_OPS,
// WICK_BINARY_OPS and WICK_COMPARE_OPS into their switches) and the coverage list of `wick check`
// (every row must have a case). Adding an elementwise op = a row here, its functor and a check
// case; other kinds add a kernel per backend (CONTRIBUTING.md).
#pragma once

#include <cstdint>
#include <string_view>

#include "wick/device.h"
#include "wick/dtype.h"

namespace wick {

// dtype sets, as bit masks over DType, derived from the dtype table (WICK_DTYPES)
inline constexpr uint32_t dtype_bit(DType d) { return 1u << static_cast<uint32_t>(d); }
inline constexpr uint32_t dtypes_where(bool (*pred)(DType)) {
  uint32_t m = 0;
  for (DType d : kAllDTypes)
    if (pred(d)) m |= dtype_bit(d);
  return m;
}
inline constexpr uint32_t kAllTypes = (1u << kNumDTypes) - 1;
inline constexpr uint32_t kFloatTypes = dtypes_where(is_float);
inline constexpr uint32_t kIntTypes = dtypes_where(is_int);  // also the dtypes of ids and conditions
inline constexpr uint32_t kSignedTypes = dtypes_where(is_signed);
// the float dtypes a quantized op reads or writes beside its blocks, and those of a KV cache
inline constexpr uint32_t kQuantFloatTypes = dtype_bit(DType::F32) | dtype_bit(DType::F16) | dtype_bit(DType::BF16);

// What an op is, for the backends: the kind fixes the backend method and its parameter struct.
enum class OpKind : uint8_t {
  Creation,    // const_set, arange and host transfers
  Random,      // rand_uniform / rand_normal (RandomParams)
  Unary,       // Backend::unary, no parameters
  UnaryParam,  // Backend::unary with UnaryParams
  Binary,      // Backend::binary, result in the input dtype
  Compare,     // Backend::binary, u8 result
  Select,      // where_cond
  Cast,        // cast between dtypes
  Reduce,      // Backend::reduce over trailing dims
  Normalize,   // softmax, log_softmax, rms_norm, layer_norm over the last dim
  Scan,        // cumsum
  Sort,        // sort, argsort
  Index,       // index_select, gather, scatter, index_add
  Copy,        // strided copies and cat
  Matmul,
  Conv,
  Pool,
  Resample,
  Rope,
  Attention,  // attention_decode: q f32 against a KV cache of the row's dtype
  Quant,      // quantize, dequantize, quantized matmul and embedding (wick/quant.h); mask = float dtype
};

// creation, transfer and random
#define WICK_CREATION_OPS(X)                             \
  X(Zeros, "zeros", Creation, kAllTypes, _)              \
  X(Ones, "ones", Creation, kAllTypes, _)                \
  X(Full, "full", Creation, kAllTypes, _)                \
  X(Arange, "arange", Creation, kAllTypes, _)            \
  X(FromHost, "from_host", Creation, kAllTypes, _)       \
  X(ToHost, "to_host", Creation, kAllTypes, _)           \
  X(ConstSet, "const_set", Creation, kAllTypes, _)       \
  X(AllocUninit, "alloc_uninit", Creation, kAllTypes, _) \
  X(RandUniform, "rand_uniform", Random, kFloatTypes, _) \
  X(RandNormal, "rand_normal", Random, kFloatTypes, _)

// unary elementwise: dst = F(src), same dtype; UnaryParam rows take UnaryParams
#define WICK_UNARY_OPS(X)                                        \
  X(Affine, "affine", UnaryParam, kAllTypes, Affine)             \
  X(Powf, "powf", UnaryParam, kFloatTypes, Powf)                 \
  X(Elu, "elu", UnaryParam, kFloatTypes, Elu)                    \
  X(LeakyRelu, "leaky_relu", UnaryParam, kFloatTypes, LeakyRelu) \
  X(Clamp, "clamp", UnaryParam, kAllTypes, Clamp)                \
  X(Exp, "exp", Unary, kFloatTypes, Exp)                         \
  X(Log, "log", Unary, kFloatTypes, Log)                         \
  X(Sin, "sin", Unary, kFloatTypes, Sin)                         \
  X(Cos, "cos", Unary, kFloatTypes, Cos)                         \
  X(Tanh, "tanh", Unary, kFloatTypes, Tanh)                      \
  X(Neg, "neg", Unary, kSignedTypes, Neg)                        \
  X(Recip, "recip", Unary, kFloatTypes, Recip)                   \
  X(Sqr, "sqr", Unary, kAllTypes, Sqr)                           \
  X(Sqrt, "sqrt", Unary, kFloatTypes, Sqrt)                      \
  X(Abs, "abs", Unary, kAllTypes, Abs)                           \
  X(Ceil, "ceil", Unary, kAllTypes, Ceil)                        \
  X(Floor, "floor", Unary, kAllTypes, Floor)                     \
  X(Round, "round", Unary, kAllTypes, Round)                     \
  X(Sign, "sign", Unary, kAllTypes, Sign)                        \
  X(Relu, "relu", Unary, kAllTypes, Relu)                        \
  X(Gelu, "gelu", Unary, kFloatTypes, Gelu)                      \
  X(GeluErf, "gelu_erf", Unary, kFloatTypes, GeluErf)            \
  X(Erf, "erf", Unary, kFloatTypes, Erf)                         \
  X(Silu, "silu", Unary, kFloatTypes, Silu)                      \
  X(Sigmoid, "sigmoid", Unary, kFloatTypes, Sigmoid)

// binary elementwise, numpy broadcasting: dst = F(a, b), same dtype
#define WICK_BINARY_OPS(X)                          \
  X(Add, "add", Binary, kAllTypes, Add)             \
  X(Sub, "sub", Binary, kAllTypes, Sub)             \
  X(Mul, "mul", Binary, kAllTypes, Mul)             \
  X(Div, "div", Binary, kAllTypes, Div)             \
  X(Maximum, "maximum", Binary, kAllTypes, Maximum) \
  X(Minimum, "minimum", Binary, kAllTypes, Minimum) \
  X(Pow, "pow", Binary, kFloatTypes, Pow)           \
  X(SiluMul, "silu_mul", Binary, kFloatTypes, SiluMul)

// comparisons, numpy broadcasting, u8 result
#define WICK_COMPARE_OPS(X)           \
  X(Eq, "eq", Compare, kAllTypes, Eq) \
  X(Ne, "ne", Compare, kAllTypes, Ne) \
  X(Lt, "lt", Compare, kAllTypes, Lt) \
  X(Le, "le", Compare, kAllTypes, Le) \
  X(Gt, "gt", Compare, kAllTypes, Gt) \
  X(Ge, "ge", Compare, kAllTypes, Ge)

// everything else: one backend method per kind (src/backend/backend_ops.h)
#define WICK_STRUCTURED_OPS(X)                                           \
  X(WhereCond, "where_cond", Select, kAllTypes, _)                       \
  X(ToDType, "to_dtype", Cast, kAllTypes, _)                             \
  X(Sum, "sum", Reduce, kAllTypes, _)                                    \
  X(Mean, "mean", Reduce, kFloatTypes, _)                                \
  X(Min, "min", Reduce, kAllTypes, _)                                    \
  X(Max, "max", Reduce, kAllTypes, _)                                    \
  X(ArgMin, "argmin", Reduce, kAllTypes, _)                              \
  X(ArgMax, "argmax", Reduce, kAllTypes, _)                              \
  X(Softmax, "softmax", Normalize, kFloatTypes, _)                       \
  X(LogSoftmax, "log_softmax", Normalize, kFloatTypes, _)                \
  X(RmsNorm, "rms_norm", Normalize, kFloatTypes, _)                      \
  X(LayerNorm, "layer_norm", Normalize, kFloatTypes, _)                  \
  X(Cumsum, "cumsum", Scan, kAllTypes, _)                                \
  X(Sort, "sort", Sort, kAllTypes, _)                                    \
  X(Argsort, "argsort", Sort, kAllTypes, _)                              \
  X(IndexSelect, "index_select", Index, kAllTypes, _)                    \
  X(Gather, "gather", Index, kAllTypes, _)                               \
  X(Scatter, "scatter", Index, kAllTypes, _)                             \
  X(ScatterAdd, "scatter_add", Index, kAllTypes, _)                      \
  X(IndexAdd, "index_add", Index, kAllTypes, _)                          \
  X(CopyStrided, "copy_strided", Copy, kAllTypes, _)                     \
  X(Copy2d, "copy2d", Copy, kAllTypes, _)                                \
  X(Cat, "cat", Copy, kAllTypes, _)                                      \
  X(Matmul, "matmul", Matmul, kFloatTypes, _)                            \
  X(Conv1d, "conv1d", Conv, kFloatTypes, _)                              \
  X(Conv2d, "conv2d", Conv, kFloatTypes, _)                              \
  X(ConvTranspose1d, "conv_transpose1d", Conv, kFloatTypes, _)           \
  X(ConvTranspose2d, "conv_transpose2d", Conv, kFloatTypes, _)           \
  X(AvgPool2d, "avg_pool2d", Pool, kFloatTypes, _)                       \
  X(MaxPool2d, "max_pool2d", Pool, kAllTypes, _)                         \
  X(UpsampleNearest1d, "upsample_nearest1d", Resample, kAllTypes, _)     \
  X(UpsampleNearest2d, "upsample_nearest2d", Resample, kAllTypes, _)     \
  X(UpsampleBilinear2d, "upsample_bilinear2d", Resample, kFloatTypes, _) \
  X(Rope, "rope", Rope, kFloatTypes, _)                                  \
  X(RopeI, "rope_i", Rope, kFloatTypes, _)                               \
  X(AttentionDecode, "attention_decode", Attention, kQuantFloatTypes, _)

// quantized tensors (wick/quant.h): the mask is that of the float side; every row runs for every
// block format of WICK_QFORMATS
#define WICK_QUANT_OPS(X)                                 \
  X(Quantize, "quantize", Quant, kQuantFloatTypes, _)     \
  X(Dequantize, "dequantize", Quant, kQuantFloatTypes, _) \
  X(QMatmul, "qmatmul", Quant, kQuantFloatTypes, _)       \
  X(QEmbedding, "qembedding", Quant, kQuantFloatTypes, _)

// The whole table, in enum order.
#define WICK_OPS(X) \
  WICK_CREATION_OPS(X) WICK_UNARY_OPS(X) WICK_BINARY_OPS(X) WICK_COMPARE_OPS(X) WICK_STRUCTURED_OPS(X) WICK_QUANT_OPS(X)

enum class Op : uint16_t {
#define WICK_X(name, str, kind, mask, fn) name,
  WICK_OPS(WICK_X)
#undef WICK_X
};

inline constexpr int kNumOps = 0
#define WICK_X(name, str, kind, mask, fn) +1
    WICK_OPS(WICK_X)
#undef WICK_X
    ;

struct OpInfo {
  Op op;
  std::string_view name;
  OpKind kind;
  uint32_t dtypes;  // mask of dtype_bit()
};

inline constexpr OpInfo kOpTable[kNumOps] = {
#define WICK_X(name, str, kind, mask, fn) {Op::name, str, OpKind::kind, mask},
    WICK_OPS(WICK_X)
#undef WICK_X
};

constexpr const OpInfo& op_info(Op op) { return kOpTable[static_cast<int>(op)]; }
constexpr std::string_view op_name(Op op) { return op_info(op).name; }
constexpr OpKind op_kind(Op op) { return op_info(op).kind; }
// Whether the op is defined for the dtype at all (the table).
constexpr bool op_defined_for(Op op, DType d) { return (op_info(op).dtypes & dtype_bit(d)) != 0; }
// Whether the op is defined for the dtype and the device's backend implements it.
bool supports(Op op, DType d, const Device& device);
// Looks an op up by its printed name; returns false when there is none.
bool parse_op(std::string_view name, Op* out);

}  // namespace wick
