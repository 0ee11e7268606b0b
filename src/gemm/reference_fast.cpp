// gemm_fast: the same contract as gemm_literal, computed with a per-layer decode table, a packed
// panel layout, SIMD integer kernels chosen at run time, and threads. Every step is either an exact
// integer computation (any order gives the same bits) or the same float operations per element as
// the literal path, so results are bit-identical.
#include <algorithm>
#include <array>
#include <cstring>

#include "gemm/convrot_simd.hpp"
#include "gemm/int_kernels.hpp"
#include "gemm/operands.hpp"
#include "gemm/parallel.hpp"
#include "gemm/reference.hpp"

namespace w4a8::gemm {
namespace {

constexpr std::uint64_t kRowBlock = 48;  // rows per integer tile (a multiple of the kernels' MR)

kernels::PanelFn panel_fn(Isa isa) {
  switch (isa) {
    case Isa::Avx512Vnni: return kernels::panel_avx512vnni;
    case Isa::Avx2: return kernels::panel_avx2;
    default: return kernels::panel_scalar;
  }
}

// Packs w_q [N, K] into 64-column panels (see int_kernels.hpp) and per-column sums, a 256-wide
// k-chunk at a time so the 16 KiB of panel being written stays in L1.
void pack_panels(const std::vector<std::int8_t>& w, std::uint64_t n, std::uint64_t k, unsigned threads,
                 std::vector<std::int8_t>& panels, std::vector<std::int32_t>& wsum) {
  constexpr std::uint64_t kP = kernels::kPanel, kChunk = 256;
  const std::uint64_t np = (n + kP - 1) / kP;
  panels.assign(np * k * kP, 0);
  wsum.assign(np * kP, 0);
  parallel_for(np, threads, [&](std::uint64_t p) {
    std::int8_t* dst = panels.data() + (p * k * kP);
    const std::uint64_t cols = std::min(kP, n - p * kP);
    for (std::uint64_t k0 = 0; k0 < k; k0 += kChunk) {
      const std::uint64_t k1 = std::min(k, k0 + kChunk);
      for (std::uint64_t c = 0; c < cols; ++c) {
        const std::int8_t* src = w.data() + ((p * kP + c) * k);
        for (std::uint64_t j = k0; j < k1; j += 4)  // k % 16 == 0: whole groups of 4
          std::memcpy(&dst[((j / 4) * kP + c) * 4], src + j, 4);
      }
    }
    for (std::uint64_t c = 0; c < cols; ++c) {
      const std::int8_t* src = w.data() + ((p * kP + c) * k);
      std::int32_t s = 0;
      for (std::uint64_t j = 0; j < k; ++j) s += src[j];
      wsum[p * kP + c] = s;
    }
  });
}

// Correction path: same per-element float operations as the literal one; the GEMM vectorizes
// across output columns (each lane an independent in-order sum over k), never across k.
void correction_fast(const Layer& layer, const std::vector<std::int8_t>& w_q, const Activations& x,
                     const GemmOptions& opt, unsigned threads, GemmResult& res) {
  const std::uint64_t m = res.M, n = res.N, k = res.K, g = std::uint64_t(layer.group_size);
  const FloatDtype act = opt.policy == ActPolicy::Eager ? x.dtype : FloatDtype::F32;
  res.w_dequant.assign(n * k, 0.0f);
  parallel_for(n, threads, [&](std::uint64_t i) {
    float* w = res.w_dequant.data() + (i * k);
    for (std::uint64_t j = 0; j < k; ++j) {
      const float scaled = float(w_q[i * k + j]) * layer.s_channel[i];
      w[j] = round_to(act, scaled + layer.correction[(j / g) * n + i]);
    }
    convrot_row(w, std::int64_t(k), layer.convrot_groupsize);
    for (std::uint64_t j = 0; j < k; ++j) w[j] = round_to(act, w[j]);
  });
  std::vector<float> wt(k * n);  // W^T [K, N]
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::uint64_t j = 0; j < k; ++j) wt[j * n + i] = res.w_dequant[i * k + j];
  res.out.assign(m * n, 0.0f);
  parallel_for(m, threads, [&](std::uint64_t a) {
    float* o = res.out.data() + (a * n);
    const float* xr = x.values.data() + (a * k);
    for (std::uint64_t j = 0; j < k; ++j) {
      const float xv = xr[j];
      const float* wr = wt.data() + (j * n);
      for (std::uint64_t i = 0; i < n; ++i) {
        const float prod = xv * wr[i];
        o[i] = o[i] + prod;
      }
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      float v = round_to(act, o[i]);
      if (layer.has_bias()) v = round_to(act, v + round_to(act, layer.bias[i]));
      o[i] = round_to(opt.out_dtype, v);
    }
  });
}

}  // namespace

