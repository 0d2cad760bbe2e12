// Times the max and the sum over the last dim of [rows, cols] f32 on the CPU: wick's, and loops of
// this file that split the rows over the threads in other ways (static shares, dynamic blocks of a
// few rows, with and without software prefetch), median of argv[1] runs in argv[2] alternating
// rounds, to find what holds a read-only reduction below the memory's read rate. Build with
// -O3 -march=native -fopenmp and the link line of scripts/probes/cpu_gemm.sh.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "median.h"
#include "wick/tensor.h"

using wick::Tensor;

// The max of one row: U accumulators of 16 lanes, prefetching `ahead` bytes on (0: none).
template <int U>
static float row_max(const float* p, int64_t n, int ahead) {
  __m512 acc[U];
  for (int u = 0; u < U; ++u) acc[u] = _mm512_set1_ps(-__builtin_inff());
  int64_t i = 0;
  for (; i + 16 * U <= n; i += 16 * U) {
    if (ahead) _mm_prefetch(reinterpret_cast<const char*>(p + i) + ahead, _MM_HINT_T0);
    if (ahead && U >= 2) _mm_prefetch(reinterpret_cast<const char*>(p + i + 16) + ahead, _MM_HINT_T0);
    for (int u = 0; u < U; ++u) acc[u] = _mm512_max_ps(acc[u], _mm512_loadu_ps(p + i + 16 * u));
  }
  for (int u = 1; u < U; ++u) acc[0] = _mm512_max_ps(acc[0], acc[u]);
  float r = _mm512_reduce_max_ps(acc[0]);
  for (; i < n; ++i) r = std::max(r, p[i]);
  return r;
}

template <int U>
static void rows_static(const float* x, int64_t rows, int64_t cols, float* out, int ahead) {
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (int64_t r = rows * t / nt; r < rows * (t + 1) / nt; ++r) out[r] = row_max<U>(x + r * cols, cols, ahead);
  }
}

template <int U>
static void rows_dynamic(const float* x, int64_t rows, int64_t cols, float* out, int64_t block, int ahead) {
  std::atomic<int64_t> next{0};
#pragma omp parallel
  {
    for (int64_t b; (b = next.fetch_add(block, std::memory_order_relaxed)) < rows;)
      for (int64_t r = b; r < std::min(rows, b + block); ++r) out[r] = row_max<U>(x + r * cols, cols, ahead);
  }
}

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const wick::Device d = wick::Device::cpu();
  const int64_t R = 2048, C = 8192;
  // Inputs rotate over 4 tensors (256 MB), so no run reads a warm cache.
  std::vector<Tensor> xs;
  std::vector<std::vector<float>> hs;  // the same values for this file's loops
  for (int i = 0; i < 4; ++i) {
    xs.push_back(Tensor::rand_uniform({R, C}, wick::DType::F32, -1, 1, d));
    hs.emplace_back(static_cast<size_t>(R * C));
    xs.back().to_host(hs.back().data(), R * C * 4);
  }
  std::vector<float> out(static_cast<size_t>(R));
  int at = 0;
  auto ptr = [&] { return hs[static_cast<size_t>(at++ % 4)].data(); };
  struct Variant {
    std::string name;
    std::function<void()> f;
  };
  std::vector<Variant> vs = {
      {"wick max", [&] { (void)xs[static_cast<size_t>(at++ % 4)].max({-1}); }},
      {"wick sum", [&] { (void)xs[static_cast<size_t>(at++ % 4)].sum({-1}); }},
      {"static U4", [&] { rows_static<4>(ptr(), R, C, out.data(), 0); }},
      {"static U8", [&] { rows_static<8>(ptr(), R, C, out.data(), 0); }},
      {"static U4 pf1k", [&] { rows_static<4>(ptr(), R, C, out.data(), 1024); }},
      {"static U4 pf4k", [&] { rows_static<4>(ptr(), R, C, out.data(), 4096); }},
      {"dyn1 U4", [&] { rows_dynamic<4>(ptr(), R, C, out.data(), 1, 0); }},
      {"dyn4 U4", [&] { rows_dynamic<4>(ptr(), R, C, out.data(), 4, 0); }},
      {"dyn16 U4", [&] { rows_dynamic<4>(ptr(), R, C, out.data(), 16, 0); }},
      {"dyn4 U4 pf1k", [&] { rows_dynamic<4>(ptr(), R, C, out.data(), 4, 1024); }},
  };
  const double gb = static_cast<double>(R * C * 4) / 1e9;
  std::printf("threads %d, [%lld, %lld] f32, %d runs a round\n", omp_get_max_threads(), (long long)R,
              (long long)C, reps);
  for (int round = 0; round < rounds; ++round) {
    std::printf("--- round %d\n", round + 1);
    for (const Variant& v : vs) {
      const double ms = median_ms(reps, v.f);
      std::printf("%-16s %8.4f ms %6.1f GB/s\n", v.name.c_str(), ms, gb / ms * 1e3);
    }
  }
  return 0;
}
