// The instruction sets the fast GEMM path may use, read from CPUID and XCR0 on first use.
// Not __builtin_cpu_supports: using it links libgcc's __cpu_indicator_init, a constructor that runs
// CPUID at every process start (each one a trap to the hypervisor on a VM), so every command, even
// `--version` or `validate`, paid for a check only `gemm` needs.
#pragma once

namespace w4a8::gemm {

struct CpuFeatures {
  // Each true only when the CPU has it and the OS saves its registers (XCR0), as GCC's runtime
  // answers for the same names.
  bool avx2 = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vnni = false;
};

// Detected once (thread-safe), then cached.
const CpuFeatures& cpu_features();

}  // namespace w4a8::gemm
