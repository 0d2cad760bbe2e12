// Graph capture and replay (wick/graph.h) on every device, with attention_decode, the op that lets
// a recorded decode step serve every position.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "test_util.h"
#include "wick/error.h"
#include "wick/graph.h"
#include "wick/memory.h"

namespace wick::testing {
namespace {

class Graphs : public ::testing::TestWithParam<Device> {};

TEST_P(Graphs, ReplayRecomputesFromInputsChangedInPlace) {
  const Device dev = GetParam();
  Tensor x = Tensor::rand_uniform({3, 70}, DType::F32, -1, 1, dev);
  const Tensor w = Tensor::rand_uniform({70}, DType::F32, -1, 1, dev);
  Graph g = Graph::capture(dev, [&] {
    const Tensor h = x.rms_norm(w, 1e-5).silu();  // temporaries freed inside the capture
    return std::vector<Tensor>{h.mul(x).sum({1}), h};
  });
  EXPECT_EQ(g.recorded(), Graph::records(dev));
  EXPECT_EQ(g.recorded(), dev.is_gpu());
  ASSERT_EQ(g.outputs().size(), 2u);
  expect_same(g.outputs()[1], x.rms_norm(w, 1e-5).silu());
  for (int step = 0; step < 3; ++step) {
    x.copy_from(Tensor::rand_uniform({3, 70}, DType::F32, -3, 3, dev));
    g.replay();
    const Tensor h = x.rms_norm(w, 1e-5).silu();
    expect_same(g.outputs()[0], h.mul(x).sum({1}));
    expect_same(g.outputs()[1], h);
  }
}

TEST_P(Graphs, ReplaysLeaveLaterTensorsAlone) {
  // Memory the recording writes belongs to the graph: tensors made after the capture, from
  // blocks the capture's temporaries left, never change when it replays.
  const Device dev = GetParam();
  const Tensor x = Tensor::rand_uniform({1000}, DType::F32, -1, 1, dev);
  Graph g = Graph::capture(dev, [&] { return std::vector<Tensor>{x.exp().add(x).sqr().neg()}; });
  std::vector<Tensor> later;
  for (int i = 0; i < 8; ++i) later.push_back(Tensor::full({1000}, Scalar(double(i)), DType::F32, dev));
  for (int i = 0; i < 4; ++i) g.replay();
  for (int i = 0; i < 8; ++i) {
    const std::vector<float> v = host(later[static_cast<size_t>(i)]);
    for (float f : v) ASSERT_EQ(f, float(i));
  }
  expect_same(g.outputs()[0], x.exp().add(x).sqr().neg());
}

TEST_P(Graphs, OutputsOutliveTheGraph) {
  const Device dev = GetParam();
  const Tensor x = Tensor::rand_uniform({257}, DType::F32, -1, 1, dev);
  Tensor out;
  {
    Graph g = Graph::capture(dev, [&] { return std::vector<Tensor>{x.tanh()}; });
    g.replay();
    out = g.outputs()[0];
  }
  expect_same(out, x.tanh());
  const MemoryStats before = memory_stats(dev);
  out = Tensor();
  dev.synchronize();
  EXPECT_LE(memory_stats(dev).in_use, before.in_use);
}

TEST_P(Graphs, AFailedBodyEndsTheCaptureAndTheDeviceGoesOn) {
  const Device dev = GetParam();
  const Tensor a = Tensor::rand_uniform({2, 3}, DType::F32, -1, 1, dev);
  const Tensor b = Tensor::rand_uniform({4, 5}, DType::F32, -1, 1, dev);
  expect_error<ShapeError>([&] { (void)Graph::capture(dev, [&] { return std::vector<Tensor>{a.matmul(b)}; }); },
                           {"[matmul]"});
  if (dev.is_gpu())  // reading a value back waits for the device, which a recording cannot
    expect_error<InvalidArgument>(
        [&] {
          (void)Graph::capture(dev, [&] {
            (void)a.sum({0, 1}).to_vector<float>();
            return std::vector<Tensor>{a};
          });
        },
        {"[to_host]", "graph", dev.location()});
  expect_error<InvalidArgument>([&] { (void)Graph::capture(dev, [&] { return std::vector<Tensor>{Tensor()}; }); },
                                {"[graph]", "undefined"});
  Graph g = Graph::capture(dev, [&] { return std::vector<Tensor>{a.add(a)}; });
  g.replay();
  expect_same(g.outputs()[0], a.affine(2, 0));
}

TEST(Graph, UndefinedGraphRefusesReplay) {
  Graph g;
  EXPECT_FALSE(g.defined());
  expect_error<InvalidArgument>([&] { g.replay(); }, {"[graph]", "undefined"});
}

TEST_P(Graphs, ARecordedDecodeAttentionServesEveryPosition) {
  const Device dev = GetParam();
  const int64_t heads = 4, kv = 1, d = 32, cap = 300;
  Tensor q = Tensor::empty({heads, d}, DType::F32, dev), k = Tensor::empty({kv, d}, DType::F32, dev),
         v = Tensor::empty({kv, d}, DType::F32, dev), pos = Tensor::empty({1}, DType::I32, dev);
  const Tensor kc = Tensor::zeros({kv, cap, d}, DType::F16, dev), vc = Tensor::zeros({kv, cap, d}, DType::F16, dev);
  const Tensor kc2 = kc.clone(), vc2 = vc.clone();  // the same steps, op by op
  auto set_inputs = [&](int64_t p) {
    q.copy_from(Tensor::rand_uniform({heads, d}, DType::F32, -1, 1, dev));
    k.copy_from(Tensor::rand_uniform({kv, d}, DType::F32, -1, 1, dev));
    v.copy_from(Tensor::rand_uniform({kv, d}, DType::F32, -1, 1, dev));
    pos.copy_from(Tensor::from_vector(std::vector<int32_t>{static_cast<int32_t>(p)}, {1}, Device::cpu()));
  };
  set_inputs(0);
  Graph g = Graph::capture(dev, [&] { return std::vector<Tensor>{attention_decode(q, k, v, kc, vc, pos, 0.2)}; });
  expect_same(g.outputs()[0], attention_decode(q, k, v, kc2, vc2, 0, 0.2));
  for (int64_t p = 1; p < 260; ++p) {
    set_inputs(p);
    g.replay();
    const Tensor want = attention_decode(q, k, v, kc2, vc2, p, 0.2);
    if (p % 37 == 0 || p == 259) expect_same(g.outputs()[0], want);
  }
  expect_same(kc, kc2);
  expect_same(vc, vc2);
  // A recorded replay cannot check its position: one outside the cache writes nothing and gives
  // zeros. Where the body runs again (the CPU), the op reads the position and refuses it.
  set_inputs(cap);
  if (g.recorded()) {
    g.replay();
    for (float x : host(g.outputs()[0])) ASSERT_EQ(x, 0.0f);
  } else {
    expect_error<IndexError>([&] { g.replay(); }, {"[attention_decode]", "position 300"});
  }
  expect_same(kc, kc2);
}

WICK_INSTANTIATE_DEVICES(Graphs);

}  // namespace
}  // namespace wick::testing
