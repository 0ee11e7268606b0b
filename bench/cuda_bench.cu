// Benchmark of the fused W4A8 kernel (w4a8_gemm_cuda: activation ConvRot + quantization + GEMM)
// against cuBLASLt's int8 GEMM (the integer part alone: int8 x int8 -> int32) and a bf16 cuBLAS
// GEMM (f32 accumulate), on decode-shaped and large shapes. Prints a markdown table; CUDA events,
// median of the timed runs. Without a device it says so and exits 0.
// Usage: cuda_bench [--quick]
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/w4a8_cuda.h"

namespace {

struct Shape {
  int m, n, k;
};

#define CHECK_CUDA(x)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

template <class F>
double median_us(F&& run, int iters) {
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i)
    if (!run()) return -1;  // warm-up; false = unsupported
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    CHECK_CUDA(cudaEventRecord(a));
    run();
    CHECK_CUDA(cudaEventRecord(b));
    CHECK_CUDA(cudaEventSynchronize(b));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return 1000.0 * ms[ms.size() / 2];
}

void* dev_random(std::size_t bytes, std::uint32_t seed, std::uint8_t lo = 0, std::uint8_t hi = 255) {
  std::vector<std::uint8_t> h(bytes);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& b : h) b = static_cast<std::uint8_t>(d(rng));
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  CHECK_CUDA(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice));
  return p;
}

std::string fmt(double us, double ops) {
  if (us < 0) return "n/a | n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f | %.1f", us, ops / (us * 1e-6) / 1e12);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  int code = 0;
  if (w4a8_cuda_device_count(&code) <= 0) {
    std::printf("cuda_bench: no CUDA device (cudaGetDeviceCount returned %d); nothing measured\n", code);
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::vector<Shape> shapes = {{1, 8192, 8192}, {16, 8192, 8192}, {256, 8192, 8192}, {4096, 3072, 3072},
                               {4096, 8192, 8192}};
  if (quick) shapes = {{1, 4096, 4096}, {4096, 3072, 3072}};
  const int iters = quick ? 5 : 20;
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS || cublasLtCreate(&lt) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cuBLAS init failed\n");
    return 1;
  }
  const std::size_t lt_ws_bytes = 64u << 20;
  void* lt_ws = nullptr;
  CHECK_CUDA(cudaMalloc(&lt_ws, lt_ws_bytes));

  std::printf("Device: %s (sm_%d%d). Median of %d runs; TOPS = 2*M*N*K / time.\n\n", prop.name, prop.major,
              prop.minor, iters);
  std::printf("| M | N | K | W4A8 fused us | TOPS | cuBLASLt int8 us | TOPS | cuBLAS bf16 us | TFLOPS |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    const std::size_t m = s.m, n = s.n, k = s.k;
    const double ops = 2.0 * double(m) * double(n) * double(k);
    // W4A8 operands: bf16 activations, packed codes, s_rel bytes in [0x30, 0x48] (no NaN).
    std::vector<std::uint16_t> xh(m * k);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (auto& v : xh) {
      const float f = nd(rng);
      std::uint32_t u;
      std::memcpy(&u, &f, 4);
      v = static_cast<std::uint16_t>(u >> 16);
    }
    void* x = nullptr;
    CHECK_CUDA(cudaMalloc(&x, xh.size() * 2));
    CHECK_CUDA(cudaMemcpy(x, xh.data(), xh.size() * 2, cudaMemcpyHostToDevice));
    void* w = dev_random(n * k / 2, 2);
    void* srel = dev_random(n * k / 16, 3, 0x30, 0x48);
    std::vector<float> ch(n, 1e-3f);
    void* sch = nullptr;
    CHECK_CUDA(cudaMalloc(&sch, n * 4));
    CHECK_CUDA(cudaMemcpy(sch, ch.data(), n * 4, cudaMemcpyHostToDevice));
    void* out = nullptr;
    CHECK_CUDA(cudaMalloc(&out, m * n * 4));
    w4a8_problem p{};
    p.m = s.m, p.n = s.n, p.k = s.k, p.group_size = 16, p.convrot_groupsize = 256;
    p.x = x, p.x_dtype = W4A8_DTYPE_BF16, p.ldx = s.k;
    p.weight = static_cast<const std::int8_t*>(w), p.s_rel = static_cast<const std::uint8_t*>(srel);
    p.s_channel = static_cast<const float*>(sch), p.out = out, p.out_dtype = W4A8_DTYPE_BF16, p.ldo = s.n;
    const std::size_t ws_bytes = w4a8_gemm_cuda_workspace_size(&p);
    void* ws = nullptr;
    CHECK_CUDA(cudaMalloc(&ws, ws_bytes ? ws_bytes : 1));
    const double t_w4a8 = median_us([&] { return w4a8_gemm_cuda(&p, ws, ws_bytes, nullptr) == W4A8_OK; }, iters);

    // cuBLASLt int8 (TN): out^T[N, M] int32 = W[N, K] . Xq[M, K]^T.
    void* a8 = dev_random(n * k, 4);
    void* b8 = dev_random(m * k, 5);
    void* c32 = nullptr;
    CHECK_CUDA(cudaMalloc(&c32, m * n * 4));
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I);
    const cublasOperation_t tr = CUBLAS_OP_T;
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr);
    cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, k, n, k);
    cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, k, m, k);
    cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, n, m, n);
    const std::int32_t ia = 1, ib = 0;
    const double t_lt = median_us(
        [&] {
          return cublasLtMatmul(lt, op, &ia, a8, la, b8, lb, &ib, c32, lc, c32, lc, nullptr, lt_ws, lt_ws_bytes,
                                nullptr) == CUBLAS_STATUS_SUCCESS;
        },
        iters);

    // cuBLAS bf16 GEMM, f32 accumulation.
    void* wb = dev_random(n * k * 2, 6, 0x00, 0x3F);
    void* xb = dev_random(m * k * 2, 7, 0x00, 0x3F);
    void* ob = nullptr;
    CHECK_CUDA(cudaMalloc(&ob, m * n * 2));
    const float fa = 1.f, fb = 0.f;
    const double t_bf16 = median_us(
        [&] {
          return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, s.n, s.m, s.k, &fa, wb, CUDA_R_16BF, s.k, xb,
                              CUDA_R_16BF, s.k, &fb, ob, CUDA_R_16BF, s.n, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
        },
        iters);
    std::printf("| %d | %d | %d | %s | %s | %s |\n", s.m, s.n, s.k, fmt(t_w4a8, ops).c_str(), fmt(t_lt, ops).c_str(),
                fmt(t_bf16, ops).c_str());
    std::fflush(stdout);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    for (void* q : {x, w, srel, sch, out, ws, a8, b8, c32, wb, xb, ob}) cudaFree(q);
  }
  cudaFree(lt_ws);
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  return 0;
}
