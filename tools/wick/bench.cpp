// `wick bench`: op timings on the shapes PyTorch was measured on (/work/shared/ANCHORS.md).
//
// bench/peers/torch_bench.py times the same rows with PyTorch and bench/peers/compare.py joins the
// two on the row key (op, shape, dtype): keep those strings identical in both files.
//
// Method, per row: build the inputs (random, never zeros: zero pages and constant data flatter
// some kernels), run once per input set as warm-up, then `reps` timed runs, report the median.
// When one run's inputs fit in a 50 MB L2-sized budget, several input sets are made and the runs
// rotate among them, so that a run does not find its inputs already in cache. An op that throws
// UnsupportedError (not written yet on this backend) becomes an "unsupported" row; any other error
// becomes an "error" row; the run goes on either way.
//
// Rates: memory-bound rows count the bytes the op must read plus write once (GB/s); matmul, bmm
// and conv rows count 2*M*N*K flops (TFLOP/s). The floor is the time at the device's copy
// bandwidth (3.0 TB/s on a GPU unless --bw; on the CPU the copy row's own bandwidth) or at the
// tensor-core / FP32 peak of the GPUs we know.
#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bench_rows.h"
#include "wick/tensor.h"
#include "wick/timing.h"

namespace wick::tool {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kL2Budget = 50e6;  // bytes; the largest L2 of the GPUs benchmarked
constexpr double kGpuCopyGBs = 3000.0;

// Note [Bench timer]: every timed run goes through Timer. On a GPU it reads device events
// (cudaEvent / hipEvent, through wick::DeviceTimer), as the torch peer reads CUDA events; on the
// CPU a steady clock after synchronising. timer_name() says which in the JSON and the table.
// On a GPU each run starts behind a lead: row sums over 256 MB queued just before the start event,
// which keep the device busy while the host queues the run's kernels. The events then time the
// device's work, not the host's: without the lead an idle device waited for the host at every run,
// and short kernels measured mostly launch time. The lead only reads, so it leaves no dirty lines
// in L2 for the run's own traffic to write back. The host's cost per op has its own row
// (host_overhead), whose runs outlast any lead. The torch peer queues the same lead.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start() = 0;
  virtual double stop_ms() = 0;  // since start(), the device's queued work included
};

// Device events on GPUs (as the torch peer's CUDA events), a steady clock on the CPU.
class EventTimer final : public Timer {
 public:
  explicit EventTimer(const Device& d) : t_(d) {
    if (d.is_gpu()) lead_ = Tensor::full({64, kLeadRow}, 1.0, DType::F32, d);
  }
  void start() override {
    if (lead_.defined()) (void)lead_.sum({-1});
    t_.start();
  }
  double stop_ms() override { return t_.stop_ms(); }

 private:
  static constexpr int64_t kLeadRow = int64_t{1} << 20;  // 64 rows of 4 MB: 256 MB of f32
  DeviceTimer t_;
  Tensor lead_;
};

std::unique_ptr<Timer> make_timer(const Device& d) { return std::make_unique<EventTimer>(d); }
const char* timer_name(const Device& d) { return d.is_gpu() ? "device events" : "synchronize+steady_clock"; }

// The sizes of one shape set. Full = ANCHORS.md's GPU shapes; Cpu = about 16x smaller for the
// memory-bound rows and matmul 2048^3; Quick = tiny, for the smoke test.
struct Sizes {
  const char* name;
  int64_t n;               // flat elementwise rows
  int64_t bm, bn;          // broadcast mul [bm, bn] * [bn]
  int64_t tr;              // transpose-copy [tr, tr]
  int64_t rr, rc;          // reductions, softmax, cumsum, gather [rr, rc]
  int64_t nr, nc;          // rms_norm, layer_norm [nr, nc]
  int64_t sr, sc;          // sort [sr, sc]
  int64_t ir, ic, ik;      // index_select: table [ir, ic], ik ids
  int64_t mm16, mm32;      // matmul sides: bf16/f16, f32
  int64_t bb, bmn, bk;     // bmm: bb x ([bmn, bk] @ [bk, bmn])
  int64_t mvm, mvk;        // matvec [mvm, mvk] @ [mvk]
  int64_t c1n, c1c, c1l;   // conv1d N, C (in = out), L; k3 p1
  int64_t c2n, c2c, c2hw;  // conv2d / conv_transpose2d / pool / upsample N, C, H = W
  int64_t chain;           // host overhead: ops per run
};

