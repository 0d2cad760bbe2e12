// Device handles with their own streams, event tracking between them (Note [Cross-stream use] in
// src/backend/backend.h), and copies between devices, blocking and stream-ordered. Every test
// skips when no GPU is present; the CPU-only behaviour is in test_device.cpp.
#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "test_util.h"
#include "wick/memory.h"
#include "wick/tensor.h"

namespace {

using wick::Device;
using wick::DType;
using wick::Tensor;

using wick::testing::bytes_of;

// Restores event tracking at the end of a test that turns it off.
struct TrackingOff {
  TrackingOff() { wick::set_event_tracking(false); }
  ~TrackingOff() { wick::set_event_tracking(true); }
};

// Note [Permutation chains]
// The cross-stream tests keep one stream busy with a chain of matmuls by a permutation matrix and
// let another stream use the result, or a tensor the chain reads, without the host waiting. A
// product with a permutation matrix is exact in every precision (one non-zero term per output, the
// values small integers), so the expected result comes from index arithmetic, and a missing wait
// shows as wrong values rather than rounding noise.
constexpr int64_t kN = 2048;
constexpr int kChain = 40;

int64_t sigma(int64_t k) { return (7 * k + 3) % kN; }  // gcd(7, 2048) = 1: a permutation

// P[k, sigma(k)] = 1, so (y @ P)[i, sigma(k)] = y[i, k].
Tensor permutation(const Device& d) {
  std::vector<float> p(static_cast<size_t>(kN * kN), 0.0f);
  for (int64_t k = 0; k < kN; ++k) p[static_cast<size_t>(k * kN + sigma(k))] = 1.0f;
  return Tensor::from_vector(p, {kN, kN}, d);
}

Tensor identity(const Device& d) {
  std::vector<float> p(static_cast<size_t>(kN * kN), 0.0f);
  for (int64_t k = 0; k < kN; ++k) p[static_cast<size_t>(k * kN + k)] = 1.0f;
  return Tensor::from_vector(p, {kN, kN}, d);
}

// Integers in [0, 1000) (exact in f32 and tf32), different for each seed.
std::vector<float> integers(uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(kN * kN));
  uint32_t s = seed * 2654435761u + 1;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>((s >> 8) % 1000);
  }
  return v;
}

// x @ P^reps, computed on the host.
std::vector<float> permuted(const std::vector<float>& x, int reps) {
  std::vector<int64_t> tau(static_cast<size_t>(kN));
  for (int64_t k = 0; k < kN; ++k) {
    int64_t j = k;
    for (int r = 0; r < reps; ++r) j = sigma(j);
    tau[static_cast<size_t>(k)] = j;
  }
  std::vector<float> out(x.size());
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t k = 0; k < kN; ++k)
      out[static_cast<size_t>(i * kN + tau[static_cast<size_t>(k)])] = x[static_cast<size_t>(i * kN + k)];
  return out;
}

// Queues kChain matmuls on x's handle and returns the last result (not waited for).
Tensor busy_chain(const Tensor& x, const Tensor& p) {
  Tensor y = x;
  for (int r = 0; r < kChain; ++r) y = y.matmul(p);
  return y;
}

// ---- handles ---------------------------------------------------------------------------------

