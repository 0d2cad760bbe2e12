// Index family: what the conformance cases cannot express. Errors (out-of-range ids leave every
// tensor untouched, dtype and shape errors), wrap-around and rounding of accumulation, repeated ids,
// cat and copy2d argument checks.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

class IndexTest : public ::testing::TestWithParam<Device> {};

Tensor f32(const std::vector<float>& v, const Shape& s, const Device& d) { return Tensor::from_vector(v, s, d); }

std::vector<float> iota_f(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

// Ids of `dtype` holding `v` (which must fit the dtype).
Tensor ids_of(DType dtype, const std::vector<int64_t>& v, const Shape& s, const Device& d) {
  return Tensor::from_vector(v, s, d).to_dtype(dtype);
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const IndexError& e) {
    return e.what();
  }
  return "";
}

TEST_P(IndexTest, OutOfRangeIdsThrowAndLeaveTensorsUntouched) {
  const Device d = GetParam();
  const std::vector<float> base = iota_f(12);
  const Tensor x = f32(base, {3, 4}, d);
  const Tensor src = f32(std::vector<float>(12, 100.f), {3, 4}, d);
  for (DType idt : {DType::U8, DType::U32, DType::I64}) {
    SCOPED_TRACE(std::string(dtype_name(idt)));
    // == size along dim 1 (4), placed last so that valid ids come first
    const Tensor bad1 = ids_of(idt, {0, 1, 4}, {3}, d);
    EXPECT_THROW(x.index_select(bad1, 1), IndexError);
    const Tensor bad2 = ids_of(idt, {0, 1, 2, 3, 1, 2, 3, 0, 2, 3, 0, 4}, {3, 4}, d);
    EXPECT_THROW(x.gather(bad2, 1), IndexError);
    EXPECT_THROW(x.scatter(bad2, src, 1), IndexError);
    EXPECT_THROW(x.scatter_add(bad2, src, 1), IndexError);
    EXPECT_THROW(x.index_add(bad1, src.narrow(1, 0, 3), 1), IndexError);
    // == size along dim 0 (3)
    const Tensor bad0 = ids_of(idt, {3}, {1}, d);
    EXPECT_THROW(x.index_select(bad0, 0), IndexError);
    EXPECT_THROW(x.index_add(bad0, src.narrow(0, 0, 1), 0), IndexError);
    EXPECT_EQ(x.to_vector<float>(), base);
    EXPECT_EQ(src.to_vector<float>(), std::vector<float>(12, 100.f));
  }
  // negative ids (i64 only)
  const Tensor neg1 = ids_of(DType::I64, {0, -1}, {2}, d);
  const Tensor neg2 = ids_of(DType::I64, {0, 1, 2, -1}, {1, 4}, d);
  EXPECT_THROW(x.index_select(neg1, 0), IndexError);
  EXPECT_THROW(x.gather(neg2, 0), IndexError);
  EXPECT_THROW(x.scatter(neg2, src, 0), IndexError);
  EXPECT_THROW(x.scatter_add(neg2, src, 0), IndexError);
  EXPECT_THROW(x.index_add(neg1, src.narrow(0, 0, 2), 0), IndexError);
  EXPECT_EQ(x.to_vector<float>(), base);
}

TEST_P(IndexTest, OutOfRangeMessageNamesIndexDimSizeAndDevice) {
  const Device d = GetParam();
  const Tensor table = Tensor::zeros({65536, 2}, DType::F32, d);
  const Tensor ids = ids_of(DType::I64, {5, 70000, 80000}, {3}, d);
  EXPECT_EQ(error_of([&] { table.index_select(ids, 0); }),
            "[index_select] index 70000 out of range for dim 0 of size 65536 (" + d.location() + ")");
  const Tensor x = Tensor::zeros({2, 3}, DType::F32, d);
  const Tensor neg = ids_of(DType::I64, {0, 1, 1, 1, -7, 0}, {2, 3}, d);
  EXPECT_EQ(error_of([&] { x.scatter_add(neg, x, 0); }),
            "[scatter_add] index -7 out of range for dim 0 of size 2 (" + d.location() + ")");
}

