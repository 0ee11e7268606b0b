// Laws of the reference GEMM: fast == literal bit for bit (every ISA, policy and dtype), row
// independence, zero weights give the bias, and the integer path stays within a derived bound of a
// float64 dequantize-then-matmul.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "gemm/operands.hpp"
#include "gemm/parallel.hpp"
#include "gemm/reference.hpp"
#include "gemm_gen.hpp"

namespace w4a8::gemm {
namespace {

using testing::CaseParams;
using testing::draw_params;
using testing::make_case;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// Law 1: fast == literal on every intermediate and the output, for each ISA the CPU has.
RC_GTEST_PROP(GemmReference, FastEqualsLiteral, ()) {
  const CaseParams p = draw_params();
  const auto c = make_case(p);
  GemmOptions opt;
  opt.policy = *rc::gen::element(ActPolicy::F32, ActPolicy::Eager);
  opt.out_dtype = *rc::gen::element(FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16);
  opt.isa = *rc::gen::element(Isa::Auto, Isa::Scalar, Isa::Avx2, Isa::Avx512Vnni);
  opt.threads = *rc::gen::inRange(1u, 4u);
  auto lit = gemm_literal(c.layer, c.x, opt);
  auto fast = gemm_fast(c.layer, c.x, opt);
  RC_ASSERT(lit.ok());
  RC_ASSERT(fast.ok());
  RC_ASSERT(lit->correction_path == p.correction);
  RC_ASSERT(lit->bits == p.bits && fast->bits == p.bits);
  RC_ASSERT(lit->w_q == fast->w_q);
  RC_ASSERT(lit->x_q == fast->x_q);
  RC_ASSERT(same_bits(lit->x_scale, fast->x_scale));
  RC_ASSERT(lit->acc == fast->acc);
  RC_ASSERT(same_bits(lit->w_dequant, fast->w_dequant));
  RC_ASSERT(same_bits(lit->out, fast->out));
}

// Law 2: row m of a batch equals that row computed alone (both implementations).
RC_GTEST_PROP(GemmReference, RowsAreIndependent, ()) {
  CaseParams p = draw_params(40, 40, 256);
  const auto c = make_case(p);
  GemmOptions opt;
  opt.policy = *rc::gen::element(ActPolicy::F32, ActPolicy::Eager);
  opt.threads = 2;
  const Impl impl = *rc::gen::element(Impl::Literal, Impl::Fast);
  auto all = gemm(impl, c.layer, c.x, opt);
  RC_ASSERT(all.ok());
  const std::uint64_t row = *rc::gen::inRange<std::uint64_t>(0, p.m);
  Activations one;
  one.dtype = c.x.dtype;
  one.shape = {1, p.k};
  one.values.assign(c.x.values.begin() + long(row * p.k), c.x.values.begin() + long((row + 1) * p.k));
  auto single = gemm(impl, c.layer, one, opt);
  RC_ASSERT(single.ok());
  const std::vector<float> want(all->out.begin() + long(row * p.n), all->out.begin() + long((row + 1) * p.n));
  RC_ASSERT(same_bits(single->out, want));
  if (!p.correction) {
    RC_ASSERT(std::memcmp(&single->x_scale[0], &all->x_scale[row], 4) == 0);
    RC_ASSERT(std::equal(single->acc.begin(), single->acc.end(), all->acc.begin() + long(row * p.n)));
  }
}

// Law 3: all-zero weights (uniform code value 0: code 8, or 32 at 6 bits) give exactly the bias cast
// to the output dtype.
RC_GTEST_PROP(GemmReference, ZeroWeightsGiveBias, ()) {
  CaseParams p = draw_params(40, 40, 256);
  p.codebook = false;
  p.correction = false;
  p.bias = true;
  auto c = make_case(p);
  c.layer.weight = make_zero_layer(p.n, p.k, p.g, p.r, p.bits).weight;
  GemmOptions opt;
  opt.out_dtype = *rc::gen::element(FloatDtype::F32, FloatDtype::BF16, FloatDtype::F16);
  auto r = gemm(*rc::gen::element(Impl::Literal, Impl::Fast), c.layer, c.x, opt);
  RC_ASSERT(r.ok());
  for (std::uint64_t a = 0; a < p.m; ++a)
    for (std::uint64_t i = 0; i < p.n; ++i) {
      const float want = round_to(opt.out_dtype, c.layer.bias[i]);
      RC_ASSERT(r->acc[a * p.n + i] == 0);
      RC_ASSERT(std::memcmp(&r->out[a * p.n + i], &want, 4) == 0);
    }
}

// Law 4: the integer path approximates x @ W^T where W = unrotate(w_q * s_channel) in float64.
// Derivation (f32 policy, f32 output, no bias): the rotation is orthogonal, so x.W = rot(x).rot(W);
// x_q differs from rot(x)/scale by at most 1/2 + eps per element (rne plus the f32 division and
// rotation rounding, each relatively <= 2^-23 * log4(R) stages), so
// |out - exact| <= scale * s_c * sum_k |w_q| * (0.5 + 1e-5 * |x_rot|/scale) + rel 2^-22 |out|,
// plus the f32 epilogue (2 roundings). We check with the looser 0.5 + 1e-4 per element.
RC_GTEST_PROP(GemmReference, IntegerPathWithinDerivedBound, ()) {
  CaseParams p = draw_params(20, 24, 512);
  p.correction = false;
  p.bias = false;
  p.act = FloatDtype::F32;
  const auto c = make_case(p);
  auto r = gemm_fast(c.layer, c.x, {});
  RC_ASSERT(r.ok());
  const std::uint64_t m = p.m, n = p.n, k = p.k;
  // W in the original basis: dense H_R (entries +-2^-log4(R)... as +-1 / sqrt(R)) applied in double.
  const double inv = 1.0 / std::sqrt(double(p.r));
  std::vector<double> w(n * k, 0.0);
  for (std::uint64_t i = 0; i < n; ++i)
    for (std::uint64_t b = 0; b < k; b += std::uint64_t(p.r))
      for (std::int64_t jj = 0; jj < p.r; ++jj) {
        double s = 0;
        for (std::int64_t t = 0; t < p.r; ++t)
          s += double(r->w_q[i * k + b + std::uint64_t(t)]) * double(c.layer.s_channel[i]) * hadamard_sign(p.r, t, jj) * inv;
        w[i * k + b + std::uint64_t(jj)] = s;
      }
  for (std::uint64_t a = 0; a < m; ++a)
    for (std::uint64_t i = 0; i < n; ++i) {
      double exact = 0, wabs = 0;
      for (std::uint64_t j = 0; j < k; ++j) {
        exact += double(c.x.values[a * k + j]) * w[i * k + j];
        wabs += std::abs(double(r->w_q[i * k + j]));
      }
      const double bound = double(r->x_scale[a]) * double(c.layer.s_channel[i]) * wabs * (0.5 + 1e-4) +
                           std::abs(exact) * 1e-6 + 1e-30;
      RC_ASSERT(std::abs(double(r->out[a * n + i]) - exact) <= bound);
    }
}

// Operand errors come before any work, from both entry points, identically.
TEST(GemmReference, EntryPointsValidateFirst) {
  Layer l = make_zero_layer(3, 32, 16, 16);
  l.s_channel_shape = {4};
  Activations x;
  x.shape = {2, 32};
  x.values.assign(64, 1.0f);
  for (Impl impl : {Impl::Literal, Impl::Fast}) {
    auto r = gemm(impl, l, x);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "s_channel must have shape (3,), got (4,)");
  }
}

// Empty dimensions: upstream's checks pass for N = 0 and M = 0 in every release, and for K = 0 in
// 0.2.35 (K = 2 * cols); 0.2.40 refuses K = 0 ("packed row width 0 does not match K=0"). Accepted
// ones give zeros (plus bias) of the right sizes, and nothing reads out of bounds.
TEST(GemmReference, EmptyDimensions) {
  for (auto ck : {upstream::ComfyKitchen::V0_2_35, upstream::ComfyKitchen::V0_2_40})
    for (auto [m, n, k] : {std::array<std::uint64_t, 3>{0, 3, 16}, {2, 0, 16}, {2, 3, 0}, {0, 0, 0}}) {
      Layer l = make_zero_layer(n, k, 16, 16);
      l.bias_shape = Shape{n};
      l.bias.assign(n, 1.5f);
      Activations x;
      x.shape = {m, k};
      x.values.assign(m * k, 1.0f);
      GemmOptions opt;
      opt.comfy_kitchen = ck;
      for (Impl impl : {Impl::Literal, Impl::Fast}) {
        auto r = gemm(impl, l, x, opt);
        if (k == 0 && ck == upstream::ComfyKitchen::V0_2_40) {
          ASSERT_FALSE(r.ok());
          EXPECT_EQ(r.error().message, "packed row width 0 does not match K=0 at 4 or 6 bits");
          continue;
        }
        ASSERT_TRUE(r.ok()) << r.error().message;
        EXPECT_EQ(r->out, std::vector<float>(m * n, 1.5f));
        EXPECT_EQ(r->acc, std::vector<std::int32_t>(m * n, 0));
        EXPECT_EQ(r->x_q.size(), m * k);
      }
    }
}

TEST(GemmReference, NanScaleByteIsReported) {
  Layer l = make_zero_layer(2, 32, 16, 16);
  l.s_rel[3] = 0xFF;  // row 1, group 1
  Activations x;
  x.shape = {1, 32};
  x.values.assign(32, 1.0f);
  for (Impl impl : {Impl::Literal, Impl::Fast}) {
    auto r = gemm(impl, l, x);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "weight decodes to NaN at [1, 16] (code 8, s_rel byte 0xff)");
  }
}

