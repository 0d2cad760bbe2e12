// Memory statistics of a device's allocator.
//
//   wick::MemoryStats s = wick::memory_stats(wick::Device::cuda(0));
//   // s.in_use: bytes held by live tensors; s.peak: the most in_use has been since the last
//   // reset_peak_memory; s.reserved: bytes the allocator holds from the driver (in use + cached).
//   wick::empty_cache(dev);  // give cached, unused blocks back to the driver
//
// GPU backends allocate stream-ordered from a per-device pool that keeps freed blocks for reuse,
// so reserved stays above in_use until empty_cache; each handle also keeps the blocks up to 64 MiB
// that it frees (up to 1 GiB of them, or an eighth of the device's memory) and hands them out again
// on its stream. The CPU backend keeps freed blocks of 256 KiB
// and more for reuse (up to 4 GiB, or an eighth of the memory if less) until empty_cache; it keeps no
// statistics (zeros).
#pragma once

#include <cstdint>

#include "wick/device.h"

namespace wick {

struct MemoryStats {
  int64_t in_use = 0;       // bytes allocated to live storages
  int64_t peak = 0;         // maximum of in_use since start or the last reset_peak_memory
  int64_t reserved = 0;     // bytes held from the driver: in_use plus cached blocks
  int64_t allocations = 0;  // live allocations
};

MemoryStats memory_stats(const Device& device);
void reset_peak_memory(const Device& device);
// Waits for the device's queued work, then returns cached memory to the driver.
void empty_cache(const Device& device);

}  // namespace wick
