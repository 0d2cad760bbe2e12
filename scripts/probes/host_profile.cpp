// Where the host time of a chain of small ops goes, on a machine without perf: a sampling profiler
// in the process. A POSIX timer signals the main thread every 50 us of wall time (argv[3]); the handler stores
// the call stack (glibc backtrace over the unwind tables), and at the end each function gets its
// share of samples, exclusive (at the top of the stack) and inclusive (anywhere in it).
// Build against a build of wick (CUDA or not) and run where it should be measured; with the build
// in B (scripts/gpu-check.sh's build-gpu on the GPU machine):
//   L=$(awk '/^build wick:/{f=1} f&&/LINK_LIBRARIES/{sub(/.*LINK_LIBRARIES = /,""); print; exit}' \
//       $B/build.ninja | sed "s|libwick_check.a||; s|libwick.a|$B/libwick.a|")
//   g++ -std=c++20 -O2 -rdynamic -Iinclude -o /tmp/hp scripts/probes/host_profile.cpp $L \
//       -L/usr/local/cuda/targets/x86_64-linux/lib && /tmp/hp [cpu|cuda] [ops] [period_us]
// -rdynamic lets dladdr name wick's own functions; functions with internal linkage show as [hp].
#include <cxxabi.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
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
volatile int g_count = 0;
volatile bool g_on = false;

void on_signal(int, siginfo_t*, void*) {
  if (!g_on || g_count >= kMaxSamples) return;
  Sample& s = g_samples[g_count];
  s.depth = backtrace(s.pc, kDepth);
  g_count = g_count + 1;
}

std::string name_of(void* pc) {
  Dl_info info{};
  if (!dladdr(pc, &info) || !info.dli_fname) return "?";
  std::string lib = info.dli_fname;
  lib = lib.substr(lib.find_last_of('/') + 1);
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
  const long period_ns = argc > 3 ? std::atol(argv[3]) * 1000 : 50000;  // sampling period, us
  wick::Device d = dev_name == "cpu" ? wick::Device::cpu() : wick::Device::cuda(0);
  wick::Tensor x = wick::Tensor::rand_uniform({16}, wick::DType::F32, 0, 1, d);
  auto chain = [&](int64_t k) {
    wick::Tensor y = x;
    for (int64_t i = 0; i < k; ++i) y = y.add(x);
    d.synchronize();
  };
  chain(2000);
  const auto u0 = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < ops; done += 1000) chain(1000);
  const double plain_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - u0).count();
  std::printf("%s: %.3f us per op (not sampled)\n", dev_name.c_str(), plain_us / static_cast<double>(ops));
  {
    void* warm[4];
    (void)backtrace(warm, 4);  // loads the unwinder before the first signal
  }
  g_samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = SIGPROF;
  sev._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));
  timer_t timer;
  timer_create(CLOCK_MONOTONIC, &sev, &timer);
  itimerspec its{};
  its.it_interval.tv_nsec = period_ns;
  its.it_value.tv_nsec = period_ns;
  g_on = true;
  timer_settime(timer, 0, &its, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t done = 0; done < ops; done += 1000) chain(1000);
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  g_on = false;
  timer_delete(timer);
  std::printf("%s: %lld ops, %.3f us per op (sampled), %d samples\n", dev_name.c_str(), static_cast<long long>(ops),
              us / static_cast<double>(ops), g_count);

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
