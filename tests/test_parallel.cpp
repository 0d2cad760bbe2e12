// The CPU backend's parallel loops (src/cpu/parallel.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "cpu/parallel.h"

namespace {

using wick::cpu::parallel_blocks;
using wick::cpu::parallel_ranges;

// Every block handed out exactly once, for block counts below, at and above the team's size, with
// and without a grain that keeps the loop on one thread.
TEST(CpuParallel, BlocksGoOutExactlyOnce) {
  const int64_t threads = wick::cpu::num_threads();
  for (int64_t n :
       {int64_t{0}, int64_t{1}, int64_t{2}, threads - 1, threads, threads + 1, 4 * threads + 3, int64_t{1000}}) {
    for (int64_t grain : {int64_t{1}, int64_t{1} << 40}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int64_t> bodies{0};
      parallel_blocks(n, grain, [&](auto&& next) {
        bodies.fetch_add(1);
        for (int64_t i = next(); i >= 0; i = next()) {
          ASSERT_LT(i, n);
          seen[static_cast<size_t>(i)].fetch_add(1);
        }
        EXPECT_EQ(next(), -1);  // stays done
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n " << n << " block " << i;
      EXPECT_LE(bodies.load(), std::max<int64_t>(n, 1));
      if (grain > n) {
        EXPECT_EQ(bodies.load(), n > 0 ? 1 : 0) << "n " << n;  // inline
      }
    }
  }
}

// A slow thread does not hold up its share: while the thread that took block 0 sleeps, the others
// take the rest of block 0's share.
TEST(CpuParallel, FastThreadsTakeTheSlowOnesBlocks) {
  const int64_t threads = wick::cpu::num_threads();
  if (threads < 2) GTEST_SKIP() << "one thread";
  const int64_t n = 8 * threads;
  std::vector<std::atomic<int>> by(static_cast<size_t>(n));
  std::atomic<int> next_id{0};
  parallel_blocks(n, 1, [&](auto&& next) {
    const int id = next_id.fetch_add(1);
    for (int64_t i = next(); i >= 0; i = next()) {
      by[static_cast<size_t>(i)].store(id + 1);
      if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // block 0's thread
    }
  });
  // Block 0's thread was asleep while the others ran out of work: its share's other blocks went to
  // other threads.
  const int owner = by[0].load();
  int64_t others = 0;
  for (int64_t i = 1; i < n / threads; ++i) others += by[static_cast<size_t>(i)].load() != owner;
  EXPECT_GT(others, 0);
  for (int64_t i = 0; i < n; ++i) EXPECT_GT(by[static_cast<size_t>(i)].load(), 0);
}

// parallel_ranges covers [0, n) with disjoint ranges of at least `grain` items each (all n where n
// is below two grains: one call), one call per grain at most, with the team handing out blocks
// (more grains than threads) or not.
TEST(CpuParallel, RangesCoverEveryItemOnce) {
  const int64_t threads = wick::cpu::num_threads();
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, threads * 3, threads * 3 + 1, int64_t{1000}, int64_t{4099}}) {
    for (int64_t grain : {int64_t{1}, int64_t{3}, int64_t{64}, int64_t{1} << 40}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int64_t> calls{0};
      std::atomic<bool> short_range{false};
      parallel_ranges(n, grain, [&](int64_t b, int64_t e) {
        calls.fetch_add(1);
        if (e - b < std::min(grain, n)) short_range = true;
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n " << n << " item " << i;
      EXPECT_FALSE(short_range.load()) << "n " << n << " grain " << grain;
      if (n > 0 && n < 2 * grain) {
        EXPECT_EQ(calls.load(), 1) << "n " << n << " grain " << grain;
      }
      if (n == 0) {
        EXPECT_EQ(calls.load(), 0);
      }
      EXPECT_LE(calls.load(), std::max<int64_t>(1, n / grain)) << "n " << n << " grain " << grain;
    }
  }
}

}  // namespace
