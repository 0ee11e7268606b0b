// Device-only primitives of the GEMM kernel: cp.async copies (the Copy policy of StageProducer) and the
// s8 tensor-core MMA (the Sink of compute_stage). The host emulation supplies its own versions of
// both (emulate.cpp) with the same semantics, taken from the PTX ISA.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace w4a8::kern {

// cp.async global -> shared with zero fill: src_bytes (0..cp-size) are read, the rest of the
// destination is zeroed; src_bytes == 0 reads nothing. Completion is per commit group.
struct DeviceCopy {
  __device__ __forceinline__ static unsigned smem(void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
  }
  __device__ __forceinline__ void copy16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem(dst)), "l"(src), "r"(src_bytes) : "memory");
  }
  __device__ __forceinline__ void copy8(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;\n" ::"r"(smem(dst)), "l"(src), "r"(src_bytes) : "memory");
  }
  __device__ __forceinline__ void copy4(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem(dst)), "l"(src), "r"(src_bytes) : "memory");
  }
  __device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
  // Waits until at most N of this thread's committed groups are still in flight.
  template <int N>
  __device__ __forceinline__ void wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
  }
};

__device__ __forceinline__ void mma_s8(std::int32_t (&c)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The accumulators of one thread: compute_stage's Sink on the device.
template <int FM, int FN>
struct MmaAccumulators {
  std::int32_t acc[FM][FN][4];
  __device__ __forceinline__ void mma(int mi, int ni, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    mma_s8(acc[mi][ni], a, b);
  }
};

}  // namespace w4a8::kern
