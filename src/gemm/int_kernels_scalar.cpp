// Portable panel kernel: the reference for the SIMD ones and the fallback on other CPUs.
#include <cstdint>

#include "gemm/int_kernels.hpp"

namespace w4a8::gemm::kernels {

void panel_scalar(const std::int8_t* x, std::int64_t rows, std::int64_t k, const std::int8_t* panel,
                  const std::int32_t*, std::int32_t* acc, std::int64_t ldc, int cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint32_t sums[kPanel] = {};  // unsigned: wraps mod 2^32 without UB
    const std::int8_t* xr = x + r * k;
    for (std::int64_t k4 = 0; k4 < k / 4; ++k4) {
      const std::int8_t* wp = panel + k4 * kPanel * 4;
      for (int c = 0; c < kPanel; ++c)
        for (int t = 0; t < 4; ++t)
          sums[c] += std::uint32_t(std::int32_t(xr[k4 * 4 + t]) * wp[c * 4 + t]);
    }
    for (int c = 0; c < cols; ++c) acc[r * ldc + c] = std::int32_t(sums[c]);
  }
}

}  // namespace w4a8::gemm::kernels