constexpr Sizes kFull{.name = "gpu",
                      .n = int64_t{1} << 28,
                      .bm = 4096,
                      .bn = 65536,
                      .tr = 16384,
                      .rr = 8192,
                      .rc = 32768,
                      .nr = 32768,
                      .nc = 8192,
                      .sr = 4096,
                      .sc = 32768,
                      .ir = 128256,
                      .ic = 4096,
                      .ik = 8192,
                      .mm16 = 8192,
                      .mm32 = 4096,
                      .bb = 64,
                      .bmn = 1024,
                      .bk = 128,
                      .mvm = 14336,
                      .mvk = 4096,
                      .c1n = 32,
                      .c1c = 256,
                      .c1l = 4096,
                      .c2n = 32,
                      .c2c = 64,
                      .c2hw = 56,
                      .chain = 1000};
constexpr Sizes kCpu{.name = "cpu",
                     .n = int64_t{1} << 24,
                     .bm = 1024,
                     .bn = 16384,
                     .tr = 4096,
                     .rr = 2048,
                     .rc = 8192,
                     .nr = 8192,
                     .nc = 2048,
                     .sr = 1024,
                     .sc = 8192,
                     .ir = 32064,
                     .ic = 1024,
                     .ik = 2048,
                     .mm16 = 2048,
                     .mm32 = 2048,
                     .bb = 4,
                     .bmn = 1024,
                     .bk = 128,
                     .mvm = 3584,
                     .mvk = 1024,
                     .c1n = 2,
                     .c1c = 256,
                     .c1l = 4096,
                     .c2n = 2,
                     .c2c = 64,
                     .c2hw = 56,
                     .chain = 1000};
constexpr Sizes kQuick{.name = "quick",
                       .n = int64_t{1} << 14,
                       .bm = 64,
                       .bn = 256,
                       .tr = 128,
                       .rr = 64,
                       .rc = 256,
                       .nr = 64,
                       .nc = 256,
                       .sr = 32,
                       .sc = 256,
                       .ir = 1000,
                       .ic = 64,
                       .ik = 64,
                       .mm16 = 64,
                       .mm32 = 64,
                       .bb = 2,
                       .bmn = 64,
                       .bk = 32,
                       .mvm = 256,
                       .mvk = 128,
                       .c1n = 1,
                       .c1c = 16,
                       .c1l = 64,
                       .c2n = 1,
                       .c2c = 8,
                       .c2hw = 16,
                       .chain = 100};

constexpr int64_t kLinearTokens = 16;  // rows of x in the linear row, in every shape set

struct Result {
  std::string status = "ok", message;
  double ms = kNaN, rate = kNaN, floor_ms = kNaN;
  std::string unit;
  int runs = 0, sets = 0;
};

