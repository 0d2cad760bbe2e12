// wick_io_gguf: GGUF files for the Python interop test (tests/io/gguf_interop.py) and the fuzzer.
//
//   wick_io_gguf copy IN OUT          GgufFile::open(IN), then GgufWriter::copy_of(...).write(OUT)
//   wick_io_gguf dump IN [--values]   one JSON object a line: the header, each key, each tensor
//                                     (--values: the dequantized values of block-format tensors)
//   wick_io_gguf sample OUT           every metadata type, dense dtype and block format, from formulas
//                                     that gguf_interop.py recomputes
//   wick_io_gguf corpus DIR           the malformed files of the test corpus (bad_*.gguf) and their
//                                     valid twins (ok_*.gguf): a fuzzing seed corpus
//
// tests/test_io_gguf.cpp includes this file with WICK_GGUF_TOOL_NO_MAIN defined, to share the
// corpus and the sample.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "wick/io.h"
#include "wick/quant.h"
#include "wick/tensor.h"

namespace wick_gguf_tool {

using Bytes = std::vector<uint8_t>;

// ---- a GGUF file assembled field by field, to be broken on purpose ----------------------------

template <class T>
void put(Bytes& b, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof v);
}
inline void put_str(Bytes& b, std::string_view s) {
  put<uint64_t>(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}

// A key-value pair: the value type and the bytes that follow it.
struct Kv {
  std::string key;
  uint32_t type;
  Bytes value;
  std::optional<uint64_t> key_len;  // a length field that lies
};
inline Kv kv_u32(std::string k, uint32_t v) {
  Bytes b;
  put(b, v);
  return {std::move(k), 4, b, {}};
}
inline Kv kv_u64(std::string k, uint64_t v) {
  Bytes b;
  put(b, v);
  return {std::move(k), 10, b, {}};
}
inline Kv kv_str(std::string k, std::string_view s) {
  Bytes b;
  put_str(b, s);
  return {std::move(k), 8, b, {}};
}
// An array: element type, count (which may lie) and the elements' bytes.
inline Kv kv_array(std::string k, uint32_t elem, uint64_t count, const Bytes& elems) {
  Bytes b;
  put(b, elem);
  put(b, count);
  b.insert(b.end(), elems.begin(), elems.end());
  return {std::move(k), 9, b, {}};
}

// A tensor info, dims in ggml order (ne[0] first).
struct Ti {
  std::string name;
  std::vector<int64_t> ne;
  uint32_t type = 0;
  uint64_t offset = 0;
  std::optional<uint32_t> n_dims;  // a count that disagrees with ne
};

struct Spec {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<int64_t> n_tensors, n_kv;
  std::vector<Kv> kvs;
  std::vector<Ti> tis;
  uint64_t align = 32;  // the header is padded to this
  bool pad = true;
  int64_t data_bytes = 0;
  std::optional<size_t> cut_kv, cut_ti;  // end the file a few bytes into this pair / info
  std::optional<int64_t> cut_data;       // drop this many bytes at the end
  std::optional<size_t> truncate_to;     // keep only this many bytes
};

inline Bytes build(const Spec& s) {
  Bytes b(s.magic.begin(), s.magic.end());
  put(b, s.version);
  put<int64_t>(b, s.n_tensors.value_or(static_cast<int64_t>(s.tis.size())));
  put<int64_t>(b, s.n_kv.value_or(static_cast<int64_t>(s.kvs.size())));
  for (size_t i = 0; i < s.kvs.size(); ++i) {
    const Kv& kv = s.kvs[i];
    put<uint64_t>(b, kv.key_len.value_or(kv.key.size()));
    b.insert(b.end(), kv.key.begin(), kv.key.end());
    put(b, kv.type);
    if (s.cut_kv == i) {
      b.insert(b.end(), kv.value.begin(), kv.value.begin() + std::min<size_t>(3, kv.value.size()));
      return b;
    }
    b.insert(b.end(), kv.value.begin(), kv.value.end());
  }
  for (size_t i = 0; i < s.tis.size(); ++i) {
    const Ti& t = s.tis[i];
    put_str(b, t.name);
    put<uint32_t>(b, t.n_dims.value_or(static_cast<uint32_t>(t.ne.size())));
    if (s.cut_ti == i) return b;
    for (int64_t d : t.ne) put(b, d);
    put(b, t.type);
    put(b, t.offset);
  }
  if (s.pad)
    while (b.size() % s.align) b.push_back(0);
  for (int64_t i = 0; i < s.data_bytes; ++i) b.push_back(static_cast<uint8_t>(i * 7 + 1));
  if (s.cut_data) b.resize(b.size() - static_cast<size_t>(*s.cut_data));
  if (s.truncate_to) b.resize(std::min(b.size(), *s.truncate_to));
  return b;
}

// Two f32 tensors: a [8] at 0 and b (ne [4, 2]) at 32, and two keys.
inline Spec base_spec() {
  Spec s;
  s.kvs = {kv_str("general.architecture", "test"), kv_u32("test.count", 7)};
  s.tis = {{"a", {8}, 0, 0, {}}, {"b", {4, 2}, 0, 32, {}}};
  s.data_bytes = 64;
  return s;
}

// general.alignment = `a` (of `type`) with the second tensor at 64.
inline void with_alignment(Spec& s, Kv kv, uint64_t pad_to) {
  s.kvs.push_back(std::move(kv));
  s.tis[1].offset = 64;
  s.data_bytes = 96;
  s.align = pad_to;
}

inline Bytes u8s(std::initializer_list<uint8_t> v) { return Bytes(v); }

// A malformed file, a valid twin that differs from it only in the defect, and a part of the
// message that names the field at fault.
struct Case {
  std::string name;
  std::string field;
  Bytes bad;
  Bytes good;
};

constexpr uint64_t k62 = uint64_t{1} << 62, k63 = uint64_t{1} << 63;

inline std::vector<Case> bad_corpus() {
  std::vector<Case> out;
  auto add = [&](std::string name, std::string field, const std::function<void(Spec&, bool)>& f) {
    Spec bad = base_spec(), good = base_spec();
    f(bad, true);
    f(good, false);
    out.push_back({std::move(name), std::move(field), build(bad), build(good)});
  };
  add("bad_magic", "magic", [](Spec& s, bool bad) { s.magic = std::string(bad ? "GGUG" : "GGUF"); });
  add("version_0", "version", [](Spec& s, bool bad) { s.version = bad ? 0 : 2; });
  add("version_1", "version", [](Spec& s, bool bad) { s.version = bad ? 1 : 3; });
  add("version_4", "version", [](Spec& s, bool bad) { s.version = bad ? 4 : 3; });
  add("n_tensors_negative", "n_tensors", [](Spec& s, bool bad) { s.n_tensors = bad ? -1 : 2; });
  add("n_tensors_huge", "n_tensors", [](Spec& s, bool bad) { s.n_tensors = bad ? int64_t{1} << 62 : 2; });
  add("n_tensors_too_many", "n_tensors", [](Spec& s, bool bad) { s.n_tensors = bad ? 1000 : 2; });
  add("n_kv_negative", "n_kv", [](Spec& s, bool bad) { s.n_kv = bad ? -5 : 2; });
  add("n_kv_huge", "n_kv", [](Spec& s, bool bad) { s.n_kv = bad ? int64_t{1} << 62 : 2; });
  add("key_length_huge", "kv[1].key", [](Spec& s, bool bad) {
    if (bad) s.kvs[1].key_len = k62;
  });
  add("key_empty", "kv[1].key", [](Spec& s, bool bad) { s.kvs[1].key = std::string(bad ? "" : "x"); });
  add("string_length_huge", "general.architecture", [](Spec& s, bool bad) {
    Bytes v;
    put<uint64_t>(v, bad ? k62 : 4);
    v.insert(v.end(), {'t', 'e', 's', 't'});
    s.kvs[0].value = v;
  });
  add("string_length_past_end", "general.architecture", [](Spec& s, bool bad) {
    Bytes v;
    put<uint64_t>(v, bad ? 100000 : 4);
    v.insert(v.end(), {'t', 'e', 's', 't'});
    s.kvs[0].value = v;
  });
  add("array_count_huge", "test.arr'.value.count", [](Spec& s, bool bad) {
    s.kvs.push_back(kv_array("test.arr", 0, bad ? k63 : 3, u8s({1, 2, 3})));
  });
  add("array_bytes_past_end", "test.arr'.value.count", [](Spec& s, bool bad) {
    Bytes e(16, 0);
    s.kvs.push_back(kv_array("test.arr", 10, bad ? uint64_t{1} << 30 : 2, e));  // 2^30 u64: 8 GiB
  });
  add("array_count_times_size_overflows", "test.arr'.value.count", [](Spec& s, bool bad) {
    Bytes e(16, 0);
    s.kvs.push_back(kv_array("test.arr", 10, bad ? (uint64_t{1} << 61) + 1 : 2, e));  // x 8 wraps 2^64
  });
  add("array_of_strings_count_huge", "test.arr'.value.count", [](Spec& s, bool bad) {
    Bytes e;
    put_str(e, "tok");
    s.kvs.push_back(kv_array("test.arr", 8, bad ? uint64_t{1} << 29 : 1, e));
  });
  add("array_bad_element_type", "test.arr'.value.type", [](Spec& s, bool bad) {
    s.kvs.push_back(kv_array("test.arr", bad ? 13 : 0, 3, u8s({1, 2, 3})));
  });
  add("array_bool_element_2", "test.arr'.value", [](Spec& s, bool bad) {
    s.kvs.push_back(kv_array("test.arr", 7, 3, u8s({1, 0, static_cast<uint8_t>(bad ? 2 : 1)})));
  });
  add("array_nested_too_deep", "nested", [](Spec& s, bool bad) {
    // An array of one array of one array ... of no u8.
    const int depth = bad ? 40 : 3;
    Bytes v;
    for (int i = 0; i < depth; ++i) {
      put<uint32_t>(v, 9);
      put<uint64_t>(v, 1);
    }
    put<uint32_t>(v, 0);
    put<uint64_t>(v, 0);
    s.kvs.push_back({"test.nested", 9, v, {}});
  });
  add("duplicate_key", "duplicate key",
      [](Spec& s, bool bad) { s.kvs[1].key = std::string(bad ? "general.architecture" : "test.count"); });
  add("duplicate_tensor_name", "duplicate tensor name",
      [](Spec& s, bool bad) { s.tis[1].name = std::string(bad ? "a" : "b"); });
  add("alignment_u64", "general.alignment", [](Spec& s, bool bad) {
    with_alignment(s, bad ? kv_u64("general.alignment", 64) : kv_u32("general.alignment", 64), 64);
  });
  add("alignment_string", "general.alignment", [](Spec& s, bool bad) {
    with_alignment(s, bad ? kv_str("general.alignment", "64") : kv_u32("general.alignment", 64), 64);
  });
  add("alignment_zero", "general.alignment",
      [](Spec& s, bool bad) { with_alignment(s, kv_u32("general.alignment", bad ? 0 : 32), 64); });
  add("alignment_not_pow2", "general.alignment",
      [](Spec& s, bool bad) { with_alignment(s, kv_u32("general.alignment", bad ? 3 : 4), 64); });
  add("alignment_huge", "general.alignment",
      [](Spec& s, bool bad) { with_alignment(s, kv_u32("general.alignment", bad ? 1u << 31 : 64), 64); });
  add("n_dims_0", "tensor_info[0].n_dims", [](Spec& s, bool bad) {
    if (bad) s.tis[0].n_dims = 0;
  });
  add("n_dims_5", "tensor_info[1].n_dims", [](Spec& s, bool bad) {
    s.tis[1].ne = bad ? std::vector<int64_t>{4, 2, 1, 1, 1} : std::vector<int64_t>{4, 2, 1, 1};
  });
  add("n_dims_huge", "tensor_info[1].n_dims", [](Spec& s, bool bad) {
    if (bad) s.tis[1].n_dims = 0xFFFFFFFFu;
  });
  add("dim_negative", "tensor_info[1].dims", [](Spec& s, bool bad) { s.tis[1].ne = {4, bad ? -2 : 2}; });
  add("dims_product_overflows", "tensor_info[1].dims", [](Spec& s, bool bad) {
    s.tis[1].ne = bad ? std::vector<int64_t>{4, int64_t{1} << 31, int64_t{1} << 31} : std::vector<int64_t>{4, 2, 1};
  });
  add("dims_bytes_overflow", "tensor_info[1].dims", [](Spec& s, bool bad) {
    // 2^62 elements are representable, their 2^64 bytes of f32 are not.
    s.tis[1].ne = bad ? std::vector<int64_t>{int64_t{1} << 31, int64_t{1} << 31} : std::vector<int64_t>{4, 2};
  });
  add("ne0_not_block_multiple", "tensor_info[0].dims", [](Spec& s, bool bad) {
    s.tis[0] = {"a", {bad ? 33 : 32}, 8, 0, {}};  // Q8_0: 34 bytes a block of 32
    s.tis[1].offset = 64;
    s.data_bytes = 96;
  });
  for (uint32_t t : {4u, 5u, 31u, 33u, 100u, 0xFFFFFFFFu})
    add("unknown_type_" + std::to_string(t), "tensor_info[1].type",
        [t](Spec& s, bool bad) { s.tis[1].type = bad ? t : 0; });
  add("offsets_out_of_order", "tensor_info[1].offset", [](Spec& s, bool bad) {
    s.tis[0].offset = bad ? 32 : 0;
    s.tis[1].offset = bad ? 0 : 32;
  });
  add("offsets_overlap", "tensor_info[1].offset", [](Spec& s, bool bad) {
    s.tis[0].ne = {16};  // [0, 64)
    s.tis[1].offset = bad ? 32 : 64;
    s.data_bytes = 96;
  });
  add("offset_unaligned", "tensor_info[1].offset", [](Spec& s, bool bad) {
    s.tis[1].offset = bad ? 36 : 64;
    s.data_bytes = 96;
  });
  add("offset_past_end", "tensor_info[1].offset",
      [](Spec& s, bool bad) { s.tis[1].offset = bad ? uint64_t{1} << 20 : 32; });
  add("offset_beyond_int64", "tensor_info[1].offset", [](Spec& s, bool bad) { s.tis[1].offset = bad ? k63 : 32; });
  add("truncated_data", "tensor_info[1].offset", [](Spec& s, bool bad) { s.cut_data = bad ? 1 : 0; });
  add("truncated_in_kv", "kv[1]", [](Spec& s, bool bad) {
    if (bad) s.cut_kv = 1;
  });
  add("truncated_in_tensor_info", "tensor_info[1]", [](Spec& s, bool bad) {
    if (bad) s.cut_ti = 1;
  });
  add("truncated_magic", "magic", [](Spec& s, bool bad) {
    if (bad) s.truncate_to = 2;
  });
  add("truncated_header", "n_kv", [](Spec& s, bool bad) {
    if (bad) s.truncate_to = 20;
  });
  add("bool_value_2", "test.flag", [](Spec& s, bool bad) {
    s.kvs.push_back({"test.flag", 7, u8s({static_cast<uint8_t>(bad ? 2 : 1)}), {}});
  });
  add("value_type_13", "kv[1] 'test.count'.type", [](Spec& s, bool bad) { s.kvs[1].type = bad ? 13 : 4; });
  add("data_start_past_end", "data", [](Spec& s, bool bad) {
    // A zero-size tensor, and a file that ends before the padding to the data section.
    s.tis = {{"z", {0}, 0, 0, {}}};
    s.data_bytes = 0;
    s.pad = !bad;
  });
  return out;
}

// The bad files and their twins, as DIR/bad_<case>.gguf and DIR/ok_<case>.gguf.
inline int write_corpus(const std::string& dir) {
  std::filesystem::create_directories(dir);
  int n = 0;
  for (const Case& c : bad_corpus()) {
    for (const auto& [prefix, bytes] : {std::pair{"bad_", &c.bad}, std::pair{"ok_", &c.good}}) {
      const std::string path = (std::filesystem::path(dir) / (prefix + c.name + ".gguf")).string();
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (!f || std::fwrite(bytes->data(), 1, bytes->size(), f) != bytes->size())
        throw wick::IoError("cannot write " + path);
      std::fclose(f);
      ++n;
    }
  }
  return n;
}

// ---- the sample: content that gguf_interop.py recomputes ----------------------------------------

// Element i of tensor k: a multiple of 1/256 in [-3.91, 3.91], exact in f32 (and f16).
inline double sample_value(int64_t k, int64_t i) {
  return static_cast<double>((i * 7919 + k * 104729) % 2001 - 1000) / 256.0;
}
// For block formats: blocks of 32 scaled by 1 to 4, so that scales differ between blocks.
inline double sample_qvalue(int64_t k, int64_t i) { return sample_value(k, i) * static_cast<double>(1 + (i / 32) % 4); }

inline wick::Tensor sample_f32(int64_t k, const wick::Shape& shape, bool quant) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) {
    const auto ii = static_cast<int64_t>(i);
    v[i] = static_cast<float>(quant ? sample_qvalue(k, ii) : sample_value(k, ii));
  }
  return wick::Tensor::from_vector(v, shape);
}

