// safetensors (Hugging Face): single files, sharded checkpoints (an index json naming the shards)
// and folders holding either; the writer of single files and of sharded checkpoints.
//
// The format: a u64 little-endian header length N, N bytes of UTF-8 JSON (an object, possibly
// right-padded with spaces), then the data buffer. Each header entry but "__metadata__" is a tensor
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} with offsets relative to the data
// buffer. The rules are the reference implementation's (huggingface/safetensors, safetensors/src/
// tensor.rs): the header is at most 100,000,000 bytes; end - begin is the element count times the
// dtype's size, computed with checked products; the tensors sorted by offset tile the buffer
// exactly (from 0, no hole, no overlap, the last end at the end of the file).
//
// Where wick is stricter than the reference (which parses with serde): a repeated key in any JSON
// object (serde keeps the last tensor of a repeated name, silently) and an unknown key in a tensor
// entry (serde ignores it) are errors, since either means the file does not say one thing.
// "__metadata__": null is accepted as no metadata, as the reference does.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "io/io_common.h"

namespace wick {

struct SafetensorsFile::Meta {
  std::map<std::string, std::string> metadata;
  std::vector<std::string> shards;
};

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kFormat[] = "safetensors";
// The reference's cap on the header; also the cap on an index json (which is JSON of the same
// kind: a few hundred bytes a tensor).
constexpr int64_t kMaxHeader = 100'000'000;
// Valid headers nest three deep (header, tensor entry, shape); the cap keeps hostile nesting from
// costing anything.
constexpr int kMaxDepth = 64;

// Every dtype of the reference, in its order (the writer's sort order there), with the bits an
// element takes and wick's dtype where there is one.
struct StDType {
  const char* name;
  int bits;
  std::optional<DType> dtype;
};
const StDType kDTypes[] = {
    {"BOOL", 8, DType::U8},  // read as u8 (0 or 1)
    {"F4", 4, std::nullopt},          {"F6_E2M3", 6, std::nullopt},
    {"F6_E3M2", 6, std::nullopt},     {"U8", 8, DType::U8},
    {"I8", 8, std::nullopt},          {"F8_E5M2", 8, std::nullopt},
    {"F8_E4M3", 8, DType::F8E4M3},    {"F8_E8M0", 8, std::nullopt},
    {"F8_E4M3FNUZ", 8, std::nullopt}, {"F8_E5M2FNUZ", 8, std::nullopt},
    {"I16", 16, std::nullopt},        {"U16", 16, std::nullopt},
    {"F16", 16, DType::F16},          {"BF16", 16, DType::BF16},
    {"I32", 32, DType::I32},          {"U32", 32, DType::U32},
    {"F32", 32, DType::F32},          {"C64", 64, std::nullopt},
    {"F64", 64, DType::F64},          {"I64", 64, DType::I64},
    {"U64", 64, std::nullopt},
};

const StDType* find_dtype(std::string_view name) {
  for (const StDType& d : kDTypes)
    if (name == d.name) return &d;
  return nullptr;
}

const char* st_name(DType d) {
  switch (d) {
    case DType::U8:
      return "U8";
    case DType::U32:
      return "U32";
    case DType::I64:
      return "I64";
    case DType::BF16:
      return "BF16";
    case DType::F16:
      return "F16";
    case DType::F32:
      return "F32";
    case DType::F64:
      return "F64";
    case DType::F8E4M3:
      return "F8_E4M3";
    case DType::I32:
      return "I32";
  }
  throw DTypeError("[safetensors] no safetensors dtype for " + std::string(dtype_name(d)));
}

// A name in messages: quoted, and cut short, since it comes from the file.
std::string name_str(std::string_view s) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  out.append(s.substr(0, kMax));
  if (s.size() > kMax) out += "...";
  return out + "'";
}

// Thrown from the parser callback; becomes a FormatError once the parser has unwound.
struct JsonReject {
  std::string what;
};

