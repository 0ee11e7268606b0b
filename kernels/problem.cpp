#include "kernels/problem.hpp"

#include <cstring>
#include <string>

namespace w4a8::kern {
namespace {

// Why check_problem refused a problem: one text per check, in the order they run.
enum Reason : int {
  kOk,
  kShape,
  kBits6,
  kBitsBad,
  kScaleF32,
  kScaleDtypeBad,
  kContract,
  kRotation,
  kDtypeBad,
  kPolicyBad,
  kNullOperand,
  kNullIo,
  kAlignWeight,
  kAlignInter,
  kAlignScales,
  kTooLarge,
  kKTooLarge,
  kCublasInt,
  kGridRows,
  kReasonCount
};
struct ReasonRow {
  w4a8_status status;
  const char* text;
};
constexpr ReasonRow kReasons[kReasonCount] = {
    {W4A8_OK, ""},
    {W4A8_ERR_ARGUMENT, "m < 0, n <= 0 or k <= 0"},
    {W4A8_ERR_UNSUPPORTED, "6-bit codes (bits = 6) unsupported by this kernel"},
    {W4A8_ERR_ARGUMENT, "bits must be 0, 4 or 6"},
    {W4A8_ERR_UNSUPPORTED, "F32 group scales (s_rel_dtype = W4A8_SCALE_F32) unsupported by this kernel"},
    {W4A8_ERR_ARGUMENT, "s_rel_dtype must be W4A8_SCALE_FP8_E4M3 or W4A8_SCALE_F32"},
    {W4A8_ERR_CONTRACT,
     "kernel contract: K % 16, K % group_size and K % convrot_groupsize must be 0, group_size >= 4 dividing 16 or a "
     "multiple of 16"},
    {W4A8_ERR_CONTRACT, "kernel contract: convrot_groupsize must be a power of 4"},
    {W4A8_ERR_ARGUMENT, "x_dtype, out_dtype or bias_dtype is not a w4a8_dtype"},
    {W4A8_ERR_ARGUMENT, "act_policy must be 0 (float32) or 1 (eager)"},
    {W4A8_ERR_ARGUMENT, "weight, s_rel or s_channel is NULL"},
    {W4A8_ERR_ARGUMENT, "x or out is NULL, or ldx < k, or ldo < n"},
    {W4A8_ERR_ARGUMENT, "weight must be 8-byte aligned"},
    {W4A8_ERR_ARGUMENT, "x_q and w_q must be 16-byte aligned"},
    {W4A8_ERR_ARGUMENT, "s_rel must be 4-byte aligned"},
    {W4A8_ERR_UNSUPPORTED, "an operand or result has more than 2^40 elements: unsupported by this kernel"},
    {W4A8_ERR_UNSUPPORTED, "k above 2^31 - 256 unsupported by this kernel"},
    {W4A8_ERR_UNSUPPORTED, "correction path: m, n and k must fit cuBLAS's int; larger unsupported by this kernel"},
    {W4A8_ERR_UNSUPPORTED, "more than 65535 row tiles unsupported by this kernel"},
};

// An enum field as the int a C caller stored (any value: reading it as the C++ enum is undefined
// when the value is outside the enum's range).
template <class E>
int raw(const E& e) {
  static_assert(sizeof(E) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

bool is_power_of_4(std::int64_t r) { return r >= 4 && (r & (r - 1)) == 0 && (r & 0x5555555555555555LL) != 0; }
bool dtype_ok(int d) { return d >= W4A8_DTYPE_F32 && d <= W4A8_DTYPE_F16; }
// a * b <= kMaxProblemElements, for 0 <= a, b.
bool product_ok(std::int64_t a, std::int64_t b) { return a == 0 || b <= kMaxProblemElements / a; }
std::size_t align256(std::size_t v) { return (v + 255) & ~std::size_t(255); }
bool aligned(const void* p, std::uintptr_t a) { return reinterpret_cast<std::uintptr_t>(p) % a == 0; }

// The layer-level checks, in check_problem's order: sizes, code width, scale storage, the contract.
// m < 0 is refused here too (check_problem's first check covers m, n and k together).
Reason layer_failure(const LayerShape& s, std::int64_t m) {
  if (m < 0 || s.n <= 0 || s.k <= 0) return kShape;
  if (s.bits == 6) return kBits6;
  if (s.bits != 0 && s.bits != 4) return kBitsBad;
  if (s.s_rel_dtype == W4A8_SCALE_F32) return kScaleF32;
  if (s.s_rel_dtype != W4A8_SCALE_FP8_E4M3) return kScaleDtypeBad;
  const std::int64_t g = s.group_size, r = s.convrot_groupsize;
  if (g < 4 || s.k % 16 != 0 || s.k % g != 0 || r <= 0 || s.k % r != 0 || (16 % g != 0 && g % 16 != 0))
    return kContract;
  if (!is_power_of_4(r)) return kRotation;
  return kOk;
}

// This build's limits on the weight alone: kTooLarge (N * K elements), kKTooLarge, or kOk.
Reason layer_size_failure(std::int64_t n, std::int64_t k) {
  if (!product_ok(n, k)) return kTooLarge;
  return k > kMaxK ? kKTooLarge : kOk;
}

Reason first_failure(const w4a8_problem& p) {
  const LayerShape shape{p.n, p.k, p.group_size, p.convrot_groupsize, p.bits, raw(p.s_rel_dtype)};
  if (const Reason r = layer_failure(shape, p.m); r != kOk) return r;
  if (!dtype_ok(raw(p.x_dtype)) || !dtype_ok(raw(p.out_dtype)) || (p.bias && !dtype_ok(raw(p.bias_dtype))))
    return kDtypeBad;
  if (p.act_policy != kPolicyF32 && p.act_policy != kPolicyEager) return kPolicyBad;
  if (!p.weight || !p.s_rel || !p.s_channel) return kNullOperand;
  if (p.m > 0 && (!p.x || !p.out || p.ldx < p.k || p.ldo < p.n)) return kNullIo;
  if (!aligned(p.weight, 8)) return kAlignWeight;
  if (!aligned(p.x_q, 16) || !aligned(p.w_q, 16)) return kAlignInter;
  if (!aligned(p.s_rel, 4)) return kAlignScales;
  const Reason size = layer_size_failure(p.n, p.k);
  if (size == kTooLarge || !product_ok(p.m, p.ldx) || !product_ok(p.m, p.ldo) || !product_ok(p.m, p.k) ||
      !product_ok(p.m, p.n))
    return kTooLarge;
  if (size == kKTooLarge) return kKTooLarge;
  if (p.correction) {
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX) return kCublasInt;
  } else {
    const TileConfig c = tile_config(pick_tile(p.m));
    if (ceil_div(p.m, c.bm) > kMaxGridY || ceil_div(p.n, c.bn) > INT32_MAX || p.m > INT32_MAX) return kGridRows;
  }
  return kOk;
}

thread_local std::string t_last_error;

}  // namespace

w4a8_status check_problem(const w4a8_problem& p, const char** why) {
  const Reason r = first_failure(p);
  if (why) *why = kReasons[r].text;
  return kReasons[r].status;
}

w4a8_status check_layer_shape(const LayerShape& s, const char** why) {
  Reason r = layer_failure(s, 0);
  if (r == kOk) r = layer_size_failure(s.n, s.k);
  if (why) *why = kReasons[r].text;
  return kReasons[r].status;
}

void set_last_error(const char* text) { t_last_error = text ? text : ""; }
void set_last_error(const char* where, const char* detail) {
  t_last_error = std::string(where) + ": " + (detail ? detail : "");
}
const char* last_error() { return t_last_error.c_str(); }

namespace {
struct Tiles {
  TileKind kind;
  long long tiles, k_tiles;
};
Tiles tiles_of(const w4a8_problem& p) {
  const TileKind kind = pick_tile(p.m);
  const TileConfig c = tile_config(kind);
  return {kind, ceil_div(p.m, c.bm) * ceil_div(p.n, c.bn), ceil_div(p.k, c.bk)};
}
}  // namespace

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
    return w;
  }
  w.x_q_frag = take(std::size_t(frag_rows(p.m)) * std::size_t(frag_chunks(p.k)) * kChunkK);
  if (!p.x_scale) w.x_scale = take(m * sizeof(float));
  w.table = take(kDecodeTableBytes);
  const Tiles t = tiles_of(p);
  if (plan_splits(t.tiles, t.k_tiles, kMaxSlots) > 1) {  // some device could split: room for the sums
    w.split_acc = take(m * n * sizeof(std::int32_t));
    w.split_count = take(std::size_t(t.tiles) * sizeof(std::uint32_t));
  }
  return w;
}

