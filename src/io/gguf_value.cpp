// GGUF metadata: GgufValue, GgufMetadata, and the encoding of a value in a file (read with the
// checks of Note [Untrusted sizes], written back in the same layout). The file structure around
// the values (header, tensor infos, data) is in gguf.cpp.
#include <charconv>
#include <cstring>
#include <type_traits>

#include "io/io_common.h"

namespace wick {

namespace {

constexpr GgufType kLastType = GgufType::F64;

bool is_scalar(GgufType t) { return t != GgufType::String && t != GgufType::Array; }

// Bytes of one element of a scalar type (a bool is one byte, 0 or 1); 0 for strings and arrays.
int64_t scalar_size(GgufType t) {
  switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::Bool:
      return 1;
    case GgufType::U16:
    case GgufType::I16:
      return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32:
      return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64:
      return 8;
    case GgufType::String:
    case GgufType::Array:
      return 0;
  }
  return 0;
}

template <class T>
constexpr GgufType type_of() {
  if constexpr (std::is_same_v<T, uint8_t>) return GgufType::U8;
  if constexpr (std::is_same_v<T, int8_t>) return GgufType::I8;
  if constexpr (std::is_same_v<T, uint16_t>) return GgufType::U16;
  if constexpr (std::is_same_v<T, int16_t>) return GgufType::I16;
  if constexpr (std::is_same_v<T, uint32_t>) return GgufType::U32;
  if constexpr (std::is_same_v<T, int32_t>) return GgufType::I32;
  if constexpr (std::is_same_v<T, float>) return GgufType::F32;
  if constexpr (std::is_same_v<T, bool>) return GgufType::Bool;
  if constexpr (std::is_same_v<T, uint64_t>) return GgufType::U64;
  if constexpr (std::is_same_v<T, int64_t>) return GgufType::I64;
  if constexpr (std::is_same_v<T, double>) return GgufType::F64;
}

// Strings and arrays of a file are capped at 1 GiB / 2^30 elements, as llama.cpp's reader caps them.
constexpr uint64_t kMaxLength = uint64_t{1} << 30;
// Arrays of arrays nest at most this deep: each level costs a stack frame when read.
constexpr int kMaxDepth = 16;

}  // namespace

const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::U8:
      return "u8";
    case GgufType::I8:
      return "i8";
    case GgufType::U16:
      return "u16";
    case GgufType::I16:
      return "i16";
    case GgufType::U32:
      return "u32";
    case GgufType::I32:
      return "i32";
    case GgufType::F32:
      return "f32";
    case GgufType::Bool:
      return "bool";
    case GgufType::String:
      return "string";
    case GgufType::Array:
      return "array";
    case GgufType::U64:
      return "u64";
    case GgufType::I64:
      return "i64";
    case GgufType::F64:
      return "f64";
  }
  return "?";
}

struct GgufValue::Impl {
  GgufType type = GgufType::U8;
  GgufType elem = GgufType::U8;      // arrays: the element type
  std::string key;                   // set by GgufMetadata::set and the reader
  std::vector<uint8_t> raw;          // a scalar, or the elements of an array of scalars, little-endian
  std::string text;                  // a string
  std::vector<std::string> strings;  // an array of strings
  std::vector<GgufValue> arrays;     // an array of arrays
};

