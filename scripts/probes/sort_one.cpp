// One descending f32 sort of [rows, cols] (argv[1], argv[2]) on cuda:0 after one warm-up, for a
// profiler to look at (ncu --kernel-name regex:long_). Build as scripts/probes/sort_shapes.cpp.
#include <cstdio>
#include <cstdlib>

#include "wick/tensor.h"

int main(int argc, char** argv) {
  const int64_t rows = argc > 2 ? std::atoll(argv[1]) : 1, cols = argc > 2 ? std::atoll(argv[2]) : 1 << 24;
  const wick::Device d = wick::Device::cuda(0);
  const wick::Tensor x = wick::Tensor::rand_uniform({rows, cols}, wick::DType::F32, -1, 1, d);
  for (int r = 0; r < 2; ++r) (void)x.sort(-1, /*descending=*/true);
  d.synchronize();
  std::printf("sorted [%lld, %lld]\n", static_cast<long long>(rows), static_cast<long long>(cols));
  return 0;
}
