// NumPy .npy and .npz: readers and writers.
//
// The format (numpy/lib/format.py): the magic "\x93NUMPY", a major and a minor version byte (1.0,
// 2.0 or 3.0), the header length (u16 for 1.0, u32 after), the header: a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with spaces and ending in a
// newline, then the array's bytes. Writers pad the header so the data starts at a multiple of 64
// (16 in old NumPy); the reader accepts any length.
//
// The header is parsed by a small strict parser of exactly that literal, not an evaluator: keys in
// any order, each once, single or double quotes without escapes, True/False, tuples of
// non-negative integers (a Python 2 "L" suffix allowed, as NumPy's own reader allows it), optional
// trailing commas, whitespace. Anything else is a FormatError naming the field.
#include <zip.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <unordered_set>

#include "backend/backend.h"
#include "io/io_common.h"

namespace wick {

namespace {

using io::add_ok;
using io::ByteReader;
using io::format_error;
using io::mul_ok;

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// A parsed .npy: its tensor (offset within the bytes parsed; no name yet) and, for big-endian data
// of elements wider than a byte, the element size to swap by.
struct NpyArray {
  FileTensor tensor;
  int64_t swap_size = 0;
};

// At most as many dims as NumPy itself allows (NPY_MAXDIMS is 64 since NumPy 2.0).
constexpr size_t kMaxRank = 64;

class HeaderParser {
 public:
  HeaderParser(std::string_view text, int64_t base, std::string_view format, std::string_view file)
      : s_(text), base_(base), format_(format), file_(file) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_ws();
    expect('{', "header", "does not start with '{'");
    skip_ws();
    while (peek() != '}') {
      const size_t key_at = i_;
      const std::string key = string_literal("header");
      skip_ws();
      expect(':', "header", "expected ':' after a key");
      skip_ws();
      if (key == "descr") {
        if (have_descr) fail_at(key_at, "descr", "appears twice");
        have_descr = true;
        if (peek() == '[') fail("descr", "a structured dtype (a list of fields): not supported");
        h.descr = string_literal("descr");
      } else if (key == "fortran_order") {
        if (have_order) fail_at(key_at, "fortran_order", "appears twice");
        have_order = true;
        h.fortran_order = boolean("fortran_order");
      } else if (key == "shape") {
        if (have_shape) fail_at(key_at, "shape", "appears twice");
        have_shape = true;
        h.shape = tuple("shape");
      } else {
        fail_at(key_at, "header", "unknown key '" + key + "' (a header has descr, fortran_order and shape)");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != '}') {
        fail("header", "expected ',' or '}' after a value");
      }
    }
    ++i_;
    skip_ws();
    if (i_ != s_.size()) fail("header", "characters after the closing '}'");
    if (!have_descr) fail("descr", "missing from the header");
    if (!have_order) fail("fortran_order", "missing from the header");
    if (!have_shape) fail("shape", "missing from the header");
    return h;
  }

 private:
  // '\0' at the end: never a character the grammar accepts.
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c, std::string_view field, std::string_view what) {
    if (peek() != c) fail(field, what);
    ++i_;
  }
  [[noreturn]] void fail(std::string_view field, std::string_view what) const { fail_at(i_, field, what); }
  [[noreturn]] void fail_at(size_t at, std::string_view field, std::string_view what) const {
    format_error(format_, file_, base_ + static_cast<int64_t>(at), field, what);
  }

