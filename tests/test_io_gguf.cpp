// GGUF reader and writer: round trips of every value type, dense dtype and block format; tensors
// of a file as read-only views that outlive it; typed accessor errors; the malformed-file corpus
// (each case with a valid twin), built by tests/io/gguf_tool.cpp, which also serves as the fuzz
// seed corpus.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "test_util.h"
#include "wick/io.h"
#include "wick/quant.h"

// The corpus and the sample are shared with the tool (tests/io/gguf_tool.cpp) without its main.
#define WICK_GGUF_TOOL_NO_MAIN
#include "tests/io/gguf_tool.cpp"

namespace wick {
namespace {

using testing::bytes_of;
namespace tool = wick_gguf_tool;
using testing::TempDir;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Every value type: the 13 scalars, arrays of each scalar type, of strings, of arrays, empty ones.
void fill_metadata(GgufMetadata& m) {
  m.set("general.architecture", GgufValue::string("llama"));
  m.set("t.u8", GgufValue::u8(250));
  m.set("t.i8", GgufValue::i8(-7));
  m.set("t.u16", GgufValue::u16(65535));
  m.set("t.i16", GgufValue::i16(-32768));
  m.set("t.u32", GgufValue::u32(4096));
  m.set("t.i32", GgufValue::i32(-123456789));
  m.set("t.f32", GgufValue::f32(3.25f));
  m.set("t.bool", GgufValue::boolean(false));
  m.set("t.string", GgufValue::string("some text"));
  m.set("t.u64", GgufValue::u64(~uint64_t{0}));
  m.set("t.i64", GgufValue::i64(INT64_MIN));
  m.set("t.f64", GgufValue::f64(-1.0 / 3.0));
  m.set("t.empty_string", GgufValue::string(""));
  m.set("t.unicode", GgufValue::string("\xe2\x96\x81the \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87"));
  m.set("t.nul_inside", GgufValue::string(std::string("a\0b", 3)));
  m.set("a.u8", GgufValue::array<uint8_t>({0, 1, 255}));
  m.set("a.i8", GgufValue::array<int8_t>({-128, 127}));
  m.set("a.u16", GgufValue::array<uint16_t>({1, 65535}));
  m.set("a.i16", GgufValue::array<int16_t>({-1, 2, -3}));
  m.set("a.u32", GgufValue::array<uint32_t>({1, 2, 3, 4, 5, 6}));
  m.set("a.i32", GgufValue::array<int32_t>({INT32_MIN, INT32_MAX}));
  m.set("a.f32", GgufValue::array<float>({0.5f, -1e30f, 1e-30f}));
  m.set("a.bool", GgufValue::array<bool>({true, true, false}));
  m.set("a.u64", GgufValue::array<uint64_t>({~uint64_t{0}, 0}));
  m.set("a.i64", GgufValue::array<int64_t>({INT64_MIN, INT64_MAX}));
  m.set("a.f64", GgufValue::array<double>({1e300, -0.0}));
  m.set("a.raw_u16", GgufValue::array_raw(GgufType::U16, {1, 0, 0, 1}));
  m.set("a.strings", GgufValue::strings({"<unk>", "", "\xe2\x96\x81hello", "x"}));
  m.set("a.arrays",
        GgufValue::arrays({GgufValue::array<uint8_t>({1, 2}), GgufValue::strings({"a", "b"}),
                           GgufValue::arrays({GgufValue::array<double>({2.5})}), GgufValue::array<float>({})}));
  m.set("a.empty", GgufValue::array<int32_t>({}));
  m.set("a.empty_strings", GgufValue::strings({}));
}

struct Expected {
  std::string name;
  Shape shape;
  std::string type;
  uint32_t ggml_type;
  std::optional<DType> dtype;
  std::optional<QFormat> qformat;
  std::vector<uint8_t> bytes;
};

Tensor random_dense(const Shape& shape, DType d) {
  if (d == DType::I32 || d == DType::I64) return Tensor::rand_uniform(shape, DType::F32, -1e6, 1e6).to_dtype(d);
  return Tensor::rand_normal(shape, DType::F32, 0, 2).to_dtype(d);
}

Tensor random_bytes(int64_t n) { return Tensor::rand_uniform({n}, DType::F32, 0, 255.99).to_dtype(DType::U8); }

// Tensors of every kind, added to w; what the file must hold for each.
std::vector<Expected> add_everything(GgufWriter& w) {
  std::vector<Expected> want;
  const std::pair<DType, Shape> dense[] = {
      {DType::F32, {37}},         {DType::F16, {3, 5}}, {DType::BF16, {2, 3, 4}},
      {DType::F64, {2, 1, 3, 2}}, {DType::I32, {4, 4}}, {DType::I64, {3}},
  };
  const char* names[] = {"F32", "F16", "BF16", "F64", "I32", "I64"};
  const uint32_t ids[] = {0, 1, 30, 28, 26, 27};
  for (size_t i = 0; i < std::size(dense); ++i) {
    const auto& [d, shape] = dense[i];
    const Tensor t = random_dense(shape, d);
    const std::string name = "dense." + std::string(dtype_name(d));
    w.add(name, t);
    want.push_back({name, shape, names[i], ids[i], d, std::nullopt, bytes_of(t)});
  }
  // A transposed view: the file holds it row-major.
  const Tensor nc = Tensor::rand_normal({6, 4}, DType::F32, 0, 1).t();
  EXPECT_FALSE(nc.is_contiguous());
  w.add("dense.transposed", nc);
  want.push_back({"dense.transposed", {4, 6}, "F32", 0, DType::F32, std::nullopt, bytes_of(nc)});
  w.add("dense.empty", Tensor::empty({0, 8}, DType::F32));
  want.push_back({"dense.empty", {0, 8}, "F32", 0, DType::F32, std::nullopt, {}});
  for (QFormat f : kAllQFormats) {
    const Shape shape = f == QFormat::Q4_K ? Shape{2, 2, 256} : Shape{3, 256};
    const QTensor q = quantize(Tensor::rand_normal(shape, DType::F32, 0, 1), f);
    const std::string name = "q." + std::string(qformat_name(f));
    w.add(name, q);
    std::string type(qformat_name(f));
    for (char& c : type) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    want.push_back({name, shape, type, qformat_info(f).ggml_type, std::nullopt, f, bytes_of(q.bytes())});
  }
  const Tensor i8 = random_bytes(32);
  w.add_raw("raw.i8", 24, {4, 8}, i8);
  want.push_back({"raw.i8", {4, 8}, "I8", 24, std::nullopt, std::nullopt, bytes_of(i8)});
  const Tensor iq = random_bytes(2 * 66);
  w.add_raw("raw.iq2_xxs", 16, {2, 256}, iq);
  want.push_back({"raw.iq2_xxs", {2, 256}, "IQ2_XXS", 16, std::nullopt, std::nullopt, bytes_of(iq)});
  const Tensor nv = random_bytes(36);  // NVFP4, a recent ggml type wick has no codec for
  w.add_raw("raw.nvfp4", 40, {1, 64}, nv);
  want.push_back({"raw.nvfp4", {1, 64}, "NVFP4", 40, std::nullopt, std::nullopt, bytes_of(nv)});
  w.add_raw("raw.empty_q4_0", 2, {0, 32}, Tensor::empty({0}, DType::U8));
  want.push_back({"raw.empty_q4_0", {0, 32}, "Q4_0", 2, std::nullopt, QFormat::Q4_0, {}});
  return want;
}

void expect_metadata_equal(const GgufMetadata& a, const GgufMetadata& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a.items()[i].first);
    EXPECT_EQ(a.items()[i].first, b.items()[i].first);
    EXPECT_EQ(b.items()[i].second.key(), b.items()[i].first);
    EXPECT_TRUE(a.items()[i].second == b.items()[i].second)
        << a.items()[i].second.str() << " vs " << b.items()[i].second.str();
  }
}

