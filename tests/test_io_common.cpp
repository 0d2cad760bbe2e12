// What the file readers share (src/io/io_common.h, src/io/tensor_file.cpp): read-only mappings,
// tensors as views of them, the checks every format gets, and output files that appear whole.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "backend/backend.h"
#include "io/io_common.h"
#include "test_util.h"
#include "wick/io.h"

namespace {

using namespace wick;
namespace fs = std::filesystem;

// Files of these tests live in one folder, removed at exit.
fs::path temp_path(const std::string& name) {
  static const wick::testing::TempDir dir("io_common");
  return dir.path() / name;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

void write_file(const fs::path& p, const std::vector<uint8_t>& bytes) { wick::testing::write_file(p.string(), bytes); }

TEST(IoCommon, MappedFileIsAReadOnlyViewThatOutlivesItsName) {
  const fs::path p = temp_path("map.bin");
  const auto bytes = random_bytes(10007, 1);
  write_file(p, bytes);
  Tensor t = io::map_file(p.string(), "test");
  fs::remove(p);  // the mapping keeps the contents
  ASSERT_EQ(t.numel(), 10007);
  EXPECT_TRUE(t.storage()->read_only());
  EXPECT_EQ(t.to_vector<uint8_t>(), bytes);
  // Writes through any view of it are refused before anything is written.
  Tensor v = t.narrow(0, 100, 50);
  EXPECT_THROW(v.copy_from(Tensor::zeros({50}, DType::U8)), InvalidArgument);
  EXPECT_THROW(v.const_set(Scalar(1)), InvalidArgument);
  EXPECT_THROW(copy2d(Tensor::zeros({4}, DType::U8), v, 1, 4, 4, 4, 0, 0), InvalidArgument);
  EXPECT_EQ(t.to_vector<uint8_t>(), bytes);
  // Ops read it like any tensor.
  EXPECT_EQ(v.to_dtype(DType::I64).to_vector<int64_t>()[0], bytes[100]);
}

TEST(IoCommon, MapFileErrors) {
  EXPECT_THROW(io::map_file(temp_path("absent").string(), "test"), IoError);
  EXPECT_THROW(io::map_file(fs::temp_directory_path().string(), "test"), IoError);
  const fs::path p = temp_path("empty.bin");
  write_file(p, {});
  EXPECT_EQ(io::map_file(p.string(), "test").numel(), 0);
  fs::remove(p);
}

// A file of one source holding an f32 tensor at an aligned and at an unaligned offset, an npy-style
// Fortran-order tensor and a Q8_0 tensor.
struct Built {
  std::vector<uint8_t> bytes;
  std::vector<float> a;
  TensorFile file;
};

Built build_file() {
  Built b;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  b.a.resize(12);
  for (float& x : b.a) x = nd(rng);
  b.bytes.resize(256 + 48 + 1 + 48 + 34);
  std::memcpy(b.bytes.data() + 256, b.a.data(), 48);  // aligned
  std::memcpy(b.bytes.data() + 305, b.a.data(), 48);  // offset 305: not a multiple of 4
  const QTensor q = quantize(Tensor::rand_normal({1, 32}, DType::F32, 0, 1), QFormat::Q8_0);
  const auto qb = q.bytes().to_vector<uint8_t>();
  std::memcpy(b.bytes.data() + 353, qb.data(), qb.size());
  io::TensorFileBuilder fb;
  fb.format = "test";
  fb.path = "built";
  fb.sources.push_back(io::copy_bytes(b.bytes));
  fb.tensors.push_back({"aligned", {3, 4}, "F32", DType::F32, std::nullopt, 0, 256, 48, false});
  fb.tensors.push_back({"unaligned", {3, 4}, "F32", DType::F32, std::nullopt, 0, 305, 48, false});
  fb.tensors.push_back({"fortran", {3, 4}, "<f4", DType::F32, std::nullopt, 0, 256, 48, true});
  fb.tensors.push_back({"q", {1, 32}, "Q8_0", std::nullopt, QFormat::Q8_0, 0, 353, 34, false});
  fb.tensors.push_back({"raw", {7}, "I8", std::nullopt, std::nullopt, 0, 0, 7, false});
  b.file = io::finish_tensor_file(std::move(fb));
  return b;
}

TEST(IoCommon, TensorsAreViewsOrCopiesWithTheRightValues) {
  const Built b = build_file();
  const Tensor al = b.file.tensor("aligned");
  EXPECT_EQ(al.storage(), b.file.bytes("aligned").storage());  // a view, no copy
  EXPECT_EQ(al.to_vector<float>(), b.a);
  const Tensor un = b.file.tensor("unaligned");
  EXPECT_NE(un.storage(), b.file.bytes("unaligned").storage());  // copied to an aligned buffer
  EXPECT_EQ(un.to_vector<float>(), b.a);
  // Fortran order: element (i, j) is stored at j * 3 + i.
  const Tensor f = b.file.tensor("fortran");
  ASSERT_EQ(f.shape(), (Shape{3, 4}));
  const auto fv = f.contiguous().to_vector<float>();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(fv[i * 4 + j], b.a[j * 3 + i]) << i << "," << j;
  const QTensor q = b.file.qtensor("q");
  EXPECT_EQ(q.format(), QFormat::Q8_0);
  EXPECT_EQ(q.bytes().to_vector<uint8_t>(), std::vector<uint8_t>(b.bytes.begin() + 353, b.bytes.begin() + 387));
  EXPECT_EQ(b.file.bytes("raw").numel(), 7);
}

TEST(IoCommon, WrongKindAndMissingNamesAreTypedErrors) {
  const Built b = build_file();
  EXPECT_THROW(b.file.tensor("q"), DTypeError);
  EXPECT_THROW(b.file.qtensor("aligned"), DTypeError);
  EXPECT_THROW(b.file.tensor("raw"), DTypeError);
  EXPECT_THROW(b.file.tensor("nope"), IndexError);
  EXPECT_EQ(b.file.find("nope"), nullptr);
  LoadOptions o;
  EXPECT_THROW(b.file.load(Device::cpu(), o), DTypeError);  // "raw" has no dtype: nothing loads
  o.names = {"aligned", "q"};
  int64_t last = -1, total = -1;
  o.progress = [&](int64_t done, int64_t all) {
    EXPECT_GT(done, last);
    last = done;
    total = all;
  };
  const auto m = b.file.load(Device::cpu(), o);
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("aligned").tensor.to_vector<float>(), b.a);
  EXPECT_TRUE(m.at("q").qtensor.defined());
  EXPECT_EQ(last, 48 + 34);
  EXPECT_EQ(total, 48 + 34);
}

TEST(IoCommon, SharedChecksRejectBadEntries) {
  auto one = [](FileTensor t) {
    io::TensorFileBuilder fb;
    fb.format = "test";
    fb.path = "bad";
    fb.sources.push_back(io::copy_bytes(random_bytes(64, 2)));
    fb.tensors.push_back({"a", {4}, "F32", DType::F32, std::nullopt, 0, 0, 16, false});
    fb.tensors.push_back(std::move(t));
    return io::finish_tensor_file(std::move(fb));
  };
  EXPECT_NO_THROW(one({"b", {4}, "F32", DType::F32, std::nullopt, 0, 48, 16, false}));
  EXPECT_THROW(one({"a", {4}, "F32", DType::F32, std::nullopt, 0, 16, 16, false}), FormatError);  // duplicate
  EXPECT_THROW(one({"b", {4}, "F32", DType::F32, std::nullopt, 0, 52, 16, false}), FormatError);  // past the end
  EXPECT_THROW(one({"b", {4}, "F32", DType::F32, std::nullopt, 0, INT64_MAX, 16, false}), FormatError);
  EXPECT_THROW(one({"b", {5}, "F32", DType::F32, std::nullopt, 0, 16, 16, false}), FormatError);  // size
  EXPECT_THROW(one({"b", {4}, "F32", DType::F32, std::nullopt, 1, 16, 16, false}), FormatError);  // source
  // Zero elements, but strides of the other dims would overflow (a libFuzzer finding).
  EXPECT_THROW(one({"b", {int64_t{1} << 48, 262145, 0}, "F32", DType::F32, std::nullopt, 0, 16, 0, false}),
               FormatError);
  EXPECT_NO_THROW(one({"b", {int64_t{1} << 40, 0}, "F32", DType::F32, std::nullopt, 0, 16, 0, false}));
  EXPECT_THROW(one({"b", {-1}, "F32", DType::F32, std::nullopt, 0, 16, 0, false}), FormatError);
}

TEST(IoCommon, OutputFileAppearsOnlyWhenCommitted) {
  const fs::path p = temp_path("out.bin");
  {
    io::OutputFile f(p.string(), "test");
    f.write(std::vector<uint8_t>{1, 2, 3});
    f.zeros(1000);
    EXPECT_EQ(f.written(), 1003);
    EXPECT_FALSE(fs::exists(p));
  }
  EXPECT_FALSE(fs::exists(p));  // abandoned: the temporary is gone too
  for (const auto& e : fs::directory_iterator(p.parent_path()))
    EXPECT_EQ(e.path().string().find(p.filename().string() + ".tmp"), std::string::npos);
  {
    io::OutputFile f(p.string(), "test");
    f.write(std::vector<uint8_t>{9, 8});
    f.zeros(300);
    f.commit();
  }
  ASSERT_EQ(fs::file_size(p), 302u);
  const Tensor t = io::map_file(p.string(), "test");
  EXPECT_EQ(t.to_vector<uint8_t>()[0], 9);
  EXPECT_EQ(t.to_vector<uint8_t>()[301], 0);
  fs::remove(p);
  EXPECT_THROW(io::OutputFile((fs::temp_directory_path() / "no_such_dir" / "x").string(), "test"), IoError);
}

TEST(IoCommon, FormatDetectionByContent) {
  const std::pair<std::string, std::vector<uint8_t>> cases[] = {
      {"a.bin", {'G', 'G', 'U', 'F', 3, 0, 0, 0}},
      {"b.bin", {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0}},
      {"c.bin", {'P', 'K', 3, 4, 0, 0}},
      {"d.bin", {2, 0, 0, 0, 0, 0, 0, 0, '{', '}'}},
  };
  const FileFormat want[] = {FileFormat::Gguf, FileFormat::Npy, FileFormat::Npz, FileFormat::Safetensors};
  for (size_t i = 0; i < 4; ++i) {
    const fs::path p = temp_path(cases[i].first);
    write_file(p, cases[i].second);
    EXPECT_EQ(detect_file_format(p.string()), want[i]) << cases[i].first;
    fs::remove(p);
  }
  const fs::path p = temp_path("e.bin");
  write_file(p, {1, 2, 3});
  EXPECT_THROW(detect_file_format(p.string()), FormatError);
  fs::remove(p);
  EXPECT_THROW(detect_file_format(temp_path("absent").string()), IoError);
}

}  // namespace
