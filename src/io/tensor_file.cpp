// TensorFile: tensors of a file as views of its bytes on the CPU, streamed to GPUs.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>

#include "backend/backend.h"
#include "io/io_common.h"

namespace wick {

TensorFile::TensorFile() : impl_(std::make_shared<Impl>()) {}
TensorFile::~TensorFile() = default;
TensorFile::TensorFile(TensorFile&&) noexcept = default;
TensorFile& TensorFile::operator=(TensorFile&&) noexcept = default;
TensorFile::TensorFile(const TensorFile&) = default;
TensorFile& TensorFile::operator=(const TensorFile&) = default;
TensorFile::TensorFile(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

const std::string& TensorFile::path() const { return impl_->path; }
const std::vector<FileTensor>& TensorFile::tensors() const { return impl_->tensors; }

const FileTensor* TensorFile::find(std::string_view name) const {
  auto it = impl_->by_name.find(std::string(name));
  return it == impl_->by_name.end() ? nullptr : &impl_->tensors[it->second];
}

const FileTensor& TensorFile::info(std::string_view name) const {
  if (const FileTensor* t = find(name)) return *t;
  throw IndexError("[" + impl_->format + "] " + impl_->path + " has no tensor '" + std::string(name) + "'");
}

namespace {

std::string tag(const TensorFile::Impl& f, const FileTensor& t) {
  return "[" + f.format + "] " + f.path + ": tensor '" + t.name + "' (" + t.type + " " + t.shape.str() + ")";
}

// Draws "name  42% 3.1/7.4 GB  5.2 GB/s" on stderr when it is a terminal, and calls the user's
// callback; at most ten redraws a second.
class Progress {
 public:
  Progress(const LoadOptions& o, std::string label, int64_t total)
      : cb_(o.progress), bar_(o.progress_bar && isatty(STDERR_FILENO)), label_(std::move(label)), total_(total) {}
  ~Progress() {
    if (drawn_) std::fputc('\n', stderr);
  }
  void add(int64_t n) {
    done_ += n;
    if (cb_) cb_(done_, total_);
    if (!bar_) return;
    const auto now = Clock::now();
    if (done_ < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - start_).count();
    std::fprintf(stderr, "\r%s %3d%% %.2f/%.2f GB %.1f GB/s ", label_.c_str(),
                 total_ > 0 ? static_cast<int>(100 * done_ / total_) : 100, done_ / 1e9, total_ / 1e9,
                 s > 0 ? done_ / 1e9 / s : 0.0);
    drawn_ = true;
  }

 private:
  using Clock = std::chrono::steady_clock;
  LoadProgress cb_;
  bool bar_;
  std::string label_;
  int64_t total_, done_ = 0;
  bool drawn_ = false;
  Clock::time_point start_ = Clock::now(), last_{};
};

// Note [Streaming loads]
// A load to a GPU reads the file into a ring of page-locked buffers and queues each buffer's copy
// to the device as soon as it is full, so reading chunk i + 1 overlaps the transfer of chunk i; a
// buffer is refilled only after the fence recorded behind its copy. Reading is the host's side of
// the pipeline (page faults of the mapping, then a memcpy), so it runs on several threads: one
// thread's memcpy out of the page cache is slower than the copy engine. A single tensor() call
// goes through the backend's own staged copies instead (no ring to allocate for one tensor).
// The ring's size was measured (bench/RESULTS.md, model files): buffers that stay in the last-level
// cache between the host's write and the copy engine's read beat larger ones.
constexpr int64_t kChunk = int64_t{16} << 20;
constexpr int kRing = 3;

class Stager {
 public:
  explicit Stager(Backend& b) : b_(b) {}
  ~Stager() {
    for (int i = 0; i < kRing; ++i) {
      try {
        b_.fence_synchronize(fences_[i]);
      } catch (...) {
        // A faulted device: the buffer may still be read by a copy, so it is not freed.
        continue;
      }
      if (bufs_[i]) b_.free_pinned(bufs_[i]);
    }
  }
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  void copy(uint8_t* dst, const uint8_t* src, int64_t n, Progress* p) {
    for (int64_t done = 0; done < n; done += kChunk) {
      const int64_t len = std::min(kChunk, n - done);
      const int i = next_++ % kRing;
      b_.fence_synchronize(fences_[i]);
      fences_[i] = nullptr;
      if (!bufs_[i]) bufs_[i] = b_.alloc_pinned(kChunk);
      parallel_copy(static_cast<uint8_t*>(bufs_[i]), src + done, len);
      b_.copy_from_pinned_async(dst + done, bufs_[i], len);
      fences_[i] = b_.record_fence();
      if (p) p->add(len);
    }
  }

 private:
  // Each thread copies one contiguous piece (a multiple of 64 bytes).
  static void parallel_copy(uint8_t* dst, const uint8_t* src, int64_t n) {
    const int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 16);
    const int64_t piece = ((n + threads - 1) / threads + 63) / 64 * 64;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int k = 0; k < threads; ++k) {
      const int64_t at = k * piece;
      if (at < n) std::memcpy(dst + at, src + at, static_cast<size_t>(std::min(piece, n - at)));
    }
  }

  Backend& b_;
  void* bufs_[kRing] = {};
  std::shared_ptr<void> fences_[kRing];
  int next_ = 0;
};

// The stored bytes of t on `device`: a view of the source on the CPU, else streamed (through
// `stager` when given).
Tensor stored_bytes(const TensorFile::Impl& f, const FileTensor& t, const Device& device, Progress* p,
                    Stager* stager = nullptr) {
  const Tensor& src = f.sources[static_cast<size_t>(t.source)];
  Tensor view = src.narrow(0, t.offset, t.nbytes);
  if (device.is_cpu()) {
    if (p) p->add(t.nbytes);
    return view;
  }
  Tensor dst = Tensor::empty({t.nbytes}, DType::U8, device);
  Backend& b = backend_for(device);
  const uint8_t* from = io::source_span(src).data() + t.offset;
  auto* to = static_cast<uint8_t*>(dst.storage()->data()) + dst.offset();
  if (stager) {
    stager->copy(to, from, t.nbytes, p);
    return dst;
  }
  for (int64_t done = 0; done < t.nbytes; done += kChunk) {
    const int64_t n = std::min(kChunk, t.nbytes - done);
    b.copy_from_host_async(to + done, from + done, n);
    if (p) p->add(n);
  }
  return dst;
}

// A dense tensor of dtype d over `bytes` (u8, 1-d): a view when its offset suits d's alignment,
// else a copy; npy's Fortran order as reversed strides.
Tensor typed_view(const Tensor& bytes, const FileTensor& t, DType d) {
  const int64_t es = dtype_size(d);
  Shape shape = t.shape;
  if (t.column_major) std::reverse(shape.begin(), shape.end());
  Tensor out;
  const int64_t byte_off = bytes.offset();
  if (byte_off % es == 0) {
    out = Tensor(bytes.storage(), Layout(shape, byte_off / es), d, bytes.device());
  } else {
    // Only mapped CPU sources get here (device buffers start aligned).
    out = Tensor::empty(shape, d, bytes.device());
    if (t.nbytes > 0)
      std::memcpy(out.storage()->data(), static_cast<const uint8_t*>(bytes.storage()->data()) + byte_off,
                  static_cast<size_t>(t.nbytes));
  }
  if (t.column_major && shape.size() > 1) {
    Dims rev(shape.size());
    for (size_t i = 0; i < rev.size(); ++i) rev[i] = static_cast<int64_t>(rev.size() - 1 - i);
    out = out.permute(rev);
  }
  return out;
}

Tensor dense(const TensorFile::Impl& f, const FileTensor& t, const Device& device, Progress* p,
             Stager* stager = nullptr) {
  if (!t.dtype) {
    const std::string why =
        t.qformat ? "a quantized tensor: read it with qtensor()" : "no wick dtype: read its bytes()";
    throw DTypeError(tag(f, t) + " is " + why);
  }
  return typed_view(stored_bytes(f, t, device, p, stager), t, *t.dtype);
}

QTensor quantized(const TensorFile::Impl& f, const FileTensor& t, const Device& device, Progress* p,
                  Stager* stager = nullptr) {
  if (!t.qformat) throw DTypeError(tag(f, t) + " is not of a block format: read it with tensor()");
  return QTensor::from_bytes(stored_bytes(f, t, device, p, stager), *t.qformat, t.shape);
}

}  // namespace

