// The fused W4A8 GEMM for sm_80 and newer: a cp.async pipeline of x_q, packed 4-bit codes and the
// rows' group-scale windows; the decode as a register table lookup (the 16-byte table row of the
// group's scale byte, byte permutes); int8 tensor-core MMA (mma.sync m16n8k32 s8), int32
// accumulation, split-K through exact int32 sums; epilogue acc * scale[m] * s_channel[n] (+ bias)
// to f32/bf16/f16, one instantiation per output dtype. The per-thread steps live in gemm_tile.hpp,
// shared with the host emulation; the loop below is mirrored step for step by emulate.cpp.
#include <cuda_runtime.h>

#include <mutex>

#include "kernels/device_ops.cuh"
#include "kernels/launch.hpp"

namespace w4a8::kern {
namespace {

template <TileKind Kind, bool SmallG, bool Codes16>
__global__ void __launch_bounds__(tile_config(Kind).threads()) w4a8_gemm_kernel(const GemmArgs g) {
  constexpr TileConfig C = tile_config(Kind);
  extern __shared__ __align__(16) std::uint8_t smem[];
  std::uint8_t* const table = smem;
  std::uint8_t* const stages = smem + kDecodeTableBytes;
  const int stage_size = stage_bytes(C, g.scale_words);
  const int t = static_cast<int>(threadIdx.x), warp = t / kWarp, lane = t % kWarp;
  const long long n0 = static_cast<long long>(blockIdx.x) * C.bn;
  const long long m0 = static_cast<long long>(blockIdx.y) * C.bm;
  const long long k_tiles = ceil_div(g.k, C.bk);
  const long long kb = split_begin(k_tiles, g.splits, static_cast<int>(blockIdx.z));
  const long long nkt = split_begin(k_tiles, g.splits, static_cast<int>(blockIdx.z) + 1) - kb;

  DeviceCopy cp;
  // Tiles in descending k order: kb + nkt - 1 (the only one that may end past K) down to kb.
  StageProducer<Kind, SmallG, Codes16> producer(g, m0, n0, t, kb + nkt - 1);
  issue_table<Kind>(g, table, t, cp);
  producer.template issue<false>(g, stages, n0, t, cp);
  cp.commit();
  W4A8_UNROLL
  for (int s = 1; s < C.stages - 1; ++s) {
    if (s < nkt) producer.template issue<true>(g, stages + s * stage_size, n0, t, cp);
    cp.commit();
  }
  MmaAccumulators<C.frags_m(), C.frags_n()> sink;
  W4A8_UNROLL
  for (int mi = 0; mi < C.frags_m(); ++mi)
    W4A8_UNROLL
    for (int ni = 0; ni < C.frags_n(); ++ni)
      W4A8_UNROLL
      for (int i = 0; i < 4; ++i) sink.acc[mi][ni][i] = 0;

  int read = 0, write = C.stages - 1;  // stage buffers consumed / filled next
  for (long long it = 0; it < nkt; ++it) {
    cp.wait<C.stages - 2>();
    __syncthreads();  // stage `it` has landed for every thread; buffer `write` is free
    if (it + C.stages - 1 < nkt) producer.template issue<true>(g, stages + write * stage_size, n0, t, cp);
    cp.commit();
    compute_stage<Kind, SmallG>(g, stages + read * stage_size, table, kb + nkt - 1 - it, n0, warp, lane, sink);
    read = read + 1 == C.stages ? 0 : read + 1;
    write = write + 1 == C.stages ? 0 : write + 1;
  }

  if (g.splits > 1) {
    __shared__ bool last;
    add_partial_sums<Kind>(g, sink.acc, m0, n0, warp, lane);
    __threadfence();
    __syncthreads();
    if (t == 0) {
      const unsigned tile = blockIdx.y * gridDim.x + blockIdx.x;
      last = atomicAdd(&g.split_count[tile], 1u) == static_cast<unsigned>(g.splits - 1);
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other splits' sums are visible before they are read
  }
  store_tile_any<Kind>(g, sink.acc, m0, n0, warp, lane);
}

// The w_q intermediate: every packed word through the GEMM's table and decode4.
__global__ void w4a8_decode_kernel(const GemmArgs g) {
  const long long words = g.k / 8, total = g.n * words;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    decode_wq_word(g, reinterpret_cast<const std::uint8_t*>(g.table), i / words, i % words);
}

__global__ void nan_scan_kernel(const std::uint8_t* s, long long bytes, std::int32_t* flag) {
  bool any = false;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    any |= gemm::fp8_e4m3fn_is_nan(s[i]);
  if (any) atomicExch(flag, 1);
}

unsigned grid_for(long long total, int threads) {
  const long long b = ceil_div(total, threads);
  return static_cast<unsigned>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

// Instantiations: G < 16 (8-byte code copies), G >= 16 with 16-byte or 8-byte code copies.
using GemmKernel = void (*)(GemmArgs);
template <TileKind Kind>
GemmKernel gemm_kernel_of(bool small_group, bool codes16) {
  if (small_group) return w4a8_gemm_kernel<Kind, true, false>;
  return codes16 ? w4a8_gemm_kernel<Kind, false, true> : w4a8_gemm_kernel<Kind, false, false>;
}
GemmKernel gemm_kernel(TileKind kind, bool small_group, bool codes16) {
  return kind == TileKind::kSmallM ? gemm_kernel_of<TileKind::kSmallM>(small_group, codes16)
                                   : gemm_kernel_of<TileKind::kLargeM>(small_group, codes16);
}

// Per device: its SM count and opt-in limit, and each GEMM kernel opted into the most shared memory
// any group size needs (once; the attribute is per device).
constexpr int kMaxDevices = 64;
struct Occupancy {
  int smem_bytes = 0, blocks = 0;
};
constexpr int kOccupancyEntries = 8;  // distinct shared-memory sizes (scale windows) remembered
struct DeviceState {
  bool ready = false;
  DeviceInfo info;
  // Resident blocks per SM by [kind][variant: G < 16, 16-byte codes, 8-byte codes], per size.
  Occupancy occupancy[2][3][kOccupancyEntries] = {};
};
DeviceState g_devices[kMaxDevices];
std::mutex g_devices_mutex;

int prepare_device(int dev, DeviceInfo* out) {
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  DeviceState& d = g_devices[dev];
  if (!d.ready) {
    int sms = 0, optin = 0;
    cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    for (TileKind kind : {TileKind::kSmallM, TileKind::kLargeM})
      for (int variant = 0; variant < 3; ++variant) {
        const int need = gemm_smem_bytes(tile_config(kind), scale_words(tile_config(kind).bk, 4));
        if (e == cudaSuccess && need > 48 * 1024 && need <= optin)
          e = cudaFuncSetAttribute(gemm_kernel(kind, variant == 0, variant == 1), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   need);
      }
    if (e != cudaSuccess) return static_cast<int>(e);
    d.info = {sms, optin};
    d.ready = true;
  }
  *out = d.info;
  return 0;
}

}  // namespace

DeviceInfo device_info() {
  int dev = 0;
  DeviceInfo info;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return info;
  if (prepare_device(dev, &info) != 0) return DeviceInfo{};
  return info;
}

int gemm_blocks_per_sm(TileKind kind, bool small_group, bool codes16, int smem_bytes) {
  // Cached per device and shared-memory size: the query costs more host time than a decode-shaped
  // GEMM takes on the device.
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) return -1;
  Occupancy* cache = g_devices[dev].occupancy[static_cast<int>(kind)][small_group ? 0 : (codes16 ? 1 : 2)];
  {
    std::lock_guard<std::mutex> lock(g_devices_mutex);
    for (int i = 0; i < kOccupancyEntries; ++i)
      if (cache[i].smem_bytes == smem_bytes && cache[i].blocks > 0) return cache[i].blocks;
  }
  int blocks = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, gemm_kernel(kind, small_group, codes16),
                                                    tile_config(kind).threads(), smem_bytes) != cudaSuccess)
    return -1;
  std::lock_guard<std::mutex> lock(g_devices_mutex);
  for (int i = 0; i < kOccupancyEntries; ++i)
    if (cache[i].blocks == 0) {
      cache[i] = {smem_bytes, blocks};
      break;
    }
  return blocks;
}

int launch_w4a8_gemm(const GemmPlan& plan, const GemmArgs& g, void* stream) {
  const dim3 grid(static_cast<unsigned>(plan.tiles_n), static_cast<unsigned>(plan.tiles_m),
                  static_cast<unsigned>(plan.splits));
  const TileConfig c = tile_config(plan.kind);
  gemm_kernel(plan.kind, g.small_group, g.codes16)<<<grid, c.threads(), plan.smem_bytes, static_cast<cudaStream_t>(stream)>>>(g);
  return static_cast<int>(cudaGetLastError());
}

int launch_w4a8_decode(const GemmArgs& g, void* stream) {
  w4a8_decode_kernel<<<grid_for(g.n * (g.k / 8), 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(g);
  return static_cast<int>(cudaGetLastError());
}

int launch_nan_scan(const std::uint8_t* s_rel, long long bytes, std::int32_t* flag, void* stream) {
  nan_scan_kernel<<<grid_for(bytes, 256), 256, 0, static_cast<cudaStream_t>(stream)>>>(s_rel, bytes, flag);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace w4a8::kern