void expect_tensors(const GgufFile& g, const std::vector<Expected>& want) {
  ASSERT_EQ(g.tensors().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Expected& e = want[i];
    const FileTensor& t = g.tensors()[i];
    SCOPED_TRACE(e.name);
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.shape, e.shape);
    EXPECT_EQ(t.type, e.type);
    EXPECT_EQ(g.ggml_type(e.name), e.ggml_type);
    EXPECT_EQ(t.dtype, e.dtype);
    EXPECT_EQ(t.qformat, e.qformat);
    EXPECT_EQ(t.nbytes, static_cast<int64_t>(e.bytes.size()));
    EXPECT_EQ((t.offset - g.data_offset()) % static_cast<int64_t>(g.alignment()), 0);
    EXPECT_EQ(g.bytes(e.name).to_vector<uint8_t>(), e.bytes);
    if (e.dtype) {
      const Tensor x = g.tensor(e.name);
      EXPECT_EQ(x.shape(), e.shape);
      EXPECT_EQ(x.dtype(), *e.dtype);
      EXPECT_EQ(bytes_of(x), e.bytes);
      EXPECT_THROW(g.qtensor(e.name), DTypeError);
    } else if (e.qformat) {
      const QTensor q = g.qtensor(e.name);
      EXPECT_EQ(q.format(), *e.qformat);
      EXPECT_EQ(q.shape(), e.shape);
      EXPECT_EQ(bytes_of(q.bytes()), e.bytes);
      EXPECT_THROW(g.tensor(e.name), DTypeError);
    } else {
      EXPECT_THROW(g.tensor(e.name), DTypeError);
      EXPECT_THROW(g.qtensor(e.name), DTypeError);
    }
  }
}

