// This project's CUDA kernels as a kernel plugin with CUDA_DEVICE memory: the CLI dlopens this
// module (`--impl cuda`) and never links a GPU runtime itself. cudart is linked in statically, so
// the module needs only the NVIDIA driver and cuBLAS (correction path) at run time.
#include <cuda_runtime.h>

#include "core/version.hpp"
#include "kernels/problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace {

using w4a8::kern::set_last_error;

constexpr std::uint64_t kCaps =
    W4A8_CAP_INTEGER_PATH | W4A8_CAP_CORRECTION_PATH | W4A8_CAP_EAGER_POLICY | W4A8_CAP_INTERMEDIATES;

w4a8_status failed(const char* where, cudaError_t e) {
  set_last_error(where, cudaGetErrorString(e));
  return e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? W4A8_ERR_NO_DEVICE : W4A8_ERR_CUDA;
}

w4a8_status alloc(void** ptr, size_t bytes) {
  if (!ptr) return W4A8_ERR_ARGUMENT;
  *ptr = nullptr;
  if (bytes == 0) return W4A8_OK;
  if (const cudaError_t e = cudaMalloc(ptr, bytes); e != cudaSuccess) return failed("cudaMalloc", e);
  if (const cudaError_t e = cudaMemset(*ptr, 0, bytes); e != cudaSuccess) {
    cudaFree(*ptr);
    *ptr = nullptr;
    return failed("cudaMemset", e);
  }
  return W4A8_OK;
}
void release(void* ptr) { cudaFree(ptr); }
w4a8_status copy_to_device(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return W4A8_OK;
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
  return e == cudaSuccess ? W4A8_OK : failed("cudaMemcpy to device", e);
}
w4a8_status copy_to_host(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return W4A8_OK;
  const cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
  return e == cudaSuccess ? W4A8_OK : failed("cudaMemcpy to host", e);
}
w4a8_status synchronize(void* stream) {
  const cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  return e == cudaSuccess ? W4A8_OK : failed("cudaStreamSynchronize", e);
}

const w4a8_kernel_plugin kPlugin = {
    W4A8_KERNEL_ABI_VERSION, sizeof(w4a8_kernel_plugin), "w4a8check-cuda", W4A8CHECK_VERSION, W4A8_MEMORY_CUDA_DEVICE, kCaps,
    w4a8_check_problem, w4a8_gemm_cuda_workspace_size, w4a8_gemm_cuda, w4a8_cuda_last_error,
    w4a8_cuda_device_count, alloc, release, copy_to_device, copy_to_host, synchronize};

}  // namespace

extern "C" __attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) {
  return &kPlugin;
}
