// Model files: GGUF, safetensors and NumPy (.npy / .npz), read and written.
//
//   wick::GgufFile g = wick::GgufFile::open("model.gguf");
//   int64_t layers = g.metadata().get("llama.block_count").as_int();
//   wick::QTensor wq = g.qtensor("blk.0.attn_q.weight");   // a view of the file's mapping
//
//   wick::SafetensorsFile s = wick::SafetensorsFile::open("checkpoint/");  // a file, an index, a folder
//   wick::Tensor e = s.tensor("model.embed_tokens.weight", wick::Device::cuda());
//
//   wick::Tensor a = wick::load_npy("a.npy");
//   wick::save_npz("arrays.npz", {{"a", a}}, /*compress=*/true);
//
// Reading. A file is memory-mapped read-only; a tensor read to the CPU is a view of the mapping,
// kept alive by the tensors that use it, and writing into it throws InvalidArgument. The tensor is
// a copy instead where a view cannot serve: big-endian .npy data, .npz members, a tensor whose
// byte offset is not a multiple of its element size. Read to a GPU, a tensor streams through
// page-locked staging buffers, copying the next chunk while the previous one is in flight.
//
// Validation. Every count, length, dimension, offset and alignment read from a file is checked
// (overflow, the bytes remaining, the format's rules) before it drives an allocation or a read.
// A malformed file raises FormatError naming the file, the byte offset and the field:
//   [gguf] model.gguf: byte 4120, tensor_info[3].dims: product of [4096, 2^62] overflows
// Asking for a tensor that is absent raises IndexError; for one of another kind (tensor() of a
// quantized tensor, qtensor() of a float one) DTypeError.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/qformat.h"
#include "wick/quant.h"
#include "wick/shape.h"
#include "wick/tensor.h"

namespace wick {

// ---- tensors as files store them ------------------------------------------------------------

struct FileTensor {
  std::string name;
  Shape shape;                     // in elements, row-major (the last dim varies fastest)
  std::string type;                // the file's name for the element type: "F32", "Q4_K", "BF16", "<f4"
  std::optional<DType> dtype;      // the wick dtype, when the type is one
  std::optional<QFormat> qformat;  // the block format, when the type is one of wick's
  int source = 0;                  // which of the file's byte sources holds it (a shard of a checkpoint)
  int64_t offset = 0;              // byte offset in that source
  int64_t nbytes = 0;
  bool column_major = false;  // .npy fortran_order: the tensor is a view with reversed strides
};

// Progress of a load: bytes done and the total, called from the loading thread.
using LoadProgress = std::function<void(int64_t done, int64_t total)>;

struct LoadOptions {
  std::vector<std::string> names;  // the tensors to load; empty: every tensor
  LoadProgress progress;           // called after each chunk; may be empty
  // A progress bar on stderr, drawn only when stderr is a terminal.
  bool progress_bar = true;
};

// A loaded tensor: `tensor` for a dense one, `qtensor` for a quantized one (the other undefined).
struct LoadedTensor {
  Tensor tensor;
  QTensor qtensor;
};

// What every reader shares: the byte sources (mappings or buffers) and the tensors in them.
class TensorFile {
 public:
  TensorFile();
  ~TensorFile();
  TensorFile(TensorFile&&) noexcept;
  TensorFile& operator=(TensorFile&&) noexcept;
  TensorFile(const TensorFile&);
  TensorFile& operator=(const TensorFile&);

  const std::string& path() const;                      // as given to open (the first shard's, for a checkpoint)
  const std::vector<FileTensor>& tensors() const;       // in file order
  const FileTensor* find(std::string_view name) const;  // nullptr when absent
  const FileTensor& info(std::string_view name) const;  // IndexError when absent
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // A dense tensor (DTypeError for a block format or a type wick has no dtype for: see bytes()).
  Tensor tensor(std::string_view name, const Device& device = Device::cpu()) const;
  // A tensor of one of wick's block formats.
  QTensor qtensor(std::string_view name, const Device& device = Device::cpu()) const;
  // The stored bytes, u8 [nbytes], whatever the type.
  Tensor bytes(std::string_view name, const Device& device = Device::cpu()) const;
  // Several tensors (options.names, or all) in file order, streamed to `device` with one progress.
  std::map<std::string, LoadedTensor, std::less<>> load(const Device& device, const LoadOptions& options = {}) const;

