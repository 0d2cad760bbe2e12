// The Llama-family decoder: weights bound from a file, the KV cache, and the forward pass composed
// of public ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "llm/llm_internal.h"
#include "wick/error.h"
#include "wick/graph.h"

namespace wick::llm {

using detail::Linear;
using detail::tag;

Tensor detail::Linear::operator()(const Tensor& x) const {
  Tensor y;
  const int64_t rows = x.dim(-1) > 0 ? x.numel() / x.dim(-1) : 0;
  if (quant.defined() && rows > kQuantVectorRows && x.device().is_gpu()) {
    // Many rows: the GPU dequantizes w to x's dtype and runs a GEMM, on tensor cores in 16 bits.
    const DType half = x.device().supports_bf16() ? DType::BF16 : DType::F16;
    y = matmul(x.to_dtype(half), quant).to_dtype(x.dtype());
  } else if (quant.defined()) {
    y = matmul(x, quant);
  } else if (dense.dtype() == x.dtype()) {
    y = x.matmul(dense.t());
  } else {
    y = x.to_dtype(dense.dtype()).matmul(dense.t()).to_dtype(x.dtype());
  }
  return bias.defined() ? y.add(bias) : y;
}

namespace {

bool same_storage(const Linear& a, const Linear& b) {
  if (a.bias.defined() != b.bias.defined()) return false;
  if (a.quant.defined()) return b.quant.defined() && a.quant.format() == b.quant.format();
  return b.dense.defined() && a.dense.dtype() == b.dense.dtype();
}

// a's rows, then b's (Note [Stacked projections]).
Linear stack(const Linear& a, const Linear& b) {
  Linear s;
  if (a.quant.defined()) {
    s.quant = QTensor::from_bytes(cat({a.quant.bytes(), b.quant.bytes()}, 0), a.quant.format(),
                                  {a.quant.dim(0) + b.quant.dim(0), a.quant.dim(1)});
  } else {
    s.dense = cat({a.dense, b.dense}, 0);
  }
  if (a.bias.defined()) s.bias = cat({a.bias, b.bias}, 0);
  return s;
}

}  // namespace

detail::Projections detail::make_projections(std::vector<Linear> parts, bool stack_them) {
  Projections p;
  for (Linear& l : parts) {
    const int64_t width = l.out_features();
    if (stack_them && !p.groups.empty() && same_storage(p.groups.back().linear, l)) {
      p.groups.back().linear = stack(p.groups.back().linear, l);
    } else {
      p.groups.push_back({std::move(l), {}});
    }
    p.groups.back().widths.push_back(width);
  }
  return p;
}

std::vector<Tensor> detail::Projections::operator()(const Tensor& x, std::vector<Tensor>* stacked) const {
  std::vector<Tensor> out;
  for (const Group& g : groups) {
    const Tensor y = g.linear(x);
    if (stacked) stacked->push_back(y);
    if (g.widths.size() == 1) {
      out.push_back(y);
      continue;
    }
    int64_t at = 0;
    for (int64_t w : g.widths) {
      out.push_back(y.narrow(-1, at, w));
      at += w;
    }
  }
  return out;
}

namespace {

struct Layer {
  Tensor attn_norm, ffn_norm, q_norm, k_norm;  // f32
  detail::Projections qkv, gate_up;
  Linear o, down;
  Tensor k_cache, v_cache;  // [kv_heads, context, head_dim] in the cache dtype
};

}  // namespace

struct Model::Impl {
  ModelConfig config;
  Tokenizer tokenizer;
  Device device;
  ModelOptions options;
  int64_t context = 0;
  int64_t position = 0;
  int64_t weight_bytes = 0;
  Tensor embed_dense;  // [vocab, hidden], or undefined when quantized
  QTensor embed_quant;
  Linear output;
  Tensor out_norm;
  std::vector<Layer> layers;
  Tensor rope_cos, rope_sin;  // [context, head_dim / 2] f32
  // The inputs of a decode step (Note [Decode steps]), and its graphs by cache prefix.
  Tensor step_x;              // [1, hidden] f32: the token's embedding
  Tensor step_cos, step_sin;  // [1, head_dim / 2] f32: its rope row
  Tensor step_pos;            // [1] i32: its position
  std::map<int64_t, Graph> graphs;

