// The README's example (keep the two in sync).
#include <wick/wick.h>

int main() {
  using namespace wick;
  Device dev = Device::gpu_if_available();      // cuda:0, rocm:0 or the CPU
  dev.set_seed(42);
  Tensor x = Tensor::rand_normal({4, 4096}, DType::BF16, 0.0, 1.0, dev);
  Tensor w = Tensor::ones({4096}, DType::BF16, dev);
  Tensor y = x.rms_norm(w, 1e-6).matmul(x.t());  // [4, 4] in bf16, f32 accumulation
  Tensor p = y.to_dtype(DType::F32).softmax(-1);
  std::vector<float> host = p.to_vector<float>();  // copies to the host
  return host.size() == 16 ? 0 : 1;
}
