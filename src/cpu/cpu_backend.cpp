#include "cpu/cpu_backend.h"

#include <sys/mman.h>

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>

#include "backend/dispatch.h"
#include "backend/philox.h"
#include "cpu/gemm.h"
#include "cpu/simd.h"
#include "cpu/strided.h"

namespace wick::cpu {

CpuBackend& backend() {
  static const bool blas_ready = (select_blas_core(), true);  // before any BLAS call
  (void)blas_ready;
  static CpuBackend b;
  return b;
}

namespace {
int64_t meminfo_bytes(const char* key) {
  std::ifstream f("/proc/meminfo");
  std::string k;
  int64_t v = 0;
  std::string unit;
  while (f >> k >> v >> unit)
    if (k == key) return v * 1024;
  return 0;
}
std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  return "cpu";
}
}  // namespace

DeviceInfo CpuBackend::info() const {
  DeviceInfo i;
  i.name = cpu_model();
#if defined(__x86_64__)
  i.architecture = "x86_64";
#elif defined(__aarch64__)
  i.architecture = "aarch64";
#else
  i.architecture = "unknown";
#endif
  i.total_memory = meminfo_bytes("MemTotal:");
  i.free_memory = meminfo_bytes("MemAvailable:");
  i.multiprocessors = num_threads();
  i.warp_size = 0;
  i.details = std::string("vector kernels ") + simd::isa_name(simd::active()) + ", " + std::to_string(num_threads()) +
              " threads; " + blas_details();
  return i;
}

// Note [Huge pages for large tensors]: a fresh large block comes from mmap, and its first writer
// takes one page fault per 4 KiB page, which costs several times the copy into a reused block.
// Blocks of at least kHugeMin are aligned to 2 MiB and marked MADV_HUGEPAGE, so that the kernel
// maps them in 2 MiB pages where transparent huge pages are enabled ("always" or "madvise"). The
// hint is advisory; where it is refused, the block is used with small pages.
//
// Note [CPU block cache]: even in huge pages, the kernel clears every page of a new mapping, a
// large share of a memory-bound op's time. So freed large blocks are kept, by size, for the next
// allocation of the same rounded size, up to kCacheMax bytes (or an eighth of the machine's
// memory, if less); empty_cache(Device::cpu()) gives them back, and an allocation that fails gives
// them back and tries again. Blocks from kCacheMin up to kHugeMin go through the cache too, in
// multiples of 64 KiB: malloc hands them out from the top of its heap and gives that back to the
// kernel when they are freed (its trim threshold follows the largest block it has freed, a few
// MiB), so each call of an op with a few MiB of scratch faulted its pages in afresh. Smaller
// blocks go straight to malloc, which reuses them.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHugeMin = size_t{4} << 20;
constexpr size_t kCacheMin = size_t{256} << 10;
constexpr size_t kCacheAlign = size_t{64} << 10;  // blocks of the cache below kHugeMin
constexpr size_t kCacheMax = size_t{4} << 30;

struct BlockCache {
  std::mutex mu;
  std::unordered_map<void*, size_t> live;       // large blocks in use -> rounded size
  std::unordered_multimap<size_t, void*> free;  // cached large blocks by rounded size
  size_t cached = 0;
  size_t limit = 0;

  BlockCache() {
    const int64_t total = meminfo_bytes("MemTotal:");
    limit = total > 0 ? std::min(kCacheMax, static_cast<size_t>(total) / 8) : kCacheMax;
  }
  void release_all() {  // with mu held
    for (auto& [size, p] : free) std::free(p);
    free.clear();
    cached = 0;
  }
};

BlockCache& block_cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: tensors may outlive static destruction
  return *c;
}

