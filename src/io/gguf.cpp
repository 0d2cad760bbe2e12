// GGUF files (versions 2 and 3): the reader (GgufFile) and the writer (GgufWriter). The metadata
// values and their encoding are in gguf_value.cpp.
//
// Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv, the key-value pairs, the tensor infos
// (name, u32 n_dims, n_dims x i64 ne with ne[0] varying fastest, u32 ggml type, u64 offset into the
// data section), zero padding to `general.alignment` (u32, default 32), then the data section.
#include <algorithm>
#include <unordered_set>

#include "io/io_common.h"

namespace wick {

namespace io {
// Defined in gguf_value.cpp.
std::string read_gguf_string(ByteReader& r, const std::string& field);
GgufValue read_gguf_value(ByteReader& r, const std::string& key, const std::string& field);
void put_gguf_string(std::vector<uint8_t>& out, std::string_view s);
void put_gguf_value(std::vector<uint8_t>& out, const GgufValue& v);
}  // namespace io

namespace {

// ggml's tensor types (enum ggml_type) with their blocks, as ggml's type_traits table has them
// (gguf-py's table says 40 bytes for Q8_1; ggml's block_q8_1 is 36). Ids 4 and 5 (Q4_2, Q4_3),
// 31-33 and 36-38 (repacked layouts) were removed from ggml: a file using them is rejected. NVFP4
// (40) and Q1_0 (41) are recent ggml types, read as raw bytes like the other types wick lacks.
struct GgmlType {
  uint32_t id;
  const char* name;
  int64_t block_elems;
  int64_t block_bytes;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},      {3, "Q4_1", 32, 20},
    {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},      {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},
    {10, "Q2_K", 256, 84},    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66}, {17, "IQ2_XS", 256, 74},
    {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},   {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},
    {22, "IQ2_S", 256, 82},   {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},        {29, "IQ1_M", 256, 56},
    {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},
    {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},
};

constexpr const GgmlType* ggml_type_info(uint32_t id) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// wick's block formats (wick/qformat.h) must agree with this table.
constexpr bool qformats_agree() {
  for (const QFormatInfo& q : kQFormatInfo) {
    const GgmlType* t = ggml_type_info(q.ggml_type);
    if (!t || t->block_elems != q.block_elems || t->block_bytes != q.block_bytes) return false;
  }
  return true;
}
static_assert(qformats_agree());