std::vector<std::int8_t> decode_weights_fast(const Layer& layer, unsigned threads) {
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size), groups = k / g;
  const std::uint64_t row_bytes = layer.row_bytes();
  const int bits = layer.bits();
  const int codes = 1 << bits;
  const float* cb = layer.has_codebook() ? layer.codebook.data() : nullptr;
  std::vector<std::int8_t> w(n * k);
  if (layer.scale_dtype() == ScaleDtype::F32) {
    // A scale per group: decode_weight_value per element on the code's value (same float ops).
    float value[64];
    for (int c = 0; c < codes; ++c) value[c] = code_value_bits(std::uint8_t(c), cb, bits);
    parallel_for(n, threads, [&](std::uint64_t i) {
      const std::uint8_t* row = layer.weight.data() + (i * row_bytes);
      std::int8_t* out = w.data() + (i * k);
      for (std::uint64_t q = 0; q < groups; ++q) {
        const float s = layer.s_rel_at(i, q);
        for (std::uint64_t j = q * g; j < (q + 1) * g; ++j) out[j] = decode_weight_value(value[unpack_code_bits(row, k, j, bits)], s);
      }
    });
    return w;
  }
  // FP8 scales: decode is a pure function of (scale byte, code): a 256 x 2^bits table.
  std::vector<std::int8_t> table(std::size_t(256) * std::size_t(codes));
  for (int b = 0; b < 256; ++b)
    for (int c = 0; c < codes; ++c)
      table[std::size_t(b * codes + c)] =
          decode_weight_value(code_value_bits(std::uint8_t(c), cb, bits), fp8_e4m3fn_to_f32(std::uint8_t(b)));
  parallel_for(n, threads, [&](std::uint64_t i) {
    const std::uint8_t* row = layer.weight.data() + (i * row_bytes);
    const std::uint8_t* sr = layer.s_rel.data() + (i * groups);
    std::int8_t* out = w.data() + (i * k);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const std::int8_t* t = table.data() + std::size_t(sr[q]) * std::size_t(codes);
      if (bits == 4) {
        for (std::uint64_t j = q * g; j < (q + 1) * g; j += 2) {  // g >= 4 is even
          out[j] = t[row[j / 2] & 0xF];
          out[j + 1] = t[row[j / 2] >> 4];
        }
      } else {
        const std::uint8_t* hi = row + k / 2;
        for (std::uint64_t j = q * g; j < (q + 1) * g; j += 4) {  // g % 16 == 0 at 6 bits
          const unsigned h = hi[j / 4], l0 = row[j / 2], l1 = row[j / 2 + 1];
          out[j] = t[(l0 & 0xF) | ((h & 3u) << 4)];
          out[j + 1] = t[(l0 >> 4) | (((h >> 2) & 3u) << 4)];
          out[j + 2] = t[(l1 & 0xF) | (((h >> 4) & 3u) << 4)];
          out[j + 3] = t[(l1 >> 4) | (((h >> 6) & 3u) << 4)];
        }
      }
    }
  });
  return w;
}

Isa best_isa() {
  static const Isa best = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vnni"))
      return Isa::Avx512Vnni;
    if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
    return Isa::Scalar;
  }();
  return best;
}

Isa resolve_isa(Isa requested) {
  const Isa best = best_isa();
  if (requested == Isa::Auto) return best;
  return std::uint8_t(requested) <= std::uint8_t(best) ? requested : best;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::Auto: return "auto";
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512Vnni: return "avx512vnni";
  }
  return "?";
}

