// What the fuzz targets do with a file that parsed: read every tensor the way a user would, so
// that a wrong offset or size shows up as an out-of-bounds read under AddressSanitizer.
#pragma once

#include <cstdint>
#include <string>

#include "wick/io.h"

namespace wick::fuzz {

inline volatile uint64_t sink;

inline void touch(const std::string& s) {
  uint64_t h = 0;
  for (char c : s) h = h * 31 + static_cast<unsigned char>(c);
  sink = sink + h;
}

inline void touch_tensors(const TensorFile& f) {
  for (const FileTensor& t : f.tensors()) {
    touch(t.name + t.type + t.shape.str());
    const Tensor b = f.bytes(t.name);
    // Every byte, through the library's own host copy.
    std::string bytes(static_cast<size_t>(b.numel()), '\0');
    b.to_host(bytes.data(), b.numel());
    touch(bytes);
    if (t.dtype) touch(f.tensor(t.name).contiguous().str());
    if (t.qformat) touch(f.qtensor(t.name).str());
  }
}

}  // namespace wick::fuzz
