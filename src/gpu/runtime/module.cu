// Kernel modules on the vendor runtimes (see module.h): NVRTC + the CUDA runtime's library
// management (cudaLibrary*, CUDA 12+), hipRTC + hipModule* on ROCm.
//
// Only the runtime library is used, never the CUDA driver library (libcuda): wick must load on
// machines without a driver, where device_count() is simply 0.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/runtime/module.h"
#include "gpu/runtime/vendor.cuh"
#include "wick/error.h"
#include "wick/kernel.h"

#if defined(WICK_GPU_CUDA)
#include <nvrtc.h>
#else
#include <hip/hiprtc.h>
#endif

namespace wick::WICK_GPU_NS::gpu {

namespace {

using error_t = WICK_VENDOR(Error_t);
constexpr error_t kSuccess = WICK_VENDOR(Success);

std::string where(int device) { return std::string(" (") + kBackendName + ":" + std::to_string(device) + ")"; }

std::string describe(error_t e) {
  return std::string(kBackendName) + " error " + WICK_VENDOR(GetErrorName)(e) + ": " + WICK_VENDOR(GetErrorString)(e);
}

// Errors that say the image is not loadable code, as opposed to a failing device.
bool is_format_error(error_t e) {
#if defined(WICK_GPU_CUDA)
  return e == cudaErrorInvalidKernelImage || e == cudaErrorNoKernelImageForDevice || e == cudaErrorInvalidPtx ||
         e == cudaErrorUnsupportedPtxVersion || e == cudaErrorInvalidSource || e == cudaErrorSharedObjectInitFailed;
#else
  return e == hipErrorInvalidImage || e == hipErrorNoBinaryForGpu || e == hipErrorInvalidKernelFile ||
         e == hipErrorInvalidSource || e == hipErrorSharedObjectInitFailed;
#endif
}

[[noreturn]] void raise_module_error(error_t e, const char* op, const std::string& module, int device,
                                     const std::string& detail = {}) {
  (void)WICK_VENDOR(GetLastError)();  // not sticky: leave no error behind in the last-error state
  std::string msg = std::string("[") + op + "] module '" + module + "': " + describe(e) + where(device);
  if (!detail.empty()) msg += "\n" + detail;
  if (is_format_error(e)) throw FormatError(msg);
  throw DeviceError(msg);
}

// ---- image checks ----------------------------------------------------------------------------
// The loaders take a bare pointer and read as far as the image's own headers say, so an image cut
// short would be read past its end. ELF images (cubin, code object), fat binaries and offload
// bundles are checked against their size here; PTX text goes to the JIT, which reports its errors.

template <class T>
T read_at(std::span<const uint8_t> b, uint64_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

bool fits(std::span<const uint8_t> b, uint64_t offset, uint64_t count, uint64_t each) {
  if (each != 0 && count > (UINT64_MAX - offset) / each) return false;
  return offset + count * each <= b.size();
}

bool starts_with(std::span<const uint8_t> b, const char* magic, size_t n) {
  return b.size() >= n && std::memcmp(b.data(), magic, n) == 0;
}

// Empty when `b` is a well-formed 64-bit little-endian ELF image as far as its tables go.
std::string elf_problem(std::span<const uint8_t> b) {
  if (b.size() < 64) return "ELF image shorter than its header";
  if (b[4] != 2 || b[5] != 1) return "not a 64-bit little-endian ELF image";
  const auto phoff = read_at<uint64_t>(b, 32), shoff = read_at<uint64_t>(b, 40);
  const auto phentsize = read_at<uint16_t>(b, 54), phnum = read_at<uint16_t>(b, 56);
  const auto shentsize = read_at<uint16_t>(b, 58), shnum = read_at<uint16_t>(b, 60);
  if (!fits(b, phoff, phnum, phentsize) || !fits(b, shoff, shnum, shentsize))
    return "ELF header tables extend past the end of the image (" + std::to_string(b.size()) + " bytes)";
  if (shnum != 0 && shentsize < 64) return "ELF section headers too small";
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t sh = shoff + i * shentsize;
    constexpr uint32_t kNoBits = 8;  // SHT_NOBITS: occupies no bytes in the file
    if (read_at<uint32_t>(b, sh + 4) == kNoBits) continue;
    if (!fits(b, read_at<uint64_t>(b, sh + 24), read_at<uint64_t>(b, sh + 32), 1))
      return "ELF section " + std::to_string(i) + " extends past the end of the image";
  }
  return {};
}

constexpr char kBundleMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
constexpr size_t kBundleMagicSize = sizeof(kBundleMagic) - 1;

// Clang offload bundle: magic, entry count, then per entry offset, size, id length and id.
std::string bundle_problem(std::span<const uint8_t> b) {
  uint64_t at = kBundleMagicSize;
  if (!fits(b, at, 1, 8)) return "offload bundle shorter than its header";
  const auto n = read_at<uint64_t>(b, at);
  at += 8;
  for (uint64_t i = 0; i < n; ++i) {
    if (!fits(b, at, 3, 8)) return "offload bundle entry table extends past the end of the image";
    const auto offset = read_at<uint64_t>(b, at), size = read_at<uint64_t>(b, at + 8);
    const auto id_len = read_at<uint64_t>(b, at + 16);
    at += 24;
    if (!fits(b, at, id_len, 1) || !fits(b, offset, size, 1))
      return "offload bundle entry " + std::to_string(i) + " extends past the end of the image";
    at += id_len;
  }
  return {};
}

#if defined(WICK_GPU_CUDA)
constexpr uint32_t kFatbinMagic = 0xBA55ED50u;

bool is_fatbin(std::span<const uint8_t> b) { return b.size() >= 4 && read_at<uint32_t>(b, 0) == kFatbinMagic; }

// nvcc's fat binary: magic, version (u16), header size (u16), size of the payload after the header
// (u64), as fatbinary.h of earlier toolkits declared it.
std::string fatbin_problem(std::span<const uint8_t> b) {
  if (b.size() < 16) return "fatbin shorter than its header";
  if (!fits(b, read_at<uint16_t>(b, 6), read_at<uint64_t>(b, 8), 1))
    return "fatbin extends past the end of the image (" + std::to_string(b.size()) + " bytes)";
  return {};
}
#endif

bool is_elf(std::span<const uint8_t> b) {
  return starts_with(b,
                     "\x7f"
                     "ELF",
                     4);
}

std::string image_problem(std::span<const uint8_t> b) {
  if (b.empty()) return "empty image";
  if (is_elf(b)) return elf_problem(b);
  if (starts_with(b, kBundleMagic, kBundleMagicSize)) return bundle_problem(b);
#if defined(WICK_GPU_ROCM)
  return "not a code object (neither ELF nor an offload bundle)";
#else
  if (is_fatbin(b)) return fatbin_problem(b);
  // PTX text: the JIT parses it, but only when a kernel is first needed (modules load lazily), so
  // text that is not PTX at all is refused here, where the caller expects load errors.
  const std::string_view text(reinterpret_cast<const char*>(b.data()), b.size());
  if (text.find(".version") == std::string_view::npos || text.find(".target") == std::string_view::npos)
    return "not a cubin, fatbin or PTX text (no .version / .target directive)";
  return {};
#endif
}

// ---- run-time compilation --------------------------------------------------------------------

[[noreturn]] void raise_compile_error(const std::string& name, const std::string& arch, int device,
                                      const std::string& what, const std::string& log) {
  std::string msg = "[compile_module] '" + name + "' for " + arch + ": " + what + where(device);
  if (!log.empty()) msg += "\n" + log;
  throw CompileError(msg);
}

#if defined(WICK_GPU_CUDA)

// The architecture NVRTC compiles for: the device's own sm (a cubin) when NVRTC knows it, else
// the newest virtual architecture below it (PTX, which the driver compiles forward).
struct Target {
  int sm = 0;
  bool cubin = true;
};

Target nvrtc_target(const std::string& name, const std::string& arch, int device) {
  const int sm = arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
  int n = 0;
  if (sm <= 0 || nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0)
    raise_compile_error(name, arch, device, "cannot determine an NVRTC target architecture", "");
  std::vector<int> archs(static_cast<size_t>(n));
  if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS)
    raise_compile_error(name, arch, device, "cannot list NVRTC's architectures", "");
  Target t;
  for (int a : archs) {
    if (a == sm) return Target{sm, true};
    if (a < sm && a > t.sm) t = Target{a, false};
  }
  if (t.sm == 0) raise_compile_error(name, arch, device, "NVRTC supports no architecture at or below it", "");
  return t;
}

#else

// hipRTC's documentation promises no thread safety, so compiles run one at a time. They are rare
// (the module cache compiles each name once) and never on a launch path.
std::mutex& hiprtc_mutex() {
  static std::mutex mu;
  return mu;
}

#endif

// The NVRTC and hipRTC calls used here share their names past the prefix.
#if defined(WICK_GPU_CUDA)
#define WICK_RTC(x) nvrtc##x
constexpr nvrtcResult kRtcSuccess = NVRTC_SUCCESS;
#else
#define WICK_RTC(x) hiprtc##x
constexpr hiprtcResult kRtcSuccess = HIPRTC_SUCCESS;
#endif
using rtc_result = WICK_RTC(Result);

struct Program {
  WICK_RTC(Program) p = nullptr;
  ~Program() {
    if (p) (void)WICK_RTC(DestroyProgram)(&p);
  }
  std::string log() const {
    size_t n = 0;
    if (WICK_RTC(GetProgramLogSize)(p, &n) != kRtcSuccess || n <= 1) return {};
    std::string s(n, '\0');
    if (WICK_RTC(GetProgramLog)(p, s.data()) != kRtcSuccess) return {};
    s.resize(std::strlen(s.c_str()));
    return s;
  }
};

// The compiled binary: a cubin or PTX text with its NUL (NVRTC), a code object (hipRTC).
rtc_result get_image(const Program& prog, bool cubin, std::vector<uint8_t>* image) {
  size_t n = 0;
#if defined(WICK_GPU_CUDA)
  rtc_result r = cubin ? nvrtcGetCUBINSize(prog.p, &n) : nvrtcGetPTXSize(prog.p, &n);
  if (r != kRtcSuccess) return r;
  image->resize(n);
  auto* out = reinterpret_cast<char*>(image->data());
  return cubin ? nvrtcGetCUBIN(prog.p, out) : nvrtcGetPTX(prog.p, out);
#else
  (void)cubin;
  rtc_result r = hiprtcGetCodeSize(prog.p, &n);
  if (r != kRtcSuccess) return r;
  image->resize(n);
  return hiprtcGetCode(prog.p, reinterpret_cast<char*>(image->data()));
#endif
}

}  // namespace

