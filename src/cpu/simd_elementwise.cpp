// The elementwise vector kernels of simd.h: exp, sigmoid, silu and gelu over f32, the conversions
// between f32 and f16 / bf16, and the one-pass bf16 kernels (arith_bf16, unary_bf16) that widen,
// compute in f32 and round once (Note [Vector exp and bf16 operations] in simd_impl.h).
#include <cstdint>

#include "cpu/simd_impl.h"
#include "wick/scalar_types.h"

namespace wick::cpu::simd::detail {
namespace {

// ---- bf16 ------------------------------------------------------------------------------------
// The conversions, and the kernels that widen bf16, compute in f32 and round once in one pass (Note
// [Vector exp and bf16 operations]); Ops::to_bf16 gives bf16::from_f32's bits at every level.

template <int W, class Ops>
WICK_INLINE void f32_to_bf16_v(const float* in, uint16_t* out, int64_t n, const Ops& ops) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(out + i, ops.to_bf16(load<typename Vec<W>::F>(in + i)));
  for (; i < n; ++i) out[i] = bf16::from_f32(in[i]);
}

// Kernels::arith_bf16 with f on W lanes, and one lane at a time for the tail: one pass that widens,
// computes and rounds, the stride of each operand (1 or 0) a constant of its loop.
template <int W, class Op, class Ops>
WICK_INLINE void arith_bf16_v(Op f, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out,
                              int64_t n, const Ops& ops) {
  using F = typename Vec<W>::F;
  const float x0 = bf16::to_f32(x[0]), y0 = bf16::to_f32(y[0]);
  auto run = [&]<bool kX, bool kY>() __attribute__((always_inline)) {
    const F xs = F{} + x0, ys = F{} + y0;
    int64_t i = 0;
    for (; i + W <= n; i += W) store(out + i, ops.to_bf16(f(kX ? ops.bf16(x + i) : xs, kY ? ops.bf16(y + i) : ys)));
    for (; i < n; ++i) out[i] = bf16::from_f32(f(kX ? bf16::to_f32(x[i]) : x0, kY ? bf16::to_f32(y[i]) : y0));
  };
  if (sx == 1 && sy == 1) return run.template operator()<true, true>();
  if (sx == 1) return run.template operator()<true, false>();
  if (sy == 1) return run.template operator()<false, true>();
  run.template operator()<false, false>();
}

template <int W, class Ops>
WICK_INLINE void arith_bf16_op_v(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, int64_t sy, uint16_t* out,
                                 int64_t n, const Ops& ops) {
  if (n <= 0) return;
  // The one IEEE operation of ew::Add, Sub, Mul and Div on floats (elementwise_math.h), written
  // here as always_inline lambdas: GCC would compile the functors out of line for vector types.
  auto go = [&](auto f) __attribute__((always_inline)) { arith_bf16_v<W>(f, x, sx, y, sy, out, n, ops); };
  switch (op) {
    case Arith::Add:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a + b; });
    case Arith::Sub:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a - b; });
    case Arith::Mul:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a * b; });
    case Arith::Div:
      return go([](auto a, auto b) __attribute__((always_inline)) { return a / b; });
  }
}

// Kernels::unary_bf16: act_v over bf16 values, widened and rounded in the same pass.
template <int W, class Ops>
WICK_INLINE void unary_bf16_v(Unary op, const uint16_t* in, uint16_t* out, int64_t n, const Ops& ops) {
  using F = typename Vec<W>::F;
  auto ld = [&](const uint16_t* p) __attribute__((always_inline)) { return ops.bf16(p); };
  auto st = [&](uint16_t* const p, const F& v) __attribute__((always_inline)) { store(p, ops.to_bf16(v)); };
  auto go = [&](auto f) __attribute__((always_inline)) { unary_v<W>(in, out, n, f, ld, st); };
  switch (op) {
    case Unary::Exp:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Exp>(x, ops); });
    case Unary::Sigmoid:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Sigmoid>(x, ops); });
    case Unary::Silu:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Silu>(x, ops); });
    case Unary::Gelu:
      return go([&](const F& x) __attribute__((always_inline)) { return act_v<W, Unary::Gelu>(x, ops); });
  }
}