TEST(GgufRoundTrip, EveryValueTypeDtypeAndFormat) {
  TempDir dir("gguf");
  GgufWriter w;
  fill_metadata(w.metadata());
  const std::vector<Expected> want = add_everything(w);
  const std::string path = dir / "all.gguf";
  w.write(path);
  const std::vector<uint8_t> file = testing::read_file(path);
  EXPECT_EQ(w.to_bytes(), file);
  EXPECT_EQ(file.size() % 32, 0u);  // the last tensor is padded too

  const GgufFile g = GgufFile::open(path);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.data_offset() % 32, 0);
  EXPECT_EQ(g.path(), path);
  expect_metadata_equal(w.metadata(), g.metadata());
  expect_tensors(g, want);
  EXPECT_THROW(g.info("nope"), IndexError);
  // Values read back keep their types and contents.
  const GgufMetadata& m = g.metadata();
  EXPECT_EQ(m.get("t.i64").as_i64(), INT64_MIN);
  EXPECT_EQ(m.get("t.unicode").as_string(), w.metadata().get("t.unicode").as_string());
  EXPECT_EQ(m.get("t.nul_inside").as_string().size(), 3u);
  EXPECT_EQ(m.get("a.bool").as_array<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(m.get("a.raw_u16").as_array<uint16_t>(), (std::vector<uint16_t>{1, 256}));
  EXPECT_EQ(m.get("a.strings").as_strings()[2], "\xe2\x96\x81hello");
  ASSERT_EQ(m.get("a.arrays").as_arrays().size(), 4u);
  EXPECT_EQ(m.get("a.arrays").as_arrays()[2].as_arrays()[0].as_array<double>(), std::vector<double>{2.5});
  EXPECT_EQ(m.get("a.empty").size(), 0u);
  EXPECT_EQ(m.get("a.empty").elem_type(), GgufType::I32);

  // Written back from what was read: the same bytes.
  EXPECT_EQ(GgufWriter::copy_of(g).to_bytes(), file);
  // The same from memory.
  const GgufFile mem = GgufFile::from_memory(file, "mem.gguf");
  expect_metadata_equal(g.metadata(), mem.metadata());
  expect_tensors(mem, want);
  // load() of everything wick can decode.
  LoadOptions opts;
  opts.progress_bar = false;
  for (const Expected& e : want)
    if (e.dtype || e.qformat) opts.names.push_back(e.name);
  const auto loaded = g.load(Device::cpu(), opts);
  EXPECT_EQ(loaded.size(), opts.names.size());
  for (const Expected& e : want) {
    if (!loaded.count(e.name)) continue;
    const LoadedTensor& l = loaded.at(e.name);
    EXPECT_EQ(e.qformat ? bytes_of(l.qtensor.bytes()) : bytes_of(l.tensor), e.bytes) << e.name;
  }
}