  std::string string_literal(std::string_view field) {
    const char q = peek();
    if (q != '\'' && q != '"') fail(field, "expected a quoted string");
    const size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '\\') fail(field, "escapes in strings are not supported");
      if (c < 0x20 || c == 0x7f) fail(field, "a control character in a string");
      ++i_;
    }
    if (i_ >= s_.size()) fail_at(start - 1, field, "unterminated string");
    return std::string(s_.substr(start, i_++ - start));
  }

  bool boolean(std::string_view field) {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (s_.substr(i_, word.size()) == word) {
        const size_t end = i_ + word.size();
        if (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) break;
        i_ = end;
        return value;
      }
    }
    fail(field, "expected True or False");
  }

  int64_t integer(std::string_view field) {
    const size_t start = i_;
    if (peek() == '-') fail(field, "a negative dimension");
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail(field, "expected a non-negative integer");
    if (peek() == '0' && i_ + 1 < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))
      fail(field, "an integer with a leading zero");
    int64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      if (!mul_ok(v, 10, &v) || !add_ok(v, s_[i_] - '0', &v)) fail_at(start, field, "a dimension exceeds 2^63 - 1");
      ++i_;
    }
    if (peek() == 'L') ++i_;  // Python 2's long integers, as old NumPy wrote them
    return v;
  }

  Shape tuple(std::string_view field) {
    expect('(', field, "expected a tuple");
    skip_ws();
    Shape shape;
    bool trailing_comma = false;
    while (peek() != ')') {
      if (shape.size() == kMaxRank) fail(field, "more than " + std::to_string(kMaxRank) + " dims");
      shape.push_back(integer(field));
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++i_;
        skip_ws();
        trailing_comma = true;
      } else if (peek() != ')') {
        fail(field, "expected ',' or ')' in the tuple");
      }
    }
    // (3) is the integer 3 in Python, not a tuple.
    if (shape.size() == 1 && !trailing_comma) fail(field, "(n) without a comma is not a tuple");
    ++i_;
    return shape;
  }

  std::string_view s_;
  size_t i_ = 0;
  int64_t base_;
  std::string_view format_, file_;
};

struct DescrKind {
  const char* code;  // kind and size, as in "f4"
  DType dtype;
};
const DescrKind kDescrs[] = {
    {"b1", DType::U8},  {"u1", DType::U8},  {"u4", DType::U32}, {"i4", DType::I32},
    {"i8", DType::I64}, {"f2", DType::F16}, {"f4", DType::F32}, {"f8", DType::F64},
};

NpyArray parse_npy(std::span<const uint8_t> bytes, std::string_view format, std::string_view file) {
  ByteReader r(bytes, format, file);
  const std::string_view magic = r.take_chars(6, "magic");
  if (magic != std::string_view("\x93NUMPY", 6)) r.fail_at(0, "magic", "not \\x93NUMPY: not a .npy file");
  const auto major = r.read<uint8_t>("version");
  const auto minor = r.read<uint8_t>("version");
  if (major < 1 || major > 3 || minor != 0)
    r.fail_at(6, "version",
              std::to_string(major) + "." + std::to_string(minor) + " (wick reads versions 1.0, 2.0 and 3.0)");
  const int64_t header_len = major == 1 ? r.read<uint16_t>("header length") : r.read<uint32_t>("header length");
  if (header_len > r.remaining())
    r.fail_at(8, "header length",
              std::to_string(header_len) + " bytes, but " + std::to_string(r.remaining()) + " bytes follow");
  const int64_t header_at = r.pos();
  const NpyHeader h = HeaderParser(r.take_chars(header_len, "header"), header_at, format, file).parse();

  // descr: byte order, then kind and size.
  const std::string& d = h.descr;
  std::optional<DType> dtype;
  bool big_endian = false;
  if (d.size() == 3 && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    for (const DescrKind& k : kDescrs)
      if (d.compare(1, 2, k.code) == 0) dtype = k.dtype;
    big_endian = d[0] == '>';  // '=' is the writer's native order: little-endian, as every host wick runs on
  }
  if (!dtype)
    r.fail_at(header_at, "descr",
              "dtype '" + d.substr(0, 40) + "' is not supported (wick reads b1, u1, u4, i4, i8, f2, f4 and f8)");

  int64_t numel = 1;
  for (int64_t dim : h.shape)
    if (!mul_ok(numel, dim, &numel)) r.fail_at(header_at, "shape", "the product of " + h.shape.str() + " overflows");
  const int64_t size = dtype_size(*dtype);
  int64_t nbytes = 0;
  if (!mul_ok(numel, size, &nbytes))
    r.fail_at(header_at, "shape", "the size of " + h.shape.str() + " '" + d + "' overflows");
  if (nbytes > r.remaining())
    r.fail("data", "the array needs " + std::to_string(nbytes) + " bytes, " + std::to_string(r.remaining()) +
                       " remain: the file is truncated");
  if (nbytes < r.remaining())
    r.fail_at(r.pos() + nbytes, "data",
              std::to_string(r.remaining() - nbytes) + " bytes after the array's " + std::to_string(nbytes));

  NpyArray out;
  out.tensor.shape = h.shape;
  out.tensor.type = d;
  out.tensor.dtype = dtype;
  out.tensor.offset = r.pos();
  out.tensor.nbytes = nbytes;
  out.tensor.column_major = h.fortran_order;
  out.swap_size = big_endian && size > 1 ? size : 0;
  return out;
}

