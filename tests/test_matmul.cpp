// matmul: numpy's 1-d rules, errors, K == 0, many small batches, NaN, and exactness on integer data.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

class MatmulTest : public ::testing::TestWithParam<Device> {};

Tensor f32(const std::vector<float>& v, const Shape& s, const Device& d) { return Tensor::from_vector(v, s, d); }

// Small integers: every product and sum is exact in f32 (and in bf16 for the inputs).
std::vector<float> ints(int64_t n, int64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t h = (static_cast<uint64_t>(i) * 2654435761u + static_cast<uint64_t>(seed) * 40503u) >> 7;
    v[static_cast<size_t>(i)] = static_cast<float>(static_cast<int64_t>(h % 7) - 3);
  }
  return v;
}

// [batch, m, k] @ [batch or 1, k, n] in plain loops.
std::vector<float> ref(const std::vector<float>& a, const std::vector<float>& b, int64_t batch, int64_t m, int64_t k,
                       int64_t n, bool b_shared) {
  std::vector<float> c(static_cast<size_t>(batch * m * n), 0.f);
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += a[static_cast<size_t>((s * m + i) * k + p)] *
                 b[static_cast<size_t>(((b_shared ? 0 : s) * k + p) * n + j)];
        c[static_cast<size_t>((s * m + i) * n + j)] = static_cast<float>(acc);
      }
  return c;
}

TEST_P(MatmulTest, OneDimensionalOperands) {
  const Device d = GetParam();
  const Tensor v = f32({1, 2, 3}, {3}, d);
  const Tensor m = f32({1, 2, 3, 4, 5, 6}, {3, 2}, d);   // [3, 2]
  const Tensor mt = f32({1, 2, 3, 4, 5, 6}, {2, 3}, d);  // [2, 3]
  const Tensor dot = v.matmul(v);
  EXPECT_EQ(dot.shape(), Shape({}));
  EXPECT_EQ(dot.to_vector<float>(), std::vector<float>{14});
  const Tensor vm = v.matmul(m);
  EXPECT_EQ(vm.shape(), Shape({2}));
  EXPECT_EQ(vm.to_vector<float>(), (std::vector<float>{22, 28}));
  const Tensor mv = mt.matmul(v);
  EXPECT_EQ(mv.shape(), Shape({2}));
  EXPECT_EQ(mv.to_vector<float>(), (std::vector<float>{14, 32}));
  // a 1-d operand broadcasts against batches
  const Tensor batched = f32({1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 1}, {2, 3, 2}, d);
  const Tensor vb = v.matmul(batched);
  EXPECT_EQ(vb.shape(), Shape({2, 2}));
  EXPECT_EQ(vb.to_vector<float>(), (std::vector<float>{22, 28, 0, 3}));
  EXPECT_EQ(matmul(batched.transpose(1, 2), v).shape(), Shape({2, 2}));
}

TEST_P(MatmulTest, ShapeErrorsNameBothShapes) {
  const Device d = GetParam();
  const Tensor a = Tensor::zeros({2, 3}, DType::F32, d);
  const Tensor b = Tensor::zeros({4, 5}, DType::F32, d);
  try {
    a.matmul(b);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[matmul]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[4, 5]"), std::string::npos) << msg;
  }
  EXPECT_THROW(Tensor::zeros({2, 4, 3}, DType::F32, d).matmul(Tensor::zeros({3, 3, 5}, DType::F32, d)), ShapeError);
  EXPECT_THROW(Tensor::zeros({3}, DType::F32, d).matmul(Tensor::zeros({4}, DType::F32, d)), ShapeError);
  EXPECT_THROW(Tensor::zeros({}, DType::F32, d).matmul(Tensor::zeros({1, 1}, DType::F32, d)), ShapeError);
}

