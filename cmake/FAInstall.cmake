# Installs the fa compiler as a CMake package that a downstream project finds
# with find_package(FA CONFIG) and links through imported targets:
#
#   FA::MLIRFADialect, FA::MLIRFATransforms, FA::MLIRFAToGPU,
#   FA::MLIRFAPipelines   the C++ libraries (static, -fPIC)
#   FA::Compiler          all of the above plus the include directories
#   FA::CAPI              libFACAPI.so, the C API (FA_ENABLE_CAPI)
#   FA::Plugin            FAPlugin.so for mlir-opt (FA_ENABLE_PLUGIN)
#
# Layout under CMAKE_INSTALL_PREFIX: include/fa, include/fa-c (headers, .td
# and the generated .inc files), lib/ (libraries, FAPlugin.so), bin/fa-opt,
# lib/cmake/fa/FA{Config,ConfigVersion,Targets}.cmake.
#
# add_mlir_library installs every library into the export set it calls
# `MLIRTargets` (LLVM's naming scheme for a project named MLIR); we install
# that set as FATargets.cmake under the FA:: namespace. So a new
# add_mlir_library may link upstream MLIR libraries and other fa libraries,
# but not a plain CMake target outside the set (fa_runtime, say): CMake
# refuses to generate an export that names a target it cannot export.

include(CMakePackageConfigHelpers)

set(FA_INSTALL_PACKAGE_DIR "lib${LLVM_LIBDIR_SUFFIX}/cmake/fa" CACHE STRING
    "Where FAConfig.cmake is installed, relative to the prefix")
set(FA_PACKAGE_VERSION "0.1.0")

# FA_LIBRARIES: every fa library declared with add_mlir_library.
foreach(lib IN LISTS FA_LIBRARIES)
  target_include_directories(${lib} INTERFACE
    $<INSTALL_INTERFACE:include>)
  get_target_property(type ${lib} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    set_target_properties(${lib} PROPERTIES INSTALL_RPATH "${FA_INSTALL_RPATH}")
  endif()
endforeach()

# FA::Compiler: one target to link for the C++ API (dialect, passes,
# conversions, pipelines, InitAll.h).
add_library(FACompiler INTERFACE)
set_target_properties(FACompiler PROPERTIES EXPORT_NAME Compiler)
target_link_libraries(FACompiler INTERFACE
  MLIRFADialect MLIRFATransforms MLIRFAToGPU MLIRFAPipelines MLIR)
target_include_directories(FACompiler INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
  $<INSTALL_INTERFACE:include>)
install(TARGETS FACompiler EXPORT MLIRTargets)

# Headers: the sources, the TableGen inputs, and the generated .inc files.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fa
                  ${PROJECT_SOURCE_DIR}/include/fa-c
  DESTINATION include
  COMPONENT fa-headers
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
install(DIRECTORY ${PROJECT_BINARY_DIR}/include/fa
  DESTINATION include
  COMPONENT fa-headers
  FILES_MATCHING PATTERN "*.inc"
  PATTERN "CMakeFiles" EXCLUDE)

# The driver, runnable from the install tree.
if(TARGET fa-opt)
  set_target_properties(fa-opt PROPERTIES INSTALL_RPATH "${FA_INSTALL_RPATH}")
  install(TARGETS fa-opt RUNTIME DESTINATION bin COMPONENT fa-opt)
endif()

install(EXPORT MLIRTargets
  NAMESPACE FA::
  FILE FATargets.cmake
  DESTINATION ${FA_INSTALL_PACKAGE_DIR}
  COMPONENT fa-cmake-exports)

# FAConfig.cmake finds the very MLIR this tree was built against.
set(FA_CONFIG_MLIR_DIR "${MLIR_DIR}")
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/FAConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/FAConfig.cmake
  INSTALL_DESTINATION ${FA_INSTALL_PACKAGE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/FAConfigVersion.cmake
  VERSION ${FA_PACKAGE_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/FAConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/FAConfigVersion.cmake
  DESTINATION ${FA_INSTALL_PACKAGE_DIR}
  COMPONENT fa-cmake-exports)