void swap_npy_bytes(uint8_t* data, int64_t nbytes, int64_t size) {
  for (int64_t i = 0; i + size <= nbytes; i += size) std::reverse(data + i, data + i + size);
}

std::vector<uint8_t> npy_header(const Tensor& t) {
  if (!t.defined()) throw InvalidArgument("[npy] the tensor is undefined");
  if (t.rank() > kMaxRank)
    throw ShapeError("[npy] a rank-" + std::to_string(t.rank()) + " tensor: NumPy arrays have at most " +
                     std::to_string(kMaxRank) + " dims");
  const char* descr = nullptr;
  switch (t.dtype()) {
    case DType::U8:
      descr = "|u1";
      break;
    case DType::U32:
      descr = "<u4";
      break;
    case DType::I32:
      descr = "<i4";
      break;
    case DType::I64:
      descr = "<i8";
      break;
    case DType::F16:
      descr = "<f2";
      break;
    case DType::F32:
      descr = "<f4";
      break;
    case DType::F64:
      descr = "<f8";
      break;
    case DType::BF16:
    case DType::F8E4M3:
      throw DTypeError("[npy] NumPy has no " + std::string(dtype_name(t.dtype())) +
                       " dtype: convert the tensor (to_dtype) before saving it");
  }
  // As NumPy 2 writes it, byte for byte: the dict's repr, spaces for the first axis to grow to 21
  // digits in place, padding to 64 bytes, a newline.
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.rank(); ++i) {
    if (i) dict += ", ";
    dict += std::to_string(t.shape()[i]);
  }
  if (t.rank() == 1) dict += ',';
  dict += "), }";
  if (t.rank() > 0) dict.append(21 - std::to_string(t.shape()[0]).size(), ' ');
  const int64_t hlen = static_cast<int64_t>(dict.size()) + 1;  // and the newline
  int major = 1;
  int64_t prefix = 10;
  int64_t pad = 64 - (prefix + hlen) % 64;
  if (hlen + pad > 65535) {
    major = 2;
    prefix = 12;
    pad = 64 - (prefix + hlen) % 64;
  }
  if (hlen + pad > static_cast<int64_t>(UINT32_MAX))
    throw InvalidArgument("[npy] the header of a rank-" + std::to_string(t.rank()) + " tensor is too long");
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  const auto len = static_cast<uint32_t>(hlen + pad);
  for (int i = 0; i < (major == 1 ? 2 : 4); ++i) out.push_back(static_cast<uint8_t>(len >> (8 * i)));
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), static_cast<size_t>(pad), ' ');
  out.push_back('\n');
  return out;
}

constexpr char kNpy[] = "npy";

// The array's name: the file's stem ("a" for dir/a.npy), as np.load gives no name and an .npz
// member "a.npy" names its array "a" the same way.
TensorFile npy_file(Tensor source, const std::string& path) {
  NpyArray a = parse_npy(io::source_span(source), kNpy, path);
  a.tensor.name = std::filesystem::path(path).stem().string();
  if (a.swap_size) {
    // Big-endian data: swapped into an owned copy (the mapping is read-only).
    source = io::copy_bytes(io::source_span(source));
    auto* data = static_cast<uint8_t*>(source.storage()->data()) + source.offset();
    swap_npy_bytes(data + a.tensor.offset, a.tensor.nbytes, a.swap_size);
  }
  return io::finish_tensor_file({kNpy, path, {std::move(source)}, {std::move(a.tensor)}});
}