inline wick::GgufWriter sample_writer() {
  using wick::GgufValue;
  wick::GgufWriter w(3);
  wick::GgufMetadata& m = w.metadata();
  m.set("general.architecture", GgufValue::string("sample"));
  m.set("sample.u8", GgufValue::u8(200));
  m.set("sample.i8", GgufValue::i8(-100));
  m.set("sample.u16", GgufValue::u16(60000));
  m.set("sample.i16", GgufValue::i16(-30000));
  m.set("sample.u32", GgufValue::u32(4000000000u));
  m.set("sample.i32", GgufValue::i32(-2000000000));
  m.set("sample.f32", GgufValue::f32(1.5f));
  m.set("sample.bool", GgufValue::boolean(true));
  m.set("sample.string", GgufValue::string("hello"));
  m.set("sample.u64", GgufValue::u64(0xFFFFFFFFFFFFFFF0ull));
  m.set("sample.i64", GgufValue::i64(-(int64_t{1} << 62) - 3));
  m.set("sample.f64", GgufValue::f64(0.1));
  m.set("sample.empty_string", GgufValue::string(""));
  m.set("sample.unicode", GgufValue::string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xe6\x97\xa5\xe6\x9c\xac"));
  m.set("sample.arr.u8", GgufValue::array<uint8_t>({1, 2, 255}));
  m.set("sample.arr.i8", GgufValue::array<int8_t>({-128, 0, 127}));
  m.set("sample.arr.u16", GgufValue::array<uint16_t>({0, 65535}));
  m.set("sample.arr.i16", GgufValue::array<int16_t>({-32768, 5}));
  m.set("sample.arr.u32", GgufValue::array<uint32_t>({7, 4294967295u}));
  m.set("sample.arr.i32", GgufValue::array<int32_t>({-7, 2147483647}));
  m.set("sample.arr.f32", GgufValue::array<float>({0.5f, -2.25f, 1e-3f}));
  m.set("sample.arr.bool", GgufValue::array<bool>({true, false, true}));
  m.set("sample.arr.u64", GgufValue::array<uint64_t>({0, 18446744073709551615ull}));
  m.set("sample.arr.i64", GgufValue::array<int64_t>({-9223372036854775807LL - 1, 42}));
  m.set("sample.arr.f64", GgufValue::array<double>({0.1, -1e300}));
  m.set("sample.arr.string", GgufValue::strings({"a", "", "\xc3\xbc", "tok en"}));
  m.set("sample.arr.nested",
        GgufValue::arrays({GgufValue::array<int32_t>({1, 2, 3}), GgufValue::array<int32_t>({4, 5})}));
  m.set("sample.arr.empty", GgufValue::array<uint32_t>({}));

  int64_t k = 0;
  auto dense = [&](const std::string& name, wick::DType d, const wick::Shape& shape) {
    const auto n = static_cast<size_t>(shape.numel());
    if (d == wick::DType::F64) {
      std::vector<double> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = sample_value(k, static_cast<int64_t>(i)) / 3.0;
      w.add(name, wick::Tensor::from_vector(v, shape));
    } else if (d == wick::DType::I32) {
      // Integers from a multiplicative hash, over the whole range of the type.
      std::vector<int32_t> v(n);
      for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<int32_t>(static_cast<uint32_t>(i * 2654435761u + static_cast<uint64_t>(k)) - (1u << 31));
      w.add(name, wick::Tensor::from_vector(v, shape));
    } else if (d == wick::DType::I64) {
      std::vector<int64_t> v(n);
      for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<int64_t>(i * 6364136223846793005ull + static_cast<uint64_t>(k) * 1442695040888963407ull -
                                    (1ull << 63));
      w.add(name, wick::Tensor::from_vector(v, shape));
    } else {
      w.add(name, sample_f32(k, shape, false).to_dtype(d));
    }
    ++k;
  };
  dense("dense.f32", wick::DType::F32, {3, 5});
  dense("dense.f16", wick::DType::F16, {2, 3, 4});
  dense("dense.bf16", wick::DType::BF16, {7});
  dense("dense.f64", wick::DType::F64, {2, 2, 2, 2});
  dense("dense.i32", wick::DType::I32, {6});
  dense("dense.i64", wick::DType::I64, {2, 3});
  for (wick::QFormat f : wick::kAllQFormats) {
    w.add("q." + std::string(wick::qformat_name(f)), wick::quantize(sample_f32(k, {2, 256}, true), f));
    ++k;
  }
  return w;
}

// ---- dump -----------------------------------------------------------------------------------------

inline std::string json_str(std::string_view s) {
  std::string o = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

template <class T>
std::string json_num(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
  } else {
    return std::to_string(v);
  }
}

template <class T>
std::string json_list(const std::vector<T>& v) {
  std::string o = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) o += ",";
    if constexpr (std::is_same_v<T, bool>)
      o += v[i] ? "true" : "false";
    else
      o += json_num(v[i]);
  }
  return o + "]";
}