// Law: an error is reported exactly when some element's decode is NaN (checked against the scalar
// decode_is_nan over every element), naming the first such element.
RC_GTEST_PROP(GemmReference, NanDecodeReportedIffPresent, ()) {
  const std::uint64_t n = *rc::gen::inRange<std::uint64_t>(1, 6), k = 32;
  Layer l = make_zero_layer(n, k, 16, 16);
  for (auto& b : l.weight) b = std::uint8_t(*rc::gen::inRange(0, 256));
  for (auto& s : l.s_rel) s = *rc::gen::element<std::uint8_t>(0x38, 0x00, 0x80, 0x7F, 0xFF, 0x40);
  if (*rc::gen::arbitrary<bool>()) {
    l.codebook_shape = Shape{16};
    l.codebook.assign(16, 0.5f);
    l.codebook[std::size_t(*rc::gen::inRange(0, 16))] = *rc::gen::element(INFINITY, -INFINITY, NAN, 1.0f);
  }
  std::string want;
  for (std::uint64_t i = 0; i < n && want.empty(); ++i)
    for (std::uint64_t j = 0; j < k && want.empty(); ++j) {
      const std::uint8_t c = unpack_code(&l.weight[i * k / 2], j), b = l.s_rel[i * 2 + j / 16];
      if (decode_is_nan(c, b, l.has_codebook() ? l.codebook.data() : nullptr)) {
        char hex[3];
        std::snprintf(hex, sizeof hex, "%02x", b);
        want = "weight decodes to NaN at [" + std::to_string(i) + ", " + std::to_string(j) + "] (code " +
               std::to_string(c) + ", s_rel byte 0x" + hex + ")";
      }
    }
  const Status s = check_decodable(l);
  if (want.empty()) {
    RC_ASSERT(s.ok());
  } else {
    RC_ASSERT(!s.ok());
    RC_ASSERT(s.error().message == want);
  }
}

