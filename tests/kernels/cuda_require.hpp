// Skips a GPU test, with the reason, when no CUDA device is usable (a skip is reported, never a pass).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "kernels/w4a8_cuda.h"

#define W4A8_REQUIRE_CUDA()                                                                     \
  do {                                                                                          \
    int code_ = 0;                                                                              \
    if (w4a8_cuda_device_count(&code_) <= 0)                                                    \
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount returned " << code_ << " ("          \
                   << cudaGetErrorString(static_cast<cudaError_t>(code_)) << ")";              \
  } while (0)