void* CpuBackend::raw_alloc(int64_t nbytes) {
  if (static_cast<size_t>(nbytes) < kCacheMin) {
    // 64-byte alignment for vector loads; size rounded up as aligned_alloc requires.
    const size_t n = (static_cast<size_t>(nbytes) + 63) & ~size_t{63};
    if (void* p = std::aligned_alloc(64, n)) return p;
    empty_cache();  // out of memory: give the cached blocks back and try once more
    if (void* p = std::aligned_alloc(64, n)) return p;
  } else {
    const bool huge = static_cast<size_t>(nbytes) >= kHugeMin;
    const size_t align = huge ? kHugePage : kCacheAlign;
    const size_t n = (static_cast<size_t>(nbytes) + align - 1) & ~(align - 1);
    BlockCache& c = block_cache();
    std::lock_guard<std::mutex> lock(c.mu);
    void* p = nullptr;
    if (auto it = c.free.find(n); it != c.free.end()) {
      p = it->second;
      c.free.erase(it);
      c.cached -= n;
    } else {
      p = std::aligned_alloc(align, n);
      if (!p && c.cached > 0) {
        c.release_all();
        p = std::aligned_alloc(align, n);
      }
#ifdef MADV_HUGEPAGE
      if (p && huge) (void)madvise(p, n, MADV_HUGEPAGE);
#endif
    }
    if (p) {
      c.live.emplace(p, n);
      return p;
    }
  }
  throw OutOfMemory("[alloc] cannot allocate " + std::to_string(nbytes) + " bytes on cpu (" +
                    std::to_string(meminfo_bytes("MemAvailable:")) + " bytes available)");
}

void CpuBackend::raw_free(void* p) {
  if (p == nullptr) return;
  BlockCache& c = block_cache();
  // Blocks of the cache are 64 KiB aligned (a few of malloc's may be too: not found in `live`).
  if ((reinterpret_cast<uintptr_t>(p) & (kCacheAlign - 1)) == 0) {
    std::lock_guard<std::mutex> lock(c.mu);
    if (auto it = c.live.find(p); it != c.live.end()) {
      const size_t n = it->second;
      c.live.erase(it);
      if (c.cached + n <= c.limit) {
        c.free.emplace(n, p);
        c.cached += n;
        return;
      }
    }
  }
  std::free(p);
}

void CpuBackend::empty_cache() {
  BlockCache& c = block_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.release_all();
}