// Parses JSON text (a header, an index) and rejects a key repeated within one object, which
// nlohmann::json (like serde) would otherwise resolve silently by keeping the last value, and
// nesting deeper than kMaxDepth. `base` is the text's byte offset in its file, for messages.
json parse_json(std::string_view text, int64_t base, std::string_view file, std::string_view field) {
  // nlohmann::json takes a NUL byte for the end of its input and would ignore what follows.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    io::format_error(kFormat, file, base + static_cast<int64_t>(nul), field, "not valid JSON: a NUL byte");
  std::vector<std::unordered_set<std::string>> open_objects;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxDepth) throw JsonReject{"nested deeper than " + std::to_string(kMaxDepth) + " levels"};
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        if (!open_objects.empty()) open_objects.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open_objects.empty() && parsed.is_string() &&
            !open_objects.back().insert(parsed.get_ref<const std::string&>()).second)
          throw JsonReject{"the key " + name_str(parsed.get_ref<const std::string&>()) +
                           " appears twice in one object"};
        break;
      default:
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    const int64_t at = e.byte > 0 ? static_cast<int64_t>(e.byte) - 1 : 0;
    io::format_error(kFormat, file, base + at, field, std::string("not valid JSON: ") + e.what());
  } catch (const JsonReject& r) {
    io::format_error(kFormat, file, base, field, r.what);
  } catch (const json::exception& e) {
    io::format_error(kFormat, file, base, field, e.what());
  }
}

const char* json_kind(const json& j) { return j.type_name(); }

// A JSON value that must be a non-negative integer (serde's usize): unsigned, fitting int64.
bool json_size(const json& j, int64_t* out) {
  if (!j.is_number_unsigned()) return false;
  return io::fits_i64(j.get<uint64_t>(), out);
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i == 8) {
      s += ", ... (" + std::to_string(dims.size()) + " dims)";
      break;
    }
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

struct ParsedFile {
  std::vector<FileTensor> tensors;  // in file order (by offset); offsets absolute in the source
  std::map<std::string, std::string> metadata;
};

