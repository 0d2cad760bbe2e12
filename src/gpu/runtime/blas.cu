// The BLAS shim's implementation (blas.h): the only file that calls cuBLAS / rocBLAS.
#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

#include "gpu/runtime/blas.h"
#include "gpu/runtime/vendor.cuh"
#include "wick/error.h"

#if defined(WICK_GPU_CUDA)
#include <cublas_v2.h>
#else
#include <rocblas/rocblas.h>
#endif

namespace wick::WICK_GPU_NS::gpu {

namespace {

#if defined(WICK_GPU_CUDA)
using handle_t = cublasHandle_t;
using status_t = cublasStatus_t;
constexpr status_t kOk = CUBLAS_STATUS_SUCCESS;
std::string status_text(status_t s) { return std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s); }
#else
using handle_t = rocblas_handle;
using status_t = rocblas_status;
constexpr status_t kOk = rocblas_status_success;
std::string status_text(status_t s) { return rocblas_status_to_string(s); }
#endif

void check(status_t s, const char* op, int device) {
  if (s == kOk) return;
  const std::string msg = std::string("[") + op + "] " + kBackendName + " BLAS error " + status_text(s) + " (" +
                          kBackendName + ":" + std::to_string(device) + ")";
#if defined(WICK_GPU_CUDA)
  if (s == CUBLAS_STATUS_ALLOC_FAILED) throw OutOfMemory(msg);
#else
  if (s == rocblas_status_memory_error) throw OutOfMemory(msg);
#endif
  throw DeviceError(msg);
}

// -1: not decided yet; read from WICK_ALLOW_TF32 at the first GEMM unless set_allow_tf32 came first.
std::atomic<int> g_tf32{-1};

// One handle per stream, made on first use and bound to that stream for good: each backend has one
// stream (Note [GPU stream order]), so this is one handle per device. Never destroyed, like the
// backends themselves (their Storages may be freed during static destruction).
handle_t handle_for(void* stream, int device, const char* op) {
  static std::mutex mu;
  static auto* handles = new std::unordered_map<void*, handle_t>();
  std::lock_guard<std::mutex> g(mu);
  const auto it = handles->find(stream);
  if (it != handles->end()) return it->second;
  handle_t h = nullptr;
#if defined(WICK_GPU_CUDA)
  check(cublasCreate(&h), op, device);
  check(cublasSetStream(h, native_stream(stream)), op, device);
  // Reductions in the compute type, never in a 16-bit output type (Note [GPU GEMM precision]).
  check(cublasSetMathMode(
            h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)),
        op, device);
#else
  check(rocblas_create_handle(&h), op, device);
  check(rocblas_set_stream(h, native_stream(stream)), op, device);
#endif
  handles->emplace(stream, h);
  return h;
}

#if defined(WICK_GPU_CUDA)
cudaDataType native_type(BlasType t) {
  switch (t) {
    case BlasType::F16:
      return CUDA_R_16F;
    case BlasType::BF16:
      return CUDA_R_16BF;
    case BlasType::F32:
      return CUDA_R_32F;
    case BlasType::F64:
      break;
  }
  return CUDA_R_64F;
}
#else
rocblas_datatype native_type(BlasType t) {
  switch (t) {
    case BlasType::F16:
      return rocblas_datatype_f16_r;
    case BlasType::BF16:
      return rocblas_datatype_bf16_r;
    case BlasType::F32:
      return rocblas_datatype_f32_r;
    case BlasType::F64:
      break;
  }
  return rocblas_datatype_f64_r;
}

constexpr int64_t kIntMax = INT_MAX;

int64_t elem_size(BlasType t) {
  switch (t) {
    case BlasType::F16:
    case BlasType::BF16:
      return 2;
    case BlasType::F32:
      return 4;
    case BlasType::F64:
      break;
  }
  return 8;
}

const void* advance(const void* p, int64_t elems, BlasType t) {
  return static_cast<const char*>(p) + elems * elem_size(t);
}
#endif

}  // namespace

void set_allow_tf32(bool allow) { g_tf32.store(allow ? 1 : 0); }