std::vector<uint8_t> compile_program(const std::string& name, const std::string& source,
                                     const std::vector<std::string>& options, const std::string& architecture,
                                     int device) {
  const std::string file = name + ".cu";
  std::vector<std::string> opts;
#if defined(WICK_GPU_CUDA)
  const Target target = nvrtc_target(name, architecture, device);
  const bool cubin = target.cubin;
  opts.push_back(std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") + std::to_string(target.sm));
#else
  std::lock_guard<std::mutex> one_at_a_time(hiprtc_mutex());
  constexpr bool cubin = false;  // hipRTC makes one kind of image
  opts.push_back("--gpu-architecture=" + architecture);
#endif
  opts.insert(opts.end(), options.begin(), options.end());
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());

  Program prog;
  rtc_result r = WICK_RTC(CreateProgram)(&prog.p, source.c_str(), file.c_str(), 0, nullptr, nullptr);
  if (r != kRtcSuccess) raise_compile_error(name, architecture, device, WICK_RTC(GetErrorString)(r), "");
  r = WICK_RTC(CompileProgram)(prog.p, static_cast<int>(argv.size()), argv.data());
  if (r != kRtcSuccess) raise_compile_error(name, architecture, device, WICK_RTC(GetErrorString)(r), prog.log());
  std::vector<uint8_t> image;
  r = get_image(prog, cubin, &image);
  if (r != kRtcSuccess) raise_compile_error(name, architecture, device, WICK_RTC(GetErrorString)(r), "");
  return image;
}