TEST(GgufRoundTrip, CustomAlignment) {
  for (uint32_t align : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    GgufWriter w;
    w.metadata().set("general.alignment", GgufValue::u32(align));
    w.add("a", Tensor::rand_normal({3}, DType::F32, 0, 1));
    w.add("b", quantize(Tensor::rand_normal({1, 32}, DType::F32, 0, 1), QFormat::Q8_0));
    w.add("c", Tensor::rand_normal({5}, DType::F32, 0, 1).to_dtype(DType::F16));
    const std::vector<uint8_t> bytes = w.to_bytes();
    EXPECT_EQ(bytes.size() % align, 0u);
    const GgufFile g = GgufFile::from_memory(bytes);
    EXPECT_EQ(g.alignment(), align);
    EXPECT_EQ(g.data_offset() % align, 0);
    for (const FileTensor& t : g.tensors()) EXPECT_EQ(t.offset % align, 0) << t.name;
    EXPECT_EQ(g.tensors()[1].offset - g.tensors()[0].offset, (12 + align - 1) / align * align);  // a: 12 bytes
    EXPECT_EQ(GgufWriter::copy_of(g).to_bytes(), bytes);
  }
}

TEST(GgufRoundTrip, Version2) {
  GgufWriter w(2);
  fill_metadata(w.metadata());
  const Tensor x = Tensor::rand_normal({2, 3}, DType::F32, 0, 1);
  w.add("x", x);
  const std::vector<uint8_t> bytes = w.to_bytes();
  EXPECT_EQ(bytes[4], 2);
  const GgufFile g = GgufFile::from_memory(bytes);
  EXPECT_EQ(g.version(), 2u);
  expect_metadata_equal(w.metadata(), g.metadata());
  EXPECT_EQ(bytes_of(g.tensor("x")), bytes_of(x));
  EXPECT_EQ(GgufWriter::copy_of(g).to_bytes(), bytes);
}

TEST(GgufRoundTrip, NoTensors) {
  GgufWriter w;
  w.metadata().set("general.name", GgufValue::string("empty"));
  const std::vector<uint8_t> bytes = w.to_bytes();
  EXPECT_EQ(bytes.size() % 32, 0u);  // padded like ggml's writer
  const GgufFile g = GgufFile::from_memory(bytes);
  EXPECT_TRUE(g.tensors().empty());
  EXPECT_EQ(GgufWriter::copy_of(g).to_bytes(), bytes);
  // A file without tensors may end right after its header.
  tool::Spec s = tool::base_spec();
  s.tis.clear();
  s.pad = false;
  const std::vector<uint8_t> unpadded = tool::build(s);
  ASSERT_NE(unpadded.size() % 32, 0u);
  EXPECT_EQ(GgufFile::from_memory(unpadded).metadata().get("general.architecture").as_string(), "test");
  // An empty writer: a header alone.
  EXPECT_EQ(GgufFile::from_memory(GgufWriter().to_bytes()).metadata().size(), 0u);
}

TEST(GgufRoundTrip, GapsBetweenTensorsAreAccepted) {
  // ggml's writer leaves no gap beyond the padding; wick reads files with gaps, and writes them back
  // without.
  tool::Spec s = tool::base_spec();
  s.tis[1].offset = 128;
  s.data_bytes = 160;
  const std::vector<uint8_t> bytes = tool::build(s);
  const GgufFile g = GgufFile::from_memory(bytes);
  EXPECT_EQ(g.tensors()[1].offset - g.data_offset(), 128);
  const GgufFile back = GgufFile::from_memory(GgufWriter::copy_of(g).to_bytes());
  EXPECT_EQ(back.tensors()[1].offset - back.data_offset(), 32);
  EXPECT_EQ(bytes_of(back.tensor("b")), bytes_of(g.tensor("b")));
  EXPECT_EQ(back.tensor("b").shape(), (Shape{2, 4}));
}