TEST_P(MatmulTest, DTypeErrors) {
  const Device d = GetParam();
  for (DType t : {DType::U8, DType::U32, DType::I64})
    EXPECT_THROW(Tensor::zeros({2, 2}, t, d).matmul(Tensor::zeros({2, 2}, t, d)), DTypeError);
  EXPECT_THROW(Tensor::zeros({2, 2}, DType::F32, d).matmul(Tensor::zeros({2, 2}, DType::F64, d)), DTypeError);
}

TEST_P(MatmulTest, EmptyInnerDimGivesZeros) {
  const Device d = GetParam();
  for (DType t : {DType::F32, DType::BF16, DType::F64}) {
    const Tensor c = Tensor::zeros({2, 3, 0}, t, d).matmul(Tensor::zeros({0, 4}, t, d));
    EXPECT_EQ(c.shape(), Shape({2, 3, 4}));
    EXPECT_EQ(c.to_dtype(DType::F32).to_vector<float>(), std::vector<float>(24, 0.f));
  }
  EXPECT_EQ(Tensor::zeros({0, 3}, DType::F32, d).matmul(Tensor::zeros({3, 4}, DType::F32, d)).shape(), Shape({0, 4}));
}

TEST_P(MatmulTest, ManySmallBatchesAndABroadcastOperand) {
  const Device d = GetParam();
  const int64_t batch = 2000, m = 8, k = 8, n = 8;
  const std::vector<float> av = ints(batch * m * k, 1), bv = ints(batch * k * n, 2), shared = ints(k * n, 3);
  const Tensor a = f32(av, {batch, m, k}, d);
  EXPECT_EQ(a.matmul(f32(bv, {batch, k, n}, d)).to_vector<float>(), ref(av, bv, batch, m, k, n, false));
  const std::vector<float> expected = ref(av, shared, batch, m, k, n, true);
  EXPECT_EQ(a.matmul(f32(shared, {k, n}, d)).to_vector<float>(), expected);
  // bf16: the inputs are exact in bf16 and the f32 sums are exact, so the result is the exact sum
  // rounded once to bf16.
  const Tensor c16 = a.to_dtype(DType::BF16).matmul(f32(shared, {k, n}, d).to_dtype(DType::BF16));
  const std::vector<float> r16 =
      Tensor::from_vector(expected, {batch, m, n}, d).to_dtype(DType::BF16).to_dtype(DType::F32).to_vector<float>();
  EXPECT_EQ(c16.to_dtype(DType::F32).to_vector<float>(), r16);
}

TEST_P(MatmulTest, TransposedAndNarrowedOperandsGiveTheSameResult) {
  const Device d = GetParam();
  const int64_t m = 37, k = 29, n = 41;
  const std::vector<float> av = ints(m * k, 4), bv = ints(k * n, 5);
  const std::vector<float> expected = ref(av, bv, 1, m, k, n, false);
  const Tensor a = f32(av, {m, k}, d), b = f32(bv, {k, n}, d);
  // materialise transposed storage, then view it back
  const Tensor at = a.t().contiguous().t(), bt = b.t().contiguous().t();
  EXPECT_FALSE(at.is_contiguous());
  EXPECT_EQ(at.matmul(b).to_vector<float>(), expected);
  EXPECT_EQ(a.matmul(bt).to_vector<float>(), expected);
  EXPECT_EQ(at.matmul(bt).to_vector<float>(), expected);
  // a window of a wider tensor (leading dim > k)
  const Tensor wide = cat({a, Tensor::zeros({m, 5}, DType::F32, d)}, 1).narrow(1, 0, k);
  EXPECT_EQ(wide.matmul(b).to_vector<float>(), expected);
  // neither dim has unit stride: copied first
  const Tensor sparse = cat({a.unsqueeze(2), a.unsqueeze(2)}, 2).select(2, 1);
  EXPECT_EQ(sparse.matmul(b).to_vector<float>(), expected);
  // f64 through dgemm
  EXPECT_EQ(at.to_dtype(DType::F64).matmul(bt.to_dtype(DType::F64)).to_dtype(DType::F32).to_vector<float>(), expected);
}

