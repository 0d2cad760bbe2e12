// Devices: names, parsing, what a build without GPU backends says, info.
#include <functional>
#include <string>

#include "test_util.h"

namespace wick {
namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Device, Cpu) {
  const Device c = Device::cpu();
  EXPECT_TRUE(c.is_cpu());
  EXPECT_FALSE(c.is_gpu());
  EXPECT_EQ(c.kind(), DeviceKind::Cpu);
  EXPECT_EQ(c.ordinal(), 0);
  EXPECT_EQ(c.location(), "cpu");
  EXPECT_EQ(c.str(), "cpu");
  EXPECT_EQ(c, Device());
  EXPECT_TRUE(c.same_device(Device::cpu()));
  EXPECT_TRUE(c.supports_bf16());
  EXPECT_NO_THROW(c.synchronize());
}

TEST(Device, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  for (const char* bad : {"", "gpu", "cpu:0", "cuda:", "cuda:x", "cuda:1x", "CPU", "rocm:-", "tpu:0"}) {
    try {
      (void)Device::parse(bad);
      ADD_FAILURE() << "'" << bad << "' parsed";
    } catch (const InvalidArgument& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("[device]", 0), 0u) << m;
      EXPECT_NE(m.find(std::string("'") + bad + "'"), std::string::npos) << m;
    } catch (const DeviceError&) {
      ADD_FAILURE() << "'" << bad << "' is malformed, not a missing device";
    }
  }
}