Tensor TensorFile::tensor(std::string_view name, const Device& device) const {
  return dense(*impl_, info(name), device, nullptr);
}

QTensor TensorFile::qtensor(std::string_view name, const Device& device) const {
  return quantized(*impl_, info(name), device, nullptr);
}

Tensor TensorFile::bytes(std::string_view name, const Device& device) const {
  return stored_bytes(*impl_, info(name), device, nullptr);
}

std::map<std::string, LoadedTensor, std::less<>> TensorFile::load(const Device& device,
                                                                  const LoadOptions& options) const {
  std::vector<const FileTensor*> todo;
  if (options.names.empty()) {
    for (const FileTensor& t : impl_->tensors) todo.push_back(&t);
  } else {
    for (const std::string& n : options.names) todo.push_back(&info(n));
  }
  // Every tensor's kind is checked before any byte moves.
  int64_t total = 0;
  for (const FileTensor* t : todo) {
    if (!t->dtype && !t->qformat)
      throw DTypeError(tag(*impl_, *t) + " has no wick dtype or block format: read its bytes()");
    total += t->nbytes;
  }
  Progress progress(options, std::filesystem::path(impl_->path).filename().string(), total);
  std::map<std::string, LoadedTensor, std::less<>> out;
  std::unique_ptr<Stager> stager;
  if (!device.is_cpu()) stager = std::make_unique<Stager>(backend_for(device));
  Stager* s = stager.get();
  for (const FileTensor* t : todo) {
    LoadedTensor& l = out[t->name];
    if (t->qformat)
      l.qtensor = quantized(*impl_, *t, device, &progress, s);
    else
      l.tensor = dense(*impl_, *t, device, &progress, s);
  }
  stager.reset();  // waits for the copies out of its buffers
  if (!device.is_cpu()) device.synchronize();
  return out;
}