// ---- loading ---------------------------------------------------------------------------------

LoadedModule::LoadedModule(int device, const std::string& name, std::span<const uint8_t> image)
    : device_(device), name_(name) {
  const std::string problem = image_problem(image);
  if (!problem.empty()) throw FormatError("[load_module] module '" + name + "': " + problem + where(device));
  set_device(device);
#if defined(WICK_GPU_CUDA)
  // PTX text must end with a NUL; an image of another kind is passed as it is.
  std::vector<uint8_t> text;
  const void* code = image.data();
  if (!is_elf(image) && !is_fatbin(image) && image.back() != 0) {
    text.assign(image.begin(), image.end());
    text.push_back(0);
    code = text.data();
  }
  // The JIT's error log explains a PTX image that does not compile for this device.
  std::string log(4096, '\0');
  cudaJitOption jit_options[] = {cudaJitErrorLogBuffer, cudaJitErrorLogBufferSizeBytes};
  void* jit_values[] = {log.data(), reinterpret_cast<void*>(static_cast<uintptr_t>(log.size()))};
  cudaLibrary_t lib = nullptr;
  const error_t e = cudaLibraryLoadData(&lib, code, jit_options, jit_values, 2, nullptr, nullptr, 0);
  if (e != kSuccess) raise_module_error(e, "load_module", name, device, log.c_str());
  handle_ = lib;
#else
  hipModule_t mod = nullptr;
  const error_t e = hipModuleLoadData(&mod, image.data());
  if (e != kSuccess) raise_module_error(e, "load_module", name, device);
  handle_ = mod;
#endif
}