// The rows, in report order. Keys must match bench/peers/torch_bench.py.
std::vector<Spec> make_specs(const Sizes& z) {
  using D = DType;
  std::vector<Spec> v;
  auto row = [&](auto&&... a) { add_row(v, std::forward<decltype(a)>(a)...); };
  const int64_t n = z.n;
  const double fn = static_cast<double>(n);
  const std::string ns = std::to_string(n);

  row("copy", ns, "f32", 8 * fn, 0, 4 * fn, [=](const Device& d) {
    Tensor x = rnd({n}, D::F32, d);
    return Run([x] { (void)x.clone(); });
  });
  row("fill", ns, "f32", 4 * fn, 0, 0, [=](const Device& d) {
    Tensor y = Tensor::empty({n}, D::F32, d);
    return Run([y]() mutable { y.const_set(1.5); });
  });
  for (D dt : {D::F32, D::BF16}) {
    row("add", ns, std::string(dtype_name(dt)), 3 * fn * sz(dt), 0, 2 * fn * sz(dt), [=](const Device& d) {
      Tensor a = rnd({n}, dt, d), b = rnd({n}, dt, d);
      return Run([a, b] { (void)a.add(b); });
    });
  }
  {
    const double big = static_cast<double>(z.bm * z.bn), small = static_cast<double>(z.bn);
    row("mul_bcast", dims({z.bm, z.bn}) + " * " + std::to_string(z.bn), "f32", 4 * (2 * big + small), 0,
        4 * (big + small), [=](const Device& d) {
          Tensor a = rnd({z.bm, z.bn}, D::F32, d), b = rnd({z.bn}, D::F32, d);
          return Run([a, b] { (void)a.mul(b); });
        });
  }
  row("exp", ns, "f32", 8 * fn, 0, 4 * fn, [=](const Device& d) {
    Tensor x = rnd({n}, D::F32, d);
    return Run([x] { (void)x.exp(); });
  });
  row("gelu", ns, "f32", 8 * fn, 0, 4 * fn, [=](const Device& d) {
    Tensor x = rnd({n}, D::F32, d);
    return Run([x] { (void)x.gelu(); });
  });
  row("affine", ns, "f32", 8 * fn, 0, 4 * fn, [=](const Device& d) {
    Tensor x = rnd({n}, D::F32, d);
    return Run([x] { (void)x.affine(1.5, 0.5); });
  });
  for (D dt : {D::BF16, D::F16}) {
    row("cast", ns, "f32->" + std::string(dtype_name(dt)), fn * (4 + sz(dt)), 0, 4 * fn, [=](const Device& d) {
      Tensor x = rnd({n}, D::F32, d);
      return Run([x, dt] { (void)x.to_dtype(dt); });
    });
  }
  row("where", ns, "f32", 13 * fn, 0, 9 * fn, [=](const Device& d) {
    // u8 condition, about half true (a f32 in [0, 2) cast to u8 gives 0, 1 or 2).
    Tensor c = rnd({n}, D::F32, d, 0.0, 2.0).to_dtype(D::U8);
    Tensor a = rnd({n}, D::F32, d), b = rnd({n}, D::F32, d);
    return Run([c, a, b] { (void)c.where_cond(a, b); });
  });
  {
    const double e = static_cast<double>(z.tr * z.tr);
    row("transpose_copy", dims({z.tr, z.tr}), "f32", 8 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.tr, z.tr}, D::F32, d);
      return Run([x] { (void)x.t().contiguous(); });
    });
  }
  {
    const double e = static_cast<double>(z.rr * z.rc), r = static_cast<double>(z.rr), c = static_cast<double>(z.rc);
    const std::string last = dims({z.rr, z.rc}) + " dim -1";
    row("sum", last, "f32", 4 * e + 4 * r, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.sum({1}); });
    });
    row("max", last, "f32", 4 * e + 4 * r, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.max({1}); });
    });
    row("argmax", last, "f32", 4 * e + 8 * r, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.argmax({1}); });
    });
    row("sum", dims({z.rr, z.rc}) + " dim 0", "f32", 4 * e + 4 * c, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.sum({0}); });
    });
    row("softmax", last, "f32", 8 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.softmax(-1); });
    });
  }
  {
    const double e = static_cast<double>(z.nr * z.nc), c = static_cast<double>(z.nc);
    row("rms_norm", dims({z.nr, z.nc}), "f32", 8 * e + 4 * c, 0, 4 * (e + c), [=](const Device& d) {
      Tensor x = rnd({z.nr, z.nc}, D::F32, d), w = rnd({z.nc}, D::F32, d, 0.5, 1.5);
      return Run([x, w] { (void)x.rms_norm(w, 1e-5); });
    });
    row("layer_norm", dims({z.nr, z.nc}), "f32", 8 * e + 8 * c, 0, 4 * (e + 2 * c), [=](const Device& d) {
      Tensor x = rnd({z.nr, z.nc}, D::F32, d), w = rnd({z.nc}, D::F32, d, 0.5, 1.5), b = rnd({z.nc}, D::F32, d);
      return Run([x, w, b] { (void)x.layer_norm(w, b, 1e-5); });
    });
  }
  {
    const double e = static_cast<double>(z.rr * z.rc);
    row("cumsum", dims({z.rr, z.rc}) + " dim -1", "f32", 8 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      return Run([x] { (void)x.cumsum(-1); });
    });
  }
  {
    // Sort writes values and i64 indices: 4 + 4 + 8 bytes per element.
    const double e = static_cast<double>(z.sr * z.sc);
    row("sort", dims({z.sr, z.sc}) + " dim -1", "f32", 16 * e, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({z.sr, z.sc}, D::F32, d);
      return Run([x] { (void)x.sort(-1); });
    });
  }
  {
    // Reads the picked rows (not the whole table), the ids, and writes the rows.
    const double rows = static_cast<double>(z.ik * z.ic);
    row("index_select", dims({z.ir, z.ic}) + " ids " + std::to_string(z.ik) + " dim 0", "bf16",
        4 * rows + 8 * static_cast<double>(z.ik), 0,
        2 * static_cast<double>(z.ir * z.ic) + 8 * static_cast<double>(z.ik), [=](const Device& d) {
          Tensor t = rnd({z.ir, z.ic}, D::BF16, d);
          Tensor i = ids({z.ik}, z.ir, d);
          return Run([t, i] { (void)t.index_select(i, 0); });
        });
  }
  {
    const double e = static_cast<double>(z.rr * z.rc);
    row("gather", dims({z.rr, z.rc}) + " dim -1", "f32", 16 * e, 0, 12 * e, [=](const Device& d) {
      Tensor x = rnd({z.rr, z.rc}, D::F32, d);
      Tensor i = ids({z.rr, z.rc}, z.rc, d);
      return Run([x, i] { (void)x.gather(i, 1); });
    });
  }
  row("rand", ns, "f32", 4 * fn, 0, 0,
      [=](const Device& d) { return Run([n, d] { (void)Tensor::rand_uniform({n}, D::F32, 0.0, 1.0, d); }); });
  row("randn", ns, "f32", 4 * fn, 0, 0,
      [=](const Device& d) { return Run([n, d] { (void)Tensor::rand_normal({n}, D::F32, 0.0, 1.0, d); }); });
  auto mm = [&](int64_t m, D dt) {
    const double fm = static_cast<double>(m);
    row(
        "matmul", dims({m, m, m}), std::string(dtype_name(dt)), 3 * fm * fm * sz(dt), 2 * fm * fm * fm,
        2 * fm * fm * sz(dt),
        [=](const Device& d) {
          Tensor a = rnd({m, m}, dt, d), b = rnd({m, m}, dt, d);
          return Run([a, b] { (void)a.matmul(b); });
        },
        dt);
  };
  mm(z.mm16, D::BF16);
  mm(z.mm16, D::F16);
  mm(z.mm32, D::F32);
  {
    const double b = static_cast<double>(z.bb), m = static_cast<double>(z.bmn), k = static_cast<double>(z.bk);
    row(
        "bmm", std::to_string(z.bb) + "x(" + dims({z.bmn, z.bk}) + " @ " + dims({z.bk, z.bmn}) + ")", "bf16",
        2 * b * (2 * m * k + m * m), 2 * b * m * m * k, 2 * b * 2 * m * k,
        [=](const Device& d) {
          Tensor x = rnd({z.bb, z.bmn, z.bk}, D::BF16, d), y = rnd({z.bb, z.bk, z.bmn}, D::BF16, d);
          return Run([x, y] { (void)x.matmul(y); });
        },
        D::BF16);
  }
  {
    const double m = static_cast<double>(z.mvm), k = static_cast<double>(z.mvk);
    row("matvec", dims({z.mvm, z.mvk}) + " @ " + std::to_string(z.mvk), "bf16", 2 * (m * k + k + m), 0, 2 * (m * k + k),
        [=](const Device& d) {
          Tensor w = rnd({z.mvm, z.mvk}, D::BF16, d), x = rnd({z.mvk}, D::BF16, d);
          return Run([w, x] { (void)w.matmul(x); });
        });
  }
  {
    // A linear layer on a few tokens, x @ W^T with W stored [out, in] as checkpoints hold it: the
    // matvec row's weight read once for kLinearTokens rows, so a GB/s row like matvec.
    const double m = static_cast<double>(z.mvm), k = static_cast<double>(z.mvk), t = kLinearTokens;
    row("linear", dims({kLinearTokens, z.mvk}) + " @ " + dims({z.mvm, z.mvk}) + "^T", "bf16",
        2 * (m * k + t * k + t * m), 0, 2 * (m * k + t * k), [=](const Device& d) {
          Tensor w = rnd({z.mvm, z.mvk}, D::BF16, d), x = rnd({kLinearTokens, z.mvk}, D::BF16, d);
          return Run([w, x] { (void)x.matmul(w.t()); });
        });
  }
  {
    const double nn = static_cast<double>(z.c1n), c = static_cast<double>(z.c1c), l = static_cast<double>(z.c1l);
    const std::string shape = "N" + std::to_string(z.c1n) + " C" + std::to_string(z.c1c) + "->" +
                              std::to_string(z.c1c) + " L" + std::to_string(z.c1l) + " k3 p1";
    row("conv1d", shape, "f32", 4 * (2 * nn * c * l + c * c * 3), 2 * nn * c * l * c * 3, 4 * (nn * c * l + c * c * 3),
        [=](const Device& d) {
          Tensor x = rnd({z.c1n, z.c1c, z.c1l}, D::F32, d), w = rnd({z.c1c, z.c1c, 3}, D::F32, d);
          Conv1dParams p;
          p.padding = 1;
          return Run([x, w, p] { (void)x.conv1d(w, p); });
        });
  }
  {
    const int64_t N = z.c2n, C = z.c2c, H = z.c2hw;
    const double e = static_cast<double>(N * C * H * H), wts = static_cast<double>(C * C * 9);
    const double flops = 2 * e * static_cast<double>(C) * 9;
    const std::string base = "N" + std::to_string(N) + " C" + std::to_string(C);
    const std::string cshape = base + "->" + std::to_string(C) + " " + dims({H, H}) + " k3 p1";
    Conv2dParams p;
    p.padding = {1, 1};
    for (D dt : {D::F32, D::BF16}) {
      row(
          "conv2d", cshape, std::string(dtype_name(dt)), sz(dt) * (2 * e + wts), flops, sz(dt) * (e + wts),
          [=](const Device& d) {
            Tensor x = rnd({N, C, H, H}, dt, d), w = rnd({C, C, 3, 3}, dt, d);
            return Run([x, w, p] { (void)x.conv2d(w, p); });
          },
          dt);
    }
    row("conv_transpose2d", cshape, "f32", 4 * (2 * e + wts), flops, 4 * (e + wts), [=](const Device& d) {
      Tensor x = rnd({N, C, H, H}, D::F32, d), w = rnd({C, C, 3, 3}, D::F32, d);
      return Run([x, w, p] { (void)x.conv_transpose2d(w, p); });
    });
    // The upsampling forms, H/2 -> H at stride 2: a 4x4 kernel, and a 3x3 one with output padding 1.
    for (const auto& [k, op] : {std::pair<int64_t, int64_t>{4, 0}, {3, 1}}) {
      const int64_t hh = H / 2;
      const double ein = static_cast<double>(N * C * hh * hh), wk = static_cast<double>(C * C * k * k);
      Conv2dParams pu;
      pu.stride = {2, 2};
      pu.padding = {1, 1};
      pu.output_padding = {op, op};
      const std::string shape = base + "->" + std::to_string(C) + " " + dims({hh, hh}) + " k" + std::to_string(k) +
                                " s2 p1" + (op > 0 ? " op" + std::to_string(op) : "");
      row("conv_transpose2d", shape, "f32", 4 * (ein + e + wk), 2 * ein * static_cast<double>(C * k * k),
          4 * (ein + wk), [=](const Device& d) {
            Tensor x = rnd({N, C, hh, hh}, D::F32, d), w = rnd({C, C, k, k}, D::F32, d);
            return Run([x, w, pu] { (void)x.conv_transpose2d(w, pu); });
          });
    }
    row("max_pool2d", base + " " + dims({H, H}) + " k2 s2", "f32", 4 * e * 1.25, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({N, C, H, H}, D::F32, d);
      return Run([x] { (void)x.max_pool2d(Pool2dParams{}); });
    });
    row("upsample_nearest2d", base + " " + dims({H, H}) + " x2", "f32", 4 * e * 5, 0, 4 * e, [=](const Device& d) {
      Tensor x = rnd({N, C, H, H}, D::F32, d);
      return Run([x, H] { (void)x.upsample_nearest2d(2 * H, 2 * H); });
    });
  }
  {
    const int64_t k = z.chain;
    row("host_overhead", std::to_string(k) + " x add [16]", "f32", 0, 0, 0, [=](const Device& d) {
      Tensor x = rnd({16}, D::F32, d);
      return Run([x, k] {
        Tensor y = x;
        for (int64_t i = 0; i < k; ++i) y = y.add(x);
      });
    });
    v.back().chain = k;
  }
  return v;
}

