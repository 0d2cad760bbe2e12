# Install rules (WICK_INSTALL): the library, its public headers, the wick tool, the CMake package
# for find_package(wick CONFIG) and wick.pc for pkg-config. tests/consumer builds against them.
include(CMakePackageConfigHelpers)

set(WICK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/wick)
# The interface targets that carry wick's system libraries go into the export beside it: a static
# wick::wick names them among what it links.
set(_wick_export wick wick_openblas wick_libzip wick_pcre2)
if(WICK_ROCM)
  list(APPEND _wick_export wick_rocblas wick_hiprtc)
endif()
install(TARGETS ${_wick_export} EXPORT wickTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/wick DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_BINARY_DIR}/include/wick/version.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/wick)
if(WICK_TOOLS)
  install(TARGETS wick_tool RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT wickTargets NAMESPACE wick:: DESTINATION ${WICK_CMAKE_DIR})
if(NOT DEFINED WICK_HIPRTC_PACKAGE)
  set(WICK_HIPRTC_PACKAGE 0)
endif()
configure_package_config_file(cmake/wickConfig.cmake.in ${PROJECT_BINARY_DIR}/wickConfig.cmake
  INSTALL_DESTINATION ${WICK_CMAKE_DIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/wickConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/wickConfig.cmake ${PROJECT_BINARY_DIR}/wickConfigVersion.cmake
  DESTINATION ${WICK_CMAKE_DIR})

# wick.pc, relocatable (the prefix is found from the file's own directory). A static library lists
# its system libraries in Libs, so that `pkg-config --libs wick` is enough; a shared one in
# Libs.private.
set(_wick_pc_libs "-fopenmp -pthread ${WICK_OPENBLAS_LIBRARY} ${WICK_LIBZIP} ${WICK_PCRE2}")
if(WICK_CUDA)
  string(APPEND _wick_pc_libs " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lcublas -lnvrtc")
endif()
if(WICK_ROCM)
  string(APPEND _wick_pc_libs " ${WICK_ROCBLAS_LIBRARY} -lamdhip64")
endif()
if(BUILD_SHARED_LIBS)
  set(WICK_PC_LIBS "")
  set(WICK_PC_LIBS_PRIVATE "${_wick_pc_libs}")
else()
  set(WICK_PC_LIBS "${_wick_pc_libs}")
  set(WICK_PC_LIBS_PRIVATE "")
endif()
file(RELATIVE_PATH WICK_PC_UP ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
configure_file(cmake/wick.pc.in ${PROJECT_BINARY_DIR}/wick.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/wick.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
