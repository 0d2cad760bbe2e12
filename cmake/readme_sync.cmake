# Fails when the README's C++ example differs from examples/quickstart.cpp.
file(READ ${SRC}/README.md readme)
file(READ ${SRC}/examples/quickstart.cpp example)
string(FIND "${readme}" "```cpp\n${example}```" at)
if(at EQUAL -1)
  message(FATAL_ERROR "README.md's example is not examples/quickstart.cpp; copy the file into the README")
endif()
