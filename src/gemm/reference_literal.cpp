// gemm_literal: the spec (w4a8-gemm.md) transcribed step by step, with no cleverness, as the oracle
// every faster implementation is compared against bit for bit.
#include <cstdlib>

#include "gemm/operands.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {

std::vector<std::int8_t> decode_weights(const Layer& layer) {
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size);
  const int bits = layer.bits();
  const float* cb = layer.has_codebook() ? layer.codebook.data() : nullptr;
  std::vector<std::int8_t> w(n * k);
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint8_t* row = layer.weight.data() + (i * layer.row_bytes());
    for (std::uint64_t j = 0; j < k; ++j) {
      const float v = code_value_bits(unpack_code_bits(row, k, j, bits), cb, bits);
      w[i * k + j] = decode_weight_value(v, layer.s_rel_at(i, j / g));
    }
  }
  return w;
}

void quantize_row(const float* x, std::int64_t k, std::int64_t r, ActPolicy p, FloatDtype act,
                  float* x_rot, std::int8_t* x_q, float* scale) {
  quantize_row_with(convrot_row, x, k, r, p, act, x_rot, x_q, scale);
}

void quantize_row_with(void (*rotate)(float*, std::int64_t, std::int64_t), const float* x, std::int64_t k,
                       std::int64_t r, ActPolicy p, FloatDtype act, float* x_rot, std::int8_t* x_q, float* scale) {
  for (std::int64_t j = 0; j < k; ++j) x_rot[j] = x[j];
  rotate(x_rot, k, r);
  if (p == ActPolicy::Eager)
    for (std::int64_t j = 0; j < k; ++j) x_rot[j] = round_to(act, x_rot[j]);
  float absmax = 0.0f;
  for (std::int64_t j = 0; j < k; ++j) {
    const float a = std::abs(x_rot[j]);
    if (a > absmax || a != a) absmax = a;  // NaN propagates like torch's amax
    if (absmax != absmax) break;
  }
  *scale = row_scale(absmax);
  const float div = division_scale(*scale, p, act);
  for (std::int64_t j = 0; j < k; ++j) x_q[j] = quantize_act(x_rot[j], div, p, act);
}

namespace {

// The correction path: W_rot = w_q * s_channel + correction, (Eager: rounded to the activation
// dtype), un-rotated, then out = x @ W^T summed over k in order in float32, plus bias, cast.
void correction_path(const Layer& layer, const Activations& x, const GemmOptions& opt, GemmResult& res) {
  const std::uint64_t m = res.M, n = res.N, k = res.K, g = std::uint64_t(layer.group_size);
  const FloatDtype act = opt.policy == ActPolicy::Eager ? x.dtype : FloatDtype::F32;
  res.w_dequant.assign(n * k, 0.0f);
  for (std::uint64_t i = 0; i < n; ++i) {
    float* w = res.w_dequant.data() + (i * k);
    for (std::uint64_t j = 0; j < k; ++j) {
      const float scaled = float(res.w_q[i * k + j]) * layer.s_channel[i];
      w[j] = round_to(act, scaled + layer.correction[(j / g) * n + i]);
    }
    convrot_row(w, std::int64_t(k), layer.convrot_groupsize);
    for (std::uint64_t j = 0; j < k; ++j) w[j] = round_to(act, w[j]);
  }
  res.out.assign(m * n, 0.0f);
  for (std::uint64_t a = 0; a < m; ++a)
    for (std::uint64_t i = 0; i < n; ++i) {
      float s = 0.0f;
      for (std::uint64_t j = 0; j < k; ++j) {
        const float prod = x.values[a * k + j] * res.w_dequant[i * k + j];
        s = s + prod;
      }
      // torch's F.linear in the GEMM dtype: the bias (in that dtype) added to the float32 sum,
      // rounded once to the GEMM dtype, then .to(out_dtype) (numerics.hpp corrected_output).
      res.out[a * n + i] = corrected_output(s, layer.has_bias(), layer.has_bias() ? layer.bias[i] : 0.0f, act,
                                            opt.out_dtype);
    }
}

}  // namespace

Result<GemmResult> gemm_literal(const Layer& layer, const Activations& x, const GemmOptions& opt) {
  W4A8_TRY(validate_call(layer, x, opt.comfy_kitchen));
  W4A8_TRY(check_decodable(layer));
  GemmResult res;
  res.policy = opt.policy;
  res.out_dtype = opt.out_dtype;
  res.isa = Isa::Scalar;
  res.comfy_kitchen = opt.comfy_kitchen;
  res.bits = layer.bits();
  res.M = x.M();
  res.N = layer.N();
  res.K = layer.K();
  const std::uint64_t m = res.M, n = res.N, k = res.K;
  // Step 1: the int8 grid.
  res.w_q = decode_weights(layer);
  if (layer.has_correction()) {
    res.correction_path = true;
    correction_path(layer, x, opt, res);
    return res;
  }
  // Steps 2-3: rotate and quantize each row.
  res.x_q.assign(m * k, 0);
  res.x_scale.assign(m, 0.0f);
  std::vector<float> rot(k);
  for (std::uint64_t a = 0; a < m; ++a)
    quantize_row(x.values.data() + (a * k), std::int64_t(k), layer.convrot_groupsize, opt.policy, x.dtype, rot.data(),
                 res.x_q.data() + (a * k), &res.x_scale[a]);
  // Step 4: exact integer dot products (int64), stored as int32 modulo 2^32 like torch's int32 mm.
  res.acc.assign(m * n, 0);
  for (std::uint64_t a = 0; a < m; ++a)
    for (std::uint64_t i = 0; i < n; ++i) {
      std::int64_t s = 0;
      for (std::uint64_t j = 0; j < k; ++j) s += std::int64_t(res.x_q[a * k + j]) * res.w_q[i * k + j];
      res.acc[a * n + i] = std::int32_t(std::uint32_t(std::uint64_t(s)));
    }
  // Step 5: the epilogue in upstream's order, output cast, then bias in the output dtype.
  res.out.assign(m * n, 0.0f);
  for (std::uint64_t a = 0; a < m; ++a)
    for (std::uint64_t i = 0; i < n; ++i)
      res.out[a * n + i] = finish_output(epilogue(res.acc[a * n + i], res.x_scale[a], layer.s_channel[i]),
                                         opt.out_dtype, layer.has_bias() ? &layer.bias[i] : nullptr);
  return res;
}

Result<GemmResult> gemm(Impl impl, const Layer& layer, const Activations& x, const GemmOptions& opt) {
  return impl == Impl::Literal ? gemm_literal(layer, x, opt) : gemm_fast(layer, x, opt);
}

}  // namespace w4a8::gemm
