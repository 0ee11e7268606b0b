// Host emulation of the CUDA path: runs the kernels' own steps (act_row.hpp, gemm_tile.hpp) thread
// by thread and barrier by barrier on the CPU, with cp.async commit groups that land only when a
// wait_group lets them (an early read sees a poison pattern) and mma.sync m16n8k32 emulated from
// the PTX ISA fragment maps, on a w4a8_problem whose pointers are HOST pointers. It is what the
// kernels compute, so comparing it with the reference checks the kernels' arithmetic without a GPU;
// it also records coverage facts the tests assert.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/problem.hpp"
#include "kernels/w4a8_cuda.h"

namespace w4a8::kern {

struct EmuStats {
  int tile_kind = -1;                  // TileKind used (integer path)
  int splits = 0;                      // split-K factor used
  std::int64_t blocks = 0;             // GEMM blocks run
  std::int64_t a_bytes_read = 0;       // x_q bytes the copies read from global memory
  std::int64_t code_bytes_read = 0;    // packed-code bytes read
  std::int64_t scale_bytes_read = 0;   // s_rel bytes read
  std::int64_t misaligned_copies = 0;  // cp.async with a source or destination not aligned to its size
  std::int64_t mma_calls = 0;          // warp-wide MMAs
  std::int64_t stores = 0;             // output elements written
  std::int64_t duplicate_stores = 0;   // output elements written more than once
  std::int64_t missing_stores = 0;     // output elements never written
  bool nan_scale_seen = false;
};

// 16x32 (A, row-major) times 32x8 (B, "col": B[n][k]) plus C, as 32 lanes hold them: emulates one
// warp-wide mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 (int32 wrap-around accumulation).
void emulate_mma_m16n8k32(const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2],
                          std::int32_t (&c)[32][4]);

// Runs the problem (host pointers, as w4a8_gemm_cuda would with device pointers), on a device of
// the given shape (its SMs and resident blocks decide the split-K factor); x_q/x_scale, when null, go
// to internal scratch. Correction path: the dequantize kernel is emulated exactly; its float GEMM
// (cuBLAS on the device) is summed over k in order. w_dequant, when non-null, receives [N, K]
// (correction path).
// @return check_problem()'s status, W4A8_OK after running.
w4a8_status emulate_w4a8_gemm(const w4a8_problem& p, EmuStats* stats = nullptr, float* w_dequant = nullptr,
                              const DeviceShape& dev = DeviceShape{132, 3});

}  // namespace w4a8::kern
