// User kernel modules: the per-device cache (Note [Kernel module cache] in wick/kernel.h) and
// CustomOp's argument checks. Compiling, loading and launching go through the backend.
#include "wick/kernel.h"

#include <algorithm>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "backend/backend.h"

namespace wick {

struct Module::Impl {
  struct Kernel {
    void* fn = nullptr;  // nullptr: the module has no kernel of that name
    std::vector<size_t> param_sizes;
  };

  Device device;
  std::string name;
  std::shared_ptr<void> native;  // the backend's loaded module

  // Kernels looked up so far (hits and misses), so that repeated launches by name stay cheap.
  Kernel kernel(const std::string& k) {
    std::lock_guard<std::mutex> g(mu_);
    const auto it = kernels_.find(k);
    if (it != kernels_.end()) return it->second;
    Kernel found;
    found.fn = backend_for(device).module_kernel(native, k, &found.param_sizes);
    kernels_.emplace(k, found);
    return found;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, Kernel> kernels_;
};

namespace {

std::string quoted(const std::string& s) { return "'" + s + "'"; }

const Module::Impl& impl_of(const Module& m, const char* op) {
  if (!m.defined()) throw InvalidArgument(std::string("[") + op + "] undefined module");
  return *m.impl();
}

// What a name stands for, to tell a repeated request from a different one under the same name.
std::string source_key(const std::string& source, const std::vector<std::string>& options) {
  std::string k = "source:";
  k += source;
  for (const std::string& o : options) {
    k += '\0';
    k += o;
  }
  return k;
}

std::string image_key(std::span<const uint8_t> image) {
  std::string k = "image:";
  k.append(reinterpret_cast<const char*>(image.data()), image.size());
  return k;
}

// One cached name. `mu` is held while the module is being built, so that concurrent first requests
// build once: the others wait on it and then find `module` set.
struct Slot {
  explicit Slot(std::string k) : key(std::move(k)) {}
  const std::string key;
  std::mutex mu;
  std::shared_ptr<Module::Impl> module;
  bool failed = false;  // the build threw; the slot has left the cache
};

struct Cache {
  std::mutex mu;  // guards slots and stats; never held while building
  std::unordered_map<std::string, std::shared_ptr<Slot>> slots;
  ModuleCacheStats stats;

