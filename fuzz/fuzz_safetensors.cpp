// libFuzzer target: the safetensors reader on arbitrary bytes (Note in fuzz_gguf.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzz_touch.h"
#include "wick/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wick::SafetensorsFile f = wick::SafetensorsFile::from_memory({data, size}, "fuzz.safetensors");
    for (const auto& [key, value] : f.metadata()) wick::fuzz::touch(key + value);
    wick::fuzz::touch_tensors(f);
  } catch (const wick::Error&) {
  }
  return 0;
}