// The value (without its type) as JSON; arrays of arrays as lists of {"elem", "value"} objects.
inline std::string json_value(const wick::GgufValue& v) {
  using wick::GgufType;
  switch (v.type()) {
    case GgufType::U8:
      return json_num(v.as_u8());
    case GgufType::I8:
      return json_num(v.as_i8());
    case GgufType::U16:
      return json_num(v.as_u16());
    case GgufType::I16:
      return json_num(v.as_i16());
    case GgufType::U32:
      return json_num(v.as_u32());
    case GgufType::I32:
      return json_num(v.as_i32());
    case GgufType::F32:
      return json_num(v.as_f32());
    case GgufType::Bool:
      return v.as_bool() ? "true" : "false";
    case GgufType::String:
      return json_str(v.as_string());
    case GgufType::U64:
      return json_num(v.as_u64());
    case GgufType::I64:
      return json_num(v.as_i64());
    case GgufType::F64:
      return json_num(v.as_f64());
    case GgufType::Array:
      break;
  }
  switch (v.elem_type()) {
    case GgufType::U8:
      return json_list(v.as_array<uint8_t>());
    case GgufType::I8:
      return json_list(v.as_array<int8_t>());
    case GgufType::U16:
      return json_list(v.as_array<uint16_t>());
    case GgufType::I16:
      return json_list(v.as_array<int16_t>());
    case GgufType::U32:
      return json_list(v.as_array<uint32_t>());
    case GgufType::I32:
      return json_list(v.as_array<int32_t>());
    case GgufType::F32:
      return json_list(v.as_array<float>());
    case GgufType::Bool:
      return json_list(v.as_array<bool>());
    case GgufType::U64:
      return json_list(v.as_array<uint64_t>());
    case GgufType::I64:
      return json_list(v.as_array<int64_t>());
    case GgufType::F64:
      return json_list(v.as_array<double>());
    case GgufType::String: {
      std::string o = "[";
      for (size_t i = 0; i < v.as_strings().size(); ++i) o += (i ? "," : "") + json_str(v.as_strings()[i]);
      return o + "]";
    }
    case GgufType::Array: {
      std::string o = "[";
      for (size_t i = 0; i < v.as_arrays().size(); ++i) {
        const wick::GgufValue& e = v.as_arrays()[i];
        o += std::string(i ? "," : "") + "{\"elem\":\"" + wick::gguf_type_name(e.elem_type()) +
             "\",\"value\":" + json_value(e) + "}";
      }
      return o + "]";
    }
  }
  return "null";
}