// ---- .npz -------------------------------------------------------------------------------------
//
// A zip archive (stored or deflated members, as numpy.savez and numpy.savez_compressed write it)
// whose members are "<name>.npy". Read with libzip straight from the mapped bytes. Each member is
// decompressed into a buffer of its own, the source of its tensor. A member whose name does not end
// in ".npy" is an error rather than skipped: np.load would hand it back as raw bytes, and a file
// wick reads in part would be silently incomplete. Two members of one name are an error too.

constexpr char kNpz[] = "npz";
// Caps on a member's declared (untrusted) uncompressed size: 64 GiB, above any array a host wick
// runs on can hold and far below where sizes overflow; and deflate's best ratio, 1032:1 (a deflate
// block of 258-byte matches codes each in about two bits), against the compressed size, which the
// archive's bytes bound. The buffer grows as data actually arrives, so a lying size costs nothing.
constexpr int64_t kMaxMember = int64_t{64} << 30;
constexpr int64_t kDeflateRatio = 1032;
constexpr int64_t kReadChunk = int64_t{4} << 20;

struct ZipDiscard {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFclose {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

uint8_t* mutable_bytes(const Tensor& t) { return static_cast<uint8_t*>(t.storage()->data()) + t.offset(); }

// Reads a member of `declared` bytes through `zf` into a u8 tensor of exactly that size.
Tensor read_member(zip_file_t* zf, int64_t declared, const std::string& path, const std::string& field) {
  Tensor buf = Tensor::empty({std::min(declared, kReadChunk)}, DType::U8);
  int64_t got = 0;
  for (;;) {
    if (got == buf.numel() && got < declared) {
      Tensor bigger = Tensor::empty({std::min(declared, 2 * got)}, DType::U8);
      std::memcpy(mutable_bytes(bigger), mutable_bytes(buf), static_cast<size_t>(got));
      buf = std::move(bigger);
    }
    if (got < buf.numel()) {
      const zip_int64_t k = zip_fread(zf, mutable_bytes(buf) + got, static_cast<zip_uint64_t>(buf.numel() - got));
      if (k < 0) format_error(kNpz, path, 0, field, std::string("cannot be read: ") + zip_file_strerror(zf));
      if (k == 0) break;
      got += k;
    } else {
      // All the declared bytes are in: the member must end here. This read also runs libzip's
      // CRC check, which happens at the end of the data.
      uint8_t extra = 0;
      const zip_int64_t k = zip_fread(zf, &extra, 1);
      if (k < 0) format_error(kNpz, path, 0, field, std::string("cannot be read: ") + zip_file_strerror(zf));
      if (k > 0)
        format_error(kNpz, path, 0, field, "holds more than its declared " + std::to_string(declared) + " bytes");
      break;
    }
  }
  if (got != declared)
    format_error(kNpz, path, 0, field,
                 "holds " + std::to_string(got) + " bytes, its header declares " + std::to_string(declared));
  return buf;
}

TensorFile npz_file(std::span<const uint8_t> bytes, const std::string& path) {
  // The end-of-central-directory record alone takes 22 bytes. (libzip would take an empty input
  // for an empty archive.)
  if (bytes.size() < 22)
    format_error(kNpz, path, 0, "zip", "not a valid zip archive: " + std::to_string(bytes.size()) + " bytes");
  zip_error_t err;
  zip_error_init(&err);
  auto zip_fail = [&](std::string_view what) {
    const std::string m = std::string(what) + zip_error_strerror(&err);
    zip_error_fini(&err);
    format_error(kNpz, path, 0, "zip", m);
  };
  zip_source_t* src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &err);
  if (!src) zip_fail("cannot read the archive: ");
  std::unique_ptr<zip_t, ZipDiscard> za(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err));
  if (!za) {
    zip_source_free(src);
    // libzip refuses an archive holding two members of one name.
    zip_fail(zip_error_code_zip(&err) == ZIP_ER_EXISTS ? "two members of one name: " : "not a valid zip archive: ");
  }
  zip_error_fini(&err);
  const zip_int64_t count = zip_get_num_entries(za.get(), 0);
  if (count < 0) format_error(kNpz, path, 0, "zip", std::string("cannot list the members: ") + zip_strerror(za.get()));

