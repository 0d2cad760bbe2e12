// wick's own packed GEMMs (gemm.h): bf16 on processors with AVX512_BF16 (Note [bf16 GEMM]) or AMX
// (Note [AMX GEMM]), f32 on AVX-512 (Note [f32 GEMM]). This file holds the driver that every scheme
// shares (Note [Packed GEMM blocking]) and the entry points; the kernels and packers are in
// gemm_packed_bf16.cpp, gemm_packed_amx.cpp and gemm_packed_f32.cpp.
#include "cpu/gemm_packed.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "wick/error.h"

namespace wick::cpu {

#if defined(WICK_PACKED_GEMM)
namespace packed {
namespace {

// Note [Packed GEMM blocking]
// Every operand (those that repeat under broadcasting once) is packed before the products start, in
// one parallel pass over panels; then one parallel pass over blocks of c (up to kMcPanels row panels
// by up to kNcPanels column panels: narrower, then shorter where that leaves fewer than about four
// blocks a thread; all batches of a bmm share the threads). A block walks k in blocks of at most
// kc_max steps (a panel of b then stays in L1 while the block's row panels of a, in L2, stream past
// it); between k blocks the sums wait in an f32 buffer of the thread, so that c is written once,
// rounded once. Batches are packed in groups of at most kPackBytes (at least one product), which
// bounds the extra memory to the inputs' size. A c with unit stride down its columns is computed as
// c^T = b^T a^T, so that tiles are stored as rows. matmul hands many small batches here in chunks
// from its own parallel_for, where the passes run inline; OpenBLAS is not involved (nor its choice
// of team sizes, Note [One team size]). Where one block of rows covers all of a, b is not packed
// ahead (Note [bf16 GEMM packing of b]).
//
// Note [bf16 GEMM packing of b]
// Packing b ahead writes a copy as large as b and reads it back, which pays where several blocks of
// rows of c share each column panel. Where m fits one block of rows (kMcPanels row panels), each
// panel of b is read by one block only, so the blocks pack their own, per k block, into a buffer of
// the thread right before the products that read it, while it is in cache: the shape of a linear
// layer over a few tokens and of batches of small products. A block packs kPackChunk k-pairs of all
// its panels before the next pairs, so that a row of b is read in one run; where a is a single row
// panel the column blocks are cut only until each thread has one (the product streams b, which long
// runs per row serve better than balance). A b whose unit stride runs down its columns (W^T of a
// weight stored [n, k]) has its runs along k: a block packs a panel's whole k block at once, 16
// columns x 16 pairs transposed in registers (pack_panel, pack_f32).

// A level's kernel and packing, for products of E whose elements are packed as P (S: E's storage,
// the bits for bf16). A step of k is `step` elements of k (a pair for bf16, one for f32).
template <class E, class S, class P>
struct Scheme {
  int64_t mr;         // rows of the kernel's tile and of a's packed panels
  int64_t step;       // elements of k per step of the packed operands
  int64_t step_mult;  // steps are padded with zeros to a multiple of this
  int64_t kc_max;     // steps of a k block (a multiple of step_mult)
  void (*pack_a)(const S* src, int64_t rows, int64_t k, int64_t sr, int64_t sk, int64_t steps, P* out);
  void (*pack_b)(const S* src, int64_t cols, int64_t k, int64_t sc, int64_t sk, int64_t steps, P* out);
  void (*kernel)(const P* a, const P* b, int64_t steps, float* c, int64_t ldc, bool add);
  // The kernel for the first `rows` (< mr) rows of a tile only, if the level has one.
  void (*kernel_part)(const P* a, const P* b, int64_t steps, float* c, int64_t ldc, bool add, int64_t rows);
  void (*store)(const float* c, int64_t ldc, int64_t mr, int64_t nr, E* d, int64_t rs, int64_t cs);
  bool tiles;  // the kernel runs on AMX tiles: each thread loads kTileConfig first
};
using Bf16Scheme = Scheme<bf16, uint16_t, uint16_t>;
constexpr Bf16Scheme kVnniScheme{.mr = kMR,
                                 .step = 2,
                                 .step_mult = 1,
                                 .kc_max = kKcMax,
                                 .pack_a = pack_panel<kMR>,
                                 .pack_b = pack_panel<kNR>,
                                 .kernel = tile_kernel,
                                 .kernel_part = nullptr,
                                 .store = store_tile,
                                 .tiles = false};
constexpr Bf16Scheme kAmxScheme{.mr = kAmxMR,
                                .step = 2,
                                .step_mult = kAmxPairs,
                                .kc_max = kKcMax,
                                .pack_a = pack_rows,
                                .pack_b = pack_panel<kNR>,
                                .kernel = amx_kernel,
                                .kernel_part = nullptr,
                                .store = store_tile,
                                .tiles = true};
using F32Scheme = Scheme<float, float, float>;
constexpr F32Scheme kF32Scheme{.mr = kMR,
                               .step = 1,
                               .step_mult = 1,
                               .kc_max = kF32KcMax,
                               .pack_a = pack_f32<kMR>,
                               .pack_b = pack_f32<kNR>,
                               .kernel = f32_kernel_rows<kMR>,
                               .kernel_part = f32_kernel_part,
                               .store = store_f32,
                               .tiles = false};

template <class T>
MatRef<T> transposed(const MatRef<T>& m) {
  return {m.p, m.cols, m.rows, m.cs, m.rs};
}

// A group of products: each product's c and the slots of its a and b among the group's distinct
// operands (packed once each).
template <class E>
struct Group {
  std::vector<MatRef<E>> cs;
  std::vector<int64_t> a_slot, b_slot;
  std::vector<MatRef<const E>> as, bs;
  std::vector<const MatSource<E>*> b_sources;               // by b slot
  std::vector<const void*> a_keys, b_keys;                  // by slot: the pointer, or b's source
  std::unordered_map<const void*, int64_t> seen_a, seen_b;  // slot by key
};

// Elements of the buffer that a source's rows go through (kSourceChunk steps of at most two).
constexpr int64_t kSourceRows = kSourceChunk * 2 * kNR;

// Packs steps q0..q1 of the column panel of b at column j0 (cols <= kNR columns) into out: from b
// itself, or through its source (when set) a chunk of kSourceChunk steps at a time, each chunk's
// rows made into buf (kSourceRows elements, in L1) and packed from there as a row-major b.
template <class E, class S, class P>
void pack_b_steps(const Scheme<E, S, P>& sch, const MatRef<const E>& b, const MatSource<E>* src, E* buf, int64_t j0,
                  int64_t cols, int64_t q0, int64_t q1, P* out) {
  const int64_t st = sch.step, k = b.rows;
  const int64_t chunk = src ? kSourceChunk : q1 - q0;
  for (int64_t r0 = q0; r0 < q1; r0 += chunk) {
    const int64_t r1 = std::min(q1, r0 + chunk), kk = std::min(k - st * r0, st * (r1 - r0));
    P* o = out + (r0 - q0) * st * kNR;
    if (kk <= 0) {  // steps of the zero padding only
      std::memset(o, 0, static_cast<size_t>((r1 - r0) * st * kNR) * sizeof(P));
    } else if (!src) {
      sch.pack_b(storage(b.p + st * r0 * b.rs + j0 * b.cs), cols, kk, b.cs, b.rs, r1 - r0, o);
    } else {
      src->rows(st * r0, kk, j0, cols, buf, kNR);
      sch.pack_b(storage(buf), cols, kk, 1, kNR, r1 - r0, o);
    }
  }
}

// The products of gemm_bf16 and gemm_f32 by scheme sch.
template <class E, class S, class P>
void gemm_packed(int64_t count, const std::function<GemmOf<E>(int64_t)>& product, const Scheme<E, S, P>& sch) {
  if (count <= 0) return;
  const GemmOf<E> first = product(0);
  const int64_t m = first.c.rows, n = first.c.cols, k = first.a.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t bi = 0; bi < count; ++bi) {
      const MatRef<E> c = product(bi).c;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c.p[i * c.rs + j * c.cs] = E(0.0f);
    }
    return;
  }
  // The kernel writes rows of c with unit stride at best: a c with unit stride down its columns
  // instead is computed as c^T = b^T a^T (unless b is made by a source).
  if (first.c.cs != 1 && first.c.rs == 1 && n > 1 && !first.b_source) {
    return gemm_packed<E, S, P>(
        count,
        [&](int64_t i) {
          const GemmOf<E> g = product(i);
          return GemmOf<E>{transposed(g.b), transposed(g.a), transposed(g.c)};
        },
        sch);
  }
  const int64_t mr = sch.mr, st = sch.step;
  auto pad_steps = [&](int64_t steps) { return (steps + sch.step_mult - 1) / sch.step_mult * sch.step_mult; };
  const int64_t kp = pad_steps((k + st - 1) / st);  // steps of the packed operands
  const int64_t mpan = (m + mr - 1) / mr, npan = (n + kNR - 1) / kNR;
  const int64_t a_elems = mpan * kp * st * mr, b_elems = npan * kp * st * kNR;  // one packed operand
  const int64_t nkc = (kp + sch.kc_max - 1) / sch.kc_max, kcp = pad_steps((kp + nkc - 1) / nkc);
  // Where one block of c spans all rows, the blocks pack their own columns of b (Note [bf16 GEMM
  // packing of b]). So do they where b comes from a source, with blocks of as many row panels as
  // keep a's part for one k block within kSourceABytes (Note [CPU conv on the packed GEMMs]).
  const bool own_b = mpan <= kMcPanels || first.b_source;
  const int64_t mc_max =
      first.b_source ? std::max<int64_t>(kMcPanels, kSourceABytes / (mr * kcp * st * static_cast<int64_t>(sizeof(P))))
                     : kMcPanels;
  // The slot of the operand with key p among a group's distinct ones so far, -1 if it is new (a
  // repeat of the last product's operand, as under a broadcast batch dim, needs no lookup).
  auto find = [](const auto& seen, const auto& keys, const auto& slots, const void* p) -> int64_t {
    if (!slots.empty() && keys[static_cast<size_t>(slots.back())] == p) return slots.back();
    const auto it = seen.find(p);
    return it == seen.end() ? -1 : it->second;
  };
  for (int64_t b0 = 0; b0 < count;) {
    // The group: products while the packed operands fit in kPackBytes (at least one).
    Group<E> g;
    int64_t elems = 0;
    for (int64_t bi = b0; bi < count; ++bi) {
      const GemmOf<E> pr = bi == 0 ? first : product(bi);
      if (!pr.b_source != !first.b_source)
        throw InvalidArgument("[gemm_packed] products with and without a source of b in one call");
      const void* a_key = pr.a.p;
      const void* b_key = pr.b_source ? static_cast<const void*>(pr.b_source) : pr.b.p;
      int64_t sa = find(g.seen_a, g.a_keys, g.a_slot, a_key), sb = find(g.seen_b, g.b_keys, g.b_slot, b_key);
      const int64_t more = (sa < 0 ? a_elems : 0) + (sb < 0 && !own_b ? b_elems : 0);
      if (!g.cs.empty() && (elems + more) * static_cast<int64_t>(sizeof(P)) > kPackBytes) break;
      elems += more;
      if (sa < 0) {
        sa = static_cast<int64_t>(g.as.size());
        g.seen_a.emplace(a_key, sa);
        g.as.push_back(pr.a);
        g.a_keys.push_back(a_key);
      }
      if (sb < 0) {
        sb = static_cast<int64_t>(g.bs.size());
        g.seen_b.emplace(b_key, sb);
        g.bs.push_back(pr.b);
        g.b_sources.push_back(pr.b_source);
        g.b_keys.push_back(b_key);
      }
      g.a_slot.push_back(sa);
      g.b_slot.push_back(sb);
      g.cs.push_back(pr.c);
    }
    b0 += static_cast<int64_t>(g.cs.size());
    const int64_t na = static_cast<int64_t>(g.as.size()), nb = own_b ? 0 : static_cast<int64_t>(g.bs.size());
    const int64_t nprod = static_cast<int64_t>(g.cs.size());
    const Scratch<P> packed = scratch<P>(elems);
    P* const pa = packed.get();
    P* const pb = pa + na * a_elems;
    // Pack: the row panels of every a, then the column panels of every b unless the blocks do.
    const int64_t a_units = na * mpan, units = a_units + nb * npan;
    parallel_for(units, std::max<int64_t>(1, kGrain / (kp * st * kNR)), [&](int64_t u0, int64_t u1) {
      for (int64_t u = u0; u < u1; ++u) {
        if (u < a_units) {
          const MatRef<const E>& a = g.as[static_cast<size_t>(u / mpan)];
          const int64_t i0 = u % mpan * mr;
          sch.pack_a(storage(a.p + i0 * a.rs), std::min<int64_t>(mr, m - i0), k, a.rs, a.cs, kp, pa + u * kp * st * mr);
        } else {
          const int64_t v = u - a_units, slot = v / npan, j0 = v % npan * kNR;
          // (Never from a source: the blocks make their own, own_b.)
          pack_b_steps(sch, g.bs[static_cast<size_t>(slot)], static_cast<const MatSource<E>*>(nullptr),
                       static_cast<E*>(nullptr), j0, std::min<int64_t>(kNR, n - j0), 0, kp, pb + v * kp * st * kNR);
        }
      }
    });
    // Blocks of c: narrower column blocks until the threads have a few blocks each (one each for a
    // single row panel packing its own b: the product then streams b, best in long runs), then, where
    // b is packed ahead, shorter row blocks.
    int64_t ncp = kNcPanels, mcp = mc_max;
    const int64_t per_thread = own_b && mpan == 1 ? 1 : 4;
    auto blocks = [&] { return nprod * ((mpan + mcp - 1) / mcp) * ((npan + ncp - 1) / ncp); };
    while (ncp > 1 && blocks() < per_thread * num_threads()) ncp = (ncp + 1) / 2;
    while (!own_b && mcp > 1 && blocks() < per_thread * num_threads()) mcp = (mcp + 1) / 2;
    const int64_t mblocks = (mpan + mcp - 1) / mcp, nblocks = (npan + ncp - 1) / ncp;
    parallel_blocks(nprod * mblocks * nblocks, 1, [&](auto&& next) {  // Note [Dynamic blocks]
      // A tile's sums: on the stack for a single k block, else in the block's place in `sums`.
      alignas(64) float one_tile[kAmxMR * kNR];
      const int64_t ldc = nkc == 1 ? kNR : std::min(ncp, npan) * kNR;
      const Scratch<float> sums = nkc == 1 ? Scratch<float>() : scratch<float>(std::min(mcp, mpan) * mr * ldc);
      // The block's column panels of b for one k block, where the block packs them.
      const Scratch<P> bk = own_b ? scratch<P>(std::min(ncp, npan) * kcp * st * kNR) : Scratch<P>();
      const Scratch<E> src_rows = first.b_source ? scratch<E>(kSourceRows) : Scratch<E>();
      if (sch.tiles) tiles_begin();
      for (int64_t t = next(); t >= 0; t = next()) {
        const int64_t gi = t / (mblocks * nblocks), mb = t / nblocks % mblocks, nbk = t % nblocks;
        const MatRef<E>& c = g.cs[static_cast<size_t>(gi)];
        const P* a = pa + g.a_slot[static_cast<size_t>(gi)] * a_elems;
        const int64_t b_slot = g.b_slot[static_cast<size_t>(gi)];
        const MatRef<const E>& bm = g.bs[static_cast<size_t>(b_slot)];
        const MatSource<E>* const b_src = g.b_sources[static_cast<size_t>(b_slot)];
        const int64_t ip0 = mb * mcp, ip1 = std::min(mpan, ip0 + mcp);
        const int64_t jp0 = nbk * ncp, jp1 = std::min(npan, jp0 + ncp);
        for (int64_t p0 = 0; p0 < kp; p0 += kcp) {
          const int64_t p1 = std::min(kp, p0 + kcp);
          // Steps p0..p1 of panel jp at b_k + (jp - jp0) * b_stride * st * kNR: in the block's own
          // buffer, or in b packed ahead (all kp steps of a panel together).
          const int64_t b_stride = own_b ? p1 - p0 : kp;
          const P* b_k = own_b ? bk.get() : pb + b_slot * b_elems + (jp0 * kp + p0) * st * kNR;
          if (own_b) {
            // kPackChunk steps at a time across the block's panels, so that each row of b is read in
            // one run; a panel's steps at a time from a source, or where b's columns are its runs.
            const int64_t chunk = b_src || bm.cs != 1 ? p1 - p0 : kPackChunk;
            for (int64_t q0 = p0; q0 < p1; q0 += chunk) {
              const int64_t q1 = std::min(p1, q0 + chunk);
              for (int64_t jp = jp0; jp < jp1; ++jp)
                pack_b_steps(sch, bm, b_src, src_rows.get(), jp * kNR, std::min<int64_t>(kNR, n - jp * kNR), q0, q1,
                             bk.get() + ((jp - jp0) * b_stride + q0 - p0) * st * kNR);
            }
          }
          for (int64_t jp = jp0; jp < jp1; ++jp)
            for (int64_t ip = ip0; ip < ip1; ++ip) {
              float* tile = nkc == 1 ? one_tile : sums.get() + (ip - ip0) * mr * ldc + (jp - jp0) * kNR;
              const int64_t rows = std::min<int64_t>(mr, m - ip * mr);
              const P* ak = a + (ip * kp + p0) * st * mr;
              const P* bk_jp = b_k + (jp - jp0) * b_stride * st * kNR;
              if (rows < mr && sch.kernel_part) {
                sch.kernel_part(ak, bk_jp, p1 - p0, tile, ldc, p0 > 0, rows);
              } else {
                sch.kernel(ak, bk_jp, p1 - p0, tile, ldc, p0 > 0);
              }
              if (p1 == kp) {
                const int64_t j0 = jp * kNR;
                sch.store(tile, ldc, rows, std::min<int64_t>(kNR, n - j0), c.p + ip * mr * c.rs + j0 * c.cs, c.rs,
                          c.cs);
              }
            }
        }
      }
      if (sch.tiles) tiles_end();
    });
  }
}

}  // namespace
}  // namespace packed

