# Fails when a C++ example of the README differs from its file in examples/.
file(READ ${SRC}/README.md readme)
foreach(name quickstart model_files)
  file(READ ${SRC}/examples/${name}.cpp example)
  string(FIND "${readme}" "```cpp\n${example}```" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "README.md does not hold examples/${name}.cpp; copy the file into the README")
  endif()
endforeach()
