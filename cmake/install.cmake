# `cmake --install build [--prefix P]`: the validator and the reference GEMM as static libraries
# with their headers, a package config for find_package(w4a8check 0.2 REQUIRED) exporting
# w4a8check::validate, w4a8check::gemm, w4a8check::gemm_io and their dependencies (core, json, py,
# safetensors), the w4a8check executable and the kernel plugin modules (lib/w4a8check/, where the
# executable looks for them). examples/consumer/ is a project using it (ci/test-install.sh).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(W4A8_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/w4a8check)
set(W4A8_INSTALL_INCLUDEDIR ${CMAKE_INSTALL_INCLUDEDIR}/w4a8check)

# Installed name = the target's name without "w4a8_": w4a8check::core, ::json, ...
set(W4A8_EXPORTED_LIBS w4a8_core w4a8_json w4a8_py w4a8_safetensors w4a8_validate w4a8_gemm w4a8_gemm_io)
foreach(lib ${W4A8_EXPORTED_LIBS})
  string(REGEX REPLACE "^w4a8_" "" short ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${short})
  target_include_directories(${lib} INTERFACE $<INSTALL_INTERFACE:${W4A8_INSTALL_INCLUDEDIR}>)
  add_library(w4a8check::${short} ALIAS ${lib})
endforeach()

install(TARGETS ${W4A8_EXPORTED_LIBS} EXPORT w4a8checkTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# Headers keep their module directories ("validate/inspect.hpp"), as inside the source tree; the
# .def tables are part of the headers that include them.
foreach(dir core json py safetensors validate gemm)
  install(DIRECTORY ${W4A8_SOURCE_ROOT}/src/${dir} DESTINATION ${W4A8_INSTALL_INCLUDEDIR}
          FILES_MATCHING PATTERN "*.hpp" PATTERN "*.def")
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/generated/core/version.hpp DESTINATION ${W4A8_INSTALL_INCLUDEDIR}/core)
# The kernel plugin ABI, for plugin authors.
install(FILES ${W4A8_SOURCE_ROOT}/kernels/w4a8_cuda.h DESTINATION ${W4A8_INSTALL_INCLUDEDIR}/kernels)

install(EXPORT w4a8checkTargets NAMESPACE w4a8check:: DESTINATION ${W4A8_INSTALL_CMAKEDIR})
configure_package_config_file(${W4A8_SOURCE_ROOT}/cmake/w4a8checkConfig.cmake.in
  ${CMAKE_BINARY_DIR}/w4a8checkConfig.cmake INSTALL_DESTINATION ${W4A8_INSTALL_CMAKEDIR}
  PATH_VARS W4A8_INSTALL_INCLUDEDIR)
# 0.2.x accepts requests for 0.2 (and 0.2.y <= x); a different minor is another package.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/w4a8checkConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/w4a8checkConfig.cmake ${CMAKE_BINARY_DIR}/w4a8checkConfigVersion.cmake
        DESTINATION ${W4A8_INSTALL_CMAKEDIR})

# The executable and the plugin modules it loads with dlopen (../lib/w4a8check/ from bin/).
install(TARGETS w4a8check RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(W4A8_INSTALLED_MODULES w4a8check_emulate)
if(W4A8_HAVE_CUDA)
  list(APPEND W4A8_INSTALLED_MODULES w4a8check_cuda)
endif()
install(TARGETS ${W4A8_INSTALLED_MODULES} LIBRARY DESTINATION lib/w4a8check)

# The example kernel plugin's source, to start a plugin from outside the repository (built against
# the installed header: cc ... -I PREFIX/include/w4a8check/kernels).
install(FILES ${W4A8_SOURCE_ROOT}/examples/plugins/w4a8_example_plugin.c DESTINATION ${CMAKE_INSTALL_DATADIR}/w4a8check/examples)
