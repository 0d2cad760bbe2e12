// Variants of the one-block-per-row radix sort (Note [GPU radix sort] in src/gpu/kernels/sort.cu),
// standalone, for f32 rows of 32768 ascending with values and i64 indices out: each variant's median
// ms of 20 runs on [rows, n] random floats, checked against variant 0 (the library's scheme before
// session 18) bit for bit, and variant 0 against std::stable_sort on a few rows. Build and run on the
// GPU machine:
//   nvcc -std=c++20 -O3 -arch=sm_90 -o /tmp/sort_rows scripts/probes/sort_rows.cu && /tmp/sort_rows [rows]
// Profile one variant: ncu --kernel-name regex:sort_c --launch-skip 3 --launch-count 1 ... (variant
// 2; regex:sort_v for variant 0). On the H100, 4096 rows: v0 3.80 ms, v1 4.70, v2 3.10 (the
// library's scheme since), v3 3.85, v4 2.91 (the library's with its perm swizzle), v5 3.00, v6 2.82.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

constexpr int kThreads = 1024, kItems = 32, kDigits = 256, kWarps = kThreads / 32;
constexpr int kCountBytes = kWarps * kDigits * 2 + kDigits / 32 * 4;

__device__ __forceinline__ uint32_t key_of(float x) {
  if (x != x) return ~0u;
  const uint32_t b = __float_as_uint(x == 0.0f ? 0.0f : x);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Variant 0: 8 ballots per element (the library). Variant 1: match_any.
template <int V>
__device__ __forceinline__ uint32_t rank_of(uint16_t* cnt, uint32_t d) {
  const int lane = threadIdx.x % 32;
  uint32_t peers;
  if constexpr (V == 0) {
    peers = ~0u;
#pragma unroll
    for (int b = 0; b < 8; ++b) {
      const bool bit = (d >> b) & 1;
      const uint32_t m = __ballot_sync(~0u, bit);
      peers &= bit ? m : ~m;
    }
  } else {
    peers = __match_any_sync(~0u, d);
  }
  const uint32_t before = cnt[d];
  __syncwarp();
  if ((peers >> lane) == 1) cnt[d] = static_cast<uint16_t>(before + __popc(peers));
  __syncwarp();
  return before + __popc(peers & ((1u << lane) - 1));
}

template <int V>
__global__ void __launch_bounds__(kThreads)
    sort_v(const float* src, float* vals_out, int64_t* idx_out, int64_t rows, int n) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* cnt = reinterpret_cast<uint16_t*>(smem);
  int* wsum = reinterpret_cast<int*>(smem + kWarps * kDigits * 2);
  float* vals = reinterpret_cast<float*>(smem + kCountBytes);
  uint16_t* perm = reinterpret_cast<uint16_t*>(vals + kItems * kThreads);
  const int t = threadIdx.x, lane = t % 32, w = t / 32;
  uint16_t* my_cnt = cnt + w * kDigits;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* s = src + r * n;
#pragma unroll 8
    for (int q = t; q < n; q += kThreads) vals[q] = s[q];
    for (int d = lane; d < kDigits; d += 32) my_cnt[d] = 0;
    __syncthreads();
#pragma unroll 1
    for (int pass = 0; pass < 4; ++pass) {
      const int shift = 8 * pass;
      uint32_t item[kItems];
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const int j = (w * kItems + it) * 32 + lane;
        const uint32_t i = pass == 0 ? static_cast<uint32_t>(j) : perm[j];
        const uint32_t d = (key_of(vals[i]) >> shift) & (kDigits - 1);
        item[it] = i | rank_of<V>(my_cnt, d) << 16;
      }
      __syncthreads();
      int total = 0, incl = 0;
      if (t < kDigits) {
        for (int v = 0; v < kWarps; ++v) total += cnt[v * kDigits + t];
        incl = total;
        for (int k = 1; k < 32; k *= 2) {
          const int o = __shfl_up_sync(~0u, incl, k);
          if (lane >= k) incl += o;
        }
        if (lane == 31) wsum[w] = incl;
      }
      __syncthreads();
      if (t < kDigits) {
        int start = incl - total;
        for (int v = 0; v < w; ++v) start += wsum[v];
        for (int v = 0; v < kWarps; ++v) {
          const int c = cnt[v * kDigits + t];
          cnt[v * kDigits + t] = static_cast<uint16_t>(start);
          start += c;
        }
      }
      __syncthreads();
#pragma unroll
      for (int it = 0; it < kItems; ++it) {
        const uint32_t i = item[it] & 0xffffu;
        const uint32_t d = (key_of(vals[i]) >> shift) & (kDigits - 1);
        perm[my_cnt[d] + (item[it] >> 16)] = static_cast<uint16_t>(i);
      }
      __syncwarp();
      for (int d = lane; d < kDigits; d += 32) my_cnt[d] = 0;
      __syncthreads();
    }
    for (int q = t; q < n; q += kThreads) {
      const int i = perm[q];
      idx_out[r * n + q] = i;
      vals_out[r * n + q] = vals[i];
    }
    __syncthreads();
  }
}