TEST_P(IndexTest, IdsIntoAnEmptyDimAreOutOfRange) {
  const Device d = GetParam();
  const Tensor x = Tensor::zeros({0, 3}, DType::F32, d);
  EXPECT_THROW(x.index_select(ids_of(DType::I64, {0}, {1}, d), 0), IndexError);
  EXPECT_EQ(x.index_select(ids_of(DType::I64, {}, {0}, d), 0).shape(), Shape({0, 3}));
  // ids are checked even when the output is empty
  const Tensor y = Tensor::zeros({4, 0}, DType::F32, d);
  EXPECT_THROW(y.index_select(ids_of(DType::U32, {9}, {1}, d), 0), IndexError);
  EXPECT_EQ(y.index_select(ids_of(DType::U32, {3, 1}, {2}, d), 0).shape(), Shape({2, 0}));
}

TEST_P(IndexTest, FloatIdsAreDTypeErrors) {
  const Device d = GetParam();
  const Tensor x = Tensor::zeros({3, 4}, DType::F32, d);
  for (DType idt : {DType::F32, DType::BF16, DType::F64}) {
    const Tensor ids1 = Tensor::zeros({2}, idt, d);
    const Tensor ids2 = Tensor::zeros({3, 4}, idt, d);
    EXPECT_THROW(x.index_select(ids1, 0), DTypeError);
    EXPECT_THROW(x.gather(ids2, 0), DTypeError);
    EXPECT_THROW(x.scatter(ids2, x, 0), DTypeError);
    EXPECT_THROW(x.scatter_add(ids2, x, 0), DTypeError);
    EXPECT_THROW(x.index_add(ids1, x.narrow(0, 0, 2), 0), DTypeError);
  }
  const Tensor ids = Tensor::zeros({3, 4}, DType::I64, d);
  EXPECT_THROW(x.scatter(ids, Tensor::zeros({3, 4}, DType::F64, d), 0), DTypeError);  // src dtype differs
  EXPECT_THROW(x.index_add(Tensor::zeros({3}, DType::I64, d), Tensor::zeros({3, 4}, DType::F16, d), 0), DTypeError);
}

TEST_P(IndexTest, ShapeErrors) {
  const Device d = GetParam();
  const Tensor x = Tensor::zeros({3, 4}, DType::F32, d);
  const Tensor i2 = Tensor::zeros({2, 2}, DType::I64, d);
  EXPECT_THROW(x.index_select(i2, 0), ShapeError);                                 // ids not 1-d
  EXPECT_THROW(x.index_select(Tensor::zeros({2}, DType::I64, d), 2), ShapeError);  // dim out of range
  EXPECT_THROW(x.gather(Tensor::zeros({3}, DType::I64, d), 0), ShapeError);        // rank differs
  EXPECT_THROW(x.gather(Tensor::zeros({3, 5}, DType::I64, d), 0), ShapeError);     // larger off dim
  EXPECT_NO_THROW(x.gather(Tensor::zeros({6, 4}, DType::I64, d), 0));              // larger along dim is fine
  EXPECT_THROW(x.scatter(Tensor::zeros({3, 4}, DType::I64, d), Tensor::zeros({3, 3}, DType::F32, d), 0),
               ShapeError);  // src smaller than ids
  EXPECT_THROW(x.scatter_add(Tensor::zeros({3, 5}, DType::I64, d), Tensor::zeros({3, 5}, DType::F32, d), 0),
               ShapeError);  // ids larger than x off dim
  EXPECT_THROW(x.index_add(Tensor::zeros({2}, DType::I64, d), Tensor::zeros({3, 4}, DType::F32, d), 0),
               ShapeError);  // src length along dim != len(ids)
  EXPECT_THROW(x.index_add(Tensor::zeros({2}, DType::I64, d), Tensor::zeros({2, 5}, DType::F32, d), 0),
               ShapeError);  // src differs off dim
}

