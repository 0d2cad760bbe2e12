#include "io/io_common.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "backend/backend.h"

namespace wick::io {

void format_error(std::string_view format, std::string_view file, int64_t offset, std::string_view field,
                  std::string_view what) {
  std::string m = "[";
  m += format;
  m += "] ";
  m += file;
  m += ": byte " + std::to_string(offset) + ", ";
  m += field;
  m += ": ";
  m += what;
  throw FormatError(m);
}

namespace {

std::string os_error(std::string_view format, std::string_view what, const std::string& path) {
  std::string m = "[";
  m.append(format).append("] cannot ").append(what).append(" ").append(path).append(": ").append(std::strerror(errno));
  return m;
}

// Owns a read-only mapping; the last Tensor of the file releases it.
struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
  ~Mapping() {
    if (addr) munmap(addr, len);
  }
};

}  // namespace

Tensor map_file(const std::string& path, std::string_view format) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(os_error(format, "open", path));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const std::string m = os_error(format, "stat", path);
    ::close(fd);
    throw IoError(m);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw IoError("[" + std::string(format) + "] " + path + " is not a regular file");
  }
  const int64_t size = st.st_size;
  if (size == 0) {
    ::close(fd);
    return Tensor::empty({0}, DType::U8);
  }
  auto m = std::make_shared<Mapping>();
  m->len = static_cast<size_t>(size);
  void* addr = mmap(nullptr, m->len, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (addr == MAP_FAILED) {
    errno = err;
    throw IoError(os_error(format, "map", path));
  }
  m->addr = addr;
  // Weights are read front to back, once.
  madvise(addr, m->len, MADV_SEQUENTIAL);
  Backend& cpu = backend_for(Device::cpu());
  auto storage = std::make_shared<Storage>(&cpu, addr, size, std::shared_ptr<const void>(m), /*read_only=*/true);
  return Tensor(std::move(storage), Layout(Shape{size}), DType::U8, Device::cpu());
}

Tensor copy_bytes(std::span<const uint8_t> bytes) {
  const auto n = static_cast<int64_t>(bytes.size());
  Tensor t = Tensor::empty({n}, DType::U8);
  if (n > 0) std::memcpy(t.storage()->data(), bytes.data(), bytes.size());
  return t;
}

std::span<const uint8_t> source_span(const Tensor& source) {
  if (source.numel() == 0) return {};
  return {static_cast<const uint8_t*>(source.storage()->data()) + source.offset(), static_cast<size_t>(source.numel())};
}

std::span<const uint8_t> host_bytes(const Tensor& t, Tensor* keep) {
  Tensor c = t;
  if (!c.device().is_cpu()) c = c.to(Device::cpu());
  c = c.contiguous();
  *keep = c;
  const int64_t n = c.numel() * dtype_size(c.dtype());
  if (n == 0) return {};
  return {static_cast<const uint8_t*>(c.storage()->data()) + c.offset() * dtype_size(c.dtype()),
          static_cast<size_t>(n)};
}

TensorFile finish_tensor_file(TensorFileBuilder b) {
  auto impl = std::make_shared<TensorFile::Impl>();
  impl->format = std::move(b.format);
  impl->path = std::move(b.path);
  impl->by_name.reserve(b.tensors.size());
  for (size_t i = 0; i < b.tensors.size(); ++i) {
    const FileTensor& t = b.tensors[i];
    auto fail = [&](const std::string& what) {
      throw FormatError("[" + impl->format + "] " + impl->path + ": tensor '" + t.name + "': " + what);
    };
    if (t.source < 0 || static_cast<size_t>(t.source) >= b.sources.size()) fail("no such source");
    const int64_t size = b.sources[static_cast<size_t>(t.source)].numel();
    int64_t end = 0;
    if (t.offset < 0 || t.nbytes < 0 || !add_ok(t.offset, t.nbytes, &end) || end > size)
      fail("bytes [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) + ") outside the " +
           std::to_string(size) + " bytes of its file");
    // Layout computes strides as products of the later dims, so even a tensor with a zero dim
    // must have a product of its other dims that fits.
    int64_t numel = 1, span = 1;
    for (int64_t d : t.shape) {
      if (d < 0 || !mul_ok(span, std::max<int64_t>(d, 1), &span)) fail("dims " + t.shape.str() + " overflow int64");
      numel = d == 0 ? 0 : numel;
    }
    if (numel != 0) numel = span;
    if (t.dtype) {
      int64_t want = 0;
      if (!mul_ok(numel, dtype_size(*t.dtype), &want) || want != t.nbytes)
        fail(std::to_string(t.nbytes) + " bytes for " + t.shape.str() + " " + std::string(dtype_name(*t.dtype)));
    }
    if (!impl->by_name.emplace(t.name, i).second) fail("a second tensor of this name");
  }
  impl->sources = std::move(b.sources);
  impl->tensors = std::move(b.tensors);
  return TensorFile(std::move(impl));
}

// ---- output ----------------------------------------------------------------------------------

OutputFile::OutputFile(const std::string& path, std::string_view format) : path_(path), format_(format) {
  std::random_device rd;
  tmp_ = path + ".tmp" + std::to_string(rd());
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw IoError(os_error(format_, "create", tmp_));
}

OutputFile::~OutputFile() {
  if (f_) {
    std::fclose(static_cast<FILE*>(f_));
    std::remove(tmp_.c_str());
  }
}

void OutputFile::write(const void* data, int64_t n) {
  if (n <= 0) return;
  if (std::fwrite(data, 1, static_cast<size_t>(n), static_cast<FILE*>(f_)) != static_cast<size_t>(n))
    throw IoError(os_error(format_, "write", tmp_));
  written_ += n;
}

void OutputFile::zeros(int64_t n) {
  static const uint8_t z[256] = {};
  while (n > 0) {
    const int64_t k = std::min<int64_t>(n, sizeof z);
    write(z, k);
    n -= k;
  }
}

void OutputFile::commit() {
  auto* f = static_cast<FILE*>(f_);
  f_ = nullptr;
  if (std::fflush(f) != 0 || std::fclose(f) != 0) {
    const std::string m = os_error(format_, "write", tmp_);
    std::remove(tmp_.c_str());
    throw IoError(m);
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string m = os_error(format_, "rename the output to", path_);
    std::remove(tmp_.c_str());
    throw IoError(m);
  }
}

}  // namespace wick::io