// 6-bit storage, hand-derived: codes 0..63 mean c - 32; low nibbles in the first K/2 bytes (even
// column low), top 2 bits in the next K/4 bytes (column j: byte K/2 + j/4, bits 2*(j%4)).
TEST(GemmReference, SixBitDecodeHandDerived) {
  Layer l = make_zero_layer(1, 32, 16, 16, 6);
  ASSERT_EQ(l.row_bytes(), 24u);
  ASSERT_EQ(l.bits(), 6);
  std::fill(l.weight.begin(), l.weight.end(), 0);
  // Column 0: code 63 (low 0xF, top 3) -> 31; column 1: code 0 -> -32; column 5: code 0x25 (low 5,
  // top 2) -> 5; every other column code 0 too.
  l.weight[0] = 0x0F;
  l.weight[16] = 0x03;                 // column 0 top bits = 3 (bits 0-1 of byte 16)
  l.weight[2] = 0x50;                  // column 5 low nibble 5 (high nibble of byte 2)
  l.weight[17] = 0x02 << 2;            // column 5 top bits = 2 (byte 16 + 5/4, bits 2*(5%4))
  std::vector<std::int8_t> want(32, -32);
  want[0] = 31;
  want[5] = 5;
  EXPECT_EQ(decode_weights(l), want);
  EXPECT_EQ(decode_weights_fast(l, 2), want);
  // With s_rel 1.5 (FP8 0x3C) the grid is rne(v * 1.5) clamped: 31 -> 46.5 -> 46, -32 -> -48, 5 -> 7.5 -> 8.
  std::fill(l.s_rel.begin(), l.s_rel.end(), std::uint8_t(0x3C));
  std::vector<std::int8_t> want2(32, -48);
  want2[0] = 46;
  want2[5] = 8;
  EXPECT_EQ(decode_weights(l), want2);
  EXPECT_EQ(decode_weights_fast(l, 1), want2);
}