  Tensor embed(const Tensor& ids) const {
    if (embed_quant.defined()) return embedding(ids, embed_quant, DType::F32);
    return embed_dense.index_select(ids, 0).to_dtype(DType::F32);
  }
  // Logits of every position (all_logits), of the last one, or none (an undefined tensor).
  Tensor forward_chunk(const std::vector<int32_t>& ids, bool all_logits, bool logits);
  // One token at `position` through the step buffers: its logits [1, vocab].
  Tensor decode(int32_t id);
  // The layers of a decode step over the first `prefix` cache rows, reading the step buffers.
  Tensor decode_body(int64_t prefix);
};

namespace {

// Checks every tensor the model reads before anything is loaded: present, of a type wick runs,
// of the expected shape.
int64_t check_weights(const std::vector<detail::WeightSpec>& specs, const TensorFile& file) {
  int64_t bytes = 0;
  for (const detail::WeightSpec& s : specs) {
    const FileTensor* t = file.find(s.name);
    if (!t) {
      if (s.optional) continue;
      throw FormatError(tag(file.path() + ": tensor " + s.name + " is missing (expected " + s.shape.str() + ")"));
    }
    if (t->shape != s.shape)
      throw ShapeError(
          tag(file.path() + ": tensor " + s.name + " is " + t->shape.str() + ", expected " + s.shape.str()));
    const bool matrix = s.shape.size() == 2;
    const bool ok = t->qformat ? matrix : (t->dtype && is_float(*t->dtype));
    if (!ok)
      throw DTypeError(tag(file.path() + ": tensor " + s.name + " has type " + t->type + ", which wick cannot run" +
                           (matrix ? "" : " (a vector must be a float type)")));
    bytes += t->nbytes;
  }
  return bytes;
}

}  // namespace

Model::Model() = default;
Model::~Model() = default;
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;

Model Model::load(const std::string& path, const Device& device, const ModelOptions& options) {
  if (options.kv_dtype != DType::F32 && options.kv_dtype != DType::F16 && options.kv_dtype != DType::BF16)
    throw DTypeError(tag("the KV cache is f32, f16 or bf16, not " + std::string(dtype_name(options.kv_dtype))));
  if (options.context < 0 || options.prefill_chunk <= 0)
    throw InvalidArgument(tag("context " + std::to_string(options.context) + " and prefill chunk " +
                              std::to_string(options.prefill_chunk) + " must be >= 0 and > 0"));
  detail::ModelSource src = detail::open_source(path);
  const ModelConfig& c = src.config;
  if (src.tokenizer.vocab_size() > c.vocab_size)
    throw FormatError(tag(path + ": the tokenizer has " + std::to_string(src.tokenizer.vocab_size()) +
                          " tokens, the model's vocabulary " + std::to_string(c.vocab_size)));

  auto impl = std::make_unique<Impl>();
  impl->config = c;
  impl->device = device;
  impl->options = options;
  impl->context = options.context == 0 ? c.context : std::min(options.context, c.context);  // > 0: check_config

  const detail::ModelNames names = detail::weight_names(c, src.gguf);
  const std::vector<detail::WeightSpec> specs = detail::weight_specs(c, names, *src.file);
  impl->weight_bytes = check_weights(specs, *src.file);
  // Llama 3.1's rope divisors (a GGUF file's), read and checked here on the host, not loaded.
  std::vector<float> divisors;
  if (!names.rope_freqs.empty() && src.file->contains(names.rope_freqs))
    divisors = src.file->tensor(names.rope_freqs).to_dtype(DType::F32).to_vector<float>();
  for (float d : divisors)
    if (!(d > 0) || !std::isfinite(d))
      throw FormatError(tag(path + ": " + names.rope_freqs + " holds a divisor that is not positive and finite"));

  // Will it fit? Weights, the cache, and the activations of one prefill chunk (the attention
  // scores and the MLP dominate), before loading anything; in double, since a file's sizes may
  // multiply past int64.
  const double ctx = static_cast<double>(impl->context);
  const double kv_bytes = 2.0 * static_cast<double>(c.layers * c.kv_heads * c.head_dim) * ctx *
                          static_cast<double>(dtype_size(options.kv_dtype));
  const double chunk = static_cast<double>(std::min(options.prefill_chunk, impl->context));
  const double act_bytes = 4 * chunk *
                           (static_cast<double>(6 * c.hidden + 4 * c.ffn + c.vocab_size + 4 * c.heads * c.head_dim) +
                            3.0 * static_cast<double>(c.heads) * ctx);
  if (!device.is_cpu()) {
    const DeviceInfo info = device.info();
    const double need = static_cast<double>(impl->weight_bytes) + kv_bytes + act_bytes;
    auto mib = [](double bytes) { return std::to_string(static_cast<long long>(bytes / 1048576.0)); };
    if (need > static_cast<double>(info.free_memory))
      throw OutOfMemory(tag(path + " needs " + mib(need) + " MiB on " + device.str() + " (weights " +
                            mib(static_cast<double>(impl->weight_bytes)) + ", KV cache " + mib(kv_bytes) + " for " +
                            std::to_string(impl->context) + " positions, activations " + mib(act_bytes) + "); " +
                            mib(static_cast<double>(info.free_memory)) + " MiB are free"));
  }

  LoadOptions lo;
  for (const detail::WeightSpec& s : specs)
    if (src.file->contains(s.name) && s.name != names.rope_freqs) lo.names.push_back(s.name);
  lo.progress_bar = options.progress_bar;
  auto loaded = src.file->load(device, lo);
  auto take = [&](const std::string& name) -> const LoadedTensor* {
    auto it = loaded.find(name);
    return it == loaded.end() ? nullptr : &it->second;
  };
  auto vec = [&](const std::string& name) {
    const LoadedTensor* t = take(name);
    return t ? t->tensor.to_dtype(DType::F32) : Tensor();
  };
  auto lin = [&](const std::string& w, const std::string& b) {
    Linear l;
    const LoadedTensor* t = take(w);
    l.dense = t->tensor;
    l.quant = t->qtensor;
    if (!b.empty()) l.bias = vec(b);
    return l;
  };
  {
    const LoadedTensor* e = take(names.embed);
    impl->embed_dense = e->tensor;
    impl->embed_quant = e->qtensor;
  }
  impl->out_norm = vec(names.out_norm);
  impl->output = lin(names.output, "");
  for (const detail::LayerNames& n : names.layers) {
    Layer l;
    l.attn_norm = vec(n.attn_norm);
    l.ffn_norm = vec(n.ffn_norm);
    if (c.qk_norm) {
      l.q_norm = vec(n.q_norm);
      l.k_norm = vec(n.k_norm);
    }
    const bool stack = device.is_gpu();  // Note [Stacked projections]
    l.qkv = detail::make_projections({lin(n.q, n.q_bias), lin(n.k, n.k_bias), lin(n.v, n.v_bias)}, stack);
    l.gate_up = detail::make_projections({lin(n.gate, ""), lin(n.up, "")}, stack);
    l.o = lin(n.o, n.o_bias);
    l.down = lin(n.down, "");
    // The file's copies of stacked weights go now, not when the load ends: the device holds one
    // layer's worth twice at most.
    for (const std::string* name : {&n.q, &n.k, &n.v, &n.gate, &n.up}) loaded.erase(*name);
    l.k_cache = Tensor::empty({c.kv_heads, impl->context, c.head_dim}, options.kv_dtype, device);
    l.v_cache = Tensor::empty({c.kv_heads, impl->context, c.head_dim}, options.kv_dtype, device);
    impl->layers.push_back(std::move(l));
  }

  std::vector<float> cos, sin;
  detail::rope_tables(c, divisors, impl->context, &cos, &sin);
  impl->rope_cos = Tensor::from_vector(cos, {impl->context, c.head_dim / 2}, device);
  impl->rope_sin = Tensor::from_vector(sin, {impl->context, c.head_dim / 2}, device);
  impl->tokenizer = std::move(src.tokenizer);
  impl->step_x = Tensor::empty({1, c.hidden}, DType::F32, device);
  impl->step_cos = Tensor::empty({1, c.head_dim / 2}, DType::F32, device);
  impl->step_sin = Tensor::empty({1, c.head_dim / 2}, DType::F32, device);
  impl->step_pos = Tensor::empty({1}, DType::I32, device);

  Model m;
  m.impl_ = std::move(impl);
  return m;
}

const ModelConfig& Model::config() const { return impl_->config; }
const Tokenizer& Model::tokenizer() const { return impl_->tokenizer; }
const Device& Model::device() const { return impl_->device; }
int64_t Model::context() const { return impl_->context; }
int64_t Model::position() const { return impl_->position; }
int64_t Model::weight_bytes() const { return impl_->weight_bytes; }
void Model::reset() { impl_->position = 0; }

void Model::truncate(int64_t position) {
  if (position < 0 || position > impl_->position)
    throw InvalidArgument(tag("truncate to " + std::to_string(position) + " outside the " +
                              std::to_string(impl_->position) + " cached positions"));
  impl_->position = position;
}

// Note [Attention by grouped products]
// Query head h reads KV head h / G (G = heads / kv_heads), so the queries [heads, T, d] are viewed
// as [kv_heads, G * T, d] and each KV head meets all of its G query heads in one batched product
// against the cached keys [kv_heads, S, d]. The causal mask adds -inf where key position s is
// after the query's position p + t; every row keeps at least its own position.
Tensor Model::Impl::forward_chunk(const std::vector<int32_t>& ids, bool all_logits, bool logits) {
  const ModelConfig& c = config;
  const int64_t T = static_cast<int64_t>(ids.size()), p = position, S = p + T;
  const int64_t H = c.heads, KV = c.kv_heads, D = c.head_dim, G = H / KV;
  const DType kv = options.kv_dtype;
  const Tensor id_t = Tensor::from_vector(ids, {T}, device);
  const Tensor cos = rope_cos.narrow(0, p, T), sin = rope_sin.narrow(0, p, T);
  Tensor mask;
  if (T > 1) {
    std::vector<float> m(static_cast<size_t>(T * S), 0.0f);
    for (int64_t t = 0; t < T; ++t)
      for (int64_t s = p + t + 1; s < S; ++s)
        m[static_cast<size_t>(t * S + s)] = -std::numeric_limits<float>::infinity();
    mask = Tensor::from_vector(m, {T, S}, device);
  }
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto rope_fn = c.rope_style == RopeStyle::Interleaved ? rope_i : rope;

  Tensor x = embed(id_t);  // [T, hidden] f32
  for (Layer& l : layers) {
    const Tensor h = x.rms_norm(l.attn_norm, c.rms_eps);
    const std::vector<Tensor> qkv = l.qkv(h);
    Tensor q = qkv[0].reshape({T, H, D});
    Tensor k = qkv[1].reshape({T, KV, D});
    const Tensor v = qkv[2].reshape({T, KV, D});
    if (c.qk_norm) {
      q = q.rms_norm(l.q_norm, c.rms_eps);
      k = k.rms_norm(l.k_norm, c.rms_eps);
    }
    q = rope_fn(q.transpose(0, 1), cos, sin);  // [H, T, D]
    k = rope_fn(k.transpose(0, 1), cos, sin);  // [KV, T, D]
    l.k_cache.narrow(1, p, T).copy_from(k.to_dtype(kv));
    l.v_cache.narrow(1, p, T).copy_from(v.transpose(0, 1).to_dtype(kv));
    const Tensor keys = l.k_cache.narrow(1, 0, S), values = l.v_cache.narrow(1, 0, S);
    const Tensor qg = q.affine(scale, 0).reshape({KV, G * T, D}).to_dtype(kv);
    Tensor scores = qg.matmul(keys.transpose(1, 2)).to_dtype(DType::F32);  // [KV, G*T, S]
    if (mask.defined()) scores = scores.reshape({KV, G, T, S}).add(mask).reshape({KV, G * T, S});
    const Tensor probs = scores.softmax(-1).to_dtype(kv);
    const Tensor attn = probs.matmul(values).to_dtype(DType::F32);  // [KV, G*T, D] = [H, T, D]
    x = x.add(l.o(attn.reshape({H, T, D}).transpose(0, 1).reshape({T, H * D})));

    const Tensor h2 = x.rms_norm(l.ffn_norm, c.rms_eps);
    const std::vector<Tensor> gu = l.gate_up(h2);
    x = x.add(l.down(gu[0].silu_mul(gu[1])));
  }
  position = S;
  if (!logits) return {};
  if (!all_logits) x = x.narrow(0, T - 1, 1);
  return output(x.rms_norm(out_norm, c.rms_eps));
}

// Note [Decode steps]
// A step of one token runs the layers with attention_decode (Note [Decode attention]), which
// writes the cache row and attends in one op, reading the position from step_pos. The step's
// varying inputs (the embedding, the rope row, the position) are written into buffers made at
// load, so its ops and shapes depend only on the cache prefix it attends over: the smallest power
// of two from 256 holding the position, capped by the context. On a GPU each prefix's step is
// recorded once as a graph (wick/graph.h) and replayed for every token that fits it; about ten
// graphs cover a context of 128k. Its logits are copied out, since the next replay rewrites them.
Tensor Model::Impl::decode_body(int64_t prefix) {
  const ModelConfig& c = config;
  const int64_t H = c.heads, KV = c.kv_heads, D = c.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto rope_fn = c.rope_style == RopeStyle::Interleaved ? rope_i : rope;
  Tensor x = step_x;
  for (Layer& l : layers) {
    const Tensor h = x.rms_norm(l.attn_norm, c.rms_eps);
    std::vector<Tensor> stacked;
    const std::vector<Tensor> qkv = l.qkv(h, &stacked);
    Tensor q, k;
    if (!c.qk_norm && l.qkv.groups[0].widths.size() > 1) {
      // q and k side by side in one product: one rope over both.
      const Tensor qk = rope_fn(stacked[0].narrow(1, 0, (H + KV) * D).reshape({H + KV, 1, D}), step_cos, step_sin);
      q = qk.narrow(0, 0, H).reshape({H, D});
      k = qk.narrow(0, H, KV).reshape({KV, D});
    } else {
      q = qkv[0].reshape({H, 1, D});
      k = qkv[1].reshape({KV, 1, D});
      if (c.qk_norm) {
        q = q.rms_norm(l.q_norm, c.rms_eps);
        k = k.rms_norm(l.k_norm, c.rms_eps);
      }
      q = rope_fn(q, step_cos, step_sin).reshape({H, D});
      k = rope_fn(k, step_cos, step_sin).reshape({KV, D});
    }
    const Tensor attn = attention_decode(q, k, qkv[2].reshape({KV, D}), l.k_cache.narrow(1, 0, prefix),
                                         l.v_cache.narrow(1, 0, prefix), step_pos, scale);
    x = x.add(l.o(attn.reshape({1, H * D})));
    const Tensor h2 = x.rms_norm(l.ffn_norm, c.rms_eps);
    const std::vector<Tensor> gu = l.gate_up(h2);
    x = x.add(l.down(gu[0].silu_mul(gu[1])));
  }
  return output(x.rms_norm(out_norm, c.rms_eps));
}

Tensor Model::Impl::decode(int32_t id) {
  const int64_t p = position;
  step_x.copy_from(embed(Tensor::from_vector(std::vector<int32_t>{id}, {1}, device)));
  step_cos.copy_from(rope_cos.narrow(0, p, 1));
  step_sin.copy_from(rope_sin.narrow(0, p, 1));
  step_pos.copy_from(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(p)}, {1}, Device::cpu()));
  int64_t prefix = 256;
  while (prefix <= p) prefix *= 2;
  prefix = std::min(prefix, context);
  Tensor logits;
  if (options.graphs && Graph::records(device)) {
    auto it = graphs.find(prefix);
    if (it == graphs.end()) {
      it = graphs.emplace(prefix, Graph::capture(device, [&] { return std::vector<Tensor>{decode_body(prefix)}; }))
               .first;  // capture ran the step once
    } else {
      it->second.replay();
    }
    logits = it->second.outputs()[0].clone();
  } else {
    logits = decode_body(prefix);
  }
  position = p + 1;
  return logits;
}