// Dense peaks of the GPUs we know (TFLOP/s, no sparsity; f32 = FP32 CUDA cores, tf32 off);
// NaN when unknown, which leaves the floor of flops rows empty.
double peak_tflops(const Device& d, const std::string& name, DType math) {
  if (!d.is_gpu()) return kNaN;
  const bool f32 = math == DType::F32;
  if (name.find("H100") != std::string::npos && name.find("PCIe") != std::string::npos) return f32 ? 51.2 : 756.0;
  if (name.find("H100") != std::string::npos || name.find("H200") != std::string::npos) return f32 ? 66.9 : 989.4;
  return kNaN;
}

Result measure(const Spec& s, const Device& d, int reps, Timer& timer) {
  Result r;
  try {
    int sets = 1;
    if (s.rotate > 0 && s.in_bytes > 0 && s.in_bytes < s.rotate)
      sets = std::clamp(static_cast<int>(std::ceil(s.rotate / s.in_bytes)), 2, 16);
    else if (s.rotate == 0 && s.in_bytes > 0 && s.in_bytes <= kL2Budget)
      sets = std::clamp(static_cast<int>(std::ceil(2 * kL2Budget / s.in_bytes)), 2, 16);
    std::vector<Run> runs;
    for (int i = 0; i < sets; ++i) runs.push_back(s.make(d));
    for (int i = 0; i < std::max(sets, 2); ++i) runs[static_cast<size_t>(i % sets)]();
    d.synchronize();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      const Run& run = runs[static_cast<size_t>(i % sets)];
      timer.start();
      run();
      t.push_back(timer.stop_ms());
    }
    std::sort(t.begin(), t.end());
    const size_t h = t.size() / 2;
    r.ms = t.size() % 2 ? t[h] : 0.5 * (t[h - 1] + t[h]);
    r.runs = reps;
    r.sets = sets;
  } catch (const UnsupportedError& e) {
    r.status = "unsupported";
    r.message = e.what();
  } catch (const std::exception& e) {
    r.status = "error";
    r.message = e.what();
  }
  return r;
}