// F32 group scales are used as stored (negative, tiny, huge: clamped to +-127).
TEST(GemmReference, F32ScalesHandDerived) {
  Layer l = make_zero_layer(1, 16, 16, 16, 4, ScaleDtype::F32);
  ASSERT_EQ(l.s_rel.size(), 4u);
  for (std::size_t j = 0; j < 8; ++j) l.weight[j] = std::uint8_t(0xF0 | j);  // codes j (even col), 15 (odd)
  const float s = -2.5f;
  std::memcpy(l.s_rel.data(), &s, 4);
  std::vector<std::int8_t> want(16);
  for (int j = 0; j < 16; j += 2) {
    want[std::size_t(j)] = std::int8_t(std::nearbyint(float(j / 2 - 8) * -2.5f));  // rne: -7*-2.5 = 17.5 -> 18
    want[std::size_t(j + 1)] = std::int8_t(std::nearbyint(7 * -2.5f));             // -17.5 -> -18
  }
  EXPECT_EQ(want[2], 18);
  EXPECT_EQ(want[1], -18);
  EXPECT_EQ(decode_weights(l), want);
  EXPECT_EQ(decode_weights_fast(l, 1), want);
  const float big = 1e30f;
  std::memcpy(l.s_rel.data(), &big, 4);
  const auto w = decode_weights_fast(l, 1);
  EXPECT_EQ(w[0], -127);  // -8 * 1e30
  EXPECT_EQ(w[1], 127);
  EXPECT_EQ(decode_weights(l), w);
}

