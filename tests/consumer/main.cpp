// Built against an installed wick by tests/consumer/CMakeLists.txt (find_package) and by pkg-config
// in .ci/run: a few ops, a model-file round trip and the version, checked against known values.
#include <wick/wick.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

int main() {
  using namespace wick;
  try {
    const Tensor x = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
    const std::vector<float> s = x.matmul(x.t()).to_vector<float>();  // [[14, 32], [32, 77]]
    const std::vector<float> want = {14, 32, 32, 77};
    for (size_t i = 0; i < want.size(); ++i)
      if (std::fabs(s[i] - want[i]) > 1e-5f) {
        std::fprintf(stderr, "matmul: element %zu is %g, expected %g\n", i, s[i], want[i]);
        return 1;
      }
    const QTensor q = quantize(Tensor::rand_uniform({4, 256}, DType::F32, -1, 1), QFormat::Q8_0);
    if (q.dequantize().shape() != Shape{4, 256}) return 1;
    std::printf("wick %s (cuda %d, rocm %d): ok\n", WICK_VERSION_STRING, WICK_HAS_CUDA, WICK_HAS_ROCM);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