TEST(GpuStreams, HandlesAreDistinct) {
  WICK_REQUIRE_GPU(devs);
  const Device d0 = devs[0];
  EXPECT_TRUE(d0.is_default_handle());
  EXPECT_EQ(d0.id(), 0u);
  const Device again = d0.kind() == wick::DeviceKind::Cuda ? Device::cuda(d0.ordinal()) : Device::rocm(d0.ordinal());
  EXPECT_EQ(again, d0);  // the default handle, every call
  EXPECT_EQ(&wick::backend_for(again), &wick::backend_for(d0));

  const Device h1 = d0.new_stream();
  const Device h2 =
      d0.kind() == wick::DeviceKind::Cuda ? Device::new_cuda(d0.ordinal()) : Device::new_rocm(d0.ordinal());
  for (const Device& h : {h1, h2}) {
    EXPECT_NE(h.id(), 0u);
    EXPECT_FALSE(h.is_default_handle());
    EXPECT_NE(h, d0);
    EXPECT_TRUE(h.same_gpu(d0));
    EXPECT_EQ(h.kind(), d0.kind());
    EXPECT_EQ(h.ordinal(), d0.ordinal());
    EXPECT_EQ(h.location(), d0.location() + "#" + std::to_string(h.id()));
    EXPECT_EQ(Device::parse(h.location()), h);
    EXPECT_EQ(Device::handle(h.kind(), h.ordinal(), h.id()), h);
    EXPECT_EQ(wick::backend_for(h).device(), h);
    EXPECT_NO_THROW(h.synchronize());
  }
  EXPECT_NE(h1.id(), h2.id());
  EXPECT_NE(h1, h2);
  // Each handle is its own backend object, and each backend object owns one stream.
  EXPECT_NE(&wick::backend_for(h1), &wick::backend_for(d0));
  EXPECT_NE(&wick::backend_for(h1), &wick::backend_for(h2));
  EXPECT_THROW((void)Device::handle(d0.kind(), d0.ordinal(), h2.id() + 1000), wick::DeviceError);
  EXPECT_THROW((void)Device::parse(d0.location() + "#" + std::to_string(h2.id() + 1000)), wick::DeviceError);

  const Tensor t = Tensor::zeros({2, 3}, DType::F32, h1);
  EXPECT_EQ(t.device(), h1);
  EXPECT_EQ(t.str(), "[2, 3] f32 " + h1.location());
}

TEST(GpuStreams, HandlesShareTheMemoryPool) {
  WICK_REQUIRE_GPU(devs);
  const Device h = devs[0].new_stream();
  const int64_t before = wick::memory_stats(devs[0]).in_use;
  {
    const Tensor t = Tensor::zeros({1 << 20}, DType::F32, h);
    EXPECT_EQ(wick::memory_stats(devs[0]).in_use, before + (int64_t{4} << 20));
    EXPECT_EQ(wick::memory_stats(h).in_use, wick::memory_stats(devs[0]).in_use);
  }
  h.synchronize();
  EXPECT_EQ(wick::memory_stats(devs[0]).in_use, before);
}

// ---- event tracking --------------------------------------------------------------------------

// Two new handles of one GPU, idle on return: `busy` holds x and the permutation for a chain,
// `other` holds v; each has an identity matrix for ops that read the other's tensors.
struct TwoStreams {
  explicit TwoStreams(const Device& gpu, uint32_t seed)
      : busy(gpu.new_stream()), other(gpu.new_stream()), x(integers(seed)), v(integers(seed + 1)) {
    p = permutation(busy);
    eye_busy = identity(busy);
    eye_other = identity(other);
    xb = Tensor::from_vector(x, {kN, kN}, busy);
    t = Tensor::from_vector(v, {kN, kN}, other);
    busy.synchronize();
    other.synchronize();
  }
  Device busy, other;
  std::vector<float> x, v;
  Tensor p, eye_busy, eye_other, xb, t;
};

// Produced on one handle, consumed on another with no synchronisation in between: the consumer's
// stream waits for the producer's chain.
TEST(GpuStreams, ConsumerWaitsForProducer) {
  WICK_REQUIRE_GPU(devs);
  ASSERT_TRUE(wick::event_tracking()) << "WICK_EVENT_TRACKING is off in this environment";
  TwoStreams s(devs[0], 1);
  const Tensor y = busy_chain(s.xb, s.p);  // queued on busy
  const Tensor z = s.eye_other.matmul(y);  // runs on other, reads y
  EXPECT_EQ(z.device(), s.other);
  EXPECT_EQ(z.to_vector<float>(), permuted(s.x, kChain));
}

// With tracking off the user orders the streams: synchronize the producer before the use, and
// the user before the operand goes away.
TEST(GpuStreams, TrackingOffWithExplicitSynchronize) {
  WICK_REQUIRE_GPU(devs);
  const TrackingOff off;
  EXPECT_FALSE(wick::event_tracking());
  TwoStreams s(devs[0], 3);
  Tensor y = busy_chain(s.xb, s.p);
  s.busy.synchronize();
  const Tensor z = s.eye_other.matmul(y);
  s.other.synchronize();
  y = Tensor();
  EXPECT_EQ(z.to_vector<float>(), permuted(s.x, kChain));
}

