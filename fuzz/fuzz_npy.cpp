// libFuzzer target: the .npy reader, and the .npz reader for inputs that start as a zip archive
// (Note in fuzz_gguf.cpp).
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fuzz_touch.h"
#include "wick/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    if (size >= 2 && std::memcmp(data, "PK", 2) == 0)
      wick::fuzz::touch_tensors(wick::NpzFile::from_memory({data, size}, "fuzz.npz"));
    else
      wick::fuzz::touch_tensors(wick::NpyFile::from_memory({data, size}, "fuzz.npy"));
  } catch (const wick::Error&) {
  }
  return 0;
}
