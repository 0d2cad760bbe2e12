// matmul on the CPU: batched strided GEMM over OpenBLAS, bf16 on AVX512_BF16 or AMX and f32 on
// AVX-512 through wick's own kernels in gemm_packed.cpp (see gemm.h).
#include <cblas.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend/dispatch.h"
#include "cpu/cpu_backend.h"
#include "cpu/gemm.h"
#include "cpu/parallel.h"
#include "cpu/simd.h"

namespace wick::cpu {
namespace {

constexpr int64_t kBlasIntMax = std::numeric_limits<blasint>::max();

// How BLAS (row-major convention) sees a matrix: as stored (trans false: element (r, c) at
// r * ld + c) or as the transpose of a row-major matrix (trans true: at c * ld + r).
struct BlasView {
  bool ok = false;
  bool trans = false;
  int64_t ld = 0;
};

template <class T>
BlasView blas_view(const MatRef<T>& m) {
  const int64_t r = m.rows, c = m.cols;
  // A dim of size 1 never steps, so its stride is free; ld must still cover a row so that rows do
  // not overlap (BLAS requires ld >= max(1, row length)).
  if (c == 1 || m.cs == 1) {
    const int64_t ld = r == 1 ? std::max<int64_t>(c, 1) : m.rs;
    if (ld >= std::max<int64_t>(c, 1)) return {true, false, ld};
  }
  if (r == 1 || m.rs == 1) {
    const int64_t ld = c == 1 ? std::max<int64_t>(r, 1) : m.cs;
    if (ld >= std::max<int64_t>(r, 1)) return {true, true, ld};
  }
  return {};
}

template <class T>
MatRef<T> transposed(const MatRef<T>& m) {
  return {m.p, m.cols, m.rows, m.cs, m.rs};
}

// Rows of at least this many elements per thread when copying.
int64_t row_grain(int64_t cols) { return std::max<int64_t>(1, kGrain / std::max<int64_t>(cols, 1)); }

// A row-major contiguous copy of m, converted to D.
template <class D, class S>
void pack(const MatRef<S>& m, D* out) {
  parallel_for(m.rows, row_grain(m.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < m.cols; ++c) out[r * m.cols + c] = convert<D>(m.p[r * m.rs + c * m.cs]);
  });
}

// Writes a row-major contiguous S matrix into m, converted to m's type.
template <class S, class D>
void unpack(const S* in, const MatRef<D>& m) {
  parallel_for(m.rows, row_grain(m.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = 0; c < m.cols; ++c)
        m.p[r * m.rs + c * m.cs] = convert<std::remove_const_t<D>>(in[r * m.cols + c]);
  });
}

// m widened to f32 in buf, keeping its orientation: rows with unit stride give a row-major copy,
// columns with unit stride a column-major one (which BLAS reads transposed), each row or column
// through the vector converter of simd.h; other layouts are packed element by element.
template <class T>
MatRef<const float> widen(const MatRef<const T>& m, float* buf) {
  const auto cvt = simd::converter<float, T>();
  if (cvt && m.cs == 1) {
    parallel_for(m.rows, row_grain(m.cols), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) cvt(m.p + r * m.rs, buf + r * m.cols, m.cols);
    });
    return {buf, m.rows, m.cols, m.cols, 1};
  }
  if (cvt && m.rs == 1) {
    parallel_for(m.cols, row_grain(m.rows), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) cvt(m.p + c * m.cs, buf + c * m.rows, m.rows);
    });
    return {buf, m.rows, m.cols, 1, m.rows};
  }
  pack(m, buf);
  return {buf, m.rows, m.cols, m.cols, 1};
}

// A row-major f32 result rounded into m.
template <class T>
void narrow(const float* in, const MatRef<T>& m) {
  const auto cvt = simd::converter<T, float>();
  if (!cvt || m.cs != 1) return unpack(in, m);
  parallel_for(m.rows, row_grain(m.cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) cvt(in + r * m.cols, m.p + r * m.rs, m.cols);
  });
}