template <int W, class Ops>
WICK_INLINE void bf16_to_f32_v(const uint16_t* in, float* out, int64_t n, const Ops& ops) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(out + i, ops.bf16(in + i));
  for (; i < n; ++i) out[i] = bf16::to_f32(in[i]);
}

}  // namespace

// ---- the levels ------------------------------------------------------------------------------

// The kernels that round to bf16 at W lanes, with the level's Ops::to_bf16 (every level's, and the
// AVX512_BF16 level's own).
#define WICK_BF16_KERNELS(suffix, W, ATTR, OPS)                                                                      \
  ATTR __attribute__((flatten)) void unary_bf16_##suffix(Unary op, const uint16_t* in, uint16_t* out, int64_t n) {   \
    unary_bf16_v<W>(op, in, out, n, OPS{});                                                                          \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void f32_to_bf16_##suffix(const float* in, uint16_t* out, int64_t n) {               \
    f32_to_bf16_v<W>(in, out, n, OPS{});                                                                             \
  }                                                                                                                  \
  ATTR __attribute__((flatten)) void arith_bf16_##suffix(Arith op, const uint16_t* x, int64_t sx, const uint16_t* y, \
                                                         int64_t sy, uint16_t* out, int64_t n) {                     \
    arith_bf16_op_v<W>(op, x, sx, y, sy, out, n, OPS{});                                                             \
  }

#define WICK_ELEMENTWISE_LEVEL(suffix, W, ATTR, OPS)                                                                   \
  WICK_BF16_KERNELS(suffix, W, ATTR, OPS)                                                                              \
  ATTR __attribute__((flatten)) void exp_##suffix(const float* in, float* out, int64_t n) {                            \
    unary_f32<W>(                                                                                                      \
        in, out, n, [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Exp>(x, OPS{}); }); \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void sigmoid_##suffix(const float* in, float* out, int64_t n) {                        \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Sigmoid>(x, OPS{}); });         \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void silu_##suffix(const float* in, float* out, int64_t n) {                           \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Silu>(x, OPS{}); });            \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void gelu_##suffix(const float* in, float* out, int64_t n) {                           \
    unary_f32<W>(                                                                                                      \
        in, out, n,                                                                                                    \
        [](const Vec<W>::F& x) __attribute__((always_inline)) { return act_v<W, Unary::Gelu>(x, OPS{}); });            \
  }                                                                                                                    \
  ATTR __attribute__((flatten)) void bf16_to_f32_##suffix(const uint16_t* in, float* out, int64_t n) {                 \
    bf16_to_f32_v<W>(in, out, n, OPS{});                                                                               \
  }

WICK_ELEMENTWISE_LEVEL(base, 4, , OpsBase)

void f32_to_f16_base(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16::from_f32(in[i]);
}
void f16_to_f32_base(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = f16::to_f32(in[i]);
}

#ifdef WICK_SIMD_X86
WICK_ELEMENTWISE_LEVEL(avx2, 8, WICK_AVX2, OpsAvx2)
WICK_ELEMENTWISE_LEVEL(avx512, 16, WICK_AVX512, OpsAvx512)
WICK_BF16_KERNELS(avx512bf16, 16, WICK_AVX512BF16, OpsAvx512Bf16)

// f16 through F16C / AVX-512F, rounding to nearest even (the immediate), whatever MXCSR says.
WICK_AVX2 void f32_to_f16_avx2(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = f16::from_f32(in[i]);
}
WICK_AVX2 void f16_to_f32_avx2(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = f16::to_f32(in[i]);
}
WICK_AVX512 void f32_to_f16_avx512(const float* in, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  f32_to_f16_avx2(in + i, out + i, n - i);
}
WICK_AVX512 void f16_to_f32_avx512(const uint16_t* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  f16_to_f32_avx2(in + i, out + i, n - i);
}
#endif

}  // namespace wick::cpu::simd::detail
