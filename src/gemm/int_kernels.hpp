// Integer GEMM micro-kernels of the fast path, one per ISA, over one shared packed layout.
// Panel layout of w_q (kPanel = 64 output columns): byte ((p * K/4 + k4) * 64 + c) * 4 + t holds
// w_q[p * 64 + c][k4 * 4 + t] (zero beyond N). Activations are rows of K int8 x_q.
#pragma once

#include <cstdint>

namespace w4a8::gemm::kernels {

inline constexpr int kPanel = 64;

// acc[r * ldc + c] = sum_k x[r * k + kk] * w[c][kk] (mod 2^32) for rows [0, rows), panel columns
// [0, cols) (cols <= 64), over the whole K. wsum[c] = sum_k w[c][k] (used by the VNNI offset trick).
using PanelFn = void (*)(const std::int8_t* x, std::int64_t rows, std::int64_t k, const std::int8_t* panel,
                         const std::int32_t* wsum, std::int32_t* acc, std::int64_t ldc, int cols);

void panel_scalar(const std::int8_t*, std::int64_t, std::int64_t, const std::int8_t*, const std::int32_t*,
                  std::int32_t*, std::int64_t, int);
void panel_avx2(const std::int8_t*, std::int64_t, std::int64_t, const std::int8_t*, const std::int32_t*,
                std::int32_t*, std::int64_t, int);
void panel_avx512vnni(const std::int8_t*, std::int64_t, std::int64_t, const std::int8_t*, const std::int32_t*,
                      std::int32_t*, std::int64_t, int);

}  // namespace w4a8::gemm::kernels