// Parses and validates one safetensors file held in `bytes`, its tensors in source `source`.
ParsedFile parse_file(std::span<const uint8_t> bytes, const std::string& file, int source) {
  io::ByteReader r(bytes, kFormat, file);
  const auto header_len_u = r.read<uint64_t>("header length");
  int64_t header_len = 0;
  if (!io::fits_i64(header_len_u, &header_len) || header_len > kMaxHeader)
    r.fail_at(0, "header length",
              std::to_string(header_len_u) + " bytes exceeds the cap of " + std::to_string(kMaxHeader) + " bytes");
  if (header_len > r.remaining())
    r.fail_at(0, "header length",
              std::to_string(header_len) + " bytes, but the file has " + std::to_string(r.remaining()) +
                  " bytes after the length");
  constexpr int64_t kHeaderAt = 8;
  const std::string_view text = r.take_chars(header_len, "header");
  const int64_t data_at = r.pos();
  const int64_t data_len = r.remaining();

  const json header = parse_json(text, kHeaderAt, file, "header");
  if (!header.is_object())
    r.fail_at(kHeaderAt, "header", std::string("a JSON ") + json_kind(header) + ", not an object");

  ParsedFile out;
  struct Span {
    int64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  spans.reserve(header.size());
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (entry.is_null()) continue;
      if (!entry.is_object())
        r.fail_at(kHeaderAt, "__metadata__", std::string("a JSON ") + json_kind(entry) + ", not an object");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string())
          r.fail_at(kHeaderAt, "__metadata__[" + name_str(key) + "]",
                    std::string("a JSON ") + json_kind(value) + ", not a string");
        out.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string tag = "tensor " + name_str(name);
    auto fail = [&](std::string_view member, const std::string& what) {
      r.fail_at(kHeaderAt, tag + (member.empty() ? "" : ".") + std::string(member), what);
    };
    if (!entry.is_object()) fail("", std::string("a JSON ") + json_kind(entry) + ", not an object");
    for (const auto& [key, value] : entry.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        fail(key, "unknown key (a tensor has dtype, shape and data_offsets)");
    }
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!entry.contains(key)) fail(key, "missing");

    const json& jd = entry["dtype"];
    if (!jd.is_string()) fail("dtype", std::string("a JSON ") + json_kind(jd) + ", not a string");
    const std::string& type = jd.get_ref<const std::string&>();
    const StDType* st = find_dtype(type);
    if (!st) fail("dtype", "unknown dtype " + name_str(type));

    const json& js = entry["shape"];
    if (!js.is_array()) fail("shape", std::string("a JSON ") + json_kind(js) + ", not an array");
    std::vector<int64_t> dims;
    dims.reserve(js.size());
    for (const json& d : js) {
      int64_t v = 0;
      if (json_size(d, &v)) {
        dims.push_back(v);
      } else if (d.is_number_integer()) {
        fail("shape", "negative dimension " + std::to_string(d.get<int64_t>()));
      } else if (d.is_number_unsigned()) {
        fail("shape", "dimension " + std::to_string(d.get<uint64_t>()) + " exceeds 2^63 - 1");
      } else {
        fail("shape", std::string("a dimension is a JSON ") + json_kind(d) + ", not a non-negative integer");
      }
    }
    int64_t numel = 1;
    for (int64_t d : dims)
      if (!io::mul_ok(numel, d, &numel)) fail("shape", "the product of " + dims_str(dims) + " overflows");

    const json& jo = entry["data_offsets"];
    int64_t begin = 0, end = 0;
    if (!jo.is_array() || jo.size() != 2 || !json_size(jo[0], &begin) || !json_size(jo[1], &end))
      fail("data_offsets", "not [begin, end] of two non-negative integers: " + jo.dump().substr(0, 80));
    if (end < begin)
      fail("data_offsets", "[" + std::to_string(begin) + ", " + std::to_string(end) + "] ends before it begins");
    if (end > data_len)
      fail("data_offsets", "[" + std::to_string(begin) + ", " + std::to_string(end) +
                               "] runs past the end of the data buffer (" + std::to_string(data_len) + " bytes)");

    int64_t bits = 0;
    if (!io::mul_ok(numel, st->bits, &bits)) fail("shape", "the size of " + dims_str(dims) + " " + type + " overflows");
    if (bits % 8 != 0) fail("shape", dims_str(dims) + " " + type + " is not a whole number of bytes");
    if (end - begin != bits / 8)
      fail("data_offsets", "[" + std::to_string(begin) + ", " + std::to_string(end) + "] holds " +
                               std::to_string(end - begin) + " bytes, but dtype " + type + " and shape " +
                               dims_str(dims) + " need " + std::to_string(bits / 8));

    FileTensor t;
    t.name = name;
    t.shape = Shape(dims);
    t.type = type;
    t.dtype = st->dtype;
    t.source = source;
    t.offset = data_at + begin;  // within the file: begin <= end <= data_len
    t.nbytes = end - begin;
    spans.push_back({begin, end, out.tensors.size()});
    out.tensors.push_back(std::move(t));
  }

  // The reference's tiling rule, over the tensors sorted by offset (ties, zero-size tensors, by name).
  std::sort(spans.begin(), spans.end(), [&](const Span& a, const Span& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return out.tensors[a.index].name < out.tensors[b.index].name;
  });
  int64_t covered = 0;
  const FileTensor* previous = nullptr;
  for (const Span& s : spans) {
    const FileTensor& t = out.tensors[s.index];
    const std::string field = "tensor " + name_str(t.name) + ".data_offsets";
    const std::string range = "[" + std::to_string(s.begin) + ", " + std::to_string(s.end) + "]";
    if (s.begin < covered) r.fail_at(kHeaderAt, field, range + " overlaps tensor " + name_str(previous->name));
    if (s.begin > covered)
      r.fail_at(kHeaderAt, field,
                range + " leaves a hole of " + std::to_string(s.begin - covered) + " bytes " +
                    (previous ? "after tensor " + name_str(previous->name) : std::string("at the start of the data")));
    covered = s.end;
    previous = &t;
  }
  if (covered != data_len)
    r.fail_at(data_at + covered, "data",
              "the tensors cover " + std::to_string(covered) + " of the " + std::to_string(data_len) +
                  " data bytes: " + std::to_string(data_len - covered) + " trailing bytes");

  std::vector<FileTensor> ordered;
  ordered.reserve(spans.size());
  for (const Span& s : spans) ordered.push_back(std::move(out.tensors[s.index]));
  out.tensors = std::move(ordered);
  return out;
}

using Opened = std::pair<TensorFile, std::shared_ptr<const SafetensorsFile::Meta>>;

