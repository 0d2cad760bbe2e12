// Language models (src/llm): the sampler's distributions and options, the model's consistency
// across prefill chunks, decode steps and devices, generation, and the typed errors of bad model
// files and bad calls. The logits themselves are checked against an independent NumPy forward
// pass and Hugging Face transformers by tests/llm/llm_reference.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>

#include "llm_test_util.h"
#include "test_util.h"
#include "wick/io.h"
#include "wick/llm.h"
#include "wick/quant.h"

namespace wick {
namespace {

using llm::Model;
using llm::ModelOptions;
using llm::Sampler;
using llm::SamplerOptions;
using testing::expect_error;

// ---- sampler --------------------------------------------------------------------------------

TEST(LlmSampler, GreedyTakesTheFirstHighestLogit) {
  Sampler s;
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, NAN};
  EXPECT_EQ(s.sample(l, {}), 1);
}

TEST(LlmSampler, SameSeedSameTokensOtherSeedOtherTokens) {
  SamplerOptions o;
  o.temperature = 1.0;
  o.seed = 42;
  std::vector<float> l(50);
  for (size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(static_cast<double>(i)));
  Sampler a(o), b(o);
  o.seed = 43;
  Sampler c(o);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 64; ++i) {
    ta.push_back(a.sample(l, {}));
    tb.push_back(b.sample(l, {}));
    tc.push_back(c.sample(l, {}));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

// Frequencies over many draws against the softmax at the temperature, after top-k and top-p.
std::vector<double> frequencies(const SamplerOptions& o, const std::vector<float>& l, int draws) {
  Sampler s(o);
  std::vector<double> f(l.size(), 0);
  for (int i = 0; i < draws; ++i) f[static_cast<size_t>(s.sample(l, {}))] += 1.0 / draws;
  return f;
}

TEST(LlmSampler, DrawsFollowTheFilteredSoftmax) {
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, 0.0f, 2.5f};
  SamplerOptions o;
  o.temperature = 2.0;
  o.seed = 7;
  auto softmax = [&](const std::vector<int>& keep) {
    std::vector<double> p(l.size(), 0);
    double z = 0;
    for (int i : keep) z += p[static_cast<size_t>(i)] = std::exp(l[static_cast<size_t>(i)] / o.temperature);
    for (double& v : p) v /= z;
    return p;
  };
  const int n = 40000;  // standard error of a frequency <= 0.0025
  auto expect_near = [&](const std::vector<double>& got, const std::vector<double>& want, const char* what) {
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.012) << what << " token " << i;
  };
  expect_near(frequencies(o, l, n), softmax({0, 1, 2, 3, 4}), "temperature");
  o.top_k = 3;
  expect_near(frequencies(o, l, n), softmax({1, 2, 4}), "top_k 3");
  // Probabilities at T=2 over all five: 0.124, 0.336, 0.204, 0.075, 0.262 (sorted 1, 4, 2, 0, 3);
  // top_p 0.55 keeps 1 and 4 (0.598 >= 0.55).
  o.top_k = 0;
  o.top_p = 0.55;
  expect_near(frequencies(o, l, n), softmax({1, 4}), "top_p 0.55");
  // min_p 0.4 keeps those >= 0.4 x 0.336 = 0.134: tokens 1, 4, 2.
  o.top_p = 1;
  o.min_p = 0.4;
  expect_near(frequencies(o, l, n), softmax({1, 2, 4}), "min_p 0.4");
}

TEST(LlmSampler, WideLogitsDoNotOverflow) {
  // exp of the logits' spread overflows unless each is taken relative to the highest.
  const std::vector<float> l = {0.0f, 1000.0f, -1000.0f, 999.0f};
  SamplerOptions o;
  o.temperature = 1.0;
  for (int64_t top_k : {0, 2}) {
    o.top_k = top_k;
    const std::vector<double> f = frequencies(o, l, 4000);
    EXPECT_NEAR(f[1], 1 / (1 + std::exp(-1.0)), 0.03) << "top_k " << top_k;
    EXPECT_NEAR(f[3], 1 / (1 + std::exp(1.0)), 0.03) << "top_k " << top_k;
  }
}

TEST(LlmSampler, RepetitionPenaltyLowersRecentTokens) {
  SamplerOptions o;
  o.repeat_penalty = 2.0;
  Sampler s(o);
  const std::vector<float> l = {1.0f, 3.0f, 2.0f, -0.5f};
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{0}), 1);
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{1}), 2);                                 // 3 / 2 < 2
  EXPECT_EQ(s.sample(l, std::vector<int32_t>{1, 2}), 1);                              // 1.5 still beats 1 and 1
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f, -0.6f}, std::vector<int32_t>{1}), 0);  // -1.2 < -1
  o.repeat_penalty = 4.0;
  Sampler u(o);
  EXPECT_EQ(u.sample(l, std::vector<int32_t>{1, 2}), 0);  // 0.75 and 0.5 fall below 1
  o.repeat_last_n = 1;
  Sampler t(o);
  EXPECT_EQ(t.sample(l, std::vector<int32_t>{1, 3}), 1);  // only token 3 is recent
}

