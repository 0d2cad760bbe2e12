// How the AMX kernel's tile loads and TDPBF16PS products overlap on this processor (see the
// blocking note in Note [AMX GEMM], src/cpu/gemm_packed.cpp). Each variant runs a loop of tile loads
// and products over 64-byte-aligned operands: a streams through a buffer of 16 KiB (L1), 256 KiB
// (L2) or 4 MiB, b cycles through 16 KiB. Prints nanoseconds per TDPBF16PS (16 x 16 x 32
// multiply-adds) on one thread and on all, the slowest thread in brackets. Standalone (no wick; it
// shares amx_probe.h with amx_blocking.cpp):
//   g++ -std=c++20 -O2 -fopenmp -march=sapphirerapids -o /tmp/amxk scripts/probes/amx_kernels.cpp
//   OMP_PROC_BIND=close /tmp/amxk
// Variants: "peak", the four products of the 2 x 2 kernel with no loads; "4 loads", its loads with
// no products; the kernel in gemm_packed.cpp's order ("2x2 lib order") and in three other orders;
// 1 x 2 and 2 x 1 kernels (2 accumulators, operands double-buffered), and 1 x 3 and 3 x 1 (3
// accumulators, one operand double-buffered).
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "amx_probe.h"
#define L(t, p, s) _tile_loadd(t, p, s)
#define D(c, a, b) _tile_dpbf16ps(c, a, b)
// ns per dp. a streams through `steps` 4 KB steps; b cycles in 16 KB.
template <int V>
__attribute__((noinline)) double run(const uint16_t* a, const uint16_t* b, int64_t steps, int64_t n) {
  zero_tiles();
  const double t0 = now();
  int64_t s = 0;
  int dps = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t* ap = a + s * 2048;
    const uint16_t* bp = b + (s & 3) * 2048;
    s = s + 1 == steps ? 0 : s + 1;
    // each iteration covers 32 k-pairs (two tile steps): ap, ap+1024 (A: 32 rows x 32 k per 1024 elems), bp, bp+1024
    if constexpr (V == 0) {
      dps = 4;
      D(0, 4, 6);
      D(1, 4, 7);
      D(2, 5, 6);
      D(3, 5, 7);
    } else if constexpr (V == 10) {  // the loads alone (per 4 "products" of the 2 x 2 step)
      dps = 4;
      L(4, ap, 64);
      L(5, ap + 512, 64);
      L(6, bp, 128);
      L(7, bp + 32, 128);
    } else if constexpr (V == 1) {  // lib order x2
      dps = 8;
      L(4, ap, 64);
      L(6, bp, 128);
      D(0, 4, 6);
      L(7, bp + 32, 128);
      D(1, 4, 7);
      L(5, ap + 512, 64);
      D(2, 5, 6);
      D(3, 5, 7);
      L(4, ap + 1024, 64);
      L(6, bp + 1024, 128);
      D(0, 4, 6);
      L(7, bp + 1056, 128);
      D(1, 4, 7);
      L(5, ap + 1536, 64);
      D(2, 5, 6);
      D(3, 5, 7);
    } else if constexpr (V == 2) {  // loads first x2
      dps = 8;
      L(4, ap, 64);
      L(5, ap + 512, 64);
      L(6, bp, 128);
      L(7, bp + 32, 128);
      D(0, 4, 6);
      D(1, 4, 7);
      D(2, 5, 6);
      D(3, 5, 7);
      L(4, ap + 1024, 64);
      L(5, ap + 1536, 64);
      L(6, bp + 1024, 128);
      L(7, bp + 1056, 128);
      D(0, 4, 6);
      D(1, 4, 7);
      D(2, 5, 6);
      D(3, 5, 7);
    } else if constexpr (V == 3) {  // mirrored orders
      dps = 8;
      L(4, ap, 64);
      L(6, bp, 128);
      D(0, 4, 6);
      L(7, bp + 32, 128);
      D(1, 4, 7);
      L(5, ap + 512, 64);
      D(2, 5, 6);
      D(3, 5, 7);
      L(7, bp + 1056, 128);
      L(5, ap + 1536, 64);
      D(3, 5, 7);
      L(6, bp + 1024, 128);
      D(2, 5, 6);
      L(4, ap + 1024, 64);
      D(1, 4, 7);
      D(0, 4, 6);
    } else if constexpr (V == 4) {  // b first order: L6 L4 D0 L5 D2 L7 D1 D3
      dps = 8;
      L(6, bp, 128);
      L(4, ap, 64);
      D(0, 4, 6);
      L(5, ap + 512, 64);
      D(2, 5, 6);
      L(7, bp + 32, 128);
      D(1, 4, 7);
      D(3, 5, 7);
      L(6, bp + 1024, 128);
      L(4, ap + 1024, 64);
      D(0, 4, 6);
      L(5, ap + 1536, 64);
      D(2, 5, 6);
      L(7, bp + 1056, 128);
      D(1, 4, 7);
      D(3, 5, 7);
    } else if constexpr (V == 5) {  // 1x2 double-buffered: C0,C1 (16 rows x 32 cols); {A2,B4,B5} {A3,B6,B7}; a only top
                                    // 16 rows
      dps = 4;
      L(2, ap, 64);
      L(4, bp, 128);
      L(5, bp + 32, 128);
      D(0, 3, 6);
      D(1, 3, 7);
      L(3, ap + 1024, 64);
      L(6, bp + 1024, 128);
      L(7, bp + 1056, 128);
      D(0, 2, 4);
      D(1, 2, 5);
    } else if constexpr (V == 6) {  // 2x1 double-buffered: C0,C1 (32 rows x 16 cols); {A2,A3,B4} {A5,A6,B7}
      dps = 4;
      L(2, ap, 64);
      L(3, ap + 512, 64);
      L(4, bp, 128);
      D(0, 5, 7);
      D(1, 6, 7);
      L(5, ap + 1024, 64);
      L(6, ap + 1536, 64);
      L(7, bp + 1024, 128);
      D(0, 2, 4);
      D(1, 3, 4);
    } else if constexpr (V == 7) {  // 1x3 A double-buffered: C0..2 (16 x 48), B 5,6,7 single, A 3/4
      dps = 6;
      L(3, ap, 64);
      L(5, bp, 128);
      D(0, 4, 5);
      L(6, bp + 32, 128);
      D(1, 4, 6);
      L(7, bp + 64, 128);
      D(2, 4, 7);
      L(4, ap + 1024, 64);
      L(5, bp + 1024, 128);
      D(0, 3, 5);
      L(6, bp + 1056, 128);
      D(1, 3, 6);
      L(7, bp + 1088, 128);
      D(2, 3, 7);
    } else if constexpr (V == 8) {  // 3x1 B double-buffered: C0..2 (48 x 16), A 3,4,5 single, B 6/7
      dps = 6;
      L(6, bp, 128);
      L(3, ap, 64);
      D(0, 3, 7);
      L(4, ap + 512, 64);
      D(1, 4, 7);
      L(5, ap + 256, 64);
      D(2, 5, 7);
      L(7, bp + 1024, 128);
      L(3, ap + 1024, 64);
      D(0, 3, 6);
      L(4, ap + 1536, 64);
      D(1, 4, 6);
      L(5, ap + 1280, 64);
      D(2, 5, 6);
    } else if constexpr (V == 9) {  // 2x2 where the next step's first operand loads right after last use
      dps = 8;
      D(0, 4, 6);
      D(1, 4, 7);
      L(4, ap, 64);
      D(2, 5, 6);
      L(6, bp, 128);
      D(3, 5, 7);
      L(5, ap + 512, 64);
      L(7, bp + 32, 128);
      D(0, 4, 6);
      D(1, 4, 7);
      L(4, ap + 1024, 64);
      D(2, 5, 6);
      L(6, bp + 1024, 128);
      D(3, 5, 7);
      L(5, ap + 1536, 64);
      L(7, bp + 1056, 128);
    }
  }
  alignas(64) float sink[256];
  _tile_stored(0, sink, 64);
  return (now() - t0) / n / dps * 1e9 + sink[0] * 0;
}
template <int V>
void bench(const char* name, int64_t kb, int threads) {
  std::vector<double> r(threads);
#pragma omp parallel num_threads(threads)
  {
    _tile_loadconfig(&kCfg);
    const int64_t steps = kb / 4;
    const size_t bytes = (steps * 2048 + 8192) * 2;
    uint16_t* a = (uint16_t*)std::aligned_alloc(4096, bytes);
    uint16_t* b = (uint16_t*)std::aligned_alloc(4096, bytes);
    for (size_t i = 0; i < bytes / 2; ++i) a[i] = b[i] = 0x3f80;
    run<V>(a, b, steps, 20000);
    double best = 1e30;
    for (int rep = 0; rep < 3; ++rep) best = std::min(best, run<V>(a, b, steps, 100000));
    r[omp_get_thread_num()] = best;
    std::free(a);
    std::free(b);
    _tile_release();
  }
  double s = 0, hi = 0;
  for (double x : r) s += x, hi = std::max(hi, x);
  std::printf("%-30s a %5lld KB %2d thr: %5.2f ns/dp (max %5.2f) = %4.0f GFLOP/s/thread\n", name, (long long)kb,
              threads, s / threads, hi, 16384 / (s / threads));
}
int main() {
  if (!request_amx()) return 1;
  for (int th : {1, 16})
    for (int64_t kb : {16, 256, 4096}) {
      bench<0>("peak (no loads)", kb, th);
      bench<10>("4 loads (no products)", kb, th);
      bench<1>("2x2 lib order", kb, th);
      bench<2>("2x2 loads first", kb, th);
      bench<3>("2x2 mirrored", kb, th);
      bench<4>("2x2 b first", kb, th);
      bench<9>("2x2 load after last use", kb, th);
      bench<5>("1x2 double-buffered", kb, th);
      bench<6>("2x1 double-buffered", kb, th);
      bench<7>("1x3 A double-buffered", kb, th);
      bench<8>("3x1 B double-buffered", kb, th);
    }
}
