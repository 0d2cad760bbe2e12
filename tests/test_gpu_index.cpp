// GPU-specific behaviour of the index, pool and rope kernels that the conformance cases do not
// reach: atomic adds on repeated targets for every dtype (the sub-word compare-and-swap of the
// 1- and 2-byte types included), plans of more than 8 dims (the sliced launches), the first-bad-id
// rule of the id check with many bad ids, and offsets past 2^31. Each test compares with the CPU
// backend and skips when no GPU is present.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "test_util.h"
#include "wick/error.h"
#include "wick/memory.h"
#include "wick/tensor.h"

namespace {

using wick::Device;
using wick::DType;
using wick::Shape;
using wick::Tensor;

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.to(Device::cpu()).contiguous();
  std::vector<unsigned char> b(static_cast<size_t>(c.numel() * wick::dtype_size(c.dtype())));
  c.to_host(b.data(), static_cast<int64_t>(b.size()));
  return b;
}

// Small integers as `dtype`, so that sums are exact in every dtype whatever the order of the adds.
Tensor small_ints(const Shape& shape, DType dtype, int64_t period) {
  const int64_t n = shape.numel();
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i % period);
  return Tensor::from_vector(v, shape).to_dtype(dtype);
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const wick::IndexError& e) {
    return e.what();
  }
  return "no IndexError";
}

TEST(GpuIndex, AddsToRepeatedTargetsMatchCpuForEveryDType) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    for (DType t : wick::kAllDTypes) {
      SCOPED_TRACE(std::string(wick::dtype_name(t)));
      // 200 source rows onto 3 target rows: neighbouring 1- and 2-byte elements of one word are
      // updated by different threads at once.
      const Tensor dst = small_ints({3, 5}, t, 3);
      const Tensor src = small_ints({200, 5}, t, 2);
      std::vector<int64_t> idv(200 * 5);
      for (size_t i = 0; i < idv.size(); ++i) idv[i] = static_cast<int64_t>((i * 7 + i / 5) % 3);
      const Tensor ids = Tensor::from_vector(idv, {200, 5});
      const Tensor want = dst.scatter_add(ids, src, 0);
      EXPECT_EQ(bytes_of(dst.to(d).scatter_add(ids.to(d), src.to(d), 0)), bytes_of(want));

      std::vector<uint32_t> rows(200);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint32_t>(i % 3);
      const Tensor rid = Tensor::from_vector(rows, {200});
      EXPECT_EQ(bytes_of(dst.to(d).index_add(rid.to(d), src.to(d), 0)), bytes_of(dst.index_add(rid, src, 0)));
      // Along the last dim with a transposed source: targets inside one row.
      const Tensor srct = small_ints({5, 200}, t, 2).t();  // [200, 5] view, strides (1, 200)
      const Tensor dstt = small_ints({200, 3}, t, 3);
      std::vector<int64_t> cols(5);
      for (size_t i = 0; i < cols.size(); ++i) cols[i] = static_cast<int64_t>(i % 2);
      const Tensor cid = Tensor::from_vector(cols, {5});
      EXPECT_EQ(bytes_of(dstt.to(d).index_add(cid.to(d), srct.to(d), 1)), bytes_of(dstt.index_add(cid, srct, 1)));
    }
  }
}

