// Suites: grids cover the contract edges, every case is a legal layer, data is deterministic, the
// adversarial kinds really hold what they claim (checked with the reference's intermediates and by
// direct arithmetic), and the directory round-trips and is never overwritten.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include "audit/explain.hpp"
#include "audit/implementation.hpp"
#include "audit/suite.hpp"
#include "gemm/operands.hpp"
#include "gemm/tensor_io.hpp"
#include "gemm/reference.hpp"
#include "io/read_file.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "temp_dir.hpp"

namespace w4a8::audit {
namespace {

std::string temp_dir() { return test_support::temp_dir("w4a8-audit-suite"); }

// The small grid's manifest for `seed`, written to `dir`.
Manifest written_small_suite(const std::string& dir, std::uint64_t seed) {
  auto cases = grid_cases("small", seed);
  EXPECT_TRUE(cases.ok());
  Manifest m;
  m.grid = "small", m.seed = seed;
  if (cases.ok()) m.cases = *cases;
  EXPECT_TRUE(write_suite(dir, m).ok());
  return m;
}

TEST(Grid, SmallAndStandardCoverTheEdges) {
  for (const char* g : {"small", "standard"}) {
    auto cases = grid_cases(g, 1);
    ASSERT_TRUE(cases.ok());
    std::set<std::uint64_t> ms;
    std::set<std::int64_t> gs, rs;
    std::set<int> kinds, xd, od, bd;
    bool codebook = false, uniform = false, corr = false, bias = false, npow2_k = false, big_nk = false;
    std::set<std::string> ids;
    for (const auto& c : *cases) {
      EXPECT_TRUE(ids.insert(c.id).second) << c.id;
      ms.insert(c.m), gs.insert(c.g), rs.insert(c.r), kinds.insert(int(c.data));
      xd.insert(int(c.x_dtype)), od.insert(int(c.out_dtype));
      if (c.bias) bd.insert(int(c.bias_dtype)), bias = true;
      (c.codebook ? codebook : uniform) = true;
      corr = corr || c.correction;
      npow2_k = npow2_k || (c.k & (c.k - 1)) != 0;
      big_nk = big_nk || c.k >= 8192 || c.n >= 8192;
      // The kernel contract, by hand.
      EXPECT_EQ(c.k % 16, 0u) << c.id;
      EXPECT_EQ(c.k % std::uint64_t(c.g), 0u) << c.id;
      EXPECT_EQ(c.k % std::uint64_t(c.r), 0u) << c.id;
      EXPECT_TRUE(c.g >= 4 && (16 % c.g == 0 || c.g % 16 == 0)) << c.id;
    }
    EXPECT_EQ(kinds.size(), 5u) << g;
    EXPECT_EQ(xd.size(), 3u) << g;
    EXPECT_EQ(od.size(), 3u) << g;
    EXPECT_EQ(bd.size(), 3u) << g;
    EXPECT_TRUE(codebook && uniform && corr && bias && npow2_k) << g;
    EXPECT_GE(gs.size(), 6u) << g;
    EXPECT_GE(rs.size(), 5u) << g;
    if (std::string(g) == "standard") {
      for (std::uint64_t m : {1, 7, 8, 13, 16, 17, 33, 128, 129, 257, 4096}) EXPECT_TRUE(ms.count(m)) << "M=" << m;
      EXPECT_TRUE(big_nk);
    }
  }
  EXPECT_FALSE(grid_cases("huge", 1).ok());
}

TEST(Generate, LegalAndDeterministic) {
  auto cases = grid_cases("small", 7);
  ASSERT_TRUE(cases.ok());
  for (const auto& c : *cases) {
    CaseData a = generate_case(c), b = generate_case(c);
    ASSERT_TRUE(gemm::validate_call(a.layer, a.x).ok()) << c.id;
    ASSERT_TRUE(gemm::check_decodable(a.layer).ok()) << c.id;
    EXPECT_EQ(a.layer.weight, b.layer.weight);
    EXPECT_EQ(a.layer.s_rel, b.layer.s_rel);
    EXPECT_EQ(a.x.values, b.x.values);
    for (float v : a.x.values)
      ASSERT_EQ(v, gemm::round_to(c.x_dtype, v)) << "activation not representable in its dtype";
  }
  // Another seed gives other data.
  auto other = grid_cases("small", 8);
  EXPECT_NE(generate_case((*cases)[3]).x.values, generate_case((*other)[3]).x.values);
}

// The adversarial kinds hold what they claim, checked on the reference's intermediates.
TEST(Generate, AdversarialKindsHoldWhatTheyClaim) {
  auto cases = grid_cases("standard", 1);
  ASSERT_TRUE(cases.ok());
  int ties_checked = 0, large_checked = 0, zero_checked = 0, sat_checked = 0, odd_units = 0, eager_rows = 0;
  for (const auto& c : *cases) {
    if (c.correction || c.m * c.n * c.k > (1u << 24)) continue;
    CaseData d = generate_case(c);
    auto r = reference_result(d, c.out_dtype, gemm::ActPolicy::F32);
    ASSERT_TRUE(r.ok()) << c.id;
    switch (c.data) {
      case DataKind::Ties: {
        if (c.r > 1024) break;
        // Row 0 is a tie row: its scale is an odd number (1, 7 or 15; 1 for bf16 and f16) times a
        // power of two, every block rotates exactly in any order, and every quotient x_rot / scale
        // is exactly on .5 (the rotation of the row's exact values, computed here in double).
        const float s = r->x_scale[0];
        int e;
        const double odd = std::ldexp(std::frexp(s, &e), 4);  // 16 * mantissa: 8, 14 or 15 (1, 7, 15)
        EXPECT_TRUE(odd == 8 || (c.x_dtype == gemm::FloatDtype::F32 && (odd == 14 || odd == 15)))
            << c.id << ": scale " << s;
        if (odd != 8) ++odd_units;
        std::vector<double> row(d.x.values.begin(), d.x.values.begin() + std::ptrdiff_t(c.k));
        int on_half = 0;
        for (std::uint64_t b = 0; b < c.k; b += std::uint64_t(c.r)) {
          EXPECT_TRUE(rotation_is_exact(d.x.values.data() + b, c.r)) << c.id << " block " << b;
          for (std::int64_t j = 0; j < c.r; ++j) {
            double y = 0;
            for (std::int64_t i = 0; i < c.r; ++i) y += gemm::hadamard_sign(c.r, i, j) * row[b + std::uint64_t(i)];
            const double q = y / std::sqrt(double(c.r)) / s;
            if (std::fabs(q - std::floor(q) - 0.5) == 0) {
              ++on_half;
              EXPECT_EQ(r->x_q[b + std::uint64_t(j)] % 2, 0) << c.id << ": a .5 tie not rounded to even";
            }
          }
        }
        EXPECT_GT(on_half, 0) << c.id;
        // Row 1 of a bf16/f16 case rotates exactly, and the eager policy's roundings change some x_q.
        if (c.m >= 2 && c.x_dtype != gemm::FloatDtype::F32) {
          const float* x1 = d.x.values.data() + c.k;
          for (std::uint64_t b = 0; b < c.k; b += std::uint64_t(c.r))
            EXPECT_TRUE(rotation_is_exact(x1 + b, c.r)) << c.id << " row 1 block " << b;
          std::vector<float> rot(c.k);
          std::vector<std::int8_t> qf(c.k), qe(c.k);
          float sf = 0, se = 0;
          gemm::quantize_row(x1, std::int64_t(c.k), c.r, gemm::ActPolicy::F32, c.x_dtype, rot.data(), qf.data(), &sf);
          gemm::quantize_row(x1, std::int64_t(c.k), c.r, gemm::ActPolicy::Eager, c.x_dtype, rot.data(), qe.data(), &se);
          EXPECT_NE(qf, qe) << c.id << ": row 1's x_q do not depend on the policy";
          ++eager_rows;
        }
        ++ties_checked;
        break;
      }
      case DataKind::LargeAcc: {
        for (std::uint64_t m = 0; m + 1 < c.m; ++m)  // the constant rows rotate exactly
          for (std::uint64_t b = 0; b < c.k; b += std::uint64_t(c.r))
            EXPECT_TRUE(rotation_is_exact(d.x.values.data() + m * c.k + b, c.r)) << c.id << " row " << m;
        std::int64_t mx = 0;
        for (auto a : r->acc) mx = std::max<std::int64_t>(mx, std::abs(std::int64_t(a)));
        EXPECT_GT(mx, 1 << 24) << c.id;
        ++large_checked;
        break;
      }
      case DataKind::ZeroRows: {
        if (c.m < 2) break;
        EXPECT_EQ(r->x_scale[0], 1e-30f) << c.id;  // row 0 is all zero: the scale floor
        ++zero_checked;
        break;
      }
      case DataKind::Saturate: {
        int clamped = 0;
        for (auto w : r->w_q) clamped += (w == 127 || w == -127);
        EXPECT_GT(clamped, int(r->w_q.size() / 2)) << c.id;
        ++sat_checked;
        break;
      }
      case DataKind::Random:
        break;
    }
  }
  EXPECT_GT(ties_checked, 2);
  EXPECT_GT(odd_units, 0);
  EXPECT_GT(eager_rows, 0);
  EXPECT_GT(large_checked, 2);
  EXPECT_GT(zero_checked, 2);
  EXPECT_GT(sat_checked, 2);
}

// Correction-path cases carry corrections of the size comfy-kitchen's asymmetric quantizer writes
// (8 * group_scale + min: about a group's midpoint), not rounding-level ones: dropping one, or
// reading another group's, must move outputs past every legal rounding.
TEST(Generate, CorrectionsAreOfTheWeightsOrder) {
  auto cases = grid_cases("standard", 1);
  ASSERT_TRUE(cases.ok());
  int checked = 0;
  for (const auto& c : *cases) {
    if (!c.correction || c.n * c.k > (1u << 22)) continue;
    const CaseData d = generate_case(c);
    auto r = reference_result(d, c.out_dtype, gemm::ActPolicy::F32);
    ASSERT_TRUE(r.ok()) << c.id;
    double corr = 0, weight = 0;
    const std::uint64_t g = std::uint64_t(c.g);
    for (std::uint64_t i = 0; i < c.n; ++i)
      for (std::uint64_t j = 0; j < c.k; ++j) {
        weight += std::fabs(double(r->w_q[i * c.k + j]) * d.layer.s_channel[i]);
        corr += std::fabs(double(d.layer.correction[(j / g) * c.n + i]));
      }
    EXPECT_GT(corr, 0.05 * weight) << c.id;
    ++checked;
  }
  EXPECT_GT(checked, 2);
}

// comfy-kitchen 0.2.40's storage variants in the small and standard grids: 6-bit codes under their
// layout rules (K % 32, G % 16, uniform, no correction) over every data kind, and F32 group scales
// at 4 and 6 bits, one on the correction path.
TEST(Grid, StorageVariants) {
  for (const char* g : {"small", "standard"}) {
    auto cases = grid_cases(g, 1);
    ASSERT_TRUE(cases.ok());
    std::set<int> kinds6;
    int six = 0, f32 = 0, f32_six = 0, f32_corr = 0, f32_codebook = 0;
    for (const auto& c : *cases) {
      if (c.bits == 6) {
        ++six, kinds6.insert(int(c.data));
        EXPECT_EQ(c.k % 32, 0u) << c.id;
        EXPECT_EQ(c.g % 16, 0) << c.id;
        EXPECT_FALSE(c.codebook || c.correction) << c.id;
        EXPECT_NE(c.id.find("_6b"), std::string::npos) << c.id;
      } else {
        EXPECT_EQ(c.bits, 4) << c.id;
      }
      if (c.scale_dtype == gemm::ScaleDtype::F32) {
        ++f32, f32_six += c.bits == 6, f32_corr += c.correction, f32_codebook += c.codebook;
        EXPECT_NE(c.id.find("_sf32"), std::string::npos) << c.id;
      }
    }
    EXPECT_GE(six, 5) << g;
    EXPECT_EQ(kinds6.size(), 5u) << g;
    EXPECT_GE(f32, 5) << g;
    EXPECT_GE(f32_six, 2) << g;
    EXPECT_GE(f32_corr, 1) << g;
    EXPECT_GE(f32_codebook, 1) << g;
  }
}

// Generated storage is what the entry says, the reference (comfy-kitchen 0.2.40 rules) accepts it,
// and random F32 scales really leave the FP8 grid (else they would test nothing FP8 does not).
TEST(Generate, StorageVariantsAreLegalAndAsDeclared) {
  auto cases = grid_cases("small", 1);
  ASSERT_TRUE(cases.ok());
  int off_grid = 0, negative = 0;
  for (const auto& c : *cases) {
    if (c.bits == 4 && c.scale_dtype == gemm::ScaleDtype::Fp8E4M3) continue;
    CaseData d = generate_case(c);
    EXPECT_EQ(d.layer.bits(), c.bits) << c.id;
    EXPECT_EQ(d.layer.scale_dtype(), c.scale_dtype) << c.id;
    EXPECT_EQ(d.layer.weight.size(), c.n * (c.bits == 6 ? c.k * 3 / 4 : c.k / 2)) << c.id;
    ASSERT_TRUE(gemm::validate_call(d.layer, d.x).ok()) << c.id;
    ASSERT_TRUE(gemm::check_decodable(d.layer).ok()) << c.id;
    auto r = reference_result(d, c.out_dtype, gemm::ActPolicy::F32);
    ASSERT_TRUE(r.ok()) << c.id << ": " << r.error().message;
    if (c.scale_dtype == gemm::ScaleDtype::F32 && c.data == DataKind::Random)
      for (std::uint64_t i = 0; i < c.n; ++i)
        for (std::uint64_t q = 0; q < c.k / std::uint64_t(c.g); ++q) {
          const float s = d.layer.s_rel_at(i, q);
          off_grid += gemm::fp8_e4m3fn_to_f32(gemm::f32_to_fp8_e4m3fn_rne(s)) != s;
          negative += s < 0;
        }
  }
  EXPECT_GT(off_grid, 10);
  EXPECT_GT(negative, 0);
}

// The reference's expected values come through the prepared-layer API; they equal gemm_literal's,
// field by field, on every storage variant and path of the small grid.
TEST(Reference, PreparedEqualsLiteral) {
  auto cases = grid_cases("small", 2);
  ASSERT_TRUE(cases.ok());
  for (const auto& c : *cases) {
    CaseData d = generate_case(c);
    for (auto pol : {gemm::ActPolicy::F32, gemm::ActPolicy::Eager}) {
      auto p = reference_result(d, c.out_dtype, pol);
      auto l = reference_result(d, c.out_dtype, pol, /*literal=*/true);
      ASSERT_TRUE(p.ok() && l.ok()) << c.id;
      EXPECT_EQ(p->w_q, l->w_q) << c.id;
      EXPECT_EQ(p->x_q, l->x_q) << c.id;
      EXPECT_EQ(p->acc, l->acc) << c.id;
      EXPECT_EQ(p->w_dequant, l->w_dequant) << c.id;
      ASSERT_EQ(p->out.size(), l->out.size()) << c.id;
      for (std::size_t i = 0; i < p->out.size(); ++i)
        ASSERT_TRUE(p->out[i] == l->out[i] || (p->out[i] != p->out[i] && l->out[i] != l->out[i])) << c.id << " " << i;
    }
  }
}

TEST(SuiteDir, RoundTripAndNoOverwrite) {
  const std::string dir = temp_dir() + "/suite";
  const Manifest m = written_small_suite(dir, 3);
  ASSERT_FALSE(m.cases.empty());
  auto back = read_suite(dir);
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->cases.size(), m.cases.size());
  for (std::size_t i = 0; i < m.cases.size(); ++i) {
    const auto& c = back->cases[i];
    EXPECT_EQ(c.id, m.cases[i].id);
    EXPECT_EQ(describe(c), describe(m.cases[i]));
    auto d = load_case(dir, *back, c);
    ASSERT_TRUE(d.ok()) << d.error().message;
    CaseData g = generate_case(c);
    EXPECT_EQ(d->layer.weight, g.layer.weight);
    EXPECT_EQ(d->layer.s_rel, g.layer.s_rel);
    EXPECT_EQ(d->layer.bits(), c.bits);
    EXPECT_EQ(d->layer.scale_dtype(), c.scale_dtype);
    EXPECT_EQ(d->layer.bias, g.layer.bias);
    EXPECT_EQ(d->x.values, g.x.values);
  }
  const auto before = io::read_small_file(dir + "/manifest.json");
  auto again = write_suite(dir, m);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, ErrorKind::AuditSuiteExists);
  EXPECT_EQ(*io::read_small_file(dir + "/manifest.json"), *before);
}