// Variants 2 and 3 keep the row's keys (not its values) in shared memory, computed once on load;
// values come out by inverting the key, from src only where the key is +0's or NaN's (-0 and NaN
// payloads).
__device__ __forceinline__ float value_of(uint32_t k) {
  return __uint_as_float((k & 0x80000000u) ? (k ^ 0x80000000u) : ~k);
}

// Variants 2 and 3: digits of BITS bits ranked with per-thread counters instead of ballots. Thread t owns
// positions [t*IT, (t+1)*IT) of the current order and counts its digits in its own column of cnt
// (two digits d and d + D/2 per u32 word, low and high half); an exclusive scan of the words in
// (row, thread) order then gives each (digit, thread) its first position: the low halves run over
// digits 0..D/2-1 and the high halves over the rest, which start after all the low ones (total_lo).
// keys are swizzled (swz) so that a thread's run of 32 is spread over the banks.
__device__ __forceinline__ uint32_t swz(uint32_t p) { return p ^ ((p >> 5) & 31u); }

// PSW: perm swizzled in 16-byte chunks (chunk c at c ^ ((c >> 3) & 3)), so that a thread's four
// vector reads of its 32 positions spread over the banks. PRE: the next row's elements are read
// into registers before this row's outputs are written, and stored after them.
__device__ __forceinline__ uint32_t pslot(uint32_t pos) { return pos ^ ((pos >> 3) & 0x18u); }