Tensor Model::forward(std::span<const int32_t> tokens, bool all_logits) {
  Impl& m = *impl_;
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) throw InvalidArgument(tag("forward of no tokens"));
  if (m.position + n > m.context)
    throw InvalidArgument(tag(std::to_string(n) + " tokens after " + std::to_string(m.position) +
                              " cached positions exceed the context of " + std::to_string(m.context)));
  for (size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] < 0 || tokens[i] >= m.config.vocab_size)
      throw InvalidArgument(tag("token " + std::to_string(i) + " is id " + std::to_string(tokens[i]) +
                                ", outside the vocabulary of " + std::to_string(m.config.vocab_size)));
  const int64_t start = m.position;
  std::vector<Tensor> parts;
  try {
    if (n == 1) return m.decode(tokens[0]);
    for (int64_t i = 0; i < n; i += m.options.prefill_chunk) {
      const int64_t len = std::min(m.options.prefill_chunk, n - i);
      std::vector<int32_t> ids(tokens.begin() + i, tokens.begin() + i + len);
      const bool last = i + len == n;
      Tensor logits = m.forward_chunk(ids, all_logits, all_logits || last);
      if (logits.defined()) parts.push_back(std::move(logits));
    }
  } catch (...) {
    m.position = start;  // the cache holds nothing of a failed call
    throw;
  }
  return parts.size() == 1 ? parts[0] : cat(parts, 0);
}

}  // namespace wick::llm
