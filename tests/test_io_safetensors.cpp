// safetensors (src/io/safetensors.cpp): round trips of every dtype, layouts and ranks; zero-copy
// reads; sharded checkpoints through the index and the folder; the header the reference writes;
// and the malformed-file corpus (tests/io/io_corpus.h), each case with a valid twin.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.h"
#include "io/io_corpus.h"
#include "test_util.h"
#include "wick/io.h"

namespace {

using namespace wick;
using wick::testing::Bytes;
using wick::testing::bytes_of;
namespace fs = std::filesystem;
using wick::testing::random_tensor;
using wick::testing::read_file;
using wick::testing::TempDir;
using wick::testing::write_file;

std::string st_type(DType d) {
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
  return "?";
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

using Named = std::vector<std::pair<std::string, Tensor>>;

TEST(Safetensors, RoundTripEveryDtype) {
  TempDir dir("st_every_dtype");
  Named tensors;
  for (DType d : kAllDTypes) tensors.push_back({"t." + std::string(dtype_name(d)), random_tensor({3, 7}, d)});
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "\"quoted\" \n ünïcode"}};
  const std::string p = dir / "all.safetensors";
  save_safetensors(p, tensors, meta);
  EXPECT_EQ(read_file(p), safetensors_bytes(tensors, meta));

  const SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_EQ(f.metadata(), meta);
  EXPECT_EQ(f.shards(), std::vector<std::string>{p});
  ASSERT_EQ(f.tensors().size(), tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    const FileTensor& info = f.tensors()[i];  // file order is the order written
    EXPECT_EQ(info.name, name);
    EXPECT_EQ(info.type, st_type(t.dtype()));
    EXPECT_EQ(info.dtype, t.dtype());
    EXPECT_EQ(info.nbytes, t.numel() * dtype_size(t.dtype()));
    expect_same(f.tensor(name), t, name);
  }
  // load() gives the same.
  const auto all = f.load(Device::cpu(), {{}, {}, false});
  for (const auto& [name, t] : tensors) expect_same(all.at(name).tensor, t, name);
  // And from memory.
  const SafetensorsFile m = SafetensorsFile::from_memory(read_file(p), "mem");
  for (const auto& [name, t] : tensors) expect_same(m.tensor(name), t, name);
}

TEST(Safetensors, NonContiguousSourcesAndRanks) {
  TempDir dir("st_layouts");
  const Tensor base = random_tensor({4, 6, 5}, DType::F32);
  Named tensors = {
      {"transposed", base.transpose(0, 2)},
      {"narrowed", base.narrow(1, 1, 3)},
      {"selected", base.select(2, 4)},
      {"broadcast", random_tensor({1, 5}, DType::BF16).broadcast_as({3, 5})},
      {"zero_size", Tensor::empty({0, 3}, DType::F16)},
      {"zero_size_2", Tensor::empty({4, 0, 2}, DType::I64)},
  };
  Shape s;
  for (int rank = 0; rank <= 5; ++rank) {
    tensors.push_back({"rank" + std::to_string(rank), random_tensor(s, DType::I32)});
    s.push_back(rank + 2);
  }
  const std::string p = dir / "layouts.safetensors";
  save_safetensors(p, tensors);
  const SafetensorsFile f = SafetensorsFile::open(p);
  EXPECT_TRUE(f.metadata().empty());
  for (const auto& [name, t] : tensors) expect_same(f.tensor(name), t.contiguous(), name);
  EXPECT_EQ(f.info("rank0").shape.size(), 0u);
  EXPECT_EQ(f.tensor("rank0").numel(), 1);
  EXPECT_EQ(f.info("zero_size").nbytes, 0);
}

TEST(Safetensors, HeaderIsTheReferenceWritersForm) {
  // Compact JSON, __metadata__ first, tensors in order with contiguous offsets, padded with spaces so
  // that the data starts at a multiple of 8 (what safetensors.numpy.save writes for these tensors).
  const Named tensors = {{"a", Tensor::from_vector<int64_t>({1, 2}, {2})},
                         {"s", Tensor::from_vector<double>({3.0}, {})},
                         {"b", Tensor::from_vector<float>({1, 2, 3}, {3})},
                         {"z", Tensor::empty({0, 3}, DType::F16)},
                         {"c", Tensor::from_vector<uint8_t>({1, 2, 3, 4}, {2, 2})}};
  const Bytes b = safetensors_bytes(tensors, {{"a", "1"}, {"k", "v"}});
  const std::string want =
      R"({"__metadata__":{"a":"1","k":"v"},"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]},)"
      R"("s":{"dtype":"F64","shape":[],"data_offsets":[16,24]},"b":{"dtype":"F32","shape":[3],"data_offsets":[24,36]},)"
      R"("z":{"dtype":"F16","shape":[0,3],"data_offsets":[36,36]},"c":{"dtype":"U8","shape":[2,2],"data_offsets":[36,40]}})";
  uint64_t n = 0;
  std::memcpy(&n, b.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(n, (want.size() + 7) / 8 * 8);
  const std::string header(b.begin() + 8, b.begin() + 8 + static_cast<int64_t>(n));
  EXPECT_EQ(header, want + std::string(n - want.size(), ' '));
  EXPECT_EQ(b.size(), 8 + n + 40);
  // No tensors, no metadata: "{}" padded.
  const Bytes e = safetensors_bytes({});
  EXPECT_EQ(std::string(e.begin() + 8, e.end()), "{}      ");
}

