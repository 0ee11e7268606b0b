#include "gemm/operands.hpp"

#include <cmath>
#include <cstdio>
#include <string>

#include "core/checked.hpp"
#include "core/hex.hpp"

namespace w4a8::gemm {
namespace {

// Dtype names as safetensors spells them, for OpDtype (kept here: w4a8_gemm does not link the container
// library, whose dtype_name() has the full table).
const char* dtype_text(st::Dtype d) {
  switch (d) {
    case st::Dtype::F32: return "F32";
    case st::Dtype::BF16: return "BF16";
    case st::Dtype::F16: return "F16";
    case st::Dtype::I8: return "I8";
    case st::Dtype::U8: return "U8";
    case st::Dtype::F8_E4M3: return "F8_E4M3";
    case st::Dtype::F8_E5M2: return "F8_E5M2";
    case st::Dtype::F64: return "F64";
    case st::Dtype::I32: return "I32";
    default: return "another dtype";
  }
}

bool is_act_dtype(st::Dtype d) {
  return d == st::Dtype::F32 || d == st::Dtype::BF16 || d == st::Dtype::F16;
}

st::Dtype to_st(FloatDtype d) {
  switch (d) {
    case FloatDtype::BF16: return st::Dtype::BF16;
    case FloatDtype::F16: return st::Dtype::F16;
    default: return st::Dtype::F32;
  }
}

// Upstream's _build_hadamard test: size >= 4, a power of two, and math.log(size, 4) % 1 == 0, which
// (float log) also rejects 4^29 and 4^31.
bool upstream_hadamard_ok(std::int64_t r) {
  return is_power_of_4(r) && r != (std::int64_t(1) << 58) && r != (std::int64_t(1) << 62);
}

std::optional<std::uint64_t> elements(const Shape& s) {
  std::uint64_t n = 1;
  for (auto d : s) {
    auto m = checked_mul(n, d);
    if (!m) return std::nullopt;
    n = *m;
  }
  return n;
}

Status check_size(const char* what, const Shape& s) {
  auto n = elements(s);
  if (!n || *n > kMaxElements)
    return make_error(ErrorKind::OpTooLarge,
                      {what, n ? std::to_string(*n) : std::string("more than 2^64"), std::to_string(kMaxElements)});
  return Ok{};
}

}  // namespace

std::uint64_t Activations::M() const {
  if (shape.empty()) return 0;
  std::uint64_t m = 1;
  for (std::size_t i = 0; i + 1 < shape.size(); ++i) m *= shape[i];  // bounded by validate_operands
  return m;
}

std::string shape_repr(const Shape& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  if (s.size() == 1) out += ",";
  return out + ")";
}

OperandDesc describe(const Layer& layer, st::Dtype input_dtype, const Shape& input_shape) {
  OperandDesc d;
  d.weight = {layer.weight_dtype, layer.weight_shape};
  d.s_rel = {layer.s_rel_dtype, layer.s_rel_shape};
  d.s_channel = {layer.s_channel_dtype, layer.s_channel_shape};
  if (layer.codebook_shape) d.codebook = TensorDesc{layer.codebook_dtype, *layer.codebook_shape};
  if (layer.correction_shape) d.correction = TensorDesc{layer.correction_dtype, *layer.correction_shape};
  if (layer.bias_shape) d.bias = TensorDesc{to_st(layer.bias_dtype), *layer.bias_shape};
  d.input = {input_dtype, input_shape};
  d.group_size = layer.group_size;
  d.convrot_groupsize = layer.convrot_groupsize;
  return d;
}

OperandDesc describe(const Layer& layer, const Activations& x) { return describe(layer, to_st(x.dtype), x.shape); }

namespace {

using u128 = unsigned __int128;

// k % div == 0 as Python computes it for k >= 0 (a zero remainder means the same under Python's
// and C's modulo); pre: div != 0.
bool divides(u128 k, std::int64_t div) {
  const u128 a = div < 0 ? u128(-(__int128)div) : u128(div);
  return k % a == 0;
}

Status zero_division() {
  return make_error(ErrorKind::UsageError,
                    {"convrot_groupsize=0: upstream raises ZeroDivisionError: integer modulo by zero"});
}

// Shared tail of both releases: steps 3-6 of 0.2.35 / 8-11 of 0.2.40, then the input's inner size.
Status check_shapes_and_input(const OperandDesc& d, std::uint64_t n, u128 k, std::uint64_t groups) {
  const Shape s_rel_want{n, groups};
  if (d.s_rel.shape != s_rel_want)
    return make_error(ErrorKind::OpSRelShape, {shape_repr(s_rel_want), shape_repr(d.s_rel.shape)});
  if (d.s_channel.shape != Shape{n})
    return make_error(ErrorKind::OpSChannelShape, {shape_repr(Shape{n}), shape_repr(d.s_channel.shape)});
  if (d.correction && d.correction->shape != Shape{groups, n})
    return make_error(ErrorKind::OpCorrectionShape, {shape_repr(Shape{groups, n}), shape_repr(d.correction->shape)});
  if (d.codebook && d.codebook->shape != Shape{16})
    return make_error(ErrorKind::OpCodebookShape, {shape_repr(d.codebook->shape)});
  if (d.input.shape.empty())
    return make_error(ErrorKind::UsageError, {"input is 0-d: upstream raises IndexError: tuple index out of range"});
  if (u128(d.input.shape.back()) != k)
    return make_error(ErrorKind::OpInputK, {std::to_string(d.input.shape.back()), u128_to_string(k)});
  return Ok{};
}

// comfy-kitchen 0.2.30-0.2.35: K = 2 * cols, one combined contract check.
Status upstream_packed_k(const OperandDesc& d) {
  const std::uint64_t n = d.weight.shape[0];
  const u128 k = u128(d.weight.shape[1]) * 2;
  const std::int64_t g = d.group_size, r = d.convrot_groupsize;
  // Python's `or` chain short-circuits: K % R (a ZeroDivisionError at R = 0) runs only when the
  // earlier terms pass.
  bool bad = g < 4 || k % 16 != 0 || !divides(k, g);
  if (!bad && r == 0) return zero_division();
  bad = bad || !divides(k, r) || (16 % g != 0 && g % 16 != 0);
  if (bad) return make_error(ErrorKind::OpContract, {u128_to_string(k), std::to_string(g), std::to_string(r)});
  return check_shapes_and_input(d, n, k, std::uint64_t(k / u128(g)));  // K/G <= K/4 < 2^64
}

// comfy-kitchen >= 0.2.36: K = s_rel.shape[1] * G, bits from the row width.
Status upstream_scale_grid_k(const OperandDesc& d) {
  if (d.s_rel.shape.size() != 2) return make_error(ErrorKind::OpSRelRank);
  const std::int64_t g = d.group_size, r = d.convrot_groupsize;
  if (g < 4 || (16 % g != 0 && g % 16 != 0)) return make_error(ErrorKind::OpGroupSize, {std::to_string(g)});
  const std::uint64_t n = d.weight.shape[0], cols = d.weight.shape[1];
  const u128 k = u128(d.s_rel.shape[1]) * u128(g);  // < 2^127
  const u128 bytes8 = u128(cols) * 8;
  const u128 bits = k > 0 ? bytes8 / k : 0;
  // bits is 4 or 6 before k * bits is formed, so k * bits <= cols * 8 < 2^67 cannot overflow.
  if (k == 0 || (bits != 4 && bits != 6) || k * bits != bytes8)
    return make_error(ErrorKind::OpRowWidth, {std::to_string(cols), u128_to_string(k)});
  if (bits == 6 && (k % 32 != 0 || g < 16 || g % 16 != 0))
    return make_error(ErrorKind::OpSixBitLayout, {u128_to_string(k), std::to_string(g)});
  if (bits == 6 && (d.codebook || d.correction)) return make_error(ErrorKind::OpSixBitUniform);
  if (k % 16 != 0) return make_error(ErrorKind::OpKDivisible, {u128_to_string(k), std::to_string(r)});
  if (r == 0) return zero_division();
  if (!divides(k, r)) return make_error(ErrorKind::OpKDivisible, {u128_to_string(k), std::to_string(r)});
  return check_shapes_and_input(d, n, k, d.s_rel.shape[1]);  // K // G
}

}  // namespace

namespace {

// Upstream's eager integer path on an empty problem, after its checks (EmptyProblem::AsUpstream):
// int8_linear rotates x.reshape(-1, K // R, R) (K = 0: "-1" is ambiguous), sizes its output chunks
// with 256 MiB // (N * 4) (N = 0), then torch.cat()s the chunks of M rows (M = 0: none).
Status upstream_empty_problem(const OperandDesc& d) {
  if (d.correction) return Ok{};  // F.linear: every empty problem computes
  const std::uint64_t k = d.input.shape.back();
  if (k == 0)
    return make_error(ErrorKind::UsageError,
                      {"K=0: upstream raises RuntimeError: cannot reshape tensor of 0 elements into shape [-1, 0, " +
                       std::to_string(d.convrot_groupsize) +
                       "] because the unspecified dimension size -1 can be any value and is ambiguous"});
  if (d.weight.shape[0] == 0)
    return make_error(ErrorKind::UsageError,
                      {"N=0: upstream raises ZeroDivisionError: integer division or modulo by zero"});
  for (std::size_t i = 0; i + 1 < d.input.shape.size(); ++i)
    if (d.input.shape[i] == 0) return make_error(ErrorKind::OpEmptyBatch);
  return Ok{};
}

}  // namespace

bool comfy_kitchen_only_storage(const OperandDesc& d, upstream::ComfyKitchen ck) {
  if (d.weight.shape.size() != 2 || d.weight.dtype != st::Dtype::I8) return false;
  if (d.s_rel.dtype == st::Dtype::F32) return true;
  if (d.s_rel.dtype != st::Dtype::F8_E4M3 || upstream::profile(ck).operands != upstream::CkOperands::ScaleGridK ||
      d.s_rel.shape.size() != 2 || d.group_size <= 0)
    return false;
  const u128 k = u128(d.s_rel.shape[1]) * u128(d.group_size);  // < 2^127
  const u128 bytes8 = u128(d.weight.shape[1]) * 8;               // < 2^67
  return k > 0 && bytes8 % 6 == 0 && bytes8 / 6 == k;
}

Status validate_operands(const OperandDesc& d, upstream::ComfyKitchen ck, EmptyProblem empty) {
  if (d.weight.shape.size() != 2 || d.weight.dtype != st::Dtype::I8) return make_error(ErrorKind::OpPackedWeight);
  W4A8_TRY(upstream::profile(ck).operands == upstream::CkOperands::PackedK ? upstream_packed_k(d)
                                                                            : upstream_scale_grid_k(d));
  const std::uint64_t n = d.weight.shape[0];
  const std::uint64_t k = d.input.shape.back();  // == K, checked above
  const std::int64_t r = d.convrot_groupsize;
  // Upstream's ConvRot helper, reached by both paths after the checks above.
  if (!upstream_hadamard_ok(r)) return make_error(ErrorKind::OpHadamardSize, {std::to_string(r)});
  if (empty == EmptyProblem::AsUpstream) W4A8_TRY(upstream_empty_problem(d));
  // Ours: the dtypes this reference computes with, then sizes it can afford.
  if (d.s_rel.dtype != st::Dtype::F8_E4M3 && d.s_rel.dtype != st::Dtype::F32)
    return make_error(ErrorKind::OpDtype, {"s_rel", "F8_E4M3 or F32", dtype_text(d.s_rel.dtype)});
  if (d.s_channel.dtype != st::Dtype::F32)
    return make_error(ErrorKind::OpDtype, {"s_channel", "F32", dtype_text(d.s_channel.dtype)});
  if (d.codebook && d.codebook->dtype != st::Dtype::F32)
    return make_error(ErrorKind::OpDtype, {"codebook", "F32", dtype_text(d.codebook->dtype)});
  if (d.correction && d.correction->dtype != st::Dtype::F32)
    return make_error(ErrorKind::OpDtype, {"correction", "F32", dtype_text(d.correction->dtype)});
  if (!is_act_dtype(d.input.dtype))
    return make_error(ErrorKind::OpDtype, {"input", "F32, BF16 or F16", dtype_text(d.input.dtype)});
  if (d.bias && !is_act_dtype(d.bias->dtype))
    return make_error(ErrorKind::OpDtype, {"bias", "F32, BF16 or F16", dtype_text(d.bias->dtype)});
  if (d.bias && d.bias->shape != Shape{n})
    return make_error(ErrorKind::OpBiasShape, {shape_repr(Shape{n}), shape_repr(d.bias->shape)});
  W4A8_TRY(check_size("weight", Shape{n, k}));
  W4A8_TRY(check_size("input", d.input.shape));
  Shape out_shape(d.input.shape.begin(), d.input.shape.end() - 1);
  out_shape.push_back(n);
  W4A8_TRY(check_size("output", out_shape));
  return Ok{};
}

namespace {

// "0.2.40" -> {0, 2, 40}; nullopt unless non-empty decimal parts separated by single dots.
std::optional<std::vector<std::uint64_t>> release_parts(std::string_view v) {
  std::vector<std::uint64_t> out;
  std::uint64_t cur = 0;
  bool digits = false;
  for (char c : v) {
    if (c >= '0' && c <= '9') {
      if (cur > (UINT64_MAX - 9) / 10) return std::nullopt;
      cur = cur * 10 + std::uint64_t(c - '0');
      digits = true;
    } else if (c == '.' && digits) {
      out.push_back(cur);
      cur = 0;
      digits = false;
    } else {
      return std::nullopt;
    }
  }
  if (!digits) return std::nullopt;
  out.push_back(cur);
  return out;
}

}  // namespace

std::optional<upstream::ComfyKitchen> comfy_kitchen_for_release(std::string_view version) {
  const auto want = release_parts(version);
  if (!want) return std::nullopt;
  for (const auto& p : upstream::kComfyKitchenProfiles)
    if (*want <= *release_parts(p.version)) return p.id;
  return upstream::kLatestComfyKitchen;
}

Status validate_call(const Layer& layer, const Activations& x, upstream::ComfyKitchen ck) {
  W4A8_TRY(validate_operands(describe(layer, x), ck));
  const std::uint64_t n = layer.N(), k = layer.K(), groups = k / std::uint64_t(layer.group_size);
  const std::uint64_t row = layer.row_bytes(), sb = scale_bytes(layer.scale_dtype());
  auto mismatch = [](const char* what, std::size_t have, std::uint64_t want) {
    return make_error(ErrorKind::UsageError, {std::string(what) + " holds " + std::to_string(have) +
                                                  " values, its shape needs " + std::to_string(want)});
  };
  // Sizes below are bounded by kMaxElements (checked above; row <= K), so products cannot overflow.
  if (layer.weight.size() != n * row) return mismatch("weight", layer.weight.size(), n * row);
  if (layer.s_rel.size() != n * groups * sb) return mismatch("s_rel bytes", layer.s_rel.size(), n * groups * sb);
  if (layer.s_channel.size() != n) return mismatch("s_channel", layer.s_channel.size(), n);
  if (layer.has_codebook() && layer.codebook.size() != 16) return mismatch("codebook", layer.codebook.size(), 16);
  if (layer.has_correction() && layer.correction.size() != n * groups)
    return mismatch("correction", layer.correction.size(), n * groups);
  if (layer.has_bias() && layer.bias.size() != n) return mismatch("bias", layer.bias.size(), n);
  if (x.values.size() != x.M() * k) return mismatch("input", x.values.size(), x.M() * k);
  return Ok{};
}

namespace {

std::string float_text(float f) {
  if (f != f) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", double(f));
  return buf;
}

}  // namespace

Status check_decodable(const Layer& layer) {
  // v * s is NaN when s is NaN, v is NaN (a codebook entry), or one is infinite and the other 0.
  // Scan scales (cheap) and only look at codes where such a product is possible.
  const int bits = layer.bits();
  const int codes = 1 << bits;
  const float* cb = layer.has_codebook() ? layer.codebook.data() : nullptr;
  float value[64];
  bool any_value_nan = false, any_value_inf = false, any_value_zero = false;
  for (int c = 0; c < codes; ++c) {
    value[c] = code_value_bits(std::uint8_t(c), cb, bits);
    any_value_nan |= value[c] != value[c];
    any_value_inf |= std::isinf(value[c]);
    any_value_zero |= value[c] == 0.0f;
  }
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size), groups = k / g;
  const std::uint64_t row_bytes = layer.row_bytes();
  const ScaleDtype sd = layer.scale_dtype();
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint8_t* row = layer.weight.data() + i * row_bytes;
    for (std::uint64_t q = 0; q < groups; ++q) {
      const float s = layer.s_rel_at(i, q);
      const bool risky = s != s || any_value_nan || (s == 0.0f && any_value_inf) || (std::isinf(s) && any_value_zero);
      if (!risky) continue;
      for (std::uint64_t j = q * g; j < (q + 1) * g; ++j) {
        const std::uint8_t c = unpack_code_bits(row, k, j, bits);
        if (!decode_value_is_nan(value[c], s)) continue;
        std::string scale;
        if (sd == ScaleDtype::Fp8E4M3) {
          const std::uint8_t b = layer.s_rel[i * groups + q];
          scale = "byte 0x";
          hex::append(scale, b, 2);
        } else {
          scale = float_text(s);
        }
        return make_error(ErrorKind::OpNanWeight, {std::to_string(i), std::to_string(j), std::to_string(c), scale});
      }
    }
  }
  return Ok{};
}

}  // namespace w4a8::gemm
