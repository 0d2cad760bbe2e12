// DLPack export and import (wick/dlpack.h), Tensor::from_external and the public pointers, on
// every device: the fields of an export against the tensor, round trips without a copy, foreign
// memory with its own strides, offsets and flags, and the errors that leave the caller's struct
// alone.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "test_util.h"
#include "wick/dlpack.h"
#include "wick/error.h"

namespace wick::testing {
namespace {

using namespace wick::dlpack;

class Dlpack : public ::testing::TestWithParam<Device> {};

std::vector<double> host64(const Tensor& t) { return t.to(Device::cpu()).to_dtype(DType::F64).to_vector<double>(); }

TEST_P(Dlpack, ExportDescribesTheViewAndSharesItsMemory) {
  const Device dev = GetParam();
  const Tensor base = Tensor::rand_uniform({4, 5, 6}, DType::F32, -1, 1, dev);
  const Tensor view = base.transpose(0, 2).narrow(1, 1, 3);  // [6, 3, 4], offset 6, strides {1, 6, 30}
  DLManagedTensorVersioned* m = to_dlpack_versioned(view);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->version.major, kMajorVersion);
  EXPECT_EQ(m->flags, 0u);
  const DLTensor& d = m->dl_tensor;
  EXPECT_EQ(d.device.device_type, dev.is_cpu() ? kDLCPU : dev.kind() == DeviceKind::Cuda ? kDLCUDA : kDLROCM);
  EXPECT_EQ(d.device.device_id, dev.is_cpu() ? 0 : dev.ordinal());
  EXPECT_EQ(d.dtype.code, kDLFloat);
  EXPECT_EQ(d.dtype.bits, 32);
  EXPECT_EQ(d.dtype.lanes, 1);
  ASSERT_EQ(d.ndim, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(d.shape[i], view.dim(i));
    EXPECT_EQ(d.strides[i], view.strides()[static_cast<size_t>(i)]);
  }
  EXPECT_EQ(d.byte_offset, 6u * 4u);
  EXPECT_EQ(static_cast<char*>(d.data) + d.byte_offset, view.data_ptr());
  // Back into wick: the same memory, the same values.
  const Tensor back = from_dlpack(m);
  EXPECT_EQ(back.data_ptr(), view.data_ptr());
  EXPECT_EQ(back.shape(), view.shape());
  EXPECT_EQ(host64(back), host64(view));
}

TEST_P(Dlpack, LegacyStructRoundTripsEveryDType) {
  const Device dev = GetParam();
  const struct {
    DType dtype;
    uint8_t code, bits;
  } rows[] = {{DType::U8, kDLUInt, 8},    {DType::U32, kDLUInt, 32},    {DType::I32, kDLInt, 32},
              {DType::I64, kDLInt, 64},   {DType::F16, kDLFloat, 16},   {DType::F32, kDLFloat, 32},
              {DType::F64, kDLFloat, 64}, {DType::BF16, kDLBfloat, 16}, {DType::F8E4M3, kDLFloat8_e4m3fn, 8}};
  for (const auto& r : rows) {
    const Tensor t = random_tensor({3, 7}, r.dtype).to(dev);
    DLManagedTensor* m = to_dlpack(t);
    EXPECT_EQ(m->dl_tensor.dtype.code, r.code) << dtype_name(r.dtype);
    EXPECT_EQ(m->dl_tensor.dtype.bits, r.bits) << dtype_name(r.dtype);
    const Tensor back = from_dlpack(m);
    EXPECT_EQ(back.dtype(), r.dtype);
    EXPECT_EQ(host64(back), host64(t)) << dtype_name(r.dtype);
  }
}

// A managed tensor over host memory of our own, counting its deleter's calls.
struct Foreign {
  std::vector<double> data;
  std::vector<int64_t> shape, strides;
  int deleted = 0;
  DLManagedTensorVersioned m{};
  Foreign() {
    data.resize(64);
    for (size_t i = 0; i < data.size(); ++i) data[i] = 0.5 * static_cast<double>(i);
    shape = {3, 4};
    strides = {1, 5};  // column-major with a gap: element (i, j) at i + 5 j
    m.version = {kMajorVersion, kMinorVersion};
    m.manager_ctx = this;
    m.deleter = [](DLManagedTensorVersioned* self) { ++static_cast<Foreign*>(self->manager_ctx)->deleted; };
    m.dl_tensor.data = data.data();
    m.dl_tensor.device = {kDLCPU, 0};
    m.dl_tensor.ndim = 2;
    m.dl_tensor.dtype = {kDLFloat, 64, 1};
    m.dl_tensor.shape = shape.data();
    m.dl_tensor.strides = strides.data();
    m.dl_tensor.byte_offset = 2 * sizeof(double);
  }
};

TEST(DlpackImport, ForeignMemoryWithStridesOffsetAndReadOnly) {
  Foreign f;
  f.m.flags = kFlagReadOnly;
  {
    Tensor t = from_dlpack(&f.m);
    EXPECT_EQ(t.shape(), (Shape{3, 4}));
    const std::vector<double> v = t.to_vector<double>();
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) EXPECT_EQ(v[static_cast<size_t>(4 * i + j)], 0.5 * (2 + i + 5 * j));
    expect_error<InvalidArgument>([&] { t.copy_from(Tensor::zeros({3, 4}, DType::F64)); }, {"read-only"});
    const Tensor view = t.narrow(1, 1, 2);
    t = Tensor();
    EXPECT_EQ(f.deleted, 0);  // the view keeps it
    EXPECT_EQ(view.to_vector<double>()[0], 0.5 * (2 + 5));
  }
  EXPECT_EQ(f.deleted, 1);
}

