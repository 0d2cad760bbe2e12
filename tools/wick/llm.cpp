// `wick run` and `wick bench-model`: language models from the command line.
#include "wick/llm.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "files.h"

namespace wick::tool {

namespace {

using Clock = std::chrono::steady_clock;

const char* kRunUsage =
    "usage: wick run MODEL -p PROMPT [options]\n"
    "  MODEL: a .gguf file, or a Hugging Face folder (config.json, *.safetensors, tokenizer.json)\n"
    "  -p, --prompt TEXT        the prompt\n"
    "  -n, --n-predict N        new tokens at most (default 128)\n"
    "  --device D               cpu (default), cuda, cuda:1, rocm, ...\n"
    "  --temp T                 temperature; 0 is greedy (default 0.8)\n"
    "  --top-k K                keep the K most likely tokens (default 40; 0: off)\n"
    "  --top-p P                nucleus sampling (default 0.95; 1: off)\n"
    "  --min-p P                drop tokens below P x the top probability (default 0.05; 0: off)\n"
    "  --repeat-penalty R       penalty of recent tokens (default 1: off)\n"
    "  --repeat-last-n N        recent tokens the penalty sees (default 64)\n"
    "  --seed S                 sampling seed (default 0)\n"
    "  --ctx N                  KV cache positions (default 4096, at most the model's)\n"
    "  --kv f16|bf16|f32        KV cache dtype (default f16)\n"
    "  --no-graphs              queue each op of a decode step (default: a recorded graph on GPUs)\n"
    "  --no-bos                 do not add the BOS token\n"
    "  --ignore-eos             keep generating past end-of-generation tokens\n";

const char* kBenchUsage =
    "usage: wick bench-model MODEL [options]\n"
    "  prefill (pp) and decode (tg) rates in tokens/s, the median of the runs, like llama-bench\n"
    "  --device D               cpu (default), cuda, ...\n"
    "  -p N                     prompt tokens of the prefill run (default 512)\n"
    "  -n N                     decoded tokens of the decode runs (default 128)\n"
    "  -r N                     runs of each (default 5)\n"
    "  --kv f16|bf16|f32        KV cache dtype (default f16)\n"
    "  --no-graphs              queue each op of a decode step (default: a recorded graph on GPUs)\n"
    "  --json                   print JSON\n";

// A dtype name; which dtypes a KV cache may have is Model::load's to say.
DType parse_kv(const std::string& s) {
  DType d;
  if (!parse_dtype(s, &d)) throw InvalidArgument("[run] --kv takes f16, bf16 or f32, not " + s);
  return d;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Numeric option values: a bad one is a usage error, not an exception from std::stod.
bool number(const char* s, double* out) {
  char* end = nullptr;
  *out = std::strtod(s, &end);
  return end != s && *end == '\0';
}

}  // namespace

int cmd_run(int argc, char** argv) {
  std::string path, prompt, device = "cpu";
  llm::ModelOptions mo;
  llm::GenerateOptions g;
  g.sampler.temperature = 0.8;
  g.sampler.top_k = 40;
  g.sampler.top_p = 0.95;
  g.sampler.min_p = 0.05;
  bool have_prompt = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return 0;
    }
    if (a == "--no-bos") {
      g.add_special = false;
      continue;
    }
    if (a == "--no-graphs") {
      mo.graphs = false;
      continue;
    }
    if (a == "--ignore-eos") {
      g.stop_at_end = false;
      continue;
    }
    if (!a.empty() && a[0] == '-') {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "wick run: option %s needs a value\n%s", a.c_str(), kRunUsage);
        return 2;
      }
      const char* v = argv[++i];
      double x = 0;
      const bool num = number(v, &x);
      if (a == "-p" || a == "--prompt") {
        prompt = v;
        have_prompt = true;
      } else if (a == "--device") {
        device = v;
      } else if (a == "--kv") {
        mo.kv_dtype = parse_kv(v);
      } else if (num && (a == "-n" || a == "--n-predict")) {
        g.max_tokens = static_cast<int64_t>(x);
      } else if (num && a == "--temp") {
        g.sampler.temperature = x;
      } else if (num && a == "--top-k") {
        g.sampler.top_k = static_cast<int64_t>(x);
      } else if (num && a == "--top-p") {
        g.sampler.top_p = x;
      } else if (num && a == "--min-p") {
        g.sampler.min_p = x;
      } else if (num && a == "--repeat-penalty") {
        g.sampler.repeat_penalty = x;
      } else if (num && a == "--repeat-last-n") {
        g.sampler.repeat_last_n = static_cast<int64_t>(x);
      } else if (num && a == "--seed") {
        g.sampler.seed = static_cast<uint64_t>(x);
      } else if (num && a == "--ctx") {
        mo.context = static_cast<int64_t>(x);
      } else {
        std::fprintf(stderr, "wick run: bad option %s %s\n%s", a.c_str(), v, kRunUsage);
        return 2;
      }
    } else if (path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "wick run: unexpected argument %s\n%s", a.c_str(), kRunUsage);
      return 2;
    }
  }
  if (path.empty() || !have_prompt) {
    std::fputs(kRunUsage, stderr);
    return 2;
  }
  llm::Model m = llm::Model::load(path, Device::parse(device), mo);
  std::fputs(prompt.c_str(), stdout);
  std::fflush(stdout);
  const llm::GenerateStats s = m.generate(prompt, g, [](int32_t, std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  std::printf("\n");
  std::fprintf(stderr,
               "\nprefill: %lld tokens in %.3f s, %.1f tokens/s\ndecode: %lld tokens in %.3f s, %.1f tokens/s\n",
               static_cast<long long>(s.prompt_tokens), s.prefill_seconds, s.prefill_tokens_per_second(),
               static_cast<long long>(s.generated_tokens), s.decode_seconds, s.decode_tokens_per_second());
  return 0;
}

int cmd_bench_model(int argc, char** argv) {
  std::string path, device = "cpu";
  int64_t pp = 512, tg = 128, runs = 5;
  bool json = false;
  llm::ModelOptions mo;
  mo.progress_bar = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    double x = 0;
    if (a == "--help" || a == "-h") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--no-graphs") {
      mo.graphs = false;
    } else if (a == "--device" && i + 1 < argc) {
      device = argv[++i];
    } else if (a == "--kv" && i + 1 < argc) {
      mo.kv_dtype = parse_kv(argv[++i]);
    } else if ((a == "-p" || a == "-n" || a == "-r") && i + 1 < argc && number(argv[i + 1], &x) && x >= 1) {
      (a == "-p" ? pp : a == "-n" ? tg : runs) = static_cast<int64_t>(x);
      ++i;
    } else if (a[0] != '-' && path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "wick bench-model: bad argument %s\n%s", a.c_str(), kBenchUsage);
      return 2;
    }
  }
  if (path.empty()) {
    std::fputs(kBenchUsage, stderr);
    return 2;
  }
  mo.context = pp + tg;
  mo.prefill_chunk = pp;
  llm::Model m = llm::Model::load(path, Device::parse(device), mo);
  std::mt19937 rng(1);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(m.config().vocab_size - 1));
  std::vector<int32_t> prompt(static_cast<size_t>(pp));
  for (int32_t& t : prompt) t = pick(rng);

  // pp: the prompt in one pass from an empty cache. tg: tokens one at a time, each waiting for its
  // logits on the host as sampling does, from an empty cache and after the pp prompt.
  auto time_pp = [&]() {
    m.reset();
    const auto t0 = Clock::now();
    (void)m.forward(prompt).to_vector<float>();
    return static_cast<double>(pp) / std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto time_tg = [&](bool after_prompt) {
    m.reset();
    if (after_prompt) (void)m.forward(prompt).to_vector<float>();
    const auto t0 = Clock::now();
    for (int64_t i = 0; i < tg; ++i) {
      const int32_t id[1] = {prompt[static_cast<size_t>(i % pp)]};
      (void)m.forward(id).to_vector<float>();
    }
    return static_cast<double>(tg) / std::chrono::duration<double>(Clock::now() - t0).count();
  };
  (void)time_pp();  // warm-up: pools, kernels, library handles
  (void)time_tg(false);
  std::vector<double> r_pp, r_tg, r_tg_deep;
  for (int64_t r = 0; r < runs; ++r) {
    r_pp.push_back(time_pp());
    r_tg.push_back(time_tg(false));
    r_tg_deep.push_back(time_tg(true));
  }
  const std::string kv(dtype_name(mo.kv_dtype));
  const double gb = static_cast<double>(m.weight_bytes()) / 1e9;
  if (json) {
    std::printf(
        "{\"model\": \"%s\", \"device\": \"%s\", \"weights_gb\": %.3f, \"kv\": \"%s\", \"graphs\": %s, "
        "\"runs\": %lld, \"pp%lld\": %.1f, \"tg%lld\": %.1f, \"tg%lld@%lld\": %.1f}\n",
        path.c_str(), m.device().location().c_str(), gb, kv.c_str(), mo.graphs ? "true" : "false",
        static_cast<long long>(runs), static_cast<long long>(pp), median(r_pp), static_cast<long long>(tg),
        median(r_tg), static_cast<long long>(tg), static_cast<long long>(pp), median(r_tg_deep));
  } else {
    std::printf("%s on %s: %s, %.2f GB of weights, KV cache %s, median of %lld runs\n", path.c_str(),
                m.device().location().c_str(), m.config().str().c_str(), gb, kv.c_str(), static_cast<long long>(runs));
    std::printf("  pp%-4lld %10.1f tokens/s\n", static_cast<long long>(pp), median(r_pp));
    std::printf("  tg%-4lld %10.1f tokens/s\n", static_cast<long long>(tg), median(r_tg));
    std::printf("  tg%lld @ %lld %7.1f tokens/s\n", static_cast<long long>(tg), static_cast<long long>(pp),
                median(r_tg_deep));
  }
  return 0;
}

}  // namespace wick::tool