// This build has no GPU backend: asking for one says how to build it.
TEST(Device, GpuWithoutBackend) {
  const bool has_cuda = Device::cuda_if_available().is_gpu();
  const bool has_rocm = Device::rocm_if_available().is_gpu();
  if (!has_cuda) {
    EXPECT_THROW((void)Device::cuda(), DeviceError);
    const std::string m = message_of([] { (void)Device::cuda(1); });
    EXPECT_NE(m.find("[device]"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda:1"), std::string::npos) << m;
    // A build without the backend says how to get it; a build with it says no such device is present.
    EXPECT_TRUE(m.find("-DWICK_CUDA=ON") != std::string::npos || m.find("no such device") != std::string::npos) << m;
    EXPECT_THROW((void)Device::parse("cuda:1"), DeviceError);
    EXPECT_THROW((void)Device::parse("cuda"), DeviceError);
    EXPECT_EQ(Device::cuda_if_available(), Device::cpu());
    EXPECT_EQ(Device::cuda_if_available(3), Device::cpu());
  }
  if (!has_rocm) {
    EXPECT_THROW((void)Device::rocm(), DeviceError);
    const std::string m = message_of([] { (void)Device::parse("rocm:0"); });
    EXPECT_NE(m.find("rocm:0"), std::string::npos) << m;
    EXPECT_TRUE(m.find("-DWICK_ROCM=ON") != std::string::npos || m.find("no such device") != std::string::npos) << m;
    EXPECT_EQ(Device::rocm_if_available(), Device::cpu());
  }
  if (!has_cuda && !has_rocm) {
    EXPECT_EQ(Device::gpu_if_available(), Device::cpu());
    EXPECT_EQ(available_devices().size(), 1u);
  }
}

// A negative ordinal is an error whether or not a GPU is present, never a device with ordinal -1.
TEST(Device, NegativeOrdinalIsAnError) {
  EXPECT_THROW((void)Device::cuda_if_available(-1), DeviceError);
  EXPECT_THROW((void)Device::rocm_if_available(-1), DeviceError);
  EXPECT_THROW((void)Device::gpu_if_available(-2), DeviceError);
  EXPECT_THROW((void)Device::cuda(-1), DeviceError);
  const std::string m = message_of([] { (void)Device::cuda_if_available(-1); });
  EXPECT_NE(m.find("-1"), std::string::npos) << m;
}

// Handles (Note [Device handles]): the CPU has none; GPU handles need the GPU.
TEST(Device, HandlesNeedAGpu) {
  EXPECT_EQ(Device::cpu().id(), 0u);
  EXPECT_TRUE(Device::cpu().is_default_handle());
  const std::string m = message_of([] { (void)Device::cpu().new_stream(); });
  EXPECT_NE(m.find("[device] cpu"), std::string::npos) << m;
  EXPECT_NE(m.find("needs a GPU"), std::string::npos) << m;
  EXPECT_THROW((void)Device::cpu().new_stream(), DeviceError);
  EXPECT_EQ(Device::handle(DeviceKind::Cpu, 0, 0), Device::cpu());
  EXPECT_THROW((void)Device::handle(DeviceKind::Cpu, 0, 1), DeviceError);
  if (!Device::cuda_if_available().is_gpu()) {
    const std::string c = message_of([] { (void)Device::new_cuda(); });
    EXPECT_NE(c.find("cuda:0"), std::string::npos) << c;
    EXPECT_TRUE(c.find("-DWICK_CUDA=ON") != std::string::npos || c.find("no such device") != std::string::npos) << c;
    EXPECT_THROW((void)Device::new_cuda(), DeviceError);
    EXPECT_THROW((void)Device::parse("cuda:0#3"), DeviceError);
    EXPECT_THROW((void)Device::handle(DeviceKind::Cuda, 0, 3), DeviceError);
  }
  if (!Device::rocm_if_available().is_gpu()) {
    EXPECT_THROW((void)Device::new_rocm(1), DeviceError);
    EXPECT_THROW((void)Device::parse("rocm:1#2"), DeviceError);
  }
  for (const char* bad : {"cuda#1", "cuda:0#", "cuda:0#x", "cuda:#1", "cpu#1", "rocm:0#1#2", "cuda:0#-1"})
    EXPECT_THROW((void)Device::parse(bad), InvalidArgument) << bad;
}

TEST(Device, EventTrackingSwitch) {
  const bool was = event_tracking();
  set_event_tracking(false);
  EXPECT_FALSE(event_tracking());
  set_event_tracking(true);
  EXPECT_TRUE(event_tracking());
  set_event_tracking(was);
}

TEST(Device, AvailableDevicesListCpuFirst) {
  const std::vector<Device> ds = available_devices();
  ASSERT_FALSE(ds.empty());
  EXPECT_TRUE(ds[0].is_cpu());
  for (size_t i = 1; i < ds.size(); ++i) EXPECT_TRUE(ds[i].is_gpu());
}

TEST(Device, InfoIsSane) {
  for (const Device& d : available_devices()) {
    const DeviceInfo i = d.info();
    EXPECT_FALSE(i.name.empty()) << d.location();
    EXPECT_FALSE(i.architecture.empty()) << d.location();
    EXPECT_GT(i.total_memory, int64_t{1} << 28) << d.location();
    EXPECT_GT(i.free_memory, 0) << d.location();
    EXPECT_LE(i.free_memory, i.total_memory) << d.location();
    EXPECT_GT(i.multiprocessors, 0) << d.location();
    if (d.is_cpu()) {
      EXPECT_EQ(i.warp_size, 0);
    } else {
      EXPECT_TRUE(i.warp_size == 32 || i.warp_size == 64) << d.location();
    }
    EXPECT_NO_THROW(d.synchronize());
  }
}

// A tensor's device is where it was made; str() names it.
TEST(Device, TensorsKnowTheirDevice) {
  for (const Device& d : available_devices()) {
    const Tensor t = Tensor::zeros({2, 3}, DType::F32, d);
    EXPECT_EQ(t.device(), d);
    EXPECT_EQ(t.str(), "[2, 3] f32 " + d.location());
    const Tensor back = t.to(Device::cpu());
    EXPECT_TRUE(back.device().is_cpu());
    EXPECT_EQ(back.to_vector<float>(), std::vector<float>(6, 0.0f));
    EXPECT_EQ(t.to(d).storage(), t.storage());  // same device: no copy
  }
}

}  // namespace
}  // namespace wick