  // Internal (the readers build a TensorFile through these).
  struct Impl;
  explicit TensorFile(std::shared_ptr<Impl> impl);
  const Impl& impl() const { return *impl_; }

 protected:
  std::shared_ptr<Impl> impl_;
};

// ---- GGUF (llama.cpp's format, versions 2 and 3) --------------------------------------------

enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};
const char* gguf_type_name(GgufType t);  // "u32", "string", "array", ...

// One metadata value. Typed accessors throw FormatError naming the key when the type differs.
class GgufValue {
 public:
  GgufValue();
  ~GgufValue();
  GgufValue(const GgufValue&);
  GgufValue(GgufValue&&) noexcept;
  GgufValue& operator=(const GgufValue&);
  GgufValue& operator=(GgufValue&&) noexcept;

  // Scalars and strings.
  static GgufValue u8(uint8_t v);
  static GgufValue i8(int8_t v);
  static GgufValue u16(uint16_t v);
  static GgufValue i16(int16_t v);
  static GgufValue u32(uint32_t v);
  static GgufValue i32(int32_t v);
  static GgufValue f32(float v);
  static GgufValue boolean(bool v);
  static GgufValue string(std::string v);
  static GgufValue u64(uint64_t v);
  static GgufValue i64(int64_t v);
  static GgufValue f64(double v);
  // Arrays: of a scalar type (the values as raw little-endian bytes of that type), of strings, of arrays.
  template <class T>
  static GgufValue array(const std::vector<T>& values);
  static GgufValue array_raw(GgufType elem, std::vector<uint8_t> little_endian_bytes);
  static GgufValue strings(std::vector<std::string> values);
  static GgufValue arrays(std::vector<GgufValue> values);  // every element an array

  GgufType type() const;
  GgufType elem_type() const;      // arrays: the element type
  const std::string& key() const;  // the key it was read or set under ("" before)

  uint8_t as_u8() const;
  int8_t as_i8() const;
  uint16_t as_u16() const;
  int16_t as_i16() const;
  uint32_t as_u32() const;
  int32_t as_i32() const;
  float as_f32() const;
  bool as_bool() const;
  const std::string& as_string() const;
  uint64_t as_u64() const;
  int64_t as_i64() const;
  double as_f64() const;
  // Any integer type, as int64 (FormatError when a u64 exceeds INT64_MAX); any float type as double.
  int64_t as_int() const;
  double as_float() const;

  size_t size() const;  // elements of an array (FormatError for a scalar)
  // An array of scalars of type T (T matches elem_type exactly: uint32_t for U32, int8_t for I8,
  // bool for Bool, ...), copied out.
  template <class T>
  std::vector<T> as_array() const;
  const std::vector<std::string>& as_strings() const;  // an array of strings
  const std::vector<GgufValue>& as_arrays() const;     // an array of arrays

  std::string str() const;  // short rendering for `wick inspect`: 4096, "llama", [u32 x 32000]
  bool operator==(const GgufValue& o) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }
  Impl& impl() { return *impl_; }

 private:
  explicit GgufValue(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Keys in file order, each once.
class GgufMetadata {
 public:
  const std::vector<std::pair<std::string, GgufValue>>& items() const { return items_; }
  size_t size() const { return items_.size(); }
  const GgufValue* find(std::string_view key) const;
  const GgufValue& get(std::string_view key) const;  // FormatError naming the key when absent
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Replaces the value of an existing key in place, else appends.
  void set(std::string key, GgufValue value);
  bool erase(std::string_view key);

 private:
  std::vector<std::pair<std::string, GgufValue>> items_;
  std::map<std::string, size_t, std::less<>> index_;  // key -> position in items_
};

class GgufFile : public TensorFile {
 public:
  static GgufFile open(const std::string& path);
  // Parses a copy of `data` (`name` stands for the file in messages).
  static GgufFile from_memory(std::span<const uint8_t> data, std::string name = "<memory>");

  uint32_t version() const;
  uint64_t alignment() const;   // general.alignment, or 32
  int64_t data_offset() const;  // where the tensor data section starts
  const GgufMetadata& metadata() const;
  // The ggml type id of a tensor (FileTensor::type is its name).
  uint32_t ggml_type(std::string_view name) const;

  struct Meta;

 private:
  GgufFile(TensorFile base, std::shared_ptr<const Meta> meta);
  std::shared_ptr<const Meta> meta_;
};

// Builds a GGUF file: metadata, then tensors in the order added, each at the next aligned offset.
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3);
  GgufMetadata& metadata() { return metadata_; }
  // Dense tensors: f32, f16, bf16, f64, i32, i64 (GGUF has no u8/u32/f8 tensor type: DTypeError).
  void add(std::string name, const Tensor& t);
  void add(std::string name, const QTensor& q);
  // Bytes of any ggml type (those wick cannot decode too): shape in elements, row-major.
  void add_raw(std::string name, uint32_t ggml_type, const Shape& shape, const Tensor& bytes);
  // Everything of `file`, in its order: writing it back gives the same bytes.
  static GgufWriter copy_of(const GgufFile& file);

  void write(const std::string& path) const;  // through a temporary file renamed into place
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Entry {
    std::string name;
    uint32_t ggml_type;
    Shape shape;
    Tensor bytes;  // u8, the stored bytes (any device)
  };
  uint32_t version_;
  GgufMetadata metadata_;
  std::vector<Entry> entries_;
};

