# The gemm/quantize subcommands, picked up by src/cli/CMakeLists.txt when their libraries exist.
if(TARGET w4a8_gemm_io AND TARGET w4a8_validate AND TARGET w4a8_py AND TARGET w4a8_kernels_host)
  set(W4A8_CLI_GEMM_SOURCES ${CMAKE_CURRENT_LIST_DIR}/gemm_command.cpp ${CMAKE_CURRENT_LIST_DIR}/quantize_command.cpp)
  set(W4A8_CLI_GEMM_LIBS w4a8_gemm_io w4a8_gemm w4a8_validate w4a8_py w4a8_kernels_host)
  # --impl cuda: the kernels' library defines W4A8_HAVE_CUDA for what links it.
  if(TARGET w4a8_kernels_cuda)
    list(APPEND W4A8_CLI_GEMM_LIBS w4a8_kernels_cuda)
  endif()
endif()