TEST(GpuIndex, MoreThanEightDimsMatchCpu) {
  WICK_REQUIRE_GPU(devs);
  // A rank-10 view whose dims cannot be merged: the launches are sliced over the outer dims.
  const Shape s{2, 3, 2, 2, 3, 2, 2, 2, 3, 2};
  wick::Dims rev(s.size());
  for (size_t i = 0; i < s.size(); ++i) rev[i] = static_cast<int64_t>(s.size() - 1 - i);
  const Tensor base = small_ints(s, DType::F32, 97);
  const Tensor x = base.permute(rev);  // strides increasing inwards
  // ids[j, ...] = 1 - j along dim 0 (size 2): no repeated targets, so scatter is deterministic.
  std::vector<int64_t> idv(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < idv.size(); ++i) idv[i] = 1 - static_cast<int64_t>(i / (idv.size() / 2));
  // The same strides as x, on the CPU and on the device.
  auto like_x = [&](const Tensor& t) { return t.permute(rev).contiguous().permute(rev); };
  const Tensor ids = like_x(Tensor::from_vector(idv, x.shape()));
  for (const Device& d : devs) {
    const Tensor xd = like_x(x.to(d));
    const Tensor idd = like_x(ids.to(d));
    EXPECT_EQ(bytes_of(xd.gather(idd, 0)), bytes_of(x.gather(ids, 0)));
    EXPECT_EQ(bytes_of(xd.scatter(idd, xd, 0)), bytes_of(x.scatter(ids, x, 0)));
    EXPECT_EQ(bytes_of(xd.scatter_add(idd, xd, 0)), bytes_of(x.scatter_add(ids, x, 0)));
    const Tensor sel = Tensor::from_vector(std::vector<int64_t>{1, 0, 1}, {3});
    EXPECT_EQ(bytes_of(xd.index_select(sel.to(d), 4)), bytes_of(x.index_select(sel, 4)));
    // rope over 9 leading dims: T = 3, D = 2.
    const Tensor cs = small_ints({3, 1}, DType::F32, 3);
    EXPECT_EQ(bytes_of(wick::rope(xd, cs.to(d), cs.to(d))), bytes_of(wick::rope(x, cs, cs)));
  }
}

TEST(GpuIndex, FirstBadIdIsTheFirstInRowMajorOrder) {
  WICK_REQUIRE_GPU(devs);
  const Tensor x = small_ints({4, 300}, DType::F32, 11);
  // Many bad ids; through a transposed view, the first in row-major order is not the first in memory.
  std::vector<int64_t> idv(300 * 4, 0);
  for (size_t i = 0; i < idv.size(); ++i)
    if (i % 7 == 3) idv[i] = 4 + static_cast<int64_t>(i);
  const Tensor ids = Tensor::from_vector(idv, {300, 4}).t();  // [4, 300]
  const std::string cpu = message_of([&] { (void)x.gather(ids, 0); });
  ASSERT_NE(cpu, "no IndexError");
  for (const Device& d : devs) {
    const Tensor xd = x.to(d);
    const Tensor idd = Tensor::from_vector(idv, {300, 4}).to(d).t();
    const std::string want = cpu.substr(0, cpu.rfind("(cpu)")) + "(" + d.location() + ")";
    EXPECT_EQ(message_of([&] { (void)xd.gather(idd, 0); }), want);
    const std::string want_add = "[scatter_add]" + want.substr(std::string("[gather]").size());
    EXPECT_EQ(message_of([&] { (void)xd.scatter_add(idd, xd, 0); }), want_add);
  }
}

TEST(GpuIndex, OffsetsPast2To31) {
  WICK_REQUIRE_GPU(devs);
  for (const Device& d : devs) {
    wick::empty_cache(d);
    const int64_t n = (int64_t{1} << 30) + 7;  // 2 rows: 2^31 + 14 bytes
    // Zeros with distinct bytes in the windows read back below.
    Tensor src = Tensor::zeros({2, n}, DType::U8, d);
    for (int64_t at : {int64_t{0}, n - 9, (int64_t{1} << 30) - 3})
      for (int64_t r = 0; r < 2; ++r)
        src.narrow(1, at, 9).select(0, r).copy_from(Tensor::arange(1 + 20 * r, 10 + 20 * r, 1, DType::U8, d));
    const Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 0, 1}, {3}).to(d);
    const Tensor out = src.index_select(ids, 0);  // [3, n]
    for (int64_t at : {int64_t{0}, n - 9, (int64_t{1} << 30) - 3}) {
      EXPECT_EQ(bytes_of(out.narrow(1, at, 9).select(0, 0)), bytes_of(src.narrow(1, at, 9).select(0, 1)));
      EXPECT_EQ(bytes_of(out.narrow(1, at, 9).select(0, 1)), bytes_of(src.narrow(1, at, 9).select(0, 0)));
      EXPECT_EQ(bytes_of(out.narrow(1, at, 9).select(0, 2)), bytes_of(src.narrow(1, at, 9).select(0, 1)));
    }
    // A gather along the long dim reading near its end.
    const Tensor gid = Tensor::from_vector(std::vector<int64_t>{n - 1, n - 2, 5}, {1, 3}).to(d);
    const std::vector<unsigned char> g = bytes_of(src.gather(gid, 1));
    const std::vector<unsigned char> tail = bytes_of(src.narrow(1, n - 2, 2).select(0, 0));
    ASSERT_EQ(g.size(), 3u);
    EXPECT_EQ(g[0], tail[1]);
    EXPECT_EQ(g[1], tail[0]);
  }
}