  std::vector<Tensor> sources;
  std::vector<FileTensor> tensors;
  std::unordered_set<std::string> names;
  const auto archive_bytes = static_cast<uint64_t>(bytes.size());
  for (zip_int64_t i = 0; i < count; ++i) {
    const auto index = static_cast<zip_uint64_t>(i);
    zip_stat_t st;
    zip_stat_init(&st);
    const std::string at = "member " + std::to_string(i);
    if (zip_stat_index(za.get(), index, 0, &st) != 0)
      format_error(kNpz, path, 0, at, std::string("cannot be read: ") + zip_strerror(za.get()));
    constexpr zip_uint64_t kNeed = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD;
    if ((st.valid & kNeed) != kNeed) format_error(kNpz, path, 0, at, "the archive lacks its name, sizes or method");
    const std::string member = st.name;
    const std::string field = "member '" + member.substr(0, 80) + "'";
    constexpr std::string_view kExt = ".npy";
    if (member.size() < kExt.size() || member.compare(member.size() - kExt.size(), kExt.size(), kExt) != 0)
      format_error(kNpz, path, 0, field, "is not a .npy file (an .npz holds only <name>.npy members)");
    std::string name = member.substr(0, member.size() - kExt.size());
    if (!names.insert(name).second) format_error(kNpz, path, 0, field, "two members of one name");
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      format_error(kNpz, path, 0, field, "is encrypted");
    if (st.comp_method != ZIP_CM_STORE && st.comp_method != ZIP_CM_DEFLATE)
      format_error(kNpz, path, 0, field,
                   "compression method " + std::to_string(st.comp_method) + " (wick reads stored and deflated)");
    if (st.comp_size > archive_bytes)
      format_error(kNpz, path, 0, field,
                   "compressed size " + std::to_string(st.comp_size) + " exceeds the archive's " +
                       std::to_string(archive_bytes) + " bytes");
    const uint64_t bound = st.comp_method == ZIP_CM_STORE ? st.comp_size : st.comp_size * kDeflateRatio + 1024;
    if (st.size > bound || st.size > static_cast<uint64_t>(kMaxMember))
      format_error(kNpz, path, 0, field,
                   "declares " + std::to_string(st.size) + " bytes from " + std::to_string(st.comp_size) +
                       " compressed ones (at most " + std::to_string(std::min<uint64_t>(bound, kMaxMember)) + ")");

    std::unique_ptr<zip_file_t, ZipFclose> zf(zip_fopen_index(za.get(), index, 0));
    if (!zf) format_error(kNpz, path, 0, field, std::string("cannot be opened: ") + zip_strerror(za.get()));
    Tensor buf = read_member(zf.get(), static_cast<int64_t>(st.size), path, field);
    zf.reset();

    const std::string label = path + ":" + member;
    NpyArray a = parse_npy(io::source_span(buf), kNpz, label);
    if (a.swap_size) swap_npy_bytes(mutable_bytes(buf) + a.tensor.offset, a.tensor.nbytes, a.swap_size);
    a.tensor.name = std::move(name);
    a.tensor.source = static_cast<int>(sources.size());
    tensors.push_back(std::move(a.tensor));
    sources.push_back(std::move(buf));
  }
  return io::finish_tensor_file({kNpz, path, std::move(sources), std::move(tensors)});
}

