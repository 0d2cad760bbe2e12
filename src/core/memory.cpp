#include "wick/memory.h"

#include "backend/backend.h"
#include "wick/timing.h"

namespace wick {

MemoryStats memory_stats(const Device& device) { return backend_for(device).memory_stats(); }
void reset_peak_memory(const Device& device) { backend_for(device).reset_peak_memory(); }
void empty_cache(const Device& device) { backend_for(device).empty_cache(); }

void DeviceTimer::start() { start_ = backend_for(device_).timing_mark(); }

double DeviceTimer::stop_ms() {
  if (!start_) throw InvalidArgument("[timer] stop_ms() without start() on " + device_.location());
  Backend& b = backend_for(device_);
  const double ms = b.timing_elapsed_ms(start_, b.timing_mark());
  start_.reset();
  return ms;
}

}  // namespace wick