// The cumsum of few long rows splits each row over blocks that hand their segments' sums on through
// scratch memory of the handle's stream (Note [GPU scans] in src/gpu/kernels/scan.cu). Launches of
// several shapes back to back on three handles at once give exact (wrapping) i64 sums and the same
// f32 rows, close to a double reference, every time.
TEST(GpuStreams, SplitCumsumsBackToBackOnThreeHandles) {
  WICK_REQUIRE_GPU(devs);
  const std::array<Device, 3> hs{devs[0], devs[0].new_stream(), devs[0].new_stream()};
  const std::vector<std::array<int64_t, 2>> shapes{{1, 128256}, {7, 50001}, {64, 20000}, {2, 4097}, {1, 100}};
  constexpr int kRepeats = 3;
  uint64_t s = 12345;
  for (const auto& [rows, n] : shapes) {
    const size_t count = static_cast<size_t>(rows * n);
    std::vector<int64_t> w(count), w_want(count);
    std::vector<float> f(count);
    std::vector<double> f_want(count);
    for (size_t k = 0; k < count; ++k) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      w[k] = static_cast<int64_t>(s);
      f[k] = static_cast<float>((s >> 40) % 2001) / 1000.f - 1.f;
    }
    for (int64_t r = 0; r < rows; ++r) {
      uint64_t wa = 0;
      double fa = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(r * n + i);
        wa += static_cast<uint64_t>(w[k]);
        fa += f[k];
        w_want[k] = static_cast<int64_t>(wa);
        f_want[k] = fa;
      }
    }
    std::vector<Tensor> wy, fy;  // queued on all three handles before any is read
    for (const Device& h : hs) {
      const Tensor wx = Tensor::from_vector(w, {rows, n}, h), fx = Tensor::from_vector(f, {rows, n}, h);
      for (int k = 0; k < kRepeats; ++k) {
        wy.push_back(wx.cumsum());
        fy.push_back(fx.cumsum());
      }
    }
    const std::vector<float> first = fy[0].to_vector<float>();
    for (size_t k = 0; k < count; ++k) {
      ASSERT_NEAR(first[k], f_want[k], 1e-4) << rows << "x" << n << " at " << k;
    }
    for (size_t j = 0; j < wy.size(); ++j) {
      EXPECT_EQ(wy[j].to_vector<int64_t>(), w_want) << rows << "x" << n << ", launch " << j;
      EXPECT_EQ(fy[j].to_vector<float>(), first) << rows << "x" << n << ", launch " << j;
    }
  }
}

// A tensor of `other` read on `busy` behind a long chain, then released: `other` frees (and
// reuses) its memory only after that read.
TEST(GpuStreams, FreeWaitsForOtherStreamsUse) {
  WICK_REQUIRE_GPU(devs);
  TwoStreams s(devs[0], 5);
  const Tensor y = busy_chain(s.xb, s.p);
  const Tensor r = s.eye_busy.matmul(s.t);                                              // on busy, after the chain
  s.t = Tensor();                                                                       // freed on other's stream
  const Tensor junk = Tensor::full({kN, kN}, wick::Scalar(-7.0), DType::F32, s.other);  // likely t's block
  EXPECT_EQ(r.to_vector<float>(), s.v);
  EXPECT_EQ(y.to_vector<float>(), permuted(s.x, kChain));
  EXPECT_EQ(junk.to_vector<float>()[0], -7.0f);
}

// The same read, then an in-place write of the tensor on its own handle: the write waits.
TEST(GpuStreams, InPlaceWriteWaitsForOtherStreamsRead) {
  WICK_REQUIRE_GPU(devs);
  TwoStreams s(devs[0], 7);
  const Tensor y = busy_chain(s.xb, s.p);
  const Tensor r = s.eye_busy.matmul(s.t);  // on busy, after the chain
  s.t.const_set(wick::Scalar(0.0));         // on other
  EXPECT_EQ(r.to_vector<float>(), s.v);
  EXPECT_EQ(s.t.to_vector<float>(), std::vector<float>(s.v.size(), 0.0f));
  EXPECT_EQ(y.to_vector<float>(), permuted(s.x, kChain));
}

// Tensors of different GPUs never mix in one op.
TEST(GpuStreams, OpsRejectOtherGpus) {
  WICK_REQUIRE_GPU(devs);
  const Tensor a = Tensor::zeros({4, 4}, DType::F32, devs[0]);
  EXPECT_THROW((void)a.matmul(Tensor::zeros({4, 4}, DType::F32)), wick::DeviceError);
  if (devs.size() < 2) GTEST_SKIP() << "one GPU: the two-GPU case needs a second one";
  EXPECT_THROW((void)a.matmul(Tensor::zeros({4, 4}, DType::F32, devs[1])), wick::DeviceError);
}