Opened single_file(Tensor source, const std::string& path) {
  ParsedFile p = parse_file(io::source_span(source), path, 0);
  auto meta = std::make_shared<SafetensorsFile::Meta>();
  meta->metadata = std::move(p.metadata);
  meta->shards = {path};
  return {io::finish_tensor_file({kFormat, path, {std::move(source)}, std::move(p.tensors)}), std::move(meta)};
}

// A shard's name from weight_map, relative to the index's folder: no absolute path, no "..", no
// NUL, so that an index can only name files under its own folder.
void check_shard_name(const std::string& shard, const std::string& index) {
  auto fail = [&](const std::string& what) {
    io::format_error(kFormat, index, 0, "weight_map", "shard " + name_str(shard) + " " + what);
  };
  if (shard.empty()) fail("is an empty name");
  if (shard.find('\0') != std::string::npos) fail("has a NUL character");
  if (shard.front() == '/') fail("is an absolute path: shards must lie in the index's folder");
  for (const auto& part : fs::path(shard))
    if (part == "..") fail("has a '..' component: shards must lie in the index's folder");
}

// model.safetensors.index.json: {"metadata": {...}, "weight_map": {tensor: shard file}}. Each shard
// is opened once, in the order of its sorted name (the -0000i-of-0000n names sort in sequence), as a
// source of its own. The index and its shards must agree exactly: a tensor of weight_map missing
// from its shard, and a tensor of a shard that weight_map does not map to that shard, are both
// errors (the checkpoint is inconsistent, and which copy is meant cannot be known).
// metadata(): the shards' __metadata__ (the first shard giving a key wins), then the index's
// "metadata" over them, its values as strings: a JSON string as its text, any other value (as
// total_size, a number) as its compact JSON.
Opened open_index(const std::string& index_path) {
  const Tensor index_src = io::map_file(index_path, kFormat);
  const auto bytes = io::source_span(index_src);
  if (static_cast<int64_t>(bytes.size()) > kMaxHeader)
    io::format_error(
        kFormat, index_path, 0, "index",
        std::to_string(bytes.size()) + " bytes exceeds the cap of " + std::to_string(kMaxHeader) + " bytes");
  const json index = parse_json({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, 0, index_path, "index");
  if (!index.is_object())
    io::format_error(kFormat, index_path, 0, "index", std::string("a JSON ") + json_kind(index) + ", not an object");
  const auto wm = index.find("weight_map");
  if (wm == index.end() || !wm->is_object())
    io::format_error(kFormat, index_path, 0, "weight_map", "missing or not an object");
  std::set<std::string> shard_names;
  for (const auto& [tensor, shard] : wm->items()) {
    if (!shard.is_string())
      io::format_error(kFormat, index_path, 0, "weight_map[" + name_str(tensor) + "]",
                       std::string("a JSON ") + json_kind(shard) + ", not a string");
    check_shard_name(shard.get_ref<const std::string&>(), index_path);
    shard_names.insert(shard.get<std::string>());
  }
  std::map<std::string, std::string> index_meta;
  if (const auto m = index.find("metadata"); m != index.end() && !m->is_null()) {
    if (!m->is_object())
      io::format_error(kFormat, index_path, 0, "metadata", std::string("a JSON ") + json_kind(*m) + ", not an object");
    for (const auto& [key, value] : m->items())
      index_meta[key] = value.is_string() ? value.get<std::string>() : value.dump();
  }

  const fs::path dir = fs::path(index_path).parent_path();
  auto meta = std::make_shared<SafetensorsFile::Meta>();
  std::vector<Tensor> sources;
  std::vector<FileTensor> tensors;
  for (const std::string& name : shard_names) {
    const std::string path = (dir / name).string();
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      io::format_error(kFormat, index_path, 0, "weight_map",
                       "shard " + name_str(name) + " is not a file in " + dir.string());
    Tensor src = io::map_file(path, kFormat);
    const int source = static_cast<int>(sources.size());
    ParsedFile p = parse_file(io::source_span(src), path, source);
    for (FileTensor& t : p.tensors) {
      const auto it = wm->find(t.name);
      if (it == wm->end())
        io::format_error(kFormat, index_path, 0, "weight_map",
                         "tensor " + name_str(t.name) + " of shard " + name_str(name) + " is not in weight_map");
      if (it->get_ref<const std::string&>() != name)
        io::format_error(kFormat, index_path, 0, "weight_map",
                         "tensor " + name_str(t.name) + " is in shard " + name_str(name) + " but mapped to " +
                             name_str(it->get_ref<const std::string&>()));
      tensors.push_back(std::move(t));
    }
    for (auto& [key, value] : p.metadata) meta->metadata.emplace(key, std::move(value));
    meta->shards.push_back(path);
    sources.push_back(std::move(src));
  }
  // Every tensor of a shard was found in weight_map under that shard; the counts being equal, every
  // entry of weight_map was found in its shard.
  if (tensors.size() != wm->size()) {
    std::unordered_set<std::string> found;
    for (const FileTensor& t : tensors) found.insert(t.name);
    for (const auto& [tensor, shard] : wm->items())
      if (!found.count(tensor))
        io::format_error(kFormat, index_path, 0, "weight_map",
                         "tensor " + name_str(tensor) + " is not in its shard " + name_str(shard.get<std::string>()));
  }
  for (auto& [key, value] : index_meta) meta->metadata[key] = std::move(value);
  const std::string path = meta->shards.empty() ? index_path : meta->shards.front();
  return {io::finish_tensor_file({kFormat, path, std::move(sources), std::move(tensors)}), std::move(meta)};
}

// ---- writing ---------------------------------------------------------------------------------

// A JSON string literal, escaped as serde_json and nlohmann::json both do (\" \\ \b \f \n \r \t,
// other control characters as \u00xx, everything else as UTF-8), so that a header matches the
// reference's byte for byte.
std::string json_string(const std::string& s, std::string_view what) {
  try {
    return json(s).dump(-1, ' ', false, json::error_handler_t::strict);
  } catch (const json::exception&) {
    throw InvalidArgument("[safetensors] " + std::string(what) + " " + name_str(s) + " is not valid UTF-8");
  }
}

// The header (padded with spaces so the data starts at a multiple of 8 bytes, as the reference
// writes it) and the data size: tensors in the given order, contiguous.
struct Plan {
  std::string header;
  int64_t data_bytes = 0;
};

Plan plan(const std::vector<std::pair<std::string, Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata) {
  std::unordered_set<std::string_view> names;
  for (const auto& [name, t] : tensors) {
    if (!t.defined()) throw InvalidArgument("[safetensors] tensor " + name_str(name) + " is undefined");
    if (name == "__metadata__") throw InvalidArgument("[safetensors] '__metadata__' cannot name a tensor");
    if (!names.insert(name).second) throw InvalidArgument("[safetensors] two tensors named " + name_str(name));
  }
  Plan p;
  std::string& h = p.header;
  h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      if (!first) h += ',';
      first = false;
      h += json_string(key, "metadata key");
      h += ':';
      h += json_string(value, "metadata value");
    }
    h += '}';
  }
  for (const auto& [name, t] : tensors) {
    if (h.size() > 1) h += ',';
    const int64_t n = t.numel() * dtype_size(t.dtype());
    h += json_string(name, "tensor name");
    h += ":{\"dtype\":\"";
    h += st_name(t.dtype());
    h += "\",\"shape\":[";
    for (size_t i = 0; i < t.rank(); ++i) {
      if (i) h += ',';
      h += std::to_string(t.shape()[i]);
    }
    h += "],\"data_offsets\":[" + std::to_string(p.data_bytes) + "," + std::to_string(p.data_bytes + n) + "]}";
    p.data_bytes += n;
  }
  h += '}';
  h.resize((h.size() + 7) / 8 * 8, ' ');
  if (static_cast<int64_t>(h.size()) > kMaxHeader)
    throw InvalidArgument("[safetensors] the header would take " + std::to_string(h.size()) +
                          " bytes, over the format's cap of " + std::to_string(kMaxHeader));
  return p;
}