// NaN decodes with F32 scales: a NaN scale, or an infinite scale times code value 0 (code 8).
TEST(GemmReference, F32ScaleNanIsReported) {
  Layer l = make_zero_layer(2, 32, 16, 16, 4, ScaleDtype::F32);
  const float inf = INFINITY;
  std::memcpy(&l.s_rel[3 * 4], &inf, 4);  // row 1, group 1; every code is 8 (value 0): inf * 0
  Activations x;
  x.shape = {1, 32};
  x.values.assign(32, 1.0f);
  for (Impl impl : {Impl::Literal, Impl::Fast}) {
    auto r = gemm(impl, l, x);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "weight decodes to NaN at [1, 16] (code 8, s_rel inf)");
  }
  const float nan = NAN;
  std::memcpy(&l.s_rel[0], &nan, 4);
  EXPECT_EQ(check_decodable(l).error().message, "weight decodes to NaN at [0, 0] (code 8, s_rel nan)");
}

// The prepared layer gives the same bits as gemm_fast for many batches, and says where w_q is.
RC_GTEST_PROP(GemmReference, PreparedEqualsFast, ()) {
  const CaseParams p = draw_params(40, 70, 384);
  const auto c = make_case(p);
  GemmOptions opt;
  opt.policy = *rc::gen::element(ActPolicy::F32, ActPolicy::Eager);
  opt.threads = *rc::gen::inRange(1u, 4u);
  auto prep = prepare_layer(c.layer, opt);
  RC_ASSERT(prep.ok());
  RC_ASSERT(prep->N() == p.n && prep->K() == p.k && prep->bits() == p.bits);
  for (int batch = 0; batch < 2; ++batch) {
    auto fast = gemm_fast(c.layer, c.x, opt);
    auto pre = gemm_prepared(*prep, c.x, opt);
    RC_ASSERT(fast.ok() && pre.ok());
    RC_ASSERT(pre->w_q.empty());
    RC_ASSERT(std::ranges::equal(prep->w_q(), fast->w_q));
    RC_ASSERT(pre->x_q == fast->x_q && pre->acc == fast->acc);
    RC_ASSERT(same_bits(pre->out, fast->out) && same_bits(pre->w_dequant, fast->w_dequant));
  }
  // A wrong input is refused with upstream's message; the layer's own errors come from prepare_layer.
  Activations bad = c.x;
  bad.shape = {1, p.k + 16};
  bad.values.assign(p.k + 16, 0.0f);
  auto r = gemm_prepared(*prep, bad, opt);
  RC_ASSERT(!r.ok());
  RC_ASSERT(r.error().kind == ErrorKind::OpInputK);
  Layer broken = c.layer;
  broken.s_channel_shape = {p.n + 1};
  RC_ASSERT(prepare_layer(broken, opt).error().kind == ErrorKind::OpSChannelShape);
}

// Thread creation failing (resource limits) never aborts: fewer workers do the work, same bits.
TEST(GemmReference, ThreadCreationFailureFallsBack) {
  Layer l = make_zero_layer(70, 64, 16, 16);
  for (std::size_t i = 0; i < l.weight.size(); ++i) l.weight[i] = std::uint8_t(i * 37);
  Activations x;
  x.shape = {33, 64};
  x.values.resize(33 * 64);
  for (std::size_t i = 0; i < x.values.size(); ++i) x.values[i] = float(int(i % 17) - 8);
  GemmOptions one;
  auto want = gemm_fast(l, x, one);
  ASSERT_TRUE(want.ok());
  for (ThreadSpawnHook hook : {+[](unsigned) { return false; }, +[](unsigned i) { return i < 2; }}) {
    thread_spawn_hook().store(hook);
    GemmOptions many;
    many.threads = 4;
    auto got = gemm_fast(l, x, many);
    auto prep = prepare_layer(l, many);
    thread_spawn_hook().store(nullptr);
    ASSERT_TRUE(got.ok());
    ASSERT_TRUE(prep.ok());
    EXPECT_EQ(got->acc, want->acc);
    EXPECT_TRUE(same_bits(got->out, want->out));
    EXPECT_TRUE(std::ranges::equal(prep->w_q(), want->w_q));
  }
}

}  // namespace
}  // namespace w4a8::gemm
