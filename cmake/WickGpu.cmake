# The GPU backends: the sources under src/gpu are compiled by nvcc into wick::cuda (WICK_CUDA=ON)
# and by clang's HIP mode into wick::rocm (WICK_ROCM=ON). See Note [One GPU source, two builds]
# in src/gpu/config.h. Included from the top CMakeLists.txt after the `wick` target exists.
#
#   cmake -S . -B build-cuda -G Ninja -DWICK_CUDA=ON [-DCMAKE_CUDA_ARCHITECTURES=90]
#   cmake -S . -B build-rocm -G Ninja -DWICK_ROCM=ON [-DCMAKE_HIP_ARCHITECTURES="gfx90a;gfx1030"]
#
# Device code (.cu) goes through the GPU compiler; host glue (.cpp) through the C++ compiler, once
# per backend with that backend's macros.

if(NOT WICK_CUDA AND NOT WICK_ROCM)
  return()
endif()

file(GLOB_RECURSE WICK_GPU_CU_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.cu)
file(GLOB_RECURSE WICK_GPU_CXX_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/gpu/*.cpp)
# Kernels whose results must be the CPU's bit for bit, compiled without FMA contraction (Note
# [Quantizer rounding] in src/quant/codec.h): nvcc --fmad=false, clang -ffp-contract=off.
set(WICK_GPU_NO_FMA_SOURCES ${PROJECT_SOURCE_DIR}/src/gpu/kernels/quant.cu)

# ---- CUDA ------------------------------------------------------------------------------------
if(WICK_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_90 machine code plus PTX for newer GPUs to JIT.
    set(CMAKE_CUDA_ARCHITECTURES "90-real;90-virtual" CACHE STRING "CUDA architectures")
  endif()
  # One CUDA runtime, the shared one (CUDA::cudart), for every target: CMake would otherwise add
  # cudart_static to each executable that links wick's CUDA objects, next to the shared library.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12.0)
    # CMake before 3.26 does not know that nvcc 12+ takes -std=c++20.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_COMPILE_FEATURES cuda_std_20)
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
  endif()

  add_library(wick_gpu_cuda OBJECT ${WICK_GPU_CU_SOURCES} ${WICK_GPU_CXX_SOURCES})
  set_property(SOURCE ${WICK_GPU_NO_FMA_SOURCES} APPEND PROPERTY COMPILE_OPTIONS $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>)
  target_compile_definitions(wick_gpu_cuda PRIVATE WICK_GPU_CUDA=1)
  target_include_directories(wick_gpu_cuda PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(wick_gpu_cuda PROPERTIES CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF
                                                 POSITION_INDEPENDENT_CODE ON)
  # --expt-relaxed-constexpr: kernels call constexpr host functions such as
  # std::numeric_limits<T>::max() through wick/dtype.h's convert().
  set(_wick_nvcc_warn "-Wall,-Wextra,-Wno-unused-parameter")
  target_compile_options(wick_gpu_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=${_wick_nvcc_warn}>
    $<$<COMPILE_LANGUAGE:CXX>:${WICK_WARNINGS}>)
  if(WICK_WERROR)
    target_compile_options(wick_gpu_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
  endif()
  target_link_libraries(wick_gpu_cuda PRIVATE CUDA::cudart CUDA::cublas CUDA::nvrtc)

  target_sources(wick PRIVATE $<TARGET_OBJECTS:wick_gpu_cuda>)
  set_target_properties(wick wick_gpu_cuda PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
                                                      CUDA_RUNTIME_LIBRARY Shared)
  target_compile_definitions(wick PRIVATE WICK_HAVE_CUDA=1)
  # NVRTC for user kernels compiled at run time (src/gpu/runtime/module.cu). Never CUDA::cuda_driver:
  # the library must load on machines without a driver.
  target_link_libraries(wick PUBLIC CUDA::cudart PRIVATE CUDA::cublas CUDA::nvrtc)
endif()

# ---- ROCm ------------------------------------------------------------------------------------
if(WICK_ROCM)
  if(CCACHE_PROGRAM)
    set(CMAKE_HIP_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
  set(WICK_HIP_EXTRA_FLAGS "")
  include(${CMAKE_CURRENT_LIST_DIR}/WickRocmDebian.cmake)
  if(NOT DEFINED CMAKE_HIP_ARCHITECTURES)
    # CDNA2 (wave64) and RDNA2 (wave32): both warp widths are compiled on every build.
    set(CMAKE_HIP_ARCHITECTURES "gfx90a;gfx1030" CACHE STRING "HIP architectures")
  endif()
  enable_language(HIP)
  find_package(hip REQUIRED CONFIG)

  # rocBLAS (matmul and conv, src/gpu/runtime/blas.cu). Debian 12 does not package it; Debian 13's
  # rocBLAS 5.5 is unpacked into .deps/rocm13 by scripts/fetch-rocblas.sh (nothing installed into the
  # system). A regular ROCm install (/opt/rocm) is found too.
  set(WICK_ROCBLAS_ROOT "${PROJECT_SOURCE_DIR}/.deps/rocm13" CACHE PATH
      "Prefix holding rocBLAS (usr/include/rocblas/rocblas.h); filled by scripts/fetch-rocblas.sh")
  find_path(WICK_ROCBLAS_INCLUDE_DIR rocblas/rocblas.h
            HINTS ${WICK_ROCBLAS_ROOT}/usr/include ${WICK_ROCBLAS_ROOT}/include /opt/rocm/include NO_DEFAULT_PATH)
  find_library(WICK_ROCBLAS_LIBRARY rocblas
               HINTS ${WICK_ROCBLAS_ROOT}/usr/lib/x86_64-linux-gnu ${WICK_ROCBLAS_ROOT}/lib /opt/rocm/lib
               NO_DEFAULT_PATH)
  if(NOT WICK_ROCBLAS_INCLUDE_DIR OR NOT WICK_ROCBLAS_LIBRARY)
    message(FATAL_ERROR "WICK_ROCM: the GPU matmul and convolutions need rocBLAS, not found under "
                        "WICK_ROCBLAS_ROOT=${WICK_ROCBLAS_ROOT} or /opt/rocm. Run scripts/fetch-rocblas.sh "
                        "(fetches Debian 13's rocBLAS 5.5 into .deps/rocm13) or set WICK_ROCBLAS_ROOT.")
  endif()
  add_library(wick_rocblas INTERFACE)
  target_include_directories(wick_rocblas SYSTEM INTERFACE $<BUILD_INTERFACE:${WICK_ROCBLAS_INCLUDE_DIR}>)
  target_link_libraries(wick_rocblas INTERFACE ${WICK_ROCBLAS_LIBRARY})
  if(WICK_ROCBLAS_LIBRARY MATCHES "^${WICK_ROCBLAS_ROOT}/")
    # Debian 13's librocblas.so needs glibc 2.38 and GCC 13's libstdc++, newer than Debian 12's:
    # executables link against it (its own undefined symbols left to the loader), but it loads
    # only on a system that has them (Debian 13, or a host with a matching ROCm).
    target_link_options(wick_rocblas INTERFACE "LINKER:--allow-shlib-undefined")
  endif()

  set(_wick_hip_sources)
  if(WICK_CUDA)
    # A source file has one LANGUAGE per directory, and the .cu files are CUDA here, so the HIP
    # build compiles generated .hip files that include them.
    foreach(src ${WICK_GPU_CU_SOURCES})
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR}/src/gpu ${src})
      string(REGEX REPLACE "\\.cu$" ".hip" rel "${rel}")
      set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/gpu-rocm/${rel})
      file(CONFIGURE OUTPUT ${wrapper} CONTENT "#include \"${src}\"\n")
      list(APPEND _wick_hip_sources ${wrapper})
      if(src IN_LIST WICK_GPU_NO_FMA_SOURCES)
        set_property(SOURCE ${wrapper} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
      endif()
    endforeach()
  else()
    set_source_files_properties(${WICK_GPU_CU_SOURCES} PROPERTIES LANGUAGE HIP)
    set_property(SOURCE ${WICK_GPU_NO_FMA_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -ffp-contract=off)
    set(_wick_hip_sources ${WICK_GPU_CU_SOURCES})
  endif()

  add_library(wick_gpu_rocm OBJECT ${_wick_hip_sources} ${WICK_GPU_CXX_SOURCES})
  target_compile_definitions(wick_gpu_rocm PRIVATE WICK_GPU_ROCM=1)
  target_include_directories(wick_gpu_rocm PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  set_target_properties(wick_gpu_rocm PROPERTIES HIP_STANDARD 20 HIP_STANDARD_REQUIRED ON HIP_EXTENSIONS OFF
                                                 POSITION_INDEPENDENT_CODE ON)
  target_compile_options(wick_gpu_rocm PRIVATE ${WICK_WARNINGS} $<$<COMPILE_LANGUAGE:HIP>:${WICK_HIP_EXTRA_FLAGS}>)
  # hipRTC for user kernels compiled at run time (src/gpu/runtime/module.cu): its own library and
  # CMake package since ROCm 5.3; before that (Debian 12's ROCm 5.2) part of libamdhip64, which
  # hip::host links already.
  find_package(hiprtc CONFIG QUIET)
  add_library(wick_hiprtc INTERFACE)
  set(WICK_HIPRTC_PACKAGE 0)
  if(TARGET hiprtc::hiprtc)
    target_link_libraries(wick_hiprtc INTERFACE hiprtc::hiprtc)
    set(WICK_HIPRTC_PACKAGE 1)
  endif()
  target_link_libraries(wick_gpu_rocm PRIVATE hip::host wick_rocblas wick_hiprtc)

  target_sources(wick PRIVATE $<TARGET_OBJECTS:wick_gpu_rocm>)
  # `wick` was created before the HIP language was enabled, so its property was not initialised.
  set_target_properties(wick PROPERTIES HIP_ARCHITECTURES "${CMAKE_HIP_ARCHITECTURES}")
  target_compile_definitions(wick PRIVATE WICK_HAVE_ROCM=1)
  target_link_libraries(wick PUBLIC hip::host PRIVATE wick_rocblas wick_hiprtc)
endif()
