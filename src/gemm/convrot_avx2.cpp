#include <immintrin.h>

#include "gemm/convrot_simd.hpp"
#include "gemm/numerics.hpp"

namespace w4a8::gemm {

__attribute__((target("avx2"))) void convrot_row_avx2(float* x, std::int64_t k, std::int64_t r) {
  for (std::int64_t b0 = 0; b0 < k; b0 += r) {
    float* blk = x + b0;
    for (std::int64_t s = 1; s < r; s *= 4) {
      const float pre = convrot_stage_prescale(r, s);
      for (std::int64_t base = 0; base < r; base += 4 * s) {
        if (s < 8) {
          for (std::int64_t o = 0; o < s; ++o)
            convrot_butterfly(blk[base + o], blk[base + o + s], blk[base + o + 2 * s], blk[base + o + 3 * s], pre);
          continue;
        }
        // s >= 8: a later stage, whose prescale is 1 (the multiplication is an identity: omitted).
        for (std::int64_t o = 0; o < s; o += 8) {
          float* pa = blk + base + o;
          const __m256 a = _mm256_loadu_ps(pa), b = _mm256_loadu_ps(pa + s);
          const __m256 c = _mm256_loadu_ps(pa + 2 * s), d = _mm256_loadu_ps(pa + 3 * s);
          const __m256 ab = _mm256_add_ps(a, b);
          const __m256 y0 = _mm256_sub_ps(_mm256_add_ps(ab, c), d);
          const __m256 y1 = _mm256_add_ps(_mm256_sub_ps(ab, c), d);
          const __m256 y2 = _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(a, b), c), d);
          const __m256 y3 = _mm256_add_ps(_mm256_add_ps(_mm256_sub_ps(b, a), c), d);
          _mm256_storeu_ps(pa, y0);
          _mm256_storeu_ps(pa + s, y1);
          _mm256_storeu_ps(pa + 2 * s, y2);
          _mm256_storeu_ps(pa + 3 * s, y3);
        }
      }
    }
  }
}

}  // namespace w4a8::gemm
