// What the AMX probes (amx_blocking.cpp, amx_kernels.cpp) share: the tile configuration (8 tiles of
// 16 rows x 64 bytes, as src/cpu/gemm_packed.cpp's), the OS permission for the tile state, a clock.
#pragma once

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>

struct alignas(64) TileConfig {
  uint8_t palette_id, start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
constexpr TileConfig kCfg = {1, 0, {}, {64, 64, 64, 64, 64, 64, 64, 64}, {16, 16, 16, 16, 16, 16, 16, 16}};

// Asks Linux for the AMX tile data state (ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); false if refused.
inline bool request_amx() { return syscall(SYS_arch_prctl, 0x1023, 18) == 0; }

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Zeroes all eight tiles (GCC's tile macros take the register numbers as literals).
inline void zero_tiles() {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
}