namespace {

GemmResult start_result(const Layer& layer, const Activations& x, const GemmOptions& opt, upstream::ComfyKitchen ck) {
  GemmResult res;
  res.policy = opt.policy;
  res.out_dtype = opt.out_dtype;
  res.isa = resolve_isa(opt.isa);
  res.comfy_kitchen = ck;
  res.M = x.M();
  res.N = layer.N();
  res.K = layer.K();
  res.bits = layer.bits();
  return res;
}

// Integer path on a decoded layer: quantize rows, integer tiles, epilogue. pre: validated call.
void integer_path(const Layer& layer, const std::vector<std::int8_t>& panels, const std::vector<std::int32_t>& wsum,
                  const Activations& x, const GemmOptions& opt, unsigned threads, GemmResult& res) {
  const std::uint64_t m = res.M, n = res.N, k = res.K;
  // Rows are independent: rotate and quantize them in parallel.
  res.x_q.assign(m * k, 0);
  res.x_scale.assign(m, 0.0f);
  void (*rotate)(float*, std::int64_t, std::int64_t) = res.isa == Isa::Scalar ? convrot_row : convrot_row_avx2;
  const std::uint64_t qblocks = (m + 15) / 16;
  parallel_for(qblocks, threads, [&](std::uint64_t b) {
    std::vector<float> rot(k);
    for (std::uint64_t a = b * 16; a < std::min(m, b * 16 + 16); ++a)
      quantize_row_with(rotate, x.values.data() + (a * k), std::int64_t(k), layer.convrot_groupsize, opt.policy, x.dtype,
                        rot.data(), res.x_q.data() + (a * k), &res.x_scale[a]);
  });
  // Integer tiles: panel-major so consecutive tiles reuse one panel from cache.
  res.acc.assign(m * n, 0);
  const kernels::PanelFn fn = panel_fn(res.isa);
  const std::uint64_t np = (n + kernels::kPanel - 1) / kernels::kPanel, mb = (m + kRowBlock - 1) / kRowBlock;
  parallel_for(np * mb, threads, [&](std::uint64_t t) {
    const std::uint64_t p = t / mb, r0 = (t % mb) * kRowBlock;
    const std::uint64_t rows = std::min(kRowBlock, m - r0);
    const int cols = int(std::min<std::uint64_t>(kernels::kPanel, n - p * kernels::kPanel));
    fn(res.x_q.data() + (r0 * k), std::int64_t(rows), std::int64_t(k), panels.data() + (p * k * kernels::kPanel),
       wsum.data() + (p * kernels::kPanel), res.acc.data() + (r0 * n + p * kernels::kPanel), std::int64_t(n), cols);
  });
  res.out.assign(m * n, 0.0f);
  parallel_for(m, threads, [&](std::uint64_t a) {
    const float s = res.x_scale[a];
    for (std::uint64_t i = 0; i < n; ++i)
      res.out[a * n + i] = finish_output(epilogue(res.acc[a * n + i], s, layer.s_channel[i]), opt.out_dtype,
                                         layer.has_bias() ? &layer.bias[i] : nullptr);
  });
}

}  // namespace

Result<GemmResult> gemm_fast(const Layer& layer, const Activations& x, const GemmOptions& opt) {
  W4A8_TRY(validate_call(layer, x, opt.comfy_kitchen));
  W4A8_TRY(check_decodable(layer));
  const unsigned threads = resolve_threads(opt.threads);
  GemmResult res = start_result(layer, x, opt, opt.comfy_kitchen);
  std::vector<std::int8_t> w_q = decode_weights_fast(layer, threads);
  if (layer.has_correction()) {
    res.w_q = std::move(w_q);
    res.correction_path = true;
    correction_fast(layer, res.w_q, x, opt, threads, res);
    return res;
  }
  std::vector<std::int8_t> panels;
  std::vector<std::int32_t> wsum;
  pack_panels(w_q, res.N, res.K, threads, panels, wsum);
  res.w_q = std::move(w_q);
  integer_path(layer, panels, wsum, x, opt, threads, res);
  return res;
}

Result<PreparedLayer> prepare_layer(Layer layer, const GemmOptions& opt) {
  // The layer's own checks only: an empty [0, K] input passes every input rule once K is the
  // layer's (every check on K and the layer's shapes comes before the input's in both releases).
  Activations probe;
  probe.shape = {0, layer.K()};
  W4A8_TRY(validate_call(layer, probe, opt.comfy_kitchen));
  W4A8_TRY(check_decodable(layer));
  const unsigned threads = resolve_threads(opt.threads);
  PreparedLayer p;
  p.n_ = layer.N();
  p.k_ = layer.K();
  p.bits_ = layer.bits();
  p.ck_ = opt.comfy_kitchen;
  p.w_q_ = decode_weights_fast(layer, threads);
  if (!layer.has_correction()) pack_panels(p.w_q_, p.n_, p.k_, threads, p.panels_, p.wsum_);
  p.layer_ = std::move(layer);
  return p;
}

Result<GemmResult> gemm_prepared(const PreparedLayer& p, const Activations& x, const GemmOptions& opt) {
  W4A8_TRY(validate_call(p.layer_, x, p.ck_));
  const unsigned threads = resolve_threads(opt.threads);
  GemmResult res = start_result(p.layer_, x, opt, p.ck_);
  if (p.layer_.has_correction()) {
    res.correction_path = true;
    correction_fast(p.layer_, p.w_q_, x, opt, threads, res);
    return res;
  }
  integer_path(p.layer_, p.panels_, p.wsum_, x, opt, threads, res);
  return res;
}

std::uint64_t PreparedLayer::memory_bytes() const {
  return layer_.weight.size() + layer_.s_rel.size() + 4 * (layer_.s_channel.size() + layer_.codebook.size() +
                                                           layer_.correction.size() + layer_.bias.size()) +
         w_q_.size() + panels_.size() + 4 * wsum_.size();
}

}  // namespace w4a8::gemm