TEST(LlmSampler, BadOptionsAreInvalidArguments) {
  SamplerOptions o;
  o.top_p = 0;
  EXPECT_THROW(Sampler{o}, InvalidArgument);
  o = {};
  o.temperature = -1;
  EXPECT_THROW(Sampler{o}, InvalidArgument);
  o = {};
  o.min_p = 2;
  EXPECT_THROW(Sampler{o}, InvalidArgument);
  Sampler s;
  EXPECT_THROW(s.sample({}, {}), InvalidArgument);
}

// ---- a tiny model ---------------------------------------------------------------------------

struct Tiny {
  int64_t hidden = 64, heads = 4, kv_heads = 2, head_dim = 16, ffn = 128, layers = 2, context = 64;
  std::string arch = "llama";
  std::optional<QFormat> quant;          // the matrices' format; f32 otherwise
  std::vector<std::string> drop;         // tensors left out
  std::map<std::string, Shape> reshape;  // tensors written with another shape
};

constexpr int64_t kVocab = testing::kSpmVocab;

std::string write_tiny(const Tiny& t, const std::string& path) {
  GgufWriter w;
  GgufMetadata& md = w.metadata();
  const std::string a = t.arch + ".";
  md.set("general.architecture", GgufValue::string(t.arch));
  md.set(a + "context_length", GgufValue::u64(static_cast<uint64_t>(t.context)));
  md.set(a + "embedding_length", GgufValue::u32(static_cast<uint32_t>(t.hidden)));
  md.set(a + "block_count", GgufValue::u32(static_cast<uint32_t>(t.layers)));
  md.set(a + "feed_forward_length", GgufValue::u32(static_cast<uint32_t>(t.ffn)));
  md.set(a + "attention.head_count", GgufValue::u32(static_cast<uint32_t>(t.heads)));
  md.set(a + "attention.head_count_kv", GgufValue::u32(static_cast<uint32_t>(t.kv_heads)));
  md.set(a + "attention.layer_norm_rms_epsilon", GgufValue::f32(1e-5f));
  md.set(a + "rope.freq_base", GgufValue::f32(10000.0f));
  const GgufMetadata vocab = testing::spm_metadata();
  for (const auto& [key, value] : vocab.items()) md.set(key, value);
  auto add = [&](const std::string& name, Shape shape, double std) {
    if (std::find(t.drop.begin(), t.drop.end(), name) != t.drop.end()) return;
    if (auto it = t.reshape.find(name); it != t.reshape.end()) shape = it->second;
    Tensor v = shape.size() == 1 ? Tensor::rand_normal(shape, DType::F32, 1, std)
                                 : Tensor::rand_normal(shape, DType::F32, 0, std);
    if (shape.size() == 2 && t.quant)
      w.add(name, quantize(v, *t.quant));
    else
      w.add(name, v);
  };
  const int64_t q = t.heads * t.head_dim, kv = t.kv_heads * t.head_dim;
  add("token_embd.weight", {kVocab, t.hidden}, 1.0);
  add("output_norm.weight", {t.hidden}, 0.1);
  add("output.weight", {kVocab, t.hidden}, 0.15);
  for (int64_t i = 0; i < t.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", {t.hidden}, 0.1);
    add(b + "attn_q.weight", {q, t.hidden}, 0.15);
    add(b + "attn_k.weight", {kv, t.hidden}, 0.15);
    add(b + "attn_v.weight", {kv, t.hidden}, 0.15);
    add(b + "attn_output.weight", {t.hidden, q}, 0.15);
    add(b + "ffn_norm.weight", {t.hidden}, 0.1);
    add(b + "ffn_gate.weight", {t.ffn, t.hidden}, 0.15);
    add(b + "ffn_up.weight", {t.ffn, t.hidden}, 0.15);
    add(b + "ffn_down.weight", {t.hidden, t.ffn}, 0.1);
  }
  w.write(path);
  return path;
}

const testing::TempDir& temp() {
  static const testing::TempDir dir("llm");
  return dir;
}

std::string tiny_model(const std::string& name, const Tiny& t = {}) { return write_tiny(t, temp() / name); }

std::vector<int32_t> prompt_ids(int n) {
  std::vector<int32_t> ids;
  for (int i = 0; i < n; ++i) ids.push_back(static_cast<int32_t>((i * 37 + 11) % kVocab));
  return ids;
}

