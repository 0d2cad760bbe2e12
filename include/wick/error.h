// Typed errors. Every failure the library reports is an exception derived from wick::Error whose
// message starts with the op in brackets and names the shapes, dtypes and device involved:
//   [index_select] index 70000 out of range for dim 0 of size 65536 (cuda:0)
// The library never aborts or prints-and-exits.
#pragma once

#include <stdexcept>
#include <string>

namespace wick {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

#define WICK_ERROR_KINDS(X) \
  X(ShapeError)             \
  X(DTypeError)             \
  X(DeviceError)            \
  X(IndexError)             \
  X(UnsupportedError)       \
  X(OutOfMemory)            \
  X(FormatError)            \
  X(IoError)                \
  X(InvalidArgument)

#define WICK_X(name)                                      \
  class name : public Error {                             \
   public:                                                \
    explicit name(const std::string& msg) : Error(msg) {} \
  };
WICK_ERROR_KINDS(WICK_X)
#undef WICK_X

}  // namespace wick
