// --strict: what the W4A8 kernels (comfy-kitchen validate_w4a8_operands, sglang KitchenW4A8Config)
// require beyond upstream's metadata checks, then the tensor data itself. Runs on one
// asym_w4a8_int8 layer that upstream accepted, checks in the order of docs/validator.md.
#include <bit>
#include <cmath>
#include <cstring>
#include <span>

#include "json/dump.hpp"
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {
namespace {

// FP8 E4M3FN has no infinities; S.1111.111 (0x7F, 0xFF) is its only NaN encoding.
constexpr bool is_fp8_e4m3_nan(std::uint8_t b) { return (b & 0x7F) == 0x7F; }

// The index of the first NaN byte of `bytes`, or bytes.size(). Eight bytes a step: with every high bit
// set, a NaN byte is 0xFF, so the word's complement has a zero byte exactly there (the usual
// (v - 0x01..) & ~v & 0x80.. test flags a word with one; its bytes are then checked one by one).
std::size_t first_fp8_e4m3_nan(std::span<const std::uint8_t> bytes) {
  constexpr std::uint64_t k01 = 0x0101010101010101ull, k80 = 0x8080808080808080ull;
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    const std::uint64_t v = ~(w | k80);
    if (((v - k01) & ~v & k80) != 0) break;
  }
  for (; i < bytes.size(); ++i)
    if (is_fp8_e4m3_nan(bytes[i])) return i;
  return bytes.size();
}

float load_f32(const std::uint8_t* p) {  // safetensors data is little-endian
  std::uint32_t bits = std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 | std::uint32_t{p[2]} << 16 |
                       std::uint32_t{p[3]} << 24;
  return std::bit_cast<float>(bits);
}

bool is_power_of_4_at_least_4(long long r) {
  if (r < 4) return false;
  const auto u = static_cast<std::uint64_t>(r);
  return std::has_single_bit(u) && std::countr_zero(u) % 2 == 0;
}

std::string float_str(float v) { return json::py_float_repr(static_cast<double>(v)); }

Status check_contract(const State& s, std::size_t layer, const py::BigInt& group) {
  const Layer& l = s.report.layers[layer];
  const st::Name& p = l.prefix;
  const TensorMeta& weight = *s.meta(layer, ".weight");
  const std::uint64_t n = weight.shape[0];
  const u128 k = u128{weight.shape[1]} * 2;
  if (n == 0 || k == 0)
    return make_error(ErrorKind::StrictZeroSized, {py::repr_str(p, s.opt.python), std::to_string(n), u128_to_string(k)});
  if (k % 16 != 0) return make_error(ErrorKind::StrictKMultiple16, {py::repr_str(p, s.opt.python), u128_to_string(k)});

  u128 g = 0;
  const bool g_small = small_nonneg(group, g);  // group >= 4 (upstream checked)
  const bool divides_16 = g_small && (g == 4 || g == 8 || g == 16);
  if (!divides_16 && mod_small(group, 16) != 0)
    return make_error(ErrorKind::StrictGroupSizeShape, {py::repr_str(p, s.opt.python), group.text});
  const u128 rest = g_small ? k % g : k;  // a huge group size leaves every input over
  if (rest != 0)
    return make_error(ErrorKind::StrictKMultipleGroup,
                      {py::repr_str(p, s.opt.python), u128_to_string(k), group.text, u128_to_string(rest)});

  if (const json::Value* c = l.marker.get("convrot");
      c != nullptr && !(c->kind == json::Kind::Bool && c->boolean))
    return make_error(ErrorKind::StrictConvrotNotTrue, {py::repr_str(p, s.opt.python), json::dump(*c)});
  const json::Value* rv = l.marker.get("convrot_groupsize");
  Result<py::BigInt> r = py::to_int_or(rv, comfy_format(ComfyFormatId::W4a8).convrot_groupsize, s.opt.python);
  if (!r.ok()) return std::move(r).error();
  long long rg = 0;
  if (!r->to_i64(rg) || !is_power_of_4_at_least_4(rg))
    return make_error(ErrorKind::StrictConvrotGroupsize, {py::repr_str(p, s.opt.python), r->text});
  if (k % static_cast<std::uint64_t>(rg) != 0)
    return make_error(ErrorKind::StrictKMultipleConvrot, {py::repr_str(p, s.opt.python), u128_to_string(k), r->text});

  if (const TensorMeta* bias = s.meta(layer, ".bias")) {
    const bool dtype_ok =
        bias->dtype == st::Dtype::BF16 || bias->dtype == st::Dtype::F16 || bias->dtype == st::Dtype::F32;
    if (!dtype_ok || !shape_is(bias->shape, {n})) {
      const std::uint64_t expected[] = {n};
      return make_error(ErrorKind::StrictBias, {py::repr_str(p, s.opt.python), st::dtype_name(bias->dtype),
                                                py::repr_shape(bias->shape), py::repr_shape(expected)});
    }
  }
  return Ok{};
}

// Data checks. Shapes and dtypes were validated upstream and the container validated the byte
// ranges, so each span holds exactly its elements; only views into the mapping are read.
Status check_data(const State& s, std::size_t layer) {
  const st::Name& p = s.report.layers[layer].prefix;
  const TensorMeta& s_rel = *s.meta(layer, ".weight_s_rel");
  const std::uint64_t groups = s_rel.shape[1];
  const std::span<const std::uint8_t> rel = s.data(s_rel);
  if (const std::size_t i = first_fp8_e4m3_nan(rel); i < rel.size()) {
    const char* hex = rel[i] == 0x7F ? "7f" : "ff";
    return make_error(ErrorKind::StrictNanScale, {py::repr_str(p, s.opt.python), hex, std::to_string(i / groups),
                                                  std::to_string(i % groups)});
  }
  const std::span<const std::uint8_t> ch = s.data(*s.meta(layer, ".weight_s_channel"));
  for (std::size_t i = 0; i + 4 <= ch.size(); i += 4) {
    const float v = load_f32(ch.data() + i);
    if (!std::isfinite(v) || v < 0)
      return make_error(ErrorKind::StrictChannelScale, {py::repr_str(p, s.opt.python), float_str(v), std::to_string(i / 4)});
  }
  if (const TensorMeta* cb = s.meta(layer, ".weight_codebook")) {
    const std::span<const std::uint8_t> d = s.data(*cb);
    for (std::size_t i = 0; i + 4 <= d.size(); i += 4) {
      const float v = load_f32(d.data() + i);
      if (!std::isfinite(v))
        return make_error(ErrorKind::StrictCodebook, {py::repr_str(p, s.opt.python), float_str(v), std::to_string(i / 4)});
    }
  }
  if (const TensorMeta* corr = s.meta(layer, ".weight_correction")) {
    const std::uint64_t n = corr->shape[1];  // (K // G, N); N > 0 was checked
    const std::span<const std::uint8_t> d = s.data(*corr);
    for (std::size_t i = 0; i + 4 <= d.size(); i += 4) {
      const float v = load_f32(d.data() + i);
      if (!std::isfinite(v))
        return make_error(ErrorKind::StrictCorrection, {py::repr_str(p, s.opt.python), float_str(v),
                                                        std::to_string(i / 4 / n), std::to_string(i / 4 % n)});
    }
  }
  return Ok{};
}

}  // namespace

void prefetch_strict_data(const State& s, std::size_t layer) {
  for (std::string_view suffix : {std::string_view(".weight_s_rel"), std::string_view(".weight_s_channel")})
    if (const TensorMeta* t = s.meta(layer, suffix)) {
      const std::span<const std::uint8_t> d = s.data(*t);
      if (!d.empty()) {
        __builtin_prefetch(d.data());
        __builtin_prefetch(d.data() + d.size() - 1);
      }
    }
}

Status check_strict(const State& s, std::size_t layer) {
  W4A8_TRY(check_contract(s, layer, s.group_sizes[layer]));
  return check_data(s, layer);
}

}  // namespace w4a8::validate::detail
