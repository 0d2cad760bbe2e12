#include "wick/memory.h"

#include "backend/backend.h"

namespace wick {

MemoryStats memory_stats(const Device& device) { return backend_for(device).memory_stats(); }
void reset_peak_memory(const Device& device) { backend_for(device).reset_peak_memory(); }
void empty_cache(const Device& device) { backend_for(device).empty_cache(); }

}  // namespace wick
