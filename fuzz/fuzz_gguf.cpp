// libFuzzer target: the GGUF reader on arbitrary bytes. Any wick::Error is the expected outcome
// for a malformed file; anything else (a crash, a sanitizer report, another exception, a leak)
// is a finding.
#include <cstddef>
#include <cstdint>

#include "fuzz_touch.h"
#include "wick/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const wick::GgufFile f = wick::GgufFile::from_memory({data, size}, "fuzz.gguf");
    for (const auto& [key, value] : f.metadata().items()) wick::fuzz::touch(value.str());
    wick::fuzz::touch_tensors(f);
  } catch (const wick::Error&) {
  }
  return 0;
}
