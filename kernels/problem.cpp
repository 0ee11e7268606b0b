#include "kernels/problem.hpp"

#include "kernels/index_math.hpp"
#include "kernels/tile_config.hpp"

namespace w4a8::kern {
namespace {

bool is_power_of_4(std::int64_t r) { return r >= 4 && (r & (r - 1)) == 0 && (r & 0x5555555555555555LL) != 0; }
bool dtype_ok(int d) { return d >= W4A8_DTYPE_F32 && d <= W4A8_DTYPE_F16; }
// a * b <= kMaxProblemElements, for 0 <= a, b.
bool product_ok(std::int64_t a, std::int64_t b) {
  return a == 0 || b <= kMaxProblemElements / a;
}
std::size_t align256(std::size_t v) { return (v + 255) & ~std::size_t(255); }
bool aligned(const void* p, std::uintptr_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

}  // namespace

w4a8_status check_problem(const w4a8_problem& p) {
  if (p.m < 0 || p.n <= 0 || p.k <= 0) return W4A8_ERR_ARGUMENT;
  const std::int64_t g = p.group_size, r = p.convrot_groupsize;
  if (g < 4 || p.k % 16 != 0 || p.k % g != 0 || r <= 0 || p.k % r != 0 || (16 % g != 0 && g % 16 != 0))
    return W4A8_ERR_CONTRACT;
  if (!is_power_of_4(r)) return W4A8_ERR_CONTRACT;
  if (!dtype_ok(p.x_dtype) || !dtype_ok(p.out_dtype) || (p.bias && !dtype_ok(p.bias_dtype)))
    return W4A8_ERR_ARGUMENT;
  if (p.act_policy != 0 && p.act_policy != 1) return W4A8_ERR_ARGUMENT;
  if (!p.weight || !p.s_rel || !p.s_channel) return W4A8_ERR_ARGUMENT;
  if (p.m > 0 && (!p.x || !p.out || p.ldx < p.k || p.ldo < p.n)) return W4A8_ERR_ARGUMENT;
  // Vector loads: 8 packed bytes of codes, 16 bytes of x_q (rows are K bytes, K % 16 == 0).
  if (!aligned(p.weight, 8) || !aligned(p.x_q, 16) || !aligned(p.w_q, 16)) return W4A8_ERR_ARGUMENT;
  if (!product_ok(p.n, p.k) || !product_ok(p.m, p.ldx) || !product_ok(p.m, p.ldo) || !product_ok(p.m, p.k) ||
      !product_ok(p.m, p.n))
    return W4A8_ERR_UNSUPPORTED;
  if (p.correction) {
    // cuBLAS takes int sizes.
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) return W4A8_ERR_UNSUPPORTED;
  } else {
    const TileConfig c = tile_config(pick_tile(p.m));
    if (ceil_div(p.m, c.bm) > kMaxGridY || ceil_div(p.n, c.bn) > INT32_MAX || p.m > INT32_MAX)
      return W4A8_ERR_UNSUPPORTED;
  }
  return W4A8_OK;
}

Workspace workspace_layout(const w4a8_problem& p) {
  Workspace w;
  const std::size_t m = std::size_t(p.m), n = std::size_t(p.n), k = std::size_t(p.k);
  auto take = [&w](std::size_t bytes) {
    const std::size_t at = w.total;
    w.total += align256(bytes);
    return at;
  };
  if (p.correction) {
    w.w_dequant = take(n * k * sizeof(float));
    w.x_f32 = take(m * k * sizeof(float));
    w.out_f32 = take(m * n * sizeof(float));
  } else {
    if (!p.x_q) w.x_q = take(m * k);
    if (!p.x_scale) w.x_scale = take(m * sizeof(float));
  }
  return w;
}

}  // namespace w4a8::kern

extern "C" w4a8_status w4a8_check_problem(const w4a8_problem* p) {
  return p ? w4a8::kern::check_problem(*p) : W4A8_ERR_ARGUMENT;
}

extern "C" size_t w4a8_gemm_cuda_workspace_size(const w4a8_problem* p) {
  if (!p || w4a8::kern::check_problem(*p) != W4A8_OK) return 0;
  return w4a8::kern::workspace_layout(*p).total;
}
