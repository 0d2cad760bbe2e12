// Graph capture and replay (wick/graph.h): the recording is the backend's (Runtime::begin_capture);
// where a backend records nothing, a replay runs the body again.
#include "wick/graph.h"

#include <string>
#include <utility>

#include "backend/backend.h"
#include "wick/error.h"

namespace wick {

struct Graph::Impl {
  Device device;
  std::function<std::vector<Tensor>()> body;  // run again at each replay where nothing is recorded
  std::shared_ptr<void> recording;            // the backend's executable graph, or null
  std::vector<Tensor> outputs;
};

namespace {

void check_outputs(const std::vector<Tensor>& outs, const Device& device) {
  for (size_t i = 0; i < outs.size(); ++i) {
    if (!outs[i].defined()) throw InvalidArgument("[graph] output " + std::to_string(i) + " is an undefined tensor");
    if (outs[i].device() != device)
      throw DeviceError("[graph] output " + std::to_string(i) + " " + outs[i].str() + " is on " +
                        outs[i].device().str() + ", not on the captured " + device.str());
  }
}

}  // namespace

Graph Graph::capture(const Device& device, const std::function<std::vector<Tensor>()>& body) {
  if (!body) throw InvalidArgument("[graph] capture of an empty function on " + device.str());
  Backend& b = backend_for(device);
  auto impl = std::make_shared<Impl>();
  impl->device = device;
  if (!b.records_graphs()) {
    impl->outputs = body();
    check_outputs(impl->outputs, device);
    impl->body = body;
  } else {
    b.begin_capture();
    try {
      impl->outputs = body();
      check_outputs(impl->outputs, device);
    } catch (...) {
      (void)b.end_capture(true);
      throw;
    }
    impl->recording = b.end_capture(false);
    b.launch_graph(impl->recording);
  }
  Graph g;
  g.impl_ = std::move(impl);
  return g;
}

void Graph::replay() {
  if (!impl_) throw InvalidArgument("[graph] replay of an undefined graph");
  Impl& g = *impl_;
  if (g.recording) return backend_for(g.device).launch_graph(g.recording);
  const std::vector<Tensor> fresh = g.body();
  if (fresh.size() != g.outputs.size())
    throw InvalidArgument("[graph] the body returned " + std::to_string(fresh.size()) + " outputs on replay, " +
                          std::to_string(g.outputs.size()) + " at capture");
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (fresh[i].shape() != g.outputs[i].shape() || fresh[i].dtype() != g.outputs[i].dtype())
      throw InvalidArgument("[graph] output " + std::to_string(i) + " is " + fresh[i].str() + " on replay, " +
                            g.outputs[i].str() + " at capture");
    g.outputs[i].copy_from(fresh[i]);
  }
}

const std::vector<Tensor>& Graph::outputs() const {
  static const std::vector<Tensor> none;
  return impl_ ? impl_->outputs : none;
}

const Device& Graph::device() const {
  static const Device cpu = Device::cpu();
  return impl_ ? impl_->device : cpu;
}

bool Graph::recorded() const { return impl_ && impl_->recording != nullptr; }

bool Graph::records(const Device& device) { return backend_for(device).records_graphs(); }

}  // namespace wick
