#include <wick/wick.h>

#include <cstdio>
#include <string>

// usage: model_files [CHECKPOINT] [GGUF]   (without arguments it writes two small files first)
int main(int argc, char** argv) {
  using namespace wick;
  try {
    std::string st_path = argc > 1 ? argv[1] : "demo.safetensors", gguf_path = argc > 2 ? argv[2] : "demo.gguf";
    if (argc < 3) {  // a bf16 checkpoint and a q4_k GGUF to read back
      Tensor w = Tensor::rand_normal({256, 512}, DType::F32, 0.0, 0.02);
      save_safetensors(st_path, {{"layers.0.weight", w.to_dtype(DType::BF16)}}, {{"format", "pt"}});
      GgufWriter g;
      g.metadata().set("general.architecture", GgufValue::string("llama"));
      g.add("blk.0.attn_q.weight", quantize(w, QFormat::Q4_K));
      g.write(gguf_path);
    }
    Device dev = Device::gpu_if_available();

    // safetensors: a file, an index of shards or a folder; tensors are views of the mapping.
    SafetensorsFile st = SafetensorsFile::open(st_path);
    for (const FileTensor& t : st.tensors())
      std::printf("%s %s %s\n", t.name.c_str(), t.type.c_str(), t.shape.str().c_str());
    auto weights = st.load(dev);  // every tensor on dev, streamed through page-locked buffers
    Tensor w0 = weights.at(st.tensors().front().name).tensor;

    // GGUF: metadata with typed accessors, quantized tensors as QTensor.
    GgufFile g = GgufFile::open(gguf_path);
    std::string arch = g.metadata().get("general.architecture").as_string();
    QTensor wq = g.qtensor("blk.0.attn_q.weight", dev);
    Tensor x = Tensor::rand_normal({1, wq.dim(1)}, DType::F32, 0.0, 1.0, dev);
    Tensor y = matmul(x, wq);  // [1, 256]
    std::printf("%s: %s, y %s, w0 %s\n", dev.location().c_str(), arch.c_str(), y.str().c_str(), w0.str().c_str());
  } catch (const Error& e) {  // FormatError names the file, the byte offset and the field
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