// The shared-memory row path of gather / index_select along the last dim (Note [GPU gather rows]):
// enough rows to qualify on any GPU, a source row that starts off a 16-byte boundary and whose
// length is not a multiple of 16 bytes (the staged copy's head and tail), ids contiguous and through
// a transposed view, every dtype, and a bad id found by the row kernel.
TEST(GpuIndex, GatherRowsMatchCpu) {
  WICK_REQUIRE_GPU(devs);
  const int64_t rows = 700, len = 999, cols = 1500;
  std::vector<int64_t> idv(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < idv.size(); ++i) idv[i] = static_cast<int64_t>((i * 7919 + i / 13) % len);
  const Tensor ids = Tensor::from_vector(idv, {rows, cols});
  const Tensor ids_t = Tensor::from_vector(idv, {cols, rows}).to_dtype(DType::U32).t();  // last-dim stride 700
  std::vector<int64_t> sel(800);
  for (size_t i = 0; i < sel.size(); ++i) sel[i] = static_cast<int64_t>((i * 31) % len);
  const Tensor sel_ids = Tensor::from_vector(sel, {800});
  for (const Device& d : devs) {
    for (DType t : wick::kAllDTypes) {
      SCOPED_TRACE(std::string(wick::dtype_name(t)) + " on " + d.location());
      const Tensor x = small_ints({rows, len + 2}, t, 97).narrow(1, 1, len);  // rows start 1 element in
      Tensor xs = Tensor::empty({rows, len + 2}, t, d).narrow(1, 1, len);
      xs.copy_from(x.to(d));
      EXPECT_EQ(bytes_of(xs.gather(ids.to(d), 1)), bytes_of(x.gather(ids, 1)));
      EXPECT_EQ(bytes_of(xs.gather(ids_t.to(d), 1)), bytes_of(x.gather(ids_t, 1)));
      EXPECT_EQ(bytes_of(xs.index_select(sel_ids.to(d), 1)), bytes_of(x.index_select(sel_ids, 1)));
    }
    std::vector<int64_t> bad = idv;
    bad[static_cast<size_t>(rows * cols / 2 + 5)] = len;
    bad[static_cast<size_t>(rows * cols - 1)] = -1;
    const Tensor x = small_ints({rows, len}, DType::F32, 97);
    const Tensor bid = Tensor::from_vector(bad, {rows, cols});
    const std::string cpu = message_of([&] { (void)x.gather(bid, 1); });
    ASSERT_NE(cpu, "no IndexError");
    const std::string want = cpu.substr(0, cpu.rfind("(cpu)")) + "(" + d.location() + ")";
    EXPECT_EQ(message_of([&] { (void)x.to(d).gather(bid.to(d), 1); }), want);
    std::vector<int64_t> bad_sel = sel;
    bad_sel[400] = len + 3;
    const Tensor bsel = Tensor::from_vector(bad_sel, {800});
    const std::string cpu_sel = message_of([&] { (void)x.index_select(bsel, 1); });
    ASSERT_NE(cpu_sel, "no IndexError");
    EXPECT_EQ(message_of([&] { (void)x.to(d).index_select(bsel.to(d), 1); }),
              cpu_sel.substr(0, cpu_sel.rfind("(cpu)")) + "(" + d.location() + ")");
  }
}

