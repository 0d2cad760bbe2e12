// Timing device work.
//
//   wick::DeviceTimer t(dev);
//   t.start();
//   y = x.softmax(-1);
//   double ms = t.stop_ms();  // waits for the work queued since start()
//
// On a GPU the interval is measured by events recorded on the device's stream, so it covers the
// device's execution of the queued work, as CUDA / HIP events do for PyTorch; on the CPU it is a
// steady clock read after synchronising.
#pragma once

#include <memory>

#include "wick/device.h"

namespace wick {

class DeviceTimer {
 public:
  explicit DeviceTimer(const Device& device) : device_(device) {}
  void start();
  double stop_ms();

 private:
  Device device_;
  std::shared_ptr<void> start_;
};

}  // namespace wick
