// Size classes of the GPU backends' block cache (Note [GPU block cache] in src/gpu/gpu_backend.h):
// powers of two from 512 B to 1 MiB, then eight classes per doubling up to 64 MiB, so that a block
// is at most 12.5% larger than the request it serves. Plain arithmetic, kept apart from the GPU
// code so that the CPU tests check it.
#pragma once

#include <cstdint>

namespace wick::blocks {

inline constexpr int64_t kMin = 512;                     // the smallest class
inline constexpr int64_t kPow2Max = int64_t{1} << 20;    // classes are powers of two up to here
inline constexpr int kPow2Classes = 12;                  // 512 B .. 1 MiB
inline constexpr int kSteps = 8;                         // classes per doubling above kPow2Max
inline constexpr int kDoublings = 6;                     // 1 MiB .. 64 MiB
inline constexpr int64_t kMax = kPow2Max << kDoublings;  // the largest cached block
inline constexpr int kClasses = kPow2Classes + kDoublings * kSteps;

// The class of a block of `bytes`, or -1 when blocks that large (or empty) are not cached.
constexpr int class_of(int64_t bytes) {
  if (bytes <= 0 || bytes > kMax) return -1;
  if (bytes <= kPow2Max) {
    int c = 0;
    while ((kMin << c) < bytes) ++c;
    return c;
  }
  int e = 0;  // bytes in (kPow2Max << e, kPow2Max << (e + 1)]
  while ((kPow2Max << (e + 1)) < bytes) ++e;
  const int64_t base = kPow2Max << e, step = base / kSteps;
  const int k = static_cast<int>((bytes - base + step - 1) / step);  // 1 .. kSteps
  return kPow2Classes + e * kSteps + (k - 1);
}

// The bytes of a block of class c (0 <= c < kClasses): every request of that class fits.
constexpr int64_t class_bytes(int c) {
  if (c < kPow2Classes) return kMin << c;
  const int e = (c - kPow2Classes) / kSteps, k = (c - kPow2Classes) % kSteps + 1;
  const int64_t base = kPow2Max << e;
  return base + k * (base / kSteps);
}

}  // namespace wick::blocks
