// Shared by the model files of src/llm: configuration readers, the weight binding of each file
// layout, and the linear layers that run a weight in whatever form the file stores it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "wick/io.h"
#include "wick/llm.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick::llm::detail {

// "[llm] " + message: the tag every error of src/llm starts with.
std::string tag(const std::string& what);

// A model file opened for reading: a GGUF file, or a Hugging Face folder's safetensors weights,
// with the configuration and tokenizer read from it.
struct ModelSource {
  std::string path;  // as the user gave it
  bool gguf = false;
  std::shared_ptr<TensorFile> file;  // GgufFile or SafetensorsFile
  ModelConfig config;
  Tokenizer tokenizer;
};

ModelSource open_source(const std::string& path);

// Where a tensor of the model lives in a file layout: the name and the shape it must have.
struct WeightSpec {
  std::string name;
  Shape shape;
  bool optional = false;  // biases a model may or may not have
};

// The names of one layer's weights in the file's convention.
struct LayerNames {
  std::string attn_norm, q, k, v, o, q_bias, k_bias, v_bias, o_bias, q_norm, k_norm, ffn_norm, gate, up, down;
};
struct ModelNames {
  std::string embed, out_norm, output, rope_freqs;
  std::vector<LayerNames> layers;
};
ModelNames weight_names(const ModelConfig& c, bool gguf);

// Every tensor the model reads, with its expected shape (in elements, row-major).
std::vector<WeightSpec> weight_specs(const ModelConfig& c, const ModelNames& n, const TensorFile& file);

// y = x W^T (+ b) for a weight stored dense (any float dtype) or in a block format. x and y are
// f32; a dense weight of another dtype multiplies x rounded to that dtype. A quantized weight meets
// more than kQuantVectorRows rows of x (a prefill) in bf16 (f16 where the GPU lacks bf16) on a GPU,
// where the product runs as a GEMM over dequantized rows; fewer rows take the quantized mat-vec,
// which reads x in f32.
inline constexpr int64_t kQuantVectorRows = 16;

struct Linear {
  Tensor dense;   // [n, k], or undefined
  QTensor quant;  // [n, k], or undefined
  Tensor bias;    // [n] f32, or undefined
  Tensor operator()(const Tensor& x) const;
  int64_t out_features() const { return dense.defined() ? dense.dim(0) : quant.dim(0); }
};

// Note [Stacked projections]
// Products that read one input (q, k and v; gate and up) run as one product over their weights'
// rows stacked at load, on GPUs, where a decode step is a chain of small launches: one product
// and one cast or quantization of the input instead of three. Consecutive weights stack when they
// share a storage (one dense dtype, or one block format) and all have a bias or none: the Q6_K
// attn_v of a Q4_K_M file stays apart. The outputs are column slices of the stacked product. On
// the CPU every weight stays a view of the file's mapping, one product each.
struct Projections {
  struct Group {
    Linear linear;
    std::vector<int64_t> widths;  // the output features of each projection stacked in it
  };
  std::vector<Group> groups;
  // One [..., width] tensor per projection, in order; *stacked receives each group's product.
  std::vector<Tensor> operator()(const Tensor& x, std::vector<Tensor>* stacked = nullptr) const;
};
// The projections `parts`, stacked where they can be when `stack` is true.
Projections make_projections(std::vector<Linear> parts, bool stack);

// The cos and sin tables of rope for positions [0, context): [context, head_dim / 2] f32 on the
// host, from the model's theta and scaling (or a GGUF file's per-frequency divisors).
void rope_tables(const ModelConfig& c, const std::vector<float>& freq_divisors, int64_t context,
                 std::vector<float>* cos, std::vector<float>* sin);

}  // namespace wick::llm::detail
