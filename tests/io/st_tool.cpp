// wick_io_st: the safetensors and NumPy readers and writers driven from the command line, for the
// Python interop tests (tests/io/st_interop.py, tests/io/npy_interop.py) and for making a fuzzing
// seed corpus.
//
//   wick_io_st copy IN OUT [--compress]   read IN (safetensors file, index json or folder; .npy;
//                                         .npz) and write all of it to OUT in the same format (an
//                                         index becomes one file; --compress deflates an .npz)
//   wick_io_st dump IN                    one line per tensor: name, type, shape, hex of its bytes;
//                                         one per metadata key
//   wick_io_st sample DIR                 sample.safetensors, sample.npz, sample_<dtype>.npy with
//                                         the values of sample_value() below
//   wick_io_st corpus DIR                 the malformed files of tests/io/io_corpus.h and their
//                                         valid twins
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "io_corpus.h"
#include "wick/io.h"

namespace {

using namespace wick;
namespace fs = std::filesystem;
using Named = std::vector<std::pair<std::string, Tensor>>;

int usage() {
  std::fprintf(stderr, "usage: wick_io_st copy IN OUT [--compress] | dump IN | sample DIR | corpus DIR\n");
  return 2;
}

Named all_tensors(const TensorFile& f) {
  Named out;
  for (const FileTensor& t : f.tensors()) out.push_back({t.name, f.tensor(t.name)});
  return out;
}

int copy(const std::string& in, const std::string& out, bool compress) {
  switch (detect_file_format(in)) {
    case FileFormat::Safetensors: {
      const SafetensorsFile f = SafetensorsFile::open(in);
      save_safetensors(out, all_tensors(f), f.metadata());
      std::printf("copied %zu tensors, %zu metadata keys\n", f.tensors().size(), f.metadata().size());
      return 0;
    }
    case FileFormat::Npy:
      save_npy(out, NpyFile::open(in).tensor());
      return 0;
    case FileFormat::Npz: {
      const NpzFile f = NpzFile::open(in);
      save_npz(out, all_tensors(f), compress);
      std::printf("copied %zu arrays\n", f.tensors().size());
      return 0;
    }
    case FileFormat::Gguf:
      break;
  }
  std::fprintf(stderr, "wick_io_st: %s is not a safetensors, .npy or .npz file\n", in.c_str());
  return 1;
}

int dump(const std::string& in) {
  TensorFile f;
  switch (detect_file_format(in)) {
    case FileFormat::Safetensors: {
      const SafetensorsFile s = SafetensorsFile::open(in);
      for (const auto& [key, value] : s.metadata()) std::printf("meta\t%s\t%s\n", key.c_str(), value.c_str());
      f = s;
      break;
    }
    case FileFormat::Npy:
      f = NpyFile::open(in);
      break;
    case FileFormat::Npz:
      f = NpzFile::open(in);
      break;
    case FileFormat::Gguf:
      return 1;
  }
  for (const FileTensor& t : f.tensors()) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) shape += ',';
      shape += std::to_string(t.shape[i]);
    }
    std::printf("tensor\t%s\t%s\t%s\t%d\t", t.name.c_str(), t.type.c_str(), shape.c_str(), t.column_major ? 1 : 0);
    for (uint8_t b : f.bytes(t.name).to_vector<uint8_t>()) std::printf("%02x", b);
    std::printf("\n");
  }
  return 0;
}

// The sample values: element i (row-major) of a tensor of dtype d. Exact in every dtype (the float
// values are multiples of 1/4 up to 2.75: exact in f8e4m3 too), and the same formula in the Python
// scripts.
double sample_value(DType d, int64_t i) {
  const int64_t r = (i * 7 + 3) % 23;
  switch (d) {
    case DType::U8:
      return static_cast<double>((i * 37 + 11) % 256);
    case DType::U32:
      return static_cast<double>(r) * 100000007.0;
    case DType::I32:
      return static_cast<double>(r - 11) * 100003.0;
    case DType::I64:
      return static_cast<double>(r - 11) * 1000000007.0;
    default:
      return static_cast<double>(r - 11) * 0.25;
  }
}

Tensor sample_tensor(DType d, const Shape& shape) {
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = sample_value(d, static_cast<int64_t>(i));
  return Tensor::from_vector(v, shape).to_dtype(d);
}

int sample(const std::string& dir) {
  fs::create_directories(dir);
  Named st, npz;
  for (DType d : kAllDTypes) {
    const std::string name(dtype_name(d));
    const Tensor t = sample_tensor(d, {3, 5});
    st.push_back({"t_" + name, t});
    if (d == DType::BF16 || d == DType::F8E4M3) continue;  // NumPy lacks them
    npz.push_back({"t_" + name, t});
    save_npy((fs::path(dir) / ("sample_" + name + ".npy")).string(), t);
  }
  for (Named* n : {&st, &npz}) {
    n->push_back({"scalar_f32", sample_tensor(DType::F32, {})});
    n->push_back({"empty_f16", sample_tensor(DType::F16, {0, 4})});
    n->push_back({"rank4_i64", sample_tensor(DType::I64, {2, 1, 3, 2})});
  }
  save_safetensors((fs::path(dir) / "sample.safetensors").string(), st, {{"source", "wick"}});
  save_npz((fs::path(dir) / "sample.npz").string(), npz, /*compress=*/false);
  save_npz((fs::path(dir) / "sample_deflated.npz").string(), npz, /*compress=*/true);
  std::printf("wrote %zu safetensors tensors, %zu npz arrays\n", st.size(), npz.size());
  return 0;
}

void write_file(const fs::path& p, const wick::testing::Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  if (!f) throw IoError("cannot write " + p.string());
}

// Single-file cases as <format>/<case>.<bad|good>.<ext>, the fuzzers' seeds; multi-file ones (a
// checkpoint with its index) as checkpoints/<case>/<bad|good>/.
int corpus(const std::string& dir) {
  auto cases = wick::testing::safetensors_corpus();
  for (auto& c : wick::testing::npy_corpus()) cases.push_back(std::move(c));
  int files = 0;
  for (const auto& c : cases) {
    for (const auto& [kind, set] : {std::pair{"bad", &c.bad}, std::pair{"good", &c.good}}) {
      for (const auto& [file, bytes] : *set) {
        fs::path p;
        if (set->size() == 1)
          p = fs::path(dir) / c.format / (c.name + "." + kind + fs::path(file).extension().string());
        else
          p = fs::path(dir) / "checkpoints" / c.name / kind / file;
        write_file(p, bytes);
        ++files;
      }
    }
  }
  std::printf("wrote %d files for %zu cases\n", files, cases.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() >= 3 && args[0] == "copy")
      return copy(args[1], args[2], args.size() > 3 && args[3] == "--compress");
    if (args.size() == 2 && args[0] == "dump") return dump(args[1]);
    if (args.size() == 2 && args[0] == "sample") return sample(args[1]);
    if (args.size() == 2 && args[0] == "corpus") return corpus(args[1]);
    return usage();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wick_io_st: %s\n", e.what());
    return 1;
  }
}
