// How fast can the AMX tiles multiply on this processor, and which blocking of a large bf16 GEMM
// comes closest? Standalone (no wick): the operands are packed as src/cpu/gemm_packed.cpp packs them
// (Note [AMX GEMM]: a in panels of 32 rows, per 16 k-pairs the 32 rows' 32 elements; b in panels of
// 32 columns, per k-pair the columns' pairs in 128 bytes), and the timings leave packing out.
//   g++ -std=c++20 -O2 -fopenmp -march=sapphirerapids -o /tmp/amx scripts/probes/amx_blocking.cpp
//   OMP_PROC_BIND=close /tmp/amx [M N K]
// Prints lscpu's topology lines, the peak rate of TDPBF16PS with no loads (1 thread, half and all
// of the threads), the 2x2-tile kernel on operands in L1, then each blocking of M x N x K (2048^3
// unless given) on all threads, GFLOP/s per thread and TFLOP/s in all, best of 5 runs after one
// warm-up, each checked against the first variant's result.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "amx_probe.h"

namespace {

constexpr int kMR = 32, kNR = 32;
constexpr int64_t kPairs = 16;  // k-pairs per tile

// TDPBF16PS on tiles already loaded, n groups of four: the unit's rate with nothing to wait for.
double peak_gflops(int64_t n) {
  _tile_loadconfig(&kCfg);
  zero_tiles();
  const double t0 = now();
  for (int64_t i = 0; i < n; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float sink[256];
  _tile_stored(0, sink, 64);
  const double t = now() - t0;
  _tile_release();
  return 4.0 * n * 16 * 16 * 32 * 2 / t / 1e9 + sink[0] * 0;
}

// The library's kernel: c (32 x 32 f32, row stride ldc) (+)= the sums over kp pairs of panels a, b;
// with PF, also prefetches into L1 2 KiB of pf per 16 pairs (the next call's streaming panel).
template <bool PF>
inline void kernel(const uint16_t* a, const uint16_t* b, int64_t kp, float* c, int64_t ldc, bool add, const char* pf) {
  const int64_t cs = ldc * 4;
  if (add) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    _tile_loadd(2, c + 16 * ldc, cs);
    _tile_loadd(3, c + 16 * ldc + 16, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t p = 0; p < kp; p += kPairs) {
    const uint16_t* ap = a + p * 2 * kMR;
    const uint16_t* bp = b + p * 2 * kNR;
    if constexpr (PF) {
      const char* q = pf + p * 128;
#pragma GCC unroll 32
      for (int l = 0; l < 32; ++l) _mm_prefetch(q + 64 * l, _MM_HINT_T0);
    }
    _tile_loadd(4, ap, 64);
    _tile_loadd(6, bp, 128);
    _tile_dpbf16ps(0, 4, 6);
    _tile_loadd(7, bp + 32, 128);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, ap + 16 * 32, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  _tile_stored(2, c + 16 * ldc, cs);
  _tile_stored(3, c + 16 * ldc + 16, cs);
}

// Rounds a 32 x 32 tile of sums (row stride ldc) into bf16 d (row stride ld).
inline void store_tile(const float* c, int64_t ldc, uint16_t* d, int64_t ld) {
  for (int r = 0; r < 32; ++r) {
    const __m512 lo = _mm512_loadu_ps(c + r * ldc), hi = _mm512_loadu_ps(c + r * ldc + 16);
    _mm512_storeu_si512(d + r * ld, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
  }
}

// 64-byte aligned, as the library's scratch (a tile row that straddles two cache lines loads far
// slower).
template <class T>
struct AlignedAlloc {
  using value_type = T;
  AlignedAlloc() = default;
  template <class U>
  AlignedAlloc(const AlignedAlloc<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64)); }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const AlignedAlloc&) const { return true; }
};
template <class T>
using AVec = std::vector<T, AlignedAlloc<T>>;

struct Problem {
  int64_t m, n, k, kp, mpan, npan;
  AVec<uint16_t> pa, pb;  // packed
  AVec<uint16_t> c;       // bf16 result, row stride n
};

struct Variant {
  const char* name;
  int64_t kc;     // k-pairs per k block (0: all)
  int64_t mcp;    // row panels per block of c
  int64_t ncp;    // column panels per block of c
  bool ip_outer;  // within a k block: row panels outer (a panel in L1, b streams) or columns outer
  bool pf;        // prefetch the next call's streaming panel
};

// Runs the blocked GEMM on all threads: blocks of mcp x ncp panels dealt out in order.
void run(Problem& P, const Variant& v) {
  const int64_t kc = v.kc == 0 ? P.kp : v.kc;
  const int64_t mb = (P.mpan + v.mcp - 1) / v.mcp, nb = (P.npan + v.ncp - 1) / v.ncp;
#pragma omp parallel
  {
    _tile_loadconfig(&kCfg);
    const int64_t ldc = v.ncp * kNR;
    AVec<float> sums(static_cast<size_t>(v.mcp * kMR * ldc));
    const int nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t nblocks = mb * nb, b0 = nblocks * t / nt, b1 = nblocks * (t + 1) / nt;
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t ip0 = blk / nb * v.mcp, jp0 = blk % nb * v.ncp;
      const int64_t ip1 = std::min(P.mpan, ip0 + v.mcp), jp1 = std::min(P.npan, jp0 + v.ncp);
      for (int64_t p0 = 0; p0 < P.kp; p0 += kc) {
        const int64_t p1 = std::min(P.kp, p0 + kc);
        const int64_t no = v.ip_outer ? ip1 - ip0 : jp1 - jp0, ni = v.ip_outer ? jp1 - jp0 : ip1 - ip0;
        for (int64_t o = 0; o < no; ++o)
          for (int64_t i = 0; i < ni; ++i) {
            const int64_t ip = ip0 + (v.ip_outer ? o : i), jp = jp0 + (v.ip_outer ? i : o);
            float* tile = sums.data() + (ip - ip0) * kMR * ldc + (jp - jp0) * kNR;
            const uint16_t* a = P.pa.data() + (ip * P.kp + p0) * 2 * kMR;
            const uint16_t* b = P.pb.data() + (jp * P.kp + p0) * 2 * kNR;
            // The next call's streaming panel (the inner index + 1, wrapping to the next outer).
            const int64_t ni2 = i + 1 < ni ? i + 1 : 0;
            const int64_t ipn = ip0 + (v.ip_outer ? std::min(o + (i + 1 == ni), no - 1) : ni2);
            const int64_t jpn = jp0 + (v.ip_outer ? ni2 : std::min(o + (i + 1 == ni), no - 1));
            const char* pf = v.ip_outer ? reinterpret_cast<const char*>(P.pb.data() + (jpn * P.kp + p0) * 2 * kNR)
                                        : reinterpret_cast<const char*>(P.pa.data() + (ipn * P.kp + p0) * 2 * kMR);
            if (v.pf)
              kernel<true>(a, b, p1 - p0, tile, ldc, p0 > 0, pf);
            else
              kernel<false>(a, b, p1 - p0, tile, ldc, p0 > 0, pf);
            if (p1 == P.kp) store_tile(tile, ldc, P.c.data() + ip * kMR * P.n + jp * kNR, P.n);
          }
      }
    }
    _tile_release();
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!request_amx()) {
    std::printf("no AMX permission\n");
    return 1;
  }
  std::fflush(stdout);
  if (std::system("lscpu | grep -E 'Model name|^CPU\\(s\\)|Thread|Core|Socket|MHz|L1d|L2|L3|NUMA node0'") != 0)
    std::printf("(no lscpu)\n");
  const int nt = omp_get_max_threads();
  for (int threads : {1, nt / 2, nt}) {
    std::vector<double> r(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
    r[static_cast<size_t>(omp_get_thread_num())] = (peak_gflops(2000), peak_gflops(200000));
    double s = 0, lo = 1e30;
    for (double x : r) s += x, lo = std::min(lo, x);
    std::printf("peak TDPBF16PS, %2d threads: %.0f GFLOP/s per thread (slowest %.0f), %.2f TFLOP/s in all\n", threads,
                s / threads, lo, s / 1e3);
  }
  // The kernel on operands in L1: 128 pairs of one a panel and one b panel (16 KiB each), again and again.
  for (int threads : {1, nt}) {
    std::vector<double> r(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
    {
      AVec<uint16_t> a(128 * 64, 0x3f80), b(128 * 64, 0x3f80);
      alignas(64) float c[32 * 32];
      _tile_loadconfig(&kCfg);
      const int64_t reps = 20000;
      double best = 0;
      for (int rep = 0; rep < 3; ++rep) {
        const double t0 = now();
        for (int64_t i = 0; i < reps; ++i) kernel<false>(a.data(), b.data(), 128, c, 32, i > 0, nullptr);
        best = std::max(best, reps * 32.0 * 32 * 256 * 2 / (now() - t0) / 1e9);
      }
      _tile_release();
      r[static_cast<size_t>(omp_get_thread_num())] = best;
    }
    double s = 0;
    for (double x : r) s += x;
    std::printf("kernel, L1 operands, %2d threads: %.0f GFLOP/s per thread, %.2f TFLOP/s in all\n", threads,
                s / threads, s / 1e3);
  }

  Problem P;
  P.m = argc > 3 ? std::atoll(argv[1]) : 2048;
  P.n = argc > 3 ? std::atoll(argv[2]) : 2048;
  P.k = argc > 3 ? std::atoll(argv[3]) : 2048;
  P.kp = (P.k / 2 + kPairs - 1) / kPairs * kPairs;
  P.mpan = (P.m + kMR - 1) / kMR;
  P.npan = (P.n + kNR - 1) / kNR;
  P.pa.resize(static_cast<size_t>(P.mpan * P.kp * 2 * kMR));
  P.pb.resize(static_cast<size_t>(P.npan * P.kp * 2 * kNR));
  P.c.resize(static_cast<size_t>(P.mpan * kMR * P.n + 64));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  auto bf = [&] {
    const float f = u(rng);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    return static_cast<uint16_t>(x >> 16);
  };
  for (auto& x : P.pa) x = bf();
  for (auto& x : P.pb) x = bf();
  const double flops = 2.0 * P.m * P.n * P.k;
  const Variant vs[] = {
      {"lib: kc128 8x8 jp-outer", 128, 8, 8, false, false}, {"kc128 8x8 ip-outer", 128, 8, 8, true, false},
      {"kc256 8x8 jp-outer", 256, 8, 8, false, false},      {"kc256 8x8 ip-outer", 256, 8, 8, true, false},
      {"kc512 8x8 jp-outer", 512, 8, 8, false, false},      {"kcall 8x8 jp-outer", 0, 8, 8, false, false},
      {"kcall 8x8 ip-outer", 0, 8, 8, true, false},         {"kcall 4x4 jp-outer", 0, 4, 4, false, false},
      {"kcall 16x4 jp-outer", 0, 16, 4, false, false},      {"kcall 4x16 ip-outer", 0, 4, 16, true, false},
      {"kcall 2x16 ip-outer", 0, 2, 16, true, false},       {"kcall 16x2 jp-outer", 0, 16, 2, false, false},
  };
  AVec<uint16_t> ref;
  std::printf("%lld x %lld x %lld, %d threads\n", static_cast<long long>(P.m), static_cast<long long>(P.n),
              static_cast<long long>(P.k), nt);
  for (const Variant& v : vs) {
    run(P, v);
    double best = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
      const double t0 = now();
      run(P, v);
      best = std::min(best, now() - t0);
    }
    int64_t bad = 0;
    if (ref.empty()) ref = P.c;
    for (int64_t i = 0; i < P.m; ++i)
      for (int64_t j = 0; j < P.n; ++j) {
        const size_t x = static_cast<size_t>(i * P.n + j);
        uint32_t ra = uint32_t{ref[x]} << 16, rb = uint32_t{P.c[x]} << 16;
        float fa, fb;
        std::memcpy(&fa, &ra, 4);
        std::memcpy(&fb, &rb, 4);
        bad += std::fabs(fa - fb) > 1e-2f * (1 + std::fabs(fa));
      }
    std::printf("%-26s %8.3f ms  %6.0f GFLOP/s/thread  %5.2f TFLOP/s  mismatches %lld\n", v.name, best * 1e3,
                flops / best / 1e9 / nt, flops / best / 1e12, static_cast<long long>(bad));
  }
  return 0;
}