// An archive with no members: the end-of-central-directory record alone (libzip deletes the file
// of an empty archive instead of writing one).
void write_empty_zip(const std::string& path) {
  uint8_t eocd[22] = {'P', 'K', 5, 6};
  io::OutputFile out(path, kNpz);
  out.write(eocd, sizeof eocd);
  out.commit();
}

}  // namespace

NpyFile NpyFile::open(const std::string& path) { return NpyFile(npy_file(io::map_file(path, kNpy), path)); }

NpyFile NpyFile::from_memory(std::span<const uint8_t> data, std::string name) {
  return NpyFile(npy_file(io::copy_bytes(data), name));
}

Tensor load_npy(const std::string& path, const Device& device) { return NpyFile::open(path).tensor(device); }

std::vector<uint8_t> npy_bytes(const Tensor& t) {
  std::vector<uint8_t> out = npy_header(t);
  Tensor keep;
  const auto data = io::host_bytes(t, &keep);
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

void save_npy(const std::string& path, const Tensor& t) {
  const std::vector<uint8_t> header = npy_header(t);
  Tensor keep;
  const auto data = io::host_bytes(t, &keep);
  io::OutputFile out(path, kNpy);
  out.write(header);
  out.write(data);
  out.commit();
}

NpzFile NpzFile::open(const std::string& path) {
  // The mapping is needed only while the members are copied out.
  const Tensor archive = io::map_file(path, kNpz);
  return NpzFile(npz_file(io::source_span(archive), path));
}

NpzFile NpzFile::from_memory(std::span<const uint8_t> data, std::string name) { return NpzFile(npz_file(data, name)); }

void save_npz(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& arrays, bool compress) {
  struct Member {
    std::string name;
    std::vector<uint8_t> header;
    Tensor keep;
    std::span<const uint8_t> data;
  };
  std::vector<Member> members;
  members.reserve(arrays.size());
  std::unordered_set<std::string_view> names;
  for (const auto& [name, t] : arrays) {
    if (!names.insert(name).second) throw InvalidArgument("[npz] two arrays named '" + name + "'");
    Member& m = members.emplace_back();
    m.name = name + ".npy";
    m.header = npy_header(t);  // DTypeError for bf16 / f8e4m3, before anything is written
    m.data = io::host_bytes(t, &m.keep);
  }
  if (members.empty()) return write_empty_zip(path);

  // libzip writes the archive (through a temporary of its own) to a temporary name beside `path`,
  // renamed into place once complete, as io::OutputFile does.
  const std::string tmp = path + ".tmp" + std::to_string(std::random_device{}());
  int code = 0;
  zip_t* za = zip_open(tmp.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  if (!za) {
    zip_error_t e;
    zip_error_init_with_code(&e, code);
    const std::string m = "[npz] cannot create " + tmp + ": " + zip_error_strerror(&e);
    zip_error_fini(&e);
    throw IoError(m);
  }
  auto abandon = [&](const std::string& what) {
    const std::string m = "[npz] cannot write " + path + ": " + what + ": " + zip_strerror(za);
    zip_discard(za);
    std::remove(tmp.c_str());
    throw IoError(m);
  };
  for (Member& m : members) {
    zip_buffer_fragment_t parts[2] = {{m.header.data(), m.header.size()},
                                      {const_cast<uint8_t*>(m.data.data()), m.data.size()}};
    zip_source_t* s = zip_source_buffer_fragment(za, parts, m.data.empty() ? 1 : 2, 0);
    if (!s) abandon("member " + m.name);
    const zip_int64_t index = zip_file_add(za, m.name.c_str(), s, ZIP_FL_ENC_UTF_8);
    if (index < 0) {
      zip_source_free(s);
      abandon("member " + m.name);
    }
    if (zip_set_file_compression(za, static_cast<zip_uint64_t>(index), compress ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) !=
        0)
      abandon("member " + m.name);
  }
  if (zip_close(za) != 0) abandon("closing the archive");
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string m = "[npz] cannot rename the output to " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    throw IoError(m);
  }
}

}  // namespace wick