TEST(DlpackImport, RefusalsLeaveTheStructToTheCaller) {
  auto refused = [](auto mutate, auto expect) {
    Foreign f;
    mutate(f);
    expect(f);
    EXPECT_EQ(f.deleted, 0);
  };
  refused(
      [](Foreign& f) {
        f.m.dl_tensor.dtype = {5, 64, 1};
      },  // complex
      [](Foreign& f) {
        expect_error<DTypeError>([&] { (void)from_dlpack(&f.m); }, {"[from_dlpack]", "code 5"});
      });
  refused(
      [](Foreign& f) {
        f.m.dl_tensor.dtype = {kDLFloat, 32, 2};
      },
      [](Foreign& f) { expect_error<DTypeError>([&] { (void)from_dlpack(&f.m); }, {"2 lanes"}); });
  refused(
      [](Foreign& f) {
        f.m.dl_tensor.device = {4, 0};
      },  // OpenCL
      [](Foreign& f) { expect_error<UnsupportedError>([&] { (void)from_dlpack(&f.m); }, {"device type 4"}); });
  refused([](Foreign& f) { f.m.version.major = 2; },
          [](Foreign& f) { expect_error<UnsupportedError>([&] { (void)from_dlpack(&f.m); }, {"version 2."}); });
  refused([](Foreign& f) { f.strides[1] = -5; },
          [](Foreign& f) { expect_error<InvalidArgument>([&] { (void)from_dlpack(&f.m); }, {"strides"}); });
  expect_error<InvalidArgument>([] { (void)from_dlpack(static_cast<DLManagedTensorVersioned*>(nullptr)); }, {"null"});
}

TEST(DlpackImport, BoolIsU8AndNullStridesAreRowMajor) {
  std::vector<uint8_t> bytes = {1, 0, 1, 1, 0, 1};
  std::vector<int64_t> shape = {2, 3};
  DLManagedTensor m{};
  m.dl_tensor = {bytes.data(), {kDLCPU, 0}, 2, {kDLBool, 8, 1}, shape.data(), nullptr, 0};
  const Tensor t = from_dlpack(&m);  // a null deleter: nothing to call
  EXPECT_EQ(t.dtype(), DType::U8);
  EXPECT_EQ(t.strides()[0], 3);
  EXPECT_EQ(t.to_vector<uint8_t>(), bytes);
}

TEST(DlpackExport, ReadOnlyMemoryIsFlaggedAndTheLegacyStructRefusesIt) {
  std::vector<float> data(8, 1.5f);
  int released = 0;
  const Tensor t = Tensor::from_external(
      data.data(), {2, 4}, {4, 1}, DType::F32, Device::cpu(), [&] { ++released; }, /*read_only=*/true);
  DLManagedTensorVersioned* m = to_dlpack_versioned(t);
  EXPECT_EQ(m->flags & kFlagReadOnly, kFlagReadOnly);
  m->deleter(m);
  expect_error<InvalidArgument>([&] { (void)to_dlpack(t); }, {"[to_dlpack]", "read-only"});
  expect_error<InvalidArgument>([] { (void)to_dlpack_versioned(Tensor()); }, {"undefined"});
  EXPECT_EQ(released, 0);
}

TEST(FromExternal, ReleasesOnceAfterTheLastViewAndChecksItsArguments) {
  std::vector<int32_t> data = {1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    Tensor t = Tensor::from_external(data.data(), {3, 2}, {1, 3}, DType::I32, Device::cpu(), [&] { ++released; });
    EXPECT_EQ(t.data_ptr(), data.data());
    EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
    t.copy_from(t.affine(2, 0));  // writable
    EXPECT_EQ(data[1], 4);
  }
  EXPECT_EQ(released, 1);
  expect_error<InvalidArgument>(
      [&] {
        (void)Tensor::from_external(data.data(), {3, 2}, {1}, DType::I32, Device::cpu(), [&] { ++released; });
      },
      {"[from_external]", "strides"});
  expect_error<InvalidArgument>(
      [&] { (void)Tensor::from_external(nullptr, {3}, {1}, DType::I32, Device::cpu(), [&] { ++released; }); },
      {"[from_external]", "null"});
  EXPECT_EQ(released, 1);  // not called for the refusals
  const Tensor empty = Tensor::from_external(nullptr, {0, 4}, {4, 1}, DType::F32, Device::cpu(), nullptr);
  EXPECT_EQ(empty.numel(), 0);
}

TEST_P(Dlpack, NativeStreamsAndTheStreamArgument) {
  const Device dev = GetParam();
  const Tensor t = Tensor::rand_uniform({16}, DType::F32, 0, 1, dev);
  if (dev.is_cpu()) {
    EXPECT_EQ(dev.native_stream(), nullptr);
    DLManagedTensorVersioned* m = to_dlpack_versioned(t, 12345);  // ignored on the CPU
    m->deleter(m);
    return;
  }
  void* s = dev.native_stream();
  EXPECT_NE(s, nullptr);
  EXPECT_NE(dev.new_stream().native_stream(), s);
  // Another handle's stream waits for t's producer; then a kernel there may read it.
  const Device other = dev.new_stream();
  DLManagedTensorVersioned* m = to_dlpack_versioned(t, reinterpret_cast<intptr_t>(other.native_stream()));
  m->deleter(m);
  if (dev.kind() == DeviceKind::Cuda) {
    expect_error<InvalidArgument>([&] { (void)to_dlpack_versioned(t, 0); }, {"ambiguous"});
    m = to_dlpack_versioned(t, 1);  // the legacy default stream
    m->deleter(m);
  } else {
    expect_error<InvalidArgument>([&] { (void)to_dlpack_versioned(t, 1); }, {"not a ROCm stream"});
  }
}

WICK_INSTANTIATE_DEVICES(Dlpack);

}  // namespace
}  // namespace wick::testing
