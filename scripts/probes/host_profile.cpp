// Where the host time of a chain of small ops goes, on a machine without perf: a sampling profiler
// in the process. A timer signals every 50 us (argv[3]; see main for which clock); the handler stores
// the call stack (glibc backtrace over the unwind tables), and at the end each function gets its
// share of samples, exclusive (at the top of the stack) and inclusive (anywhere in it).
// Build against a build of wick (CUDA or not) and run where it should be measured; with the build
// in B (scripts/gpu-check.sh's build-gpu on the GPU machine):
//   L=$(scripts/probes/wick-link.sh $B)
//   g++ -std=c++20 -O2 -rdynamic -Iinclude -o /tmp/hp scripts/probes/host_profile.cpp $L
//       -L/usr/local/cuda/targets/x86_64-linux/lib && /tmp/hp [cpu|cuda] [ops] [period_us] [add|bmm|conv]
// (the last command on one line). Keep the build's link line ($L): its rpath picks the OpenMP OpenBLAS;
// without it the loader may find the pthreads build, whose threads then fight OpenMP's (the f32
// conv took 10 ms instead of 3 on two cores, 80% of it in sched_yield and libgomp). -rdynamic lets
// dladdr name wick's functions; those with internal linkage are named by addr2line (binutils) from
// the executable's symbol table.
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "wick/tensor.h"