// CRC-32 (zlib's), so that Python checks bytes with zlib.crc32.
inline uint32_t crc32(const uint8_t* p, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) c = table[(c ^ p[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

inline void dump(const std::string& path, bool values, std::ostream& os) {
  const wick::GgufFile g = wick::GgufFile::open(path);
  os << "{\"kind\":\"header\",\"version\":" << g.version() << ",\"alignment\":" << g.alignment()
     << ",\"data_offset\":" << g.data_offset() << ",\"n_kv\":" << g.metadata().size()
     << ",\"n_tensors\":" << g.tensors().size() << "}\n";
  for (const auto& [key, v] : g.metadata().items()) {
    os << "{\"kind\":\"kv\",\"key\":" << json_str(key) << ",\"type\":\"" << wick::gguf_type_name(v.type()) << "\"";
    if (v.type() == wick::GgufType::Array) os << ",\"elem\":\"" << wick::gguf_type_name(v.elem_type()) << "\"";
    os << ",\"value\":" << json_value(v) << ",\"str\":" << json_str(v.str()) << "}\n";
  }
  for (const wick::FileTensor& t : g.tensors()) {
    const std::vector<uint8_t> b = g.bytes(t.name).to_vector<uint8_t>();
    os << "{\"kind\":\"tensor\",\"name\":" << json_str(t.name) << ",\"type\":\"" << t.type
       << "\",\"ggml_type\":" << g.ggml_type(t.name) << ",\"shape\":" << json_list(t.shape.vec())
       << ",\"offset\":" << t.offset << ",\"nbytes\":" << t.nbytes << ",\"crc32\":" << crc32(b.data(), b.size());
    if (values && t.qformat)
      os << ",\"dequant\":" << json_list(g.qtensor(t.name).dequantize(wick::DType::F32).to_vector<float>());
    os << "}\n";
  }
}

inline int tool_main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "copy" && argc == 4) {
      wick::GgufWriter::copy_of(wick::GgufFile::open(argv[2])).write(argv[3]);
    } else if (cmd == "dump" && (argc == 3 || (argc == 4 && std::string(argv[3]) == "--values"))) {
      dump(argv[2], argc == 4, std::cout);
    } else if (cmd == "sample" && argc == 3) {
      sample_writer().write(argv[2]);
    } else if (cmd == "corpus" && argc == 3) {
      std::cout << write_corpus(argv[2]) << " files written to " << argv[2] << "\n";
    } else {
      std::cerr << "usage: wick_io_gguf copy IN OUT | dump IN [--values] | sample OUT | corpus DIR\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace wick_gguf_tool

#ifndef WICK_GGUF_TOOL_NO_MAIN
int main(int argc, char** argv) { return wick_gguf_tool::tool_main(argc, argv); }
#endif
