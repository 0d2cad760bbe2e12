// matmul on the GPU: strided-batched GEMM through the BLAS shim (src/gpu/runtime/blas.h), and a
// bandwidth-bound kernel of its own for matrix-vector products (Note [GPU matrix-vector products]).
//
// Note [GPU matmul mapping]
// wick's matrices are row-major views with arbitrary strides; BLAS is column-major. Each operand is
// passed as it lies whenever BLAS can describe it (col_view in matmul.h: unit stride in one of the
// two matrix dims, a leading dimension that covers the other), with a transpose flag instead of a
// copy. When C is row-major (the usual case, a contiguous dst) the call computes C^T = B^T A^T,
// which BLAS writes column-major, i.e. C row-major. Batch dims that merge into one stride for all
// three operands (stride 0 included: a broadcast operand) become one strided-batched call; the
// remaining outer batch dims are looped on the host. Operands BLAS cannot describe (no unit
// stride, overlapping rows) and f8e4m3 operands (Note [GPU GEMM dtypes]) are first copied by the
// backend's cast kernel into a compact buffer, whose broadcast batch dims stay broadcast.
//
// Note [GPU matrix-vector products]
// A product with one output column (n == 1: dst[i] = sum_k A[i, k] b[k]) or one output row
// (m == 1: dst[j] = sum_k a[k] B[k, j], the decode product x @ W^T) reads each matrix element once
// for one FMA, so it is bound by memory bandwidth, which a GEMM does not reach. gemv_kernel
// computes both as dst[i] = sum_k M[i, k] x[k] over a matrix M whose rows are unit-stride along k
// (M = A, or M = B^T: W's rows) and a vector x of any stride. GpuBackend::matmul takes it (host
// checks only) where dst, a and b are all bf16, f16 or f32; M is unit-stride along k (any stride
// when k == 1); no batch dim of size > 1 has M at stride 0 (a shared M is a GEMM); and each lane's
// walk along k is short (kGemvMaxRounds) or enough rows keep kGemvMinInFlight bytes of loads in
// flight (a few long dot products go to BLAS). A group of G lanes (a power of two, at most a warp)
// computes kGemvRows outputs, issuing all loads of a round before its FMAs, accumulating in f32
// (fmaf, as BLAS and the CPU do) and summing its lanes by butterfly shuffles (gpu::shfl_xor); a
// group past the last row reads the last row again, since every lane must reach the shuffles.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "backend/strided_plan.h"
#include "gpu/gpu_backend.h"
#include "gpu/kernels/group.cuh"
#include "gpu/kernels/map.cuh"
#include "gpu/kernels/matmul.h"

