// CPU parallelism: OpenMP over index ranges.
#pragma once

#include <algorithm>
#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace wick::cpu {

inline int num_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when n is below `grain`
// (elements worth less than a thread's start-up cost) or when already inside a parallel region.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
#ifdef _OPENMP
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int threads = static_cast<int>(std::min<int64_t>(num_threads(), max_chunks));
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = omp_get_num_threads();
    const int64_t begin = n * t / nt;
    const int64_t end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
#else
  (void)grain;
  fn(int64_t{0}, n);
#endif
}

// Elements per thread below which splitting does not pay.
inline constexpr int64_t kGrain = 32768;

}  // namespace wick::cpu
