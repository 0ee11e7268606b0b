#include "kernels/emulate.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "kernels/act_row.hpp"
#include "kernels/gemm_tile.hpp"

namespace w4a8::kern {
namespace {

constexpr std::uint8_t kPoison = 0xCD;  // what shared memory holds while a copy is in flight

// Exactly-sized aligned host memory (an access past it is a heap overflow under ASan).
struct FreeDeleter {
  void operator()(std::uint8_t* p) const { std::free(p); }
};
using AlignedBuffer = std::unique_ptr<std::uint8_t[], FreeDeleter>;
AlignedBuffer aligned_buffer(std::size_t align, std::size_t bytes) {
  auto* p = static_cast<std::uint8_t*>(std::aligned_alloc(align, bytes ? bytes : align));
  if (!p) throw std::bad_alloc();
  return AlignedBuffer(p);
}

std::int8_t byte_of(std::uint32_t reg, int i) { return static_cast<std::int8_t>((reg >> (8 * (i & 3))) & 0xFFu); }

// Where a copy's source lies, for the read counters.
enum class Src { A, Codes, Scales, Table };

// One thread's cp.async state: commit groups land in order, only when wait() allows.
class EmuCopy {
 public:
  EmuCopy(EmuStats& st, const GemmArgs& g) : st_(st), g_(g) {}
  void copy16(void* dst, const void* src, int src_bytes) { issue(dst, src, 16, src_bytes); }
  void copy8(void* dst, const void* src, int src_bytes) { issue(dst, src, 8, src_bytes); }
  void copy4(void* dst, const void* src, int src_bytes) { issue(dst, src, 4, src_bytes); }
  void commit() {
    groups_.push_back(std::move(open_));
    open_.clear();
  }
  template <int N>
  void wait() {
    while (groups_.size() > std::size_t(N)) {
      for (const Pending& c : groups_.front()) {
        std::memcpy(c.dst, c.src, std::size_t(c.src_bytes));
        std::memset(c.dst + c.src_bytes, 0, std::size_t(c.bytes - c.src_bytes));
      }
      groups_.erase(groups_.begin());
    }
  }

