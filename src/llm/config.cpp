// Model configuration from a GGUF file's metadata or a Hugging Face config.json, the tensor names
// of both layouts, and the rope tables.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numbers>
#include <sstream>

#include "llm/llm_internal.h"
#include "wick/error.h"

namespace wick::llm {

std::string ModelConfig::str() const {
  std::ostringstream s;
  s << architecture << ": " << layers << " layers, " << hidden << " wide, " << heads << "/" << kv_heads << " heads of "
    << head_dim << ", ffn " << ffn << ", vocab " << vocab_size << ", context " << context << ", rope theta "
    << rope_theta << (rope_style == RopeStyle::Interleaved ? " interleaved" : " half-split");
  if (rope_factor > 0) s << " (llama3 scaling x" << rope_factor << ")";
  if (qkv_bias) s << ", q/k/v biases";
  if (qk_norm) s << ", q/k norms";
  if (tied_embeddings) s << ", tied output";
  return s.str();
}

namespace detail {

std::string tag(const std::string& what) { return "[llm] " + what; }

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The architectures of the Llama family, as GGUF and config.json name them.
bool known_arch(const std::string& a) { return a == "llama" || a == "qwen2" || a == "qwen3"; }

void check_config(const ModelConfig& c, const std::string& where) {
  auto bad = [&](const std::string& what) { throw FormatError(tag(where + ": " + what)); };
  if (c.hidden <= 0 || c.layers <= 0 || c.heads <= 0 || c.kv_heads <= 0 || c.head_dim <= 0 || c.ffn <= 0 ||
      c.vocab_size <= 0)
    bad("sizes must be positive: " + c.str());
  if (c.heads % c.kv_heads != 0)
    bad(std::to_string(c.heads) + " query heads are not a multiple of " + std::to_string(c.kv_heads) + " kv heads");
  if (c.head_dim % 2 != 0) bad("head dim " + std::to_string(c.head_dim) + " is odd: rope rotates pairs");
  // Each product below sizes a weight or the cache; bound them so that no shape overflows.
  const int64_t kMax = int64_t{1} << 24;
  if (c.hidden > kMax || c.heads > 4096 || c.head_dim > 4096 || c.ffn > kMax || c.vocab_size > (int64_t{1} << 31) ||
      c.layers > 4096 || c.context <= 0 || c.context > (int64_t{1} << 31))
    bad("sizes out of range: " + c.str());
  if (!(c.rms_eps > 0) || !(c.rope_theta > 0)) bad("rms eps and rope theta must be positive: " + c.str());
}

ModelConfig config_from_gguf(const GgufFile& f) {
  const GgufMetadata& md = f.metadata();
  ModelConfig c;
  c.architecture = md.get("general.architecture").as_string();
  if (!known_arch(c.architecture))
    throw UnsupportedError(
        tag(f.path() + ": general.architecture \"" + c.architecture + "\" is not one wick runs (llama, qwen2, qwen3)"));
  const std::string a = c.architecture + ".";
  auto geti = [&](const std::string& k) { return md.get(a + k).as_int(); };
  auto opti = [&](const std::string& k, int64_t dflt) {
    const GgufValue* v = md.find(a + k);
    return v ? v->as_int() : dflt;
  };
  auto optf = [&](const std::string& k, double dflt) {
    const GgufValue* v = md.find(a + k);
    return v ? v->as_float() : dflt;
  };
  c.hidden = geti("embedding_length");
  c.layers = geti("block_count");
  c.ffn = geti("feed_forward_length");
  c.heads = geti("attention.head_count");
  c.kv_heads = opti("attention.head_count_kv", c.heads);
  c.head_dim = opti("attention.key_length", c.heads > 0 ? c.hidden / c.heads : 0);
  if (opti("attention.value_length", c.head_dim) != c.head_dim)
    throw UnsupportedError(tag(f.path() + ": " + a + "attention.value_length differs from key_length"));
  if (opti("rope.dimension_count", c.head_dim) != c.head_dim)
    throw UnsupportedError(tag(f.path() + ": " + a + "rope.dimension_count " +
                               std::to_string(opti("rope.dimension_count", 0)) + " rotates part of a head of " +
                               std::to_string(c.head_dim) + "; wick rotates whole heads"));
  c.context = opti("context_length", 4096);
  c.rms_eps = optf("attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_theta = optf("rope.freq_base", 10000);
  if (const GgufValue* s = md.find(a + "rope.scaling.type"); s && s->as_string() != "none")
    throw UnsupportedError(tag(f.path() + ": " + a + "rope.scaling.type \"" + s->as_string() +
                               "\" is not supported (llama 3.1 scaling comes as rope_freqs.weight)"));
  const FileTensor* embd = f.find("token_embd.weight");
  if (!embd) throw FormatError(tag(f.path() + ": tensor token_embd.weight is missing"));
  c.vocab_size = opti("vocab_size", embd->shape.size() == 2 ? embd->shape[0] : 0);
  // ggml rotates adjacent pairs for llama (the converter permuted q and k to match) and halves
  // (NeoX) for the Qwen models.
  c.rope_style = c.architecture == "llama" ? RopeStyle::Interleaved : RopeStyle::HalfSplit;
  c.qkv_bias = c.architecture == "qwen2";
  c.qk_norm = c.architecture == "qwen3";
  c.tied_embeddings = !f.contains("output.weight");
  check_config(c, f.path());
  return c;
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw IoError(tag("cannot open " + p.string()));
  try {
    return json::parse(in);
  } catch (const json::exception& e) {
    throw FormatError(tag(p.string() + ": " + e.what()));
  }
}

ModelConfig config_from_hf(const fs::path& file) {
  const json j = read_json(file);
  const std::string where = file.string();
  auto has = [&](const char* k) { return j.contains(k) && !j[k].is_null(); };
  auto get = [&](const char* k) -> const json& {
    if (!has(k)) throw FormatError(tag(where + ": key \"" + std::string(k) + "\" is missing"));
    return j[k];
  };
  auto geti = [&](const char* k) {
    const json& v = get(k);
    if (!v.is_number_integer()) throw FormatError(tag(where + ": key \"" + std::string(k) + "\" is not an integer"));
    return v.get<int64_t>();
  };
  auto optf = [&](const char* k, double dflt) {
    if (!has(k)) return dflt;
    if (!j[k].is_number()) throw FormatError(tag(where + ": key \"" + std::string(k) + "\" is not a number"));
    return j[k].get<double>();
  };
  auto optb = [&](const char* k, bool dflt) {
    if (!has(k)) return dflt;
    if (!j[k].is_boolean()) throw FormatError(tag(where + ": key \"" + std::string(k) + "\" is not a boolean"));
    return j[k].get<bool>();
  };
  ModelConfig c;
  const json& mt = get("model_type");
  if (!mt.is_string()) throw FormatError(tag(where + ": key \"model_type\" is not a string"));
  const std::string type = mt.get<std::string>();
  c.architecture = type == "mistral" ? "llama" : type;
  if (!known_arch(c.architecture))
    throw UnsupportedError(
        tag(where + ": model_type \"" + type + "\" is not one wick runs (llama, mistral, qwen2, qwen3)"));
  c.hidden = geti("hidden_size");
  c.layers = geti("num_hidden_layers");
  c.ffn = geti("intermediate_size");
  c.heads = geti("num_attention_heads");
  c.kv_heads = has("num_key_value_heads") ? geti("num_key_value_heads") : c.heads;
  c.head_dim = has("head_dim") ? geti("head_dim") : (c.heads > 0 ? c.hidden / c.heads : 0);
  c.vocab_size = geti("vocab_size");
  c.context = j.contains("max_position_embeddings") ? geti("max_position_embeddings") : 4096;
  c.rms_eps = optf("rms_norm_eps", 1e-6);
  c.rope_theta = optf("rope_theta", 10000);
  if (has("rope_scaling")) {
    const json& rs = j["rope_scaling"];
    const std::string kind = rs.value("rope_type", rs.value("type", std::string("?")));
    if (kind != "llama3")
      throw UnsupportedError(tag(where + ": rope_scaling type \"" + kind + "\" is not supported (llama3 is)"));
    c.rope_factor = rs.value("factor", 8.0);
    c.rope_low_freq_factor = rs.value("low_freq_factor", 1.0);
    c.rope_high_freq_factor = rs.value("high_freq_factor", 4.0);
    c.rope_original_context = rs.value("original_max_position_embeddings", int64_t{8192});
    if (!(c.rope_factor > 0) || !(c.rope_high_freq_factor > c.rope_low_freq_factor) || c.rope_original_context <= 0)
      throw FormatError(tag(where + ": rope_scaling values out of range"));
  }
  c.rope_style = RopeStyle::HalfSplit;
  c.qkv_bias = c.architecture == "qwen2" || optb("attention_bias", false);
  c.qk_norm = c.architecture == "qwen3";
  c.tied_embeddings = optb("tie_word_embeddings", false);
  check_config(c, where);
  return c;
}

}  // namespace

ModelSource open_source(const std::string& path) {
  ModelSource s;
  s.path = path;
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) throw IoError(tag(path + ": no such file or folder"));
  if (fs::is_regular_file(p, ec) && detect_file_format(path) == FileFormat::Gguf) {
    auto g = std::make_shared<GgufFile>(GgufFile::open(path));
    s.gguf = true;
    s.config = config_from_gguf(*g);
    s.tokenizer = Tokenizer::from_gguf(g->metadata());
    s.file = std::move(g);
    return s;
  }
  // A Hugging Face checkpoint: the folder, or its config.json.
  const fs::path dir = fs::is_directory(p, ec) ? p : p.parent_path();
  const fs::path config = dir / "config.json";
  if (!fs::exists(config, ec)) throw FormatError(tag(path + ": neither a GGUF file nor a folder with config.json"));
  s.config = config_from_hf(config);
  s.file = std::make_shared<SafetensorsFile>(SafetensorsFile::open(dir.string()));
  s.tokenizer = Tokenizer::from_hf(dir.string());
  return s;
}

ModelNames weight_names(const ModelConfig& c, bool gguf) {
  ModelNames n;
  n.embed = gguf ? "token_embd.weight" : "model.embed_tokens.weight";
  n.out_norm = gguf ? "output_norm.weight" : "model.norm.weight";
  n.output = c.tied_embeddings ? n.embed : (gguf ? "output.weight" : "lm_head.weight");
  n.rope_freqs = gguf ? "rope_freqs.weight" : "";
  for (int64_t i = 0; i < c.layers; ++i) {
    LayerNames l;
    if (gguf) {
      const std::string b = "blk." + std::to_string(i) + ".";
      l = {b + "attn_norm.weight",   b + "attn_q.weight",      b + "attn_k.weight",      b + "attn_v.weight",
           b + "attn_output.weight", b + "attn_q.bias",        b + "attn_k.bias",        b + "attn_v.bias",
           b + "attn_output.bias",   b + "attn_q_norm.weight", b + "attn_k_norm.weight", b + "ffn_norm.weight",
           b + "ffn_gate.weight",    b + "ffn_up.weight",      b + "ffn_down.weight"};
    } else {
      const std::string b = "model.layers." + std::to_string(i) + ".";
      l = {b + "input_layernorm.weight",  b + "self_attn.q_proj.weight", b + "self_attn.k_proj.weight",
           b + "self_attn.v_proj.weight", b + "self_attn.o_proj.weight", b + "self_attn.q_proj.bias",
           b + "self_attn.k_proj.bias",   b + "self_attn.v_proj.bias",   b + "self_attn.o_proj.bias",
           b + "self_attn.q_norm.weight", b + "self_attn.k_norm.weight", b + "post_attention_layernorm.weight",
           b + "mlp.gate_proj.weight",    b + "mlp.up_proj.weight",      b + "mlp.down_proj.weight"};
    }
    n.layers.push_back(std::move(l));
  }
  return n;
}

std::vector<WeightSpec> weight_specs(const ModelConfig& c, const ModelNames& n, const TensorFile& file) {
  const int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  std::vector<WeightSpec> s;
  s.push_back({n.embed, {c.vocab_size, c.hidden}});
  s.push_back({n.out_norm, {c.hidden}});
  if (!c.tied_embeddings) s.push_back({n.output, {c.vocab_size, c.hidden}});
  if (!n.rope_freqs.empty() && file.contains(n.rope_freqs)) s.push_back({n.rope_freqs, {c.head_dim / 2}});
  for (const LayerNames& l : n.layers) {
    s.push_back({l.attn_norm, {c.hidden}});
    s.push_back({l.q, {q, c.hidden}});
    s.push_back({l.k, {kv, c.hidden}});
    s.push_back({l.v, {kv, c.hidden}});
    s.push_back({l.o, {c.hidden, q}});
    s.push_back({l.q_bias, {q}, !c.qkv_bias});
    s.push_back({l.k_bias, {kv}, !c.qkv_bias});
    s.push_back({l.v_bias, {kv}, !c.qkv_bias});
    s.push_back({l.o_bias, {c.hidden}, true});
    if (c.qk_norm) {
      s.push_back({l.q_norm, {c.head_dim}});
      s.push_back({l.k_norm, {c.head_dim}});
    }
    s.push_back({l.ffn_norm, {c.hidden}});
    s.push_back({l.gate, {c.ffn, c.hidden}});
    s.push_back({l.up, {c.ffn, c.hidden}});
    s.push_back({l.down, {c.hidden, c.ffn}});
  }
  return s;
}

// Note [Rope frequencies]
// Pair i of a head (i < head_dim / 2) turns by position x theta^(-2i / head_dim). Llama 3.1 divides
// the low frequencies by `factor`, keeps the high ones and blends between, by wavelength against
// the original context; a GGUF file stores those divisors as rope_freqs.weight instead.
void rope_tables(const ModelConfig& c, const std::vector<float>& freq_divisors, int64_t context,
                 std::vector<float>* cos, std::vector<float>* sin) {
  const int64_t half = c.head_dim / 2;
  std::vector<double> freq(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    double f = std::pow(c.rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim));
    if (!freq_divisors.empty()) {
      f /= freq_divisors[static_cast<size_t>(i)];
    } else if (c.rope_factor > 0) {
      const double low_wavelen = static_cast<double>(c.rope_original_context) / c.rope_low_freq_factor;
      const double high_wavelen = static_cast<double>(c.rope_original_context) / c.rope_high_freq_factor;
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_wavelen) {
        f /= c.rope_factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (static_cast<double>(c.rope_original_context) / wavelen - c.rope_low_freq_factor) /
                              (c.rope_high_freq_factor - c.rope_low_freq_factor);
        f = (1 - smooth) * f / c.rope_factor + smooth * f;
      }
    }
    freq[static_cast<size_t>(i)] = f;
  }
  cos->resize(static_cast<size_t>(context * half));
  sin->resize(static_cast<size_t>(context * half));
  for (int64_t p = 0; p < context; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double a = static_cast<double>(p) * freq[static_cast<size_t>(i)];
      (*cos)[static_cast<size_t>(p * half + i)] = static_cast<float>(std::cos(a));
      (*sin)[static_cast<size_t>(p * half + i)] = static_cast<float>(std::sin(a));
    }
}

}  // namespace detail
}  // namespace wick::llm