// A default value is the u8 0; a moved-from one holds nothing and may only be assigned or destroyed.
GgufValue::GgufValue() : impl_(std::make_unique<Impl>()) { impl_->raw.assign(1, 0); }
GgufValue::~GgufValue() = default;
GgufValue::GgufValue(const GgufValue& o) : impl_(o.impl_ ? std::make_unique<Impl>(*o.impl_) : nullptr) {}
GgufValue::GgufValue(GgufValue&&) noexcept = default;
GgufValue& GgufValue::operator=(const GgufValue& o) {
  if (this != &o) impl_ = o.impl_ ? std::make_unique<Impl>(*o.impl_) : nullptr;
  return *this;
}
GgufValue& GgufValue::operator=(GgufValue&&) noexcept = default;
GgufValue::GgufValue(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

GgufValue scalar_value(GgufType t, const void* v) {
  GgufValue out;
  GgufValue::Impl& m = out.impl();
  m.type = t;
  m.raw.resize(static_cast<size_t>(scalar_size(t)));
  std::memcpy(m.raw.data(), v, m.raw.size());
  return out;
}

const GgufValue::Impl& checked(const std::unique_ptr<GgufValue::Impl>& p) {
  if (!p) throw InvalidArgument("[gguf] use of a moved-from GgufValue");
  return *p;
}

// type() checks for a moved-from value before impl() dereferences it.
const GgufValue::Impl& get(const GgufValue& v) {
  (void)v.type();
  return v.impl();
}

// "u32", "array[string]", "array[array]"
std::string describe(const GgufValue::Impl& m) {
  if (m.type != GgufType::Array) return gguf_type_name(m.type);
  return std::string("array[") + gguf_type_name(m.elem) + "]";
}

[[noreturn]] void mismatch(const GgufValue::Impl& m, const std::string& wanted) {
  const std::string who = m.key.empty() ? "a value" : "key '" + m.key + "'";
  throw FormatError("[gguf] " + who + " is " + describe(m) + ", not " + wanted);
}

template <class T>
T scalar_of(const GgufValue& v) {
  const GgufValue::Impl& m = get(v);
  if (m.type != type_of<T>()) mismatch(m, gguf_type_name(type_of<T>()));
  if constexpr (std::is_same_v<T, bool>) {
    return m.raw[0] != 0;
  } else {
    T out;
    std::memcpy(&out, m.raw.data(), sizeof(T));
    return out;
  }
}

}  // namespace

GgufValue GgufValue::u8(uint8_t v) { return scalar_value(GgufType::U8, &v); }
GgufValue GgufValue::i8(int8_t v) { return scalar_value(GgufType::I8, &v); }
GgufValue GgufValue::u16(uint16_t v) { return scalar_value(GgufType::U16, &v); }
GgufValue GgufValue::i16(int16_t v) { return scalar_value(GgufType::I16, &v); }
GgufValue GgufValue::u32(uint32_t v) { return scalar_value(GgufType::U32, &v); }
GgufValue GgufValue::i32(int32_t v) { return scalar_value(GgufType::I32, &v); }
GgufValue GgufValue::f32(float v) { return scalar_value(GgufType::F32, &v); }
GgufValue GgufValue::boolean(bool v) {
  const uint8_t b = v ? 1 : 0;
  return scalar_value(GgufType::Bool, &b);
}
GgufValue GgufValue::u64(uint64_t v) { return scalar_value(GgufType::U64, &v); }
GgufValue GgufValue::i64(int64_t v) { return scalar_value(GgufType::I64, &v); }
GgufValue GgufValue::f64(double v) { return scalar_value(GgufType::F64, &v); }
GgufValue GgufValue::string(std::string v) {
  auto m = std::make_unique<Impl>();
  m->type = GgufType::String;
  m->text = std::move(v);
  return GgufValue(std::move(m));
}

template <class T>
GgufValue GgufValue::array(const std::vector<T>& values) {
  auto m = std::make_unique<Impl>();
  m->type = GgufType::Array;
  m->elem = type_of<T>();
  m->raw.resize(values.size() * sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < values.size(); ++i) m->raw[i] = values[i] ? 1 : 0;
  } else if (!values.empty()) {
    std::memcpy(m->raw.data(), values.data(), m->raw.size());
  }
  return GgufValue(std::move(m));
}

