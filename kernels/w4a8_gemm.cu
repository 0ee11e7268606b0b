// The fused W4A8 GEMM for sm_80 and newer: packed 4-bit codes decoded through a per-block 256 x 16
// int8 table in shared memory, int8 tensor-core MMA (mma.sync m16n8k32 s8), int32 accumulation,
// epilogue acc * scale[m] * s_channel[n] (+ bias) to f32/bf16/f16. The per-thread steps live in
// gemm_tile.hpp, shared with the host emulation.
#include <cuda_runtime.h>

#include "kernels/launch.hpp"

namespace w4a8::kern {
namespace {

__device__ __forceinline__ void mma_s8(std::int32_t (&c)[4], const std::uint32_t (&a)[4],
                                       const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <TileKind Kind>
__global__ void __launch_bounds__(tile_config(Kind).threads()) w4a8_gemm_kernel(const GemmArgs g) {
  constexpr TileConfig C = tile_config(Kind);
  constexpr int FM = C.frags_m(), FN = C.frags_n();
  __shared__ __align__(16) std::int8_t table[kDecodeTableBytes];
  __shared__ __align__(16) std::int8_t smem_a[C.smem_a_bytes()];
  __shared__ __align__(16) std::int8_t smem_b[C.smem_b_bytes()];

  const int t = static_cast<int>(threadIdx.x), warp = t / kWarp, lane = t % kWarp;
  const long long n0 = static_cast<long long>(blockIdx.x) * C.bn;
  const long long m0 = static_cast<long long>(blockIdx.y) * C.bm;

  build_table_part(table, t, C.threads(), g.codebook);

  std::int32_t acc[FM][FN][4];
#pragma unroll
  for (int mi = 0; mi < FM; ++mi)
#pragma unroll
    for (int ni = 0; ni < FN; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mi][ni][i] = 0;

  bool nan_seen = false;
  for (long long k0 = 0; k0 < g.k; k0 += C.bk) {
    __syncthreads();  // the table is built / the previous tile is consumed
#pragma unroll
    for (int it = 0; it < C.a_iters(); ++it) load_a_chunk(C, g, smem_a, t, it, m0, k0);
#pragma unroll
    for (int it = 0; it < C.b_iters(); ++it) load_b_chunk(C, g, table, smem_b, t, it, n0, k0, &nan_seen);
    __syncthreads();
#pragma unroll
    for (int ks = 0; ks < C.k_steps(); ++ks) {
      std::uint32_t a[FM][4], b[FN][2];
#pragma unroll
      for (int mi = 0; mi < FM; ++mi) load_frag_a(C, smem_a, warp, lane, mi, ks, a[mi]);
#pragma unroll
      for (int ni = 0; ni < FN; ++ni) load_frag_b(C, smem_b, warp, lane, ni, ks, b[ni]);
#pragma unroll
      for (int mi = 0; mi < FM; ++mi)
#pragma unroll
        for (int ni = 0; ni < FN; ++ni) mma_s8(acc[mi][ni], a[mi], b[ni]);
    }
  }
  if (nan_seen && g.nan_flag) atomicExch(g.nan_flag, 1);

#pragma unroll
  for (int mi = 0; mi < FM; ++mi)
#pragma unroll
    for (int ni = 0; ni < FN; ++ni)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const RowCol e = acc_element(C, warp, lane, mi, ni, i);
        store_acc(g, m0 + e.row, n0 + e.col, acc[mi][ni][i]);
      }
}

// The B half of the GEMM alone (same table, same load_b_chunk), storing the decoded grid: the w_q
// intermediate of the differential tests, kept out of the GEMM kernel's registers.
template <TileKind Kind>
__global__ void __launch_bounds__(tile_config(Kind).threads()) w4a8_decode_kernel(const GemmArgs g) {
  constexpr TileConfig C = tile_config(Kind);
  __shared__ __align__(16) std::int8_t table[kDecodeTableBytes];
  __shared__ __align__(16) std::int8_t smem_b[C.smem_b_bytes()];
  const int t = static_cast<int>(threadIdx.x);
  const long long n0 = static_cast<long long>(blockIdx.x) * C.bn;
  build_table_part(table, t, C.threads(), g.codebook);
  __syncthreads();
  bool nan_seen = false;
  for (long long k0 = 0; k0 < g.k; k0 += C.bk)
    for (int it = 0; it < C.b_iters(); ++it) load_b_chunk<true>(C, g, table, smem_b, t, it, n0, k0, &nan_seen);
}

}  // namespace

int launch_w4a8_decode(TileKind kind, const GemmArgs& g, void* stream) {
  const TileConfig c = tile_config(kind);
  const dim3 grid(static_cast<unsigned>(ceil_div(g.n, c.bn)));
  auto s = static_cast<cudaStream_t>(stream);
  if (kind == TileKind::kSmallM)
    w4a8_decode_kernel<TileKind::kSmallM><<<grid, c.threads(), 0, s>>>(g);
  else
    w4a8_decode_kernel<TileKind::kLargeM><<<grid, c.threads(), 0, s>>>(g);
  return static_cast<int>(cudaGetLastError());
}

int launch_w4a8_gemm(TileKind kind, const GemmArgs& g, void* stream) {
  const TileConfig c = tile_config(kind);
  const dim3 grid(static_cast<unsigned>(ceil_div(g.n, c.bn)), static_cast<unsigned>(ceil_div(g.m, c.bm)));
  auto s = static_cast<cudaStream_t>(stream);
  if (kind == TileKind::kSmallM)
    w4a8_gemm_kernel<TileKind::kSmallM><<<grid, c.threads(), 0, s>>>(g);
  else
    w4a8_gemm_kernel<TileKind::kLargeM><<<grid, c.threads(), 0, s>>>(g);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace w4a8::kern
