// NumPy .npy and .npz (src/io/npy.cpp): round trips of every dtype NumPy has, the header NumPy
// writes, Fortran order, big-endian data, header versions 1 to 3, rank 0 and empty arrays, stored
// and deflated archives, and the malformed-file corpus (tests/io/io_corpus.h) with valid twins.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
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
using wick::testing::npy_dict;
using wick::testing::npy_file;
using wick::testing::stored_zip;
namespace fs = std::filesystem;
using wick::testing::random_tensor;
using wick::testing::read_file;
using wick::testing::TempDir;
using wick::testing::write_file;

void expect_same(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(bytes_of(got), bytes_of(want)) << what;
}

bool numpy_has(DType d) { return d != DType::BF16 && d != DType::F8E4M3; }

// Little-endian bytes of `values`, each element's bytes reversed when big-endian.
template <class T>
Bytes raw(const std::vector<T>& values, bool big_endian = false) {
  Bytes b(values.size() * sizeof(T));
  std::memcpy(b.data(), values.data(), b.size());
  if (big_endian)
    for (size_t i = 0; i < b.size(); i += sizeof(T)) std::reverse(b.begin() + i, b.begin() + i + sizeof(T));
  return b;
}

TEST(Npy, RoundTripEveryDtype) {
  TempDir dir("npy_every_dtype");
  for (DType d : kAllDTypes) {
    if (!numpy_has(d)) continue;
    const std::string name(dtype_name(d));
    const Tensor t = random_tensor({5, 3, 2}, d);
    const std::string p = dir / (name + ".npy");
    save_npy(p, t);
    EXPECT_EQ(read_file(p), npy_bytes(t)) << name;
    const NpyFile f = NpyFile::open(p);
    EXPECT_EQ(f.array().name, name);  // the file's stem
    EXPECT_EQ(f.array().dtype, d);
    EXPECT_FALSE(f.array().column_major);
    expect_same(f.tensor(), t, name);
    expect_same(load_npy(p), t, name);
    expect_same(NpyFile::from_memory(npy_bytes(t)).tensor(), t, name);
  }
}

TEST(Npy, HeaderIsNumpysByteForByte) {
  // np.save(np.zeros((3, 4), '<f4')): the dict, 21 - len("3") spaces for the first axis to grow, padding
  // to 64 bytes, a newline.
  const Bytes b = npy_bytes(Tensor::ones({3, 4}, DType::F32));
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  ASSERT_EQ(b.size(), 128u + 48u);
  EXPECT_EQ(std::string(b.begin(), b.begin() + 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(b[8] + 256 * b[9], 118);
  EXPECT_EQ(std::string(b.begin() + 10, b.begin() + 128), dict + std::string(128 - 10 - dict.size() - 1, ' ') + "\n");
  // Rank 0, rank 1 (a trailing comma), u8 as '|u1'.
  const Bytes s = npy_bytes(Tensor::full({}, Scalar(2.0), DType::F64));
  EXPECT_NE(std::string(s.begin(), s.end()).find("{'descr': '<f8', 'fortran_order': False, 'shape': (), }"),
            std::string::npos);
  const Bytes v = npy_bytes(Tensor::empty({0}, DType::U8));
  EXPECT_NE(std::string(v.begin(), v.end()).find("{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }"),
            std::string::npos);
  EXPECT_EQ(v.size(), 128u);
}

TEST(Npy, RankZeroEmptyAndNonContiguous) {
  TempDir dir("npy_shapes");
  const Tensor base = random_tensor({4, 6}, DType::F64);
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"scalar", random_tensor({}, DType::F32)},
      {"empty", Tensor::empty({0}, DType::I64)},
      {"empty2", Tensor::empty({3, 0, 2}, DType::F16)},
      {"transposed", base.t()},
      {"narrowed", base.narrow(1, 2, 3)},
      {"rank6", random_tensor({2, 1, 3, 1, 2, 2}, DType::I32)},
  };
  for (const auto& [name, t] : cases) {
    save_npy(dir / (name + ".npy"), t);
    expect_same(load_npy(dir / (name + ".npy")), t.contiguous(), name);
  }
}