GemmPlan plan_gemm(const w4a8_problem& p, const DeviceShape& dev) {
  GemmPlan plan;
  const Tiles t = tiles_of(p);
  const TileConfig c = tile_config(t.kind);
  plan.kind = t.kind;
  plan.tiles_m = ceil_div(p.m, c.bm);
  plan.tiles_n = ceil_div(p.n, c.bn);
  plan.k_tiles = t.k_tiles;
  plan.scale_words = scale_words(c.bk, p.group_size);
  plan.smem_bytes = gemm_smem_bytes(c, plan.scale_words);
  long long slots = static_cast<long long>(dev.sms) * dev.blocks_per_sm;
  if (slots > kMaxSlots) slots = kMaxSlots;
  plan.splits = plan_splits(t.tiles, t.k_tiles, slots);
  return plan;
}

ActArgs make_act_args(const w4a8_problem& p, const Workspace& w, unsigned char* ws, const GemmPlan& plan) {
  ActArgs a;
  a.m = p.m, a.k = p.k, a.r = p.convrot_groupsize, a.x = p.x, a.x_dtype = p.x_dtype, a.ldx = p.ldx;
  a.policy = p.act_policy;
  a.x_q = p.x_q;
  a.x_q_frag = reinterpret_cast<std::int8_t*>(ws + w.x_q_frag);
  a.frag_chunks = frag_chunks(p.k);
  a.x_scale = p.x_scale ? p.x_scale : reinterpret_cast<float*>(ws + w.x_scale);
  a.table = reinterpret_cast<std::int8_t*>(ws + w.table);
  a.codebook = p.codebook;
  if (plan.splits > 1) {
    a.zero = reinterpret_cast<std::uint32_t*>(ws + w.split_acc);
    const std::size_t end = w.split_count + std::size_t(plan.tiles_m * plan.tiles_n) * sizeof(std::uint32_t);
    a.zero_words = static_cast<long long>((end - w.split_acc) / sizeof(std::uint32_t));
  }
  return a;
}