// Plain loops for what BLAS's int cannot address (dims or leading dims beyond 2^31 - 1).
template <class T>
void gemm_loops(const MatRef<const T>& a, const MatRef<const T>& b, const MatRef<T>& c, T beta) {
  parallel_for(c.rows, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < c.cols; ++j) {
        T acc = 0;
        for (int64_t k = 0; k < a.cols; ++k) acc += a.p[i * a.rs + k * a.cs] * b.p[k * b.rs + j * b.cs];
        T& out = c.p[i * c.rs + j * c.cs];
        out = beta == T(0) ? acc : acc + beta * out;
      }
  });
}

void blas_call(bool ta, bool tb, blasint m, blasint n, blasint k, const float* a, blasint lda, const float* b,
               blasint ldb, float beta, float* c, blasint ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, lda, b,
              ldb, beta, c, ldc);
}
void blas_call(bool ta, bool tb, blasint m, blasint n, blasint k, const double* a, blasint lda, const double* b,
               blasint ldb, double beta, double* c, blasint ldc) {
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b,
              ldb, beta, c, ldc);
}

// Note [CPU GEMM blocks per thread]
// OpenBLAS spreads one GEMM over its threads itself and synchronises them between its steps along
// k, which serves large square products well and small or thin ones poorly. So a product of
// kBlockedGemm multiply-adds or more, and less than kBlockedGemmMax unless m or n is at most
// kThinGemm, is cut here into one block of c per thread (a grid as square as the thread count
// allows), each thread running a single-threaded sgemm / dgemm on its rows of a and columns of b
// (OpenBLAS's OpenMP build keeps to one thread when called inside a parallel region). Each thread
// packs its own rows of a and columns of b, so a and b are packed about sqrt(threads) times in all
// instead of once: past kBlockedGemmMax that costs more than OpenBLAS's own threading. A batch of
// at least as many products as threads gives each thread whole products instead (matmul_at).
constexpr double kBlockedGemm = 64.0 * 1024 * 1024;
constexpr double kBlockedGemmMax = 2048.0 * 1024 * 1024;
constexpr int64_t kThinGemm = 128;

// Where matmul runs f32 on wick's kernel (Note [f32 GEMM] in gemm_packed_f32.cpp; kOwnF32Min in gemm.h).
constexpr double kOwnF32PerThread = 4.0 * 1024 * 1024;

// Runs the product in blocks (Note [CPU GEMM blocks per thread]), or returns false where the
// threads cannot all get a block that is not empty.
template <class T>
bool blas_blocks(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                 T beta, T* c, int64_t ldc) {
  const int64_t nt = num_threads();
  int64_t gr = 0, gc = 0;  // the grid: rows x columns of blocks (none yet)
  double best = std::numeric_limits<double>::infinity();
  for (int64_t r = 1; r <= nt; ++r) {
    if (nt % r != 0 || r > m || nt / r > n) continue;
    const double cost =  // the block's rows plus columns: what each thread packs
        static_cast<double>(m) / static_cast<double>(r) + static_cast<double>(n) / static_cast<double>(nt / r);
    if (cost < best) {
      best = cost;
      gr = r;
      gc = nt / r;
    }
  }
  if (gr == 0) return false;
  parallel_for(gr * gc, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i0 = m * (t / gc) / gr, i1 = m * (t / gc + 1) / gr;
      const int64_t j0 = n * (t % gc) / gc, j1 = n * (t % gc + 1) / gc;
      blas_call(ta, tb, static_cast<blasint>(i1 - i0), static_cast<blasint>(j1 - j0), static_cast<blasint>(k),
                a + i0 * (ta ? 1 : lda), static_cast<blasint>(lda), b + j0 * (tb ? ldb : 1), static_cast<blasint>(ldb),
                beta, c + i0 * ldc + j0, static_cast<blasint>(ldc));
    }
  });
  return true;
}

