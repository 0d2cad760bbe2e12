# Makes CMake's HIP language work with Debian's ROCm packages (Debian 12: hipcc 5.2, clang 15;
# apt-get install hipcc libamdhip64-dev libamd-comgr-dev libhsa-runtime-dev rocm-device-libs).
# A full ROCm install under /opt/rocm needs none of this, and anything the user sets (HIPCXX,
# CMAKE_HIP_COMPILER, CMAKE_HIP_COMPILER_ROCM_ROOT, HIPFLAGS) is left alone.
#
# Debian puts the ROCm CMake packages and device libraries under lib/x86_64-linux-gnu/ where
# CMake's HIP support does not look:
#  - the HIP compiler is the distribution's clang (clang++-15), not a ROCm clang;
#  - CMake looks for <rocm root>/lib/cmake/hip-lang, so we point the ROCm root at a directory in
#    the build tree holding that one symlink;
#  - clang needs --rocm-path and the bitcode directory to find the device libraries.

set(_wick_deb_cmake /usr/lib/x86_64-linux-gnu/cmake)
set(_wick_deb_bitcode /usr/lib/x86_64-linux-gnu/amdgcn/bitcode)
if(NOT EXISTS ${_wick_deb_cmake}/hip-lang/hip-lang-config.cmake OR EXISTS /opt/rocm/lib/cmake/hip-lang)
  return()  # not the Debian layout: a regular ROCm install, found by CMake's own rules
endif()

if(NOT CMAKE_HIP_COMPILER AND NOT DEFINED ENV{HIPCXX})
  foreach(v 17 16 15)
    if(EXISTS /usr/bin/clang++-${v} AND EXISTS /usr/lib/llvm-${v}/lib/clang)
      set(CMAKE_HIP_COMPILER /usr/bin/clang++-${v} CACHE FILEPATH "HIP compiler (Debian's clang)")
      break()
    endif()
  endforeach()
endif()

if(NOT CMAKE_HIP_COMPILER_ROCM_ROOT)
  set(_wick_rocm_root ${CMAKE_BINARY_DIR}/rocm-root)
  file(MAKE_DIRECTORY ${_wick_rocm_root}/lib/cmake)
  if(NOT EXISTS ${_wick_rocm_root}/lib/cmake/hip-lang)
    file(CREATE_LINK ${_wick_deb_cmake}/hip-lang ${_wick_rocm_root}/lib/cmake/hip-lang SYMBOLIC)
  endif()
  set(CMAKE_HIP_COMPILER_ROCM_ROOT ${_wick_rocm_root} CACHE PATH "ROCm root for CMake's HIP language")
endif()

# hip-lang's own dependencies (amd_comgr, hsa-runtime64) are found from the try_compile projects
# of enable_language(HIP) too, which see the environment but not this project's variables.
list(APPEND CMAKE_PREFIX_PATH ${_wick_deb_cmake})
if(NOT "$ENV{CMAKE_PREFIX_PATH}" MATCHES "x86_64-linux-gnu/cmake")
  if(DEFINED ENV{CMAKE_PREFIX_PATH} AND NOT "$ENV{CMAKE_PREFIX_PATH}" STREQUAL "")
    set(ENV{CMAKE_PREFIX_PATH} "$ENV{CMAKE_PREFIX_PATH}:${_wick_deb_cmake}")
  else()
    set(ENV{CMAKE_PREFIX_PATH} "${_wick_deb_cmake}")
  endif()
endif()

if(NOT DEFINED ENV{HIPFLAGS} AND NOT CMAKE_HIP_FLAGS AND EXISTS ${_wick_deb_bitcode})
  # Read by enable_language(HIP), which also compiles its test programs with them.
  set(ENV{HIPFLAGS} "--rocm-path=/usr --rocm-device-lib-path=${_wick_deb_bitcode}")
endif()

# clang reads the HIP version from a file Debian does not ship and takes 3.5 for it; below 4 it
# skips the implicit -include __clang_hip_runtime_wrapper.h, which defines __host__ / __device__
# and the device math functions, so headers included before hip_runtime.h would not compile.
# hipcc passes the version from /usr/share/hip/version; so do we, for wick's own sources only
# (in enable_language's test programs the wrapper meets an -isystem /usr/include that breaks
# <cmath>; in real targets CMake drops that implicit directory).
set(WICK_HIP_EXTRA_FLAGS "")
if(EXISTS /usr/share/hip/version)
  file(STRINGS /usr/share/hip/version _wick_v REGEX "^HIP_VERSION_(MAJOR|MINOR|PATCH)=")
  set(_wick_hip_version "")
  foreach(part MAJOR MINOR PATCH)
    foreach(line ${_wick_v})
      if(line MATCHES "^HIP_VERSION_${part}=([0-9]+)")
        list(APPEND _wick_hip_version ${CMAKE_MATCH_1})
      endif()
    endforeach()
  endforeach()
  list(LENGTH _wick_hip_version _wick_n)
  if(_wick_n EQUAL 3)
    list(JOIN _wick_hip_version "." _wick_hip_version)
    set(WICK_HIP_EXTRA_FLAGS --hip-version=${_wick_hip_version})
  endif()
endif()
