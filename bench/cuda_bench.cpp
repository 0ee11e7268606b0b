// Benchmark of the fused W4A8 layer (w4a8_gemm_cuda: activation ConvRot + quantization + GEMM, as
// production calls it: no intermediates, one workspace) against cuBLASLt's int8 GEMM (the integer
// part alone: int8 x int8 -> int32) and a cuBLAS bf16 GEMM (f32 accumulate).
// Method: every shape is first checked against the CPU reference (gemm_fast) on a sample of rows
// (rows are independent, so a row computed alone is the reference for that row of the batch); each
// timing is a CUDA graph of `launches` back-to-back calls, each call on the next of several weight
// copies whose total exceeds the L2 cache twice over (so weights stream from HBM, as in a model
// whose layers do not fit in L2); the median of `reps` graph replays is reported per call. The
// cuBLASLt algorithm is chosen once per shape (heuristic), outside the timing. For M <= 16 the
// weight bytes (codes + group scales) per call over the time are printed next to the HBM roofline.
// Usage: cuda_bench [--quick] [--hbm-gbps X]   (X: the device's HBM bandwidth, default 4800, H200)
// Without a device it says so and exits 0.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gemm/reference.hpp"
#include "kernels/w4a8_cuda.h"

namespace {

using w4a8::gemm::FloatDtype;

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    const cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));  \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define CHECK_BLAS(x)                                                                   \
  do {                                                                                  \
    if ((x) != CUBLAS_STATUS_SUCCESS) {                                                 \
      std::fprintf(stderr, "%s:%d %s failed\n", __FILE__, __LINE__, #x);                \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

struct Shape {
  int m, n, k;
};
constexpr int kGroup = 16, kRot = 256;

void* dev_copy(const void* src, std::size_t bytes) {
  void* p = nullptr;
  CHECK_CUDA(cudaMalloc(&p, bytes));
  CHECK_CUDA(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice));
  return p;
}
void* dev_random(std::size_t bytes, std::uint32_t seed, int lo, int hi) {
  std::vector<std::uint8_t> h(bytes);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  for (auto& b : h) b = static_cast<std::uint8_t>(d(rng));
  return dev_copy(h.data(), bytes);
}

// Copies of an operand so that rotating through them streams more than twice the L2 per round.
int copies_for(std::size_t bytes, std::size_t l2) {
  return static_cast<int>(std::max<std::size_t>(2, (3 * l2) / std::max<std::size_t>(bytes, 1) + 1));
}

// Median microseconds per call of `call(i)` (i = call index), timed as a CUDA graph of `launches`
// calls replayed `reps` times after a warm-up replay. Returns -1 when a call fails.
double time_graph(cudaStream_t s, int launches, int reps, const std::function<bool(int)>& call) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  bool ok = true;
  for (int i = 0; i < launches && ok; ++i) ok = call(i);
  CHECK_CUDA(cudaStreamEndCapture(s, &graph));
  if (!ok) return -1;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t a, b;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaGraphLaunch(exec, s));
  CHECK_CUDA(cudaStreamSynchronize(s));
  std::vector<float> per_call;
  for (int r = 0; r < reps; ++r) {
    CHECK_CUDA(cudaEventRecord(a, s));
    CHECK_CUDA(cudaGraphLaunch(exec, s));
    CHECK_CUDA(cudaEventRecord(b, s));
    CHECK_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
    per_call.push_back(1000.f * ms / launches);
  }
  std::sort(per_call.begin(), per_call.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  return per_call[per_call.size() / 2];
}

// The layer and activations of a shape (bf16 activations, uniform codes, G = 16, R = 256).
struct HostShape {
  w4a8::gemm::Layer layer;
  w4a8::gemm::Activations x;
  std::vector<std::uint16_t> x_bf16;
};
HostShape make_host(const Shape& s, std::uint32_t seed) {
  HostShape h;
  h.layer = w4a8::gemm::make_zero_layer(std::uint64_t(s.n), std::uint64_t(s.k), kGroup, kRot);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255), scale(0x30, 0x48);
  std::uniform_real_distribution<float> ch(1e-4f, 1e-2f);
  for (auto& b : h.layer.weight) b = static_cast<std::uint8_t>(byte(rng));
  for (auto& b : h.layer.s_rel) b = static_cast<std::uint8_t>(scale(rng));
  for (auto& v : h.layer.s_channel) v = ch(rng);
  h.x.dtype = FloatDtype::BF16;
  h.x.shape = {std::uint64_t(s.m), std::uint64_t(s.k)};
  h.x.values.resize(std::size_t(s.m) * s.k);
  h.x_bf16.resize(h.x.values.size());
  std::normal_distribution<float> nd(0.f, 1.f);
  for (std::size_t i = 0; i < h.x.values.size(); ++i) {
    h.x_bf16[i] = w4a8::gemm::f32_to_bf16_rne(nd(rng));
    h.x.values[i] = w4a8::gemm::bf16_to_f32(h.x_bf16[i]);
  }
  return h;
}