template <class T>
void gemm_impl(const MatRef<const T>& a, const MatRef<const T>& b, const MatRef<T>& c, T beta) {
  const int64_t m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T& out = c.p[i * c.rs + j * c.cs];
        out = beta == T(0) ? T(0) : beta * out;
      }
    return;
  }
  const BlasView cv = blas_view(c);
  if (!cv.ok || cv.ld > kBlasIntMax) {
    // BLAS writes c row-major with unit stride; any other c goes through a contiguous buffer.
    std::vector<T> tmp(static_cast<size_t>(m * n));
    if (beta != T(0)) pack(MatRef<const T>{c.p, m, n, c.rs, c.cs}, tmp.data());
    gemm_impl<T>(a, b, MatRef<T>{tmp.data(), m, n, n, 1}, beta);
    unpack(tmp.data(), c);
    return;
  }
  if (cv.trans) {
    // A column-major c: compute c^T = b^T a^T, which BLAS writes row-major.
    return gemm_impl<T>(transposed(b), transposed(a), transposed(c), beta);
  }
  std::vector<T> abuf, bbuf;
  auto view_or_pack = [](const MatRef<const T>& x, std::vector<T>& buf, const T** p) {
    BlasView v = blas_view(x);
    *p = x.p;
    if (!v.ok || v.ld > kBlasIntMax) {
      buf.resize(static_cast<size_t>(x.rows * x.cols));
      pack(x, buf.data());
      *p = buf.data();
      v = {true, false, std::max<int64_t>(x.cols, 1)};
    }
    return v;
  };
  const T *ap, *bp;
  const BlasView av = view_or_pack(a, abuf, &ap);
  const BlasView bv = view_or_pack(b, bbuf, &bp);
  if (std::max({m, n, k, av.ld, bv.ld}) > kBlasIntMax) return gemm_loops<T>(a, b, c, beta);
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int64_t nt = num_threads();
  if (nt > 1 && !in_parallel() && work >= kBlockedGemm && (work < kBlockedGemmMax || std::min(m, n) <= kThinGemm) &&
      blas_blocks<T>(av.trans, bv.trans, m, n, k, ap, av.ld, bp, bv.ld, beta, c.p, cv.ld))
    return;
  blas_call(av.trans, bv.trans, static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), ap,
            static_cast<blasint>(av.ld), bp, static_cast<blasint>(bv.ld), beta, c.p, static_cast<blasint>(cv.ld));
}

// Offset of batch `bi` (row-major over `batch`) in a layout whose leading dims are the batch dims.
int64_t batch_offset(const Shape& batch, const Layout& l, int64_t bi) {
  int64_t off = 0;
  for (size_t d = batch.size(); d-- > 0;) {
    off += (bi % batch[d]) * l.stride(d);
    bi /= batch[d];
  }
  return off;
}

template <class T>
MatRef<T> matrix(const TensorArg& t, const Shape& batch, int64_t bi) {
  const size_t r = t.layout.rank();
  return {t.ptr<std::remove_const_t<T>>() + batch_offset(batch, t.layout, bi), t.layout.dim(r - 2), t.layout.dim(r - 1),
          t.layout.stride(r - 2), t.layout.stride(r - 1)};
}

// matmul's batches b0, b0 + 1, ... as the products of gemm_bf16 or gemm_f32.
template <class T>
std::function<GemmOf<T>(int64_t)> batch_products(const TensorArg& a, const TensorArg& b, const TensorArg& dst,
                                                 const Shape& batch, int64_t b0) {
  return [&a, &b, &dst, &batch, b0](int64_t i) {
    return GemmOf<T>{matrix<const T>(a, batch, b0 + i), matrix<const T>(b, batch, b0 + i),
                     matrix<T>(dst, batch, b0 + i)};
  };
}

