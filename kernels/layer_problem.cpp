#include "kernels/layer_problem.hpp"

#include <cstring>
#include <string>

#include "gemm/operands.hpp"
#include "kernels/dtype_io.hpp"
#include "kernels/problem.hpp"

namespace w4a8::kern {

w4a8_dtype to_abi_dtype(gemm::FloatDtype d) {
  switch (d) {
    case gemm::FloatDtype::BF16: return W4A8_DTYPE_BF16;
    case gemm::FloatDtype::F16: return W4A8_DTYPE_F16;
    default: return W4A8_DTYPE_F32;
  }
}
std::size_t dtype_bytes(w4a8_dtype d) { return d == W4A8_DTYPE_F32 ? 4 : 2; }

namespace {

// values (exactly representable in dtype) -> bytes of that dtype at element stride ld.
void pack(const float* v, std::int64_t rows, std::int64_t cols, std::int64_t ld, w4a8_dtype dtype,
          std::vector<std::uint8_t>& out) {
  out.assign(static_cast<std::size_t>(rows * ld) * dtype_bytes(dtype), 0xFF);  // padding: NaN bytes
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c) store_from_f32(out.data(), r * ld + c, dtype, v[r * cols + c]);
}

}  // namespace

Result<std::unique_ptr<LayerProblem>> make_layer_problem(const gemm::Layer& layer, const gemm::Activations& x,
                                                         const gemm::GemmOptions& opt, const LayoutOptions& layout) {
  W4A8_TRY(gemm::validate_call(layer, x));
  W4A8_TRY(gemm::check_decodable(layer));
  auto lp = std::make_unique<LayerProblem>();
  w4a8_problem& p = lp->p;
  const auto m = static_cast<std::int64_t>(x.M()), n = static_cast<std::int64_t>(layer.N()),
             k = static_cast<std::int64_t>(layer.K());
  p.m = m, p.n = n, p.k = k;
  p.group_size = static_cast<std::int32_t>(layer.group_size);
  p.convrot_groupsize = static_cast<std::int32_t>(layer.convrot_groupsize);
  p.x_dtype = to_abi_dtype(x.dtype);
  p.ldx = k + layout.ldx_pad;
  pack(x.values.data(), m, k, p.ldx, p.x_dtype, lp->x);
  p.x = lp->x.data();
  p.weight = reinterpret_cast<const std::int8_t*>(layer.weight.data());
  p.s_rel = layer.s_rel.data();
  p.bits = layer.bits();
  p.s_rel_dtype = layer.scale_dtype() == gemm::ScaleDtype::F32 ? W4A8_SCALE_F32 : W4A8_SCALE_FP8_E4M3;
  p.s_channel = layer.s_channel.data();
  p.codebook = layer.has_codebook() ? layer.codebook.data() : nullptr;
  p.correction = layer.has_correction() ? layer.correction.data() : nullptr;
  if (layer.has_bias()) {
    p.bias_dtype = to_abi_dtype(layer.bias_dtype);
    pack(layer.bias.data(), 1, n, n, p.bias_dtype, lp->bias);
    p.bias = lp->bias.data();
  }
  p.out_dtype = to_abi_dtype(opt.out_dtype);
  p.ldo = n + layout.ldo_pad;
  lp->out.assign(static_cast<std::size_t>(m * p.ldo) * dtype_bytes(p.out_dtype), 0);
  p.out = lp->out.data();
  p.act_policy = opt.policy == gemm::ActPolicy::Eager ? kPolicyEager : kPolicyF32;
  if (!p.correction) {
    lp->x_q.assign(static_cast<std::size_t>(m * k), 0);
    lp->x_scale.assign(static_cast<std::size_t>(m), 0.f);
    lp->acc.assign(static_cast<std::size_t>(m * n), 0);
    p.x_q = lp->x_q.data();
    p.x_scale = lp->x_scale.data();
    p.acc = lp->acc.data();
    if (m > 0) {  // the grid comes from the GEMM's decode, which only runs when there are rows
      lp->w_q.assign(static_cast<std::size_t>(n * k), 0);
      p.w_q = lp->w_q.data();
    }
  } else {
    lp->w_dequant.assign(static_cast<std::size_t>(n * k), 0.f);
  }
  p.nan_scale_flag = &lp->nan_flag;
  const char* why = "";
  if (const w4a8_status s = layout.kernel_limits ? check_problem(p, &why) : W4A8_OK; s != W4A8_OK)
    return make_error(ErrorKind::CudaUnsupported, {std::string(why) + " (status " + std::to_string(int(s)) + ")"});
  return lp;
}

gemm::GemmResult collect_result(const LayerProblem& lp, const gemm::GemmOptions& opt, bool correction_path) {
  const w4a8_problem& p = lp.p;
  gemm::GemmResult r;
  r.policy = opt.policy;
  r.out_dtype = opt.out_dtype;
  r.correction_path = correction_path;
  r.M = static_cast<std::uint64_t>(p.m), r.N = static_cast<std::uint64_t>(p.n), r.K = static_cast<std::uint64_t>(p.k);
  if (correction_path) {
    r.w_dequant = lp.w_dequant;
  } else {
    r.x_q = lp.x_q;
    r.x_scale = lp.x_scale;
    r.acc = lp.acc;
    r.w_q = lp.w_q;
  }
  r.out.resize(static_cast<std::size_t>(p.m * p.n));
  for (std::int64_t a = 0; a < p.m; ++a)
    for (std::int64_t c = 0; c < p.n; ++c) r.out[a * p.n + c] = load_as_f32(lp.out.data(), a * p.ldo + c, p.out_dtype);
  return r;
}

Result<gemm::GemmResult> gemm_emulated(const gemm::Layer& layer, const gemm::Activations& x,
                                       const gemm::GemmOptions& opt, const LayoutOptions& layout, EmuStats* stats,
                                       const DeviceShape& dev) {
  auto lp = make_layer_problem(layer, x, opt, layout);
  if (!lp.ok()) return std::move(lp).error();
  LayerProblem& l = **lp;
  const w4a8_status s = emulate_w4a8_gemm(l.p, stats, l.w_dequant.empty() ? nullptr : l.w_dequant.data(), dev);
  if (s != W4A8_OK) return make_error(ErrorKind::CudaUnsupported, {"emulate returned " + std::to_string(int(s))});
  gemm::GemmResult r = collect_result(l, opt, l.p.correction != nullptr);
  if (r.w_q.empty()) r.w_q = gemm::decode_weights(layer);  // correction path / M == 0: the reference's grid
  return r;
}

}  // namespace w4a8::kern
