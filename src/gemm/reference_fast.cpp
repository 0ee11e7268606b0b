// gemm_fast: the same contract as gemm_literal, computed with a per-layer decode table, a packed
// panel layout, SIMD integer kernels chosen at run time, and threads. Every step is either an exact
// integer computation (any order gives the same bits) or the same float operations per element as
// the literal path, so results are bit-identical.
#include <algorithm>
#include <array>
#include <cstring>

#include "gemm/convrot_simd.hpp"
#include "gemm/cpu_features.hpp"
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

// Packs w_q [N, K] into 64-column panels (see int_kernels.hpp; columns beyond N zero) and per-column
// sums, a 256-wide k-chunk at a time so the 16 KiB of panel being written stays in L1.
// pre: panels holds ceil(N/64) * K * 64 bytes, wsum ceil(N/64) * 64 entries (contents any).
void pack_panels(const std::int8_t* w, std::uint64_t n, std::uint64_t k, unsigned threads, std::int8_t* panels,
                 std::int32_t* wsum) {
  constexpr std::uint64_t kP = kernels::kPanel, kChunk = 256;
  const std::uint64_t np = (n + kP - 1) / kP;
  parallel_for(np, threads, [&](std::uint64_t p) {
    std::int8_t* dst = panels + (p * k * kP);
    const std::uint64_t cols = std::min(kP, n - p * kP);
    for (std::uint64_t k0 = 0; k0 < k; k0 += kChunk) {
      const std::uint64_t k1 = std::min(k, k0 + kChunk);
      for (std::uint64_t c = 0; c < cols; ++c) {
        const std::int8_t* src = w + ((p * kP + c) * k);
        for (std::uint64_t j = k0; j < k1; j += 4)  // k % 16 == 0: whole groups of 4
          std::memcpy(&dst[((j / 4) * kP + c) * 4], src + j, 4);
      }
      if (cols < kP)
        for (std::uint64_t j = k0; j < k1; j += 4) std::memset(&dst[((j / 4) * kP + cols) * 4], 0, (kP - cols) * 4);
    }
    for (std::uint64_t c = 0; c < kP; ++c) {
      std::int32_t s = 0;
      if (c < cols) {
        const std::int8_t* src = w + ((p * kP + c) * k);
        for (std::uint64_t j = 0; j < k; ++j) s += src[j];
      }
      wsum[p * kP + c] = s;
    }
  });
}

std::uint64_t panel_bytes(std::uint64_t n, std::uint64_t k) {
  return (n + kernels::kPanel - 1) / kernels::kPanel * k * kernels::kPanel;
}

// Correction path: same per-element float operations as the literal one; the GEMM vectorizes
// across output columns (each lane an independent in-order sum over k), never across k.
void correction_fast(const Layer& layer, const std::int8_t* w_q, const Activations& x, const GemmOptions& opt,
                     unsigned threads, GemmResult& res) {
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
    for (std::uint64_t i = 0; i < n; ++i)
      o[i] = corrected_output(o[i], layer.has_bias(), layer.has_bias() ? layer.bias[i] : 0.0f, act, opt.out_dtype);
  });
}

}  // namespace

std::vector<std::int8_t> decode_weights_fast(const Layer& layer, unsigned threads) {
  std::vector<std::int8_t> w(layer.N() * layer.K());
  decode_weights_fast(layer, threads, w.data());
  return w;
}

namespace {

// Decodes the codes of row[j0, j1) with lookup(code) -> int8. 4 bits: nibble pairs; 6 bits: quads of
// columns sharing one top-bits byte (j0 % 4 == 0 there: G % 16 == 0).
template <class Lookup>
inline void decode_span(const std::uint8_t* row, std::uint64_t k, int bits, std::uint64_t j0, std::uint64_t j1,
                        std::int8_t* out, Lookup&& lookup) {
  if (bits == 4) {
    for (std::uint64_t j = j0; j < j1; j += 2) {  // G >= 4 is even
      out[j] = lookup(row[j / 2] & 0xFu);
      out[j + 1] = lookup(unsigned(row[j / 2]) >> 4);
    }
    return;
  }
  const std::uint8_t* hi = row + k / 2;
  for (std::uint64_t j = j0; j < j1; j += 4) {
    const unsigned h = hi[j / 4], l0 = row[j / 2], l1 = row[j / 2 + 1];
    out[j] = lookup((l0 & 0xFu) | ((h & 3u) << 4));
    out[j + 1] = lookup((l0 >> 4) | (((h >> 2) & 3u) << 4));
    out[j + 2] = lookup((l1 & 0xFu) | (((h >> 4) & 3u) << 4));
    out[j + 3] = lookup((l1 >> 4) | (((h >> 6) & 3u) << 4));
  }
}

}  // namespace