// Note [CPU matrix-vector products]
// A matmul with n == 1 (y = A x) or m == 1 (y = x W^T) is one dot product per output and reads
// each matrix element once: its speed is that of memory. The GEMM path would widen an 8/16-bit
// matrix to an f32 copy first (twice its bytes, written and read back), and OpenBLAS runs such
// thin GEMMs well below memory speed. Here simd's matrix-vector kernels read the matrix as it lies
// against x widened once to f32: dot products of rows where it has unit stride along k (Note [Row
// dot products] in simd_matvec.cpp), else sums of columns (Note [Column dot products]); f32 sums rounded
// once; the rows of every batch split over the threads. Neither unit stride, or f64: the GEMM path.
// A few vectors (tokens, folded by Note [CPU matmul batch folding]) go together, up to kMatVecs
// (rows) or kMatVecCols (columns of 16-bit matrices; one for f32), widened together up to
// kMatVecFloats a thread, the matrix read once for all; each output is the sum it would
// be alone, so a token's result does not depend on its batch. bf16 against W^T takes gemm_bf16's
// unpacked paths first where it has them (bf16_weight_as_is), which keep that property.
constexpr int64_t kMatVecs = 8;
constexpr int64_t kMatVecCols = 4;
constexpr int64_t kMatVecFloats = int64_t{1} << 20;

template <class T>
bool matvec(const TensorArg& a, const TensorArg& b, const TensorArg& dst, const Shape& batch) {
  const size_t r = dst.layout.rank();
  const int64_t m = dst.layout.dim(r - 2), n = dst.layout.dim(r - 1), k = a.layout.dim(r - 1);
  // The matrix as rows x k (a for y = A x, b^T for y^T = b^T a^T), its strides and the number of
  // vectors; a dim of size 1 never steps, so its stride is free. cols: sums of columns (else dot
  // products of rows); `fits`: whether the kernel takes that many vectors.
  struct Form {
    bool trans;
    int64_t rows, rs, cs, nv;
    bool cols = false, fits = false;
  };
  Form forms[2] = {{false, m, a.layout.stride(r - 2), a.layout.stride(r - 1), n},
                   {true, n, b.layout.stride(r - 1), b.layout.stride(r - 2), m}};
  for (Form& f : forms) {
    const bool dot = k <= 1 || f.cs == 1;
    f.cols = !dot && (f.rows <= 1 || f.rs == 1);
    const int64_t most = dot ? kMatVecs : f.cols && sizeof(T) == 2 ? kMatVecCols : 1;
    f.fits = (dot || f.cols) && (f.nv == 1 || (f.nv <= most && f.nv * k <= kMatVecFloats));
  }
  // Dot products before sums of columns, then fewer vectors.
  const auto better = [](const Form& p, const Form& q) { return p.cols != q.cols ? !p.cols : p.nv < q.nv; };
  const Form* form = forms[0].fits && (!forms[1].fits || !better(forms[1], forms[0])) ? &forms[0]
                     : forms[1].fits                                                  ? &forms[1]
                                                                                      : nullptr;
  if (!form) return false;
  const bool cols = form->cols;
  const auto kernel = simd::matvec_kernel<T>(cols);
  if (!kernel) return false;
  const bool trans = form->trans;
  const int64_t rows = form->rows, nv = form->nv;
  const auto to_f32 = simd::converter<float, T>();
  const auto from_f32 = simd::converter<T, float>();
  parallel_for(batch.numel() * rows, row_grain(k), [&](int64_t i0, int64_t i1) {
    constexpr int64_t kBlock = 256;
    float y[kBlock * kMatVecs];
    const Scratch<float> x = scratch<float>(nv * k);
    const T* last_v = nullptr;
    for (int64_t bi = i0 / rows; bi * rows < i1; ++bi) {
      // The matrix (rows x k), the vectors (k x nv) and the result (rows x nv) of batch bi.
      MatRef<const T> w = matrix<const T>(a, batch, bi), v = matrix<const T>(b, batch, bi);
      MatRef<T> out = matrix<T>(dst, batch, bi);
      if (trans) {
        std::swap(w, v);
        w = transposed(w);
        v = transposed(v);
        out = transposed(out);
      }
      if (v.p != last_v) {  // (a broadcast x repeats)
        for (int64_t j = 0; j < nv; ++j) {
          const T* vj = v.p + j * v.cs;
          float* xj = x.get() + j * k;
          if (to_f32 && v.rs == 1) {
            to_f32(vj, xj, k);
          } else {
            for (int64_t i = 0; i < k; ++i) xj[i] = convert<float>(vj[i * v.rs]);
          }
        }
        last_v = v.p;
      }
      const int64_t end = std::min(i1 - bi * rows, rows);
      for (int64_t s = std::max<int64_t>(i0 - bi * rows, 0); s < end; s += kBlock) {
        const int64_t c = std::min(kBlock, end - s);
        kernel(w.p + s * w.rs, cols ? w.cs : w.rs, c, k, x.get(), k, nv, y, kBlock);
        for (int64_t j = 0; j < nv; ++j) {
          T* oj = out.p + j * out.cs + s * out.rs;
          const float* yj = y + j * kBlock;
          if (from_f32 && out.rs == 1) {
            from_f32(yj, oj, c);
          } else {
            for (int64_t i = 0; i < c; ++i) oj[i * out.rs] = convert<T>(yj[i]);
          }
        }
      }
    }
  });
  return true;
}