TEST_P(MatmulTest, NaNPropagatesToItsRowAndColumn) {
  const Device d = GetParam();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = f32({1, nan, 0, 1}, {2, 2}, d);
  const Tensor b = f32({1, 0, 0, 1}, {2, 2}, d);
  const std::vector<float> c = a.matmul(b).to_vector<float>();
  EXPECT_TRUE(std::isnan(c[0]) && std::isnan(c[1]));
  EXPECT_EQ(c[2], 0.f);
  EXPECT_EQ(c[3], 1.f);
}

void expect_matmul_close(const Tensor& a, const Tensor& b, const std::string& what) {
  SCOPED_TRACE(what);
  testing::expect_product_close(a.matmul(b), a, b);
}

// Products large enough to be cut into a block of c per thread (Note [CPU GEMM blocks per thread]
// in src/cpu/matmul.cpp), in f32 and f64, with each operand in either orientation, against plain
// loops in f64, and a batch of them (one per thread where there are enough).
TEST_P(MatmulTest, LargeProductsAgainstLoops) {
  const Device d = GetParam(), cpu = Device::cpu();
  const int64_t m = 333, k = 517, n = 401;
  for (DType t : {DType::F32, DType::F64}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor a = Tensor::rand_uniform({m, k}, t, -1, 1, d), b = Tensor::rand_uniform({k, n}, t, -1, 1, d);
    const std::vector<double> av = a.to(cpu).to_dtype(DType::F64).to_vector<double>();
    const std::vector<double> bv = b.to(cpu).to_dtype(DType::F64).to_vector<double>();
    std::vector<double> want(static_cast<size_t>(m * n)), mag(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t p = 0; p < k; ++p) {
        const double x = av[static_cast<size_t>(i * k + p)];
        for (int64_t j = 0; j < n; ++j) {
          want[static_cast<size_t>(i * n + j)] += x * bv[static_cast<size_t>(p * n + j)];
          mag[static_cast<size_t>(i * n + j)] += std::abs(x * bv[static_cast<size_t>(p * n + j)]);
        }
      }
    const Tensor wt = Tensor::from_vector(want, {m, n}, cpu), mt = Tensor::from_vector(mag, {m, n}, cpu);
    const Tensor ac = a.t().contiguous().t(), bc = b.t().contiguous().t();  // column-major copies
    testing::expect_sums_close(a.matmul(b), wt, mt, k);
    testing::expect_sums_close(ac.matmul(b), wt, mt, k);
    testing::expect_sums_close(a.matmul(bc), wt, mt, k);
    testing::expect_sums_close(ac.matmul(bc), wt, mt, k);
    const Tensor batch = cat({a.unsqueeze(0), ac.unsqueeze(0), a.unsqueeze(0), ac.unsqueeze(0)}, 0)
                             .matmul(cat({b.unsqueeze(0), b.unsqueeze(0), bc.unsqueeze(0), bc.unsqueeze(0)}, 0));
    for (int64_t i = 0; i < 4; ++i) testing::expect_sums_close(batch.select(0, i), wt, mt, k);
  }
}