// Writes the file through `sink(data, n)`: length, header, then each tensor's bytes, one tensor in
// host memory at a time.
template <class Sink>
void emit(const std::vector<std::pair<std::string, Tensor>>& tensors, const Plan& p, Sink&& sink) {
  const uint64_t n = p.header.size();
  sink(&n, 8);
  sink(p.header.data(), static_cast<int64_t>(p.header.size()));
  for (const auto& [name, t] : tensors) {
    Tensor keep;
    const auto bytes = io::host_bytes(t, &keep);
    sink(bytes.data(), static_cast<int64_t>(bytes.size()));
  }
}

}  // namespace

SafetensorsFile::SafetensorsFile(TensorFile base, std::shared_ptr<const Meta> meta)
    : TensorFile(std::move(base)), meta_(std::move(meta)) {}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    if (fs::exists(dir / "model.safetensors.index.json", ec)) {
      auto [f, m] = open_index((dir / "model.safetensors.index.json").string());
      return SafetensorsFile(std::move(f), std::move(m));
    }
    if (fs::exists(dir / "model.safetensors", ec)) return open((dir / "model.safetensors").string());
    throw FormatError("[safetensors] " + path + ": a folder without model.safetensors or model.safetensors.index.json");
  }
  auto [f, m] =
      fs::path(path).extension() == ".json" ? open_index(path) : single_file(io::map_file(path, kFormat), path);
  return SafetensorsFile(std::move(f), std::move(m));
}

