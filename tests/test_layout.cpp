// Layouts and views: strides, offsets, when reshape is a view, and typed errors.
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"

namespace wick {
namespace {

using testing::expect_error;

// Element offsets of a layout in row-major order of its shape.
std::vector<int64_t> offsets(const Layout& l) {
  std::vector<int64_t> out;
  const int64_t n = l.numel();
  std::vector<int64_t> idx(l.rank(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = l.offset();
    for (size_t d = 0; d < l.rank(); ++d) off += idx[d] * l.stride(d);
    out.push_back(off);
    for (size_t d = l.rank(); d-- > 0;) {
      if (++idx[d] < l.dim(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

// Brute force: a strided view of `shape` with the same row-major element offsets as `l` exists iff
// the strides read off those offsets (one step along each dim from the origin) reproduce them all.
bool view_exists(const Layout& l, const Shape& shape) {
  const std::vector<int64_t> off = offsets(l);
  if (off.empty()) return true;
  Strides st(shape.size(), 0);
  int64_t step = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 1) st[d] = off[static_cast<size_t>(step)] - off[0];
    step *= shape[d];
  }
  return offsets(Layout(shape, st, off[0])) == off;
}

std::vector<Shape> factorizations(int64_t n, size_t max_rank) {
  std::vector<Shape> out;
  std::vector<int64_t> cur;
  std::function<void(int64_t)> rec = [&](int64_t rest) {
    if (rest == 1) out.push_back(Shape(cur));
    if (cur.size() == max_rank) return;
    for (int64_t f = 1; f <= rest; ++f)
      if (rest % f == 0 && !(f == 1 && rest == 1 && cur.size() + 1 >= max_rank)) {
        cur.push_back(f);
        rec(rest / f);
        cur.pop_back();
      }
  };
  rec(n);
  return out;
}

// Dims keeps up to Dims::kInline dims inline and spills to the heap past that: random edits, copies
// and moves across that boundary match a std::vector doing the same.
TEST(Dims, MatchesAVectorAcrossTheInlineLimit) {
  std::mt19937 rng(7);
  Dims d;
  std::vector<int64_t> v;
  for (int step = 0; step < 4000; ++step) {
    const int64_t x = static_cast<int64_t>(rng() % 1000) - 500;
    switch (rng() % 8) {
      case 0:
      case 1:
        d.push_back(x);
        v.push_back(x);
        break;
      case 2:
        if (!v.empty()) {
          const size_t at = rng() % v.size();
          d.erase(at);
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(at));
        }
        break;
      case 3: {
        const size_t at = rng() % (v.size() + 1);
        d.insert(at, x);
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), x);
        break;
      }
      case 4: {
        const size_t n = rng() % 20;
        d.resize(n, x);
        v.resize(n, x);
        break;
      }
      case 5: {  // copy, then move back through a temporary
        Dims c(d);
        ASSERT_EQ(c, d);
        Dims m(std::move(c));
        ASSERT_TRUE(c.empty());
        d = Dims{};
        d = std::move(m);
        break;
      }
      case 6: {
        Dims c{1, 2, 3};
        c = d;
        d = c;
        break;
      }
      default:
        d = Dims(v.begin(), v.end());
        break;
    }
    ASSERT_EQ(d.size(), v.size()) << "step " << step;
    ASSERT_EQ(d.vec(), v) << "step " << step;
  }
  EXPECT_EQ(Dims(std::vector<int64_t>{4, 5}).str(), "[4, 5]");
  EXPECT_EQ(Dims(3, 7), (Dims{7, 7, 7}));
  EXPECT_EQ((Dims{2, 3, 4}).numel(), 24);
  EXPECT_NE((Dims{2, 3}), (Dims{2, 3, 1}));
}

TEST(Layout, TryReshapeMatchesBruteForce) {
  std::mt19937_64 rng(5);
  int views = 0, copies = 0;
  for (int trial = 0; trial < 300; ++trial) {
    // A random non-contiguous layout: a contiguous base, narrowed, permuted, maybe with a
    // broadcast or size-1 dim.
    const size_t rank = 1 + rng() % 4;
    Shape base(rank);
    for (size_t d = 0; d < rank; ++d) base[d] = 1 + static_cast<int64_t>(rng() % 4);
    Layout l(base, static_cast<int64_t>(rng() % 3));
    for (size_t d = 0; d < rank; ++d)
      if (rng() % 3 == 0 && base[d] > 1) l = l.narrow(d, 1, base[d] - 1);
    if (rng() % 2) {
      Dims order(rank);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
      l = l.permute(order);
    }
    if (rng() % 4 == 0) l = l.unsqueeze(rng() % (l.rank() + 1));
    if (rng() % 5 == 0) {
      Shape b = l.shape();
      b.insert(0, 3);
      l = l.broadcast_as(b);
    }
    for (const Shape& s : factorizations(l.numel(), 4)) {
      Layout out;
      const bool ok = l.try_reshape(s, &out);
      ASSERT_EQ(ok, view_exists(l, s)) << l.str() << " -> " << s.str();
      if (ok) {
        ++views;
        ASSERT_EQ(out.shape(), s);
        ASSERT_EQ(offsets(out), offsets(l)) << l.str() << " -> " << out.str();
        // The flag is recomputed for the new layout: contiguous iff its offsets are consecutive.
        const std::vector<int64_t> o = offsets(out);
        bool consecutive = true;
        for (size_t i = 1; i < o.size(); ++i) consecutive = consecutive && o[i] == o[i - 1] + 1;
        ASSERT_EQ(out.is_contiguous(), consecutive) << out.str();
      } else {
        ++copies;
      }
    }
  }
  EXPECT_GT(views, 100);
  EXPECT_GT(copies, 100);
  // Spelled out: [4, 6] narrowed to [4, 3] merges only within rows.
  const Layout n = Layout(Shape{4, 6}).narrow(1, 0, 3);
  Layout out;
  EXPECT_FALSE(n.try_reshape({12}, &out));
  EXPECT_TRUE(n.try_reshape({2, 2, 3}, &out));
  EXPECT_EQ(out.strides(), (Strides{12, 6, 1}));
  EXPECT_TRUE(n.try_reshape({4, 3, 1}, &out));
  // Transposed [3, 4]^T = [4, 3] strides [1, 4]: splitting the stride-4 dim is fine, merging is not.
  const Layout t = Layout(Shape{3, 4}).transpose(0, 1);
  EXPECT_TRUE(t.try_reshape({2, 2, 3}, &out));
  EXPECT_EQ(out.strides(), (Strides{2, 1, 4}));
  EXPECT_FALSE(t.try_reshape({12}, &out));
}

TEST(Layout, ContiguityFlag) {
  EXPECT_TRUE(Layout(Shape{2, 3}).is_contiguous());
  EXPECT_TRUE(Layout(Shape{2, 1, 3}, Strides{3, 99, 1}, 5).is_contiguous());  // size-1 dims: any stride
  EXPECT_FALSE(Layout(Shape{2, 3}, Strides{1, 2}, 0).is_contiguous());
  EXPECT_TRUE(Layout(Shape{0, 3}, Strides{7, 7}, 0).is_contiguous());
  EXPECT_FALSE(Layout(Shape{2, 3}).broadcast_as({4, 2, 3}).is_contiguous());
  EXPECT_TRUE(Layout(Shape{1, 3}).broadcast_as({1, 3}).is_contiguous());
  EXPECT_EQ(Layout(Shape{4, 5}).narrow(1, 1, 3).min_index(), 1);
  EXPECT_EQ(Layout(Shape{4, 5}).narrow(1, 1, 3).max_index_exclusive(), 19);
  EXPECT_EQ(Layout(Shape{4, 0}, 3).max_index_exclusive(), 3);
}

// Values 0..n-1 as i64 on the device, shaped.
Tensor iota(const Shape& s, const Device& d) {
  return Tensor::arange(0, static_cast<double>(s.numel()), 1, DType::I64, d).reshape(s);
}
std::vector<int64_t> vals(const Tensor& t) { return t.to(Device::cpu()).to_vector<int64_t>(); }

class Views : public ::testing::TestWithParam<Device> {};

TEST_P(Views, ReshapeIsAViewWhenPossible) {
  const Device d = GetParam();
  const Tensor x = iota({4, 6}, d);
  const Tensor r = x.reshape({2, -1, 3});
  EXPECT_EQ(r.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_EQ(x.reshape({-1}).shape(), (Shape{24}));
  EXPECT_EQ(x.reshape({24, 1, -1}).shape(), (Shape{24, 1, 1}));
  // A transposed view splits without copying but cannot be flattened in place.
  const Tensor t = x.t();  // [6, 4] strides [1, 6]
  EXPECT_EQ(t.strides(), (Strides{1, 6}));
  const Tensor split = t.reshape({3, 2, 4});
  EXPECT_EQ(split.storage(), x.storage());
  EXPECT_EQ(split.strides(), (Strides{2, 1, 6}));
  const Tensor flat = t.flatten();
  EXPECT_NE(flat.storage(), x.storage());
  EXPECT_TRUE(flat.is_contiguous());
  std::vector<int64_t> want;
  for (int64_t j = 0; j < 6; ++j)
    for (int64_t i = 0; i < 4; ++i) want.push_back(i * 6 + j);
  EXPECT_EQ(vals(flat), want);
  EXPECT_EQ(vals(split.reshape({24})), want);
  // Narrowed rows are a view within a row only.
  const Tensor n = x.narrow(1, 2, 3);
  EXPECT_EQ(n.reshape({4, 3, 1}).storage(), x.storage());
  EXPECT_NE(n.reshape({12}).storage(), x.storage());
  EXPECT_EQ(vals(n.reshape({12})), (std::vector<int64_t>{2, 3, 4, 8, 9, 10, 14, 15, 16, 20, 21, 22}));
  // Zero-size and rank 0.
  const Tensor z = Tensor::zeros({3, 0, 2}, DType::F32, d);
  EXPECT_EQ(z.reshape({0, 5}).shape(), (Shape{0, 5}));
  EXPECT_EQ(z.reshape({-1, 2}).numel(), 0);
  const Tensor s = Tensor::full({}, 7, DType::I64, d);
  EXPECT_EQ(s.reshape({1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(vals(s.flatten()), (std::vector<int64_t>{7}));
}

TEST_P(Views, ValuesAndStrides) {
  const Device d = GetParam();
  const Tensor x = iota({2, 3, 4}, d);
  EXPECT_EQ(x.strides(), (Strides{12, 4, 1}));
  const Tensor n = x.narrow(2, 1, 2);
  EXPECT_EQ(n.shape(), (Shape{2, 3, 2}));
  EXPECT_EQ(n.offset(), 1);
  EXPECT_EQ(vals(n), (std::vector<int64_t>{1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}));
  EXPECT_EQ(x.narrow(-1, 3, 1).offset(), 3);
  EXPECT_EQ(x.narrow(0, 2, 0).numel(), 0);
  const Tensor p = x.permute({2, 0, 1});
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.strides(), (Strides{1, 12, 4}));
  EXPECT_EQ(vals(p)[1], 4);
  EXPECT_EQ(vals(x.permute({-1, 0, 1})), vals(p));
  const Tensor tr = x.transpose(0, 2);
  EXPECT_EQ(tr.strides(), (Strides{1, 4, 12}));
  EXPECT_EQ(vals(tr)[1], 12);
  EXPECT_FALSE(tr.is_contiguous());
  const Tensor sel = x.select(1, 2);
  EXPECT_EQ(sel.shape(), (Shape{2, 4}));
  EXPECT_EQ(sel.offset(), 8);
  EXPECT_EQ(vals(sel), (std::vector<int64_t>{8, 9, 10, 11, 20, 21, 22, 23}));
  EXPECT_EQ(vals(x.select(-1, -1)), (std::vector<int64_t>{3, 7, 11, 15, 19, 23}));
  const Tensor u = x.unsqueeze(1);
  EXPECT_EQ(u.shape(), (Shape{2, 1, 3, 4}));
  EXPECT_TRUE(u.is_contiguous());
  EXPECT_EQ(u.squeeze(1).shape(), x.shape());
  EXPECT_EQ(x.unsqueeze(-1).shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(3).shape(), (Shape{2, 3, 4, 1}));
  const Tensor row = iota({1, 3}, d);
  const Tensor b = row.broadcast_as({2, 4, 3});
  EXPECT_EQ(b.strides(), (Strides{0, 0, 1}));
  EXPECT_EQ(b.storage(), row.storage());
  EXPECT_EQ(vals(b), (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  const Tensor e = iota({3, 1}, d).expand({2, -1, 4});
  EXPECT_EQ(e.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(e.strides(), (Strides{0, 1, 0}));
  EXPECT_EQ(vals(e)[5], 1);
  EXPECT_EQ(vals(x.t().narrow(1, 1, 2)), (std::vector<int64_t>{1, 5, 9, 2, 6, 10, 13, 17, 21, 14, 18, 22}));
  // Views of views keep sharing storage and compose offsets.
  const Tensor vv = x.select(0, 1).narrow(0, 1, 2).narrow(1, 2, 2);
  EXPECT_EQ(vv.offset(), 12 + 4 + 2);
  EXPECT_EQ(vals(vv), (std::vector<int64_t>{18, 19, 22, 23}));
  EXPECT_EQ(x.dim(-1), 4);
  EXPECT_EQ(x.dim(0), 2);
}

TEST_P(Views, ContiguousCopiesOnlyWhenNeeded) {
  const Device d = GetParam();
  const Tensor x = iota({3, 4}, d);
  EXPECT_EQ(x.contiguous().storage(), x.storage());
  EXPECT_EQ(x.unsqueeze(0).contiguous().storage(), x.storage());
  EXPECT_EQ(x.narrow(0, 1, 2).contiguous().storage(), x.storage());  // whole rows stay contiguous
  const Tensor n = x.narrow(1, 1, 2);
  const Tensor c = n.contiguous();
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.offset(), 0);
  EXPECT_EQ(vals(c), (std::vector<int64_t>{1, 2, 5, 6, 9, 10}));
  const Tensor b = x.select(0, 1).broadcast_as({2, 4}).contiguous();
  EXPECT_EQ(vals(b), (std::vector<int64_t>{4, 5, 6, 7, 4, 5, 6, 7}));
  EXPECT_NE(x.clone().storage(), x.storage());
  EXPECT_EQ(vals(x.t().clone()), vals(x.t().contiguous()));
}

// Copies of transposed views in every dtype (the CPU's transposing kernel takes 2-, 4- and 8-byte
// elements, Note [CPU transpose]; the others and other devices their general paths): sizes with
// and without whole blocks, batched, narrowed (a row stride wider than the rows) and offset views.
TEST_P(Views, TransposedCopiesOfEveryType) {
  const Device d = GetParam();
  for (DType dt : {DType::U8, DType::BF16, DType::F16, DType::F32, DType::U32, DType::F64, DType::I64}) {
    SCOPED_TRACE(dtype_name(dt));
    // values below 256, exact in every dtype
    std::vector<int64_t> xv(3 * 70 * 45);
    for (size_t e = 0; e < xv.size(); ++e) xv[e] = static_cast<int64_t>(e * 37 % 251);
    const Tensor x = Tensor::from_vector(xv, {3, 70, 45}, d).to_dtype(dt);
    auto at = [&](int64_t b, int64_t i, int64_t j) { return xv[static_cast<size_t>((b * 70 + i) * 45 + j)]; };
    std::vector<int64_t> want;
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t j = 0; j < 45; ++j)
        for (int64_t i = 0; i < 70; ++i) want.push_back(at(b, i, j));
    EXPECT_EQ(vals(x.transpose(1, 2).contiguous().to_dtype(DType::I64)), want) << "batched";
    want.clear();
    for (int64_t j = 0; j < 45; ++j)
      for (int64_t i = 0; i < 70; ++i) want.push_back(at(1, i, j));
    EXPECT_EQ(vals(x.select(0, 1).t().contiguous().to_dtype(DType::I64)), want) << "offset";
    want.clear();
    for (int64_t j = 3; j < 43; ++j)
      for (int64_t i = 0; i < 70; ++i) want.push_back(at(2, i, j));
    EXPECT_EQ(vals(x.select(0, 2).narrow(1, 3, 40).t().contiguous().to_dtype(DType::I64)), want) << "narrowed";
  }
}

// Copies of permuted views that keep the last dim (the GPU moves such runs 16, 8 or 4 bytes at a
// time, Note [GPU wide copies]): runs of every width in every element size, a run whose length
// or start allows only a narrower unit (or none), and views narrowed along the run.
TEST_P(Views, PermutedCopiesThatKeepTheLastDim) {
  const Device d = GetParam();
  for (DType dt : {DType::U8, DType::BF16, DType::F32, DType::F64}) {
    for (int64_t run : {1, 2, 3, 4, 6, 8, 16, 24, 64}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " run " + std::to_string(run));
      const int64_t b = 2, t = 7, h = 5;
      std::vector<int64_t> xv(static_cast<size_t>(b * t * h * (run + 2)));
      for (size_t e = 0; e < xv.size(); ++e) xv[e] = static_cast<int64_t>(e * 37 % 251);
      const Tensor x = Tensor::from_vector(xv, {b, t, h, run + 2}, d).to_dtype(dt);
      auto at = [&](int64_t i, int64_t j, int64_t k, int64_t l) {
        return xv[static_cast<size_t>(((i * t + j) * h + k) * (run + 2) + l)];
      };
      for (int64_t start : {0, 1, 2}) {
        std::vector<int64_t> want;
        for (int64_t i = 0; i < b; ++i)
          for (int64_t k = 0; k < h; ++k)
            for (int64_t j = 0; j < t; ++j)
              for (int64_t l = start; l < start + run; ++l) want.push_back(at(i, j, k, l));
        const Tensor v = x.narrow(3, start, run).transpose(1, 2);
        EXPECT_EQ(vals(v.contiguous().to_dtype(DType::I64)), want) << "start " << start;
      }
      // The whole rows, permuted in three dims, and into a strided destination.
      std::vector<int64_t> want;
      for (int64_t k = 0; k < h; ++k)
        for (int64_t i = 0; i < b; ++i)
          for (int64_t j = 0; j < t; ++j)
            for (int64_t l = 0; l < run + 2; ++l) want.push_back(at(i, j, k, l));
      EXPECT_EQ(vals(x.permute({2, 0, 1, 3}).contiguous().to_dtype(DType::I64)), want) << "permute";
      Tensor dst = Tensor::zeros({h, b, t, run + 4}, dt, d);
      Tensor part = dst.narrow(3, 2, run + 2);
      part.copy_from(x.permute({2, 0, 1, 3}));
      EXPECT_EQ(vals(part.contiguous().to_dtype(DType::I64)), want) << "into a view";
      EXPECT_EQ(vals(dst.narrow(3, 0, 2).to_dtype(DType::I64)),
                std::vector<int64_t>(static_cast<size_t>(h * b * t * 2), 0));
    }
  }
}

// Permuted copies large enough that a CPU splits their runs across threads (Note [CPU copies of
// runs]): the attention head transpose [1, T, 32, 64] -> [1, 32, T, 64] of 512 KB of bf16, and of
// f32 with T = 131, whose runs do not divide evenly among the threads.
TEST_P(Views, LargePermutedCopiesOfRuns) {
  const Device d = GetParam();
  for (const auto& [dt, t] : {std::pair{DType::BF16, int64_t{128}}, std::pair{DType::F32, int64_t{131}}}) {
    SCOPED_TRACE(dtype_name(dt));
    const int64_t h = 32, e = 64;
    std::vector<int64_t> xv(static_cast<size_t>(t * h * e));
    for (size_t k = 0; k < xv.size(); ++k) xv[k] = static_cast<int64_t>(k * 37 % 251);
    const Tensor x = Tensor::from_vector(xv, {1, t, h, e}, d).to_dtype(dt);
    std::vector<int64_t> want;
    for (int64_t k = 0; k < h; ++k)
      for (int64_t j = 0; j < t; ++j)
        for (int64_t l = 0; l < e; ++l) want.push_back(xv[static_cast<size_t>((j * h + k) * e + l)]);
    EXPECT_EQ(vals(x.transpose(1, 2).contiguous().to_dtype(DType::I64)), want);
  }
}

TEST_P(Views, TypedErrors) {
  const Device d = GetParam();
  const Tensor x = Tensor::zeros({2, 3, 4}, DType::F32, d);
  const std::string xs = "[2, 3, 4] f32 " + d.location();
  expect_error<ShapeError>([&] { (void)x.reshape({5, -1}); }, {"[reshape]", xs, "[5, -1]"});
  expect_error<ShapeError>([&] { (void)x.reshape({-1, -1}); }, {"[reshape]", "more than one -1"});
  expect_error<ShapeError>([&] { (void)x.reshape({2, 3, 5}); }, {"[reshape]", xs});
  expect_error<ShapeError>([&] { (void)x.reshape({-2, 12}); }, {"[reshape]", "negative"});
  expect_error<ShapeError>([&] { (void)x.narrow(1, 2, 2); }, {"[narrow]", "[2, 3, 4]", "start 2"});
  expect_error<ShapeError>([&] { (void)x.narrow(1, -1, 1); }, {"[narrow]"});
  expect_error<ShapeError>([&] { (void)x.narrow(1, 1, INT64_MAX); }, {"[narrow]"});
  expect_error<ShapeError>([&] { (void)x.narrow(3, 0, 1); }, {"[narrow]", "dim 3", xs});
  expect_error<ShapeError>([&] { (void)x.transpose(0, -4); }, {"[transpose]", "dim -4", xs});
  expect_error<ShapeError>([&] { (void)Tensor::zeros({3}, DType::F32, d).t(); }, {"[transpose]", "[3] f32"});
  expect_error<ShapeError>([&] { (void)x.permute({0, 1}); }, {"[permute]", "[0, 1]", "[2, 3, 4]"});
  expect_error<ShapeError>([&] { (void)x.permute({0, 1, 1}); }, {"[permute]", "repeats"});
  expect_error<ShapeError>([&] { (void)x.permute({0, 1, 3}); }, {"[permute]"});
  expect_error<ShapeError>([&] { (void)x.squeeze(1); }, {"[squeeze]", "[2, 3, 4]", "not of size 1"});
  expect_error<ShapeError>([&] { (void)x.squeeze(-4); }, {"[squeeze]", xs});
  expect_error<ShapeError>([&] { (void)x.unsqueeze(4); }, {"[unsqueeze]", xs});
  expect_error<ShapeError>([&] { (void)x.broadcast_as({2, 5, 4}); }, {"[broadcast_as]", "[2, 3, 4]", "[2, 5, 4]"});
  expect_error<ShapeError>([&] { (void)x.broadcast_as({3, 4}); }, {"[broadcast_as]", "lower rank"});
  expect_error<ShapeError>([&] { (void)x.select(1, 0).broadcast_as({1, -1, 4}); }, {"[broadcast_as]", "negative"});
  expect_error<ShapeError>([&] { (void)x.expand({-1, 2, 3, 4}); }, {"[expand]", xs});
  expect_error<IndexError>([&] { (void)x.select(1, 3); }, {"[select]", "index 3", xs});
  expect_error<IndexError>([&] { (void)x.select(1, -4); }, {"[select]", "index -4", xs});
  expect_error<ShapeError>([&] { (void)x.select(5, 0); }, {"[select]", "dim 5", xs});
  expect_error<ShapeError>([&] { (void)x.dim(3); }, {"[dim]", xs});
  // A failed view leaves the tensor as it was.
  EXPECT_EQ(x.shape(), (Shape{2, 3, 4}));
}

WICK_INSTANTIATE_DEVICES(Views);

}  // namespace
}  // namespace wick