TEST(Safetensors, ReadsAreZeroCopyReadOnlyViewsThatOutliveTheFile) {
  TempDir dir("st_zero_copy");
  const Tensor w = random_tensor({64, 32}, DType::F32);
  const std::string p = dir / "w.safetensors";
  save_safetensors(p, {{"w", w}});
  Tensor t;
  {
    const SafetensorsFile f = SafetensorsFile::open(p);
    t = f.tensor("w");
    const FileTensor& info = f.info("w");
    // A view of the mapping at the tensor's offset.
    EXPECT_EQ(t.offset() * 4, info.offset);
    EXPECT_TRUE(t.storage()->read_only());
    EXPECT_EQ(f.bytes("w").storage().get(), t.storage().get());
  }
  fs::remove(p);
  EXPECT_THROW(t.copy_from(Tensor::zeros({64, 32}, DType::F32)), InvalidArgument);
  expect_same(t, w, "w after the file object is gone");
}

TEST(Safetensors, OtherReferenceDtypesAreRawBytes) {
  // BOOL reads as u8; I8, U16, F8_E5M2 (no wick dtype) through bytes() only.
  using wick::testing::st_file;
  const Bytes file = st_file(
      R"({"__metadata__":null,"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]},)"
      R"("i":{"dtype":"I8","shape":[2],"data_offsets":[3,5]},"u":{"dtype":"U16","shape":[2],"data_offsets":[5,9]},)"
      R"("e":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[9,10]},"f4":{"dtype":"F4","shape":[2,2],"data_offsets":[10,12]}})",
      {1, 0, 1, 0xff, 7, 1, 2, 3, 4, 0x3c, 0x12, 0x34});
  const SafetensorsFile f = SafetensorsFile::from_memory(file);
  EXPECT_TRUE(f.metadata().empty());
  EXPECT_EQ(f.info("m").type, "BOOL");
  EXPECT_EQ(f.info("m").dtype, DType::U8);
  EXPECT_EQ(f.tensor("m").to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 1}));
  for (const char* name : {"i", "u", "e", "f4"}) {
    EXPECT_FALSE(f.info(name).dtype.has_value()) << name;
    EXPECT_THROW(f.tensor(name), DTypeError) << name;
  }
  EXPECT_EQ(f.info("u").type, "U16");
  EXPECT_EQ(f.bytes("u").to_vector<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 4}));
  EXPECT_EQ(f.bytes("f4").to_vector<uint8_t>(), (std::vector<uint8_t>{0x12, 0x34}));
  EXPECT_THROW(f.tensor("absent"), IndexError);
}

TEST(Safetensors, HeaderOrderNeedNotBeOffsetOrder) {
  // Tensors listed in any order; the file order is the offset order. Leading and trailing spaces.
  using wick::testing::st_file;
  const Bytes file = st_file(
      R"(  {"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]},"z":{"dtype":"U8","shape":[0],"data_offsets":[4,4]},)"
      R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}   )",
      {0, 0, 0x80, 0x3f, 9, 8});
  const SafetensorsFile f = SafetensorsFile::from_memory(file);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.tensors()[0].name, "a");
  EXPECT_EQ(f.tensors()[1].name, "z");
  EXPECT_EQ(f.tensors()[2].name, "b");
  EXPECT_EQ(f.tensor("a").to_vector<float>(), std::vector<float>{1.0f});
  EXPECT_EQ(f.tensor("b").to_vector<uint8_t>(), (std::vector<uint8_t>{9, 8}));
}

TEST(Safetensors, ShardedCheckpointThroughIndexAndFolder) {
  TempDir dir("st_sharded");
  Named tensors;
  for (int i = 0; i < 7; ++i)
    tensors.push_back({"layer." + std::to_string(i), random_tensor({16, 8 + i}, i % 2 ? DType::BF16 : DType::F32)});
  tensors.push_back({"big", random_tensor({64, 64}, DType::F32)});  // larger than a shard: alone
  tensors.push_back({"empty", Tensor::empty({0}, DType::U8)});
  const std::map<std::string, std::string> meta = {{"format", "pt"}};
  const std::string index = save_safetensors_sharded(dir.path().string(), tensors, 1200, meta);
  EXPECT_EQ(index, dir / "model.safetensors.index.json");

  int64_t total = 0;
  for (const auto& [name, t] : tensors) total += t.numel() * dtype_size(t.dtype());
  for (const std::string& open_as : {index, dir.path().string()}) {
    const SafetensorsFile f = SafetensorsFile::open(open_as);
    EXPECT_GE(f.shards().size(), 3u) << open_as;
    EXPECT_EQ(fs::path(f.shards().front()).filename().string().substr(0, 15), "model-00001-of-");
    EXPECT_EQ(f.metadata().at("format"), "pt");
    EXPECT_EQ(f.metadata().at("total_size"), std::to_string(total));
    ASSERT_EQ(f.tensors().size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      EXPECT_EQ(f.tensors()[i].name, tensors[i].first);  // shards in order, each in written order
      expect_same(f.tensor(tensors[i].first), tensors[i].second, tensors[i].first);
    }
    // Each shard is a source of its own.
    EXPECT_NE(f.info("big").source, f.info("layer.0").source);
    // A shard alone is a safetensors file too.
    const SafetensorsFile s = SafetensorsFile::open(f.shards().back());
    EXPECT_TRUE(s.contains(tensors.back().first));
  }
  // A folder with a single model.safetensors.
  TempDir single("st_single");
  save_safetensors(single / "model.safetensors", {{"x", tensors[0].second}});
  expect_same(SafetensorsFile::open(single.path().string()).tensor("x"), tensors[0].second, "folder");
  TempDir none("st_none");
  EXPECT_THROW(SafetensorsFile::open(none.path().string()), FormatError);
}