// Rows of out (bf16 on the device) against the CPU reference computed for those rows alone.
bool verify(const HostShape& h, const Shape& s, const void* d_out, std::string& why) {
  std::vector<std::uint16_t> out(std::size_t(s.m) * s.n);
  CHECK_CUDA(cudaMemcpy(out.data(), d_out, out.size() * 2, cudaMemcpyDeviceToHost));
  std::vector<int> rows = {0, s.m - 1};
  for (int i = 1; i < 6 && s.m > 2; ++i) rows.push_back(s.m * i / 6);
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  w4a8::gemm::Activations sub;
  sub.dtype = FloatDtype::BF16;
  sub.shape = {rows.size(), std::uint64_t(s.k)};
  for (int r : rows) sub.values.insert(sub.values.end(), h.x.values.begin() + std::size_t(r) * s.k,
                                       h.x.values.begin() + std::size_t(r + 1) * s.k);
  w4a8::gemm::GemmOptions opt;
  opt.out_dtype = FloatDtype::BF16;
  opt.threads = 0;
  auto ref = w4a8::gemm::gemm_fast(h.layer, sub, opt);
  if (!ref.ok()) {
    why = ref.error().message;
    return false;
  }
  for (std::size_t i = 0; i < rows.size(); ++i)
    for (int c = 0; c < s.n; ++c) {
      const std::uint16_t want = w4a8::gemm::f32_to_bf16_rne(ref->out[i * s.n + c]);
      if (out[std::size_t(rows[i]) * s.n + c] != want) {
        why = "row " + std::to_string(rows[i]) + " col " + std::to_string(c);
        return false;
      }
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  double hbm_gbps = 4800.0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) quick = true;
    else if (std::strcmp(argv[i], "--hbm-gbps") == 0 && i + 1 < argc) hbm_gbps = std::atof(argv[++i]);
  }
  int code = 0;
  if (w4a8_cuda_device_count(&code) <= 0) {
    std::printf("cuda_bench: no CUDA device (cudaGetDeviceCount returned %d); nothing measured\n", code);
    return 0;
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const std::size_t l2 = static_cast<std::size_t>(prop.l2CacheSize);
  std::vector<Shape> shapes = {{1, 8192, 8192},   {16, 8192, 8192},   {1, 3072, 3072},
                               {256, 8192, 8192}, {4096, 3072, 3072}, {4096, 8192, 8192}};
  if (quick) shapes = {{1, 8192, 8192}, {16, 8192, 8192}, {4096, 3072, 3072}};
  const int launches = quick ? 20 : 50, reps = quick ? 5 : 11;
  cudaStream_t s;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasHandle_t blas;
  cublasLtHandle_t lt;
  CHECK_BLAS(cublasCreate(&blas));
  CHECK_BLAS(cublasLtCreate(&lt));
  CHECK_BLAS(cublasSetStream(blas, s));
  const std::size_t lt_ws_bytes = 64u << 20;
  void* lt_ws = nullptr;
  CHECK_CUDA(cudaMalloc(&lt_ws, lt_ws_bytes));

  std::printf("Device: %s (sm_%d%d, %d SMs, L2 %.0f MB). Per call: median of %d replays of a graph of %d calls,\n"
              "weights rotated over copies > 3x L2. TOPS = 2*M*N*K / time. Weight GB/s: codes + scales per call.\n\n",
              prop.name, prop.major, prop.minor, prop.multiProcessorCount, l2 / 1e6, reps, launches);
  std::printf("| M | N | K | check | W4A8 us | TOPS | weight GB/s | %% of %.0f GB/s | cuBLASLt int8 us | TOPS | "
              "cuBLAS bf16 us | TFLOPS |\n",
              hbm_gbps);
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  int failures = 0;
  for (const Shape& sh : shapes) {
    const std::size_t m = sh.m, n = sh.n, k = sh.k;
    const double ops = 2.0 * double(m) * double(n) * double(k);
    const HostShape h = make_host(sh, 1);
    // W4A8 operands; weight copies rotated per call.
    const std::size_t wbytes = n * k / 2, sbytes = n * (k / kGroup);
    const int wcopies = copies_for(wbytes + sbytes, l2);
    std::vector<void*> d_w(wcopies), d_s(wcopies);
    for (int c = 0; c < wcopies; ++c) {
      d_w[c] = dev_copy(h.layer.weight.data(), wbytes);
      d_s[c] = dev_copy(h.layer.s_rel.data(), sbytes);
    }
    void* d_ch = dev_copy(h.layer.s_channel.data(), n * 4);
    void* d_x = dev_copy(h.x_bf16.data(), m * k * 2);
    void* d_out = nullptr;
    CHECK_CUDA(cudaMalloc(&d_out, m * n * 2));
    w4a8_problem p{};
    p.m = sh.m, p.n = sh.n, p.k = sh.k, p.group_size = kGroup, p.convrot_groupsize = kRot;
    p.x = d_x, p.x_dtype = W4A8_DTYPE_BF16, p.ldx = sh.k, p.s_channel = static_cast<const float*>(d_ch);
    p.out = d_out, p.out_dtype = W4A8_DTYPE_BF16, p.ldo = sh.n;
    p.weight = static_cast<const std::int8_t*>(d_w[0]), p.s_rel = static_cast<const std::uint8_t*>(d_s[0]);
    const std::size_t ws_bytes = w4a8_gemm_cuda_workspace_size(&p);
    void* ws = nullptr;
    CHECK_CUDA(cudaMalloc(&ws, ws_bytes ? ws_bytes : 1));
    std::string why = "ok";
    bool ok = w4a8_gemm_cuda(&p, ws, ws_bytes, s) == W4A8_OK;
    if (!ok) why = w4a8_cuda_last_error();
    CHECK_CUDA(cudaStreamSynchronize(s));
    if (ok) ok = verify(h, sh, d_out, why);
    failures += !ok;
    auto run_w4a8 = [&](int i) {
      w4a8_problem q = p;
      q.weight = static_cast<const std::int8_t*>(d_w[i % wcopies]);
      q.s_rel = static_cast<const std::uint8_t*>(d_s[i % wcopies]);
      return w4a8_gemm_cuda(&q, ws, ws_bytes, s) == W4A8_OK;
    };
    const double t_w4a8 = ok ? time_graph(s, launches, reps, run_w4a8) : -1;

    // cuBLASLt int8 (TN): out^T[N, M] int32 = W[N, K] . Xq[M, K]^T; the heuristic asked once.
    const int icopies = copies_for(n * k, l2);
    std::vector<void*> d_a8(icopies);
    for (int c = 0; c < icopies; ++c) d_a8[c] = dev_random(n * k, 4 + c, 0, 255);
    void* d_b8 = dev_random(m * k, 5, 0, 255);
    void* d_c32 = nullptr;
    CHECK_CUDA(cudaMalloc(&d_c32, m * n * 4));
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    CHECK_BLAS(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32I, CUDA_R_32I));
    const cublasOperation_t tr = CUBLAS_OP_T;
    CHECK_BLAS(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &tr, sizeof tr));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_8I, k, n, k));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8I, k, m, k));
    CHECK_BLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32I, n, m, n));
    cublasLtMatmulPreference_t pref;
    CHECK_BLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &lt_ws_bytes,
                                                    sizeof lt_ws_bytes));
    cublasLtMatmulHeuristicResult_t heur{};
    int found = 0;
    const bool lt_ok = cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 1, &heur, &found) ==
                           CUBLAS_STATUS_SUCCESS && found > 0;
    const std::int32_t ia = 1, ib = 0;
    const double t_lt = !lt_ok ? -1 : time_graph(s, launches, reps, [&](int i) {
      return cublasLtMatmul(lt, op, &ia, d_a8[i % icopies], la, d_b8, lb, &ib, d_c32, lc, d_c32, lc, &heur.algo, lt_ws,
                            lt_ws_bytes, s) == CUBLAS_STATUS_SUCCESS;
    });

    // cuBLAS bf16 GEMM, f32 accumulation.
    const int bcopies = copies_for(n * k * 2, l2);
    std::vector<void*> d_wb(bcopies);
    for (int c = 0; c < bcopies; ++c) d_wb[c] = dev_random(n * k * 2, 6 + c, 0x00, 0x3F);
    void* d_xb = dev_random(m * k * 2, 7, 0x00, 0x3F);
    void* d_ob = nullptr;
    CHECK_CUDA(cudaMalloc(&d_ob, m * n * 2));
    const float fa = 1.f, fb = 0.f;
    const double t_bf16 = time_graph(s, launches, reps, [&](int i) {
      return cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, sh.n, sh.m, sh.k, &fa, d_wb[i % bcopies], CUDA_R_16BF, sh.k,
                          d_xb, CUDA_R_16BF, sh.k, &fb, d_ob, CUDA_R_16BF, sh.n, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
    });

    auto us = [](double t) { return t < 0 ? std::string("n/a") : std::to_string(t).substr(0, 7); };
    auto tops = [&](double t) { return t <= 0 ? std::string("n/a") : std::to_string(ops / (t * 1e-6) / 1e12).substr(0, 6); };
    std::string gbps = "-", pct = "-";
    if (sh.m <= 16 && t_w4a8 > 0) {
      const double g = double(wbytes + sbytes) / (t_w4a8 * 1e-6) / 1e9;
      gbps = std::to_string(g).substr(0, 7);
      pct = std::to_string(100.0 * g / hbm_gbps).substr(0, 5);
    }
    std::printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sh.m, sh.n, sh.k,
                ok ? "exact" : ("FAIL: " + why).c_str(), us(t_w4a8).c_str(), tops(t_w4a8).c_str(), gbps.c_str(),
                pct.c_str(), us(t_lt).c_str(), tops(t_lt).c_str(), us(t_bf16).c_str(), tops(t_bf16).c_str());
    std::fflush(stdout);
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    for (void* q : d_w) cudaFree(q);
    for (void* q : d_s) cudaFree(q);
    for (void* q : d_a8) cudaFree(q);
    for (void* q : d_wb) cudaFree(q);
    for (void* q : {d_ch, d_x, d_out, ws, d_b8, d_c32, d_xb, d_ob}) cudaFree(q);
  }
  cudaFree(lt_ws);
  cublasLtDestroy(lt);
  cublasDestroy(blas);
  cudaStreamDestroy(s);
  if (failures) std::printf("\ncuda_bench: %d shape(s) FAILED the exactness check\n", failures);
  return failures ? 1 : 0;
}
