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
// Teams sized by their work made calls that alternate small and large teams (a widening in a few
// chunks, then an OpenBLAS product on all threads of the same pool) recreate threads all the time,
// and no OpenMP, OpenBLAS or malloc setting keeps the pool's size. So every region asks for the
// whole team, and the threads beyond the chunks return at once.

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
// thread, and the cores of a virtual machine need not run alike (hybrid processors have slow cores
// by design). So where the work comes in coarse blocks (GEMM and convolution blocks, each several
// microseconds), parallel_blocks starts each thread on the share parallel_for would give it, in
// order (neighbouring blocks share operands, which blocks handed out one at a time to whichever
// thread asks lose), and a thread that has finished its share takes the remaining blocks of the
// others, one at a time from the front of each share in turn: a slow core ends up with fewer. A
// block's result does not depend on the thread that computes it, so results stay the same bit for
// bit. Convolution blocks come one per thread (Note [CPU conv blocks]): nothing to take there.

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
// Equal shares up front (parallel_for) also hold back loops that only stream memory: on a virtual
// machine's cores, blocks handed out to whichever thread asks stream markedly faster than equal
// shares, and more accumulators or software prefetch do not close that gap. parallel_ranges is
// parallel_for with parallel_blocks's schedule: the same thread count and inline case, blocks of at
// least `grain` items (one row a block pays for its atomic), each thread starting on its own share;
// an op of a block per thread or fewer runs as parallel_for. The memory-bound loops take it:
// elementwise pieces, last-dim rows (norms, softmax, rope, cumsum), row reductions, fill, transpose
// tiles, pooling planes. Column-mode reductions do not: cut finer and handed out, they ran slower.
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