 private:
  struct Pending {
    std::uint8_t* dst;
    const std::uint8_t* src;
    int bytes, src_bytes;
  };
  void issue(void* dst, const void* src, int bytes, int src_bytes) {
    const auto d = reinterpret_cast<std::uintptr_t>(dst), s = reinterpret_cast<std::uintptr_t>(src);
    if (d % std::uintptr_t(bytes) || (src_bytes && s % std::uintptr_t(bytes)) || src_bytes < 0 || src_bytes > bytes)
      ++st_.misaligned_copies;
    std::memset(dst, kPoison, std::size_t(bytes));
    open_.push_back({static_cast<std::uint8_t*>(dst), static_cast<const std::uint8_t*>(src), bytes, src_bytes});
    const auto* p = static_cast<const std::uint8_t*>(src);
    if (p >= g_.weight && p < g_.weight + g_.n * (g_.k / 2)) st_.code_bytes_read += src_bytes;
    else if (p >= g_.s_rel && p < g_.s_rel + g_.s_rel_bytes) st_.scale_bytes_read += src_bytes;
    else if (p >= reinterpret_cast<const std::uint8_t*>(g_.x_q) &&
             p < reinterpret_cast<const std::uint8_t*>(g_.x_q) + frag_rows(g_.m) * g_.frag_chunks * kFragChunkBytes /
                                                                      kFragRows)
      st_.a_bytes_read += src_bytes;
  }
  EmuStats& st_;
  const GemmArgs& g_;
  std::vector<Pending> open_;
  std::vector<std::vector<Pending>> groups_;
};

// compute_stage's Sink on the host: records each lane's fragments; the warp's MMAs run once every
// lane has reported.
template <int FM, int FN>
struct RecordingSink {
  struct Frag {
    std::uint32_t a[32][4];
    std::uint32_t b[32][2];
  };
  std::vector<Frag> rec[FM][FN];
  int calls[FM][FN] = {};
  int lane = 0;
  void start_lane(int l) {
    lane = l;
    for (auto& r : calls)
      for (int& c : r) c = 0;
  }
  void mma(int mi, int ni, const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
    auto& v = rec[mi][ni];
    const int i = calls[mi][ni]++;
    if (int(v.size()) <= i) v.resize(std::size_t(i) + 1);
    std::memcpy(v[std::size_t(i)].a[lane], a, sizeof a);
    std::memcpy(v[std::size_t(i)].b[lane], b, sizeof b);
  }
};

// The prologue kernel (act_quant_kernel): block per row; each phase runs for all "threads" before
// the next.
void emulate_prologue(const ActArgs& a) {
  std::vector<float> row(static_cast<std::size_t>(a.k));
  for (long long m = 0; m < a.m; ++m) {
    for (int t = 0; t < kActThreads; ++t) prologue_side_jobs(a, m, a.m, t);
    for (long long i = 0; i < a.k; ++i) row[i] = act_load(a, m, i);
    for (long long s = 1; s < a.r; s *= 4)
      for (long long b = 0; b < a.k / 4; ++b) rotate_butterfly(row.data(), b, a.r, s);
    float mx = 0.f;
    for (long long i = 0; i < a.k; ++i) {
      row[i] = act_rotated_value(a, row[i]);
      mx = gemm::absmax_step(mx, row[i]);
    }
    const float scale = gemm::row_scale(mx), divisor = act_divisor(a, scale);
    for (int t = 0; t < kActThreads; ++t)
      for (long long q = t; q < act_quads(a); q += kActThreads) act_store_quad(a, m, q, row.data(), divisor);
    if (m == a.m - 1)
      for (int t = 0; t < kActThreads; ++t) act_zero_pad_rows(a, t);
    a.x_scale[m] = scale;
  }
}

// One block (bx, by, bz) of w4a8_gemm_kernel<Kind, SmallG>, mirroring its barriers.
template <TileKind Kind, bool SmallG, bool Codes16>
void emulate_block(const GemmArgs& g, const GemmPlan& plan, long long bx, long long by, int bz,
                   std::vector<std::uint8_t>& written, std::vector<std::uint32_t>& counters, EmuStats& st) {
  constexpr TileConfig C = tile_config(Kind);
  constexpr int FM = C.frags_m(), FN = C.frags_n(), kThreads = C.threads(), kWarps = kThreads / kWarp;
  // Exactly-sized, 16-byte aligned "shared memory": an access past it is a heap overflow under ASan.
  const std::size_t bytes = std::size_t(plan.smem_bytes);  // a multiple of 16
  const AlignedBuffer smem_owner = aligned_buffer(16, bytes);
  std::uint8_t* smem = smem_owner.get();
  std::memset(smem, kPoison, bytes);
  std::uint8_t* table = smem;
  const int stage_size = stage_bytes(C, plan.scale_words);
  auto stage = [&](long long s) { return smem + kDecodeTableBytes + (s % C.stages) * stage_size; };
  const long long n0 = bx * C.bn, m0 = by * C.bm;
  const long long kb = split_begin(plan.k_tiles, g.splits, bz), ke = split_begin(plan.k_tiles, g.splits, bz + 1);
  const long long nkt = ke - kb;

  std::vector<EmuCopy> cp(kThreads, EmuCopy(st, g));
  std::vector<StageProducer<Kind, SmallG, Codes16>> producer;
  producer.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) producer.emplace_back(g, m0, n0, t, ke - 1);  // descending k
  // Table, then the first stages-1 stages.
  for (int t = 0; t < kThreads; ++t) issue_table<Kind>(g, table, t, cp[t]);
  for (int s = 0; s < C.stages - 1; ++s)
    for (int t = 0; t < kThreads; ++t) {
      if (s == 0) producer[t].template issue<false>(g, stage(s), n0, t, cp[t]);
      else if (s < nkt) producer[t].template issue<true>(g, stage(s), n0, t, cp[t]);
      cp[t].commit();
    }
  std::vector<std::int32_t> acc(std::size_t(kWarps) * kWarp * FM * FN * 4, 0);
  auto acc_of = [&](int w, int lane) {
    return reinterpret_cast<std::int32_t(*)[FN][4]>(&acc[(std::size_t(w) * kWarp + lane) * FM * FN * 4]);
  };
  RecordingSink<FM, FN> sink;
  for (long long it = 0; it < nkt; ++it) {
    for (int t = 0; t < kThreads; ++t) cp[t].template wait<C.stages - 2>();
    // __syncthreads()
    const long long nxt = it + C.stages - 1;
    for (int t = 0; t < kThreads; ++t) {
      if (nxt < nkt) producer[t].template issue<true>(g, stage(nxt), n0, t, cp[t]);
      cp[t].commit();
    }
    for (int w = 0; w < kWarps; ++w) {
      for (int lane = 0; lane < kWarp; ++lane) {
        sink.start_lane(lane);
        compute_stage<Kind, SmallG>(g, stage(it), table, ke - 1 - it, n0, w, lane, sink);
      }
      for (int mi = 0; mi < FM; ++mi)
        for (int ni = 0; ni < FN; ++ni)
          for (int call = 0; call < sink.calls[mi][ni]; ++call) {
            const auto& f = sink.rec[mi][ni][std::size_t(call)];
            std::int32_t d[32][4];
            for (int lane = 0; lane < kWarp; ++lane) std::memcpy(d[lane], acc_of(w, lane)[mi][ni], sizeof d[lane]);
            emulate_mma_m16n8k32(f.a, f.b, d);
            for (int lane = 0; lane < kWarp; ++lane) std::memcpy(acc_of(w, lane)[mi][ni], d[lane], sizeof d[lane]);
            ++st.mma_calls;
          }
    }
  }
  // Epilogue: with split-K, add the partial sums; only the last split of the tile stores.
  auto lane_acc = [&](int w, int lane) -> const std::int32_t(&)[FM][FN][4] {
    return *reinterpret_cast<const std::int32_t(*)[FM][FN][4]>(&acc[(std::size_t(w) * kWarp + lane) * FM * FN * 4]);
  };
  if (g.splits > 1) {
    for (int w = 0; w < kWarps; ++w)
      for (int lane = 0; lane < kWarp; ++lane) add_partial_sums<Kind>(g, lane_acc(w, lane), m0, n0, w, lane);
    const std::uint32_t ticket = counters[std::size_t(by * plan.tiles_n + bx)]++;
    if (ticket != std::uint32_t(g.splits - 1)) return;
  }
  for (int w = 0; w < kWarps; ++w)
    for (int lane = 0; lane < kWarp; ++lane) {
      store_tile_any<Kind>(g, lane_acc(w, lane), m0, n0, w, lane);
      for_each_output<Kind>(g, lane_acc(w, lane), m0, n0, w, lane, [&](long long m, long long n, std::int32_t) {
        ++st.stores;
        std::uint8_t& cnt = written[static_cast<std::size_t>(m * g.n + n)];
        if (cnt) ++st.duplicate_stores;
        cnt = 1;
      });
    }
}

template <TileKind Kind>
void emulate_gemm(const GemmArgs& g, const GemmPlan& plan, EmuStats& st) {
  std::vector<std::uint8_t> written(static_cast<std::size_t>(g.m * g.n), 0);
  std::vector<std::uint32_t> counters(static_cast<std::size_t>(plan.tiles_m * plan.tiles_n), 0);
  for (long long by = 0; by < plan.tiles_m; ++by)
    for (long long bx = 0; bx < plan.tiles_n; ++bx)
      for (int bz = 0; bz < g.splits; ++bz) {
        if (g.small_group) emulate_block<Kind, true, false>(g, plan, bx, by, bz, written, counters, st);
        else if (g.codes16) emulate_block<Kind, false, true>(g, plan, bx, by, bz, written, counters, st);
        else emulate_block<Kind, false, false>(g, plan, bx, by, bz, written, counters, st);
        ++st.blocks;
      }
  st.missing_stores = std::count(written.begin(), written.end(), std::uint8_t{0});
}

void emulate_correction(const w4a8_problem& p, float* w_dequant_out) {
  const long long m = p.m, n = p.n, k = p.k, g = p.group_size;
  const gemm::FloatDtype gemm_dtype = p.act_policy == kPolicyEager ? float_dtype(p.x_dtype) : gemm::FloatDtype::F32;
  std::vector<float> w(static_cast<std::size_t>(n * k));
  const auto* codes = reinterpret_cast<const std::uint8_t*>(p.weight);
  for (long long r = 0; r < n; ++r) {
    float* row = &w[r * k];
    for (long long j = 0; j < k; ++j) {
      const std::int8_t q = gemm::decode_weight(std::uint8_t(nibble(codes[r * (k / 2) + j / 2], int(j & 1))),
                                                p.s_rel[s_rel_index(r, j, k, int(g))], p.codebook);
      row[j] = gemm::corrected_weight(q, p.s_channel[r], p.correction[(j / g) * n + r], gemm_dtype);
    }
    for (long long s = 1; s < p.convrot_groupsize; s *= 4)
      for (long long b = 0; b < k / 4; ++b) rotate_butterfly(row, b, p.convrot_groupsize, s);
    for (long long j = 0; j < k; ++j) row[j] = gemm::round_to(gemm_dtype, row[j]);
  }
  if (w_dequant_out) std::copy(w.begin(), w.end(), w_dequant_out);
  for (long long a = 0; a < m; ++a)
    for (long long r = 0; r < n; ++r) {
      float s = 0.f;
      for (long long j = 0; j < k; ++j)
        s = gemm::f32_add(s, gemm::f32_mul(load_as_f32(p.x, a * p.ldx + j, p.x_dtype), w[r * k + j]));
      const float b = p.bias ? load_as_f32(p.bias, r, p.bias_dtype) : 0.f;
      store_from_f32(p.out, a * p.ldo + r, p.out_dtype,
                     gemm::corrected_output(s, p.bias != nullptr, b, gemm_dtype, float_dtype(p.out_dtype)));
    }
}

bool any_nan_scale(const w4a8_problem& p) {
  const long long bytes = p.n * (p.k / p.group_size);
  for (long long i = 0; i < bytes; ++i)
    if (gemm::fp8_e4m3fn_is_nan(p.s_rel[i])) return true;
  return false;
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

w4a8_status emulate_w4a8_gemm(const w4a8_problem& p, EmuStats* stats, float* w_dequant, const DeviceShape& dev) {
  const char* why = "";
  const w4a8_status status = check_problem(p, &why);
  if (status != W4A8_OK) {
    set_last_error("emulate_w4a8_gemm", why);
    return status;
  }
  EmuStats local;
  EmuStats& st = stats ? *stats : local;
  st = EmuStats{};
  if (p.m == 0) return W4A8_OK;
  if (p.nan_scale_flag && any_nan_scale(p)) {
    *p.nan_scale_flag = 1;
    st.nan_scale_seen = true;
  }
  if (p.correction) {
    emulate_correction(p, w_dequant);
    return W4A8_OK;
  }
  const w4a8_problem& q = p;
  const Workspace ws = workspace_layout(q);
  const AlignedBuffer ws_owner = aligned_buffer(256, ws.total);  // ws.total: a multiple of 256
  std::memset(ws_owner.get(), kPoison, ws.total);  // the prologue must zero what the GEMM sums into
  const GemmPlan plan = plan_gemm(q, dev);
  emulate_prologue(make_act_args(q, ws, ws_owner.get(), plan));
  const GemmArgs g = make_gemm_args(q, ws, ws_owner.get(), plan);
  st.tile_kind = static_cast<int>(plan.kind);
  st.splits = plan.splits;
  if (plan.kind == TileKind::kSmallM) emulate_gemm<TileKind::kSmallM>(g, plan, st);
  else emulate_gemm<TileKind::kLargeM>(g, plan, st);
  if (p.w_q)  // w4a8_decode_kernel
    for (long long n = 0; n < p.n; ++n)
      for (long long w = 0; w < p.k / 8; ++w) decode_wq_word(g, reinterpret_cast<const std::uint8_t*>(g.table), n, w);
  return W4A8_OK;
}

}  // namespace w4a8::kern