std::optional<DType> dtype_of_ggml(uint32_t id) {
  switch (id) {
    case 0:
      return DType::F32;
    case 1:
      return DType::F16;
    case 26:
      return DType::I32;
    case 27:
      return DType::I64;
    case 28:
      return DType::F64;
    case 30:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

std::optional<uint32_t> ggml_of_dtype(DType d) {
  switch (d) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::I32:
      return 26;
    case DType::I64:
      return 27;
    case DType::F64:
      return 28;
    case DType::BF16:
      return 30;
    default:
      return std::nullopt;
  }
}

constexpr uint32_t kDefaultAlignment = 32;
// ggml caps dims at 4 (GGML_MAX_DIMS).
constexpr uint32_t kMaxDims = 4;
// ggml takes any power of two; wick stops at 1 GiB (only 2^31 is beyond among u32 powers of two),
// where the padding of a single tensor would already be gigabytes.
constexpr uint64_t kMaxAlignment = uint64_t{1} << 30;
// The fewest bytes a key-value pair (key length, type, a 1-byte value) and a tensor info (name
// length, n_dims, one dim, type, offset) take: they bound the counts before anything is reserved.
constexpr int64_t kMinKvBytes = 8 + 4 + 1;
constexpr int64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;

bool is_pow2(uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

std::string dims_text(const std::vector<int64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// The bytes of `ne` (ggml order) of type t, or false when they overflow int64. ne[0] must be a
// multiple of the block.
bool tensor_nbytes(const GgmlType& t, const std::vector<int64_t>& ne, int64_t* out) {
  int64_t n = ne[0] / t.block_elems;
  for (size_t i = 1; i < ne.size(); ++i)
    if (!io::mul_ok(n, ne[i], &n)) return false;
  return io::mul_ok(n, t.block_bytes, out);
}

std::string fmt_field(std::string_view what, int64_t i, std::string_view sub) {
  return std::string(what) + "[" + std::to_string(i) + "]" + std::string(sub);
}

// A key or name as messages quote it: at most 80 bytes of it.
std::string quote(const std::string& s) {
  std::string out = "'";
  out.append(s, 0, std::min<size_t>(s.size(), 80));
  if (s.size() > 80) out += "...";
  out += '\'';
  return out;
}

struct Parsed {
  TensorFile base;
  std::shared_ptr<GgufFile::Meta> meta;
};

}  // namespace

struct GgufFile::Meta {
  uint32_t version = 3;
  uint64_t alignment = kDefaultAlignment;
  int64_t data_offset = 0;
  GgufMetadata metadata;
  std::vector<uint32_t> ggml_types;  // per tensor, in file order
};

namespace {

Parsed parse(Tensor source, const std::string& path) {
  const std::span<const uint8_t> bytes = io::source_span(source);
  io::ByteReader r(bytes, "gguf", path);
  auto meta = std::make_shared<GgufFile::Meta>();

  const auto magic = r.take(4, "magic");
  if (std::memcmp(magic.data(), "GGUF", 4) != 0) r.fail_at(0, "magic", "not a GGUF file (no \"GGUF\" magic)");
  meta->version = r.read<uint32_t>("version");
  if (meta->version == 1) r.fail_at(4, "version", "unsupported version 1 (GGUFv1, 32-bit counts)");
  if (meta->version != 2 && meta->version != 3)
    r.fail_at(4, "version", "unsupported version " + std::to_string(meta->version) + " (2 and 3 are read)");

  const auto n_tensors = r.read<int64_t>("n_tensors");
  const auto n_kv = r.read<int64_t>("n_kv");
  auto check_count = [&](int64_t n, int64_t at, const char* field, int64_t min_bytes, const char* what) {
    if (n < 0) r.fail_at(at, field, "negative count " + std::to_string(n));
    if (n > r.remaining() / min_bytes)
      r.fail_at(
          at, field,
          std::to_string(n) + " " + what + " cannot fit in the " + std::to_string(r.remaining()) + " bytes remaining");
  };
  check_count(n_tensors, 8, "n_tensors", kMinTensorInfoBytes, "tensor infos");
  check_count(n_kv, 16, "n_kv", kMinKvBytes, "key-value pairs");

  // Key-value pairs.
  int64_t alignment_at = 0;
  for (int64_t i = 0; i < n_kv; ++i) {
    const int64_t at = r.pos();
    std::string key = io::read_gguf_string(r, fmt_field("kv", i, ".key"));
    if (key.empty()) r.fail_at(at, fmt_field("kv", i, ".key"), "empty key");
    // (Appended piece by piece: GCC 12 warns falsely about `"literal" + std::string&&`.)
    std::string field = fmt_field("kv", i, " ");
    field += quote(key);
    if (meta->metadata.contains(key)) r.fail_at(at, field, std::string("duplicate key ").append(quote(key)));
    if (key == "general.alignment") alignment_at = at;
    GgufValue v = io::read_gguf_value(r, key, field);
    meta->metadata.set(std::move(key), std::move(v));
  }
  if (const GgufValue* a = meta->metadata.find("general.alignment")) {
    if (a->type() != GgufType::U32)
      r.fail_at(alignment_at, "general.alignment", std::string("is ") + gguf_type_name(a->type()) + ", not u32");
    meta->alignment = a->as_u32();
    if (!is_pow2(meta->alignment) || meta->alignment > kMaxAlignment)
      r.fail_at(alignment_at, "general.alignment",
                "alignment " + std::to_string(meta->alignment) + " is not a power of two in [1, 2^30]");
  }
  const auto align = static_cast<int64_t>(meta->alignment);

  // Tensor infos.
  std::vector<FileTensor> tensors;
  std::vector<int64_t> offset_at;  // where each info's offset field is, for messages
  // n_tensors is bounded by the bytes remaining, but a FileTensor is several times larger than its
  // info: reserve for a typical model at most, and let a larger count grow as infos are read.
  const auto reserve = static_cast<size_t>(std::min<int64_t>(n_tensors, 4096));
  tensors.reserve(reserve);
  offset_at.reserve(reserve);
  meta->ggml_types.reserve(reserve);
  std::unordered_set<std::string> names;
  for (int64_t i = 0; i < n_tensors; ++i) {
    const int64_t name_at = r.pos();
    FileTensor t;
    t.name = io::read_gguf_string(r, fmt_field("tensor_info", i, ".name"));
    if (!names.insert(t.name).second)
      r.fail_at(name_at, fmt_field("tensor_info", i, ".name"),
                std::string("duplicate tensor name ").append(quote(t.name)));
    const std::string f_dims = fmt_field("tensor_info", i, ".dims");
    const int64_t dims_at = r.pos();
    const auto n_dims = r.read<uint32_t>(fmt_field("tensor_info", i, ".n_dims"));
    if (n_dims == 0 || n_dims > kMaxDims)
      r.fail_at(dims_at, fmt_field("tensor_info", i, ".n_dims"),
                "n_dims is " + std::to_string(n_dims) + ", not 1 to " + std::to_string(kMaxDims));
    std::vector<int64_t> ne(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d) {
      ne[d] = r.read<int64_t>(f_dims);
      if (ne[d] < 0) r.fail_at(r.pos() - 8, f_dims, "dimension " + std::to_string(d) + " is " + std::to_string(ne[d]));
    }
    int64_t numel = 1;
    for (int64_t d : ne)
      if (!io::mul_ok(numel, d, &numel)) r.fail_at(dims_at, f_dims, "product of " + dims_text(ne) + " overflows");
    const int64_t type_at = r.pos();
    const auto type_id = r.read<uint32_t>(fmt_field("tensor_info", i, ".type"));
    const GgmlType* type = ggml_type_info(type_id);
    if (!type)
      r.fail_at(type_at, fmt_field("tensor_info", i, ".type"), "unknown tensor type " + std::to_string(type_id));
    if (ne[0] % type->block_elems != 0)
      r.fail_at(dims_at, f_dims,
                "ne[0] = " + std::to_string(ne[0]) + " is not a multiple of the " + type->name + " block of " +
                    std::to_string(type->block_elems));
    if (!tensor_nbytes(*type, ne, &t.nbytes))
      r.fail_at(dims_at, f_dims, "the bytes of " + dims_text(ne) + " " + type->name + " overflow");
    offset_at.push_back(r.pos());
    const std::string f_off = fmt_field("tensor_info", i, ".offset");
    if (!io::fits_i64(r.read<uint64_t>(f_off), &t.offset)) r.fail_at(offset_at.back(), f_off, "offset beyond int64");
    if (t.offset % align != 0)
      r.fail_at(offset_at.back(), f_off,
                "offset " + std::to_string(t.offset) + " is not a multiple of the alignment " + std::to_string(align));
    t.shape = Shape(ne.rbegin(), ne.rend());
    t.type = type->name;
    t.dtype = dtype_of_ggml(type_id);
    t.qformat = qformat_from_ggml(type_id);
    tensors.push_back(std::move(t));
    meta->ggml_types.push_back(type_id);
  }

  // The data section starts at the next multiple of the alignment. A file without tensors may end
  // right after its infos (ggml's reader does not seek then); its data_offset is still the rounded one.
  const int64_t header_end = r.pos();
  int64_t data_start = 0;
  if (!io::add_ok(header_end, align - 1, &data_start)) r.fail("data", "data section start overflows");
  data_start = data_start / align * align;
  meta->data_offset = data_start;
  if (n_tensors > 0 && data_start > r.size())
    r.fail_at(header_end, "data",
              "the tensor infos end at " + std::to_string(header_end) + ", which rounded up to the alignment " +
                  std::to_string(align) + " is past the end of the " + std::to_string(r.size()) + "-byte file");
  const int64_t data_size = std::max<int64_t>(r.size() - data_start, 0);

  // Tensors must lie in order, without overlaps, inside the data section. ggml's writer leaves no
  // gaps but the alignment padding, and ggml's reader requires that; wick accepts gaps (the bytes
  // are never read), as they harm nothing and other writers may align to more.
  int64_t prev_end = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    FileTensor& t = tensors[i];
    const std::string f_off = fmt_field("tensor_info", static_cast<int64_t>(i), ".offset");
    if (i > 0 && t.offset < tensors[i - 1].offset - data_start)
      r.fail_at(offset_at[i], f_off,
                "offset " + std::to_string(t.offset) + " comes before that of the previous tensor (" +
                    std::to_string(tensors[i - 1].offset - data_start) + "): tensors must be stored in order");
    if (t.offset < prev_end)
      r.fail_at(offset_at[i], f_off,
                "tensor at " + std::to_string(t.offset) + " overlaps the previous one, which ends at " +
                    std::to_string(prev_end));
    int64_t end = 0;
    if (!io::add_ok(t.offset, t.nbytes, &end) || end > data_size)
      r.fail_at(offset_at[i], f_off,
                "bytes [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) + ") are past the end of the " +
                    std::to_string(data_size) + "-byte data section (file truncated?)");
    prev_end = end;
    t.offset += data_start;  // absolute within the file from here on
  }

  TensorFile base =
      io::finish_tensor_file(io::TensorFileBuilder{"gguf", path, {std::move(source)}, std::move(tensors)});
  return {std::move(base), std::move(meta)};
}

}  // namespace

