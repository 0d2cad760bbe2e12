// Runs a model for llm_reference.py:
//   llm_tool logits MODEL --ids 1,5,9 [--device D] [--kv f32|f16|bf16] [--chunk N] --out FILE.npy
//       f32 logits [T, vocab] of every position, as .npy
//   llm_tool generate MODEL --ids 1,5,9 -n N [--device D] [--kv ...] [--chunk N]
//       the N greedy ids (not stopping at end-of-generation tokens), space-separated
//   llm_tool encode MODEL --text TEXT
//       the prompt's ids as the model's tokenizer encodes it (BOS as configured), comma-separated
// Errors print their message and exit 1; bad arguments exit 2.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "wick/io.h"
#include "wick/llm.h"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "llm_tool: %s\n", why.c_str());
  std::exit(2);
}

std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find(',', i);
    if (j == std::string::npos) j = s.size();
    ids.push_back(static_cast<int32_t>(std::stol(s.substr(i, j - i))));
    i = j + 1;
  }
  return ids;
}

wick::DType parse_kv(const std::string& s) {
  wick::DType d;
  if (!wick::parse_dtype(s, &d)) usage("--kv takes f32, f16 or bf16");
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage("usage: llm_tool logits|generate|encode MODEL [options]");
  const std::string cmd = argv[1], path = argv[2];
  std::string ids_arg, out, device = "cpu", text;
  int64_t n = 32;
  wick::llm::ModelOptions mo;
  mo.context = 0;
  mo.kv_dtype = wick::DType::F32;
  mo.progress_bar = false;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    if (a == "--ids") {
      ids_arg = v;
    } else if (a == "--out") {
      out = v;
    } else if (a == "--device") {
      device = v;
    } else if (a == "--kv") {
      mo.kv_dtype = parse_kv(v);
    } else if (a == "--chunk") {
      mo.prefill_chunk = std::stol(v);
    } else if (a == "-n") {
      n = std::stol(v);
    } else if (a == "--text") {
      text = v;
    } else {
      usage("unknown option " + a);
    }
  }
  try {
    wick::llm::Model m = wick::llm::Model::load(path, wick::Device::parse(device), mo);
    if (cmd == "encode") {
      const std::vector<int32_t> ids = m.tokenizer().encode(text);
      for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? "," : "", ids[i]);
      std::printf("\n");
      return 0;
    }
    const std::vector<int32_t> ids = parse_ids(ids_arg);
    if (ids.empty()) usage("--ids is required");
    if (cmd == "logits") {
      if (out.empty()) usage("--out is required");
      wick::save_npy(out, m.forward(ids, true).to(wick::Device::cpu()));
    } else if (cmd == "generate") {
      wick::llm::GenerateOptions g;
      g.max_tokens = n;
      g.stop_at_end = false;
      g.add_special = false;
      std::vector<int32_t> got;
      m.generate(std::span<const int32_t>(ids), g, [&](int32_t id, std::string_view) {
        if (id >= 0) got.push_back(id);  // -1: the bytes left at the end
        return true;
      });
      for (size_t i = 0; i < got.size(); ++i) std::printf("%s%d", i ? " " : "", got[i]);
      std::printf("\n");
    } else {
      usage("unknown command " + cmd);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
