// The rows of `wick bench`: what one row is, and the helpers both row sets (bench.cpp's ANCHORS.md
// set, bench_llm.cpp's LLM set) build their inputs with.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "wick/tensor.h"

namespace wick::tool {

using Run = std::function<void()>;

struct Spec {
  std::string op, shape, dtype;
  double bytes = 0;     // read + written once, per run
  double flops = 0;     // per run; > 0 makes it a TFLOP/s row
  double in_bytes = 0;  // the inputs of one run: decides the rotation
  int64_t chain = 0;    // > 0: a host-overhead row, rate in us per op
  double rotate = 0;    // > 0: rotate input sets until they total this many bytes (default: twice L2)
  DType math = DType::F32;
  std::function<Run(const Device&)> make;  // builds one input set and the run over it
};

// Appends a row to v.
void add_row(std::vector<Spec>& v, std::string op, std::string shape, std::string dtype, double bytes, double flops,
             double in_bytes, std::function<Run(const Device&)> make, DType math = DType::F32);

// Uniform random data in [lo, up). A young backend may lack random numbers for a dtype (or at
// all): then the data is made on the CPU and moved, so the op itself still gets measured.
Tensor rnd(const Shape& s, DType dt, const Device& d, double lo = -1.0, double up = 1.0);

// Random i64 ids in [0, n - 1].
Tensor ids(const Shape& s, int64_t n, const Device& d);

// "2x3x4".
std::string dims(std::initializer_list<int64_t> v);

// Bytes per element.
double sz(DType d);

// The LLM row set (bench_llm.cpp) for shape set "gpu", "cpu" or "quick".
std::vector<Spec> make_llm_specs(const std::string& set);
// The quantized matmul row set (bench_quant.cpp), likewise.
std::vector<Spec> make_quant_specs(const std::string& set);

}  // namespace wick::tool
