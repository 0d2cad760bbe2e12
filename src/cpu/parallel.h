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

// Whether this thread is inside a parallel region (where parallel_for runs inline).
inline bool in_parallel() {
#ifdef _OPENMP
  return omp_in_parallel();
#else
  return false;
#endif
}

// Note [One team size]
// libgomp keeps the threads of a parallel region for the next one, but only as many as that next
// region asks for: when a region starts with fewer threads than the one before, the surplus threads
// exit, and a later, larger region creates them anew (pthread_create, fresh stacks, cold caches).
// parallel_for used to size its team by the work (fewer threads for fewer chunks), so calls that
// alternated small and large teams recreated threads all the time: bf16 bmm 4 x (1024 x 128 @ 128
// x 1024) widened each operand with 4 threads (4 chunks of rows) and then multiplied (OpenBLAS's
// OpenMP build, in the same pool) and narrowed with all of them. At OMP_NUM_THREADS=16, one `wick
// bench --op bmm` created 1743 threads and `--op conv2d` 740 (strace, 2 cores); at 4, 3 threads.
// On the 16-core Xeon that bmm took 9.2 ms at 16 threads, 3.2 at 8 and 4.5 at 4, and
// OMP_WAIT_POLICY, OPENBLAS_NUM_THREADS and malloc settings did not change it: none of them keeps
// the pool's size. So every region asks for the whole team and the threads beyond the chunks
// return at once; the same two rows now create 15 threads in all, for the bf16 GEMM and for the
// widening path alike. OpenBLAS chooses its regions' thread counts itself; at those shapes it took
// the whole team.

// Calls fn(begin, end) on disjoint chunks covering [0, n), at most one per thread. Runs inline
// when n is below `grain` (elements worth less than a thread's start-up cost) or when already
// inside a parallel region.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
#ifdef _OPENMP
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int64_t chunks = std::min<int64_t>(num_threads(), max_chunks);
  if (chunks <= 1 || in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel  // the whole team, whatever the chunk count (Note [One team size])
  {
    const int64_t t = omp_get_thread_num();
    const int64_t nt = std::min<int64_t>(omp_get_num_threads(), chunks);
    if (t < nt) {
      const int64_t begin = n * t / nt;
      const int64_t end = n * (t + 1) / nt;
      if (begin < end) fn(begin, end);
    }
  }
#else
  (void)grain;
  fn(int64_t{0}, n);
#endif
}

// Elements per thread below which splitting does not pay.
inline constexpr int64_t kGrain = 32768;

}  // namespace wick::cpu