TEST(GgufFile, TensorsAreReadOnlyViewsThatOutliveTheFile) {
  TempDir dir("gguf");
  const std::string path = dir / "views.gguf";
  const Tensor x = Tensor::rand_normal({4, 8}, DType::F32, 0, 1);
  const QTensor q = quantize(Tensor::rand_normal({2, 64}, DType::F32, 0, 1), QFormat::Q4_0);
  GgufWriter w;
  w.add("x", x);
  w.add("q", q);
  w.write(path);
  Tensor tx, tb;
  QTensor tq;
  {
    const GgufFile g = GgufFile::open(path);
    tx = g.tensor("x");
    tq = g.qtensor("q");
    tb = g.bytes("x");
  }
  std::filesystem::remove(path);  // the mapping keeps the bytes
  EXPECT_EQ(bytes_of(tx), bytes_of(x));
  EXPECT_EQ(bytes_of(tq.bytes()), bytes_of(q.bytes()));
  EXPECT_TRUE(tx.storage()->read_only());
  EXPECT_TRUE(tq.bytes().storage()->read_only());
  EXPECT_THROW(tx.copy_from(Tensor::zeros({4, 8}, DType::F32)), InvalidArgument);
  EXPECT_THROW(tb.copy_from(Tensor::zeros({tb.numel()}, DType::U8)), InvalidArgument);
  EXPECT_EQ(bytes_of(tx), bytes_of(x));
  // A copy is writable.
  Tensor c = tx.contiguous().add(Tensor::zeros({4, 8}, DType::F32));
  EXPECT_NO_THROW(c.copy_from(Tensor::zeros({4, 8}, DType::F32)));
}

TEST(GgufValue, TypedAccessorsNameTheKeyAndTypes) {
  GgufMetadata m;
  m.set("llama.block_count", GgufValue::u32(32));
  const GgufValue& v = m.get("llama.block_count");
  EXPECT_EQ(v.key(), "llama.block_count");
  EXPECT_EQ(v.as_u32(), 32u);
  EXPECT_EQ(v.as_int(), 32);
  try {
    (void)v.as_string();
    ADD_FAILURE() << "no throw";
  } catch (const FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "[gguf] key 'llama.block_count' is u32, not string")) << e.what();
  }
  EXPECT_THROW(v.as_i32(), FormatError);
  EXPECT_THROW(v.as_u64(), FormatError);
  EXPECT_THROW(v.as_f32(), FormatError);
  EXPECT_THROW(v.as_bool(), FormatError);
  EXPECT_THROW(v.as_float(), FormatError);
  EXPECT_THROW(v.size(), FormatError);
  EXPECT_THROW(v.elem_type(), FormatError);
  EXPECT_THROW(v.as_array<uint32_t>(), FormatError);
  EXPECT_THROW(v.as_strings(), FormatError);
  EXPECT_THROW(v.as_arrays(), FormatError);

  m.set("big", GgufValue::u64(uint64_t{1} << 63));
  EXPECT_THROW(m.get("big").as_int(), FormatError);
  m.set("small", GgufValue::i8(-3));
  EXPECT_EQ(m.get("small").as_int(), -3);
  m.set("f", GgufValue::f32(0.5f));
  EXPECT_EQ(m.get("f").as_float(), 0.5);
  EXPECT_THROW(m.get("f").as_int(), FormatError);
  EXPECT_THROW(m.get("f").as_f64(), FormatError);
  m.set("flag", GgufValue::boolean(true));
  EXPECT_THROW(m.get("flag").as_int(), FormatError);

  m.set("arr", GgufValue::array<uint32_t>({1, 2}));
  try {
    (void)m.get("arr").as_array<int32_t>();
    ADD_FAILURE() << "no throw";
  } catch (const FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "'arr' is array[u32], not array[i32]")) << e.what();
  }
  EXPECT_THROW(m.get("arr").as_strings(), FormatError);
  EXPECT_THROW(m.get("arr").as_u32(), FormatError);
  EXPECT_EQ(m.get("arr").size(), 2u);

  try {
    (void)m.get("missing.key");
    ADD_FAILURE() << "no throw";
  } catch (const FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "missing.key")) << e.what();
  }

  // Values read from a file name their key the same way.
  GgufWriter w;
  w.metadata() = m;
  const GgufFile g = GgufFile::from_memory(w.to_bytes());
  try {
    (void)g.metadata().get("llama.block_count").as_string();
    ADD_FAILURE() << "no throw";
  } catch (const FormatError& e) {
    EXPECT_TRUE(contains(e.what(), "'llama.block_count' is u32, not string")) << e.what();
  }
}