  void count(int64_t ModuleCacheStats::*counter) {
    std::lock_guard<std::mutex> g(mu);
    ++(stats.*counter);
  }
};

Cache& cache_for(const Device& device) {
  static std::mutex mu;
  // Never destroyed: modules may be released by static objects after static destructors ran.
  static auto* caches = new std::map<std::pair<DeviceKind, int>, std::unique_ptr<Cache>>();
  std::lock_guard<std::mutex> g(mu);
  std::unique_ptr<Cache>& c = (*caches)[{device.kind(), device.ordinal()}];
  if (!c) c = std::make_unique<Cache>();
  return *c;
}

template <class Build>
Module cached(const Device& device, const char* op, const std::string& name, std::string key, Build&& build) {
  if (name.empty()) throw InvalidArgument(std::string("[") + op + "] a module needs a non-empty name");
  Backend& backend = backend_for(device);  // DeviceError for a device that is not there
  Cache& cache = cache_for(device);
  for (;;) {
    std::shared_ptr<Slot> slot;
    {
      std::lock_guard<std::mutex> g(cache.mu);
      std::shared_ptr<Slot>& s = cache.slots[name];
      if (!s) {
        s = std::make_shared<Slot>(std::move(key));
      } else if (s->key != key) {
        throw InvalidArgument(std::string("[") + op + "] a different module named " + quoted(name) +
                              " is already loaded on " + device.location() +
                              "; evict_module() it first to replace it, or choose another name");
      }
      slot = s;
    }
    std::lock_guard<std::mutex> building(slot->mu);
    if (slot->module) {
      cache.count(&ModuleCacheStats::hits);
      return Module(slot->module);
    }
    if (slot->failed) {
      key = slot->key;  // the request that built this slot failed and removed it: try afresh
      continue;
    }
    try {
      auto impl = std::make_shared<Module::Impl>();
      impl->device = device;
      impl->name = name;
      impl->native = build(backend, cache);
      cache.count(&ModuleCacheStats::loads);
      slot->module = impl;
      return Module(impl);
    } catch (...) {
      slot->failed = true;
      std::lock_guard<std::mutex> g(cache.mu);
      const auto it = cache.slots.find(name);
      if (it != cache.slots.end() && it->second == slot) cache.slots.erase(it);
      throw;
    }
  }
}

}  // namespace

// ---- Module ----------------------------------------------------------------------------------

const std::string& Module::name() const { return impl_of(*this, "module").name; }
const Device& Module::device() const { return impl_of(*this, "module").device; }
bool Module::has_kernel(const std::string& kernel) const {
  impl_of(*this, "module");
  return impl_->kernel(kernel).fn != nullptr;
}

Module compile_module(const Device& device, const std::string& name, const std::string& source,
                      const std::vector<std::string>& options) {
  return cached(device, "compile_module", name, source_key(source, options), [&](Backend& b, Cache& c) {
    const std::vector<uint8_t> image = b.compile_module_image(name, source, options);
    c.count(&ModuleCacheStats::compiles);
    return b.load_module_image(name, image);
  });
}

Module load_module(const Device& device, const std::string& name, std::span<const uint8_t> image) {
  return cached(device, "load_module", name, image_key(image),
                [&](Backend& b, Cache&) { return b.load_module_image(name, image); });
}

std::vector<uint8_t> compile_to_image(const Device& device, const std::string& name, const std::string& source,
                                      const std::vector<std::string>& options) {
  std::vector<uint8_t> image = backend_for(device).compile_module_image(name, source, options);
  cache_for(device).count(&ModuleCacheStats::compiles);
  return image;
}

bool evict_module(const Device& device, const std::string& name) {
  backend_for(device);
  Cache& cache = cache_for(device);
  std::lock_guard<std::mutex> g(cache.mu);
  return cache.slots.erase(name) > 0;
}

ModuleCacheStats module_cache_stats(const Device& device) {
  backend_for(device);
  Cache& cache = cache_for(device);
  std::lock_guard<std::mutex> g(cache.mu);
  ModuleCacheStats s = cache.stats;
  s.modules = 0;
  for (const auto& [name, slot] : cache.slots) s.modules += slot->module ? 1 : 0;
  return s;
}

// ---- launches --------------------------------------------------------------------------------

LaunchConfig LaunchConfig::linear(int64_t n, uint32_t block) {
  if (n < 0 || block == 0)
    throw InvalidArgument("[launch] linear launch of " + std::to_string(n) + " elements in blocks of " +
                          std::to_string(block));
  const int64_t blocks = std::max<int64_t>(1, (n + block - 1) / block);
  if (blocks > std::numeric_limits<int32_t>::max())
    throw InvalidArgument("[launch] " + std::to_string(n) + " elements need " + std::to_string(blocks) + " blocks of " +
                          std::to_string(block) + ", more than a grid holds");
  LaunchConfig c;
  c.grid = Dim3(static_cast<uint32_t>(blocks));
  c.block = Dim3(block);
  return c;
}

size_t KernelArg::size() const {
  switch (kind_) {
    case Kind::Tensor:
      return sizeof(void*);
    case Kind::I32:
      return sizeof(int32_t);
    case Kind::I64:
      return sizeof(int64_t);
    case Kind::F32:
      return sizeof(float);
    case Kind::F64:
      break;
  }
  return sizeof(double);
}

CustomOp::CustomOp(const Module& module, const std::string& kernel) : module_(module), kernel_(kernel) {
  impl_of(module_, "launch");
  const Module::Impl::Kernel k = module_.impl()->kernel(kernel);
  if (!k.fn)
    throw InvalidArgument("[launch] module " + quoted(module_.name()) + " on " + module_.device().location() +
                          " has no kernel " + quoted(kernel));
  fn_ = k.fn;
  param_sizes_ = k.param_sizes;
}

void CustomOp::launch(const LaunchConfig& config, std::span<const KernelArg> args) const {
  const Device& dev = module_.device();
  const std::string what = "kernel " + quoted(kernel_) + " of module " + quoted(module_.name());
  for (const Dim3* d : {&config.grid, &config.block})
    if (d->x == 0 || d->y == 0 || d->z == 0)
      throw InvalidArgument("[launch] " + what + ": grid and block dims must be at least 1, got grid (" +
                            std::to_string(config.grid.x) + ", " + std::to_string(config.grid.y) + ", " +
                            std::to_string(config.grid.z) + ") block (" + std::to_string(config.block.x) + ", " +
                            std::to_string(config.block.y) + ", " + std::to_string(config.block.z) + ")");
  if (!param_sizes_.empty() && param_sizes_.size() != args.size())
    throw InvalidArgument("[launch] " + what + " takes " + std::to_string(param_sizes_.size()) + " arguments, got " +
                          std::to_string(args.size()) + " (" + dev.location() + ")");

  std::vector<void*> pointers(args.size(), nullptr);  // the tensors' device pointers
  std::vector<void*> params(args.size(), nullptr);    // what the launch reads: one address per argument
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelArg& a = args[i];
    const std::string arg = "argument " + std::to_string(i);
    if (!param_sizes_.empty() && param_sizes_[i] != a.size())
      throw InvalidArgument("[launch] " + what + ": " + arg + " is " + std::to_string(a.size()) +
                            " bytes, the kernel's parameter " + std::to_string(param_sizes_[i]) + " (" +
                            dev.location() + ")");
    if (a.kind() != KernelArg::Kind::Tensor) {
      params[i] = const_cast<void*>(a.scalar());
      continue;
    }
    const Tensor& t = a.tensor();
    if (!t.defined()) throw InvalidArgument("[launch] " + what + ": " + arg + " is an undefined tensor");
    if (!t.device().same_device(dev))
      throw DeviceError("[launch] " + what + " runs on " + dev.location() + ", but " + arg + " (" + t.str() +
                        ") is on " + t.device().location());
    auto* base = static_cast<char*>(t.storage()->data());
    pointers[i] = base ? base + t.offset() * dtype_size(t.dtype()) : nullptr;
    params[i] = &pointers[i];
  }
  backend_for(dev).launch_module_kernel(fn_, config, params.data(), "launch");
}

}  // namespace wick