void CpuBackend::copy_from_host(void* dst, const void* src, int64_t nbytes) {
  std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

void CpuBackend::copy_to_host(void* dst, const void* src, int64_t nbytes) {
  std::memcpy(dst, src, static_cast<size_t>(nbytes));
}

// Note [CPU fill]: a contiguous dst is filled as bytes, the value repeated into an 8-byte pattern,
// by simd.h's fill kernel (64-byte vector stores on AVX-512) in chunks split across threads at
// 64-byte line boundaries, so that no two threads write one line. A plain store first reads its
// line into the cache (read-for-ownership), which beyond the caches doubles the memory traffic of
// a fill. Non-temporal stores write whole lines to memory without reading them (each chunk's
// kernel fences them before the parallel region's barrier), but they also leave nothing in the
// cache, so a buffer that fits there is far slower to fill again, or to read next. So a fill
// streams when it is more than twice the last-level cache (read once from sysfs, the caches of
// cpu0), and more than 8 MiB, the threshold where sysfs does not say. Strided dsts keep the
// elementwise map.
namespace {
int64_t stream_fill_above() {
  static const int64_t bytes_above = [] {
    int64_t llc = 0;
    for (int i = 0; i < 8; ++i) {
      const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
      std::ifstream lf(dir + "level"), tf(dir + "type"), sf(dir + "size");
      int level = 0;
      std::string type, size;
      if (!(lf >> level) || !(tf >> type) || !(sf >> size) || type == "Instruction") continue;
      const int64_t unit = size.back() == 'K' ? 1024 : size.back() == 'M' ? 1024 * 1024 : 1;
      const int64_t bytes = std::atoll(size.c_str()) * unit;
      if (level >= 2 && bytes > llc) llc = bytes;
    }
    return std::max<int64_t>(int64_t{8} << 20, 2 * llc);
  }();
  return bytes_above;
}
}  // namespace

void CpuBackend::const_set(const TensorArg& dst, Scalar value) {
  dispatch(dst.dtype, [&]<class T>() {
    const T v = value.as<T>();
    if constexpr (sizeof(T) <= 8 && 8 % sizeof(T) == 0) {
      if (dst.layout.is_contiguous()) {
        uint64_t pattern = 0;
        for (size_t k = 0; k < 8; k += sizeof(T)) std::memcpy(reinterpret_cast<char*>(&pattern) + k, &v, sizeof(T));
        char* const p = reinterpret_cast<char*>(dst.ptr<T>());
        const int64_t nbytes = dst.numel() * static_cast<int64_t>(sizeof(T));
        const bool stream = nbytes > stream_fill_above();
        const auto fill = simd::kernels().fill;
        // 64-byte lines counted from the one holding p; a chunk [b, e) writes dst's part of lines b..e-1.
        const uintptr_t line0 = reinterpret_cast<uintptr_t>(p) & ~uintptr_t{63};
        const int64_t lead = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p) - line0);
        const int64_t lines = (lead + nbytes + 63) / 64;
        parallel_ranges(lines, (kGrain * 4) / 64, [&](int64_t b, int64_t e) {
          const int64_t from = std::max<int64_t>(b * 64 - lead, 0), to = std::min<int64_t>(e * 64 - lead, nbytes);
          // The pattern repeats every 8 bytes from p; chunks start at a multiple of 8 from p
          // unless p is not 8-byte aligned, where the pattern is seen from `from` on.
          uint64_t q = pattern;
          if (const int r = static_cast<int>(from & 7) * 8; r != 0)
            q = std::endian::native == std::endian::little ? (q >> r) | (q << (64 - r)) : (q << r) | (q >> (64 - r));
          fill(p + from, to - from, q, stream);
        });
        return;
      }
    }
    map<T>([v]() { return v; }, dst);
  });
}

void CpuBackend::arange(const TensorArg& dst, const ArangeParams& p) {
  const double start = p.start, step = p.step;
  // Integer starts and steps count in int64 (exact beyond 2^53) when every value fits well inside
  // it; otherwise (and for fractional arguments) in f64.
  const double last = start + static_cast<double>(dst.numel() - 1) * step;
  const bool int_path = std::floor(start) == start && std::floor(step) == step && std::fabs(start) < 0x1p62 &&
                        std::fabs(step) < 0x1p62 && std::fabs(last) < 0x1p62;
  dispatch(dst.dtype, [&]<class T>() {
    T* p = dst.ptr<T>();
    const int64_t s = dst.layout.stride(0);
    parallel_for(dst.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        if constexpr (std::is_integral_v<T>) {
          // Saturating, like the f64 path: arange(250, 260, 1) in u8 ends in 255s.
          p[i * s] = int_path ? saturate_int<T>(static_cast<int64_t>(start) + i * static_cast<int64_t>(step))
                              : convert<T>(start + static_cast<double>(i) * step);
        } else {
          p[i * s] = convert<T>(start + static_cast<double>(i) * step);
        }
      }
    });
  });
}