bool allow_tf32() {
  int v = g_tf32.load();
  if (v < 0) {
    const char* e = std::getenv("WICK_ALLOW_TF32");
    const int from_env = e && std::strcmp(e, "1") == 0 ? 1 : 0;
    g_tf32.compare_exchange_strong(v, from_env);
    v = g_tf32.load();
  }
  return v == 1;
}

void gemm_strided_batched(void* stream, int device, int64_t m, int64_t n, int64_t k, const GemmOperand& a,
                          const GemmOperand& b, const GemmOutput& c, int64_t batch, const char* op) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return;
  const handle_t h = handle_for(stream, device, op);
  const bool f64 = a.type == BlasType::F64;
  const double alpha_d = 1.0, beta_d = 0.0;
  const float alpha_f = 1.0f, beta_f = 0.0f;
  const void* alpha = f64 ? static_cast<const void*>(&alpha_d) : static_cast<const void*>(&alpha_f);
  const void* beta = f64 ? static_cast<const void*>(&beta_d) : static_cast<const void*>(&beta_f);
#if defined(WICK_GPU_CUDA)
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  if (f64) {
    compute = CUBLAS_COMPUTE_64F;
  } else if (a.type == BlasType::F32 && allow_tf32()) {
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  check(cublasGemmStridedBatchedEx_64(h, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                                      k, alpha, a.data, native_type(a.type), a.ld, a.batch_stride, b.data,
                                      native_type(b.type), b.ld, b.batch_stride, beta, c.data, native_type(c.type),
                                      c.ld, c.batch_stride, batch, compute, CUBLAS_GEMM_DEFAULT),
        op, device);
#else
  if (k > kIntMax || std::max({a.ld, b.ld, c.ld}) > kIntMax)
    throw UnsupportedError(std::string("[") + op + "] GEMM with k = " + std::to_string(k) +
                           " or a leading dimension past 2^31 - 1 exceeds rocBLAS's 32-bit interface (" + kBackendName +
                           ":" + std::to_string(device) + ")");
  const rocblas_datatype compute = f64 ? rocblas_datatype_f64_r : rocblas_datatype_f32_r;
  // rocBLAS takes int sizes: split C into blocks of rows, columns and batches it can address.
  // Row block i0 of C reads rows i0.. of op(A); column block j0 reads columns j0.. of op(B).
  for (int64_t b0 = 0; b0 < batch; b0 += kIntMax) {
    const int64_t nb = std::min(kIntMax, batch - b0);
    for (int64_t j0 = 0; j0 < n; j0 += kIntMax) {
      const int64_t nn = std::min(kIntMax, n - j0);
      for (int64_t i0 = 0; i0 < m; i0 += kIntMax) {
        const int64_t mm = std::min(kIntMax, m - i0);
        const void* pa = advance(a.data, b0 * a.batch_stride + (a.trans ? i0 * a.ld : i0), a.type);
        const void* pb = advance(b.data, b0 * b.batch_stride + (b.trans ? j0 : j0 * b.ld), b.type);
        void* pc = const_cast<void*>(advance(c.data, b0 * c.batch_stride + i0 + j0 * c.ld, c.type));
        check(rocblas_gemm_strided_batched_ex(h, a.trans ? rocblas_operation_transpose : rocblas_operation_none,
                                              b.trans ? rocblas_operation_transpose : rocblas_operation_none,
                                              static_cast<rocblas_int>(mm), static_cast<rocblas_int>(nn),
                                              static_cast<rocblas_int>(k), alpha, pa, native_type(a.type),
                                              static_cast<rocblas_int>(a.ld), a.batch_stride, pb, native_type(b.type),
                                              static_cast<rocblas_int>(b.ld), b.batch_stride, beta, pc,
                                              native_type(c.type), static_cast<rocblas_int>(c.ld), c.batch_stride, pc,
                                              native_type(c.type), static_cast<rocblas_int>(c.ld), c.batch_stride,
                                              static_cast<rocblas_int>(nb), compute, rocblas_gemm_algo_standard, 0, 0),
              op, device);
      }
    }
  }
#endif
}

}  // namespace wick::WICK_GPU_NS::gpu