// One b for every batch (Note [CPU matmul batch folding]): batches whose rows merge into one run,
// and some that do not, each batch against a product of its own 2-d matrix in f64.
TEST_P(MatmulTest, OneMatrixForAllBatchesAgainstF64) {
  const Device d = GetParam();
  for (DType t : {DType::BF16, DType::F16, DType::F32, DType::F64}) {
    const std::string tn(dtype_name(t));
    auto randu = [&](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1, d).to_dtype(t); };
    const Tensor w = randu({37, 29});
    const struct {
      std::string what;
      Tensor a, b;
    } cases[] = {
        {"3 batches", randu({3, 5, 37}), w},
        {"2 batch dims", randu({2, 3, 5, 37}), w},
        {"single rows", randu({6, 1, 37}), w},
        {"rows with a gap", randu({3, 5, 40}).narrow(2, 1, 37), w},
        {"batches that do not merge", randu({5, 3, 37}).transpose(0, 1), w},
        {"b with a batch dim of 1", randu({3, 5, 37}), w.unsqueeze(0)},
        {"b column-major", randu({4, 7, 37}), randu({29, 37}).t()},
        {"300 rows in all", randu({4, 75, 37}), w},
    };
    for (const auto& c : cases) {
      SCOPED_TRACE(tn + " " + c.what);
      const Tensor out = c.a.matmul(c.b);
      const int64_t m = c.a.dim(-2), k = c.a.dim(-1), n = c.b.dim(-1);
      Shape want(c.a.shape().begin(), c.a.shape().end() - 1);
      want.push_back(n);
      ASSERT_EQ(out.shape(), want);
      const Tensor a3 = c.a.reshape({-1, m, k}), out3 = out.reshape({-1, m, n}), b2 = c.b.reshape({k, n});
      for (int64_t i = 0; i < a3.dim(0); ++i) testing::expect_product_close(out3.select(0, i), a3.select(0, i), b2);
    }
  }
}

// Matrix-vector products (n == 1 or m == 1) in both orientations of the matrix: rows with unit
// stride (dot products) and columns with unit stride (W stored transposed), with tails of every
// vector width, row-strided matrices and strided vectors.
TEST_P(MatmulTest, MatrixVectorProductsAgainstF64) {
  const Device d = GetParam();
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    const std::string tn(dtype_name(t));
    auto randu = [&](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1, d).to_dtype(t); };
    for (const int64_t k : {1, 7, 16, 33, 1000}) {
      for (const int64_t m : {1, 5, 67}) {
        const std::string mk = tn + " m " + std::to_string(m) + " k " + std::to_string(k);
        const Tensor w = randu({m, k}), x = randu({k});
        const Tensor wt = w.t().contiguous().t();  // the same matrix, column-major
        expect_matmul_close(w, x, mk + " W x");
        expect_matmul_close(w, x.reshape({k, 1}), mk + " W x column");
        expect_matmul_close(x, w.t(), mk + " x W^T");
        expect_matmul_close(x.reshape({1, k}), w.t(), mk + " x row W^T");
        expect_matmul_close(wt, x, mk + " W x, W column-major");
        expect_matmul_close(x, wt.t(), mk + " x W^T, W column-major");
        // rows with a gap (a window of a wider matrix) and a vector with a stride
        const Tensor wn = randu({m, k + 5}).narrow(1, 2, k), xs = randu({k, 3}).select(1, 1);
        expect_matmul_close(wn, xs, mk + " row-strided W, strided x");
        expect_matmul_close(xs, wn.t(), mk + " strided x, row-strided W^T");
        expect_matmul_close(wn.t().contiguous().t(), xs, mk + " column-strided W");
        if (d.is_cpu()) {  // one kernel for every layout: the same bits
          EXPECT_EQ(testing::bytes_of(wn.matmul(x)), testing::bytes_of(wn.contiguous().matmul(x))) << mk;
          EXPECT_EQ(testing::bytes_of(x.matmul(wn.t())), testing::bytes_of(wn.matmul(x))) << mk;
        }
      }
    }
    // batches: a batch of matrices and vectors, a broadcast vector, a broadcast matrix, both
    // orientations, and batch dims that do not merge
    const Tensor a3 = randu({3, 37, 64}), x3 = randu({3, 64, 1}), x1 = randu({64, 1});
    expect_matmul_close(a3, x3, tn + " batched W x");
    expect_matmul_close(a3, x1, tn + " batched W, broadcast x");
    expect_matmul_close(x1.t(), a3.transpose(1, 2), tn + " broadcast x, batched W^T");
    expect_matmul_close(a3.select(0, 1), x3, tn + " broadcast W, batched x");
    expect_matmul_close(x3.transpose(1, 2), a3.transpose(1, 2).contiguous(), tn + " batched x W, W column-major");
    expect_matmul_close(randu({2, 3, 5, 64}).narrow(1, 0, 2), randu({2, 2, 64, 1}), tn + " 2 batch dims, strided");
    expect_matmul_close(randu({4, 1, 9, 33}), randu({3, 33, 1}), tn + " broadcast batch dims");
    // empty: no rows, no batch, k == 0
    EXPECT_EQ(randu({0, 7}).matmul(randu({7})).shape(), Shape({0}));
    EXPECT_EQ(randu({7}).matmul(randu({0, 7}).t()).shape(), Shape({0}));
    EXPECT_EQ(randu({0, 5, 7}).matmul(randu({7, 1})).shape(), Shape({0, 5, 1}));
    const Tensor z = randu({5, 0}).matmul(randu({0}));
    EXPECT_EQ(z.to_dtype(DType::F64).to_vector<double>(), std::vector<double>(5, 0.0)) << tn;
  }
}