template <int TH, int IT, int BITS, bool PSW = false, bool PRE = false>
__global__ void __launch_bounds__(TH) sort_c(const float* src, float* vals_out, int64_t* idx_out, int64_t rows, int n) {
  constexpr int N = TH * IT, D = 1 << BITS, R = D / 2, W = TH / 32, WPT = R;  // words per thread in the scan
  constexpr int passes = (32 + BITS - 1) / BITS;
  static_assert(IT % 8 == 0 && N <= 65536 && R * TH % TH == 0);
  extern __shared__ __align__(16) unsigned char smem[];
  uint32_t* keys = reinterpret_cast<uint32_t*>(smem);
  uint16_t* perm = reinterpret_cast<uint16_t*>(keys + N);
  uint32_t* cnt = reinterpret_cast<uint32_t*>(perm + N);
  uint32_t* wsum = cnt + R * TH;
  const int t = threadIdx.x, lane = t % 32, w = t / 32;
  uint32_t next[PRE ? IT : 1];
  if constexpr (PRE) {
    if (blockIdx.x < rows) {
#pragma unroll
      for (int k = 0; k < IT; ++k) {
        const int q = t + k * TH;
        next[k] = q < n ? key_of(src[blockIdx.x * n + q]) : ~0u;
      }
    }
  }
#pragma unroll
  for (int k = 0; k < R; ++k) cnt[k * TH + t] = 0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float* s = src + r * n;
    if constexpr (PRE) {
#pragma unroll
      for (int k = 0; k < IT; ++k) keys[swz(t + k * TH)] = next[k];
    } else {
#pragma unroll 8
      for (int q = t; q < N; q += TH) keys[swz(q)] = q < n ? key_of(s[q]) : ~0u;
    }
    __syncthreads();
#pragma unroll 1
    for (int pass = 0; pass < passes; ++pass) {
      const int shift = BITS * pass;
      uint32_t item[IT];
#pragma unroll
      for (int m = 0; m < IT / 8; ++m) {
        uint32_t pp[8];
        if (pass == 0) {
#pragma unroll
          for (int k = 0; k < 8; ++k) pp[k] = t * IT + m * 8 + k;
        } else {
          const uint32_t c = t * (IT / 8) + m;
          const uint4 v = reinterpret_cast<const uint4*>(perm)[PSW ? c ^ ((c >> 3) & 3u) : c];
          const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            pp[2 * k] = u[k] & 0xffffu;
            pp[2 * k + 1] = u[k] >> 16;
          }
        }
#pragma unroll
        for (int k = 0; k < 8; ++k) {
          const uint32_t p = pp[k];
          const uint32_t d = (keys[swz(p)] >> shift) & (D - 1);
          const uint32_t hi = d >> (BITS - 1);
          uint32_t* c = cnt + (d & (R - 1)) * TH + t;
          const uint32_t old = *c;
          *c = old + (1u << (16 * hi));
          const uint32_t rank = (old >> (16 * hi)) & 0xffffu;
          item[m * 8 + k] = p | d << 16 | rank << (16 + BITS);
        }
      }
      __syncthreads();
      // Scan of the R * TH words; thread t takes words [t * WPT, (t + 1) * WPT).
      uint32_t wv[WPT];
      uint32_t local = 0;
#pragma unroll
      for (int k = 0; k < WPT / 4; ++k) {
        const uint4 v = reinterpret_cast<const uint4*>(cnt + t * WPT)[k];
        wv[4 * k] = v.x, wv[4 * k + 1] = v.y, wv[4 * k + 2] = v.z, wv[4 * k + 3] = v.w;
      }
#pragma unroll
      for (int k = 0; k < WPT; ++k) local += wv[k];
      uint32_t incl = local;
#pragma unroll
      for (int o = 1; o < 32; o *= 2) {
        const uint32_t x = __shfl_up_sync(~0u, incl, o);
        if (lane >= o) incl += x;
      }
      if (lane == 31) wsum[w] = incl;
      __syncthreads();
      uint32_t ws = lane < W ? wsum[lane] : 0, wincl = ws;
#pragma unroll
      for (int o = 1; o < 32; o *= 2) {
        const uint32_t x = __shfl_up_sync(~0u, wincl, o);
        if (lane >= o) wincl += x;
      }
      const uint32_t total = __shfl_sync(~0u, wincl, 31);
      uint32_t run = __shfl_sync(~0u, wincl - ws, w) + incl - local;
#pragma unroll
      for (int k = 0; k < WPT; ++k) {
        const uint32_t c = wv[k];
        wv[k] = run;
        run += c;
      }
#pragma unroll
      for (int k = 0; k < WPT / 4; ++k)
        reinterpret_cast<uint4*>(cnt + t * WPT)[k] = make_uint4(wv[4 * k], wv[4 * k + 1], wv[4 * k + 2], wv[4 * k + 3]);
      const uint32_t total_lo = total & 0xffffu;
      __syncthreads();
#pragma unroll
      for (int k = 0; k < IT; ++k) {
        const uint32_t p = item[k] & 0xffffu, d = (item[k] >> 16) & (D - 1), rank = item[k] >> (16 + BITS);
        const uint32_t hi = d >> (BITS - 1);
        const uint32_t word = cnt[(d & (R - 1)) * TH + t];
        const uint32_t base = ((word >> (16 * hi)) & 0xffffu) + (hi ? total_lo : 0u);
        perm[PSW ? pslot(base + rank) : base + rank] = static_cast<uint16_t>(p);
      }
#pragma unroll
      for (int k = 0; k < R; ++k) cnt[k * TH + t] = 0;
      __syncthreads();
    }
    if constexpr (PRE) {
      if (r + gridDim.x < rows) {
#pragma unroll
        for (int k = 0; k < IT; ++k) {
          const int q = t + k * TH;
          next[k] = q < n ? key_of(src[(r + gridDim.x) * n + q]) : ~0u;
        }
      }
    }
    for (int q = t; q < n; q += TH) {
      const int i = perm[PSW ? pslot(q) : q];
      const uint32_t k = keys[swz(i)];
      idx_out[r * n + q] = i;
      vals_out[r * n + q] = (k == 0x80000000u || k == ~0u) ? s[i] : value_of(k);
    }
    __syncthreads();
  }
}

template <int TH, int IT, int BITS>
constexpr size_t smem_c() {
  return static_cast<size_t>(TH) * IT * 6 + (size_t{1} << (BITS - 1)) * TH * 4 + 32 * 4;
}

