# Shared helpers for module CMake files.

# w4a8_test(NAME SOURCES... [LIBS libs...] [LABELS l...] [PREFIX p]): a GoogleTest (+RapidCheck) binary
# registered with ctest; PREFIX is prepended to every discovered test name (e.g. "gemm." for -R gemm).
# Every test links tests/support (w4a8_test_support: the one Python runner, support/python.hpp).
function(w4a8_test name)
  cmake_parse_arguments(T "" "PREFIX" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES} ${T_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE ${T_LIBS} w4a8_test_support rapidcheck_gtest rapidcheck GTest::gtest GTest::gtest_main Threads::Threads)
  target_compile_definitions(${name} PRIVATE
    W4A8_PYTHON="${W4A8_PYTHON}"
    W4A8_SOURCE_ROOT="${W4A8_SOURCE_ROOT}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_PREFIX "${T_PREFIX}" PROPERTIES LABELS "${T_LABELS}")
endfunction()
include(GoogleTest)