TEST(Safetensors, ReadToGpu) {
  WICK_REQUIRE_GPU(gpus);
  TempDir dir("st_gpu");
  const Tensor w = random_tensor({33, 17}, DType::BF16);
  save_safetensors(dir / "w.safetensors", {{"w", w}});
  const SafetensorsFile f = SafetensorsFile::open(dir / "w.safetensors");
  for (const Device& d : gpus) expect_same(f.tensor("w", d).to(Device::cpu()), w, d.location());
}

TEST(Safetensors, WriterErrors) {
  TempDir dir("st_writer_errors");
  const Tensor t = random_tensor({2}, DType::F32);
  EXPECT_THROW(save_safetensors(dir / "x.safetensors", {{"a", t}, {"a", t}}), InvalidArgument);
  EXPECT_THROW(safetensors_bytes({{"__metadata__", t}}), InvalidArgument);
  EXPECT_THROW(safetensors_bytes({{"a", Tensor()}}), InvalidArgument);
  EXPECT_THROW(safetensors_bytes({{std::string("\xff\xfe"), t}}), InvalidArgument);
  EXPECT_THROW(safetensors_bytes({{"a", t}}, {{"k", std::string("\xc3")}}), InvalidArgument);
  EXPECT_THROW(save_safetensors_sharded(dir.path().string(), {{"a", t}}, 0), InvalidArgument);
  EXPECT_THROW(save_safetensors_sharded(dir.path().string(), {{"a", t}, {"a", t}}, 100), InvalidArgument);
  EXPECT_FALSE(fs::exists(dir / "x.safetensors"));
  EXPECT_TRUE(fs::is_empty(dir.path()));  // nothing written, no temporaries left
  EXPECT_THROW(SafetensorsFile::open(dir / "absent.safetensors"), IoError);
}

// ---- the malformed-file corpus ----------------------------------------------------------------

TEST(Safetensors, BadFilesAreFormatErrorsNamingTheFieldAndTheirTwinsLoad) {
  int cases = 0;
  for (const auto& c : wick::testing::safetensors_corpus()) {
    SCOPED_TRACE(c.name);
    ++cases;
    TempDir bad("st_bad_" + c.name), good("good_" + c.name);
    for (const auto& [file, bytes] : c.bad) write_file(bad / file, bytes);
    for (const auto& [file, bytes] : c.good) write_file(good / file, bytes);
    // The twin loads, every tensor readable.
    const SafetensorsFile g = SafetensorsFile::open(good / c.entry);
    for (const FileTensor& t : g.tensors()) EXPECT_EQ(g.bytes(t.name).numel(), t.nbytes);
    std::string message;
    try {
      SafetensorsFile::open(bad / c.entry);
      ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a FormatError: " << e.what();
    }
    EXPECT_EQ(message.rfind("[safetensors] ", 0), 0u) << message;
    for (const std::string& part : c.message) EXPECT_NE(message.find(part), std::string::npos) << message;
    // The same from memory, for the single-file cases.
    if (c.bad.size() == 1) {
      EXPECT_THROW(SafetensorsFile::from_memory(c.bad.begin()->second), FormatError);
      EXPECT_NO_THROW(SafetensorsFile::from_memory(c.good.begin()->second));
    }
  }
  EXPECT_GE(cases, 30);
}

TEST(Safetensors, EveryTruncationOfAValidFileIsAFormatError) {
  const Bytes b =
      safetensors_bytes({{"a", random_tensor({3, 3}, DType::F32)}, {"b", random_tensor({5}, DType::U8)}}, {{"k", "v"}});
  EXPECT_NO_THROW(SafetensorsFile::from_memory(b));
  for (size_t n = 0; n < b.size(); ++n)
    EXPECT_THROW(SafetensorsFile::from_memory({b.data(), n}), FormatError) << n << " bytes";
}

TEST(Safetensors, DeepNestingIsRejectedCheaply) {
  std::string h = "{\"__metadata__\":";
  for (int i = 0; i < 100000; ++i) h += '[';
  EXPECT_THROW(SafetensorsFile::from_memory(wick::testing::st_file(h, {})), FormatError);
}

}  // namespace