TEST(GgufValue, MetadataKeepsOrderAndReplacesInPlace) {
  GgufMetadata m;
  m.set("a", GgufValue::u8(1));
  m.set("b", GgufValue::u8(2));
  m.set("c", GgufValue::u8(3));
  m.set("b", GgufValue::string("two"));
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m.items()[1].first, "b");
  EXPECT_EQ(m.items()[1].second.as_string(), "two");
  EXPECT_EQ(m.items()[1].second.key(), "b");
  EXPECT_TRUE(m.erase("a"));
  EXPECT_FALSE(m.erase("a"));
  EXPECT_EQ(m.items()[0].first, "b");
  EXPECT_FALSE(m.contains("a"));
  EXPECT_THROW(m.set("", GgufValue::u8(0)), InvalidArgument);
  EXPECT_THROW(GgufValue::array_raw(GgufType::String, {}), InvalidArgument);
  EXPECT_THROW(GgufValue::array_raw(GgufType::U32, {1, 2, 3}), InvalidArgument);
  EXPECT_THROW(GgufValue::array_raw(GgufType::Bool, {1, 2}), InvalidArgument);
  EXPECT_THROW(GgufValue::arrays({GgufValue::u32(1)}), InvalidArgument);
  EXPECT_TRUE(GgufValue::u32(5) == GgufValue::u32(5));
  EXPECT_FALSE(GgufValue::u32(5) == GgufValue::i32(5));
  EXPECT_FALSE(GgufValue::array<uint8_t>({}) == GgufValue::array<int8_t>({}));
  EXPECT_TRUE(GgufValue::array<float>({1.f}) == GgufValue::array_raw(GgufType::F32, {0, 0, 0x80, 0x3f}));
  GgufValue moved = GgufValue::u8(1);
  GgufValue to = std::move(moved);
  EXPECT_EQ(to.as_u8(), 1);
  EXPECT_THROW(moved.type(), InvalidArgument);  // NOLINT(bugprone-use-after-move): moved-from is reported
  moved = GgufValue::u8(2);
  EXPECT_EQ(moved.as_u8(), 2);
}

TEST(GgufValue, ShortRendering) {
  EXPECT_EQ(GgufValue::u32(4096).str(), "4096");
  EXPECT_EQ(GgufValue::i8(-5).str(), "-5");
  EXPECT_EQ(GgufValue::u8(200).str(), "200");
  EXPECT_EQ(GgufValue::f32(0.1f).str(), "0.1");
  EXPECT_EQ(GgufValue::f64(1e300).str(), "1e+300");
  EXPECT_EQ(GgufValue::boolean(true).str(), "true");
  EXPECT_EQ(GgufValue::string("llama").str(), "\"llama\"");
  EXPECT_EQ(GgufValue::string("a\"b\n").str(), "\"a\\\"b\\n\"");
  const std::string long_text = GgufValue::string(std::string(500, 'x')).str();
  EXPECT_LT(long_text.size(), 70u);
  EXPECT_TRUE(contains(long_text, "..."));
  // Cut at a character boundary: 59 ASCII bytes then 2-byte characters.
  const std::string cut = GgufValue::string(std::string(59, 'a') + "\xc3\xa9\xc3\xa9").str();
  EXPECT_EQ(cut, "\"" + std::string(59, 'a') + "\"...");
  EXPECT_EQ(GgufValue::array<uint32_t>(std::vector<uint32_t>(32000, 7)).str(), "[u32 x 32000: 7, 7, 7, 7, ...]");
  EXPECT_EQ(GgufValue::array<uint32_t>({}).str(), "[u32 x 0]");
  EXPECT_EQ(GgufValue::strings({"<s>", "</s>"}).str(), "[string x 2: \"<s>\", \"</s>\"]");
  EXPECT_EQ(GgufValue::arrays({GgufValue::array<int8_t>({1, 2})}).str(), "[array x 1: [i8 x 2]]");
  EXPECT_EQ(GgufValue::array<bool>({true, false}).str(), "[bool x 2: true, false]");
}

