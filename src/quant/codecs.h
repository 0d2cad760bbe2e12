// Every block codec (codec_legacy.h, codec_k.h) and the run-time format -> Codec<F> dispatch.
#pragma once

#include <utility>

#include "quant/codec.h"
#include "quant/codec_k.h"
#include "quant/codec_legacy.h"

namespace wick::quant {

// fn.template operator()<F>() for the format `f` (every format of WICK_QFORMATS has a codec).
template <class Fn>
decltype(auto) dispatch_qformat(QFormat f, Fn&& fn) {
  switch (f) {
#define WICK_X(e, name, id, elems, bytes) \
  case QFormat::e:                        \
    return std::forward<Fn>(fn).template operator()<QFormat::e>();
    WICK_QFORMATS(WICK_X)
#undef WICK_X
  }
  return std::forward<Fn>(fn).template operator()<QFormat::Q8_0>();  // not reached: f is a QFormat
}

}  // namespace wick::quant