// Fills rate, unit and floor. `bw_gbs` is NaN while no bandwidth is known (CPU before the copy row).
void finish(const Spec& s, Result& r, double bw_gbs, double peak) {
  if (s.chain > 0) {
    r.unit = "us/op";
  } else if (s.flops > 0) {
    r.unit = "TFLOP/s";
    r.floor_ms = s.flops / (peak * 1e12) * 1e3;
  } else {
    r.unit = "GB/s";
    r.floor_ms = s.bytes / (bw_gbs * 1e9) * 1e3;
  }
  if (r.status != "ok" || !(r.ms > 0)) return;
  if (s.chain > 0)
    r.rate = r.ms * 1e3 / static_cast<double>(s.chain);
  else if (s.flops > 0)
    r.rate = s.flops / (r.ms * 1e-3) / 1e12;
  else
    r.rate = s.bytes / (r.ms * 1e-3) / 1e9;
}

std::string jnum(double x) {
  if (!std::isfinite(x)) return "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", x);
  return b;
}

std::string jstr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string fnum(double x, const char* fmt) {
  if (!std::isfinite(x)) return "-";
  char b[32];
  std::snprintf(b, sizeof b, fmt, x);
  return b;
}

int usage(int code = 2) {
  std::fprintf(code ? stderr : stdout,
               "usage: wick bench [options]\n"
               "  --device D      cpu, cuda, cuda:1, rocm, ... (default: the first GPU, else cpu)\n"
               "  --op NAME       only rows whose op starts with NAME (may be repeated)\n"
               "  --dtype NAME    only rows of this dtype column (q4_k, bf16, ...; may be repeated)\n"
               "  --json          print JSON instead of a table\n"
               "  --list          print the rows (keys, bytes, flops) without running them\n"
               "  --reps N        timed runs per row, median reported (default 20)\n"
               "  --quick         tiny shapes (smoke test)\n"
               "  --cpu-shapes    the CPU section shapes (default on the cpu device)\n"
               "  --gpu-shapes    the GPU shapes of ANCHORS.md (default on a GPU)\n"
               "  --llm           the LLM rows (bench_llm.cpp) instead, sized by the shape set\n"
               "  --quant         the quantized matmul rows (bench_quant.cpp) instead, sized likewise\n"
               "  --bw GBS        copy bandwidth for the floor column (default: 3000 on a GPU,\n"
               "                  the measured copy row on the cpu)\n");
  return code;
}

}  // namespace