namespace {

// The random ops' loop (Note [Random streams] in src/backend/philox.h): element i of the flat
// (row-major) index comes from Philox block i / G::kPer. The blocks' words come from simd's philox
// kernel, kRandomBlocks at a time into a buffer, and become values by its uniform_f32 / normal_f32
// (Note [CPU random] in simd_random.cpp) for every type but f64, rounded once to T; f64 takes its values
// from the words by g.values, philox.h's expressions. A strided dst is filled through a contiguous
// buffer.
constexpr int64_t kRandomBlocks = 256;

template <class T, class G>
void fill_random(const TensorArg& dst, const G& g) {
  constexpr int P = G::kPer;
  const int64_t n = dst.numel();
  std::vector<T> tmp;
  T* out = dst.layout.is_contiguous() ? dst.ptr<T>() : (tmp.resize(static_cast<size_t>(n)), tmp.data());
  const simd::Kernels& kn = simd::kernels();
  parallel_for((n + P - 1) / P, 1024, [&](int64_t kb, int64_t ke) {
    alignas(64) uint32_t words[4 * kRandomBlocks];
    alignas(64) float vals[4 * kRandomBlocks];
    for (int64_t k0 = kb; k0 < ke; k0 += kRandomBlocks) {
      const int64_t nb = std::min(kRandomBlocks, ke - k0), i0 = k0 * P, m = std::min(nb * P, n - i0);
      kn.philox(&g.ks.k[0][0], g.counter + static_cast<uint64_t>(k0), nb, words);
      if constexpr (std::is_same_v<T, double>) {
        for (int64_t b = 0; b < nb; ++b) {
          double v[P];
          g.values(philox::Block{{words[4 * b], words[4 * b + 1], words[4 * b + 2], words[4 * b + 3]}}, v);
          for (int64_t j = 0; j < P && b * P + j < m; ++j) out[i0 + b * P + j] = v[j];
        }
      } else {
        constexpr bool kUniform = std::is_same_v<G, philox::Uniform<T>>;
        // f32 goes straight into dst, except for normals whose last block dst ends within (the
        // kernel writes whole blocks of normals)
        float* f = vals;
        if constexpr (std::is_same_v<T, float>)
          if (kUniform || m == nb * P) f = out + i0;
        if constexpr (kUniform) {
          kn.uniform_f32(words, f, m, g.lo_f, g.span_f, g.up_f);
        } else {
          kn.normal_f32(words, f, nb * P, g.mean_f, g.std_f);
        }
        if (f == vals) {
          if (const auto cvt = simd::converter<T, float>()) {
            cvt(vals, out + i0, m);
          } else {
            for (int64_t j = 0; j < m; ++j) out[i0 + j] = convert<T>(vals[j]);
          }
        }
        if constexpr (kUniform)  // Note [Uniform upper bound]
          for (int64_t j = 0; j < m; ++j) out[i0 + j] = g.below_up(out[i0 + j]);
      }
    }
  });
  if (!tmp.empty()) map<T, T>([](T v) { return v; }, dst, TensorArg(tmp.data(), dst.dtype, Layout(dst.shape())));
}

}  // namespace

void CpuBackend::rand_uniform(const TensorArg& dst, const RandomParams& p) {
  const RandomStream& rs = p.stream;
  dispatch_in<kFloatTypes>(
      dst.dtype, [&]<class T>() { fill_random<T>(dst, philox::Uniform<T>(rs.seed, rs.counter, p.a, p.b)); },
      "rand_uniform");
}

void CpuBackend::rand_normal(const TensorArg& dst, const RandomParams& p) {
  const RandomStream& rs = p.stream;
  dispatch_in<kFloatTypes>(
      dst.dtype, [&]<class T>() { fill_random<T>(dst, philox::Normal<T>(rs.seed, rs.counter, p.a, p.b)); },
      "rand_normal");
}

