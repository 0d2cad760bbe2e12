// What the file readers and writers share: byte sources (read-only mappings or owned buffers),
// a bounds-checked little-endian cursor whose errors name file, offset and field, checked
// arithmetic, and an output file that appears under its name only when complete.
//
// Note [Untrusted sizes]
// Every count, length, dimension and offset read from a file is checked before it is used: sums
// and products through checked_add / checked_mul (overflow is a FormatError, never a wrap), every
// length against the bytes remaining (ByteReader::need), and no container is reserved or resized
// from a file's number before that number has been bounded by the bytes that must back it.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "wick/error.h"
#include "wick/io.h"
#include "wick/tensor.h"

namespace wick::io {

// "[gguf] model.gguf: byte 4120, tensor_info[3].dims: <what>"
[[noreturn]] void format_error(std::string_view format, std::string_view file, int64_t offset, std::string_view field,
                               std::string_view what);

// Checked arithmetic on non-negative sizes; false on overflow.
inline bool add_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out) && *out >= 0; }
inline bool mul_ok(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out) && *out >= 0; }
// A value of a u64 field as a non-negative int64, or false.
inline bool fits_i64(uint64_t v, int64_t* out) {
  if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// A read-only cursor over a file's bytes. Reads are little-endian; every read checks the bytes
// remaining first and raises FormatError naming the field being read at the current offset.
class ByteReader {
 public:
  ByteReader(std::span<const uint8_t> bytes, std::string_view format, std::string_view file)
      : bytes_(bytes), format_(format), file_(file) {}

  int64_t pos() const { return pos_; }
  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  int64_t remaining() const { return size() - pos_; }
  void seek(int64_t pos, std::string_view field) {
    if (pos < 0 || pos > size()) fail(field, "offset " + std::to_string(pos) + " is outside the file");
    pos_ = pos;
  }
  // Raises unless n bytes remain.
  void need(int64_t n, std::string_view field) const {
    if (n < 0 || n > remaining())
      fail(field, "needs " + std::to_string(n) + " bytes, " + std::to_string(remaining()) + " remain");
  }
  template <class T>
  T read(std::string_view field) {
    need(static_cast<int64_t>(sizeof(T)), field);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // little-endian hosts only (x86-64, arm64)
    pos_ += static_cast<int64_t>(sizeof(T));
    return v;
  }
  std::span<const uint8_t> take(int64_t n, std::string_view field) {
    need(n, field);
    auto s = bytes_.subspan(static_cast<size_t>(pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }
  std::string_view take_chars(int64_t n, std::string_view field) {
    auto s = take(n, field);
    return {reinterpret_cast<const char*>(s.data()), s.size()};
  }
  [[noreturn]] void fail(std::string_view field, std::string_view what) const { fail_at(pos_, field, what); }
  [[noreturn]] void fail_at(int64_t offset, std::string_view field, std::string_view what) const {
    format_error(format_, file_, offset, field, what);
  }
  std::span<const uint8_t> bytes() const { return bytes_; }

 private:
  std::span<const uint8_t> bytes_;
  int64_t pos_ = 0;
  std::string_view format_;
  std::string_view file_;
};

// A u8 CPU tensor [size] over the whole file, mapped read-only (a view that keeps the mapping
// alive and refuses writes). An empty file gives an empty tensor. IoError when it cannot be opened.
Tensor map_file(const std::string& path, std::string_view format);
// A u8 CPU tensor holding a copy of `bytes`.
Tensor copy_bytes(std::span<const uint8_t> bytes);
// The bytes of a u8 CPU tensor made by map_file / copy_bytes (contiguous, offset 0).
std::span<const uint8_t> source_span(const Tensor& source);

struct TensorFileBuilder {
  std::string format;  // "gguf", "safetensors", "npy", "npz": the prefix of messages
  std::string path;
  std::vector<Tensor> sources;
  std::vector<FileTensor> tensors;
};

}  // namespace wick::io

namespace wick {

struct TensorFile::Impl {
  std::string format;
  std::string path;
  std::vector<Tensor> sources;  // u8 CPU tensors: mappings (read-only) or owned buffers
  std::vector<FileTensor> tensors;
  std::unordered_map<std::string, size_t> by_name;
};

}  // namespace wick

namespace wick::io {

// Checks what every format shares (names unique, [offset, offset + nbytes) inside its source, dims
// non-negative with a product of the non-zero ones that fits int64, nbytes = numel x element size
// for dtypes) and builds the file. The per-format rules (tiling,
// order, alignment) are the reader's, checked before.
TensorFile finish_tensor_file(TensorFileBuilder b);

// The contiguous bytes of `t` (any device, layout, dtype) in host memory: a view of t's storage
// when t is a contiguous CPU tensor, else a copy held by `keep`.
std::span<const uint8_t> host_bytes(const Tensor& t, Tensor* keep);

// An output file written under a temporary name in the same folder and renamed into place by
// commit(); destroyed without commit, it removes the temporary. IoError on any failure.
class OutputFile {
 public:
  OutputFile(const std::string& path, std::string_view format);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  void write(const void* data, int64_t n);
  void write(std::span<const uint8_t> s) { write(s.data(), static_cast<int64_t>(s.size())); }
  void zeros(int64_t n);
  int64_t written() const { return written_; }
  void commit();

 private:
  std::string path_, tmp_, format_;
  void* f_ = nullptr;  // FILE*
  int64_t written_ = 0;
};

}  // namespace wick::io