// ---- copies ----------------------------------------------------------------------------------

// Every dtype, contiguous and strided sources: the bytes survive each route unchanged.
class GpuCopies : public ::testing::TestWithParam<DType> {};

std::vector<std::pair<std::string, Tensor>> views(const Tensor& t) {
  return {{"contiguous", t}, {"transposed", t.t()}, {"narrowed", t.narrow(1, 3, 40)}, {"selected", t.select(0, 5)}};
}

TEST_P(GpuCopies, RoundTripsAreBitExact) {
  WICK_REQUIRE_GPU(devs);
  const DType dt = GetParam();
  const Device g0 = devs[0];
  const Device h = g0.new_stream();
  const Tensor host = Tensor::rand_uniform({37, 53}, DType::F64, -300, 300).to_dtype(dt);
  const Tensor dev = host.to(g0);
  const auto hv = views(host), dv = views(dev);
  for (size_t i = 0; i < hv.size(); ++i) {
    const std::string& name = hv[i].first;
    const std::vector<unsigned char> want = bytes_of(hv[i].second);
    const Tensor& src = dv[i].second;
    SCOPED_TRACE(std::string(wick::dtype_name(dt)) + " " + name);
    // Blocking.
    EXPECT_EQ(bytes_of(src.to(wick::Device::cpu())), want);
    EXPECT_EQ(bytes_of(hv[i].second.to(g0)), want);
    EXPECT_EQ(bytes_of(src.to(wick::Device::cpu()).to(g0)), want);
    const Tensor on_h = src.to(h);
    EXPECT_EQ(on_h.device(), h);
    EXPECT_TRUE(on_h.is_contiguous());
    EXPECT_EQ(bytes_of(on_h), want);
    EXPECT_EQ(bytes_of(on_h.to(g0)), want);
    // Stream-ordered: valid after synchronize() of the handle that queued the copy.
    const Tensor up = hv[i].second.to(h, true);
    const Tensor hop = src.to(h, true);
    const Tensor down = hop.to(wick::Device::cpu(), true);
    h.synchronize();
    EXPECT_EQ(bytes_of(up), want);
    EXPECT_EQ(bytes_of(down), want);
    const Tensor down0 = src.to(wick::Device::cpu(), true);  // queued on g0's stream
    g0.synchronize();
    EXPECT_EQ(bytes_of(down0), want);
    for (size_t k = 1; k < devs.size() && k < 2; ++k) {
      const Tensor other = src.to(devs[k]);
      EXPECT_EQ(other.device(), devs[k]);
      EXPECT_EQ(bytes_of(other), want);
      EXPECT_EQ(bytes_of(other.to(g0)), want);
      const Tensor other_nb = src.to(devs[k], true);
      devs[k].synchronize();
      EXPECT_EQ(bytes_of(other_nb), want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, GpuCopies, ::testing::ValuesIn(wick::kAllDTypes),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(wick::dtype_name(i.param));
                         });

// A non-blocking copy to the CPU of a tensor still being computed, and a non-blocking copy from
// a host buffer released right after the call.
TEST(GpuStreams, NonBlockingCopiesAfterSynchronize) {
  WICK_REQUIRE_GPU(devs);
  TwoStreams s(devs[0], 9);
  const Tensor y = busy_chain(s.xb, s.p);
  const Tensor host = y.to(Device::cpu(), true);
  Tensor up;
  {
    Tensor src = Tensor::from_vector(s.v, {kN, kN});
    up = src.to(s.busy, true);
    src.const_set(wick::Scalar(-1.0));  // the copy read the source before the call returned
  }
  s.busy.synchronize();
  EXPECT_EQ(host.to_vector<float>(), permuted(s.x, kChain));
  EXPECT_EQ(up.to_vector<float>(), s.v);
  if (devs.size() < 2) GTEST_SKIP() << "one GPU: the peer copy case needs a second one";
  const Tensor y2 = busy_chain(s.xb, s.p);
  const Tensor peer = y2.to(devs[1], true);  // waits for the chain on the device, not the host
  devs[1].synchronize();
  EXPECT_EQ(peer.to_vector<float>(), permuted(s.x, kChain));
}

}  // namespace