// A case file whose layer marker is not the entry's (another ConvRot size, another format) is a
// broken suite: real loaders read the marker, the reference the entry, and the edited file passed
// the built-ins while failing an adapter that honours it (found by a new user's pass, 2026-12-07).
TEST(SuiteDir, ACaseFileWhoseMarkerIsNotTheEntrysIsRefused) {
  const std::string dir = temp_dir() + "/marker-suite";
  ASSERT_FALSE(written_small_suite(dir, 5).cases.empty());
  auto back = read_suite(dir);
  ASSERT_TRUE(back.ok());
  const CaseSpec& c = back->cases[0];
  const std::string path = dir + "/" + c.file;
  ASSERT_TRUE(load_case(dir, *back, c).ok());
  const std::string marker = back->layer_prefix + ".comfy_quant";
  for (const std::string& edited : {gemm::layer_marker(c.g, 4), std::string(R"({"format": "something_else"})")}) {
    std::vector<st::TensorSpec> specs;
    st::WriteOptions o;
    {
      auto f = st::File::open(path);
      ASSERT_TRUE(f.ok());
      o.metadata = f->header().metadata;
      for (const st::TensorInfo& t : f->header().tensors) {
        const auto b = f->data(t);
        specs.push_back({t.name, t.dtype, t.shape, std::vector<std::uint8_t>(b.begin(), b.end())});
        if (t.name == marker) specs.back() = {t.name, st::Dtype::U8, {edited.size()}, {edited.begin(), edited.end()}};
      }
    }
    auto bytes = st::serialize(specs, o);
    ASSERT_TRUE(bytes.ok());
    ASSERT_TRUE(st::write_file(path, *bytes).ok());
    auto d = load_case(dir, *back, c);
    ASSERT_FALSE(d.ok()) << edited;
    EXPECT_EQ(d.error().kind, ErrorKind::AuditCaseFile);
    EXPECT_NE(d.error().message.find("its marker '" + marker + "' is not the entry's " + gemm::layer_marker(c.g, c.r)),
              std::string::npos)
        << d.error().message;
  }
}