float max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to(Device::cpu()).contiguous().to_vector<float>();
  const std::vector<float> y = b.to(Device::cpu()).contiguous().to_vector<float>();
  EXPECT_EQ(x.size(), y.size());
  float m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

ModelOptions f32_options() {
  ModelOptions o;
  o.kv_dtype = DType::F32;
  o.progress_bar = false;
  o.context = 0;
  return o;
}

// One prompt, three ways through the cache: one pass, chunks of 3, and one token at a time.
void expect_cache_consistent(const std::string& path, const Device& device, float tol) {
  const std::vector<int32_t> ids = prompt_ids(11);
  ModelOptions o = f32_options();
  Model whole = Model::load(path, device, o);
  const Tensor all = whole.forward(ids, true);
  ASSERT_EQ(all.shape(), (Shape{11, kVocab}));
  EXPECT_EQ(whole.position(), 11);
  o.prefill_chunk = 3;
  Model chunked = Model::load(path, device, o);
  EXPECT_LE(max_abs_diff(chunked.forward(ids, true), all), tol) << device.str();
  Model stepped = Model::load(path, device, o);
  std::vector<Tensor> rows;
  for (int32_t id : ids) rows.push_back(stepped.forward(std::span<const int32_t>(&id, 1)));
  EXPECT_LE(max_abs_diff(cat(rows, 0), all), tol) << device.str();
  // Truncating and running the tail again gives the tail's rows again.
  stepped.truncate(6);
  EXPECT_LE(max_abs_diff(stepped.forward(std::span<const int32_t>(ids).subspan(6), true), all.narrow(0, 6, 5)), tol);
  // The logits are not trivial: positions differ.
  EXPECT_GT(max_abs_diff(all.narrow(0, 0, 1), all.narrow(0, 1, 1)), 0.1f);
}

TEST(LlmModel, PrefillChunksAndDecodeStepsAgree) {
  expect_cache_consistent(tiny_model("f32.gguf"), Device::cpu(), 2e-5f);
  Tiny q;
  q.quant = QFormat::Q8_0;
  expect_cache_consistent(tiny_model("q8_0.gguf", q), Device::cpu(), 2e-5f);
}

TEST(LlmModel, GpuLogitsMatchTheCpu) {
  if (testing::gpu_devices().empty()) GTEST_SKIP() << "no GPU";
  Tiny q;
  q.quant = QFormat::Q4_0;
  for (const std::string& path : {tiny_model("gpu_f32.gguf"), tiny_model("gpu_q4_0.gguf", q)}) {
    const bool quantized = path.find("q4_0") != std::string::npos;
    // 9 tokens take the quantized mat-vec; 40 (more than kQuantVectorRows) meet a quantized weight
    // in bf16 on a GPU, so there the logits agree to bf16's rounding, relative to their size.
    for (int n : {9, 40}) {
      const std::vector<int32_t> ids = prompt_ids(n);
      Model cpu = Model::load(path, Device::cpu(), f32_options());
      const Tensor want = cpu.forward(ids, true);
      const float scale = std::max(1.0f, max_abs_diff(want, Tensor::zeros(want.shape(), DType::F32)));
      const float tol = quantized && n > 16 ? 2e-2f * scale : 2e-3f;
      for (const Device& d : testing::gpu_devices()) {
        if (n == 9) expect_cache_consistent(path, d, 2e-4f);
        Model gpu = Model::load(path, d, f32_options());
        EXPECT_LE(max_abs_diff(gpu.forward(ids, true), want), tol) << path << " on " << d.str() << ", " << n;
      }
    }
  }
}

TEST(LlmModel, GenerateStreamsAndStops) {
  Model m = Model::load(tiny_model("gen.gguf"), Device::cpu(), f32_options());
  llm::GenerateOptions g;
  g.max_tokens = 10;
  g.stop_at_end = false;
  std::vector<int32_t> got;
  std::string text;
  const llm::GenerateStats s = m.generate(prompt_ids(4), g, [&](int32_t id, std::string_view piece) {
    if (id >= 0) got.push_back(id);  // -1: bytes left at the end that complete no character
    text += piece;
    return true;
  });
  EXPECT_EQ(s.prompt_tokens, 4);
  EXPECT_EQ(s.generated_tokens, 10);
  EXPECT_EQ(got.size(), 10u);
  // The streamed text is every byte of the tokens' pieces, control tokens left out.
  std::string pieces;
  for (int32_t id : got)
    if (!m.tokenizer().is_special(id)) pieces += m.tokenizer().piece(id);
  EXPECT_EQ(text, pieces);
  EXPECT_EQ(m.position(), 4 + 9);  // the last token is sampled, not run
  // Greedy generation is the argmax of the logits of the same sequence.
  m.reset();
  std::vector<int32_t> seq = prompt_ids(4);
  for (int i = 0; i < 3; ++i) {
    m.reset();
    const std::vector<float> l = m.forward(seq).to_vector<float>();
    const int32_t best = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
    EXPECT_EQ(best, got[static_cast<size_t>(i)]) << "step " << i;
    seq.push_back(best);
  }
  // A callback that returns false stops after its token.
  m.reset();
  int calls = 0;
  const llm::GenerateStats t = m.generate(prompt_ids(4), g, [&](int32_t, std::string_view) { return ++calls < 3; });
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(t.generated_tokens, 3);
}