SafetensorsFile SafetensorsFile::from_memory(std::span<const uint8_t> data, std::string name) {
  auto [f, m] = single_file(io::copy_bytes(data), name);
  return SafetensorsFile(std::move(f), std::move(m));
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const { return meta_->metadata; }
const std::vector<std::string>& SafetensorsFile::shards() const { return meta_->shards; }

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata);
  io::OutputFile out(path, kFormat);
  emit(tensors, p, [&](const void* data, int64_t n) { out.write(data, n); });
  out.commit();
}

std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata) {
  const Plan p = plan(tensors, metadata);
  std::vector<uint8_t> out;
  out.reserve(8 + p.header.size() + static_cast<size_t>(p.data_bytes));
  emit(tensors, p, [&](const void* data, int64_t n) {
    const auto* b = static_cast<const uint8_t*>(data);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

std::string save_safetensors_sharded(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                     int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata,
                                     const std::string& stem) {
  if (max_shard_bytes <= 0)
    throw InvalidArgument("[safetensors] max_shard_bytes must be positive, not " + std::to_string(max_shard_bytes));
  if (stem.empty() || stem.find('/') != std::string::npos)
    throw InvalidArgument("[safetensors] the stem " + name_str(stem) + " must be a plain file name");
  plan(tensors, metadata);  // names, strings and dtypes checked before any file is written
  // Shards fill in the given order; a tensor that does not fit in the current shard opens the next.
  std::vector<std::vector<std::pair<std::string, Tensor>>> groups;
  int64_t in_group = 0, total = 0;
  for (const auto& entry : tensors) {
    const int64_t n = entry.second.numel() * dtype_size(entry.second.dtype());
    if (groups.empty() || (n > 0 && !groups.back().empty() && in_group + n > max_shard_bytes)) {
      groups.emplace_back();
      in_group = 0;
    }
    groups.back().push_back(entry);
    in_group += n;
    total += n;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("[safetensors] cannot create the folder " + dir + ": " + ec.message());
  json weight_map = json::object();
  const size_t count = groups.size();
  for (size_t i = 0; i < count; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "-%05zu-of-%05zu.safetensors", i + 1, count);
    const std::string shard = stem + name;
    save_safetensors((fs::path(dir) / shard).string(), groups[i], metadata);
    for (const auto& entry : groups[i]) weight_map[entry.first] = shard;
  }
  json index_meta = json::object();
  for (const auto& [key, value] : metadata) index_meta[key] = value;
  index_meta["total_size"] = total;
  const json index = {{"metadata", index_meta}, {"weight_map", weight_map}};
  const std::string path = (fs::path(dir) / (stem + ".safetensors.index.json")).string();
  std::string text;
  try {
    text = index.dump(2) + "\n";  // as transformers writes it: indent 2, keys sorted
  } catch (const json::exception&) {
    throw InvalidArgument("[safetensors] a tensor name or metadata string is not valid UTF-8");
  }
  io::OutputFile out(path, kFormat);
  out.write(text.data(), static_cast<int64_t>(text.size()));
  out.commit();
  return path;
}

}  // namespace wick
