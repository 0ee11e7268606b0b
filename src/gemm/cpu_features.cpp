#include "gemm/cpu_features.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace w4a8::gemm {
namespace {

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) == 0) return f;
  constexpr unsigned kOsxsave = 1u << 27, kAvx = 1u << 28;  // CPUID.1:ECX
  if ((c & kOsxsave) == 0 || (c & kAvx) == 0) return f;
  unsigned xcr0 = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
  const bool ymm = (xcr0 & 0x6u) == 0x6u;     // SSE and AVX state
  const bool zmm = (xcr0 & 0xE6u) == 0xE6u;   // and opmask, ZMM0-15 upper halves, ZMM16-31
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = ymm && (b & (1u << 5)) != 0;
  f.avx512f = zmm && (b & (1u << 16)) != 0;
  f.avx512bw = zmm && (b & (1u << 30)) != 0;
  f.avx512vnni = zmm && (c & (1u << 11)) != 0;
#endif
  return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace w4a8::gemm