namespace wick::WICK_GPU_NS {

namespace {

kern::ColView matrix_view(const TensorArg& t) {
  const size_t r = t.layout.rank();
  return kern::col_view(t.layout.dim(r - 2), t.layout.dim(r - 1), t.layout.stride(r - 2), t.layout.stride(r - 1));
}

const char* byte_ptr(const TensorArg& t) {
  return static_cast<const char*>(t.data) + t.layout.offset() * static_cast<int64_t>(dtype_size(t.dtype));
}

// x converted to `to` in a fresh contiguous buffer; batch dims of stride 0 are stored once and keep
// stride 0 in the returned view.
TensorArg compact_copy(Backend& be, const kern::LaunchCtx& ctx, const TensorArg& x, DType to, kern::Scratch& hold) {
  const size_t r = x.layout.rank();
  Shape cshape = x.shape();
  for (size_t d = 0; d + 2 < r; ++d)
    if (x.layout.stride(d) == 0) cshape[d] = 1;
  const Layout packed(cshape);
  hold = kern::Scratch(be, packed.numel() * static_cast<int64_t>(dtype_size(to)));
  kern::cast(ctx, TensorArg(x.data, x.dtype, Layout(cshape, x.layout.strides(), x.layout.offset())),
             TensorArg(hold.get(), to, packed));
  Strides st = packed.strides();
  for (size_t d = 0; d + 2 < r; ++d)
    if (cshape[d] != x.shape()[d]) st[d] = 0;
  return TensorArg(hold.get(), to, Layout(x.shape(), st, 0));
}

struct BatchDim {
  int64_t size;
  std::array<int64_t, 3> stride;  // A, B, C
};

// The batch dims (all but the last two) of a, b, c collapsed (Note [Strided plans]); outermost
// first, at least one dim, a single batch as one dim of stride 0.
std::vector<BatchDim> collapse_batch(const TensorArg& a, const TensorArg& b, const TensorArg& c) {
  const size_t nb = c.layout.rank() - 2;
  const auto batch = [nb](const Dims& v) { return Dims(v.begin(), v.begin() + nb); };
  const Strides sa = batch(a.layout.strides()), sb = batch(b.layout.strides()), sc = batch(c.layout.strides());
  const StridedPlan<3> p = collapse<3>(batch(c.shape()), {&sa, &sb, &sc});
  if (p.numel == 1) return {BatchDim{1, {0, 0, 0}}};
  std::vector<BatchDim> dims;
  for (int d = 0; d < p.rank(); ++d) dims.push_back({p.shape[d], {p.strides[0][d], p.strides[1][d], p.strides[2][d]}});
  return dims;
}

// f(off) for every index of the batch dims but the innermost (once when there are fewer than two),
// off[q] the element offset of operand q (A, B, C) at that index.
template <class F>
void for_each_outer(const std::vector<BatchDim>& dims, F&& f) {
  const size_t outer_dims = dims.empty() ? 0 : dims.size() - 1;
  int64_t outer = 1;
  for (size_t d = 0; d < outer_dims; ++d) outer *= dims[d].size;
  for (int64_t o = 0; o < outer; ++o) {
    std::array<int64_t, 3> off{};
    int64_t rem = o;
    for (size_t d = outer_dims; d-- > 0;) {
      const int64_t idx = rem % dims[d].size;
      rem /= dims[d].size;
      for (int q = 0; q < 3; ++q) off[q] += idx * dims[d].stride[q];
    }
    f(off);
  }
}

// C = A B for every batch; A, B, C already BLAS-describable (matrix_view ok), A and B of one dtype.
void run_gemms(const kern::LaunchCtx& ctx, const TensorArg& A, const TensorArg& B, const TensorArg& C, int64_t m,
               int64_t n, int64_t k) {
  const kern::ColView va = matrix_view(A), vb = matrix_view(B), vc = matrix_view(C);
  gpu::GemmOperand ga{nullptr, kern::blas_type(A.dtype), va.trans, va.ld, 0};
  gpu::GemmOperand gb{nullptr, kern::blas_type(B.dtype), vb.trans, vb.ld, 0};
  const gpu::GemmOutput gc_base{nullptr, kern::blas_type(C.dtype), vc.ld, 0};
  const std::vector<BatchDim> dims = collapse_batch(A, B, C);
  const BatchDim& inner = dims.back();
  const int64_t ea = dtype_size(A.dtype), eb = dtype_size(B.dtype), ec = dtype_size(C.dtype);
  for_each_outer(dims, [&](const std::array<int64_t, 3>& off) {
    gpu::GemmOperand pa = ga, pb = gb;
    gpu::GemmOutput pc = gc_base;
    pa.data = byte_ptr(A) + off[0] * ea;
    pb.data = byte_ptr(B) + off[1] * eb;
    pc.data = const_cast<char*>(byte_ptr(C)) + off[2] * ec;
    pa.batch_stride = inner.stride[0];
    pb.batch_stride = inner.stride[1];
    pc.batch_stride = inner.stride[2];
    if (vc.trans) {
      // C is row-major: BLAS computes C^T = B^T A^T (Note [GPU matmul mapping]).
      pa.trans = !pa.trans;
      pb.trans = !pb.trans;
      gpu::gemm_strided_batched(ctx.stream, ctx.device, n, m, k, pb, pa, pc, inner.size, ctx.op);
    } else {
      gpu::gemm_strided_batched(ctx.stream, ctx.device, m, n, k, pa, pb, pc, inner.size, ctx.op);
    }
  });
}

// The launch shape of Note [GPU matrix-vector products]: threads per block, outputs per lane group,
// units (16-byte vectors or single elements) of each row a lane loads per round, partial sums per
// output and lane (each a shorter FMA chain), and when a product goes to BLAS instead.
inline constexpr int kGemvBlock = 256;
inline constexpr int kGemvRows = 2;
template <int V>
inline constexpr int kGemvUnroll = V == 1 ? 8 : 4;
inline constexpr int kGemvAcc = 4;
inline constexpr int64_t kGemvMaxRounds = 16;
inline constexpr int64_t kGemvMinInFlight = int64_t{1} << 20;
// Resident blocks per multiprocessor the kernel is compiled for: at most 80 registers a thread on
// NVIDIA (HIP reads it as at least 3 waves per SIMD). With it ptxas issues all 12 16-byte loads of
// a bf16 or f32 round before the first FMA (f16: 9, then 3 among the first FMAs); without it, or
// with 4 blocks (64 registers), it spreads them among the FMAs, each FMA on a load that has not
// arrived holding back the loads behind it.
inline constexpr int kGemvMinBlocks = 3;

// What a lane loads at once (a unit: 16 bytes, or one element: V == 1) and how it becomes FMA
// operands (Note [GPU matrix-vector products]): the values as f32 (bf16: a shift; f16: the hardware
// widening of f16::to_f32 on NVIDIA).
template <class T, int V>
struct GemvOperands {
  using Unit = kern::Vec<T, V>;
  __device__ static Unit gather(const T* x, int64_t stride) {
    Unit u;
#pragma unroll
    for (int e = 0; e < V; ++e) u.v[e] = x[e * stride];
    return u;
  }
  __device__ static void values(const Unit& u, float (&f)[V]) {
#pragma unroll
    for (int e = 0; e < V; ++e) f[e] = static_cast<float>(u.v[e]);
  }
};

template <class T>
struct GemvArgs {
  const T* mat;  // row i of product p at mat + p * mbs + i * ms, unit stride along k
  const T* vec;  // element e of product p at vec + p * vbs + e * vs
  T* dst;        // output i of product p at dst + p * dbs + i * ds
  int64_t rows, k, ms, vs, ds;
  int64_t batch, mbs, vbs, dbs;
  int group;  // lanes per group of kGemvRows rows: a power of two, at most the warp size
};

// Note [GPU matrix-vector products]. V: elements per unit (16 bytes of T, or 1: any alignment);
// XVec: x is read in 16-byte units too, else element by element with its stride.
template <class T, int V, bool XVec>
__global__ void __launch_bounds__(kGemvBlock, kGemvMinBlocks) gemv_kernel(const GemvArgs<T> a) {
  constexpr int R = kGemvRows, U = kGemvUnroll<V>;
  using Ops = GemvOperands<T, V>;
  using Unit = typename Ops::Unit;
  const int g = a.group;
  const kern::GroupSlot slot = kern::group_slot(static_cast<unsigned>(g));
  const int lane = static_cast<int>(slot.lane);
  const int64_t first = static_cast<int64_t>(slot.index) * R;  // this group's first row in the block's
  const int64_t per_block = static_cast<int64_t>(kern::groups_per_block(blockDim.x, static_cast<unsigned>(g))) * R;
  const int64_t units = a.k / V;
  for (int64_t p = blockIdx.y; p < a.batch; p += gridDim.y) {
    const T* const x = a.vec + p * a.vbs;
    const auto x_unit = [&](int64_t j) {
      if constexpr (XVec)
        return reinterpret_cast<const Unit*>(x)[j];
      else
        return Ops::gather(x + j * V * a.vs, a.vs);
    };
    for (int64_t base = static_cast<int64_t>(blockIdx.x) * per_block; base < a.rows;
         base += static_cast<int64_t>(gridDim.x) * per_block) {
      const T* row[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t i = base + first + r < a.rows ? base + first + r : a.rows - 1;
        row[r] = a.mat + p * a.mbs + i * a.ms;
      }
      float acc[R][kGemvAcc] = {};
      // One round: units j0 + lane + u * g (u < U) of x and of each row, all loaded before any FMA.
      // Guard: some may lie past the row; those load the last unit instead (no branch between the
      // loads) and are skipped.
      const auto round = [&]<bool Guard>(int64_t j0) {
        Unit xs[U], w[R][U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int64_t j = j0 + lane + u * g, jc = Guard && j >= units ? units - 1 : j;
          xs[u] = x_unit(jc);
#pragma unroll
          for (int r = 0; r < R; ++r) w[r][u] = reinterpret_cast<const Unit*>(row[r])[jc];
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          if (Guard && j0 + lane + u * g >= units) continue;
          float xf[V];
          Ops::values(xs[u], xf);
#pragma unroll
          for (int r = 0; r < R; ++r) {
            float wf[V];
            Ops::values(w[r][u], wf);
#pragma unroll
            for (int e = 0; e < V; ++e) acc[r][u % kGemvAcc] = fmaf(wf[e], xf[e], acc[r][u % kGemvAcc]);
          }
        }
      };
      // Rounds are counted for the whole warp (j0 does not depend on the lane): every lane runs
      // them all.
      int64_t j0 = 0;
      for (; j0 + U * g <= units; j0 += U * g) round.template operator()<false>(j0);
      if (j0 < units) round.template operator()<true>(j0);
      float sum[R];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        sum[r] = acc[r][0];
#pragma unroll
        for (int q = 1; q < kGemvAcc; ++q) sum[r] += acc[r][q];
      }
      for (int o = g / 2; o > 0; o /= 2)
#pragma unroll
        for (int r = 0; r < R; ++r) sum[r] += gpu::shfl_xor(sum[r], o);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const int64_t i = base + first + r;
        if (lane == r % g && i < a.rows) a.dst[p * a.dbs + i * a.ds] = convert<T>(sum[r]);
      }
    }
  }
}

