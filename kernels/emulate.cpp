#include "kernels/emulate.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"
#include "kernels/problem.hpp"

namespace w4a8::kern {
namespace {

std::int8_t byte_of(std::uint32_t reg, int i) { return static_cast<std::int8_t>((reg >> (8 * (i & 3))) & 0xFFu); }

// act_quant_kernel, one row at a time; each phase runs for all "threads" before the next.
void emulate_act(const ActArgs& a) {
  std::vector<float> row(static_cast<std::size_t>(a.k));
  for (long long m = 0; m < a.m; ++m) {
    for (long long i = 0; i < a.k; ++i) row[i] = act_load(a, m, i);
    for (long long s = 1; s < a.r; s *= 4)
      for (long long b = 0; b < a.k / 4; ++b) rotate_butterfly(row.data(), b, a.r, s);
    float mx = 0.f;
    for (long long i = 0; i < a.k; ++i) {
      row[i] = act_rotated_value(a, row[i]);
      mx = max_abs(mx, row[i]);
    }
    const float scale = row_scale(mx), divisor = act_divisor(a, scale);
    for (long long i = 0; i < a.k; ++i) a.x_q[m * a.k + i] = act_quantize(a, row[i], divisor);
    a.x_scale[m] = scale;
  }
}

// One block of w4a8_gemm_kernel<kind>.
void emulate_block(const TileConfig& c, const GemmArgs& g, long long bx, long long by,
                   std::vector<std::uint8_t>& written, EmuStats& st) {
  const int threads = c.threads(), warps = threads / kWarp, fm = c.frags_m(), fn = c.frags_n();
  // Exactly-sized "shared memory": an out-of-tile access is a heap overflow under ASan.
  std::vector<std::int8_t> table(kDecodeTableBytes), smem_a(c.smem_a_bytes()), smem_b(c.smem_b_bytes());
  const long long n0 = bx * c.bn, m0 = by * c.bm;
  for (int t = 0; t < threads; ++t) build_table_part(table.data(), t, threads, g.codebook);
  // acc[warp][mi][ni][lane][i]
  std::vector<std::int32_t> acc(static_cast<std::size_t>(warps) * fm * fn * kWarp * 4, 0);
  auto acc_at = [&](int w, int mi, int ni) { return &acc[((std::size_t(w) * fm + mi) * fn + ni) * kWarp * 4]; };
  bool nan_seen = false;
  for (long long k0 = 0; k0 < g.k; k0 += c.bk) {
    for (int t = 0; t < threads; ++t) {
      for (int it = 0; it < c.a_iters(); ++it) {
        load_a_chunk(c, g, smem_a.data(), t, it, m0, k0);
        st.a_chunks_loaded += chunk_in_bounds(m0, k0, tile_chunk(c, t, it), g.m, g.k);
      }
      for (int it = 0; it < c.b_iters(); ++it) {
        load_b_chunk(c, g, table.data(), smem_b.data(), t, it, n0, k0, &nan_seen);
        if (g.w_q_out && m0 == 0) {  // w4a8_decode_kernel's work for this n-block
          bool ignored = false;
          load_b_chunk<true>(c, g, table.data(), smem_b.data(), t, it, n0, k0, &ignored);
        }
        st.b_chunks_loaded += chunk_in_bounds(n0, k0, tile_chunk(c, t, it), g.n, g.k);
      }
    }
    // __syncthreads(); then each warp's MMAs, gathered lane by lane.
    for (int w = 0; w < warps; ++w)
      for (int ks = 0; ks < c.k_steps(); ++ks)
        for (int mi = 0; mi < fm; ++mi)
          for (int ni = 0; ni < fn; ++ni) {
            std::uint32_t a[32][4], b[32][2];
            std::int32_t d[32][4];
            std::int32_t* acc_w = acc_at(w, mi, ni);
            for (int lane = 0; lane < kWarp; ++lane) {
              load_frag_a(c, smem_a.data(), w, lane, mi, ks, a[lane]);
              load_frag_b(c, smem_b.data(), w, lane, ni, ks, b[lane]);
              std::memcpy(d[lane], acc_w + lane * 4, sizeof d[lane]);
            }
            emulate_mma_m16n8k32(a, b, d);
            for (int lane = 0; lane < kWarp; ++lane) std::memcpy(acc_w + lane * 4, d[lane], sizeof d[lane]);
            ++st.mma_calls;
          }
  }
  st.nan_scale_seen = st.nan_scale_seen || nan_seen;
  for (int w = 0; w < warps; ++w)
    for (int lane = 0; lane < kWarp; ++lane)
      for (int mi = 0; mi < fm; ++mi)
        for (int ni = 0; ni < fn; ++ni)
          for (int i = 0; i < 4; ++i) {
            const RowCol e = acc_element(c, w, lane, mi, ni, i);
            const long long m = m0 + e.row, n = n0 + e.col;
            store_acc(g, m, n, acc_at(w, mi, ni)[lane * 4 + i]);
            if (store_in_bounds(m, n, g.m, g.n)) {
              ++st.stores;
              std::uint8_t& cnt = written[static_cast<std::size_t>(m * g.n + n)];
              if (cnt) ++st.duplicate_stores;
              cnt = 1;
            }
          }
}

void emulate_correction(const w4a8_problem& p, float* w_dequant_out) {
  const long long m = p.m, n = p.n, k = p.k, g = p.group_size;
  const int gemm_dtype = p.act_policy == kPolicyEager ? p.x_dtype : 0;
  std::vector<float> w(static_cast<std::size_t>(n * k));
  const auto* codes = reinterpret_cast<const std::uint8_t*>(p.weight);
  for (long long r = 0; r < n; ++r) {
    float* row = &w[r * k];
    for (long long j = 0; j < k; ++j) {
      const std::int8_t q = decode_weight(nibble(codes[r * (k / 2) + j / 2], int(j & 1)),
                                          p.s_rel[s_rel_index(r, j, k, int(g))], p.codebook);
      row[j] = corrected_weight(q, p.s_channel[r], p.correction[(j / g) * n + r], gemm_dtype);
    }
    for (long long s = 1; s < p.convrot_groupsize; s *= 4)
      for (long long b = 0; b < k / 4; ++b) rotate_butterfly(row, b, p.convrot_groupsize, s);
    for (long long j = 0; j < k; ++j) row[j] = round_to_dtype(row[j], gemm_dtype);
  }
  if (w_dequant_out) std::copy(w.begin(), w.end(), w_dequant_out);
  for (long long a = 0; a < m; ++a)
    for (long long r = 0; r < n; ++r) {
      float s = 0.f;
      for (long long j = 0; j < k; ++j) s = add_rn(s, mul_rn(load_as_f32(p.x, a * p.ldx + j, p.x_dtype), w[r * k + j]));
      const float b = p.bias ? load_as_f32(p.bias, r, p.bias_dtype) : 0.f;
      store_from_f32(p.out, a * p.ldo + r, p.out_dtype, corrected_output(s, p.bias != nullptr, b, gemm_dtype, p.out_dtype));
    }
}

}  // namespace

void emulate_mma_m16n8k32(const std::uint32_t (&a)[32][4], const std::uint32_t (&b)[32][2],
                          std::int32_t (&c)[32][4]) {
  std::int8_t am[kMmaM][kMmaK] = {}, bm[kMmaN][kMmaK] = {};
  for (int lane = 0; lane < kWarp; ++lane) {
    for (int i = 0; i < kAElems; ++i) {
      const RowCol e = mma_a(lane, i);
      am[e.row][e.col] = byte_of(a[lane][i / 4], i);
    }
    for (int i = 0; i < kBElems; ++i) {
      const RowCol e = mma_b(lane, i);
      bm[e.col][e.row] = byte_of(b[lane][i / 4], i);
    }
  }
  for (int lane = 0; lane < kWarp; ++lane)
    for (int i = 0; i < kCElems; ++i) {
      const RowCol e = mma_c(lane, i);
      std::uint32_t s = static_cast<std::uint32_t>(c[lane][i]);
      for (int kk = 0; kk < kMmaK; ++kk)
        s += static_cast<std::uint32_t>(std::int32_t(am[e.row][kk]) * std::int32_t(bm[e.col][kk]));
      c[lane][i] = static_cast<std::int32_t>(s);
    }
}

w4a8_status emulate_w4a8_gemm(const w4a8_problem& p, EmuStats* stats, float* w_dequant) {
  const w4a8_status status = check_problem(p);
  if (status != W4A8_OK) return status;
  EmuStats local;
  EmuStats& st = stats ? *stats : local;
  st = EmuStats{};
  if (p.m == 0) return W4A8_OK;
  if (p.correction) {
    emulate_correction(p, w_dequant);
    return W4A8_OK;
  }
  std::vector<std::int8_t> xq_scratch;
  std::vector<float> scale_scratch;
  std::int8_t* x_q = p.x_q;
  float* x_scale = p.x_scale;
  if (!x_q) {
    xq_scratch.resize(static_cast<std::size_t>(p.m * p.k));
    x_q = xq_scratch.data();
  }
  if (!x_scale) {
    scale_scratch.resize(static_cast<std::size_t>(p.m));
    x_scale = scale_scratch.data();
  }
  ActArgs a;
  a.m = p.m, a.k = p.k, a.r = p.convrot_groupsize, a.x = p.x, a.x_dtype = p.x_dtype, a.ldx = p.ldx;
  a.policy = p.act_policy, a.x_q = x_q, a.x_scale = x_scale;
  emulate_act(a);

  GemmArgs g;
  g.m = p.m, g.n = p.n, g.k = p.k, g.group = p.group_size, g.x_q = x_q, g.x_scale = x_scale;
  g.weight = reinterpret_cast<const std::uint8_t*>(p.weight), g.s_rel = p.s_rel, g.s_channel = p.s_channel;
  g.codebook = p.codebook, g.bias = p.bias, g.bias_dtype = p.bias_dtype, g.out = p.out;
  g.out_dtype = p.out_dtype, g.ldo = p.ldo, g.acc_out = p.acc, g.nan_flag = p.nan_scale_flag;
  g.w_q_out = p.w_q;
  const TileKind kind = pick_tile(p.m);
  const TileConfig c = tile_config(kind);
  st.tile_kind = static_cast<int>(kind);
  std::vector<std::uint8_t> written(static_cast<std::size_t>(p.m * p.n), 0);
  for (long long by = 0; by < ceil_div(p.m, c.bm); ++by)
    for (long long bx = 0; bx < ceil_div(p.n, c.bn); ++bx) {
      emulate_block(c, g, bx, by, written, st);
      ++st.blocks;
    }
  st.missing_stores = std::count(written.begin(), written.end(), std::uint8_t{0});
  if (st.nan_scale_seen && p.nan_scale_flag) *p.nan_scale_flag = 1;
  return W4A8_OK;
}

}  // namespace w4a8::kern