void add_row(std::vector<Spec>& v, std::string op, std::string shape, std::string dtype, double bytes, double flops,
             double in_bytes, std::function<Run(const Device&)> make, DType math) {
  Spec s;
  s.op = std::move(op);
  s.shape = std::move(shape);
  s.dtype = std::move(dtype);
  s.bytes = bytes;
  s.flops = flops;
  s.in_bytes = in_bytes;
  s.math = math;
  s.make = std::move(make);
  v.push_back(std::move(s));
}

Tensor rnd(const Shape& s, DType dt, const Device& d, double lo, double up) {
  try {
    return Tensor::rand_uniform(s, dt, lo, up, d);
  } catch (const UnsupportedError&) {
  }
  Tensor t = Tensor::rand_uniform(s, DType::F32, lo, up, Device::cpu());
  if (dt != DType::F32) t = t.to_dtype(dt);
  return t.to(d);
}

// Random i64 ids in [0, n - 1]: f32 uniform below n - 1 rounds into range whichever way the cast
// rounds.
Tensor ids(const Shape& s, int64_t n, const Device& d) {
  try {
    return rnd(s, DType::F32, d, 0.0, static_cast<double>(n - 1)).to_dtype(DType::I64);
  } catch (const UnsupportedError&) {
  }
  return Tensor::rand_uniform(s, DType::F32, 0.0, static_cast<double>(n - 1), Device::cpu()).to_dtype(DType::I64).to(d);
}