TEST(GgufWriter, RejectsBadArgumentsWhenAdded) {
  EXPECT_THROW(GgufWriter(1), InvalidArgument);
  EXPECT_THROW(GgufWriter(4), InvalidArgument);
  GgufWriter w;
  EXPECT_THROW(w.add("u8", Tensor::zeros({4}, DType::U8)), DTypeError);
  EXPECT_THROW(w.add("u32", Tensor::zeros({4}, DType::U32)), DTypeError);
  EXPECT_THROW(w.add("f8", Tensor::zeros({4}, DType::F8E4M3)), DTypeError);
  EXPECT_THROW(w.add("rank0", Tensor::zeros({}, DType::F32)), ShapeError);
  EXPECT_THROW(w.add("rank5", Tensor::zeros({1, 1, 1, 1, 2}, DType::F32)), ShapeError);
  EXPECT_THROW(w.add("qrank5", quantize(Tensor::zeros({1, 1, 1, 1, 32}, DType::F32), QFormat::Q8_0)), ShapeError);
  EXPECT_THROW(w.add("undefined", Tensor()), InvalidArgument);
  w.add("x", Tensor::zeros({4}, DType::F32));
  EXPECT_THROW(w.add("x", Tensor::zeros({4}, DType::F32)), InvalidArgument);
  EXPECT_THROW(w.add_raw("x", 0, {4}, Tensor::zeros({16}, DType::U8)), InvalidArgument);
  EXPECT_THROW(w.add_raw("t4", 4, {32}, Tensor::zeros({18}, DType::U8)), InvalidArgument);
  EXPECT_THROW(w.add_raw("t100", 100, {32}, Tensor::zeros({18}, DType::U8)), InvalidArgument);
  EXPECT_THROW(w.add_raw("notu8", 0, {4}, Tensor::zeros({4}, DType::F32)), DTypeError);
  EXPECT_THROW(w.add_raw("count", 2, {32}, Tensor::zeros({17}, DType::U8)), ShapeError);
  EXPECT_THROW(w.add_raw("block", 2, {33}, Tensor::zeros({18}, DType::U8)), ShapeError);
  EXPECT_THROW(w.add_raw("neg", 0, {-1}, Tensor::zeros({0}, DType::U8)), ShapeError);
  EXPECT_THROW(w.add_raw("huge", 0, {int64_t{1} << 62, 4}, Tensor::zeros({0}, DType::U8)), ShapeError);
  // Only the good tensor went in.
  EXPECT_EQ(GgufFile::from_memory(w.to_bytes()).tensors().size(), 1u);
}

