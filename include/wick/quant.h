// Quantized tensors: the GGML block formats.
//
// A quantized matrix stores each row as a whole number of blocks; a block packs `block_elems`
// consecutive elements of the row into `block_bytes` bytes (scales and packed integer codes), with
// ggml's byte layout and element order, so that bytes read from a GGUF file are used as they are.
//
//   wick::Tensor w = wick::Tensor::rand_normal({4096, 4096}, wick::DType::F32, 0, 1);
//   wick::QTensor q = wick::quantize(w, wick::QFormat::Q4_K);   // 4096 rows of 16 blocks
//   wick::Tensor y = wick::matmul(x, q.to(wick::Device::cuda()));  // x [..., m, 4096] -> [..., m, 4096]
//   wick::Tensor back = q.dequantize(wick::DType::F32);
//
// QTensor holds its bytes as a u8 Tensor [leading dims..., row_bytes], so placement, device
// transfers and row views are those of Tensor. Views are along whole rows only (narrow / select
// of a leading dim); the last dim is never split.
#pragma once

#include <string>
#include <utility>

#include "wick/qformat.h"
#include "wick/tensor.h"

namespace wick {

class QTensor {
 public:
  QTensor() = default;
  // Adopts `bytes` (u8, [..., row_bytes] or any u8 tensor of exactly rows x row_bytes contiguous
  // bytes) as a `format` tensor of `shape` (in elements, rank >= 1). Throws ShapeError unless the
  // last dim of shape is a whole number of blocks and bytes match it, DTypeError unless bytes is
  // u8. No copy: the QTensor shares bytes' storage (a GGUF mapping, say).
  static QTensor from_bytes(const Tensor& bytes, QFormat format, const Shape& shape);

  bool defined() const { return bytes_.defined(); }
  QFormat format() const { return format_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(int64_t i) const;  // negative i counts from the end
  int64_t numel() const { return shape_.numel(); }
  int64_t rows() const;                                // product of every dim but the last
  int64_t row_elems() const { return shape_.back(); }  // elements in a row
  int64_t row_bytes() const;                           // bytes in a row
  int64_t nbytes() const { return rows() * row_bytes(); }
  const Device& device() const { return bytes_.device(); }
  // The block bytes, u8 [shape's leading dims..., row_bytes]; views keep their source's strides
  // on the leading dims, and the bytes of a row are contiguous.
  const Tensor& bytes() const { return bytes_; }
  std::string str() const;  // "[4096, 4096] q4_k cpu"

  QTensor to(const Device& device, bool non_blocking = false) const;
  // Views of whole rows: `dim` must not be the last dim.
  QTensor narrow(int64_t dim, int64_t start, int64_t len) const;
  QTensor select(int64_t dim, int64_t index) const;
  QTensor reshape(const Shape& shape) const;  // the last dim unchanged; copies rows when no view fits
  QTensor contiguous() const;                 // rows packed one after the other
  Tensor dequantize(DType dtype = DType::F32) const;

 private:
  QTensor(Tensor bytes, QFormat format, Shape shape)
      : bytes_(std::move(bytes)), format_(format), shape_(std::move(shape)) {}
  Tensor bytes_;
  QFormat format_ = QFormat::Q8_0;
  Shape shape_;
};

// x (f32, f16 or bf16; last dim a whole number of blocks) quantized row by row with ggml's
// reference quantizer: the same bytes as ggml's quantize_row_<format>_ref, on every device.
// Non-finite input is not checked: ggml's formulas run as they are, so a block holding an infinity
// mostly gets an infinite scale (it decodes to NaN) and a NaN element mostly code 0 or a zero
// scale, with ggml's bytes on x86-64 (tests/test_quant_*.cpp record them). A GPU writes the same
// bytes for every finite block; for a block holding NaN its bytes may differ, since GPU arithmetic
// does not keep NaN payloads.
QTensor quantize(const Tensor& x, QFormat format);
// x [..., m, k] times w [n, k] transposed: [..., m, n] in x's dtype (the `linear` orientation).
Tensor matmul(const Tensor& x, const QTensor& w);
// Rows of w [vocab, d] picked by ids (any integer dtype, any shape): [ids..., d] in `dtype`.
Tensor embedding(const Tensor& ids, const QTensor& w, DType dtype = DType::F32);

}  // namespace wick
