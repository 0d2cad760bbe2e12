// tok_tool: wick's tokenizers on the command line, for tokenizer_interop.py.
//
//   tok_tool encode PATH [--no-add-special] [--no-parse-special]
//       stdin: one text per line as hex bytes; stdout: its ids, space-separated
//   tok_tool decode PATH [--keep-special]
//       stdin: ids per line, space-separated; stdout: the text as hex bytes ("!message" on an error)
//   tok_tool pieces PATH
//       stdin: ids per line; stdout: each id's piece as hex bytes, space-separated
//   tok_tool info PATH
//   tok_tool to-gguf PATH OUT.gguf
//
// PATH is a .gguf file (its tokenizer.ggml.* keys) or a tokenizer.json / its folder. Hex keeps the
// exchange byte-exact, text that is not UTF-8 included.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "wick/error.h"
#include "wick/io.h"
#include "wick/llm.h"

namespace {

using wick::llm::Tokenizer;

Tokenizer load(const std::string& path) {
  if (path.size() > 5 && path.compare(path.size() - 5, 5, ".gguf") == 0)
    return Tokenizer::from_gguf(wick::GgufFile::open(path).metadata());
  return Tokenizer::from_hf(path);
}

std::string to_hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

std::string from_hex(const std::string& h) {
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw wick::InvalidArgument("tok_tool: '" + std::string(1, c) + "' is not a hex digit");
  };
  if (h.size() % 2 != 0) throw wick::InvalidArgument("tok_tool: odd hex length");
  std::string out;
  for (size_t i = 0; i < h.size(); i += 2) out.push_back(static_cast<char>(nibble(h[i]) << 4 | nibble(h[i + 1])));
  return out;
}

std::vector<int32_t> parse_ids(const std::string& line) {
  std::vector<int32_t> ids;
  std::istringstream in(line);
  long long v;
  while (in >> v) ids.push_back(static_cast<int32_t>(v));
  return ids;
}

bool has(int argc, char** argv, const std::string& flag) {
  for (int i = 3; i < argc; ++i)
    if (flag == argv[i]) return true;
  return false;
}

int run(int argc, char** argv) {
  const std::string cmd = argv[1];
  const Tokenizer t = load(argv[2]);
  std::string line;
  if (cmd == "encode") {
    const bool add = !has(argc, argv, "--no-add-special"), parse = !has(argc, argv, "--no-parse-special");
    while (std::getline(std::cin, line)) {
      const std::vector<int32_t> ids = t.encode(from_hex(line), add, parse);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
      std::cout << '\n';
    }
  } else if (cmd == "decode") {
    const bool skip = !has(argc, argv, "--keep-special");
    while (std::getline(std::cin, line)) {
      try {
        std::cout << to_hex(t.decode(parse_ids(line), skip)) << '\n';
      } catch (const wick::IndexError& e) {
        std::cout << '!' << e.what() << '\n';
      }
    }
  } else if (cmd == "pieces") {
    while (std::getline(std::cin, line)) {
      const std::vector<int32_t> ids = parse_ids(line);
      for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << to_hex(t.piece(ids[i]));
      std::cout << '\n';
    }
  } else if (cmd == "info") {
    std::cout << "kind " << (t.kind() == Tokenizer::Kind::Spm ? "spm" : "bpe") << " vocab " << t.vocab_size() << " bos "
              << t.bos() << " eos " << t.eos() << '\n';
  } else if (cmd == "to-gguf" && argc == 4) {
    wick::GgufWriter w;
    t.to_gguf(w.metadata());
    w.write(argv[3]);
  } else {
    std::cerr << "tok_tool: unknown command '" << cmd << "'\n";
    return 2;
  }
  std::cout.flush();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tok_tool encode|decode|pieces|info PATH [flags] | tok_tool to-gguf PATH OUT.gguf\n";
    return 2;
  }
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "tok_tool: " << e.what() << '\n';
    return 1;
  }
}