TEST(GgufWriter, RejectsABadAlignmentBeforeWriting) {
  TempDir dir("gguf");
  const std::string path = dir / "bad.gguf";
  for (const GgufValue& a :
       {GgufValue::u64(32), GgufValue::string("32"), GgufValue::u32(0), GgufValue::u32(48), GgufValue::u32(1u << 31)}) {
    SCOPED_TRACE(a.str());
    GgufWriter w;
    w.metadata().set("general.alignment", a);
    w.add("x", Tensor::zeros({4}, DType::F32));
    EXPECT_THROW(w.write(path), InvalidArgument);
    EXPECT_THROW(w.to_bytes(), InvalidArgument);
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // no temporary left behind
}

TEST(GgufCorpus, EachDefectIsAFormatErrorNamingItsFieldAndItsTwinLoads) {
  const std::vector<tool::Case> corpus = tool::bad_corpus();
  EXPECT_GE(corpus.size(), 50u);
  for (const tool::Case& c : corpus) {
    SCOPED_TRACE(c.name);
    EXPECT_NO_THROW(GgufFile::from_memory(c.good, c.name));
    try {
      GgufFile::from_memory(c.bad, c.name);
      ADD_FAILURE() << "loaded";
    } catch (const FormatError& e) {
      const std::string m = e.what();
      EXPECT_TRUE(contains(m, "[gguf] " + c.name + ": byte ")) << m;
      EXPECT_TRUE(contains(m, c.field)) << m;
    }
  }
}

TEST(GgufCorpus, FilesOnDisk) {
  TempDir dir("gguf");
  const std::string folder = dir / "corpus";
  const int n = tool::write_corpus(folder);
  EXPECT_EQ(n, static_cast<int>(2 * tool::bad_corpus().size()));
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    if (name.rfind("ok_", 0) == 0)
      EXPECT_NO_THROW(GgufFile::open(entry.path().string()));
    else
      EXPECT_THROW(GgufFile::open(entry.path().string()), FormatError);
  }
  // An empty file.
  const std::string empty = dir / "empty.gguf";
  std::ofstream(empty).close();
  EXPECT_THROW(GgufFile::open(empty), FormatError);
  EXPECT_THROW(GgufFile::open(dir / "absent.gguf"), IoError);
}

TEST(GgufCorpus, EveryPrefixAndByteChangeOfAValidFileLoadsOrThrowsFormatError) {
  // Not a fuzzer, but every truncation and many single-byte changes of a small valid file: each
  // either loads or raises FormatError (never another error, a crash or a hang).
  GgufWriter w;
  w.metadata().set("general.architecture", GgufValue::string("x"));
  w.metadata().set("a.s", GgufValue::strings({"ab", "c"}));
  w.metadata().set("a.n", GgufValue::arrays({GgufValue::array<uint16_t>({1, 2})}));
  w.metadata().set("general.alignment", GgufValue::u32(16));
  w.add("t", Tensor::rand_normal({2, 4}, DType::F32, 0, 1));
  w.add("q", quantize(Tensor::rand_normal({1, 32}, DType::F32, 0, 1), QFormat::Q4_0));
  const std::vector<uint8_t> good = w.to_bytes();
  auto check = [](const std::vector<uint8_t>& b) {
    try {
      GgufFile::from_memory(b);
    } catch (const FormatError&) {
    }
  };
  for (size_t n = 0; n < good.size(); ++n)
    check(std::vector<uint8_t>(good.begin(), good.begin() + static_cast<long>(n)));
  for (size_t i = 0; i < good.size(); ++i)
    for (uint8_t v : {0x00, 0x01, 0x0d, 0x7f, 0x80, 0xff}) {
      std::vector<uint8_t> b = good;
      b[i] = v;
      check(b);
    }
}

TEST(GgufSample, ToolSampleLoads) {
  const std::vector<uint8_t> bytes = tool::sample_writer().to_bytes();
  const GgufFile g = GgufFile::from_memory(bytes);
  EXPECT_EQ(GgufWriter::copy_of(g).to_bytes(), bytes);
  EXPECT_EQ(g.metadata().get("sample.arr.nested").as_arrays()[1].as_array<int32_t>(), (std::vector<int32_t>{4, 5}));
  const std::vector<float> f = g.tensor("dense.f32").to_vector<float>();
  for (size_t i = 0; i < f.size(); ++i)
    EXPECT_EQ(f[i], static_cast<float>(tool::sample_value(0, static_cast<int64_t>(i))));
  EXPECT_EQ(g.tensors().size(), 6u + kNumQFormats);
}

}  // namespace
}  // namespace wick