LoadedModule::~LoadedModule() {
  if (!handle_) return;
#if defined(WICK_GPU_CUDA)
  const error_t e = cudaLibraryUnload(static_cast<cudaLibrary_t>(handle_));
#else
  (void)hipSetDevice(device_);
  const error_t e = hipModuleUnload(static_cast<hipModule_t>(handle_));
#endif
  if (e != kSuccess) (void)WICK_VENDOR(GetLastError)();
}

void* LoadedModule::function(const std::string& kernel) const {
  set_device(device_);
#if defined(WICK_GPU_CUDA)
  cudaKernel_t k = nullptr;
  const error_t e = cudaLibraryGetKernel(&k, static_cast<cudaLibrary_t>(handle_), kernel.c_str());
  constexpr error_t kNotFound = cudaErrorSymbolNotFound;
#else
  hipFunction_t k = nullptr;
  const error_t e = hipModuleGetFunction(&k, static_cast<hipModule_t>(handle_), kernel.c_str());
  constexpr error_t kNotFound = hipErrorNotFound;
#endif
  if (e == kNotFound) {
    (void)WICK_VENDOR(GetLastError)();
    return nullptr;
  }
  if (e != kSuccess) raise_module_error(e, "launch", name_, device_, "looking up kernel '" + kernel + "'");
  return reinterpret_cast<void*>(k);
}

std::vector<size_t> kernel_param_sizes(void* fn) noexcept {
  std::vector<size_t> sizes;
#if defined(WICK_GPU_CUDA)
  try {
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      const error_t e = cudaFuncGetParamInfo(fn, i, &offset, &size);
      if (e == cudaErrorInvalidValue) break;  // past the last parameter
      if (e != kSuccess) {                    // a driver that cannot tell
        (void)cudaGetLastError();
        return {};
      }
      sizes.push_back(size);
    }
    (void)cudaGetLastError();
  } catch (...) {
    return {};
  }
#else
  (void)fn;  // HIP reports no parameter layout
#endif
  return sizes;
}

void launch_kernel(void* fn, const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes, void** args,
                   const Stream& s, const char* op) {
#if defined(WICK_GPU_CUDA)
  // fn is a cudaKernel_t, which the driver launches in the current context (Note [Kernel launches]);
  // on failure the runtime's launch names the error.
  if (driver_launch_kernel(fn, LaunchDims{{grid[0], grid[1], grid[2]}, {block[0], block[1], block[2]}, shared_bytes},
                           s.native(), args))
    return;
  const error_t e = cudaLaunchKernel(fn, dim3(grid[0], grid[1], grid[2]), dim3(block[0], block[1], block[2]), args,
                                     shared_bytes, native_stream(s.native()));
  const bool bad_config = e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue;
#else
  const error_t e = hipModuleLaunchKernel(static_cast<hipFunction_t>(fn), grid[0], grid[1], grid[2], block[0], block[1],
                                          block[2], shared_bytes, native_stream(s.native()), args, nullptr);
  const bool bad_config = e == hipErrorInvalidConfiguration || e == hipErrorInvalidValue;
#endif
  if (e == kSuccess) return;
  (void)WICK_VENDOR(GetLastError)();
  const std::string msg = std::string("[") + op + "] grid (" + std::to_string(grid[0]) + ", " +
                          std::to_string(grid[1]) + ", " + std::to_string(grid[2]) + ") block (" +
                          std::to_string(block[0]) + ", " + std::to_string(block[1]) + ", " + std::to_string(block[2]) +
                          ") shared " + std::to_string(shared_bytes) + ": " + describe(e) + where(s.device());
  if (bad_config) throw InvalidArgument(msg);
  throw DeviceError(msg);
}

}  // namespace wick::WICK_GPU_NS::gpu