GgufValue GgufValue::array_raw(GgufType elem, std::vector<uint8_t> little_endian_bytes) {
  if (static_cast<uint32_t>(elem) > static_cast<uint32_t>(kLastType) || !is_scalar(elem))
    throw InvalidArgument(std::string("[gguf] array_raw takes a scalar element type, not ") + gguf_type_name(elem));
  const auto size = static_cast<size_t>(scalar_size(elem));
  if (little_endian_bytes.size() % size != 0)
    throw InvalidArgument("[gguf] array_raw: " + std::to_string(little_endian_bytes.size()) +
                          " bytes are not a whole number of " + gguf_type_name(elem) + " elements");
  if (elem == GgufType::Bool)
    for (uint8_t b : little_endian_bytes)
      if (b > 1) throw InvalidArgument("[gguf] array_raw: a bool element is " + std::to_string(b) + ", not 0 or 1");
  auto m = std::make_unique<Impl>();
  m->type = GgufType::Array;
  m->elem = elem;
  m->raw = std::move(little_endian_bytes);
  return GgufValue(std::move(m));
}

GgufValue GgufValue::strings(std::vector<std::string> values) {
  auto m = std::make_unique<Impl>();
  m->type = GgufType::Array;
  m->elem = GgufType::String;
  m->strings = std::move(values);
  return GgufValue(std::move(m));
}

GgufValue GgufValue::arrays(std::vector<GgufValue> values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (get(values[i]).type != GgufType::Array)
      throw InvalidArgument("[gguf] arrays(): element " + std::to_string(i) + " is " + describe(values[i].impl()) +
                            ", not an array");
  auto m = std::make_unique<Impl>();
  m->type = GgufType::Array;
  m->elem = GgufType::Array;
  m->arrays = std::move(values);
  for (GgufValue& v : m->arrays) v.impl().key.clear();
  return GgufValue(std::move(m));
}

GgufType GgufValue::type() const { return checked(impl_).type; }
GgufType GgufValue::elem_type() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::Array) mismatch(m, "array");
  return m.elem;
}
const std::string& GgufValue::key() const { return get(*this).key; }

uint8_t GgufValue::as_u8() const { return scalar_of<uint8_t>(*this); }
int8_t GgufValue::as_i8() const { return scalar_of<int8_t>(*this); }
uint16_t GgufValue::as_u16() const { return scalar_of<uint16_t>(*this); }
int16_t GgufValue::as_i16() const { return scalar_of<int16_t>(*this); }
uint32_t GgufValue::as_u32() const { return scalar_of<uint32_t>(*this); }
int32_t GgufValue::as_i32() const { return scalar_of<int32_t>(*this); }
float GgufValue::as_f32() const { return scalar_of<float>(*this); }
bool GgufValue::as_bool() const { return scalar_of<bool>(*this); }
uint64_t GgufValue::as_u64() const { return scalar_of<uint64_t>(*this); }
int64_t GgufValue::as_i64() const { return scalar_of<int64_t>(*this); }
double GgufValue::as_f64() const { return scalar_of<double>(*this); }

const std::string& GgufValue::as_string() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::String) mismatch(m, "string");
  return m.text;
}

int64_t GgufValue::as_int() const {
  const Impl& m = get(*this);
  switch (m.type) {
    case GgufType::U8:
      return as_u8();
    case GgufType::I8:
      return as_i8();
    case GgufType::U16:
      return as_u16();
    case GgufType::I16:
      return as_i16();
    case GgufType::U32:
      return as_u32();
    case GgufType::I32:
      return as_i32();
    case GgufType::I64:
      return as_i64();
    case GgufType::U64: {
      int64_t v = 0;
      if (!io::fits_i64(as_u64(), &v))
        throw FormatError("[gguf] " + (m.key.empty() ? std::string("a value") : "key '" + m.key + "'") + " is u64 " +
                          std::to_string(as_u64()) + ", beyond int64");
      return v;
    }
    default:
      mismatch(m, "an integer");
  }
}

double GgufValue::as_float() const {
  const Impl& m = get(*this);
  if (m.type == GgufType::F32) return as_f32();
  if (m.type == GgufType::F64) return as_f64();
  mismatch(m, "f32 or f64");
}

