// The CUDA path emulated on the CPU (kernels/emulate.cpp: the kernels' own steps, thread by thread,
// with the ISA's mma fragments) against the CPU reference (src/gemm, written separately), bit for
// bit on x_q, x_scale, acc and out, plus the coverage facts the emulation records.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gemm/operands.hpp"
#include "kernels/emulate.hpp"
#include "kernels/layer_problem.hpp"
#include "kernels/tile_config.hpp"
#include "layer_gen.hpp"

namespace w4a8::kern::test {
namespace {

using gemm::ActPolicy;
using gemm::FloatDtype;

std::vector<std::int64_t> legal_groups(std::uint64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t g : {4, 8, 16, 32, 48, 64, 96, 128, 192, 256})
    if (k % std::uint64_t(g) == 0) out.push_back(g);
  return out;
}
std::vector<std::int64_t> legal_rotations(std::uint64_t k) {
  std::vector<std::int64_t> out;
  for (std::int64_t r = 4; std::uint64_t(r) <= k; r *= 4)
    if (k % std::uint64_t(r) == 0) out.push_back(r);
  return out;
}

// Runs one case through both and checks bit-exactness and coverage; returns the emulated result.
gemm::GemmResult check_case(const Case& c, const DeviceShape& dev = DeviceShape{132, 3}) {
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_literal(layer, x, options(c));
  EXPECT_TRUE(ref.ok()) << describe(c) << ": " << (ref.ok() ? "" : ref.error().message);
  EmuStats st;
  auto emu = gemm_emulated(layer, x, options(c), layout(c), &st, dev);
  EXPECT_TRUE(emu.ok()) << describe(c) << ": " << (emu.ok() ? "" : emu.error().message);
  if (!ref.ok() || !emu.ok()) return {};
  EXPECT_EQ(diff_results(*emu, *ref), "") << describe(c) << " splits=" << st.splits;
  if (!c.correction) {
    const TileConfig tc = tile_config(pick_tile(std::int64_t(c.m)));
    EXPECT_EQ(st.tile_kind, int(pick_tile(std::int64_t(c.m))));
    EXPECT_EQ(st.stores, std::int64_t(c.m * c.n)) << describe(c);
    EXPECT_EQ(st.duplicate_stores, 0) << describe(c);
    EXPECT_EQ(st.missing_stores, 0) << describe(c);
    EXPECT_EQ(st.misaligned_copies, 0) << describe(c);
    // Each row tile streams every code byte of W once (whatever the split), and its own rows of
    // fragment-order x_q (padded to 16 rows, 128 k) once per column tile; the scale windows cover
    // every s_rel byte at least once.
    const std::int64_t mtiles = ceil_div(std::int64_t(c.m), tc.bm), ntiles = ceil_div(std::int64_t(c.n), tc.bn);
    EXPECT_EQ(st.code_bytes_read, mtiles * std::int64_t(c.n * c.k / 2)) << describe(c);
    EXPECT_EQ(st.a_bytes_read, ntiles * frag_rows(std::int64_t(c.m)) * frag_chunks(std::int64_t(c.k)) * kChunkK)
        << describe(c);
    EXPECT_GE(st.scale_bytes_read, mtiles * std::int64_t(c.n * c.k) / c.g) << describe(c);
    EXPECT_EQ(st.blocks, mtiles * ntiles * st.splits);
    EXPECT_FALSE(st.nan_scale_seen);
  }
  return std::move(emu).value();
}

// The shape grid: M in {1, 7, 8, 13, 33, 257}, N and K odd and small, every legal G and R for each
// K, with codebook/uniform, bias dtypes, activation/output dtypes, policies and strides rotating.
TEST(Emulation, ShapeGridMatchesReferenceBitExact) {
  const std::uint64_t ms[] = {1, 7, 8, 13, 33, 257};
  const std::pair<std::uint64_t, std::uint64_t> nks[] = {{8, 16}, {13, 64}, {72, 256}, {136, 192}};
  const FloatDtype dts[] = {FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16};
  int idx = 0;
  for (std::uint64_t m : ms)
    for (auto [n, k] : nks) {
      const auto gs = legal_groups(k), rs = legal_rotations(k);
      std::vector<std::pair<std::int64_t, std::int64_t>> grs;
      for (std::size_t i = 0; i < gs.size(); ++i) grs.push_back({gs[i], rs[i % rs.size()]});
      for (std::size_t i = 0; i < rs.size(); ++i) grs.push_back({gs[(i * 3) % gs.size()], rs[i]});
      for (auto [g, r] : grs) {
        Case c;
        c.m = m, c.n = n, c.k = k, c.g = g, c.r = r;
        c.codebook = idx % 2;
        c.bias = idx % 3 != 0;
        c.bias_dtype = dts[(idx / 3) % 3];
        c.x_dtype = dts[idx % 3];
        c.out_dtype = dts[(idx / 2) % 3];
        c.policy = (idx / 5) % 2 ? ActPolicy::Eager : ActPolicy::F32;
        c.ldx_pad = idx % 4 == 1 ? 3 : 0;  // odd strides
        c.ldo_pad = idx % 4 == 2 ? 5 : 0;
        c.seed = std::uint32_t(idx + 1);
        check_case(c);
        ++idx;
        if (HasFailure()) return;
      }
    }
  EXPECT_GT(idx, 150);
}

TEST(Emulation, LongKMatches) {
  for (std::uint64_t m : {1, 40}) {
    Case c;
    c.m = m, c.n = 24, c.k = 8448, c.g = 128, c.r = 256, c.bias = true, c.seed = 99;
    check_case(c);
  }
}

TEST(Emulation, CorrectionPathMatches) {
  int idx = 0;
  for (std::uint64_t m : {1, 7, 33})
    for (auto [n, k, g, r] : {std::tuple<std::uint64_t, std::uint64_t, std::int64_t, std::int64_t>{8, 16, 4, 16},
                              {13, 64, 16, 64}, {40, 192, 48, 64}}) {
      Case c;
      c.m = m, c.n = n, c.k = k, c.g = g, c.r = r, c.correction = true;
      c.codebook = idx % 2, c.bias = idx % 3 != 1;
      c.x_dtype = idx % 3 == 0 ? FloatDtype::BF16 : FloatDtype::F32;
      c.out_dtype = idx % 2 ? FloatDtype::F16 : FloatDtype::F32;
      c.policy = idx % 4 == 3 ? ActPolicy::Eager : ActPolicy::F32;
      c.ldx_pad = idx % 2, c.ldo_pad = 2 * (idx % 2);
      c.seed = 500u + idx++;
      check_case(c);
    }
}

// The device tests' bound for the correction path's out (check_correction_out), on the reference
// itself: the reference passes; one bf16 step (the neighbouring value a flipped rounding gives)
// passes; four steps, a sign flip, and a wrong size do not. With f32 out, one bf16 step is far
// outside the bound.
TEST(CorrectionBound, AdmitsOneOutputRoundingAndNoMore) {
  Case c;
  c.m = 5, c.n = 24, c.k = 256, c.g = 16, c.r = 64, c.correction = true, c.bias = true, c.seed = 4252;
  c.x_dtype = FloatDtype::BF16, c.out_dtype = FloatDtype::BF16;
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_literal(layer, x, options(c));
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(check_correction_out(c, x, *ref, ref->out), "");
  // The bf16 value `steps` representable values above out[i] (positive or negative alike).
  const auto moved = [&](std::size_t i, int steps) {
    std::vector<float> got = ref->out;
    std::uint32_t bits = gemm::f32_bits(got[i]);
    bits += std::uint32_t(steps) << 16;
    std::memcpy(&got[i], &bits, 4);
    return got;
  };
  std::size_t i = 0;  // an element well away from zero
  while (i < ref->out.size() && std::fabs(ref->out[i]) < 1.0f) ++i;
  ASSERT_LT(i, ref->out.size());
  EXPECT_EQ(check_correction_out(c, x, *ref, moved(i, 1)), "");
  EXPECT_NE(check_correction_out(c, x, *ref, moved(i, 4)), "");
  std::vector<float> negated = ref->out;
  negated[i] = -negated[i];
  EXPECT_NE(check_correction_out(c, x, *ref, negated), "");
  EXPECT_NE(check_correction_out(c, x, *ref, std::vector<float>(ref->out.size() - 1)), "");
  Case f32 = c;
  f32.out_dtype = FloatDtype::F32;
  auto ref32 = gemm::gemm_literal(layer, x, options(f32));
  ASSERT_TRUE(ref32.ok());
  std::vector<float> got = ref32->out;
  got[i] = std::nextafter(got[i], 2 * got[i]);  // one f32 step: inside
  EXPECT_EQ(check_correction_out(f32, x, *ref32, got), "");
  got[i] = ref32->out[i] * (1.0f + 1.0f / 128);  // one bf16 step: outside for f32 out
  EXPECT_NE(check_correction_out(f32, x, *ref32, got), "");
}

// Two runs give identical bytes (outputs, intermediates).
TEST(Emulation, Repeatable) {
  Case c;
  c.m = 33, c.n = 72, c.k = 256, c.g = 32, c.r = 64, c.bias = true, c.out_dtype = FloatDtype::BF16, c.seed = 7;
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto a = gemm_emulated(layer, x, options(c));
  auto b = gemm_emulated(layer, x, options(c));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(diff_results(*a, *b), "");
}

// Rows are independent: each row of a batch equals that row computed alone (across tile kinds).
TEST(Emulation, RowsIndependent) {
  Case c;
  c.m = 40, c.n = 72, c.k = 64, c.g = 16, c.r = 16, c.bias = true, c.seed = 21;
  const gemm::GemmOptions opt = options(c);
  EXPECT_EQ(rows_independent_diff([&](const gemm::Layer& l, const gemm::Activations& x) { return gemm_emulated(l, x, opt); },
                                  c, {0, 17, 39}),
            "");
}

// Malformed operands: the same Error as the reference (shared validation), before any work.
TEST(Emulation, ErrorsMatchReference) {
  Case c;
  c.m = 2, c.n = 8, c.k = 64, c.g = 16, c.r = 16;
  const gemm::Activations x = make_acts(c);
  std::vector<gemm::Layer> bad;
  {
    gemm::Layer l = make_layer(c);
    l.s_rel[3] = 0x7F;  // NaN scale byte
    bad.push_back(l);
  }
  {
    gemm::Layer l = make_layer(c);
    l.group_size = 12;  // neither divides 16 nor a multiple of it
    bad.push_back(l);
  }
  {
    gemm::Layer l = make_layer(c);
    l.convrot_groupsize = 32;  // not a power of 4
    bad.push_back(l);
  }
  {
    gemm::Layer l = make_layer(c);
    l.s_channel_shape = {7};
    bad.push_back(l);
  }
  for (const gemm::Layer& l : bad) {
    auto ref = gemm::gemm_literal(l, x);
    auto emu = gemm_emulated(l, x, {});
    ASSERT_FALSE(ref.ok());
    ASSERT_FALSE(emu.ok());
    EXPECT_EQ(emu.error(), ref.error()) << ref.error().message;
  }
}

// The C ABI's own contract check agrees with the shared validation on (K, G, R).
TEST(ProblemCheck, ContractAgreesWithSharedValidation) {
  int checked = 0;
  for (std::int64_t k : {16, 24, 32, 48, 64, 96, 100, 192, 256, 768, 1024})
    for (std::int64_t g : {1, 2, 3, 4, 5, 8, 12, 16, 24, 32, 48, 64, 256})
      for (std::int64_t r : {1, 2, 4, 8, 16, 32, 64, 128, 256, 1024}) {
        gemm::Layer l = gemm::make_zero_layer(8, std::uint64_t(k), g, r);
        gemm::Activations x;
        x.shape = {1, std::uint64_t(k)};
        x.values.assign(std::size_t(k), 0.f);
        const Status shared = gemm::validate_operands(gemm::describe(l, x));
        w4a8_problem p{};
        p.m = 1, p.n = 8, p.k = k, p.group_size = std::int32_t(g), p.convrot_groupsize = std::int32_t(r);
        p.x = x.values.data(), p.ldx = k, p.weight = reinterpret_cast<const std::int8_t*>(l.weight.data());
        p.s_rel = l.s_rel.data(), p.s_channel = l.s_channel.data(), p.out = x.values.data(), p.ldo = 8;
        EXPECT_EQ(shared.ok(), w4a8_check_problem(&p) == W4A8_OK) << k << " " << g << " " << r;
        ++checked;
      }
  EXPECT_EQ(checked, 11 * 13 * 10);
}

// Random cases (RapidCheck shrinks a failure to a small one).
RC_GTEST_PROP(Emulation, RandomCasesMatchReference, ()) {
  const Case c = draw_case();
  const gemm::Layer layer = make_layer(c);
  const gemm::Activations x = make_acts(c);
  auto ref = gemm::gemm_literal(layer, x, options(c));
  RC_ASSERT(ref.ok());
  auto emu = gemm_emulated(layer, x, options(c), layout(c));
  RC_ASSERT(emu.ok());
  RC_ASSERT(diff_results(*emu, *ref) == std::string());
}

// ---- the shapes and paths of the 0.2 kernel ------------------------------------------------------------
// Tile edges of both block shapes: M around 16 / 32 / 64 / 128, N around 64 / 128.
TEST(Emulation, TileEdgeShapes) {
  for (const Case& c : tile_edge_cases()) {
    check_case(c);
    if (HasFailure()) return;
  }
}

// Split-K changes nothing: the same result with 1 split and with as many as the plan allows, and
// the plan does split the decode shape.
TEST(Emulation, SplitKIsExact) {
  for (std::uint64_t m : {1, 5, 16, 40}) {
    Case c;
    c.m = m, c.n = 72, c.k = 4096, c.g = 16, c.r = 256, c.bias = true, c.seed = 31 + std::uint32_t(m);
    const gemm::Layer layer = make_layer(c);
    const gemm::Activations x = make_acts(c);
    EmuStats one, many;
    auto a = gemm_emulated(layer, x, options(c), layout(c), &one, DeviceShape{1, 1});
    auto b = gemm_emulated(layer, x, options(c), layout(c), &many, DeviceShape{132, 3});
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(one.splits, 1);
    EXPECT_GT(many.splits, 4) << m;
    EXPECT_EQ(diff_results(*a, *b), "") << describe(c);
    check_case(c, DeviceShape{132, 3});
  }
}

// |acc| far above 2^24, where the int32 -> float32 conversion of the epilogue rounds: every x_q is
// 127 (a constant row stays constant under R = 4) and every w_q is -127 (code 0, scale 448).
TEST(Emulation, AccumulatorsAbove2To24) {
  EXPECT_EQ(large_accumulator_diff([](const gemm::Layer& l, const gemm::Activations& x) { return gemm_emulated(l, x, {}); }),
            "");
}

// Every group-size class on uniform codes at long K (scale windows straddling stages: G = 48).
TEST(Emulation, GroupSizesAtLongK) {
  for (const Case& c : long_k_group_cases({1, 20}, 72)) check_case(c);
}

// K = 16384: the activation and dequantize kernels hold a 64 KiB row in shared memory (the > 48 KiB
// opt-in on the device), on the integer and the correction path.
TEST(Emulation, K16384BothPaths) {
  for (bool corr : {false, true}) {
    Case c;
    c.m = corr ? 2 : 3, c.n = corr ? 16 : 72, c.k = 16384, c.g = 128, c.r = 4096, c.correction = corr, c.bias = true;
    c.seed = 161;
    check_case(c);
  }
}

// The production configuration: no intermediates requested (x_q, x_scale, acc, w_q and the NaN flag
// NULL, so the workspace holds x_q and x_scale), out only, against the reference.
TEST(Emulation, ProductionConfigurationOutOnly) {
  int idx = 0;
  for (std::uint64_t m : {1, 16, 17, 100})
    for (bool corr : {false, true}) {
      Case c;
      c.m = m, c.n = 65, c.k = 1024, c.g = 16, c.r = 256, c.correction = corr, c.bias = idx % 2;
      c.out_dtype = FloatDtype::BF16, c.x_dtype = FloatDtype::BF16, c.seed = 4242u + idx++;
      const gemm::Layer layer = make_layer(c);
      const gemm::Activations x = make_acts(c);
      auto ref = gemm::gemm_literal(layer, x, options(c));
      auto lp = make_layer_problem(layer, x, options(c));
      ASSERT_TRUE(ref.ok() && lp.ok());
      w4a8_problem p = (*lp)->p;
      p.x_q = nullptr, p.x_scale = nullptr, p.acc = nullptr, p.w_q = nullptr, p.nan_scale_flag = nullptr;
      ASSERT_EQ(emulate_w4a8_gemm(p), W4A8_OK);
      const gemm::GemmResult got = collect_result(**lp, options(c), corr);
      ASSERT_EQ(got.out.size(), ref->out.size());
      for (std::size_t i = 0; i < got.out.size(); ++i)
        ASSERT_EQ(gemm::f32_bits(got.out[i]), gemm::f32_bits(ref->out[i])) << describe(c) << " at " << i;
    }
}

// A NaN scale byte reaching the raw ABI (outside the contract) is reported through the flag.
TEST(Emulation, NanScaleByteIsFlagged) {
  OwnedProblem o = small_problem();
  ASSERT_TRUE(o.lp);
  o.layer.s_rel[5] = 0xFF;  // after validation: the problem points at the layer's bytes
  EmuStats st;
  ASSERT_EQ(emulate_w4a8_gemm(o.lp->p, &st), W4A8_OK);
  EXPECT_EQ(o.lp->nan_flag, 1);
  EXPECT_TRUE(st.nan_scale_seen);
}

// Refused storage variants reach the emulation as ABI statuses with the reason in last_error.
TEST(Emulation, RefusesSixBitAndF32Scales) {
  const OwnedProblem o = small_problem();
  ASSERT_TRUE(o.lp);
  w4a8_problem p = o.lp->p;
  p.bits = 6;
  EXPECT_EQ(emulate_w4a8_gemm(p), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("unsupported by this kernel"), std::string::npos) << last_error();
  p.bits = 4, p.s_rel_dtype = W4A8_SCALE_F32;
  EXPECT_EQ(emulate_w4a8_gemm(p), W4A8_ERR_UNSUPPORTED);
  EXPECT_NE(std::string(last_error()).find("F32 group scales"), std::string::npos) << last_error();
}

// Two host threads running different layers at once get what each gets alone.
TEST(Emulation, TwoThreads) {
  Case a, b;
  a.m = 3, a.n = 70, a.k = 1024, a.g = 16, a.r = 64, a.seed = 1;
  b.m = 40, b.n = 33, b.k = 512, b.g = 8, b.r = 16, b.codebook = true, b.seed = 2;
  gemm::GemmResult ra, rb;
  std::thread ta([&] { ra = check_case(a); });
  std::thread tb([&] { rb = check_case(b); });
  ta.join();
  tb.join();
  EXPECT_EQ(diff_results(ra, check_case(a)), "");
  EXPECT_EQ(diff_results(rb, check_case(b)), "");
}

}  // namespace
}  // namespace w4a8::kern::test

