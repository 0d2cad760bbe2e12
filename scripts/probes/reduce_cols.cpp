// Times reductions over dim 0 (column mode) and dim -1 of [rows, cols] on the CPU, median of
// argv[1] runs (default 20), for A/B builds: link against two libwick.a and compare (link line as
// in scripts/probes/cpu_gemm.sh; an old build's library is libwick.a with `ar r` of the old
// reduce.cpp.o).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "median.h"
#include "wick/tensor.h"

using wick::Tensor;

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const wick::Device d = wick::Device::cpu();
  struct Case {
    int64_t r, c;
    wick::DType dt;
  };
  for (const Case cs : {Case{2048, 8192, wick::DType::F32}, Case{2048, 8192, wick::DType::BF16},
                        Case{16384, 1024, wick::DType::F32}, Case{512, 32768, wick::DType::F32}}) {
    const Tensor x = Tensor::rand_uniform({cs.r, cs.c}, cs.dt, -1, 1, d);
    for (int dim : {0, -1}) {
      const double s = median_ms(reps, [&] { (void)x.sum({dim}); });
      const double m = median_ms(reps, [&] { (void)x.max({dim}); });
      const double a = median_ms(reps, [&] { (void)x.argmax({dim}); });
      std::printf("%6lld x %-6lld %-4s dim %2d: sum %7.3f  max %7.3f  argmax %7.3f ms\n", (long long)cs.r,
                  (long long)cs.c, std::string(wick::dtype_name(cs.dt)).c_str(), dim, s, m, a);
    }
  }
  return 0;
}