namespace {

constexpr int kDepth = 24;
constexpr int kMaxSamples = 200000;
struct Sample {
  int depth;
  void* pc[kDepth];
};
Sample* g_samples = nullptr;
std::atomic<int> g_next{0};
std::atomic<bool> g_on{false};
int g_count = 0;

void on_signal(int, siginfo_t*, void*) {
  if (!g_on.load(std::memory_order_relaxed)) return;
  const int i = g_next.fetch_add(1, std::memory_order_relaxed);
  if (i >= kMaxSamples) return;
  g_samples[i].depth = 0;
  g_samples[i].depth = backtrace(g_samples[i].pc, kDepth);
}

// The function at offset `off` of this executable, by addr2line; empty if it cannot tell.
std::string addr2line(uintptr_t off) {
  char cmd[128];
  std::snprintf(cmd, sizeof cmd, "addr2line -f -C -e /proc/%d/exe 0x%lx", static_cast<int>(getpid()),
                static_cast<unsigned long>(off));
  FILE* f = popen(cmd, "r");
  if (!f) return "";
  char line[4096] = {};
  const bool ok = std::fgets(line, sizeof line, f) != nullptr;
  pclose(f);
  std::string n = ok ? line : "";
  while (!n.empty() && (n.back() == '\n' || n.back() == '\r')) n.pop_back();
  return n == "??" ? "" : n;
}

std::string name_of(void* pc) {
  Dl_info info{};
  if (!dladdr(pc, &info) || !info.dli_fname) return "?";
  std::string lib = info.dli_fname;
  lib = lib.substr(lib.find_last_of('/') + 1);
  static Dl_info self{};
  static const bool have_self = dladdr(reinterpret_cast<void*>(&addr2line), &self) != 0;
  if (!info.dli_sname && have_self && info.dli_fbase == self.dli_fbase) {
    std::string n = addr2line(reinterpret_cast<uintptr_t>(pc) - reinterpret_cast<uintptr_t>(info.dli_fbase));
    if (n.size() > 150) n = n.substr(0, 150) + "...";
    if (!n.empty()) return n + " [" + lib + "]";
  }
  if (!info.dli_sname) return "[" + lib + "]";
  int st = 0;
  char* d = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &st);
  std::string n = st == 0 && d ? d : info.dli_sname;
  std::free(d);
  if (n.size() > 150) n = n.substr(0, 150) + "...";
  return n + " [" + lib + "]";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dev_name = argc > 1 ? argv[1] : "cuda";
  const int64_t ops = argc > 2 ? std::atoll(argv[2]) : 200000;
  const long period_us = argc > 3 ? std::atol(argv[3]) : 50;
  const std::string op = argc > 4 ? argv[4] : "add";
  wick::Device d = dev_name == "cpu" ? wick::Device::cpu() : wick::Device::cuda(0);
  // add: chains of 1000 adds of 16 floats (the benchmark's host_overhead row), sampled on the main
  // thread every period_us of wall time. bmm: the CPU benchmark's bf16 bmm, 4 x (1024x128 @
  // 128x1024), and conv: its bf16 conv2d (f32 with HP_F32 set), N2 C64->64 56x56 3x3 padding 1, each
  // sampled on every thread by ITIMER_PROF (process CPU time, the kernel's tick).
  const bool all_threads = op == "bmm" || op == "conv";
  wick::Tensor x = wick::Tensor::rand_uniform({16}, wick::DType::F32, 0, 1, d);
  wick::Tensor ba = wick::Tensor::rand_uniform({4, 1024, 128}, wick::DType::BF16, -1, 1, d);
  wick::Tensor bb = wick::Tensor::rand_uniform({4, 128, 1024}, wick::DType::BF16, -1, 1, d);
  const wick::DType conv_dt = std::getenv("HP_F32") ? wick::DType::F32 : wick::DType::BF16;
  wick::Tensor cx = wick::Tensor::rand_uniform({2, 64, 56, 56}, conv_dt, -1, 1, d);
  wick::Tensor cw = wick::Tensor::rand_uniform({64, 64, 3, 3}, conv_dt, -1, 1, d);
  wick::Conv2dParams cp;
  cp.padding = {1, 1};
  const int64_t batch = all_threads ? 1 : 1000;
  auto run = [&](int64_t k) {
    if (all_threads) {
      for (int64_t i = 0; i < k; ++i) (void)(op == "conv" ? cx.conv2d(cw, cp) : ba.matmul(bb));
    } else {
      wick::Tensor y = x;
      for (int64_t i = 0; i < k; ++i) y = y.add(x);
    }
    d.synchronize();
  };
  run(all_threads ? 50 : 2000);
  const auto u0 = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < ops; done += batch) run(batch);
  const double plain_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - u0).count();
  std::printf("%s %s: %.3f us per op (not sampled)\n", dev_name.c_str(), op.c_str(),
              plain_us / static_cast<double>(ops));
  {
    void* warm[4];
    (void)backtrace(warm, 4);  // loads the unwinder before the first signal
  }
  g_samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  timer_t timer{};
  if (all_threads) {
    itimerval it{};
    it.it_interval.tv_usec = period_us;
    it.it_value.tv_usec = period_us;
    setitimer(ITIMER_PROF, &it, nullptr);
  } else {
    sigevent sev{};
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = SIGPROF;
    sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
    timer_create(CLOCK_MONOTONIC, &sev, &timer);
    itimerspec its{};
    its.it_interval.tv_nsec = period_us * 1000;
    its.it_value.tv_nsec = period_us * 1000;
    timer_settime(timer, 0, &its, nullptr);
  }
  g_on = true;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < ops; done += batch) run(batch);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  g_on = false;
  if (all_threads) {
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
  } else {
    timer_delete(timer);
  }
  g_count = std::min(g_next.load(), kMaxSamples);
  std::printf("%s %s: %lld ops, %.3f us per op (sampled), %d samples\n", dev_name.c_str(), op.c_str(),
              static_cast<long long>(ops), us / static_cast<double>(ops), g_count);

  std::map<void*, std::string> names;
  auto name = [&](void* pc) -> const std::string& {
    auto it = names.find(pc);
    if (it == names.end()) it = names.emplace(pc, name_of(pc)).first;
    return it->second;
  };
  std::map<std::string, int> self, incl;
  for (int i = 0; i < g_count; ++i) {
    const Sample& s = g_samples[i];
    // Frame 0 is the handler, 1 the signal trampoline, 2 the interrupted function.
    if (s.depth <= 2) continue;
    self[name(s.pc[2])]++;
    std::set<std::string> seen;
    for (int f = 2; f < s.depth; ++f)
      if (seen.insert(name(f == 2 ? s.pc[f] : static_cast<char*>(s.pc[f]) - 1)).second)
        incl[name(f == 2 ? s.pc[f] : static_cast<char*>(s.pc[f]) - 1)]++;
  }
  auto print = [&](const char* title, const std::map<std::string, int>& m, int top) {
    std::vector<std::pair<int, std::string>> v;
    for (const auto& [k, c] : m) v.emplace_back(c, k);
    std::sort(v.rbegin(), v.rend());
    std::printf("\n%s (%% of %d samples)\n", title, g_count);
    for (int i = 0; i < std::min<int>(top, static_cast<int>(v.size())); ++i)
      std::printf("%6.2f%%  %s\n", 100.0 * v[i].first / g_count, v[i].second.c_str());
  };
  print("exclusive", self, 45);
  print("inclusive", incl, 70);
  return 0;
}