TEST(Npy, NumpyLacksBf16AndF8) {
  TempDir dir("npy_lacks");
  for (DType d : {DType::BF16, DType::F8E4M3}) {
    const Tensor t = random_tensor({3}, d);
    EXPECT_THROW(save_npy(dir / "x.npy", t), DTypeError);
    EXPECT_THROW(npy_bytes(t), DTypeError);
    EXPECT_THROW(save_npz(dir / "x.npz", {{"a", Tensor::ones({1}, DType::F32)}, {"x", t}}), DTypeError);
  }
  EXPECT_THROW(npy_bytes(Tensor()), InvalidArgument);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Npy, LittleEndianReadsAreZeroCopy) {
  TempDir dir("npy_zero_copy");
  const Tensor t = random_tensor({10, 10}, DType::F32);
  save_npy(dir / "t.npy", t);
  Tensor r = load_npy(dir / "t.npy");
  fs::remove(dir / "t.npy");
  EXPECT_TRUE(r.storage()->read_only());
  EXPECT_THROW(r.copy_from(t), InvalidArgument);
  expect_same(r, t, "after the file is gone");
}

TEST(Npy, FortranOrderReadsTheRightValueAtEveryIndex) {
  // v(i, j, k) = 100 i + 10 j + k stored column-major: element (i, j, k) at i + 2 j + 6 k.
  std::vector<float> col(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        col[static_cast<size_t>(i + 2 * j + 6 * k)] = static_cast<float>(100 * i + 10 * j + k);
  const NpyFile f = NpyFile::from_memory(npy_file(npy_dict("<f4", "(2, 3, 4)", true), raw(col)), "f.npy");
  EXPECT_TRUE(f.array().column_major);
  const Tensor t = f.tensor();
  ASSERT_EQ(t.shape(), (Shape{2, 3, 4}));
  const std::vector<float> got = t.contiguous().to_vector<float>();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        EXPECT_EQ(got[static_cast<size_t>((i * 3 + j) * 4 + k)], 100 * i + 10 * j + k) << i << "," << j << "," << k;
  EXPECT_EQ(t.select(0, 1).select(0, 2).to_vector<float>(), (std::vector<float>{120, 121, 122, 123}));
  // Big-endian and Fortran at once; rank 1 Fortran is plain.
  const std::vector<int64_t> m = {1, -2, 3, -4, 5, -6};  // [[1, 3, 5], [-2, -4, -6]] column-major
  const Tensor b = NpyFile::from_memory(npy_file(npy_dict(">i8", "(2, 3)", true), raw(m, true))).tensor();
  EXPECT_EQ(b.contiguous().to_vector<int64_t>(), (std::vector<int64_t>{1, 3, 5, -2, -4, -6}));
  const Tensor one = NpyFile::from_memory(npy_file(npy_dict("<f4", "(3,)", true), raw<float>({1, 2, 3}))).tensor();
  EXPECT_EQ(one.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  // Written back in C order.
  const Tensor back = NpyFile::from_memory(npy_bytes(t)).tensor();
  EXPECT_FALSE(NpyFile::from_memory(npy_bytes(t)).array().column_major);
  EXPECT_EQ(back.to_vector<float>(), got);
}

TEST(Npy, BigEndianIsSwappedIntoAnOwnedCopy) {
  const std::vector<float> f32 = {1.5f, -2.25f, 3e10f, 0.1f};
  const Tensor a = NpyFile::from_memory(npy_file(npy_dict(">f4", "(4,)"), raw(f32, true))).tensor();
  EXPECT_EQ(a.to_vector<float>(), f32);
  EXPECT_FALSE(a.storage()->read_only());
  const std::vector<double> f64 = {1e300, -0.5};
  EXPECT_EQ(NpyFile::from_memory(npy_file(npy_dict(">f8", "(2,)"), raw(f64, true))).tensor().to_vector<double>(), f64);
  const std::vector<int32_t> i32 = {-7, 1 << 30};
  EXPECT_EQ(NpyFile::from_memory(npy_file(npy_dict(">i4", "(2,)"), raw(i32, true))).tensor().to_vector<int32_t>(), i32);
  const std::vector<uint32_t> u32 = {0xdeadbeef, 3};
  EXPECT_EQ(NpyFile::from_memory(npy_file(npy_dict(">u4", "(2,)"), raw(u32, true))).tensor().to_vector<uint32_t>(),
            u32);
  const Tensor h = NpyFile::from_memory(npy_file(npy_dict(">f2", "(2,)"), Bytes{0x3c, 0x00, 0xc0, 0x00})).tensor();
  EXPECT_EQ(h.to_dtype(DType::F32).to_vector<float>(), (std::vector<float>{1.0f, -2.0f}));
  // One-byte types have no order: '|', '<', '>' alike; b1 reads as u8.
  for (const char* d : {"|u1", ">u1", "<u1", "|b1"}) {
    const NpyFile u = NpyFile::from_memory(npy_file(npy_dict(d, "(3,)"), Bytes{1, 0, 1}));
    EXPECT_EQ(u.array().type, d);
    EXPECT_EQ(u.tensor().to_vector<uint8_t>(), (std::vector<uint8_t>{1, 0, 1})) << d;
  }
}

TEST(Npy, HeaderVersionsAndSpellings) {
  const Bytes data = raw<int32_t>({1, 2, 3, 4, 5, 6});
  const std::vector<int32_t> want = {1, 2, 3, 4, 5, 6};
  for (int major : {1, 2, 3}) {
    const NpyFile f = NpyFile::from_memory(npy_file(npy_dict("<i4", "(2, 3)"), data, major));
    EXPECT_EQ(f.tensor().to_vector<int32_t>(), want) << major;
  }
  const std::vector<std::string> dicts = {
      R"({"descr": "<i4", "fortran_order": False, "shape": (2, 3)})",
      "{'shape': (2,3,), 'descr': '=i4', 'fortran_order': False}",
      "{'descr':'<i4','fortran_order':False,'shape':(2L, 3L),}",
      "{\n 'descr' : '<i4' ,\n 'fortran_order' : False ,\n 'shape' : ( 2 , 3 ) ,\n}",
  };
  for (const std::string& d : dicts) {
    const NpyFile f = NpyFile::from_memory(npy_file(d, data));
    EXPECT_EQ(f.tensor().shape(), (Shape{2, 3})) << d;
    EXPECT_EQ(f.tensor().to_vector<int32_t>(), want) << d;
  }
  // Old NumPy padded to 16 bytes: any header length is fine.
  Bytes old = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const std::string h = npy_dict("<i4", "(6,)") + "    \n";
  wick::testing::put_le(old, h.size(), 2);
  old.insert(old.end(), h.begin(), h.end());
  old.insert(old.end(), data.begin(), data.end());
  EXPECT_EQ(NpyFile::from_memory(old).tensor().to_vector<int32_t>(), want);
  // At most NumPy's 64 dims, written and read.
  const Shape big(64, 1);
  EXPECT_EQ(NpyFile::from_memory(npy_bytes(Tensor::ones(big, DType::U8))).tensor().shape(), big);
  EXPECT_THROW(npy_bytes(Tensor::ones(Shape(65, 1), DType::U8)), ShapeError);
  EXPECT_THROW(NpyFile::from_memory(npy_file(npy_dict(
                                                 "<i4", "(" +
                                                            [] {
                                                              std::string d;
                                                              for (int i = 0; i < 65; ++i) d += "1, ";
                                                              return d;
                                                            }() +
                                                            ")"),
                                             {})),
               FormatError);
}

TEST(Npz, StoredAndDeflatedRoundTrips) {
  TempDir dir("npy_npz");
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (DType d : kAllDTypes)
    if (numpy_has(d)) arrays.push_back({"a_" + std::string(dtype_name(d)), random_tensor({7, 5}, d)});
  arrays.push_back({"scalar", random_tensor({}, DType::F64)});
  arrays.push_back({"empty", Tensor::empty({0, 4}, DType::F32)});
  arrays.push_back({"sub/dir", random_tensor({3}, DType::I64)});
  arrays.push_back({"zeros", Tensor::zeros({1000, 100}, DType::F32)});  // compresses well
  for (bool compress : {false, true}) {
    const std::string p = dir / (compress ? "deflated.npz" : "stored.npz");
    save_npz(p, arrays, compress);
    const NpzFile f = NpzFile::open(p);
    ASSERT_EQ(f.tensors().size(), arrays.size());
    for (size_t i = 0; i < arrays.size(); ++i) {
      EXPECT_EQ(f.tensors()[i].name, arrays[i].first);
      EXPECT_EQ(f.tensors()[i].source, static_cast<int>(i));
      expect_same(f.tensor(arrays[i].first), arrays[i].second, arrays[i].first);
    }
    const auto size = fs::file_size(p);
    if (compress)
      EXPECT_LT(size, 100000u);
    else
      EXPECT_GT(size, 400000u);
    expect_same(NpzFile::from_memory(read_file(p)).tensor("scalar"), arrays[arrays.size() - 4].second, "memory");
  }
  // No arrays: an empty archive.
  save_npz(dir / "none.npz", {});
  EXPECT_TRUE(NpzFile::open(dir / "none.npz").tensors().empty());
  EXPECT_THROW(save_npz(dir / "dup.npz", {{"a", arrays[0].second}, {"a", arrays[1].second}}), InvalidArgument);
  EXPECT_FALSE(fs::exists(dir / "dup.npz"));
}

TEST(Npz, MembersInAnyNpyForm) {
  // Big-endian and Fortran members, as numpy.savez keeps them.
  std::vector<float> col = {1, 4, 2, 5, 3, 6};  // [[1, 2, 3], [4, 5, 6]]
  const Bytes zip = stored_zip({{"f.npy", npy_file(npy_dict("<f4", "(2, 3)", true), raw(col))},
                                {"b.npy", npy_file(npy_dict(">i4", "(2,)"), raw<int32_t>({-5, 70000}, true))},
                                {"v2.npy", npy_file(npy_dict("<u4", "()"), raw<uint32_t>({9}), 2)}});
  const NpzFile f = NpzFile::from_memory(zip, "x.npz");
  EXPECT_EQ(f.tensor("f").contiguous().to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(f.tensor("b").to_vector<int32_t>(), (std::vector<int32_t>{-5, 70000}));
  EXPECT_EQ(f.tensor("v2").to_vector<uint32_t>(), std::vector<uint32_t>{9});
  EXPECT_EQ(f.info("b").type, ">i4");
}

// ---- the malformed-file corpus ----------------------------------------------------------------

TEST(Npy, BadFilesAreFormatErrorsNamingTheFieldAndTheirTwinsLoad) {
  int cases = 0;
  for (const auto& c : wick::testing::npy_corpus()) {
    SCOPED_TRACE(c.name);
    ++cases;
    TempDir dir(c.name);
    const std::string bad = dir / ("bad_" + c.entry), good = dir / ("good_" + c.entry);
    write_file(bad, c.bad.at(c.entry));
    write_file(good, c.good.at(c.entry));
    const bool npz = c.format == "npz";
    auto open = [&](const std::string& p) -> TensorFile {
      if (npz) return NpzFile::open(p);
      return NpyFile::open(p);
    };
    const TensorFile g = open(good);
    EXPECT_FALSE(g.tensors().empty());
    for (const FileTensor& t : g.tensors()) EXPECT_EQ(g.tensor(t.name).numel(), t.shape.numel());
    std::string message;
    try {
      open(bad);
      ADD_FAILURE() << "no error";
    } catch (const FormatError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a FormatError: " << e.what();
    }
    EXPECT_EQ(message.rfind(npz ? "[npz] " : "[npy] ", 0), 0u) << message;
    for (const std::string& part : c.message) EXPECT_NE(message.find(part), std::string::npos) << message;
    if (npz) {
      EXPECT_THROW(NpzFile::from_memory(c.bad.at(c.entry)), FormatError);
    } else {
      EXPECT_THROW(NpyFile::from_memory(c.bad.at(c.entry)), FormatError);
    }
  }
  EXPECT_GE(cases, 25);
}

TEST(Npy, EveryTruncationIsAFormatError) {
  const Bytes npy = npy_bytes(random_tensor({4, 3}, DType::F32));
  for (size_t n = 0; n < npy.size(); ++n) EXPECT_THROW(NpyFile::from_memory({npy.data(), n}), FormatError) << n;
  const Bytes zip = stored_zip({{"a.npy", npy}, {"b.npy", npy_bytes(random_tensor({2}, DType::I64))}});
  EXPECT_NO_THROW(NpzFile::from_memory(zip));
  for (size_t n = 0; n < zip.size(); ++n) EXPECT_THROW(NpzFile::from_memory({zip.data(), n}), FormatError) << n;
}

}  // namespace