size_t GgufValue::size() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::Array) mismatch(m, "array");
  if (m.elem == GgufType::String) return m.strings.size();
  if (m.elem == GgufType::Array) return m.arrays.size();
  return m.raw.size() / static_cast<size_t>(scalar_size(m.elem));
}

template <class T>
std::vector<T> GgufValue::as_array() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::Array || m.elem != type_of<T>())
    mismatch(m, std::string("array[") + gguf_type_name(type_of<T>()) + "]");
  std::vector<T> out(m.raw.size() / sizeof(T));
  if constexpr (std::is_same_v<T, bool>) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = m.raw[i] != 0;
  } else if (!out.empty()) {
    std::memcpy(out.data(), m.raw.data(), m.raw.size());
  }
  return out;
}

const std::vector<std::string>& GgufValue::as_strings() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::Array || m.elem != GgufType::String) mismatch(m, "array[string]");
  return m.strings;
}

const std::vector<GgufValue>& GgufValue::as_arrays() const {
  const Impl& m = get(*this);
  if (m.type != GgufType::Array || m.elem != GgufType::Array) mismatch(m, "array[array]");
  return m.arrays;
}

bool GgufValue::operator==(const GgufValue& o) const {
  // The key is where a value is stored, not part of it. Floats compare by their bits.
  const Impl &a = get(*this), &b = get(o);
  if (a.type != b.type) return false;
  if (a.type == GgufType::Array && a.elem != b.elem) return false;
  return a.raw == b.raw && a.text == b.text && a.strings == b.strings && a.arrays == b.arrays;
}

#define WICK_GGUF_ARRAY_TYPES(X) \
  X(uint8_t) X(int8_t) X(uint16_t) X(int16_t) X(uint32_t) X(int32_t) X(float) X(bool) X(uint64_t) X(int64_t) X(double)
#define WICK_X(T)                                                       \
  template GgufValue GgufValue::array<T>(const std::vector<T>& values); \
  template std::vector<T> GgufValue::as_array<T>() const;
WICK_GGUF_ARRAY_TYPES(WICK_X)
#undef WICK_X

// ---- rendering --------------------------------------------------------------------------------

namespace {

// At most `max` bytes of s, cut at a UTF-8 character boundary, quoted, with control characters,
// quotes and backslashes escaped.
std::string quoted(const std::string& s, size_t max) {
  size_t n = std::min(s.size(), max);
  while (n < s.size() && n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) --n;  // a continuation byte
  std::string out = "\"";
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += c == '\n'   ? std::string("\\n")
             : c == '\t' ? std::string("\\t")
                         : std::string("\\x") + hex[c >> 4] + hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
  if (n < s.size()) out += "...";
  return out;
}

template <class T>
std::string number(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  if constexpr (std::is_floating_point_v<T>) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);  // the shortest text that reads back the same
    return std::string(buf, r.ptr);
  } else {
    return std::to_string(v);
  }
}

std::string scalar_text(GgufType t, const uint8_t* p) {
  switch (t) {
    case GgufType::U8:
      return number<uint8_t>(p);
    case GgufType::I8:
      return number<int8_t>(p);
    case GgufType::U16:
      return number<uint16_t>(p);
    case GgufType::I16:
      return number<int16_t>(p);
    case GgufType::U32:
      return number<uint32_t>(p);
    case GgufType::I32:
      return number<int32_t>(p);
    case GgufType::F32:
      return number<float>(p);
    case GgufType::Bool:
      return *p ? "true" : "false";
    case GgufType::U64:
      return number<uint64_t>(p);
    case GgufType::I64:
      return number<int64_t>(p);
    case GgufType::F64:
      return number<double>(p);
    default:
      return "?";
  }
}

}  // namespace