// Gathers of whole contiguous runs with one id each (Note [GPU gather runs]): rows picked along
// dim 0 (widened to 16-byte moves, and not: 515 elements), along a middle dim, and a repeated and
// a bad id.
TEST(GpuIndex, GatherRunsMatchCpu) {
  WICK_REQUIRE_GPU(devs);
  std::vector<int64_t> pick(300);
  for (size_t i = 0; i < pick.size(); ++i) pick[i] = static_cast<int64_t>((i * 37 + 5) % 40);
  const Tensor ids = Tensor::from_vector(pick, {300});
  for (const Device& d : devs) {
    for (DType t : wick::kAllDTypes) {
      SCOPED_TRACE(std::string(wick::dtype_name(t)) + " on " + d.location());
      for (const Shape& s : {Shape{40, 1024}, Shape{40, 515}}) {
        const Tensor x = small_ints(s, t, 89);
        EXPECT_EQ(bytes_of(x.to(d).index_select(ids.to(d), 0)), bytes_of(x.index_select(ids, 0)));
      }
      const Tensor x3 = small_ints({3, 40, 256}, t, 89);
      EXPECT_EQ(bytes_of(x3.to(d).index_select(ids.to(d), 1)), bytes_of(x3.index_select(ids, 1)));
    }
    std::vector<int64_t> bad = pick;
    bad[123] = 40;
    const Tensor bid = Tensor::from_vector(bad, {300});
    const Tensor x = small_ints({40, 1024}, DType::BF16, 89);
    const std::string cpu = message_of([&] { (void)x.index_select(bid, 0); });
    ASSERT_NE(cpu, "no IndexError");
    EXPECT_EQ(message_of([&] { (void)x.to(d).index_select(bid.to(d), 0); }),
              cpu.substr(0, cpu.rfind("(cpu)")) + "(" + d.location() + ")");
  }
}

// rope and rope_i on 16-byte vectors of pairs (Note [GPU rope vectors]) and on the element path
// where a layout rules vectors out: every float dtype, views made on each device, against the
// CPU's bytes (small integers, so the products are exact on both sides).
TEST(GpuIndex, RopeVectorsAndTheirFallbacksMatchCpu) {
  WICK_REQUIRE_GPU(devs);
  using View = std::function<Tensor(const Tensor&)>;
  const View as_is = [](const Tensor& t) { return t; };
  for (const Device& d : devs) {
    for (DType t : wick::kAllDTypes) {
      if (!wick::is_float(t)) continue;
      SCOPED_TRACE(std::string(wick::dtype_name(t)) + " on " + d.location());
      // x and the tables as made, then viewed by vx and vt on each device.
      auto expect_rope = [&](const Shape& xs, const View& vx, const Shape& ts, const View& vt, const char* what) {
        SCOPED_TRACE(what);
        const Tensor x = small_ints(xs, t, 7), cs = small_ints(ts, t, 3), sn = small_ints(ts, t, 5);
        const Tensor xd = vx(x.to(d)), cd = vt(cs.to(d)), sd = vt(sn.to(d));
        EXPECT_EQ(bytes_of(wick::rope(xd, cd, sd)), bytes_of(wick::rope(vx(x), vt(cs), vt(sn))));
        EXPECT_EQ(bytes_of(wick::rope_i(xd, cd, sd)), bytes_of(wick::rope_i(vx(x), vt(cs), vt(sn))));
      };
      expect_rope({2, 3, 17, 64}, as_is, {17, 32}, as_is, "contiguous");
      expect_rope(
          {2, 17, 3, 64}, [](const Tensor& x) { return x.transpose(1, 2); }, {17, 32}, as_is,
          "heads and positions swapped");
      expect_rope(
          {2, 3, 17, 65}, [](const Tensor& x) { return x.narrow(3, 1, 64); }, {17, 32}, as_is,
          "rows one element off alignment");
      expect_rope(
          {2, 3, 17, 64}, as_is, {17, 64}, [](const Tensor& c) { return c.narrow(1, 32, 32); },
          "tables cut from wider ones");
      expect_rope(
          {2, 3, 17, 64}, as_is, {17, 64}, [](const Tensor& c) { return c.narrow(1, 1, 32); },
          "tables one element off alignment");
      expect_rope(
          {2, 3, 17, 64}, as_is, {32, 17}, [](const Tensor& c) { return c.t(); }, "tables transposed");
      expect_rope({5, 24}, as_is, {5, 12}, as_is, "12 pairs a row");
    }
  }
}

