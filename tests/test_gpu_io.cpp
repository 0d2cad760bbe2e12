// Model files read to a GPU (Note [Streaming loads] in src/io/tensor_file.cpp): every tensor that
// arrives on the device has the bytes of the CPU view of the mapping, through single reads (the
// backend's staged copies) and through load() (the ring of page-locked buffers, with tensors
// larger than the ring so that buffers are reused), for dense, quantized, Fortran-order and
// misaligned tensors. Every test skips when no GPU is present.
#include <gtest/gtest.h>

#include <filesystem>

#include "test_util.h"
#include "wick/io.h"

namespace wick {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  static const testing::TempDir dir("gpu_io");
  return dir.path() / name;
}

void expect_same_bytes(const Tensor& gpu, const Tensor& cpu, const std::string& what) {
  ASSERT_EQ(gpu.shape(), cpu.shape()) << what;
  ASSERT_EQ(gpu.dtype(), cpu.dtype()) << what;
  const Tensor a = gpu.to(Device::cpu()).contiguous(), b = cpu.contiguous();
  const int64_t n = a.numel() * dtype_size(a.dtype());
  std::vector<uint8_t> x(static_cast<size_t>(n)), y(static_cast<size_t>(n));
  a.to_host(x.data(), n);
  b.to_host(y.data(), n);
  EXPECT_TRUE(x == y) << what;
}

TEST(GpuIo, SafetensorsTensorsArriveWithTheirBytes) {
  WICK_REQUIRE_GPU(devs);
  const fs::path p = temp_file("a.safetensors");
  Device::cpu().set_seed(3);
  // 3 x 40 MiB of f32 exceeds the ring (4 buffers of 32 MiB); the u8 tensor of odd size leaves
  // the next one misaligned for its dtype.
  std::vector<std::pair<std::string, Tensor>> ts;
  for (int i = 0; i < 3; ++i)
    ts.emplace_back("big" + std::to_string(i), Tensor::rand_normal({10, 1 << 20}, DType::F32, 0, 1));
  ts.emplace_back("odd", Tensor::rand_uniform({7}, DType::F32, 0, 250).to_dtype(DType::U8));
  ts.emplace_back("half", Tensor::rand_normal({33, 17}, DType::F32, 0, 1).to_dtype(DType::F16));
  ts.emplace_back("empty", Tensor::empty({0, 5}, DType::BF16));
  save_safetensors(p.string(), ts);
  const SafetensorsFile f = SafetensorsFile::open(p.string());
  for (const Device& d : devs) {
    for (const auto& [name, t] : ts) expect_same_bytes(f.tensor(name, d), f.tensor(name), name + " on " + d.location());
    int64_t seen = 0;
    LoadOptions o;
    o.progress = [&](int64_t done, int64_t) { seen = done; };
    const auto all = f.load(d, o);
    ASSERT_EQ(all.size(), ts.size());
    for (const auto& [name, t] : ts) {
      EXPECT_EQ(all.at(name).tensor.device(), d);
      expect_same_bytes(all.at(name).tensor, f.tensor(name), "load(): " + name);
    }
    EXPECT_EQ(seen, 3 * 40 * (int64_t{1} << 20) + 7 + 33 * 17 * 2);
  }
  fs::remove(p);
}

TEST(GpuIo, QuantizedAndFortranTensorsArriveWithTheirValues) {
  WICK_REQUIRE_GPU(devs);
  const fs::path g = temp_file("q.gguf");
  Device::cpu().set_seed(4);
  const QTensor q = quantize(Tensor::rand_normal({64, 512}, DType::F32, 0, 1), QFormat::Q4_K);
  GgufWriter w;
  w.add("w", q);
  w.write(g.string());
  const GgufFile gf = GgufFile::open(g.string());
  const fs::path n = temp_file("f.npy");
  // A Fortran-order array, written as .npy bytes by hand: the header of numpy's format 1.0.
  const Tensor a = Tensor::rand_normal({3, 5}, DType::F32, 0, 1);
  {
    std::string h = "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 5), }";
    while ((10 + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::vector<uint8_t> bytes = {0x93,
                                  'N',
                                  'U',
                                  'M',
                                  'P',
                                  'Y',
                                  1,
                                  0,
                                  static_cast<uint8_t>(h.size() & 0xff),
                                  static_cast<uint8_t>(h.size() >> 8)};
    bytes.insert(bytes.end(), h.begin(), h.end());
    const std::vector<float> col = a.t().contiguous().to_vector<float>();  // column-major order
    const auto* c = reinterpret_cast<const uint8_t*>(col.data());
    bytes.insert(bytes.end(), c, c + col.size() * 4);
    FILE* fp = std::fopen(n.c_str(), "wb");
    ASSERT_NE(fp, nullptr);
    std::fwrite(bytes.data(), 1, bytes.size(), fp);
    std::fclose(fp);
  }
  const NpyFile nf = NpyFile::open(n.string());
  for (const Device& d : devs) {
    const QTensor qd = gf.qtensor("w", d);
    EXPECT_EQ(qd.device(), d);
    expect_same_bytes(qd.bytes(), q.bytes(), "q4_k bytes");
    expect_same_bytes(qd.dequantize(DType::F32), q.dequantize(DType::F32), "q4_k dequantized on " + d.location());
    const auto all = gf.load(d);
    expect_same_bytes(all.at("w").qtensor.bytes(), q.bytes(), "load(): q4_k");
    expect_same_bytes(nf.tensor(d), a, "fortran-order npy on " + d.location());
  }
  fs::remove(g);
  fs::remove(n);
}

}  // namespace
}  // namespace wick