std::string dims(std::initializer_list<int64_t> v) {
  std::string s;
  for (int64_t x : v) {
    if (!s.empty()) s += 'x';
    s += std::to_string(x);
  }
  return s;
}

double sz(DType d) { return static_cast<double>(dtype_size(d)); }

int cmd_bench(int argc, char** argv) {
  Device dev;
  bool have_dev = false, json = false, list = false, llm = false, quant = false;
  int reps = 20;
  const Sizes* sizes = nullptr;
  double bw = kNaN;
  std::vector<std::string> filters, dtype_filters;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool more = i + 1 < argc;
    if (a == "--device" && more) {
      dev = Device::parse(argv[++i]);
      have_dev = true;
    } else if (a == "--op" && more) {
      filters.emplace_back(argv[++i]);
    } else if (a == "--dtype" && more) {
      dtype_filters.emplace_back(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      return usage(0);
    } else if (a == "--list") {
      list = true;
    } else if (a == "--reps" && more) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) return usage();
    } else if (a == "--bw" && more) {
      bw = std::atof(argv[++i]);
      if (!(bw > 0)) return usage();
    } else if (a == "--quick") {
      sizes = &kQuick;
    } else if (a == "--cpu-shapes") {
      sizes = &kCpu;
    } else if (a == "--gpu-shapes") {
      sizes = &kFull;
    } else if (a == "--llm") {
      llm = true;
    } else if (a == "--quant") {
      quant = true;
    } else {
      return usage();
    }
  }
  if (!have_dev) dev = Device::gpu_if_available();
  if (!sizes) sizes = dev.is_cpu() ? &kCpu : &kFull;
  if (!std::isfinite(bw) && dev.is_gpu()) bw = kGpuCopyGBs;
  const bool measured_bw = !std::isfinite(bw);
  const DeviceInfo dev_info = dev.info();
  const std::string dev_name = dev_info.name;
  dev.set_seed(1234);
  std::unique_ptr<Timer> timer = make_timer(dev);

  std::vector<Spec> specs = quant ? make_quant_specs(sizes->name)
                            : llm ? make_llm_specs(sizes->name)
                                  : make_specs(*sizes);
  const std::string set_name = (quant ? "quant-" : llm ? "llm-" : "") + std::string(sizes->name);
  if (!filters.empty()) {
    std::erase_if(specs, [&](const Spec& s) {
      return std::none_of(filters.begin(), filters.end(), [&](const std::string& f) { return s.op.rfind(f, 0) == 0; });
    });
  }
  if (!dtype_filters.empty())
    std::erase_if(specs, [&](const Spec& s) {
      return std::find(dtype_filters.begin(), dtype_filters.end(), s.dtype) == dtype_filters.end();
    });
  if (!json) {
    std::printf("wick bench  %s (%s)  shapes %s  reps %d  floor bandwidth %s\n", dev.location().c_str(),
                dev_name.c_str(), set_name.c_str(), reps,
                measured_bw ? "= the copy row" : (fnum(bw, "%.0f") + " GB/s").c_str());
    if (!dev_info.details.empty()) std::printf("  %s\n", dev_info.details.c_str());
    std::printf("%-18s %-34s %-9s %10s %12s %-8s %10s  %s\n", "op", "shape", "dtype", "ms", "rate", "unit", "floor ms",
                "note");
    std::fflush(stdout);
  }
  std::ostringstream js;
  int ok = 0, unsupported = 0, errors = 0;
  bool first = true;
  for (const Spec& s : specs) {
    Result r;
    if (list)
      r.status = "listed";
    else
      r = measure(s, dev, reps, *timer);
    if (measured_bw && s.op == "copy" && r.status == "ok") bw = s.bytes / (r.ms * 1e-3) / 1e9;
    finish(s, r, bw, peak_tflops(dev, dev_name, s.math));
    if (r.status == "ok")
      ++ok;
    else if (r.status == "unsupported")
      ++unsupported;
    else if (r.status != "listed")
      ++errors;
    if (json) {
      js << (first ? "" : ",") << "\n  {\"op\": " << jstr(s.op) << ", \"shape\": " << jstr(s.shape)
         << ", \"dtype\": " << jstr(s.dtype) << ", \"status\": " << jstr(r.status) << ", \"ms\": " << jnum(r.ms)
         << ", \"rate\": " << jnum(r.rate) << ", \"unit\": " << jstr(r.unit) << ", \"floor_ms\": " << jnum(r.floor_ms)
         << ", \"bytes\": " << jnum(s.bytes) << ", \"flops\": " << jnum(s.flops) << ", \"runs\": " << r.runs
         << ", \"buffers\": " << r.sets << ", \"message\": " << jstr(r.message) << "}";
      first = false;
    } else {
      const char* rate_fmt = s.chain > 0 ? "%.2f" : s.flops > 0 ? "%.3f" : "%.1f";
      std::string note = r.status == "ok" || list ? "" : r.status + ": " + r.message;
      std::printf("%-18s %-34s %-9s %10s %12s %-8s %10s  %s\n", s.op.c_str(), s.shape.c_str(), s.dtype.c_str(),
                  fnum(r.ms, "%.4f").c_str(), fnum(r.rate, rate_fmt).c_str(), r.unit.c_str(),
                  fnum(r.floor_ms, "%.4f").c_str(), note.c_str());
      std::fflush(stdout);
    }
  }
  if (json) {
    std::printf(
        "{\"tool\": \"wick\", \"device\": %s, \"device_name\": %s, \"device_details\": %s, "
        "\"shapes\": %s, \"reps\": %d, "
        "\"timer\": %s, \"floor_bw_gbs\": %s, \"rows\": [%s\n]}\n",
        jstr(dev.location()).c_str(), jstr(dev_name).c_str(), jstr(dev_info.details).c_str(), jstr(set_name).c_str(),
        reps, jstr(timer_name(dev)).c_str(), jnum(bw).c_str(), js.str().c_str());
  } else {
    std::printf("\n%d timed, %d unsupported, %d errors\n", ok, unsupported, errors);
  }
  // Unsupported rows are expected while ops land; an error row is a bug (or out of memory).
  return errors > 0 ? 1 : 0;
}

}  // namespace wick::tool
