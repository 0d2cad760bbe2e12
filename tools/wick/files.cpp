// `wick inspect`, `wick convert` and `wick load`: model files from the command line.
#include "files.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "wick/io.h"

namespace wick::tool {
namespace {

using json = nlohmann::ordered_json;

std::string shape_list(const Shape& s) {
  std::string o = "[";
  for (size_t i = 0; i < s.size(); ++i) o += (i ? ", " : "") + std::to_string(s[i]);
  return o + "]";
}

// Any of the readers, as the common base plus what the format adds.
struct Opened {
  FileFormat format;
  TensorFile file;
  std::optional<GgufFile> gguf;
  std::optional<SafetensorsFile> st;
};

Opened open_any(const std::string& path) {
  const FileFormat f = detect_file_format(path);
  switch (f) {
    case FileFormat::Gguf: {
      GgufFile g = GgufFile::open(path);
      return {f, g, g, std::nullopt};
    }
    case FileFormat::Safetensors: {
      SafetensorsFile s = SafetensorsFile::open(path);
      return {f, s, std::nullopt, s};
    }
    case FileFormat::Npy:
      return {f, NpyFile::open(path), std::nullopt, std::nullopt};
    case FileFormat::Npz:
      return {f, NpzFile::open(path), std::nullopt, std::nullopt};
  }
  throw FormatError("[open] " + path + ": unknown format");
}

json gguf_json(const GgufValue& v) {
  switch (v.type()) {
    case GgufType::U64:
      return v.as_u64();
    case GgufType::U8:
    case GgufType::U16:
    case GgufType::U32:
    case GgufType::I8:
    case GgufType::I16:
    case GgufType::I32:
    case GgufType::I64:
      return v.as_int();
    case GgufType::F32:
    case GgufType::F64:
      return v.as_float();
    case GgufType::Bool:
      return v.as_bool();
    case GgufType::String:
      return v.as_string();
    case GgufType::Array:
      break;
  }
  json a = json::array();
  switch (v.elem_type()) {
    case GgufType::String:
      for (const std::string& s : v.as_strings()) a.push_back(s);
      return a;
    case GgufType::Array:
      for (const GgufValue& e : v.as_arrays()) a.push_back(gguf_json(e));
      return a;
    case GgufType::Bool:
      for (bool b : v.as_array<bool>()) a.push_back(b);
      return a;
    case GgufType::F32:
      for (float x : v.as_array<float>()) a.push_back(x);
      return a;
    case GgufType::F64:
      for (double x : v.as_array<double>()) a.push_back(x);
      return a;
    case GgufType::U64:
      for (uint64_t x : v.as_array<uint64_t>()) a.push_back(x);
      return a;
    default:
      break;
  }
  switch (v.elem_type()) {
    case GgufType::U8:
      for (auto x : v.as_array<uint8_t>()) a.push_back(x);
      break;
    case GgufType::I8:
      for (auto x : v.as_array<int8_t>()) a.push_back(x);
      break;
    case GgufType::U16:
      for (auto x : v.as_array<uint16_t>()) a.push_back(x);
      break;
    case GgufType::I16:
      for (auto x : v.as_array<int16_t>()) a.push_back(x);
      break;
    case GgufType::U32:
      for (auto x : v.as_array<uint32_t>()) a.push_back(x);
      break;
    case GgufType::I32:
      for (auto x : v.as_array<int32_t>()) a.push_back(x);
      break;
    case GgufType::I64:
      for (auto x : v.as_array<int64_t>()) a.push_back(x);
      break;
    default:
      break;
  }
  return a;
}

int inspect_usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: wick inspect FILE [--json]\n"
               "  FILE: .gguf, .safetensors (or its index .json, or a folder), .npy, .npz\n"
               "  prints the format, the metadata and every tensor (type, shape, offset, bytes)\n");
  return code;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  std::string path;
  bool as_json = false;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      as_json = true;
    } else if (a == "--help" || a == "-h") {
      return inspect_usage(0);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "wick inspect: unknown option '%s'\n", a.c_str());
      return inspect_usage(2);
    } else if (path.empty()) {
      path = a;
    } else {
      std::fprintf(stderr, "wick inspect: one file at a time ('%s' is extra)\n", a.c_str());
      return inspect_usage(2);
    }
  }
  if (path.empty()) return inspect_usage(2);
  const Opened o = open_any(path);
  int64_t total = 0;
  for (const FileTensor& t : o.file.tensors()) total += t.nbytes;

  if (as_json) {
    json j;
    j["path"] = path;
    j["format"] = file_format_name(o.format);
    if (o.gguf) {
      j["version"] = o.gguf->version();
      j["alignment"] = o.gguf->alignment();
      json m = json::object();
      for (const auto& [k, v] : o.gguf->metadata().items()) {
        json e;
        e["type"] = gguf_type_name(v.type());
        if (v.type() == GgufType::Array) e["elem_type"] = gguf_type_name(v.elem_type());
        e["value"] = gguf_json(v);
        m[k] = std::move(e);
      }
      j["metadata"] = std::move(m);
    } else if (o.st) {
      j["metadata"] = o.st->metadata();
      j["shards"] = o.st->shards();
    }
    json ts = json::array();
    for (const FileTensor& t : o.file.tensors()) {
      json e;
      e["name"] = t.name;
      e["type"] = t.type;
      e["shape"] = t.shape.vec();
      e["offset"] = t.offset;
      e["nbytes"] = t.nbytes;
      if (o.st && o.st->shards().size() > 1) e["shard"] = t.source;
      if (t.column_major) e["fortran_order"] = true;
      ts.push_back(std::move(e));
    }
    j["tensors"] = std::move(ts);
    j["tensor_bytes"] = total;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }

  std::printf("%s: %s", path.c_str(), file_format_name(o.format));
  if (o.gguf)
    std::printf(" v%u, alignment %llu", o.gguf->version(), static_cast<unsigned long long>(o.gguf->alignment()));
  if (o.st && o.st->shards().size() > 1) std::printf(", %zu shards", o.st->shards().size());
  std::printf(", %zu tensors, %.3f GB of tensor data\n", o.file.tensors().size(), static_cast<double>(total) / 1e9);
  if (o.gguf && o.gguf->metadata().size() > 0) {
    std::printf("metadata (%zu keys):\n", o.gguf->metadata().size());
    for (const auto& [k, v] : o.gguf->metadata().items())
      std::printf("  %-40s %-8s %s\n", k.c_str(), gguf_type_name(v.type()), v.str().c_str());
  } else if (o.st && !o.st->metadata().empty()) {
    std::printf("metadata (%zu keys):\n", o.st->metadata().size());
    for (const auto& [k, v] : o.st->metadata()) std::printf("  %-40s %s\n", k.c_str(), v.c_str());
  }
  std::printf("tensors:\n  %-48s %-8s %-22s %14s %14s\n", "name", "type", "shape", "offset", "bytes");
  for (const FileTensor& t : o.file.tensors())
    std::printf("  %-48s %-8s %-22s %14lld %14lld%s\n", t.name.c_str(), t.type.c_str(), shape_list(t.shape).c_str(),
                static_cast<long long>(t.offset), static_cast<long long>(t.nbytes), t.column_major ? " (fortran)" : "");
  return 0;
}