// Products of a few vectors (Note [CPU matrix-vector products]): x [v, k] against a matrix in
// both orientations (W^T with W stored [n, k], W stored [k, n], each also column-major), folded
// batches of single rows, strided vectors, against f64, up to past the vector kernels' limits; and
// on the CPU, within those limits (8 vectors for dot products of rows, 4 for sums of columns of a
// 16-bit matrix, 1 of an f32 one), each vector's row of the result bit for bit the product of that
// vector alone.
TEST_P(MatmulTest, FewVectorProductsAgainstF64AndEachAlone) {
  const Device d = GetParam();
  for (DType t : {DType::BF16, DType::F16, DType::F32}) {
    const std::string tn(dtype_name(t));
    auto randu = [&](const Shape& s) { return Tensor::rand_uniform(s, DType::F32, -1, 1, d).to_dtype(t); };
    for (const int64_t k : {5, 16, 256, 300}) {  // (256: W's rows 64-byte aligned, bf16_weight_as_is)
      const int64_t n = 150;                     // a run of 128 outputs and a tail
      const Tensor w = randu({n, k}), wk = randu({k, n});
      for (const int64_t v : {2, 3, 4, 5, 8, 9}) {
        const std::string vk = tn + " vectors " + std::to_string(v) + " k " + std::to_string(k);
        const Tensor x = randu({v, k});
        const Tensor xs = randu({v, 2 * k}).narrow(1, 1, k);  // rows with a gap
        const Tensor xc = x.t().contiguous().t();             // column-major vectors
        const int64_t cols_limit = t == DType::F32 ? 1 : 4;
        const struct {
          std::string what;
          Tensor b;
          int64_t limit;  // vectors the CPU's kernel takes together
        } mats[] = {{"W^T", w.t(), 8},
                    {"W [k, n]", wk, cols_limit},
                    {"W^T column-major", w.t().contiguous(), cols_limit},
                    {"W [k, n] column-major", wk.t().contiguous().t(), 8}};
        for (const auto& mat : mats) {
          expect_matmul_close(x, mat.b, vk + " x @ " + mat.what);
          expect_matmul_close(xs, mat.b, vk + " strided x @ " + mat.what);
          expect_matmul_close(xc, mat.b, vk + " column-major x @ " + mat.what);
          expect_matmul_close(mat.b.t(), x.t(), vk + " " + mat.what + "^T @ x^T");
          const Tensor folded = x.unsqueeze(1).matmul(mat.b);  // [v, 1, n]: batches of one row, folded
          ASSERT_EQ(folded.shape(), Shape({v, 1, n})) << vk;
          testing::expect_product_close(folded.reshape({v, n}), x, mat.b);
          if (d.is_cpu() && v <= mat.limit) {
            const Tensor all = x.matmul(mat.b);
            for (int64_t j = 0; j < v; ++j)
              ASSERT_EQ(testing::bytes_of(all.select(0, j).contiguous()),
                        testing::bytes_of(x.select(0, j).matmul(mat.b)))
                  << vk << " " << mat.what << " vector " << j;
          }
        }
      }
    }
  }
}

WICK_INSTANTIATE_DEVICES(MatmulTest);

}  // namespace
}  // namespace wick