using Kernel = void (*)(const float*, float*, int64_t*, int64_t, int);

struct Variant {
  const char* name;
  Kernel k;
  size_t smem;
  int threads;
};

int main(int argc, char** argv) {
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int n = 32768;
  const size_t smem = kCountBytes + static_cast<size_t>(n) * 6;
  std::vector<float> h(rows * n);
  std::mt19937 g(7);
  std::normal_distribution<float> nd;
  for (auto& x : h) x = nd(g);
  for (int i = 0; i < 64; ++i) h[static_cast<size_t>(g() % h.size())] = -0.0f;  // ties across zero
  for (int i = 0; i < 4096; ++i) h[static_cast<size_t>(g() % h.size())] = h[static_cast<size_t>(g() % h.size())];
  float *src, *vo;
  int64_t* io;
  CK(cudaMalloc(&src, h.size() * 4));
  CK(cudaMalloc(&vo, h.size() * 4));
  CK(cudaMalloc(&io, h.size() * 8));
  CK(cudaMemcpy(src, h.data(), h.size() * 4, cudaMemcpyHostToDevice));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const Variant vs[] = {{"v0 ballots", sort_v<0>, smem, kThreads},
                        {"v1 match_any", sort_v<1>, smem, kThreads},
                        {"v2 counters 1024x32 4b", sort_c<1024, 32, 4>, smem_c<1024, 32, 4>(), 1024},
                        {"v3 counters 512x64 5b", sort_c<512, 64, 5>, smem_c<512, 64, 5>(), 512},
                        {"v4 v2 + perm swizzle", sort_c<1024, 32, 4, true>, smem_c<1024, 32, 4>(), 1024},
                        {"v5 v2 + prefetch", sort_c<1024, 32, 4, false, true>, smem_c<1024, 32, 4>(), 1024},
                        {"v6 v2 + both", sort_c<1024, 32, 4, true, true>, smem_c<1024, 32, 4>(), 1024}};
  std::vector<int64_t> ref;
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const double bytes = static_cast<double>(rows) * n * 16;
  for (const Variant& v : vs) {
    CK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(v.smem)));
    const unsigned grid = static_cast<unsigned>(std::min<int64_t>(rows, sms));
    std::vector<float> ms;
    for (int rep = 0; rep < 23; ++rep) {
      CK(cudaMemset(io, 0xff, h.size() * 8));
      CK(cudaEventRecord(e0));
      v.k<<<grid, v.threads, v.smem>>>(src, vo, io, rows, n);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float x;
      CK(cudaEventElapsedTime(&x, e0, e1));
      if (rep >= 3) ms.push_back(x);
    }
    std::sort(ms.begin(), ms.end());
    std::vector<int64_t> idx(h.size());
    CK(cudaMemcpy(idx.data(), io, idx.size() * 8, cudaMemcpyDeviceToHost));
    const char* check = ref.empty() ? "reference" : "same as v0";
    if (ref.empty()) {
      ref = idx;
      for (int64_t r : {int64_t{0}, rows / 2, rows - 1}) {
        std::vector<int64_t> want(n);
        std::iota(want.begin(), want.end(), 0);
        const float* row = h.data() + r * n;
        auto key = [&](int64_t i) {
          const float x = row[i];
          return x != x ? INFINITY : x;
        };
        std::stable_sort(want.begin(), want.end(), [&](int64_t a, int64_t b) { return key(a) < key(b); });
        if (!std::equal(want.begin(), want.end(), idx.begin() + r * n)) check = "WRONG vs std::stable_sort";
      }
    } else if (idx != ref) {
      check = "DIFFERS from v0";
    }
    std::vector<float> vals(h.size());
    CK(cudaMemcpy(vals.data(), vo, vals.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t q = 0; q < vals.size(); ++q) {
      const size_t r = q / n;
      const int64_t i = idx[q];
      if (i < 0 || i >= n || std::memcmp(&vals[q], &h[r * n + i], 4) != 0) {
        check = "VALUES WRONG";
        break;
      }
    }
    std::printf("%-16s %8.4f ms (min %.4f)  %6.0f GB/s  %s\n", v.name, ms[ms.size() / 2], ms[0],
                bytes / ms[ms.size() / 2] / 1e6, check);
  }
  return 0;
}