std::string GgufValue::str() const {
  const Impl& m = get(*this);
  if (m.type == GgufType::String) return quoted(m.text, 60);
  if (m.type != GgufType::Array) return scalar_text(m.type, m.raw.data());
  // Arrays: the element type, the count and the first few elements: [u32 x 32000: 1, 2, 3, ...]
  constexpr size_t kShown = 4;
  const size_t n = size();
  std::string out = "[" + std::string(gguf_type_name(m.elem)) + " x " + std::to_string(n);
  for (size_t i = 0; i < std::min(n, kShown); ++i) {
    out += i == 0 ? ": " : ", ";
    if (m.elem == GgufType::String)
      out += quoted(m.strings[i], 20);
    else if (m.elem == GgufType::Array)
      out +=
          "[" + std::string(gguf_type_name(m.arrays[i].impl().elem)) + " x " + std::to_string(m.arrays[i].size()) + "]";
    else
      out += scalar_text(m.elem, m.raw.data() + i * static_cast<size_t>(scalar_size(m.elem)));
  }
  if (n > kShown) out += ", ...";
  return out + "]";
}

// ---- GgufMetadata -------------------------------------------------------------------------------

const GgufValue* GgufMetadata::find(std::string_view key) const {
  const auto it = index_.find(key);
  return it == index_.end() ? nullptr : &items_[it->second].second;
}

const GgufValue& GgufMetadata::get(std::string_view key) const {
  if (const GgufValue* v = find(key)) return *v;
  throw FormatError("[gguf] no metadata key '" + std::string(key) + "'");
}

void GgufMetadata::set(std::string key, GgufValue value) {
  if (key.empty()) throw InvalidArgument("[gguf] a metadata key must not be empty");
  (void)value.type();  // not a moved-from value
  value.impl().key = key;
  if (const auto it = index_.find(key); it != index_.end()) {
    items_[it->second].second = std::move(value);
    return;
  }
  index_.emplace(key, items_.size());
  items_.emplace_back(std::move(key), std::move(value));
}

bool GgufMetadata::erase(std::string_view key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return false;
  items_.erase(items_.begin() + static_cast<std::ptrdiff_t>(it->second));
  index_.clear();
  for (size_t i = 0; i < items_.size(); ++i) index_.emplace(items_[i].first, i);
  return true;
}

// ---- in a file ----------------------------------------------------------------------------------