// Sampling through generate(): the same seed gives the same tokens, another seed others.
TEST(LlmModel, SeededGenerationRepeats) {
  Model m = Model::load(tiny_model("seeded.gguf"), Device::cpu(), f32_options());
  auto run = [&](uint64_t seed) {
    llm::GenerateOptions g;
    g.max_tokens = 24;
    g.stop_at_end = false;
    g.sampler.temperature = 1.5;
    g.sampler.top_k = 50;
    g.sampler.seed = seed;
    std::vector<int32_t> got;
    m.reset();
    m.generate(prompt_ids(3), g, [&](int32_t id, std::string_view) {
      if (id >= 0) got.push_back(id);
      return true;
    });
    return got;
  };
  const std::vector<int32_t> a = run(5), b = run(5), c = run(6);
  EXPECT_EQ(a.size(), 24u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

// ---- bad input ------------------------------------------------------------------------------

TEST(LlmModel, BadModelFilesNameTheTensorOrKey) {
  Tiny missing;
  missing.drop = {"blk.1.ffn_up.weight"};
  const std::string p1 = tiny_model("missing.gguf", missing);
  expect_error<FormatError>([&] { Model::load(p1); }, {"blk.1.ffn_up.weight", "missing", "[128, 64]"});
  Tiny shaped;
  shaped.reshape = {{"blk.0.attn_k.weight", {48, 64}}};
  const std::string p2 = tiny_model("shape.gguf", shaped);
  expect_error<ShapeError>([&] { Model::load(p2); }, {"blk.0.attn_k.weight", "[48, 64]", "[32, 64]"});
  Tiny arch;
  arch.arch = "gpt9";
  const std::string p3 = tiny_model("arch.gguf", arch);
  expect_error<UnsupportedError>([&] { Model::load(p3); }, {"general.architecture", "gpt9"});
  Tiny heads;
  heads.kv_heads = 3;
  const std::string p4 = tiny_model("heads.gguf", heads);
  expect_error<FormatError>([&] { Model::load(p4); }, {"4 query heads", "3 kv heads"});
  Tiny context;
  context.context = int64_t{1} << 40;  // a KV cache of 2^40 positions: refused before any size is used
  const std::string p5 = tiny_model("context.gguf", context);
  expect_error<FormatError>([&] { Model::load(p5); }, {"sizes out of range", "context 1099511627776"});
  expect_error<IoError>([&] { Model::load(temp() / "absent.gguf"); }, {"absent.gguf"});
}

TEST(LlmModel, BadCallsAreRefusedBeforeAnyWork) {
  ModelOptions o = f32_options();
  o.context = 16;
  Model m = Model::load(tiny_model("calls.gguf"), Device::cpu(), o);
  EXPECT_EQ(m.context(), 16);
  (void)m.forward(prompt_ids(5));
  expect_error<InvalidArgument>([&] { m.forward(prompt_ids(12)); }, {"12 tokens", "5 cached", "16"});
  EXPECT_EQ(m.position(), 5);
  const std::vector<int32_t> bad = {3, static_cast<int32_t>(kVocab)};
  expect_error<InvalidArgument>([&] { m.forward(bad); }, {"id 279", "vocabulary of 279"});
  EXPECT_EQ(m.position(), 5);
  m.reset();
  llm::GenerateOptions g;
  expect_error<InvalidArgument>([&] { m.generate(prompt_ids(16), g); }, {"16 tokens", "context of 16"});
  expect_error<InvalidArgument>([&] { m.truncate(3); }, {"truncate to 3"});
  o.kv_dtype = DType::I32;
  expect_error<DTypeError>([&] { Model::load(temp() / "calls.gguf", Device::cpu(), o); }, {"KV cache", "i32"});
}

TEST(LlmModel, AModelTooLargeForTheGpuIsRefusedBeforeLoading) {
  if (testing::gpu_devices().empty()) GTEST_SKIP() << "no GPU";
  Tiny big;
  big.context = 1 << 30;
  ModelOptions o = f32_options();  // context 0: the model's 2^30 positions
  const std::string p = tiny_model("big.gguf", big);
  expect_error<OutOfMemory>([&] { Model::load(p, testing::gpu_devices()[0], o); }, {"KV cache", "MiB are free"});
}

}  // namespace
}  // namespace wick