// ---- formats ---------------------------------------------------------------------------------

const char* file_format_name(FileFormat f) {
  switch (f) {
    case FileFormat::Gguf:
      return "gguf";
    case FileFormat::Safetensors:
      return "safetensors";
    case FileFormat::Npy:
      return "npy";
    case FileFormat::Npz:
      return "npz";
  }
  return "?";
}

FileFormat detect_file_format(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (const char* n : {"model.safetensors.index.json", "model.safetensors"})
      if (fs::exists(fs::path(path) / n, ec)) return FileFormat::Safetensors;
    throw FormatError("[open] " + path + ": a folder without model.safetensors or model.safetensors.index.json");
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw IoError("[open] cannot open " + path + ": " + std::strerror(errno));
  uint8_t head[9] = {};
  const size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n >= 4 && std::memcmp(head, "GGUF", 4) == 0) return FileFormat::Gguf;
  if (n >= 6 && std::memcmp(head, "\x93NUMPY", 6) == 0) return FileFormat::Npy;
  if (n >= 4 && (std::memcmp(head, "PK\x03\x04", 4) == 0 || std::memcmp(head, "PK\x05\x06", 4) == 0))
    return FileFormat::Npz;
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".safetensors" || ext == ".json" || (n == 9 && head[8] == '{')) return FileFormat::Safetensors;
  throw FormatError("[open] " + path + ": not a GGUF, safetensors, .npy or .npz file");
}

}  // namespace wick