namespace io {

void put_gguf_string(std::vector<uint8_t>& out, std::string_view s);

namespace {

std::string read_string(ByteReader& r, const std::string& field) {
  const int64_t at = r.pos();
  const auto n = r.read<uint64_t>(field);
  if (n > kMaxLength) r.fail_at(at, field, "string length " + std::to_string(n) + " exceeds the 1 GiB cap");
  if (static_cast<int64_t>(n) > r.remaining())
    r.fail_at(
        at, field,
        "string length " + std::to_string(n) + " exceeds the " + std::to_string(r.remaining()) + " bytes remaining");
  return std::string(r.take_chars(static_cast<int64_t>(n), field));
}

GgufType read_type(ByteReader& r, const std::string& field) {
  const int64_t at = r.pos();
  const auto t = r.read<uint32_t>(field);
  if (t > static_cast<uint32_t>(kLastType)) r.fail_at(at, field, "bad value type " + std::to_string(t));
  return static_cast<GgufType>(t);
}

void read_into(ByteReader& r, GgufValue::Impl& m, GgufType type, const std::string& field, int depth) {
  m.type = type;
  if (is_scalar(type)) {
    const auto s = r.take(scalar_size(type), field);
    if (type == GgufType::Bool && s[0] > 1)
      r.fail_at(r.pos() - 1, field, "bool value " + std::to_string(s[0]) + " (0 or 1 expected)");
    m.raw.assign(s.begin(), s.end());
    return;
  }
  if (type == GgufType::String) {
    m.text = read_string(r, field);
    return;
  }
  if (depth >= kMaxDepth) r.fail(field, "arrays nested deeper than " + std::to_string(kMaxDepth));
  m.elem = read_type(r, field + ".type");
  const int64_t at = r.pos();
  const auto count = r.read<uint64_t>(field + ".count");
  if (count > kMaxLength) r.fail_at(at, field + ".count", "array count " + std::to_string(count) + " exceeds 2^30");
  // Every element needs bytes of the file: its size for scalars, 8 (a string's length, an array's
  // count) at least for the others; checked by division, which cannot overflow.
  const int64_t min_elem = is_scalar(m.elem) ? scalar_size(m.elem) : 8;
  if (count > static_cast<uint64_t>(r.remaining()) / static_cast<uint64_t>(min_elem))
    r.fail_at(at, field + ".count",
              "array of " + std::to_string(count) + " " + gguf_type_name(m.elem) + " needs more than the " +
                  std::to_string(r.remaining()) + " bytes remaining");
  const auto n = static_cast<int64_t>(count);
  if (is_scalar(m.elem)) {
    const int64_t elems_at = r.pos();
    const auto s = r.take(n * min_elem, field);
    if (m.elem == GgufType::Bool)
      for (size_t i = 0; i < s.size(); ++i)
        if (s[i] > 1)
          r.fail_at(elems_at + static_cast<int64_t>(i), field,
                    "bool element " + std::to_string(i) + " is " + std::to_string(s[i]) + " (0 or 1 expected)");
    m.raw.assign(s.begin(), s.end());
  } else if (m.elem == GgufType::String) {
    m.strings.reserve(static_cast<size_t>(std::min<int64_t>(n, 1 << 16)));
    for (int64_t i = 0; i < n; ++i) m.strings.push_back(read_string(r, field));
  } else {
    m.arrays.reserve(static_cast<size_t>(std::min<int64_t>(n, 1 << 10)));
    for (int64_t i = 0; i < n; ++i) {
      GgufValue v;
      v.impl().raw.clear();
      read_into(r, v.impl(), GgufType::Array, field, depth + 1);
      m.arrays.push_back(std::move(v));
    }
  }
}

void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  put(out, &v, sizeof v);
}

void put_payload(std::vector<uint8_t>& out, const GgufValue::Impl& m, int depth) {
  if (is_scalar(m.type)) return put(out, m.raw.data(), m.raw.size());
  if (m.type == GgufType::String) return put_gguf_string(out, m.text);
  if (depth >= kMaxDepth)
    throw InvalidArgument("[gguf] key '" + m.key + "': arrays nested deeper than " + std::to_string(kMaxDepth));
  put(out, static_cast<uint32_t>(m.elem));
  if (m.elem == GgufType::String) {
    put(out, static_cast<uint64_t>(m.strings.size()));
    for (const std::string& s : m.strings) put_gguf_string(out, s);
  } else if (m.elem == GgufType::Array) {
    put(out, static_cast<uint64_t>(m.arrays.size()));
    for (const GgufValue& v : m.arrays) put_payload(out, v.impl(), depth + 1);
  } else {
    put(out, static_cast<uint64_t>(m.raw.size() / static_cast<size_t>(scalar_size(m.elem))));
    put(out, m.raw.data(), m.raw.size());
  }
}

}  // namespace

std::string read_gguf_string(ByteReader& r, const std::string& field) { return read_string(r, field); }

GgufValue read_gguf_value(ByteReader& r, const std::string& key, const std::string& field) {
  const GgufType type = read_type(r, field + ".type");
  GgufValue v;
  v.impl().raw.clear();
  v.impl().key = key;
  read_into(r, v.impl(), type, field + ".value", 0);
  return v;
}

void put_gguf_string(std::vector<uint8_t>& out, std::string_view s) {
  put(out, static_cast<uint64_t>(s.size()));
  put(out, s.data(), s.size());
}

void put_gguf_value(std::vector<uint8_t>& out, const GgufValue& v) {
  const GgufValue::Impl& m = get(v);
  put(out, static_cast<uint32_t>(m.type));
  put_payload(out, m, 0);
}

}  // namespace io

}  // namespace wick
