#include "gemm/operands.hpp"

#include <cmath>
#include <string>

#include "core/checked.hpp"

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
  if (layer.codebook_shape) d.codebook = TensorDesc{st::Dtype::F32, *layer.codebook_shape};
  if (layer.correction_shape) d.correction = TensorDesc{st::Dtype::F32, *layer.correction_shape};
  if (layer.bias_shape) d.bias = TensorDesc{to_st(layer.bias_dtype), *layer.bias_shape};
  d.input = {input_dtype, input_shape};
  d.group_size = layer.group_size;
  d.convrot_groupsize = layer.convrot_groupsize;
  return d;
}

OperandDesc describe(const Layer& layer, const Activations& x) { return describe(layer, to_st(x.dtype), x.shape); }

Status validate_operands(const OperandDesc& d) {
  // 1. rank and dtype of the packed weight.
  if (d.weight.shape.size() != 2 || d.weight.dtype != st::Dtype::I8)
    return make_error(ErrorKind::OpPackedWeight);
  const std::uint64_t n = d.weight.shape[0];
  const unsigned __int128 k = (unsigned __int128)d.weight.shape[1] * 2;
  const std::int64_t g = d.group_size, r = d.convrot_groupsize;
  // 2. the kernel contract, short-circuiting as Python's `or` chain does (k is non-negative, so a
  // zero remainder has the same meaning under Python's and C's modulo).
  auto divides = [&](std::int64_t div) {  // k % div == 0, div != 0
    const unsigned __int128 a = div < 0 ? (unsigned __int128)(-(__int128)div) : (unsigned __int128)div;
    return k % a == 0;
  };
  bool bad = g < 4 || k % 16 != 0 || !divides(g);
  if (!bad && r == 0)
    return make_error(ErrorKind::UsageError,
                      {"convrot_groupsize=0: upstream raises ZeroDivisionError: integer modulo by zero"});
  bad = bad || !divides(r) || (16 % g != 0 && g % 16 != 0);
  if (bad)
    return make_error(ErrorKind::OpContract, {u128_to_string(k), std::to_string(g), std::to_string(r)});
  const std::uint64_t groups = std::uint64_t(k / (unsigned __int128)g);  // <= k/4 < 2^64
  // 3-6. tensor shapes.
  const Shape s_rel_want{n, groups};
  if (d.s_rel.shape != s_rel_want)
    return make_error(ErrorKind::OpSRelShape, {shape_repr(s_rel_want), shape_repr(d.s_rel.shape)});
  if (d.s_channel.shape != Shape{n})
    return make_error(ErrorKind::OpSChannelShape, {shape_repr(Shape{n}), shape_repr(d.s_channel.shape)});
  if (d.correction && d.correction->shape != Shape{groups, n})
    return make_error(ErrorKind::OpCorrectionShape, {shape_repr(Shape{groups, n}), shape_repr(d.correction->shape)});
  if (d.codebook && d.codebook->shape != Shape{16})
    return make_error(ErrorKind::OpCodebookShape, {shape_repr(d.codebook->shape)});
  // 7. the activation's inner size.
  if (d.input.shape.empty())
    return make_error(ErrorKind::UsageError, {"input is 0-d: upstream raises IndexError: tuple index out of range"});
  if ((unsigned __int128)d.input.shape.back() != k)
    return make_error(ErrorKind::OpInputK, {std::to_string(d.input.shape.back()), u128_to_string(k)});
  // Upstream's ConvRot helper, reached by both paths after the checks above.
  if (!upstream_hadamard_ok(r)) return make_error(ErrorKind::OpHadamardSize, {std::to_string(r)});
  // Ours: the dtypes this reference computes with, then sizes it can afford.
  if (d.s_rel.dtype != st::Dtype::F8_E4M3)
    return make_error(ErrorKind::OpDtype, {"s_rel", "F8_E4M3", dtype_text(d.s_rel.dtype)});
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
  // k fits 64 bits here (it equals input.shape.back()).
  W4A8_TRY(check_size("weight", Shape{n, std::uint64_t(k)}));
  W4A8_TRY(check_size("input", d.input.shape));
  Shape out_shape(d.input.shape.begin(), d.input.shape.end() - 1);
  out_shape.push_back(n);
  W4A8_TRY(check_size("output", out_shape));
  return Ok{};
}

Status validate_call(const Layer& layer, const Activations& x) {
  W4A8_TRY(validate_operands(describe(layer, x)));
  const std::uint64_t n = layer.N(), k = layer.K(), groups = k / std::uint64_t(layer.group_size);
  auto mismatch = [](const char* what, std::size_t have, std::uint64_t want) {
    return make_error(ErrorKind::UsageError, {std::string(what) + " holds " + std::to_string(have) +
                                                  " values, its shape needs " + std::to_string(want)});
  };
  // Sizes below are bounded by kMaxElements (checked above), so the products cannot overflow.
  if (layer.weight.size() != n * (k / 2)) return mismatch("weight", layer.weight.size(), n * (k / 2));
  if (layer.s_rel.size() != n * groups) return mismatch("s_rel", layer.s_rel.size(), n * groups);
  if (layer.s_channel.size() != n) return mismatch("s_channel", layer.s_channel.size(), n);
  if (layer.has_codebook() && layer.codebook.size() != 16) return mismatch("codebook", layer.codebook.size(), 16);
  if (layer.has_correction() && layer.correction.size() != n * groups)
    return mismatch("correction", layer.correction.size(), n * groups);
  if (layer.has_bias() && layer.bias.size() != n) return mismatch("bias", layer.bias.size(), n);
  if (x.values.size() != x.M() * k) return mismatch("input", x.values.size(), x.M() * k);
  return Ok{};
}

Status check_decodable(const Layer& layer) {
  // v * NaN is NaN for every code, so a NaN scale byte poisons its whole group; a NaN codebook entry
  // poisons its code, and an infinite one poisons it under a zero scale (inf * 0). Scan scale bytes
  // (cheap) and only look at codes when the codebook has such an entry.
  bool code_nan[16] = {}, code_inf[16] = {};
  bool any_code_nan = false, any_code_inf = false;
  if (layer.has_codebook())
    for (int c = 0; c < 16; ++c) {
      const float v = layer.codebook[std::size_t(c)];
      any_code_nan |= (code_nan[c] = v != v);
      any_code_inf |= (code_inf[c] = std::isinf(v));
    }
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size), groups = k / g;
  static const char kHex[] = "0123456789abcdef";
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint8_t* row = layer.weight.data() + i * (k / 2);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const std::uint8_t b = layer.s_rel[i * groups + q];
      const bool scale_nan = fp8_e4m3fn_is_nan(b), scale_zero = (b & 0x7F) == 0;
      if (!scale_nan && !any_code_nan && !(scale_zero && any_code_inf)) continue;
      for (std::uint64_t j = q * g; j < (q + 1) * g; ++j) {
        const std::uint8_t c = unpack_code(row, j);
        if (scale_nan || code_nan[c] || (scale_zero && code_inf[c]))
          return make_error(ErrorKind::OpNanWeight, {std::to_string(i), std::to_string(j), std::to_string(c),
                                                     std::string{kHex[b >> 4], kHex[b & 15]}});
      }
    }
  }
  return Ok{};
}

}  // namespace w4a8::gemm
