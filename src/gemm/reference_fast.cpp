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

// w_q via a 16 x 256 table of decode_weight (a pure function of code and scale byte).
std::vector<std::int8_t> decode_weights_fast(const Layer& layer, unsigned threads) {
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size);
  const float* cb = layer.has_codebook() ? layer.codebook.data() : nullptr;
  std::array<std::array<std::int8_t, 16>, 256> table;
  for (int b = 0; b < 256; ++b)
    for (int c = 0; c < 16; ++c) table[b][c] = decode_weight(std::uint8_t(c), std::uint8_t(b), cb);
  std::vector<std::int8_t> w(n * k);
  parallel_for(n, threads, [&](std::uint64_t i) {
    const std::uint8_t* row = layer.weight.data() + (i * (k / 2));
    const std::uint8_t* sr = layer.s_rel.data() + (i * (k / g));
    std::int8_t* out = w.data() + (i * k);
    for (std::uint64_t q = 0; q < k / g; ++q) {
      const auto& t = table[sr[q]];
      for (std::uint64_t j = q * g; j < (q + 1) * g; j += 2) {  // g >= 4 is even
        out[j] = t[row[j / 2] & 0xF];
        out[j + 1] = t[row[j / 2] >> 4];
      }
    }
  });
  return w;
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
void correction_fast(const Layer& layer, const Activations& x, const GemmOptions& opt, unsigned threads,
                     GemmResult& res) {
  const std::uint64_t m = res.M, n = res.N, k = res.K, g = std::uint64_t(layer.group_size);
  const FloatDtype act = opt.policy == ActPolicy::Eager ? x.dtype : FloatDtype::F32;
  res.w_dequant.assign(n * k, 0.0f);
  parallel_for(n, threads, [&](std::uint64_t i) {
    float* w = res.w_dequant.data() + (i * k);
    for (std::uint64_t j = 0; j < k; ++j) {
      const float scaled = float(res.w_q[i * k + j]) * layer.s_channel[i];
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

Result<GemmResult> gemm_fast(const Layer& layer, const Activations& x, const GemmOptions& opt) {
  W4A8_TRY(validate_call(layer, x));
  W4A8_TRY(check_decodable(layer));
  const unsigned threads = resolve_threads(opt.threads);
  GemmResult res;
  res.policy = opt.policy;
  res.out_dtype = opt.out_dtype;
  res.isa = resolve_isa(opt.isa);
  res.M = x.M();
  res.N = layer.N();
  res.K = layer.K();
  const std::uint64_t m = res.M, n = res.N, k = res.K;
  res.w_q = decode_weights_fast(layer, threads);
  if (layer.has_correction()) {
    res.correction_path = true;
    correction_fast(layer, x, opt, threads, res);
    return res;
  }
  std::vector<std::int8_t> panels;
  std::vector<std::int32_t> wsum;
  pack_panels(res.w_q, n, k, threads, panels, wsum);
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
  return res;
}

}  // namespace w4a8::gemm