// Blocks of kGemvBlock threads, fewer (whole warps) when the product has fewer rows.
template <class T, int V, bool XVec>
void launch_gemv(const kern::LaunchCtx& ctx, const GemvArgs<T>& g, unsigned warp_size) {
  const int64_t groups = (g.rows + kGemvRows - 1) / kGemvRows;
  const unsigned threads = std::max(kern::pow2_at_least(groups * g.group, kGemvBlock), warp_size);
  const int64_t per_block = threads / g.group * kGemvRows;
  constexpr int64_t kMaxGridX = int64_t{1} << 20, kMaxGridY = 65535;  // the kernel's loops cover the rest
  const dim3 grid(static_cast<unsigned>(std::min((g.rows + per_block - 1) / per_block, kMaxGridX)),
                  static_cast<unsigned>(std::min(g.batch, kMaxGridY)));
  gpu::launch<gemv_kernel<T, V, XVec>>(ctx, grid, threads, 0, g);
}

// c = a b by gemv_kernel when Note [GPU matrix-vector products] allows it; returns whether it ran.
// a, b and c are of type T.
template <class T>
bool gemv(const kern::LaunchCtx& ctx, int warp_size, const TensorArg& a, const TensorArg& b, const TensorArg& c,
          int64_t m, int64_t n, int64_t k) {
  const size_t r = c.layout.rank();
  // M = A (n == 1) or B^T (m == 1): its rows lie along dim d of that operand, as x's elements lie
  // along dim d of the other and the outputs along dim d of c.
  const bool col = n == 1 && (k == 1 || a.layout.stride(r - 1) == 1);
  if (!col && !(m == 1 && (k == 1 || b.layout.stride(r - 2) == 1))) return false;
  const int qm = col ? 0 : 1, qx = 1 - qm;  // operand indices in BatchDim::stride
  const TensorArg& mat = col ? a : b;
  const TensorArg& vec = col ? b : a;
  const size_t d = col ? r - 2 : r - 1;
  const int64_t rows = col ? m : n, ms = mat.layout.stride(d), vs = vec.layout.stride(d);
  const std::vector<BatchDim> dims = r > 2 ? collapse_batch(a, b, c) : std::vector<BatchDim>{};
  constexpr int V = static_cast<int>(16 / sizeof(T));
  bool mat_vec = k % V == 0 && kern::aligned_to(mat.ptr<T>(), 16) && (rows == 1 || ms % V == 0);
  bool x_vec = vs == 1 && kern::aligned_to(vec.ptr<T>(), 16);
  for (const BatchDim& bd : dims) {
    if (bd.size > 1 && bd.stride[qm] == 0) return false;  // M shared by several products: a GEMM
    mat_vec = mat_vec && bd.stride[qm] % V == 0;
    x_vec = x_vec && bd.stride[qx] % V == 0;
  }
  x_vec = x_vec && mat_vec;
  const int64_t unit_bytes = mat_vec ? 16 : static_cast<int64_t>(sizeof(T));
  const int64_t units = mat_vec ? k / V : k, unroll = mat_vec ? kGemvUnroll<V> : kGemvUnroll<1>;
  const unsigned ws = static_cast<unsigned>(warp_size);
  const unsigned group = kern::pow2_at_least((units + unroll - 1) / unroll, ws);
  const BatchDim inner = dims.empty() ? BatchDim{1, {0, 0, 0}} : dims.back();
  const int64_t rounds = (units + unroll * group - 1) / (unroll * group);
  const int64_t in_flight = (rows + kGemvRows - 1) / kGemvRows * inner.size * group * kGemvRows * unroll * unit_bytes;
  if (rounds > kGemvMaxRounds && in_flight < kGemvMinInFlight) return false;
  GemvArgs<T> g{nullptr,
                nullptr,
                nullptr,
                rows,
                k,
                ms,
                vs,
                c.layout.stride(d),
                inner.size,
                inner.stride[qm],
                inner.stride[qx],
                inner.stride[2],
                static_cast<int>(group)};
  for_each_outer(dims, [&](const std::array<int64_t, 3>& off) {
    g.mat = mat.ptr<T>() + off[qm];
    g.vec = vec.ptr<T>() + off[qx];
    g.dst = c.ptr<T>() + off[2];
    if (x_vec)
      launch_gemv<T, V, true>(ctx, g, ws);
    else if (mat_vec)
      launch_gemv<T, V, false>(ctx, g, ws);
    else
      launch_gemv<T, 1, false>(ctx, g, ws);
  });
  return true;
}