void decode_weights_fast(const Layer& layer, unsigned threads, std::int8_t* w) {
  const std::uint64_t n = layer.N(), k = layer.K(), g = std::uint64_t(layer.group_size), groups = k / g;
  const std::uint64_t row_bytes = layer.row_bytes();
  const int bits = layer.bits();
  const int codes = 1 << bits;
  const float* cb = layer.has_codebook() ? layer.codebook.data() : nullptr;
  float value[64];
  for (int c = 0; c < codes; ++c) value[c] = code_value_bits(std::uint8_t(c), cb, bits);
  if (layer.scale_dtype() == ScaleDtype::F32) {
    // A scale per group: at 4 bits a 16-entry table per group when that is cheaper than the group
    // (G >= 16), else decode_weight_value per element (the same float operations either way).
    const bool table = bits == 4 && g >= 16;
    parallel_for(n, threads, [&](std::uint64_t i) {
      const std::uint8_t* row = layer.weight.data() + (i * row_bytes);
      std::int8_t* out = w + (i * k);
      std::int8_t t[16];
      for (std::uint64_t q = 0; q < groups; ++q) {
        const float s = layer.s_rel_at(i, q);
        if (table) {
          for (int c = 0; c < 16; ++c) t[c] = decode_weight_value(value[c], s);
          decode_span(row, k, bits, q * g, (q + 1) * g, out, [&](unsigned c) { return t[c]; });
        } else {
          decode_span(row, k, bits, q * g, (q + 1) * g, out, [&](unsigned c) { return decode_weight_value(value[c], s); });
        }
      }
    });
    return;
  }
  // FP8 scales: decode is a pure function of (scale byte, code): a 256 x 2^bits table.
  std::vector<std::int8_t> table(std::size_t(256) * std::size_t(codes));
  for (int b = 0; b < 256; ++b)
    for (int c = 0; c < codes; ++c)
      table[(std::size_t(b) * std::size_t(codes)) + std::size_t(c)] = decode_weight_value(value[c], fp8_e4m3fn_to_f32(std::uint8_t(b)));
  parallel_for(n, threads, [&](std::uint64_t i) {
    const std::uint8_t* row = layer.weight.data() + (i * row_bytes);
    const std::uint8_t* sr = layer.s_rel.data() + (i * groups);
    std::int8_t* out = w + (i * k);
    for (std::uint64_t q = 0; q < groups; ++q) {
      const std::int8_t* t = table.data() + std::size_t(sr[q]) * std::size_t(codes);
      decode_span(row, k, bits, q * g, (q + 1) * g, out, [t](unsigned c) { return t[c]; });
    }
  });
}

Isa best_isa() {
  static const Isa best = [] {
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512bw && f.avx512vnni) return Isa::Avx512Vnni;
    if (f.avx2) return Isa::Avx2;
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
void integer_path(const Layer& layer, const std::int8_t* panels, const std::int32_t* wsum, const Activations& x,
                  const GemmOptions& opt, unsigned threads, GemmResult& res) {
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
    fn(res.x_q.data() + (r0 * k), std::int64_t(rows), std::int64_t(k), panels + (p * k * kernels::kPanel),
       wsum + (p * kernels::kPanel), res.acc.data() + (r0 * n + p * kernels::kPanel), std::int64_t(n), cols);
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
  res.w_q = decode_weights_fast(layer, threads);
  if (layer.has_correction()) {
    res.correction_path = true;
    correction_fast(layer, res.w_q.data(), x, opt, threads, res);
    return res;
  }
  Buffer<std::int8_t> panels(panel_bytes(res.N, res.K));
  std::vector<std::int32_t> wsum((res.N + kernels::kPanel - 1) / kernels::kPanel * kernels::kPanel);
  pack_panels(res.w_q.data(), res.N, res.K, threads, panels.data(), wsum.data());
  integer_path(layer, panels.data(), wsum.data(), x, opt, threads, res);
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
  p.w_q_ = Buffer<std::int8_t>(p.n_ * p.k_);
  decode_weights_fast(layer, threads, p.w_q_.data());
  if (!layer.has_correction()) {
    p.panels_ = Buffer<std::int8_t>(panel_bytes(p.n_, p.k_));
    p.wsum_.resize((p.n_ + kernels::kPanel - 1) / kernels::kPanel * kernels::kPanel);
    pack_panels(p.w_q_.data(), p.n_, p.k_, threads, p.panels_.data(), p.wsum_.data());
  }
  p.layer_ = std::move(layer);
  return p;
}

Result<GemmResult> gemm_prepared(const PreparedLayer& p, const Activations& x, const GemmOptions& opt) {
  W4A8_TRY(validate_call(p.layer_, x, p.ck_));
  const unsigned threads = resolve_threads(opt.threads);
  GemmResult res = start_result(p.layer_, x, opt, p.ck_);
  if (p.layer_.has_correction()) {
    res.correction_path = true;
    correction_fast(p.layer_, p.w_q_.data(), x, opt, threads, res);
    return res;
  }
  integer_path(p.layer_, p.panels_.data(), p.wsum_.data(), x, opt, threads, res);
  return res;
}

std::uint64_t PreparedLayer::memory_bytes() const {
  return layer_.weight.size() + layer_.s_rel.size() + 4 * (layer_.s_channel.size() + layer_.codebook.size() +
                                                           layer_.correction.size() + layer_.bias.size()) +
         w_q_.size() + panels_.size() + 4 * wsum_.size();
}

}  // namespace w4a8::gemm
