#include "cpu/cpu_backend.h"

namespace wick::cpu {

void CpuBackend::conv1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  throw UnsupportedError("[conv1d] not implemented on cpu yet");
}

void CpuBackend::conv2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  throw UnsupportedError("[conv2d] not implemented on cpu yet");
}

void CpuBackend::conv_transpose1d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv1dParams& p) {
  throw UnsupportedError("[conv_transpose1d] not implemented on cpu yet");
}

void CpuBackend::conv_transpose2d(const TensorArg& x, const TensorArg& w, const TensorArg& dst, const Conv2dParams& p) {
  throw UnsupportedError("[conv_transpose2d] not implemented on cpu yet");
}

void CpuBackend::avg_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  throw UnsupportedError("[avg_pool2d] not implemented on cpu yet");
}

void CpuBackend::max_pool2d(const TensorArg& x, const TensorArg& dst, const Pool2dParams& p) {
  throw UnsupportedError("[max_pool2d] not implemented on cpu yet");
}

void CpuBackend::upsample_nearest1d(const TensorArg& x, const TensorArg& dst) {
  throw UnsupportedError("[upsample_nearest1d] not implemented on cpu yet");
}

void CpuBackend::upsample_nearest2d(const TensorArg& x, const TensorArg& dst) {
  throw UnsupportedError("[upsample_nearest2d] not implemented on cpu yet");
}

void CpuBackend::upsample_bilinear2d(const TensorArg& x, const TensorArg& dst, bool align_corners) {
  throw UnsupportedError("[upsample_bilinear2d] not implemented on cpu yet");
}

void CpuBackend::rope(const TensorArg& x, const TensorArg& cos, const TensorArg& sin, const TensorArg& dst, bool interleaved) {
  throw UnsupportedError("[rope] not implemented on cpu yet");
}

}  // namespace wick::cpu