TEST_P(IndexTest, ScatterAddSumsRepeatedTargets) {
  const Device d = GetParam();
  const Tensor x = f32({1, 1, 1, 1}, {4}, d);
  const Tensor ids = ids_of(DType::U8, {2, 2, 0, 2, 3}, {5}, d);
  const Tensor src = f32({10, 20, 30, 40, 50}, {5}, d);
  EXPECT_EQ(x.scatter_add(ids, src, 0).to_vector<float>(), (std::vector<float>{31, 1, 71, 51}));
  EXPECT_EQ(x.index_add(ids, src, 0).to_vector<float>(), (std::vector<float>{31, 1, 71, 51}));
  // scatter without repeats; target 1 untouched
  const Tensor ids3 = ids_of(DType::U32, {3, 0, 2}, {3}, d);
  EXPECT_EQ(x.scatter(ids3, src, 0).to_vector<float>(), (std::vector<float>{20, 1, 30, 10}));
}

TEST_P(IndexTest, IntegerAddsWrap) {
  const Device d = GetParam();
  const Tensor ids = ids_of(DType::I64, {0, 0, 1}, {3}, d);
  {
    const Tensor x = Tensor::from_vector(std::vector<uint8_t>{250, 7}, {2}, d);
    const Tensor s = Tensor::from_vector(std::vector<uint8_t>{5, 10, 255}, {3}, d);
    EXPECT_EQ(x.index_add(ids, s, 0).to_vector<uint8_t>(), (std::vector<uint8_t>{9, 6}));
    EXPECT_EQ(x.scatter_add(ids, s, 0).to_vector<uint8_t>(), (std::vector<uint8_t>{9, 6}));
  }
  {
    const Tensor x = Tensor::from_vector(std::vector<uint32_t>{4294967295u, 0}, {2}, d);
    const Tensor s = Tensor::from_vector(std::vector<uint32_t>{1, 2, 3}, {3}, d);
    EXPECT_EQ(x.index_add(ids, s, 0).to_vector<uint32_t>(), (std::vector<uint32_t>{2, 3}));
  }
  {
    const int64_t mx = std::numeric_limits<int64_t>::max();
    const Tensor x = Tensor::from_vector(std::vector<int64_t>{mx, 5}, {2}, d);
    const Tensor s = Tensor::from_vector(std::vector<int64_t>{1, 0, -6}, {3}, d);
    EXPECT_EQ(x.scatter_add(ids, s, 0).to_vector<int64_t>(),
              (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1}));
  }
}

TEST_P(IndexTest, ReducedFloatAddsRoundPerAdd) {
  const Device d = GetParam();
  // bf16 has 8 significant bits: 256 + 1 rounds back to 256 (tie to even), 256 + 3 to 260.
  const Tensor x = Tensor::from_vector(std::vector<float>{256, 256}, {2}, d).to_dtype(DType::BF16);
  const Tensor s = Tensor::from_vector(std::vector<float>{1, 3}, {2}, d).to_dtype(DType::BF16);
  const Tensor ids = ids_of(DType::I64, {0, 1}, {2}, d);
  EXPECT_EQ(x.index_add(ids, s, 0).to_dtype(DType::F32).to_vector<float>(), (std::vector<float>{256, 260}));
  // NaN propagates through adds
  const Tensor n = Tensor::from_vector(std::vector<float>{std::numeric_limits<float>::quiet_NaN(), 1}, {2}, d);
  const std::vector<float> r = Tensor::zeros({2}, DType::F32, d).scatter_add(ids, n, 0).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 1.f);
}