GgufFile::GgufFile(TensorFile base, std::shared_ptr<const Meta> meta)
    : TensorFile(std::move(base)), meta_(std::move(meta)) {}

GgufFile GgufFile::open(const std::string& path) {
  Parsed p = parse(io::map_file(path, "gguf"), path);
  return GgufFile(std::move(p.base), std::move(p.meta));
}

GgufFile GgufFile::from_memory(std::span<const uint8_t> data, std::string name) {
  Parsed p = parse(io::copy_bytes(data), name);
  return GgufFile(std::move(p.base), std::move(p.meta));
}

uint32_t GgufFile::version() const { return meta_->version; }
uint64_t GgufFile::alignment() const { return meta_->alignment; }
int64_t GgufFile::data_offset() const { return meta_->data_offset; }
const GgufMetadata& GgufFile::metadata() const { return meta_->metadata; }

uint32_t GgufFile::ggml_type(std::string_view name) const {
  const FileTensor& t = info(name);
  return meta_->ggml_types[static_cast<size_t>(&t - tensors().data())];
}

// ---- writer ----------------------------------------------------------------------------------

namespace {

std::string wtag(const std::string& name) { return "[gguf] tensor '" + name + "': "; }

void check_rank(const std::string& name, const Shape& shape) {
  if (shape.size() < 1 || shape.size() > kMaxDims)
    throw ShapeError(wtag(name) + "GGUF stores ranks 1 to 4, not " + std::to_string(shape.size()) + " (" + shape.str() +
                     ")");
}

// A u8 view of the bytes of a contiguous tensor.
Tensor as_bytes(const Tensor& c) {
  if (c.numel() == 0) return Tensor::empty({0}, DType::U8, c.device());
  const int64_t es = dtype_size(c.dtype());
  return Tensor(c.storage(), Layout(Shape{c.numel() * es}, c.offset() * es), DType::U8, c.device());
}

uint64_t writer_alignment(const GgufMetadata& m) {
  const GgufValue* a = m.find("general.alignment");
  if (!a) return kDefaultAlignment;
  if (a->type() != GgufType::U32)
    throw InvalidArgument(std::string("[gguf] general.alignment must be a u32, not ") + gguf_type_name(a->type()));
  const uint64_t v = a->as_u32();
  if (!is_pow2(v) || v > kMaxAlignment)
    throw InvalidArgument("[gguf] general.alignment " + std::to_string(v) + " is not a power of two in [1, 2^30]");
  return v;
}

int64_t pad_to(int64_t n, int64_t align) { return (n + align - 1) / align * align; }

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* b = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), b, b + sizeof v);
}

