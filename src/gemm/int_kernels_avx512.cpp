// AVX-512 VNNI panel kernel: vpdpbusd multiplies u8 by s8, so x is offset to x + 128 (xor 0x80) and
// 128 * sum_k w is subtracted at the end; int32 lanes wrap mod 2^32, so the result is exact whenever
// the true sum fits int32 and otherwise equals it mod 2^32, as the other kernels do.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "gemm/int_kernels.hpp"

namespace w4a8::gemm::kernels {
namespace {

#define W4A8_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))

template <int MR>
W4A8_VNNI void block_vnni(const std::int8_t* x, std::int64_t k, const std::int8_t* panel, const std::int32_t* wsum,
                          std::int32_t* acc, std::int64_t ldc, int cols) {
  __m512i c[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int j = 0; j < 4; ++j) c[r][j] = _mm512_set1_epi32(0);
  const __m512i flip = _mm512_set1_epi32(std::int32_t(0x80808080u));
  for (std::int64_t k4 = 0; k4 < k / 4; ++k4) {
    const std::int8_t* wp = panel + k4 * kPanel * 4;
    __m512i w[4];
    for (int j = 0; j < 4; ++j) w[j] = _mm512_loadu_si512(wp + j * 64);
    for (int r = 0; r < MR; ++r) {
      std::int32_t xv;
      std::memcpy(&xv, x + r * k + k4 * 4, 4);
      const __m512i xb = _mm512_xor_si512(_mm512_set1_epi32(xv), flip);
      for (int j = 0; j < 4; ++j) c[r][j] = _mm512_dpbusd_epi32(c[r][j], xb, w[j]);
    }
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i off = _mm512_mullo_epi32(_mm512_loadu_si512(wsum + j * 16), _mm512_set1_epi32(128));  // 128 * wsum
    for (int r = 0; r < MR; ++r) c[r][j] = _mm512_sub_epi32(c[r][j], off);
  }
  for (int r = 0; r < MR; ++r) {
    if (cols == kPanel) {
      for (int j = 0; j < 4; ++j) _mm512_storeu_si512(acc + r * ldc + j * 16, c[r][j]);
    } else {
      alignas(64) std::int32_t tmp[kPanel];
      for (int j = 0; j < 4; ++j) _mm512_store_si512(tmp + j * 16, c[r][j]);
      std::memcpy(acc + r * ldc, tmp, std::size_t(cols) * 4);
    }
  }
}

}  // namespace

void panel_avx512vnni(const std::int8_t* x, std::int64_t rows, std::int64_t k, const std::int8_t* panel,
                      const std::int32_t* wsum, std::int32_t* acc, std::int64_t ldc, int cols) {
  std::int64_t r = 0;
  for (; r + 6 <= rows; r += 6) block_vnni<6>(x + r * k, k, panel, wsum, acc + r * ldc, ldc, cols);
  const std::int64_t left = rows - r;
  x += r * k;
  acc += r * ldc;
  switch (left) {
    case 5: block_vnni<5>(x, k, panel, wsum, acc, ldc, cols); break;
    case 4: block_vnni<4>(x, k, panel, wsum, acc, ldc, cols); break;
    case 3: block_vnni<3>(x, k, panel, wsum, acc, ldc, cols); break;
    case 2: block_vnni<2>(x, k, panel, wsum, acc, ldc, cols); break;
    case 1: block_vnni<1>(x, k, panel, wsum, acc, ldc, cols); break;
    default: break;
  }
}

}  // namespace w4a8::gemm::kernels
