// Graphs: a function's device work recorded once and replayed.
//
//   wick::Tensor x = wick::Tensor::zeros({1, 4096}, wick::DType::F32, dev);   // inputs first
//   wick::Graph g = wick::Graph::capture(dev, [&] { return std::vector{x.silu().mul(w)}; });
//   for (...) {
//     x.copy_from(next_input);   // change the inputs in place
//     g.replay();                // g.outputs()[0] now holds silu(x) * w for the new x
//   }
//
// On a GPU the body's kernels are recorded as a CUDA graph / HIP graph and each replay queues
// them with one launch, so a step of hundreds of small ops costs the host one call. On the CPU a
// replay runs the body again and copies its results into the outputs, so code written for graphs
// runs unchanged everywhere.
//
// The rules of a body, which replays cannot check:
//   - It reads its varying inputs from tensors made before the capture, changed in place between
//     replays; those tensors (and the weights it reads) must outlive the graph. Host values
//     (shapes, scalars, a position in a loop of the caller) are fixed at capture.
//   - It must not wait for the device: reading a tensor on the host (to_vector, an index op's
//     id check), a synchronize or a blocking copy throw InvalidArgument during a GPU capture.
//     Ops whose position or length lives in a device tensor (attention_decode) serve instead.
//   - It runs on one device handle: the device given to capture.
// Random ops replay the same numbers. The outputs are the tensors the body returns; each replay
// rewrites them in place, so a caller that keeps a result across replays copies it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "wick/device.h"
#include "wick/tensor.h"

namespace wick {

class Graph {
 public:
  Graph() = default;
  // Runs body once on `device` while recording its work (on a GPU), then runs the recording, so
  // that the outputs hold the body's results on return. Every output must be a tensor on
  // `device`. An exception from the body ends the capture, drops it and propagates.
  static Graph capture(const Device& device, const std::function<std::vector<Tensor>()>& body);

  // Runs the recorded work again, rewriting the outputs (queued on the device, like any op).
  void replay();
  const std::vector<Tensor>& outputs() const;
  const Device& device() const;
  bool defined() const { return impl_ != nullptr; }
  // Whether replays launch a recording (true on GPUs) rather than run the body again.
  bool recorded() const;
  // Whether a capture on `device` records its work (GPUs) rather than keeping the body to rerun.
  static bool records(const Device& device);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace wick