// The output: a file or a byte vector.
struct VecSink {
  std::vector<uint8_t>* out;
  void write(std::span<const uint8_t> s) { out->insert(out->end(), s.begin(), s.end()); }
  void zeros(int64_t n) { out->insert(out->end(), static_cast<size_t>(n), 0); }
};

}  // namespace

GgufWriter::GgufWriter(uint32_t version) : version_(version) {
  if (version != 2 && version != 3)
    throw InvalidArgument("[gguf] GgufWriter writes versions 2 and 3, not " + std::to_string(version));
}

void GgufWriter::add(std::string name, const Tensor& t) {
  if (!t.defined()) throw InvalidArgument(wtag(name) + "undefined tensor");
  const std::optional<uint32_t> type = ggml_of_dtype(t.dtype());
  if (!type)
    throw DTypeError(wtag(name) + "GGUF has no tensor type for " + std::string(dtype_name(t.dtype())) +
                     " (f32, f16, bf16, f64, i32, i64 are written)");
  check_rank(name, t.shape());
  add_raw(std::move(name), *type, t.shape(), as_bytes(t.contiguous()));
}

void GgufWriter::add(std::string name, const QTensor& q) {
  if (!q.defined()) throw InvalidArgument(wtag(name) + "undefined quantized tensor");
  check_rank(name, q.shape());
  const QTensor c = q.contiguous();
  const Tensor bytes = q.numel() == 0 ? Tensor::empty({0}, DType::U8, q.device()) : c.bytes().flatten();
  add_raw(std::move(name), qformat_info(q.format()).ggml_type, q.shape(), bytes);
}

