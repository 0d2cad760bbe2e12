// CPU binary elementwise ops, comparisons and where_cond: the switch is generated from the op
// table's binary and compare rows; the math is in backend/elementwise_math.h, the loops in
// cpu/elementwise_loops.h.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>

#include "backend/dispatch.h"
#include "backend/elementwise_math.h"
#include "cpu/cpu_backend.h"
#include "cpu/elementwise_loops.h"
#include "cpu/simd.h"

namespace wick::cpu {

namespace {

// The operation of simd's arith_bf16 that computes F, if any.
template <class F>
constexpr std::optional<simd::Arith> arith_bf16_op() {
  if constexpr (std::is_same_v<F, ew::Add>) return simd::Arith::Add;
  if constexpr (std::is_same_v<F, ew::Sub>) return simd::Arith::Sub;
  if constexpr (std::is_same_v<F, ew::Mul>) return simd::Arith::Mul;
  if constexpr (std::is_same_v<F, ew::Div>) return simd::Arith::Div;
  return std::nullopt;
}

// bf16 / f16 arithmetic: where the output and each operand have unit stride or are a broadcast
// scalar along the chunk, bf16 add, sub, mul and div go through simd's arith_bf16 (widened,
// computed and rounded in one pass), the others in blocks widened to f32 and rounded back with the
// vector converters of simd.h; elsewhere element by element. The same f32 math and rounding as the
// scalar path.
template <class T, class F>
void arith16(const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  const auto widen = simd::converter<float, T>();
  const auto narrow = simd::converter<T, float>();
  ew_loops::for_each_binary_chunk<T, T>(
      a, b, dst, [&](T* o, const T* x, const T* y, int64_t n, const std::array<int64_t, 3>& st) {
        if (st[0] != 1 || st[1] > 1 || st[2] > 1 || st[1] < 0 || st[2] < 0) {
          for (int64_t j = 0; j < n; ++j)
            o[j * st[0]] =
                convert<T>(static_cast<float>(F{}(static_cast<float>(x[j * st[1]]), static_cast<float>(y[j * st[2]]))));
          return;
        }
        if constexpr (std::is_same_v<T, bf16> && arith_bf16_op<F>().has_value()) {
          return simd::kernels().arith_bf16(*arith_bf16_op<F>(), &x->bits, st[1], &y->bits, st[2], &o->bits, n);
        }
        constexpr int64_t kBlock = 512;
        float fx[kBlock], fy[kBlock];
        const float sx = static_cast<float>(x[0]), sy = static_cast<float>(y[0]);
        for (int64_t i = 0; i < n; i += kBlock) {
          const int64_t m = std::min(kBlock, n - i);
          if (st[1] == 1) widen(x + i, fx, m);
          if (st[2] == 1) widen(y + i, fy, m);
          if (st[1] == 1 && st[2] == 1) {
            for (int64_t j = 0; j < m; ++j) fx[j] = static_cast<float>(F{}(fx[j], fy[j]));
          } else if (st[1] == 1) {
            for (int64_t j = 0; j < m; ++j) fx[j] = static_cast<float>(F{}(fx[j], sy));
          } else if (st[2] == 1) {
            for (int64_t j = 0; j < m; ++j) fx[j] = static_cast<float>(F{}(sx, fy[j]));
          } else {
            for (int64_t j = 0; j < m; ++j) fx[j] = static_cast<float>(F{}(sx, sy));
          }
          narrow(fx, o + i, m);
        }
      });
}

// Arithmetic: in the compute type, rounded once to T.
template <uint32_t Mask, class F>
void arith(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  dispatch_in<Mask>(
      a.dtype,
      [&]<class T>() {
        using C = compute_t<T>;
        if constexpr (std::is_same_v<T, bf16> || std::is_same_v<T, f16>) {
          return arith16<T, F>(a, b, dst);
        }
        ew_loops::binary<T, T>([](T v) { return convert<C>(v); },
                               [](C x, C y) { return convert<T>(static_cast<C>(F{}(x, y))); }, a, b, dst);
      },
      std::string(op_name(op)).c_str());
}

// Comparisons write u8 1 / 0.
template <uint32_t Mask, class F>
void compare(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  dispatch_in<Mask>(
      a.dtype,
      [&]<class T>() {
        using C = compute_t<T>;
        ew_loops::binary<T, uint8_t>([](T v) { return convert<C>(v); },
                                     [](C x, C y) { return static_cast<uint8_t>(F{}(x, y) ? 1 : 0); }, a, b, dst);
      },
      std::string(op_name(op)).c_str());
}

// An unsigned integer type of the given size: where_cond only moves bits.
template <int64_t kSize>
using Bits =
    std::conditional_t<kSize == 1, uint8_t,
                       std::conditional_t<kSize == 2, uint16_t, std::conditional_t<kSize == 4, uint32_t, uint64_t>>>;

}  // namespace

void CpuBackend::binary(Op op, const TensorArg& a, const TensorArg& b, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  switch (op) {
#define WICK_X(name, str, kind, mask, F) \
  case Op::name:                         \
    return arith<mask, ew::F>(op, a, b, dst);
    WICK_BINARY_OPS(WICK_X)
#undef WICK_X
#define WICK_X(name, str, kind, mask, F) \
  case Op::name:                         \
    return compare<mask, ew::F>(op, a, b, dst);
    WICK_COMPARE_OPS(WICK_X)
#undef WICK_X
    default:
      break;
  }
  throw UnsupportedError("[binary] " + std::string(op_name(op)) + " is not a binary elementwise op");
}

void CpuBackend::where_cond(const TensorArg& cond, const TensorArg& t, const TensorArg& f, const TensorArg& dst) {
  if (dst.numel() == 0) return;
  constexpr uint32_t kCondTypes = kIntTypes;
  dispatch_in<kCondTypes>(
      cond.dtype,
      [&]<class Cond>() {
        switch (dtype_size(t.dtype)) {
          case 1:
            return ew_loops::where<Cond, Bits<1>>(cond, t, f, dst);
          case 2:
            return ew_loops::where<Cond, Bits<2>>(cond, t, f, dst);
          case 4:
            return ew_loops::where<Cond, Bits<4>>(cond, t, f, dst);
          default:
            return ew_loops::where<Cond, Bits<8>>(cond, t, f, dst);
        }
      },
      "where_cond");
}

}  // namespace wick::cpu
