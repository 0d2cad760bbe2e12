// Sort at the shapes of LLM sampling (rows of a vocabulary: 32000, 128256, 151936 wide) and of
// short rows, against scripts/probes/sort_shapes.py (PyTorch) on the same GPU. Build against
// scripts/gpu-check.sh's build-gpu ($L: the wick executable's link line, as in host_profile.cpp):
//   g++ -std=c++20 -O2 -Iinclude -o /tmp/sort_shapes scripts/probes/sort_shapes.cpp $L
// and run /tmp/sort_shapes [ROWSxCOLS ...] (other shapes than these); prints the median ms of 20 runs
// after 3 warm-ups, descending sort (values and indices) of f32 and of bf16, one line per shape and
// dtype.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/tensor.h"
#include "wick/timing.h"

int main(int argc, char** argv) {
  const wick::Device d = wick::Device::cuda(0);
  std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 32000},    {1, 128256},   {1, 151936},  {32, 128256},
                                                     {256, 128256}, {4096, 32768}, {65536, 256}, {1, 1 << 24},
                                                     {4096, 5000},  {4096, 8192},  {2048, 16384}};
  if (argc > 1) shapes.clear();
  for (int k = 1; k < argc; ++k) {
    char* x = nullptr;
    const int64_t rows = std::strtoll(argv[k], &x, 10);
    shapes.emplace_back(rows, std::strtoll(x + 1, nullptr, 10));
  }
  for (const wick::DType dt : {wick::DType::F32, wick::DType::BF16})
    for (const auto& [rows, cols] : shapes) {
      const wick::Tensor x = wick::Tensor::rand_uniform({rows, cols}, dt, -1, 1, d);
      std::vector<double> ms;
      for (int r = 0; r < 23; ++r) {
        wick::DeviceTimer t(d);
        t.start();
        auto [v, i] = x.sort(-1, /*descending=*/true);
        const double e = t.stop_ms();
        if (r >= 3) ms.push_back(e);
      }
      std::sort(ms.begin(), ms.end());
      std::printf("wick  sort [%lld, %lld] desc %s: %.4f ms\n", static_cast<long long>(rows),
                  static_cast<long long>(cols), std::string(wick::dtype_name(dt)).c_str(), ms[ms.size() / 2]);
    }
  return 0;
}