// comfy-kitchen 0.2.40 storage the kernels do not implement: the reference accepts it, the kernels'
// path refuses it by name before any work (never a silent misread of the packed row).
TEST(Emulation, RefusesSixBitAndF32ScalesByName) {
  using w4a8::gemm::ScaleDtype;
  struct Case {
    int bits;
    ScaleDtype scales;
    const char* words;
  };
  for (const Case& c : {Case{6, ScaleDtype::Fp8E4M3, "6-bit codes"}, Case{4, ScaleDtype::F32, "F32 group scales"}}) {
    const w4a8::gemm::Layer layer = w4a8::gemm::make_zero_layer(32, 64, 16, 16, c.bits, c.scales);
    w4a8::gemm::Activations x;
    x.shape = {2, 64};
    x.values.assign(2 * 64, 0.5f);
    ASSERT_TRUE(w4a8::gemm::gemm_literal(layer, x).ok()) << c.words;  // a legal layer for the reference
    const auto r = w4a8::kern::gemm_emulated(layer, x, {});
    ASSERT_FALSE(r.ok()) << c.words;
    EXPECT_EQ(r.error().kind, w4a8::ErrorKind::CudaUnsupported);
    EXPECT_NE(r.error().message.find(c.words), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("unsupported by this kernel"), std::string::npos) << r.error().message;
  }
}