GemmArgs make_gemm_args(const w4a8_problem& p, const Workspace& w, unsigned char* ws, const GemmPlan& plan) {
  GemmArgs g;
  g.m = p.m, g.n = p.n, g.k = p.k, g.group = p.group_size;
  g.x_q = reinterpret_cast<const std::int8_t*>(ws + w.x_q_frag);
  g.frag_chunks = frag_chunks(p.k);
  g.x_scale = p.x_scale ? p.x_scale : reinterpret_cast<const float*>(ws + w.x_scale);
  g.weight = reinterpret_cast<const std::uint8_t*>(p.weight);
  g.s_rel = p.s_rel;
  g.s_rel_bytes = p.n * (p.k / p.group_size);
  g.s_channel = p.s_channel;
  g.table = reinterpret_cast<const std::int8_t*>(ws + w.table);
  g.bias = p.bias, g.bias_dtype = p.bias_dtype, g.out = p.out, g.out_dtype = p.out_dtype, g.ldo = p.ldo;
  g.acc_out = p.acc, g.w_q_out = p.w_q;
  g.splits = plan.splits;
  if (plan.splits > 1) {
    g.split_acc = reinterpret_cast<std::int32_t*>(ws + w.split_acc);
    g.split_count = reinterpret_cast<std::uint32_t*>(ws + w.split_count);
  }
  g.scale_words = plan.scale_words;
  g.small_group = p.group_size < 16;
  g.codes16 = p.k % 32 == 0 && aligned(p.weight, 16) && !g.small_group;
  g.group_shift = p.group_size == 8 ? 3 : 2;
  g.kg = p.k / p.group_size;
  g.kg_mod4 = static_cast<std::uint32_t>(g.kg & 3);
  g.group_div = make_fast_div(static_cast<std::uint32_t>(p.group_size));
  g.group16_div = make_fast_div(static_cast<std::uint32_t>(p.group_size >= 16 ? p.group_size / 16 : 1));
  g.words_div = make_fast_div(static_cast<std::uint32_t>(plan.scale_words));
  return g;
}

}  // namespace w4a8::kern

extern "C" w4a8_status w4a8_check_problem(const w4a8_problem* p) {
  if (!p) {
    w4a8::kern::set_last_error("w4a8_check_problem: problem is NULL");
    return W4A8_ERR_ARGUMENT;
  }
  const char* why = "";
  const w4a8_status s = w4a8::kern::check_problem(*p, &why);
  if (s != W4A8_OK) w4a8::kern::set_last_error("w4a8_check_problem", why);
  return s;
}

extern "C" size_t w4a8_gemm_cuda_workspace_size(const w4a8_problem* p) {
  if (!p || w4a8::kern::check_problem(*p) != W4A8_OK) return 0;
  return w4a8::kern::workspace_layout(*p).total;
}
