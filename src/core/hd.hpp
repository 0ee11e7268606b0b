// W4A8_HD: a function usable on the host and, under nvcc, on the device (CuTe's CUTE_HOST_DEVICE).
// Defined once for the whole project: the scalar numerics (src/gemm/numerics.hpp) and the kernels'
// index math (kernels/index_math.hpp) both use it, so the CPU reference and the CUDA kernels
// compile the same definitions.
#pragma once

#if defined(__CUDACC__)
#define W4A8_HD __host__ __device__ inline
#else
#define W4A8_HD inline
#endif
