// The correction path (weight_correction present): dequantize W_rot = w_q * s_channel + correction,
// un-rotate it (ConvRot is its own inverse), then out = x @ W^T with a float32 cuBLAS GEMM and the
// reference's rounding/bias order in a small finishing kernel. The float GEMM's summation order is
// cuBLAS's, so only w_dequant is bit-exact; out agrees with the reference up to that order.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/launch.hpp"

namespace w4a8::kern {
namespace {

// One block per weight row n; the row lives in dynamic shared memory as float32.
__global__ void __launch_bounds__(kActThreads) dequant_kernel(const CorrectionArgs c, w4a8_dtype gemm_dtype) {
  extern __shared__ float row[];
  const int t = static_cast<int>(threadIdx.x);
  const long long n = blockIdx.x;
  const std::uint8_t* codes = c.weight + n * (c.k / 2);
  const gemm::FloatDtype gd = float_dtype(gemm_dtype);
  for (long long j = t; j < c.k; j += kActThreads) {
    const std::uint8_t s = c.s_rel[s_rel_index(n, j, c.k, c.group)];
    const std::int8_t w =
        gemm::decode_weight(static_cast<std::uint8_t>(nibble(codes[j / 2], static_cast<int>(j & 1))), s, c.codebook);
    row[j] = gemm::corrected_weight(w, c.s_channel[n], c.correction[(j / c.group) * c.n + n], gd);
  }
  for (long long s = 1; s < c.r; s *= 4) {
    __syncthreads();
    for (long long b = t; b < c.k / 4; b += kActThreads) rotate_butterfly(row, b, c.r, s);
  }
  __syncthreads();
  for (long long j = t; j < c.k; j += kActThreads) c.w_dequant[n * c.k + j] = gemm::round_to(gd, row[j]);
}

// x (any float dtype, stride ldx) -> contiguous f32 [M, K].
__global__ void to_f32_kernel(const void* x, w4a8_dtype dtype, long long ldx, long long m, long long k, float* y) {
  const long long total = m * k;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    y[i] = load_as_f32(x, (i / k) * ldx + i % k, dtype);
}

__global__ void finish_kernel(const float* sum, long long m, long long n, const void* bias, w4a8_dtype bias_dtype,
                              w4a8_dtype gemm_dtype, void* out, w4a8_dtype out_dtype, long long ldo) {
  const long long total = m * n;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const long long r = i / n, col = i % n;
    const float b = bias ? load_as_f32(bias, col, bias_dtype) : 0.f;
    store_from_f32(out, r * ldo + col, out_dtype,
                   gemm::corrected_output(sum[i], bias != nullptr, b, float_dtype(gemm_dtype), float_dtype(out_dtype)));
  }
}

unsigned grid_for(long long total) {
  const long long b = ceil_div(total, 256);
  return static_cast<unsigned>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

}  // namespace

int launch_correction(const CorrectionArgs& c, const void* x, w4a8_dtype x_dtype, long long ldx, long long m,
                      const void* bias, w4a8_dtype bias_dtype, void* out, w4a8_dtype out_dtype, long long ldo,
                      float* x_f32, float* out_f32, w4a8_dtype gemm_dtype, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const std::size_t smem = row_smem_bytes(c.k);
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(dequant_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return static_cast<int>(e);
  }
  dequant_kernel<<<static_cast<unsigned>(c.n), kActThreads, smem, s>>>(c, gemm_dtype);
  to_f32_kernel<<<grid_for(m * c.k), 256, 0, s>>>(x, x_dtype, ldx, m, c.k, x_f32);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return static_cast<int>(e);

  // One handle per host thread, created on first use (needs a device).
  thread_local cublasHandle_t handle = nullptr;
  if (!handle && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return -1;
  if (cublasSetStream(handle, s) != CUBLAS_STATUS_SUCCESS) return -1;
  if (cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH) != CUBLAS_STATUS_SUCCESS) return -1;  // no TF32
  // Row-major out[M, N] = x[M, K] @ W[N, K]^T is column-major out^T[N, M] = W^T' * x^T'.
  const float one = 1.f, zero = 0.f;
  if (cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(c.n), static_cast<int>(m),
                  static_cast<int>(c.k), &one, c.w_dequant, static_cast<int>(c.k), x_f32, static_cast<int>(c.k),
                  &zero, out_f32, static_cast<int>(c.n)) != CUBLAS_STATUS_SUCCESS)
    return -1;
  finish_kernel<<<grid_for(m * c.n), 256, 0, s>>>(out_f32, m, c.n, bias, bias_dtype, gemm_dtype, out, out_dtype, ldo);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace w4a8::kern