// index_select's id check in the gather's first blocks, posted to pinned host memory (Note [GPU
// index kernels]): 40000 ids in 64 slices of 625, ids strided (every other element of a buffer),
// rows moved as short runs (the flat kernel) and long ones (the run kernel), for each id dtype.
// A bad id in the first, a middle and the last slice, at slice edges, and two bad ids at once:
// the message names the first in order, as the CPU's does; with none, the bytes match the CPU's.
TEST(GpuIndex, PostedIdCheckFindsTheFirstBadIdInAnySlice) {
  WICK_REQUIRE_GPU(devs);
  const int64_t n = 40000, rows = 64;
  std::vector<int64_t> good(static_cast<size_t>(2 * n));
  for (size_t i = 0; i < good.size(); ++i) good[i] = static_cast<int64_t>((i * 2654435761u) % rows);
  const auto ids_of = [&](const std::vector<int64_t>& v, DType t, const Device& on) {
    return Tensor::from_vector(v, {n, 2}).to_dtype(t).to(on).select(1, 0);  // stride 2 (to() makes contiguous)
  };
  const std::vector<std::vector<int64_t>> bad_at = {{0}, {624}, {625}, {20000}, {n - 1}, {30001, 1250}};
  for (const Device& d : devs) {
    for (const Shape& s : {Shape{rows, 8}, Shape{rows, 256}}) {
      const Tensor x = small_ints(s, DType::F32, 251);
      const Tensor xd = x.to(d);
      for (DType t : {DType::I64, DType::U32, DType::U8}) {
        SCOPED_TRACE(std::string(wick::dtype_name(t)) + " ids, rows of " + std::to_string(s[1]) + " on " +
                     d.location());
        const Tensor ids = ids_of(good, t, d);
        ASSERT_EQ(ids.strides()[0], 2);
        EXPECT_EQ(bytes_of(xd.index_select(ids, 0)), bytes_of(x.index_select(ids_of(good, t, Device::cpu()), 0)));
        for (const std::vector<int64_t>& at : bad_at) {
          std::vector<int64_t> v = good;
          int64_t value = rows + 1;
          for (int64_t pos : at) v[static_cast<size_t>(2 * pos)] = value++;
          const Tensor bid = ids_of(v, t, d);
          const std::string cpu = message_of([&] { (void)x.index_select(ids_of(v, t, Device::cpu()), 0); });
          ASSERT_NE(cpu, "no IndexError");
          EXPECT_EQ(message_of([&] { (void)xd.index_select(bid, 0); }),
                    cpu.substr(0, cpu.rfind("(cpu)")) + "(" + d.location() + ")");
        }
        if (t == DType::I64) {
          std::vector<int64_t> v = good;
          v[2 * 777] = -3;
          const Tensor bid = ids_of(v, t, d);
          EXPECT_EQ(message_of([&] { (void)xd.index_select(bid, 0); }),
                    "[index_select] index -3 out of range for dim 0 of size 64 (" + d.location() + ")");
        }
      }
    }
  }
}

}  // namespace