TEST_P(IndexTest, IndexSelectAndGatherValues) {
  const Device d = GetParam();
  const Tensor x = f32(iota_f(12), {3, 4}, d);
  EXPECT_EQ(x.index_select(ids_of(DType::U8, {2, 0, 2}, {3}, d), 0).to_vector<float>(),
            (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(x.index_select(ids_of(DType::I64, {3, 1}, {2}, d), -1).to_vector<float>(),
            (std::vector<float>{3, 1, 7, 5, 11, 9}));
  EXPECT_EQ(x.gather(ids_of(DType::U32, {3, 0, 1, 1}, {2, 2}, d), 1).to_vector<float>(),
            (std::vector<float>{3, 0, 5, 5}));
  // a transposed source and transposed ids
  const Tensor xt = x.t();                                                  // [4, 3]
  const Tensor it = ids_of(DType::I64, {0, 1, 2, 2, 1, 0}, {2, 3}, d).t();  // [3, 2]
  EXPECT_EQ(xt.gather(it, 1).to_vector<float>(), (std::vector<float>{0, 8, 5, 5, 10, 2}));
}

TEST_P(IndexTest, CatChecksAndValues) {
  const Device d = GetParam();
  const Tensor a = f32({1, 2, 3, 4}, {2, 2}, d);
  const Tensor b = f32({5, 6}, {1, 2}, d);
  EXPECT_EQ(cat({a, b}, 0).to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(cat({a, a.t()}, -1).to_vector<float>(), (std::vector<float>{1, 2, 1, 3, 3, 4, 2, 4}));
  EXPECT_EQ(cat({Tensor::zeros({0, 2}, DType::F32, d), b}, 0).shape(), Shape({1, 2}));
  EXPECT_EQ(cat({a}, 1).to_vector<float>(), a.to_vector<float>());
  EXPECT_THROW(cat({}, 0), InvalidArgument);
  EXPECT_THROW(cat({a, b}, 1), ShapeError);                                  // differ outside dim
  EXPECT_THROW(cat({a, Tensor::zeros({2}, DType::F32, d)}, 0), ShapeError);  // rank differs
  EXPECT_THROW(cat({a, Tensor::zeros({1, 2}, DType::F64, d)}, 0), DTypeError);
  EXPECT_THROW(cat({a, b}, 2), ShapeError);
}

// Up to 8 inputs go in one GPU launch (Note [GPU batched copies]): counts that fill a batch, leave
// one input over (its own copy) or a short second batch; every input a different layout (contiguous,
// transposed, narrowed off alignment, broadcast, empty), so a batch mixes copy widths.
TEST_P(IndexTest, CatOfManyInputsOfAnyLayout) {
  const Device d = GetParam();
  for (DType dt : {DType::U8, DType::BF16, DType::F32, DType::F64}) {
    for (int64_t count : {2, 8, 9, 11}) {
      for (int64_t dim : {0, 1, 2}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + " inputs " + std::to_string(count) + " dim " + std::to_string(dim));
        std::vector<Tensor> inputs;
        for (int64_t i = 0; i < count; ++i) {
          Shape s{3, 5, 16};
          s[static_cast<size_t>(dim)] = (i * 3 + 2) % 5;  // 2, 0, 3, 1, 4, ...: some inputs empty
          std::vector<int64_t> v(static_cast<size_t>(5 * 5 * 24));
          for (size_t e = 0; e < v.size(); ++e)
            v[e] = static_cast<int64_t>((e * 37 + static_cast<size_t>(i) * 11) % 251);
          const Tensor full = Tensor::from_vector(v, {5, 5, 24}, d).to_dtype(dt);
          Tensor x;
          switch (i % 4) {
            case 0:  // contiguous
              x = full.narrow(2, 0, s[2]).contiguous().narrow(0, 0, s[0]).narrow(1, 0, s[1]).contiguous();
              break;
            case 1:  // transposed storage
              x = full.narrow(2, 0, s[2])
                      .transpose(0, 2)
                      .contiguous()
                      .transpose(0, 2)
                      .narrow(0, 0, s[0])
                      .narrow(1, 0, s[1]);
              break;
            case 2:  // rows starting one element past alignment
              x = full.narrow(2, 1, s[2]).narrow(0, 0, s[0]).narrow(1, 0, s[1]);
              break;
            default:  // broadcast along dim 0 where it has length
              x = s[0] > 0 ? full.narrow(0, 0, 1).narrow(1, 0, s[1]).narrow(2, 0, s[2]).expand(s)
                           : full.narrow(0, 0, 0).narrow(1, 0, s[1]).narrow(2, 0, s[2]);
          }
          ASSERT_EQ(x.shape(), s);
          inputs.push_back(x);
        }
        const Tensor out = cat(inputs, dim);
        int64_t at = 0;
        for (size_t i = 0; i < inputs.size(); ++i) {
          const int64_t len = inputs[i].shape()[static_cast<size_t>(dim)];
          EXPECT_EQ(testing::bytes_of(out.narrow(dim, at, len)), testing::bytes_of(inputs[i])) << "input " << i;
          at += len;
        }
        EXPECT_EQ(at, out.shape()[static_cast<size_t>(dim)]);
      }
    }
  }
}

TEST_P(IndexTest, Copy2dChecksAndLeavesDstUntouchedOnError) {
  const Device d = GetParam();
  const Tensor src = f32(iota_f(20), {4, 5}, d);
  Tensor dst = Tensor::zeros({3, 6}, DType::F32, d);
  copy2d(src, dst, 2, 3, 5, 6, 1, 2);
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 0, 0, 0, 6, 7, 8, 0, 0, 0, 0, 0, 0, 0}));
  const std::vector<float> before = dst.to_vector<float>();
  EXPECT_THROW(copy2d(src, dst, 3, 3, 5, 6, 0, 4), ShapeError);  // dst end 4 + 12 + 3 = 19 > 18
  EXPECT_THROW(copy2d(src, dst, 4, 5, 6, 5, 0, 0), ShapeError);  // src end 18 + 5 = 23 > 20
  EXPECT_THROW(copy2d(src, dst, 2, 3, 5, 2, 0, 0), ShapeError);  // overlapping dst rows
  EXPECT_THROW(copy2d(src, dst, -1, 3, 5, 6, 0, 0), ShapeError);
  EXPECT_THROW(copy2d(src, dst, 1, 3, 5, 6, -1, 0), ShapeError);
  EXPECT_THROW(copy2d(src.t(), dst, 1, 3, 5, 6, 0, 0), ShapeError);  // not contiguous
  Tensor dst64 = Tensor::zeros({3, 6}, DType::F64, d);
  EXPECT_THROW(copy2d(src, dst64, 1, 3, 5, 6, 0, 0), DTypeError);
  EXPECT_THROW(copy2d(src, dst, 1, std::numeric_limits<int64_t>::max(), 5, 6, 0, 0), ShapeError);
  EXPECT_THROW(copy2d(src, dst, std::numeric_limits<int64_t>::max(), 1, std::numeric_limits<int64_t>::max(), 6, 0, 0),
               ShapeError);
  EXPECT_EQ(dst.to_vector<float>(), before);
  copy2d(src, dst, 0, 3, 5, 6, 0, 0);  // nothing to copy
  EXPECT_EQ(dst.to_vector<float>(), before);
}

