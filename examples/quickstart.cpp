#include <wick/wick.h>

#include <cstdio>

int main() {
  using namespace wick;
  try {
    Device dev = Device::gpu_if_available();  // cuda:0, rocm:0 or the CPU
    dev.set_seed(42);
    Tensor x = Tensor::rand_normal({4, 4096}, DType::BF16, 0.0, 1.0, dev);
    Tensor w = Tensor::ones({4096}, DType::BF16, dev);
    Tensor y = x.rms_norm(w, 1e-6).matmul(x.t());    // [4, 4] in bf16, f32 accumulation
    Tensor p = y.to_dtype(DType::F32).softmax(-1);   // rows sum to 1
    std::vector<float> host = p.to_vector<float>();  // copies to the host
    std::printf("%s: p[0] = %.4f %.4f %.4f %.4f\n", dev.location().c_str(), host[0], host[1], host[2], host[3]);
  } catch (const Error& e) {  // every wick error derives from wick::Error
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
