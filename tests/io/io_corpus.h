// Handcrafted safetensors, .npy and .npz files: one malformed file per class of defect, each with a
// valid twin that differs only where the defect is, so that a test shows the reader rejects exactly
// the defect. Shared by tests/test_io_safetensors.cpp, tests/test_io_npy.cpp and `wick_io_st
// corpus DIR` (which writes them out as a fuzzing seed corpus).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace wick::testing {

using Bytes = std::vector<uint8_t>;

// One case: files for the bad and the good version (a name relative to a folder, and its bytes),
// the file a reader opens, and what the error message must contain (the field it names).
struct CorpusCase {
  std::string name;
  std::string format;  // "safetensors", "npy", "npz"
  std::map<std::string, Bytes> bad, good;
  std::string entry;                 // the file to open, in both
  std::vector<std::string> message;  // substrings of the bad file's error
};

inline Bytes bytes_of_str(const std::string& s) { return Bytes(s.begin(), s.end()); }

inline void put_le(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// Bytes 1, 2, 3, ... (never all zero, so that a misplaced read shows).
inline Bytes counting(size_t n, uint8_t start = 1) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(start + i);
  return b;
}

// ---- safetensors ----------------------------------------------------------------------------

// length, header, data; `length` overrides the header length field when non-negative.
inline Bytes st_file(const std::string& header, const Bytes& data, int64_t length = -1) {
  Bytes b;
  put_le(b, length >= 0 ? static_cast<uint64_t>(length) : header.size(), 8);
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

inline std::vector<CorpusCase> safetensors_corpus() {
  std::vector<CorpusCase> out;
  auto one = [&](std::string name, Bytes bad, Bytes good, std::vector<std::string> message) {
    const std::string file = name + ".safetensors";
    out.push_back({name, "safetensors", {{file, std::move(bad)}}, {{file, std::move(good)}}, file, std::move(message)});
  };
  // The valid file most cases start from: f32 [2] at [0, 8), i32 [1] at [8, 12).
  const std::string a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string b = R"("b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]})";
  const std::string valid = "{" + a + "," + b + "}";
  const Bytes data = counting(12);
  const Bytes good = st_file(valid, data);
  auto with_b = [&](const std::string& entry) { return "{" + a + "," + entry + "}"; };

  one("st_short_file", Bytes{1, 2, 3}, good, {"header length"});
  one("st_header_length_past_file", st_file(valid, data, static_cast<int64_t>(valid.size() + data.size() + 1)), good,
      {"header length", "bytes after the length"});
  one("st_header_length_cap", st_file(valid, data, 100'000'001), good, {"header length", "cap"});
  one("st_header_length_huge", st_file(valid, data, INT64_MAX), good, {"header length"});
  one("st_not_json", st_file("{\"a\":{\"dtype\":\"F32\",", data), good, {"header", "not valid JSON"});
  one("st_not_object", st_file("[1,2]", {}), st_file("{}", {}), {"header", "not an object"});
  one("st_entry_not_object", st_file(with_b(R"("b":[1])"), data), good, {"tensor 'b'", "not an object"});
  one("st_unknown_dtype", st_file(with_b(R"("b":{"dtype":"I33","shape":[1],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.dtype", "I33"});
  one("st_dtype_not_string", st_file(with_b(R"("b":{"dtype":32,"shape":[1],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.dtype"});
  one("st_missing_shape", st_file(with_b(R"("b":{"dtype":"I32","data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.shape", "missing"});
  one("st_unknown_key", st_file(with_b(R"("b":{"dtype":"I32","shape":[1],"data_offsets":[8,12],"x":0})"), data), good,
      {"tensor 'b'.x", "unknown key"});
  one("st_negative_dim", st_file(with_b(R"("b":{"dtype":"I32","shape":[-1],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.shape", "negative"});
  one("st_float_dim", st_file(with_b(R"("b":{"dtype":"I32","shape":[1.0],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.shape"});
  one("st_shape_overflow",
      st_file(with_b(R"("b":{"dtype":"I32","shape":[4294967296,4294967296,2],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.shape", "overflows"});
  one("st_size_overflow",
      st_file(with_b(R"("b":{"dtype":"I32","shape":[4611686018427387904],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.shape", "overflows"});
  one("st_offsets_reversed", st_file(with_b(R"("b":{"dtype":"I32","shape":[1],"data_offsets":[12,8]})"), data), good,
      {"tensor 'b'.data_offsets", "ends before it begins"});
  one("st_offsets_not_pair", st_file(with_b(R"("b":{"dtype":"I32","shape":[1],"data_offsets":[8,12,12]})"), data), good,
      {"tensor 'b'.data_offsets"});
  one("st_hole", st_file(with_b(R"("b":{"dtype":"I32","shape":[1],"data_offsets":[12,16]})"), counting(16)),
      st_file(with_b(R"("b":{"dtype":"I32","shape":[2],"data_offsets":[8,16]})"), counting(16)),
      {"tensor 'b'.data_offsets", "hole"});
  one("st_hole_at_start", st_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", counting(12)),
      st_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}})", counting(12)),
      {"tensor 'a'.data_offsets", "hole", "start"});
  one("st_overlap", st_file(with_b(R"("b":{"dtype":"I32","shape":[1],"data_offsets":[4,8]})"), counting(8)),
      st_file(with_b(R"("b":{"dtype":"I32","shape":[0],"data_offsets":[8,8]})"), counting(8)),
      {"tensor 'b'.data_offsets", "overlaps"});
  one("st_trailing_bytes", st_file(valid, counting(13)), good, {"data", "trailing"});
  one("st_offsets_past_end", st_file(valid, counting(10)), good, {"tensor 'b'.data_offsets", "past the end"});
  one("st_size_disagrees", st_file(with_b(R"("b":{"dtype":"I64","shape":[1],"data_offsets":[8,12]})"), data), good,
      {"tensor 'b'.data_offsets", "need 8"});
  one("st_duplicate_name", st_file("{" + a + "," + b + "," + b + "}", data), good, {"header", "'b' appears twice"});
  one("st_metadata_not_string", st_file(R"({"__metadata__":{"format":"pt","n":1},)" + a + "," + b + "}", data),
      st_file(R"({"__metadata__":{"format":"pt","n":"1"},)" + a + "," + b + "}", data), {"__metadata__['n']"});
  one("st_metadata_not_object", st_file(R"({"__metadata__":["pt"],)" + a + "," + b + "}", data),
      st_file(R"({"__metadata__":null,)" + a + "," + b + "}", data), {"__metadata__", "not an object"});
  one("st_nul_padding", st_file(valid + std::string("\0\0\0", 3), data), st_file(valid + "   ", data),
      {"header", "not valid JSON"});
  one("st_subbyte_dtype", st_file(with_b(R"("b":{"dtype":"F4","shape":[7],"data_offsets":[8,12]})"), data),
      st_file(with_b(R"("b":{"dtype":"F4","shape":[8],"data_offsets":[8,12]})"), data),
      {"tensor 'b'.shape", "whole number of bytes"});

  // Checkpoints: an index and its shards in one folder. s1 holds a, s2 holds b and c.
  const std::string index_name = "model.safetensors.index.json";
  auto checkpoint = [&](std::string name, const std::string& bad_map, const std::string& good_map,
                        std::vector<std::string> message) {
    std::map<std::string, Bytes> files = {
        {"s1.safetensors", st_file("{" + a + "}", counting(8))},
        {"s2.safetensors", st_file(R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("c":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
                                   counting(6))}};
    auto bad = files, good = files;
    bad[index_name] = bytes_of_str(R"({"metadata":{"total_size":14},"weight_map":)" + bad_map + "}");
    good[index_name] = bytes_of_str(R"({"metadata":{"total_size":14},"weight_map":)" + good_map + "}");
    out.push_back({std::move(name), "safetensors", std::move(bad), std::move(good), index_name, std::move(message)});
  };
  const std::string good_map = R"({"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors"})";
  checkpoint("st_index_missing_shard", R"({"a":"s1.safetensors","b":"s3.safetensors","c":"s3.safetensors"})", good_map,
             {"weight_map", "s3.safetensors"});
  checkpoint("st_index_escaping_path", R"({"a":"s1.safetensors","b":"../s2.safetensors","c":"s2.safetensors"})",
             good_map, {"weight_map", ".."});
  checkpoint("st_index_absolute_path", R"({"a":"s1.safetensors","b":"/tmp/s2.safetensors","c":"s2.safetensors"})",
             good_map, {"weight_map", "absolute"});
  checkpoint("st_index_tensor_not_in_shard",
             R"({"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors","d":"s2.safetensors"})", good_map,
             {"weight_map", "'d'", "not in its shard"});
  checkpoint("st_index_shard_tensor_unmapped", R"({"a":"s1.safetensors","b":"s2.safetensors"})", good_map,
             {"weight_map", "'c'", "not in weight_map"});
  checkpoint("st_index_wrong_shard", R"({"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors"})", good_map,
             {"weight_map", "'b'", "mapped to 's1.safetensors'"});
  checkpoint("st_index_not_string", R"({"a":"s1.safetensors","b":2,"c":"s2.safetensors"})", good_map,
             {"weight_map['b']"});
  checkpoint("st_index_duplicate_tensor",
             R"({"a":"s1.safetensors","b":"s2.safetensors","c":"s2.safetensors","b":"s2.safetensors"})", good_map,
             {"index", "'b' appears twice"});
  checkpoint("st_index_not_json", R"({"a":"s1.safetensors",)", good_map, {"index", "not valid JSON"});
  // A checkpoint may map only some shards: s2 is then never opened (here, mapping a alone).
  checkpoint("st_index_no_weight_map", R"([])", R"({"a":"s1.safetensors"})", {"weight_map"});
  return out;
}

// ---- .npy -----------------------------------------------------------------------------------

// magic, version, header length, the dict padded to 64 bytes and a newline, data.
inline Bytes npy_file(const std::string& dict, const Bytes& data, int major = 1, int minor = 0, int64_t length = -1) {
  Bytes b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), static_cast<uint8_t>(minor)};
  const size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  put_le(b, length >= 0 ? static_cast<uint64_t>(length) : h.size(), major == 1 ? 2 : 4);
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

inline std::string npy_dict(const std::string& descr, const std::string& shape, bool fortran = false) {
  return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }";
}

// ---- zip (stored members), for .npz cases the writers cannot make ----------------------------

inline uint32_t crc32_of(const Bytes& b) {
  uint32_t c = 0xffffffffu;
  for (uint8_t x : b) {
    c ^= x;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A zip archive of stored members (a name and its bytes each, in order, duplicates allowed).
inline Bytes stored_zip(const std::vector<std::pair<std::string, Bytes>>& members) {
  Bytes out, central;
  for (const auto& [name, data] : members) {
    const auto offset = static_cast<uint32_t>(out.size());
    const uint32_t crc = crc32_of(data);
    put_le(out, 0x04034b50, 4);
    put_le(out, 20, 2);    // version needed
    put_le(out, 0, 2);     // flags
    put_le(out, 0, 2);     // stored
    put_le(out, 0, 2);     // time
    put_le(out, 0x21, 2);  // date: 1980-01-01
    put_le(out, crc, 4);
    put_le(out, data.size(), 4);
    put_le(out, data.size(), 4);
    put_le(out, name.size(), 2);
    put_le(out, 0, 2);
    out.insert(out.end(), name.begin(), name.end());
    out.insert(out.end(), data.begin(), data.end());

    put_le(central, 0x02014b50, 4);
    put_le(central, 20, 2);  // made by
    put_le(central, 20, 2);  // needed
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0, 2);
    put_le(central, 0x21, 2);
    put_le(central, crc, 4);
    put_le(central, data.size(), 4);
    put_le(central, data.size(), 4);
    put_le(central, name.size(), 2);
    put_le(central, 0, 2);  // extra
    put_le(central, 0, 2);  // comment
    put_le(central, 0, 2);  // disk
    put_le(central, 0, 2);  // internal attributes
    put_le(central, 0, 4);  // external attributes
    put_le(central, offset, 4);
    central.insert(central.end(), name.begin(), name.end());
  }
  const auto cd_offset = static_cast<uint32_t>(out.size());
  out.insert(out.end(), central.begin(), central.end());
  put_le(out, 0x06054b50, 4);
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, members.size(), 2);
  put_le(out, members.size(), 2);
  put_le(out, central.size(), 4);
  put_le(out, cd_offset, 4);
  put_le(out, 0, 2);
  return out;
}

inline std::vector<CorpusCase> npy_corpus() {
  std::vector<CorpusCase> out;
  auto one = [&](std::string name, Bytes bad, Bytes good, std::vector<std::string> message) {
    const std::string file = name + ".npy";
    out.push_back({name, "npy", {{file, std::move(bad)}}, {{file, std::move(good)}}, file, std::move(message)});
  };
  const std::string dict = npy_dict("<f4", "(2, 3)");
  const Bytes data = counting(24);
  const Bytes good = npy_file(dict, data);

  Bytes bad_magic = good;
  bad_magic[5] = 'Z';
  one("npy_bad_magic", bad_magic, good, {"magic"});
  one("npy_short_file", Bytes{0x93, 'N', 'U'}, good, {"magic"});
  one("npy_version_4", npy_file(dict, data, 4), npy_file(dict, data, 3), {"version", "4.0"});
  one("npy_minor_version", npy_file(dict, data, 1, 1), good, {"version", "1.1"});
  one("npy_header_length_past_file", npy_file(dict, data, 1, 0, 60000), good, {"header length"});
  one("npy_header_unterminated", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ", data), good,
      {"header"});
  one("npy_header_not_dict", npy_file("['<f4', False, (2, 3)]", data), good, {"header", "'{'"});
  one("npy_header_garbage_after", npy_file(dict + " x", data), good, {"header", "after the closing"});
  one("npy_missing_key", npy_file("{'descr': '<f4', 'shape': (2, 3), }", data),
      npy_file("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}", data), {"fortran_order", "missing"});
  one("npy_unknown_key", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}", data), good,
      {"header", "unknown key 'x'"});
  one("npy_duplicate_key", npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", data),
      good, {"descr", "twice"});
  one("npy_unknown_descr", npy_file(npy_dict("<c8", "(2, 3)"), counting(48)),
      npy_file(npy_dict("<f8", "(2, 3)"), counting(48)), {"descr", "<c8", "not supported"});
  one("npy_structured_descr", npy_file("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3), }", data),
      good, {"descr", "structured"});
  one("npy_bad_bool", npy_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3), }", data), good,
      {"fortran_order", "True or False"});
  one("npy_negative_dim", npy_file(npy_dict("<f4", "(-2, 3)"), data), good, {"shape", "negative"});
  one("npy_not_tuple", npy_file(npy_dict("<f4", "(6)"), data), npy_file(npy_dict("<f4", "(6,)"), data),
      {"shape", "not a tuple"});
  one("npy_dim_too_large", npy_file(npy_dict("<f4", "(99999999999999999999, 3)"), data), good, {"shape", "2^63"});
  one("npy_shape_overflow", npy_file(npy_dict("<f4", "(4294967296, 4294967296, 2)"), data), good,
      {"shape", "overflows"});
  one("npy_size_overflow", npy_file(npy_dict("<f8", "(4611686018427387904,)"), data), good, {"shape", "overflows"});
  one("npy_truncated_data", npy_file(dict, counting(20)), good, {"data", "truncated"});
  one("npy_trailing_data", npy_file(dict, counting(28)), good, {"data", "4 bytes after"});

  // .npz
  auto zip_case = [&](std::string name, Bytes bad, Bytes good, std::vector<std::string> message) {
    const std::string file = name + ".npz";
    out.push_back({name, "npz", {{file, std::move(bad)}}, {{file, std::move(good)}}, file, std::move(message)});
  };
  const Bytes b_npy = npy_file(npy_dict("<i8", "(2,)"), counting(16, 50));
  const Bytes zip_good = stored_zip({{"a.npy", good}, {"b.npy", b_npy}});
  Bytes bad_crc = zip_good;
  bad_crc[30 + 5 + 70] ^= 0xff;  // a byte of a.npy's data (local header 30 bytes, name 5 bytes)
  zip_case("npz_bad_crc", bad_crc, zip_good, {"member 'a.npy'", "CRC"});
  const Bytes cut(zip_good.begin(), zip_good.end() - 10);
  zip_case("npz_truncated_archive", cut, zip_good, {"zip", "not a valid zip archive"});
  zip_case("npz_not_zip", bytes_of_str("PK\x03\x04 this is not a zip archive"), zip_good, {"zip"});
  zip_case("npz_member_not_npy", stored_zip({{"a.npy", good}, {"notes.txt", bytes_of_str("hello")}}), zip_good,
           {"member 'notes.txt'", "not a .npy"});
  zip_case("npz_duplicate_member", stored_zip({{"a.npy", good}, {"a.npy", b_npy}}), zip_good, {"two members"});
  zip_case("npz_bad_member", stored_zip({{"a.npy", good}, {"b.npy", npy_file(npy_dict("<i8", "(3,)"), counting(16))}}),
           zip_good, {"b.npy", "data", "truncated"});
  return out;
}

}  // namespace wick::testing
