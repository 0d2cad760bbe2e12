# Sourced by the GPU machine's scripts from the repository root: where scripts/gpu-deps.sh has
# unpacked the libraries that machine lacks (OpenBLAS, GoogleTest, libzip, PCRE2, ...) into .deps/root,
# points CMake and the dynamic loader at them, ahead of any paths already set.
if [ -d .deps/root ]; then
  deps=$(pwd)/.deps/root/usr
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CMAKE_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}
  export CMAKE_INCLUDE_PATH=$deps/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}
  export LD_LIBRARY_PATH=$deps/lib/x86_64-linux-gnu:$deps/lib/x86_64-linux-gnu/openblas-openmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