// Whether gemm_bf16 reads matmul's first product's b as it lies (bf16_weight_as_is).
bool bf16_as_is(const TensorArg& a, const TensorArg& b, const TensorArg& dst, const Shape& batch, simd::Isa isa) {
  return dst.dtype == DType::BF16 && bf16_weight_as_is(batch_products<bf16>(a, b, dst, batch, 0)(0), isa);
}

// Note [CPU matmul batch folding]
// Where b is one matrix for all batches (its batch dims broadcast: stride 0 or size 1) and a's
// batch dims and rows step as one longer run of rows (each dim's stride the extent of the dims
// inside it), as in x [batch, tokens, hidden] @ W, and dst's likewise, the product is one GEMM of
// batch * m rows: b is read (and packed) once instead of once per batch, and a batch of single rows
// (m == 1) becomes a GEMM instead of one matrix-vector product per batch, each reading all of b.

// The stride of rows when the dims [0, rank - 1) of l merge into one, if they do (dims of size 1
// never step, so their strides are free).
std::optional<int64_t> merged_row_stride(const Layout& l) {
  std::optional<int64_t> inner;  // the stride of the innermost dim of size > 1 so far
  int64_t inner_extent = 1;      // ... times its size
  for (size_t d = l.rank() - 1; d-- > 0;) {
    if (l.dim(d) == 1) continue;
    if (inner && l.stride(d) != inner_extent) return std::nullopt;
    if (!inner) inner = l.stride(d);
    inner_extent = l.dim(d) * l.stride(d);
  }
  return inner.value_or(l.stride(l.rank() - 2));
}

}  // namespace

namespace {

bool pre_avx_core(const std::string& core) {
  static const char* const kPreAvx[] = {"Prescott", "Core2",  "Penryn",     "Dunnington", "Nehalem",
                                        "Atom",     "Katmai", "Coppermine", "Northwood",  "Banias"};
  return std::find(std::begin(kPreAvx), std::end(kPreAvx), core) != std::end(kPreAvx);
}

// The core OpenBLAS first chose, when select_blas_core replaced it (else empty).
std::string& replaced_core() {
  static std::string core;
  return core;
}

}  // namespace