namespace {

// A same-type copy (c: the collapsed layouts, dst first) of a source transposed against a row-major
// dst (x.t().contiguous()) by simd's transpose kernel, a tile at a time (Note [CPU transpose] in
// simd_memory.cpp); false, having written nothing, where the operands are not so laid out or the elements
// are not of 2, 4 or 8 bytes.
bool copy_transposed(const Collapsed<2>& c, const TensorArg& src, const TensorArg& dst) {
  const int64_t es = dtype_size(dst.dtype);
  if ((es != 2 && es != 4 && es != 8) || src.layout.is_contiguous()) return false;
  const size_t rank = c.shape.size();
  if (c.numel == 0 || !transposed_operand(c, 1) || transposed_operand(c, 0) || c.strides[0][rank - 1] != 1)
    return false;
  const int64_t dr = c.strides[0][rank - 2], sc = c.strides[1][rank - 1];
  char* const out = static_cast<char*>(dst.data) + dst.layout.offset() * es;
  const char* const in = static_cast<const char*>(src.data) + src.layout.offset() * es;
  const auto kernel = simd::kernels().transpose;
  for_each_tile_block<2>(c, [&](const std::array<int64_t, 2>& off, int64_t i0, int64_t j0, int64_t ni, int64_t nj) {
    kernel(in + (off[1] + i0 + j0 * sc) * es, sc, out + (off[0] + i0 * dr + j0) * es, dr, ni, nj, static_cast<int>(es));
  });
  return true;
}

// Note [CPU copies of runs]
// A same-type copy whose layouts, collapsed, end in a dim of unit stride on both sides (a clone,
// x.transpose(1, 2).contiguous() of [B, T, H, D] attention heads, a narrowed view made contiguous)
// moves each run of that dim with one memmove (a view copied onto itself is one call with equal
// pointers, which memcpy leaves undefined), the runs split across threads, instead of map<T, T>'s
// element loop, which costs more instructions per element than the walk over the runs. Runs
// shorter than kMinRunBytes keep the element loop. A copy waits on memory, not on arithmetic, so
// from kCopyParallelBytes on it takes a thread per kCopyGrainBytes, not per kGrain elements: a copy
// of a few hundred KB then runs on every thread.
constexpr int64_t kMinRunBytes = 32;
constexpr int64_t kCopyGrainBytes = 32 * 1024, kCopyParallelBytes = 128 * 1024;

bool copy_runs(const Collapsed<2>& c, const TensorArg& src, const TensorArg& dst) {
  const size_t rank = c.shape.size();
  const int64_t es = dtype_size(dst.dtype), inner = c.shape[rank - 1];
  if (c.numel == 0 || c.strides[0][rank - 1] != 1 || c.strides[1][rank - 1] != 1 || inner * es < kMinRunBytes)
    return false;
  char* const out = static_cast<char*>(dst.data) + dst.layout.offset() * es;
  const char* const in = static_cast<const char*>(src.data) + src.layout.offset() * es;
  // Below kCopyParallelBytes one grain spans the whole copy, which then runs inline.
  const int64_t grain = c.numel * es < kCopyParallelBytes ? c.numel : std::max<int64_t>(1, kCopyGrainBytes / es);
  for_each_piece<2>(
      c, std::min(inner, kGrain),
      [&](const std::array<int64_t, 2>& off, int64_t n, const auto&) {
        std::memmove(out + off[0] * es, in + off[1] * es, static_cast<size_t>(n * es));
      },
      grain);
  return true;
}

// A same-type copy by tiles or by runs (the two above), the layouts collapsed once for both; false,
// having written nothing, where neither applies.
bool copy_same_type(const TensorArg& src, const TensorArg& dst) {
  if (src.dtype != dst.dtype) return false;
  const Collapsed<2> c = collapse<2>(dst.shape(), {&dst.layout.strides(), &src.layout.strides()});
  return copy_transposed(c, src, dst) || copy_runs(c, src, dst);
}

}  // namespace

void CpuBackend::copy_batch(std::span<const TensorArg> srcs, std::span<const TensorArg> dsts) {
  copy_pairs(*this, srcs, dsts);
}

void CpuBackend::cast(const TensorArg& src, const TensorArg& dst) {
  if (copy_same_type(src, dst)) return;
  dispatch(src.dtype, [&]<class S>() {
    dispatch(dst.dtype, [&]<class D>() {
      if (const auto kernel = simd::converter<D, S>()) return map_vec<D, S>(kernel, dst, src);
      map<D, S>([](S v) { return convert<D>(v); }, dst, src);
    });
  });
}

}  // namespace wick::cpu

namespace wick {
// The CPU backend as backend_for (src/backend/backend.cpp) finds it.
Backend& cpu_backend() { return cpu::backend(); }
}  // namespace wick