// ---- safetensors (Hugging Face) -------------------------------------------------------------

class SafetensorsFile : public TensorFile {
 public:
  // A .safetensors file; a model.safetensors.index.json (the shards it names, in its folder); or a
  // folder holding model.safetensors or model.safetensors.index.json.
  static SafetensorsFile open(const std::string& path);
  static SafetensorsFile from_memory(std::span<const uint8_t> data, std::string name = "<memory>");
  // __metadata__ (of the single file, or the index's "metadata" merged over the shards').
  const std::map<std::string, std::string>& metadata() const;
  // The shard files, in the order FileTensor::source counts them.
  const std::vector<std::string>& shards() const;

  struct Meta;

 private:
  SafetensorsFile(TensorFile base, std::shared_ptr<const Meta> meta);
  std::shared_ptr<const Meta> meta_;
};

// Dtypes: bf16, f16, f32, f64, f8e4m3, i64, i32, u32, u8.
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
std::vector<uint8_t> safetensors_bytes(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                       const std::map<std::string, std::string>& metadata = {});
// Shards of at most max_shard_bytes of data each (a tensor larger than that gets a shard alone)
// named <stem>-0000i-of-0000n.safetensors in `dir`, plus <stem>.safetensors.index.json;
// returns the index's path. stem: "model".
std::string save_safetensors_sharded(const std::string& dir, const std::vector<std::pair<std::string, Tensor>>& tensors,
                                     int64_t max_shard_bytes, const std::map<std::string, std::string>& metadata = {},
                                     const std::string& stem = "model");

// ---- NumPy ----------------------------------------------------------------------------------

// One array as a TensorFile (its tensor is named "" ... and also reachable through load_npy).
class NpyFile : public TensorFile {
 public:
  static NpyFile open(const std::string& path);
  static NpyFile from_memory(std::span<const uint8_t> data, std::string name = "<memory>");
  const FileTensor& array() const { return tensors().front(); }
  Tensor tensor(const Device& device = Device::cpu()) const { return TensorFile::tensor(array().name, device); }

 private:
  explicit NpyFile(TensorFile base) : TensorFile(std::move(base)) {}
};

// Members "<name>.npy" of a zip archive (stored or deflated) as tensors named <name>.
class NpzFile : public TensorFile {
 public:
  static NpzFile open(const std::string& path);
  static NpzFile from_memory(std::span<const uint8_t> data, std::string name = "<memory>");

 private:
  explicit NpzFile(TensorFile base) : TensorFile(std::move(base)) {}
};

Tensor load_npy(const std::string& path, const Device& device = Device::cpu());
// Version 1.0 (2.0 when the header needs it), little-endian, C order. Dtypes: every wick dtype but
// bf16 and f8e4m3, which NumPy lacks (DTypeError).
void save_npy(const std::string& path, const Tensor& t);
std::vector<uint8_t> npy_bytes(const Tensor& t);
void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays,
              bool compress = false);

// ---- any of them ----------------------------------------------------------------------------

enum class FileFormat { Gguf, Safetensors, Npy, Npz };
const char* file_format_name(FileFormat f);  // "gguf", "safetensors", "npy", "npz"
// By content (magic) for files, by the index or model file for folders; FormatError when unknown.
FileFormat detect_file_format(const std::string& path);

}  // namespace wick
