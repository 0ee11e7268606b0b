// AVX2 panel kernel: maddubs on (|x|, sign(w, x)) keeps each pair sum within int16 (2 * 128 * 127),
// then madd widens to int32: 32 multiply-adds per vpmaddubsw. Compiled for AVX2 by target attribute
// only, so the binary still runs on older CPUs (dispatch checks cpu_features() first).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "gemm/int_kernels.hpp"

namespace w4a8::gemm::kernels {
namespace {

template <int MR>
__attribute__((target("avx2"))) void block_avx2(const std::int8_t* x, std::int64_t k, const std::int8_t* panel,
                                                std::int32_t* acc, std::int64_t ldc, int cols) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int half = 0; half < 2; ++half) {
    if (half * 32 >= cols) break;
    __m256i c[MR][4];
    for (int r = 0; r < MR; ++r)
      for (int j = 0; j < 4; ++j) c[r][j] = _mm256_setzero_si256();
    for (std::int64_t k4 = 0; k4 < k / 4; ++k4) {
      const std::int8_t* wp = panel + k4 * kPanel * 4 + half * 128;
      __m256i w[4];
      for (int j = 0; j < 4; ++j) w[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + j * 32));
      for (int r = 0; r < MR; ++r) {
        std::int32_t xv;
        std::memcpy(&xv, x + r * k + k4 * 4, 4);
        const __m256i xb = _mm256_set1_epi32(xv);
        const __m256i xa = _mm256_abs_epi8(xb);
        for (int j = 0; j < 4; ++j) {
          const __m256i p16 = _mm256_maddubs_epi16(xa, _mm256_sign_epi8(w[j], xb));
          c[r][j] = _mm256_add_epi32(c[r][j], _mm256_madd_epi16(p16, ones));
        }
      }
    }
    for (int r = 0; r < MR; ++r) {
      alignas(32) std::int32_t tmp[32];
      for (int j = 0; j < 4; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(tmp + j * 8), c[r][j]);
      const int n = cols - half * 32 < 32 ? cols - half * 32 : 32;
      std::memcpy(acc + r * ldc + half * 32, tmp, std::size_t(n) * 4);
    }
  }
}

}  // namespace

void panel_avx2(const std::int8_t* x, std::int64_t rows, std::int64_t k, const std::int8_t* panel,
                const std::int32_t*, std::int32_t* acc, std::int64_t ldc, int cols) {
  std::int64_t r = 0;
  for (; r + 2 <= rows; r += 2) block_avx2<2>(x + r * k, k, panel, acc + r * ldc, ldc, cols);
  if (r < rows) block_avx2<1>(x + r * k, k, panel, acc + r * ldc, ldc, cols);
}

}  // namespace w4a8::gemm::kernels
