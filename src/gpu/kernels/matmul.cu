// matmul on the GPU: strided-batched GEMM through the BLAS shim (src/gpu/runtime/blas.h).
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
#include <array>
#include <vector>

#include "gpu/gpu_backend.h"
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

// The batch dims (all but the last two) of a, b, c with size-1 dims dropped and neighbours merged
// where all three operands step uniformly across them; outermost first, at least one dim.
std::vector<BatchDim> collapse_batch(const TensorArg& a, const TensorArg& b, const TensorArg& c) {
  std::vector<BatchDim> dims;
  const size_t nb = c.layout.rank() - 2;
  for (size_t d = 0; d < nb; ++d) {
    const int64_t size = c.layout.dim(d);
    if (size == 1) continue;
    const std::array<int64_t, 3> s{a.layout.stride(d), b.layout.stride(d), c.layout.stride(d)};
    if (!dims.empty()) {
      BatchDim& prev = dims.back();
      bool merge = true;
      for (int k = 0; k < 3; ++k)
        if (prev.stride[k] != s[k] * size) merge = false;
      if (merge) {
        prev.size *= size;
        prev.stride = s;
        continue;
      }
    }
    dims.push_back({size, s});
  }
  if (dims.empty()) dims.push_back({1, {0, 0, 0}});
  return dims;
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
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) outer *= dims[d].size;
  for (int64_t o = 0; o < outer; ++o) {
    std::array<int64_t, 3> off{};
    int64_t rem = o;
    for (size_t d = dims.size() - 1; d-- > 0;) {
      const int64_t idx = rem % dims[d].size;
      rem /= dims[d].size;
      for (int q = 0; q < 3; ++q) off[q] += idx * dims[d].stride[q];
    }
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
  }
}

}  // namespace

void GpuBackend::matmul(const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  const kern::LaunchCtx ctx = enter("matmul");
  const size_t r = dst.layout.rank();
  const int64_t m = dst.layout.dim(r - 2), n = dst.layout.dim(r - 1), k = a.layout.dim(r - 1);
  if (k == 0) {  // an empty sum
    kern::const_set(ctx, dst, Scalar(0.0));
    return;
  }
  const DType in_t = kern::gemm_input_dtype(dst.dtype);
  kern::Scratch ha, hb, hc;
  auto prepare = [&](const TensorArg& x, kern::Scratch& hold) {
    if (x.dtype == in_t && matrix_view(x).ok) return x;
    return compact_copy(*this, ctx, x, in_t, hold);
  };
  const TensorArg A = prepare(a, ha);
  const TensorArg B = prepare(b, hb);
  // f8 results are produced in f32 and rounded once by the cast below (Note [GPU GEMM dtypes]).
  const DType out_t = dst.dtype == DType::F8E4M3 ? DType::F32 : dst.dtype;
  TensorArg C = dst;
  if (out_t != dst.dtype || !matrix_view(dst).ok) {
    hc = kern::Scratch(*this, dst.numel() * static_cast<int64_t>(dtype_size(out_t)));
    C = TensorArg(hc.get(), out_t, Layout(dst.shape()));
  }
  run_gemms(ctx, A, B, C, m, n, k);
  if (C.data != dst.data) kern::cast(ctx, C, dst);
}

}  // namespace wick::WICK_GPU_NS