TEST(Manifest, RejectsBadEntries) {
  EXPECT_EQ(parse_manifest("[]").error().kind, ErrorKind::AuditManifest);
  EXPECT_FALSE(parse_manifest(R"({"format": "w4a8check-audit-suite", "version": 2, "cases": []})").ok());
  EXPECT_TRUE(parse_manifest(R"({"format": "w4a8check-audit-suite", "version": 1, "cases": []})").ok());
  auto c = grid_cases("small", 1);
  json::Value v = case_to_json((*c)[0]);
  v.set("file", json::Value::from_string("../../etc/passwd"));
  EXPECT_FALSE(case_from_json(v).ok());
  // The id names a file in the work directory and appears in printed command lines.
  for (const char* id : {"../victim", "a/b", "..", ".hidden", "x y", "x;rm -rf ~", ""}) {
    v = case_to_json((*c)[0]);
    v.set("id", json::Value::from_string(id));
    EXPECT_FALSE(case_from_json(v).ok()) << id;
  }
  v = case_to_json((*c)[0]);
  v.set("id", json::Value::from_string("0001_m1.n-2_custom"));
  EXPECT_TRUE(case_from_json(v).ok());
  v = case_to_json((*c)[0]);
  v.set("bits", json::Value::from_int(5));
  EXPECT_FALSE(case_from_json(v).ok());
  EXPECT_TRUE(case_from_json(case_to_json((*c)[0])).ok());
}

}  // namespace
}  // namespace w4a8::audit