TEST_P(IndexTest, CopyFromIntoATransposedWindow) {
  const Device d = GetParam();
  Tensor big = Tensor::zeros({3, 4}, DType::F32, d);
  Tensor view = big.narrow(0, 1, 2).narrow(1, 1, 2).t();  // [2, 2] over rows 1-2, cols 1-2, transposed
  view.copy_from(f32({1, 2, 3, 4}, {2, 2}, d));
  EXPECT_EQ(big.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 1, 3, 0, 0, 2, 4, 0}));
  EXPECT_THROW(view.copy_from(f32({1, 2, 3}, {3}, d)), ShapeError);
}

// A source that shares bytes with the destination is read as it was before the copy: a matrix
// into its own transpose (large enough for the CPU's tiled transpose), a window shifted by one, a
// broadcast of one of the destination's own rows; the very same view copies onto itself (short
// and long rows).
TEST_P(IndexTest, CopyFromAnOverlappingSource) {
  const Device d = GetParam();
  const int64_t n = 100;
  std::vector<float> v(n * n);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  Tensor x = f32(v, {n, n}, d);
  x.copy_from(x.t());
  const std::vector<float> got = x.to_vector<float>();
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(got[static_cast<size_t>(i * n + j)], v[static_cast<size_t>(j * n + i)]) << i << ", " << j;
  Tensor r = f32({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}, d);
  r.narrow(0, 1, 9).copy_from(r.narrow(0, 0, 9));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {3, 2}, d);
  m.copy_from(m.select(0, 2));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{5, 6, 5, 6, 5, 6}));
  m.copy_from(m);
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{5, 6, 5, 6, 5, 6}));
  x.copy_from(x);  // rows long enough for the CPU's copy of whole runs (Note [CPU copies of runs])
  EXPECT_EQ(x.to_vector<float>(), got);
}

WICK_INSTANTIATE_DEVICES(IndexTest);

}  // namespace
}  // namespace wick
