// CPU parallelism: OpenMP over index ranges.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

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

// How many threads share n items of which `grain` are worth a thread's start-up cost: at most one
// per grain and per thread; 1 (run inline) inside a parallel region or without OpenMP.
inline int64_t chunk_count(int64_t n, int64_t grain) {
  if (in_parallel()) return 1;
  return std::min<int64_t>(num_threads(), std::max<int64_t>(1, n / std::max<int64_t>(grain, 1)));
}

// Calls fn(begin, end) on disjoint chunks covering [0, n), at most one per thread. Runs inline
// when n is below two `grain`s (elements worth less than a thread's start-up cost) or when already
// inside a parallel region (chunk_count).
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
#ifdef _OPENMP
  const int64_t chunks = chunk_count(n, grain);
  if (chunks <= 1) {
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

// Note [Dynamic blocks]
// parallel_for gives each thread an equal share up front, so an op takes as long as its slowest
// thread. The lent Xeon's 16 cores do not run alike (in one run of scripts/probes/amx_blocking.cpp
// the slowest thread's TDPBF16PS rate was 45% of the mean; a profile of the f32 conv had its
// calling thread waiting 40% of the op for the others), and hybrid processors have slow cores by
// design. So where the work comes in coarse blocks (GEMM and convolution blocks, each several
// microseconds), parallel_blocks starts each thread on the share parallel_for would give it, in
// order (neighbouring blocks share operands: the bf16 bmm 4 x (1024x128 @ 128x1024) took 0.37-0.40
// ms instead of 0.26-0.27 when the blocks went out one at a time to whichever thread asked), and a
// thread that has finished its share takes the remaining blocks of the others, one at a time from
// the front of each share in turn: a slow core ends up with fewer. A block's result does not
// depend on the thread that computes it, so results stay the same bit for bit. On the Xeon, six
// runs each of the old (parallel_for) and new binaries, alternating: bf16 matmul 2048^3 median
// 4.36 -> 3.81 ms (3.44-5.08 against 3.75-6.32), bmm 0.26 -> 0.25 ms; the convolutions did not
// move, as their blocks come one per thread (Note [CPU conv blocks]) and there is nothing to take.
// Cutting them into 2 or 4 blocks per thread did not help (conv_transpose2d 0.69-0.81 -> 0.98-1.05
// ms at 4), nor did the f32 GEMM of 2048^3 in 1, 2 or 4 blocks per thread handed out this way in
// place of OpenBLAS's own threads (14.1-18.1 ms against 16.2-17.0 in the same runs).

// Runs body(next) on the threads of a team, where next() returns blocks of 0..n-1, each to exactly
// one caller, then -1 (Note [Dynamic blocks]): body sets up what its thread needs and loops over
// next(). Shares and threads as parallel_for's chunks (chunk_count): inline (one call, every block
// in order) when n is below two `grain`s or already inside a parallel region. Threads beyond the
// chunk count do not call body.
template <class F>
void parallel_blocks(int64_t n, int64_t grain, F&& body) {
  if (n <= 0) return;
  struct alignas(64) Share {
    std::atomic<int64_t> next;  // the share's next block; at or past its end once taken
  };
  // body on thread t of nt, drawing from share t, then from the others in turn.
  auto run = [&](int64_t t, int64_t nt, Share* shares) {
    int64_t r = t, open = nt;  // the share drawn from; shares not yet found taken
    auto next = [&]() -> int64_t {
      for (; open > 0; r = (r + 1) % nt, --open) {
        const int64_t i = shares[r].next.fetch_add(1, std::memory_order_relaxed);
        if (i < n * (r + 1) / nt) return i;
      }
      return -1;
    };
    body(next);
  };
#ifdef _OPENMP
  if (const int64_t nt = chunk_count(n, grain); nt > 1) {
    std::unique_ptr<Share[]> shares(new Share[static_cast<size_t>(nt)]);
    for (int64_t r = 0; r < nt; ++r) shares[r].next.store(n * r / nt, std::memory_order_relaxed);
#pragma omp parallel  // the whole team (Note [One team size])
    {
      const int64_t t = omp_get_thread_num();
      if (t < nt) run(t, nt, shares.get());
    }
    return;
  }
#else
  (void)grain;
#endif
  Share one;
  one.next.store(0, std::memory_order_relaxed);
  run(0, 1, &one);
}

// Note [Memory-bound shares]
// Equal shares up front (parallel_for) also hold back loops that only stream memory: on the lent
// 16-core Xeon (a virtual machine) the max over the last dim of [2048, 8192] f32, each thread
// reading its 128 rows, took 0.57-0.59 ms (114-119 GB/s), and the same loop handing out blocks of 4
// or 16 rows to whichever thread asked 0.30-0.33 ms (203-227 GB/s; scripts/probes/reduce_rows.cpp,
// three rounds alternating); on another lease's host, 0.44-0.50 against 0.24-0.27 ms. More
// accumulators (0.44) or software prefetch (0.42-0.47) did not close the gap; blocks of one row
// (0.39-0.43) paid for their atomic. parallel_ranges is parallel_for with parallel_blocks's
// schedule: the same thread count and inline case, blocks of at least `grain` items, each thread
// starting on its own share; an op of a block per thread or fewer runs as parallel_for. The
// memory-bound loops take it: elementwise pieces, last-dim rows (norms, softmax, rope, cumsum), row
// reductions, fill, transpose tiles, pooling planes. The benchmark's CPU rows against equal shares,
// one host, builds alternated twice: copy of 64 MB 0.43-0.46 against 0.65-0.77 ms, sum over the
// last dim of [2048, 8192] 0.23 against 0.39, cumsum 1.37-1.40 against 2.19-2.30 (bench/RESULTS.md,
// session 35). Not taken by column-mode reductions: cut into 4 pieces a thread and handed out so,
// the max over dim 0 of [2048, 8192] went from 0.42-0.43 to 0.49-0.58 ms.
template <class F>
void parallel_ranges(int64_t n, int64_t grain, F&& fn) {
  if (n <= 0) return;
  const int64_t blocks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  // A block per thread at most: nothing to hand out, so no shares to allocate and poll.
  if (blocks <= num_threads()) return parallel_for(n, grain, std::forward<F>(fn));
  parallel_blocks(blocks, 1, [&](auto&& next) {
    for (int64_t b; (b = next()) >= 0;) fn(n * b / blocks, n * (b + 1) / blocks);
  });
}

// Elements per thread below which splitting does not pay.
inline constexpr int64_t kGrain = 32768;

}  // namespace wick::cpu