// Note [OpenBLAS core selection]
// OpenBLAS (DYNAMIC_ARCH builds) picks its kernels when it loads, from the processor model; on a
// model it does not know it can fall back to its pre-AVX "Prescott" kernels, several times slower
// than its SkylakeX ones (seen with 0.3.21 on a virtual machine with AVX-512). Its only switch is
// the OPENBLAS_CORETYPE variable, read by gotoblas_dynamic_init, which it exports, as it does
// gotoblas_dynamic_quit. So when the core is a pre-AVX one on a processor with AVX2 or AVX-512,
// and the user has not set OPENBLAS_CORETYPE, wick sets it for the moment of one quit / init pair
// (before its first BLAS call) and restores the environment. Builds without those entry points
// (not DYNAMIC_ARCH) keep their core, and DeviceInfo details say so. setenv is not thread-safe
// against concurrent getenv: this runs once, when the CPU backend is first made.
void select_blas_core() {
  const std::string core = openblas_get_corename();
  if (!pre_avx_core(core) || simd::detected() < simd::Isa::Avx2 || std::getenv("OPENBLAS_CORETYPE")) return;
  using Entry = void (*)();
  const auto quit = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto init = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!quit || !init) return;
  if (setenv("OPENBLAS_CORETYPE", simd::detected() >= simd::Isa::Avx512 ? "SkylakeX" : "Haswell", 0) != 0) return;
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
  replaced_core() = core;
}

std::string blas_details() {
  const std::string core = openblas_get_corename();
  std::string s = std::string(openblas_get_config()) + ", core " + core + ", " +
                  std::to_string(openblas_get_num_threads()) + " BLAS threads";
  if (!replaced_core().empty())
    s += " (wick's choice: OpenBLAS picked " + replaced_core() + " on this " + simd::isa_name(simd::detected()) +
         " processor; Note [OpenBLAS core selection])";
  if (pre_avx_core(core) && simd::detected() >= simd::Isa::Avx2)
    s += std::string("; OpenBLAS runs pre-AVX kernels on this ") + simd::isa_name(simd::detected()) +
         " processor: OPENBLAS_CORETYPE=" + (simd::detected() >= simd::Isa::Avx512 ? "SkylakeX" : "Haswell") +
         " in the environment selects its vector kernels";
  return s;
}

void gemm(MatRef<const float> a, MatRef<const float> b, MatRef<float> c, float beta) {
  gemm_impl<float>(a, b, c, beta);
}
void gemm(MatRef<const double> a, MatRef<const double> b, MatRef<double> c, double beta) {
  gemm_impl<double>(a, b, c, beta);
}

void CpuBackend::matmul(const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  matmul_at(a, b, dst, simd::active());
}

