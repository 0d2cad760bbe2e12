// Times wick's CPU matmul (bf16, or the dtype named: f16, f32, f64) on the shapes of the CPU benchmark's matmul and bmm
// rows and a few more (small k as in attention, skinny m as in LLM prefill and batched decoding, a batch of activations
// against one weight: shared b, a 2-d operand; b = W^T of a row-major W; batches of small products);
// scripts/probes/cpu_gemm.py times the same with PyTorch. Median of 50 runs after 5 warm-ups, a steady clock around
// each call (the CPU backend is synchronous). With the CPU build of wick in B:
//   g++ -std=c++20 -O2 -Iinclude -o /tmp/cg scripts/probes/cpu_gemm.cpp $(scripts/probes/wick-link.sh $B)
//   /tmp/cg [reps] [dtype] [skinny]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/tensor.h"

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 50;
  const std::string dt_name = argc > 2 ? argv[2] : "bf16";
  const wick::DType dt = dt_name == "f32"   ? wick::DType::F32
                         : dt_name == "f16" ? wick::DType::F16
                         : dt_name == "f64" ? wick::DType::F64
                                            : wick::DType::BF16;
  const wick::Device d = wick::Device::cpu();
  struct Case {
    int64_t b, m, k, n;
    bool shared_b = false;
    bool b_transposed = false;  // b the transpose of a row-major [n, k] (a linear layer's weight; per batch
                                // unless shared: keys in attention)
  };
  const Case cases[] = {{4, 1024, 128, 1024},
                        {1, 2048, 2048, 2048},
                        {32, 512, 64, 512},
                        {16, 128, 128, 2048},
                        {1, 64, 4096, 4096},
                        {1, 512, 4096, 4096},
                        {64, 1024, 128, 1024},
                        {8, 64, 4096, 4096, true},
                        {8, 1, 4096, 4096, true},
                        {1, 512, 4096, 4096, true, true},
                        {10000, 8, 8, 8},
                        {2000, 16, 16, 16},
                        {500, 32, 32, 32},
                        {100, 64, 64, 64},
                        {1, 128, 128, 128},
                        {1, 256, 256, 256},
                        {1, 4, 4096, 4096},
                        {1, 8, 4096, 4096},
                        {1, 16, 4096, 4096},
                        {1, 32, 4096, 4096},
                        {1, 4, 4096, 4096, true, true},
                        {1, 8, 4096, 4096, true, true},
                        {1, 16, 4096, 4096, true, true},
                        {1, 32, 4096, 4096, true, true},
                        {1, 64, 4096, 4096, true, true},
                        {1, 1, 4096, 4096, true, true},
                        {1, 2, 4096, 4096, true, true},
                        {1, 128, 4096, 4096, true, true},
                        {1, 256, 4096, 4096, true, true},
                        {1, 16, 4096, 14336, true, true},
                        {1, 16, 14336, 4096, true, true},
                        {32, 16, 128, 2048, false, true},
                        {32, 64, 128, 512, false, true}};
  // "skinny" as the third argument: only the products of a few rows against a 4096 x 4096 matrix;
  // "wt": only those against W^T (a linear layer's weight W stored [n, k]).
  const bool skinny = argc > 3 && std::string(argv[3]) == "skinny", wt = argc > 3 && std::string(argv[3]) == "wt";
  for (const Case& c : cases) {
    if (skinny && !(c.b * c.m <= 64 && c.k == 4096 && c.n == 4096)) continue;
    if (wt && !c.b_transposed) continue;
    // Two input sets, alternated, as the benchmark rotates inputs that fit in its 50 MB.
    std::vector<wick::Tensor> as, bs;
    for (int s = 0; s < 2; ++s) {
      as.push_back(wick::Tensor::rand_uniform({c.b, c.m, c.k}, dt, -1, 1, d));
      bs.push_back(c.b_transposed && !c.shared_b
                       ? wick::Tensor::rand_uniform({c.b, c.n, c.k}, dt, -1, 1, d).transpose(-1, -2)
                   : c.b_transposed ? wick::Tensor::rand_uniform({c.n, c.k}, dt, -1, 1, d).t()
                   : c.shared_b     ? wick::Tensor::rand_uniform({c.k, c.n}, dt, -1, 1, d)
                                    : wick::Tensor::rand_uniform({c.b, c.k, c.n}, dt, -1, 1, d));
    }
    std::vector<double> ms;
    for (int r = 0; r < reps + 5; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      (void)as[r % 2].matmul(bs[r % 2]);
      const double t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 5) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    const double tf = 2.0 * c.b * c.m * c.n * c.k / med / 1e9;
    std::printf("wick %s %lldx(%lldx%lld @ %s%lldx%lld%s): %.4f ms (min %.4f, %.2f TFLOP/s)\n", dt_name.c_str(),
                static_cast<long long>(c.b), static_cast<long long>(c.m), static_cast<long long>(c.k),
                c.shared_b ? "shared " : "", static_cast<long long>(c.k), static_cast<long long>(c.n),
                c.b_transposed ? "^T" : "", med, ms.front(), tf);
  }
  return 0;
}