void GgufWriter::add_raw(std::string name, uint32_t ggml_type, const Shape& shape, const Tensor& bytes) {
  const GgmlType* type = ggml_type_info(ggml_type);
  if (!type) throw InvalidArgument(wtag(name) + "unknown tensor type " + std::to_string(ggml_type));
  if (!bytes.defined() || bytes.dtype() != DType::U8)
    throw DTypeError(wtag(name) + "add_raw takes u8 bytes, not " + bytes.str());
  check_rank(name, shape);
  std::vector<int64_t> ne(shape.begin(), shape.end());
  std::reverse(ne.begin(), ne.end());
  for (int64_t d : ne)
    if (d < 0) throw ShapeError(wtag(name) + "negative dim in " + shape.str());
  if (ne[0] % type->block_elems != 0)
    throw ShapeError(wtag(name) + "the last dim of " + shape.str() + " is not a whole number of " + type->name +
                     " blocks of " + std::to_string(type->block_elems));
  int64_t nbytes = 0;
  if (!tensor_nbytes(*type, ne, &nbytes)) throw ShapeError(wtag(name) + shape.str() + " is too large");
  if (bytes.numel() != nbytes)
    throw ShapeError(wtag(name) + shape.str() + " " + type->name + " takes " + std::to_string(nbytes) +
                     " bytes, given " + std::to_string(bytes.numel()));
  for (const Entry& e : entries_)
    if (e.name == name) throw InvalidArgument(wtag(name) + "added twice");
  entries_.push_back(Entry{std::move(name), ggml_type, shape, bytes});
}

GgufWriter GgufWriter::copy_of(const GgufFile& file) {
  GgufWriter w(file.version());
  w.metadata_ = file.metadata();
  for (const FileTensor& t : file.tensors())
    w.entries_.push_back(Entry{t.name, file.ggml_type(t.name), t.shape, file.bytes(t.name)});
  return w;
}

namespace {

// Each tensor starts at the next multiple of the alignment, and the last is padded too, as ggml's
// and the gguf package's writers do: copy_of gives their files back byte for byte. Everything that
// can fail for a bad argument fails before the first byte goes out.
template <class Entries, class Sink>
void emit(uint32_t version, const GgufMetadata& metadata, const Entries& entries, Sink& sink) {
  const auto align = static_cast<int64_t>(writer_alignment(metadata));
  std::vector<uint8_t> h = {'G', 'G', 'U', 'F'};
  put<uint32_t>(h, version);
  put<uint64_t>(h, entries.size());
  put<uint64_t>(h, metadata.size());
  for (const auto& [key, value] : metadata.items()) {
    io::put_gguf_string(h, key);
    io::put_gguf_value(h, value);
  }
  int64_t offset = 0;
  for (const auto& e : entries) {
    io::put_gguf_string(h, e.name);
    put<uint32_t>(h, static_cast<uint32_t>(e.shape.size()));
    for (size_t d = e.shape.size(); d-- > 0;) put<int64_t>(h, e.shape[d]);  // ne[0] is the last wick dim
    put<uint32_t>(h, e.ggml_type);
    put<uint64_t>(h, static_cast<uint64_t>(offset));
    offset = pad_to(offset + e.bytes.numel(), align);
  }
  h.resize(static_cast<size_t>(pad_to(static_cast<int64_t>(h.size()), align)), 0);
  sink.write(std::span<const uint8_t>(h));
  for (const auto& e : entries) {
    Tensor keep;
    const std::span<const uint8_t> b = io::host_bytes(e.bytes, &keep);
    sink.write(b);
    const auto n = static_cast<int64_t>(b.size());
    sink.zeros(pad_to(n, align) - n);
  }
}

}  // namespace

void GgufWriter::write(const std::string& path) const {
  io::OutputFile f(path, "gguf");
  emit(version_, metadata_, entries_, f);
  f.commit();
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  VecSink sink{&out};
  emit(version_, metadata_, entries_, sink);
  return out;
}

}  // namespace wick