bool try_gemv(const kern::LaunchCtx& ctx, int warp_size, const TensorArg& a, const TensorArg& b, const TensorArg& c,
              int64_t m, int64_t n, int64_t k) {
  if (a.dtype != c.dtype || b.dtype != c.dtype) return false;
  switch (c.dtype) {
    case DType::BF16:
      return gemv<bf16>(ctx, warp_size, a, b, c, m, n, k);
    case DType::F16:
      return gemv<f16>(ctx, warp_size, a, b, c, m, n, k);
    case DType::F32:
      return gemv<float>(ctx, warp_size, a, b, c, m, n, k);
    default:
      return false;
  }
}

}  // namespace

void kern::matmul(const kern::LaunchCtx& base, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const kern::LaunchCtx ctx = base.with_op("matmul");
  const size_t r = dst.layout.rank();
  const int64_t m = dst.layout.dim(r - 2), n = dst.layout.dim(r - 1), k = a.layout.dim(r - 1);
  if (k == 0) {  // an empty sum
    kern::const_set(ctx, dst, Scalar(0.0));
    return;
  }
  if (try_gemv(ctx, ctx.warp_size, a, b, dst, m, n, k)) return;
  const DType in_t = kern::gemm_input_dtype(dst.dtype);
  kern::Scratch ha, hb, hc;
  auto prepare = [&](const TensorArg& x, kern::Scratch& hold) {
    if (x.dtype == in_t && matrix_view(x).ok) return x;
    return compact_copy(*base.backend, ctx, x, in_t, hold);
  };
  const TensorArg A = prepare(a, ha);
  const TensorArg B = prepare(b, hb);
  // f8 results are produced in f32 and rounded once by the cast below (Note [GPU GEMM dtypes]).
  const DType out_t = dst.dtype == DType::F8E4M3 ? DType::F32 : dst.dtype;
  TensorArg C = dst;
  if (out_t != dst.dtype || !matrix_view(dst).ok) {
    hc = kern::Scratch(*base.backend, dst.numel() * static_cast<int64_t>(dtype_size(out_t)));
    C = TensorArg(hc.get(), out_t, Layout(dst.shape()));
  }
  run_gemms(ctx, A, B, C, m, n, k);
  if (C.data != dst.data) kern::cast(ctx, C, dst);
}

}  // namespace wick::WICK_GPU_NS