// ---- convert -----------------------------------------------------------------------------------

namespace {

int convert_usage(int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: wick convert IN OUT [--dtype D | --quant FORMAT]\n"
               "  IN:  .gguf, .safetensors (or its index .json, or a folder), .npy, .npz\n"
               "  OUT: .gguf, .safetensors or .npz (by its extension)\n"
               "  --dtype D       floating-point tensors to D (f32, f16, bf16, f64, f8e4m3); quantized ones\n"
               "                  are dequantized to D (default f32 where OUT cannot hold block formats)\n"
               "  --quant FORMAT  quantize floating-point tensors of rank >= 2 whose rows are whole blocks\n"
               "                  (q4_0 ... q8_0, q2_k ... q8_k, iq4_nl, iq4_xs, mxfp4); OUT must be .gguf\n"
               "  GGUF metadata is kept from GGUF to GGUF; safetensors metadata becomes string keys and back.\n");
  return code;
}

struct Item {
  std::string name;
  Tensor dense;
  QTensor quant;
  uint32_t raw_type = 0;  // a GGUF type wick has no dtype for: dense holds its bytes
  Shape raw_shape;
  bool raw = false;
};

}  // namespace

int cmd_convert(int argc, char** argv) {
  std::vector<std::string> paths;
  std::optional<DType> dtype;
  std::optional<QFormat> quant;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return convert_usage(0);
    if ((a == "--dtype" || a == "--quant") && i + 1 >= argc) {
      std::fprintf(stderr, "wick convert: %s needs a value\n", a.c_str());
      return convert_usage(2);
    }
    if (a == "--dtype") {
      DType d;
      if (!parse_dtype(argv[++i], &d) || !is_float(d)) {
        std::fprintf(stderr, "wick convert: '%s' is not a floating-point dtype\n", argv[i]);
        return convert_usage(2);
      }
      dtype = d;
    } else if (a == "--quant") {
      quant = qformat_from_name(argv[++i]);
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "wick convert: unknown option '%s'\n", a.c_str());
      return convert_usage(2);
    } else {
      paths.push_back(a);
    }
  }
  if (paths.size() != 2) return convert_usage(2);
  if (dtype && quant) {
    std::fprintf(stderr, "wick convert: give --dtype or --quant, not both\n");
    return convert_usage(2);
  }
  const std::string& out = paths[1];
  const std::string ext = std::filesystem::path(out).extension().string();
  FileFormat out_format;
  if (ext == ".gguf")
    out_format = FileFormat::Gguf;
  else if (ext == ".safetensors")
    out_format = FileFormat::Safetensors;
  else if (ext == ".npz")
    out_format = FileFormat::Npz;
  else {
    std::fprintf(stderr, "wick convert: OUT must end in .gguf, .safetensors or .npz\n");
    return convert_usage(2);
  }
  if (quant && out_format != FileFormat::Gguf) {
    std::fprintf(stderr, "wick convert: --quant writes block formats, which only .gguf holds\n");
    return convert_usage(2);
  }

  const Opened in = open_any(paths[0]);
  const int64_t block = quant ? qformat_info(*quant).block_elems : 0;
  // Every tensor is converted (in memory, lazily through the mapping) before anything is written.
  std::vector<Item> items;
  for (const FileTensor& t : in.file.tensors()) {
    Item it;
    it.name = t.name;
    if (t.qformat) {
      QTensor q = in.file.qtensor(t.name);
      if (out_format == FileFormat::Gguf && !dtype)
        it.quant = q;
      else
        it.dense = q.dequantize(dtype.value_or(DType::F32));
    } else if (t.dtype) {
      Tensor x = in.file.tensor(t.name);
      if (is_float(x.dtype()) && quant && x.rank() >= 2 && x.shape().back() % block == 0 && x.dtype() != DType::F64) {
        it.quant = quantize(x.dtype() == DType::F8E4M3 ? x.to_dtype(DType::F32) : x, *quant);
      } else {
        if (dtype && is_float(x.dtype())) x = x.to_dtype(*dtype);
        it.dense = x;
      }
    } else {
      if (out_format != FileFormat::Gguf || !in.gguf)
        throw DTypeError("[convert] tensor '" + t.name + "' is " + t.type + ", which only GGUF holds");
      it.raw = true;
      it.raw_type = in.gguf->ggml_type(t.name);
      it.raw_shape = t.shape;
      it.dense = in.file.bytes(t.name);
    }
    items.push_back(std::move(it));
  }

  std::map<std::string, std::string> st_meta;
  if (in.st) st_meta = in.st->metadata();
  if (in.gguf)
    for (const auto& [k, v] : in.gguf->metadata().items())
      if (v.type() != GgufType::Array) st_meta[k] = v.type() == GgufType::String ? v.as_string() : v.str();

  if (out_format == FileFormat::Gguf) {
    GgufWriter w;
    if (in.gguf) {
      for (const auto& [k, v] : in.gguf->metadata().items()) w.metadata().set(k, v);
    } else {
      for (const auto& [k, v] : st_meta) w.metadata().set(k, GgufValue::string(v));
    }
    for (Item& it : items) {
      if (it.raw)
        w.add_raw(it.name, it.raw_type, it.raw_shape, it.dense);
      else if (it.quant.defined())
        w.add(it.name, it.quant);
      else
        w.add(it.name, it.dense);
    }
    w.write(out);
  } else {
    std::vector<std::pair<std::string, Tensor>> ts;
    for (Item& it : items) ts.emplace_back(it.name, it.dense);
    if (out_format == FileFormat::Safetensors)
      save_safetensors(out, ts, st_meta);
    else
      save_npz(out, ts, /*compress=*/false);
  }
  std::printf("wrote %s: %zu tensors\n", out.c_str(), items.size());
  return 0;
}

// ---- load ----------------------------------------------------------------------------------------

int cmd_load(int argc, char** argv) {
  std::string path;
  Device device = Device::cpu();
  int repeat = 1;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) {
      device = Device::parse(argv[++i]);
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--help" || a == "-h" || (!a.empty() && a[0] == '-') || !path.empty()) {
      std::fprintf(a == "--help" || a == "-h" ? stdout : stderr,
                   "usage: wick load FILE [--device D] [--repeat N]\n"
                   "  loads every tensor of FILE to device D (default cpu) and prints the rate\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      path = a;
    }
  }
  if (path.empty()) {
    std::fprintf(stderr, "usage: wick load FILE [--device D] [--repeat N]\n");
    return 2;
  }
  const Opened o = open_any(path);
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    LoadOptions opt;
    auto loaded = o.file.load(device, opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    int64_t bytes = 0;
    for (const FileTensor& t : o.file.tensors()) bytes += t.nbytes;
    std::printf("loaded %zu tensors, %.3f GB to %s in %.3f s: %.2f GB/s\n", loaded.size(), bytes / 1e9,
                device.location().c_str(), s, s > 0 ? bytes / 1e9 / s : 0.0);
  }
  return 0;
}

}  // namespace wick::tool
