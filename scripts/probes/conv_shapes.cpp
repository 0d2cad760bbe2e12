// 16-bit 3x3 convolutions (stride 1, padding 1) at the shapes of vision models (ResNet stages,
// Stable Diffusion's UNet and VAE), against scripts/probes/conv_shapes.py (PyTorch, cuDNN) on the
// same GPU. Build against scripts/gpu-check.sh's build-gpu ($L: the wick executable's link line, as
// in host_profile.cpp):
//   g++ -std=c++20 -O2 -Iinclude -o /tmp/conv_shapes scripts/probes/conv_shapes.cpp $L
// and run /tmp/conv_shapes [N,C,H,W,CO ...] (other shapes than these); prints the median ms of 20
// runs after 3 warm-ups, one line per shape and dtype.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "wick/tensor.h"
#include "wick/timing.h"

int main(int argc, char** argv) {
  const wick::Device d = wick::Device::cuda(0);
  std::vector<std::array<int64_t, 5>> shapes = {
      {32, 64, 56, 56, 64},    {32, 128, 28, 28, 128}, {32, 256, 14, 14, 256},
      {2, 320, 64, 64, 320},   {2, 640, 32, 32, 640},  {2, 1280, 16, 16, 1280},
      {1, 128, 256, 256, 128}, {1, 512, 64, 64, 512},  {8, 64, 128, 128, 64}};
  if (argc > 1) shapes.clear();
  for (int k = 1; k < argc; ++k) {
    std::array<int64_t, 5> s{};
    char* p = argv[k];
    for (int64_t& v : s) {
      v = std::strtoll(p, &p, 10);
      if (*p == ',') ++p;
    }
    shapes.push_back(s);
  }
  for (const wick::DType dt : {wick::DType::BF16, wick::DType::F16})
    for (const auto& [n, c, h, w, co] : shapes) {
      const wick::Tensor x = wick::Tensor::rand_uniform({n, c, h, w}, dt, -1, 1, d);
      const wick::Tensor k = wick::Tensor::rand_uniform({co, c, 3, 3}, dt, -1, 1, d);
      wick::Conv2dParams p;
      p.padding = {1, 1};
      std::vector<double> ms;
      for (int r = 0; r < 23; ++r) {
        wick::DeviceTimer t(d);
        t.start();
        const wick::Tensor y = x.conv2d(k, p);
        const double e = t.stop_ms();
        if (r >= 3) ms.push_back(e);
      }
      std::sort(ms.begin(), ms.end());
      const double med = ms[ms.size() / 2], flops = 2.0 * n * co * h * w * c * 9;
      std::printf("wick  conv2d [%lld, %lld, %lld, %lld] -> %lld %s: %.4f ms %.1f TFLOP/s\n", static_cast<long long>(n),
                  static_cast<long long>(c), static_cast<long long>(h), static_cast<long long>(w),
                  static_cast<long long>(co), std::string(wick::dtype_name(dt)).c_str(), med, flops / med * 1e-9);
    }
  return 0;
}
