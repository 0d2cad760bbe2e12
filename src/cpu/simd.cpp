// The dispatch of simd.h's vector kernels: each level's table of kernels (defined in the
// simd_*.cpp files, declared in simd_impl.h), the level this processor and OS support (detect) and
// the level in use (WICK_CPU_ISA).
#include "cpu/simd.h"

#include <cstdlib>
#include <string>

#include "cpu/simd_impl.h"
#include "wick/error.h"

#ifdef WICK_SIMD_X86
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

namespace wick::cpu::simd {
namespace {

using namespace detail;  // the kernels of every level

// The table of level L, in the order of Kernels' members.
#define WICK_SIMD_TABLE(L)                                                                                            \
  Kernels {                                                                                                           \
    f32_to_f16_##L, f16_to_f32_##L, f32_to_bf16_##L, bf16_to_f32_##L, exp_##L, sigmoid_##L, silu_##L, gelu_##L,       \
        max_##L, min_##L, sum16_##L, exp_sum16_##L, scale_##L, sumsq16_##L, norm_##L, unary_bf16_##L, arith_bf16_##L, \
        fill_##L, dot_bf16_##L, dot_f16_##L, dot_f32_##L, axpy_bf16_##L, axpy_f16_##L, axpy_f32_##L, philox_##L,      \
        uniform_##L, normal_##L, transpose_##L                                                                        \
  }

constexpr Kernels kBase = WICK_SIMD_TABLE(base);

#ifdef WICK_SIMD_X86
constexpr Kernels kAvx2 = WICK_SIMD_TABLE(avx2);
constexpr Kernels kAvx512 = WICK_SIMD_TABLE(avx512);

// The Avx512Bf16 and Amx levels: the AVX-512F kernels, with the bf16 roundings of OpsAvx512Bf16.
constexpr Kernels kAvx512Bf16 = [] {
  Kernels k = kAvx512;
  k.f32_to_bf16 = f32_to_bf16_avx512bf16;
  k.unary_bf16 = unary_bf16_avx512bf16;
  k.arith_bf16 = arith_bf16_avx512bf16;
  return k;
}();

// Whether the AMX tiles can multiply bf16 here: AMX-TILE and AMX-BF16 (CPUID leaf 7, sub-leaf 0,
// EDX bits 24 and 22), their state enabled by the OS (XCR0 bits 17 and 18, XTILECFG and
// XTILEDATA), and on Linux the process's permission to use the tile data, which the kernel grants
// on request (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18) and which must be held
// before the first tile instruction of any thread (without it that instruction faults). The
// permission is the process's, asked for once here (detect() runs once); a refusal (a kernel before
// 5.16, or a thread's alternate signal stack too small for the tile state) leaves the level out.
bool amx_usable() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || (d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & bit_OSXSAVE) == 0) return false;  // (else XGETBV faults)
  unsigned xcr0 = 0, xcr0_hi = 0;
  __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  if ((xcr0 & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return true;
#endif
}

Isa detect() {
  __builtin_cpu_init();
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    // (every AVX-512F processor has F16C; AVX512_BF16 by CPUID leaf 7, sub-leaf 1, EAX bit 5, which
    // older compilers do not name in __builtin_cpu_supports)
    const bool bf16 = __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)) != 0 &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    // The bf16 GEMM with AMX tiles (Note [AMX GEMM]) on any processor that has them.
    if (bf16 && amx_usable()) return Isa::Amx;
    // Its VDPBF16PS kernel pays only where that instruction runs at twice the f32 FMA rate, as on
    // AMD's processors; Intel's without AMX run it slower than sgemm (Note [bf16 GEMM]) and stay at
    // Avx512.
    if (bf16 && __builtin_cpu_is("amd")) return Isa::Avx512Bf16;
    return Isa::Avx512;
  }
  // (F16C by CPUID leaf 1: older Clangs do not know the name in __builtin_cpu_supports.)
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c) return Isa::Avx2;
  return Isa::Base;
}
#else
Isa detect() { return Isa::Base; }
#endif

Isa from_env(Isa best) {
  const char* e = std::getenv("WICK_CPU_ISA");
  if (e == nullptr || *e == '\0') return best;
  const std::string s(e);
  Isa want = best;
  if (s == "base")
    want = Isa::Base;
  else if (s == "avx2")
    want = Isa::Avx2;
  else if (s == "avx512")
    want = Isa::Avx512;
  else if (s == "avx512bf16")
    want = Isa::Avx512Bf16;
  else if (s == "amx")
    want = Isa::Amx;
  else  // a typo must not pass for a measurement at another level
    throw InvalidArgument("[cpu] WICK_CPU_ISA=" + s + " is none of base, avx2, avx512, avx512bf16, amx");
  return static_cast<int>(want) < static_cast<int>(best) ? want : best;
}

}  // namespace

Isa detected() {
  static const Isa isa = detect();
  return isa;
}

Isa active() {
  static const Isa isa = from_env(detected());
  return isa;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Amx:
      return "amx";
    case Isa::Avx512Bf16:
      return "avx512bf16";
    case Isa::Avx512:
      return "avx512";
    case Isa::Avx2:
      return "avx2";
    case Isa::Base:
      break;
  }
  return "base";
}

const Kernels& kernels(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(detected()))
    throw UnsupportedError(std::string("[cpu simd] ") + isa_name(isa) + " kernels requested; this cpu supports " +
                           isa_name(detected()));
#ifdef WICK_SIMD_X86
  if (isa >= Isa::Avx512Bf16) return kAvx512Bf16;  // (and the bf16 GEMM of gemm_packed*.cpp)
  if (isa == Isa::Avx512) return kAvx512;
  if (isa == Isa::Avx2) return kAvx2;
#endif
  return kBase;
}

const Kernels& kernels() {
  static const Kernels& k = kernels(active());
  return k;
}

}  // namespace wick::cpu::simd