bool bf16_weight_as_is(const Bf16Gemm& g, simd::Isa isa) {
  if (isa > simd::detected() || g.b_source || g.c.rows <= 0 || g.c.cols <= 0 || g.a.cols <= 0 || g.b.rs != 1)
    return false;
  if (isa >= simd::Isa::Amx)  // Note [AMX GEMM with the weight in place]
    return g.c.rows <= packed::kInPlaceMaxRows && g.b.cs > 0 && g.b.cs % 32 == 0 &&
           reinterpret_cast<uintptr_t>(g.b.p) % 64 == 0;
  // Note [bf16 dot products of a weight's rows]
  return isa == simd::Isa::Avx512Bf16 && g.c.rows <= packed::kDotMaxRows && g.a.cols >= packed::kDotMinK;
}

void gemm_bf16(int64_t count, const std::function<Bf16Gemm(int64_t)>& product, simd::Isa isa) {
  if (isa < simd::Isa::Avx512Bf16 || isa > simd::detected())
    throw UnsupportedError(std::string("gemm_bf16: no bf16 GEMM kernel at level ") + simd::isa_name(isa) +
                           " on this cpu (" + simd::isa_name(simd::detected()) + ")");
  // The products, kept for the unpacked paths while each of them can take one.
  std::vector<Bf16Gemm> prods;
  bool as_is = count > 0;
  for (int64_t i = 0; as_is && i < count; ++i) {
    prods.push_back(product(i));
    as_is = bf16_weight_as_is(prods.back(), isa);
  }
  if (as_is) return isa >= simd::Isa::Amx ? packed::amx_gemm_in_place(prods) : packed::bf16_row_dots(prods);
  packed::gemm_packed(count, product, isa >= simd::Isa::Amx ? packed::kAmxScheme : packed::kVnniScheme);
}

void gemm_f32(int64_t count, const std::function<F32Gemm(int64_t)>& product, simd::Isa isa) {
  if (isa < simd::Isa::Avx512 || isa > simd::detected())
    throw UnsupportedError(std::string("gemm_f32: no f32 GEMM kernel at level ") + simd::isa_name(isa) +
                           " on this cpu (" + simd::isa_name(simd::detected()) + ")");
  packed::gemm_packed(count, product, packed::kF32Scheme);
}

#else
// simd::detected() reaches Isa::Avx512 and above only on x86-64, so matmul and conv never call
// these elsewhere.
void gemm_bf16(int64_t, const std::function<Bf16Gemm(int64_t)>&, simd::Isa) {
  throw UnsupportedError("gemm_bf16: the bf16 GEMM kernels need an x86-64 processor with AVX512_BF16 or AMX");
}
bool bf16_weight_as_is(const Bf16Gemm&, simd::Isa) { return false; }
void gemm_f32(int64_t, const std::function<F32Gemm(int64_t)>&, simd::Isa) {
  throw UnsupportedError("gemm_f32: the f32 GEMM kernel needs an x86-64 processor with AVX-512");
}
#endif

}  // namespace wick::cpu