void matmul_at(const TensorArg& a, const TensorArg& b, const TensorArg& dst, simd::Isa isa) {
  if (isa > simd::detected())
    throw UnsupportedError(std::string("[matmul] ") + simd::isa_name(isa) + " kernels requested; this cpu supports " +
                           simd::isa_name(simd::detected()));
  if (dst.numel() == 0) return;
  const size_t r = dst.layout.rank();
  const int64_t m = dst.layout.dim(r - 2), n = dst.layout.dim(r - 1), k = a.layout.dim(r - 1);
  const Shape batch(dst.shape().begin(), dst.shape().end() - 2);
  const int64_t nb = batch.numel();
  if (nb > 1) {  // Note [CPU matmul batch folding]
    bool b_shared = true;
    for (size_t d = 0; d + 2 < r; ++d) b_shared = b_shared && (b.layout.dim(d) == 1 || b.layout.stride(d) == 0);
    const std::optional<int64_t> ars = merged_row_stride(a.layout), drs = merged_row_stride(dst.layout);
    if (b_shared && ars && drs) {
      auto matrix_arg = [](const TensorArg& t, int64_t rows, int64_t rs) {
        const size_t tr = t.layout.rank();
        return TensorArg(t.data, t.dtype,
                         Layout({rows, t.layout.dim(tr - 1)}, {rs, t.layout.stride(tr - 1)}, t.layout.offset()));
      };
      return matmul_at(matrix_arg(a, nb * m, *ars), matrix_arg(b, k, b.layout.stride(r - 2)),
                       matrix_arg(dst, nb * m, *drs), isa);
    }
  }
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(std::max<int64_t>(k, 1));
  // Small products: many to a thread. Larger ones: one after another, each over all threads (wick's
  // kernels spread all batches over the threads themselves), unless there are batches enough for
  // every thread, which then run theirs single-threaded (Note [CPU GEMM blocks per thread]; with
  // wick's f32 kernel only below kOwnF32PerThread multiply-adds a product). f32 products (and those
  // widened to f32) from kOwnF32Min multiply-adds up run on wick's kernel from Avx512 up, smaller
  // ones on OpenBLAS (Note [f32 GEMM]).
  const bool own_bf16 = dst.dtype == DType::BF16 && isa >= simd::Isa::Avx512Bf16;
  const bool own_f32 = dst.dtype != DType::F64 && isa >= simd::Isa::Avx512 && work >= kOwnF32Min;
  const bool spread = own_bf16 || (own_f32 && work >= kOwnF32PerThread);
  const int64_t grain = work < kSmallGemm                ? std::max<int64_t>(1, static_cast<int64_t>(32768 / work))
                        : nb >= num_threads() && !spread ? 1
                                                         : nb;
  // bf16 products of a few rows against W^T go to gemm_bf16's unpacked paths before the vector
  // kernels (Note [CPU matrix-vector products]).
  if (bf16_as_is(a, b, dst, batch, isa)) return gemm_bf16(nb, batch_products<bf16>(a, b, dst, batch, 0), isa);
  dispatch_in<kFloatTypes>(
      dst.dtype,
      [&]<class T>() {
        if (matvec<T>(a, b, dst, batch)) return;
        parallel_for(nb, grain, [&](int64_t b0, int64_t b1) {
          if constexpr (std::is_same_v<T, float>) {
            // One call for the chunk's batches (all of them where the work is large: the call spreads
            // them over the threads itself), as for bf16.
            if (own_f32) return gemm_f32(b1 - b0, batch_products<float>(a, b, dst, batch, b0), isa);
          }
          if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
            for (int64_t bi = b0; bi < b1; ++bi)
              gemm(matrix<const T>(a, batch, bi), matrix<const T>(b, batch, bi), matrix<T>(dst, batch, bi));
          } else {
            if constexpr (std::is_same_v<T, bf16>) {
              if (own_bf16) return gemm_bf16(b1 - b0, batch_products<bf16>(a, b, dst, batch, b0), isa);
            }
            // 8/16-bit floats: widen to f32 (exact), one f32 GEMM accumulating in f32, one rounding.
            const Scratch<float> fa = scratch<float>(m * k), fb = scratch<float>(k * n), fc = scratch<float>(m * n);
            MatRef<const float> wa{}, wb{};
            const T* last_a = nullptr;
            const T* last_b = nullptr;
            for (int64_t bi = b0; bi < b1; ++bi) {
              const MatRef<const T> ma = matrix<const T>(a, batch, bi), mb = matrix<const T>(b, batch, bi);
              // Broadcast batches repeat an operand: widen it once.
              if (ma.p != last_a) wa = widen(ma, fa.get());
              if (mb.p != last_b) wb = widen(mb, fb.get());
              last_a = ma.p;
              last_b = mb.p;
              const MatRef<float> wc{fc.get(), m, n, n, 1};
              if (own_f32) {
                gemm_f32(
                    1,
                    [&](int64_t) {
                      return F32Gemm{wa, wb, wc};
                    },
                    isa);
              } else {
                gemm(wa, wb, wc);
              }
              narrow(fc.get(), matrix<T>(dst, batch, bi));
            }
          }
        });
      },
      "matmul");
}

}  // namespace wick::cpu
