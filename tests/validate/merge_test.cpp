// Recording a prefix's second marker, per sglang release (docs/validator.md "Upstream versions"):
// 0.5.19 compares whole dicts and replaces; 0.5.20+ merge key by key. Expected results derived by
// hand from those rules and Python's ==/!= (a top-level NaN is != itself; inside a container the
// one NaN object json returns equals itself); the real wheels confirm them in the catalogue.
#include <gtest/gtest.h>

#include <chrono>

#include "builder.hpp"
#include "json/dump.hpp"

namespace w4a8::validate::testing {
namespace {

using upstream::Sglang;
constexpr Sglang kWhole = Sglang::V0_5_19;
constexpr Sglang kPerKey = Sglang::V0_5_23;
const std::string kConflict = "sglang.conflicting_markers: Conflicting Comfy quantization markers for 'm'";

std::string dumped(const Result<Report>& r, std::size_t i = 0) {
  if (!r.ok()) return verdict(r);
  return r->layers.at(i).prefix + "=" + json::dump(r->layers.at(i).marker);
}

TEST(Merge, ProfilesFromTheTable) {
  EXPECT_EQ(upstream::profile(kWhole).merge, upstream::MarkerMerge::WholeMarker);
  for (std::size_t i = 1; i < upstream::kSglangCount; ++i)
    EXPECT_EQ(upstream::kSglangProfiles[i].merge, upstream::MarkerMerge::PerKey) << upstream::kSglangProfiles[i].version;
  EXPECT_EQ(upstream::kLatestSglang, kPerKey);
  EXPECT_EQ(Options{}.sglang, kPerKey);
}

TEST(Merge, HeaderSummarizesTensorMarker) {
  Ckpt c = Ckpt().w4a8("m", 4, 128, 32, R"({"format": "asym_w4a8_int8", "group_size": 32})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"format": "asym_w4a8_int8"}}})");
  EXPECT_EQ(verdict(run_as(kWhole, {c.bytes()})), kConflict);
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes()})),
            R"(m={"format": "asym_w4a8_int8", "group_size": 32, "_has_codebook": false, "_has_correction": false})");
}

TEST(Merge, KeyOnlyInHeader) {
  // The header supplies group_size, the tensor the format: recorded in that order.
  Ckpt c = Ckpt().w4a8("m", 4, 128, 32, R"({"format": "asym_w4a8_int8"})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"group_size": 32}}})");
  EXPECT_EQ(verdict(run_as(kWhole, {c.bytes()})), kConflict);
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes()})),
            R"(m={"group_size": 32, "format": "asym_w4a8_int8", "_has_codebook": false, "_has_correction": false})");
}

TEST(Merge, TensorSupersetAddsKeysAtTheEnd) {
  Ckpt c = Ckpt().w4a8("m", 4, 128, 16, R"({"comment": "x", "format": "asym_w4a8_int8", "group_size": 16.0})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"group_size": 16, "format": "asym_w4a8_int8"}}})");
  EXPECT_EQ(verdict(run_as(kWhole, {c.bytes()})), kConflict);
  // group_size 16 == 16.0: no conflict; update() writes the float in place, "comment" is appended.
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes()})),
            R"(m={"group_size": 16.0, "format": "asym_w4a8_int8", "comment": "x", "_has_codebook": false, "_has_correction": false})");
}

TEST(Merge, ReorderedEqualMarkers) {
  Ckpt c = Ckpt().w4a8("m", 4, 128, 16, R"({"group_size": 16.0, "format": "asym_w4a8_int8", "f": 1})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"format": "asym_w4a8_int8", "f": true, "group_size": 16}}})");
  // 0.5.19 replaces the dict (the tensor marker's order); 0.5.20+ keep the first order, last values.
  EXPECT_EQ(dumped(run_as(kWhole, {c.bytes()})),
            R"(m={"group_size": 16.0, "format": "asym_w4a8_int8", "f": 1, "_has_codebook": false, "_has_correction": false})");
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes()})),
            R"(m={"format": "asym_w4a8_int8", "f": 1, "group_size": 16.0, "_has_codebook": false, "_has_correction": false})");
}

TEST(Merge, SharedKeyWithDifferentValueConflictsEverywhere) {
  Ckpt c = Ckpt().w4a8("m", 4, 128, 16, R"({"format": "asym_w4a8_int8", "group_size": 16})");
  for (const char* other : {R"({"group_size": 32})", R"({"group_size": "16"})", R"({"format": "ASYM_W4A8_INT8"})",
                            R"({"group_size": 16.5})", R"({"x": [1, 2], "group_size": 16})"}) {
    Ckpt d = c;
    d.meta("_quantization_metadata", std::string(R"({"layers": {"m": )") + other + "}}");
    EXPECT_EQ(verdict(run_as(kWhole, {d.bytes()})), kConflict) << other;
    const bool shared_differs = std::string(other).find("\"x\"") == std::string::npos;
    EXPECT_EQ(verdict(run_as(kPerKey, {d.bytes()})), shared_differs ? kConflict : "ok") << other;
  }
}

TEST(Merge, TopLevelNanDiffersFromItselfNestedNanDoesNot) {
  Ckpt a, b;
  a.marker("m", R"({"x": NaN, "y": [NaN], "z": {"w": NaN}})");
  b.marker("m", R"({"z": {"w": NaN}, "y": [NaN], "x": NaN})");
  EXPECT_EQ(verdict(run_as(kWhole, {a.bytes(), b.bytes()})), "ok");  // dicts compare values by identity first
  EXPECT_EQ(verdict(run_as(kPerKey, {a.bytes(), b.bytes()})), kConflict);  // float NaN != NaN
  Ckpt c, d;
  c.marker("m", R"({"y": [NaN], "z": {"w": NaN}})");
  d.marker("m", R"({"z": {"w": NaN}, "y": [NaN]})");
  EXPECT_EQ(dumped(run_as(kWhole, {c.bytes(), d.bytes()})), R"(m={"z": {"w": NaN}, "y": [NaN]})");
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes(), d.bytes()})), R"(m={"y": [NaN], "z": {"w": NaN}})");
  // NaN only once: nothing to compare it with.
  Ckpt e;
  e.marker("m", R"({"x": NaN})");
  Ckpt f;
  f.marker("m", R"({"y": 1})");
  EXPECT_EQ(dumped(run_as(kPerKey, {e.bytes(), f.bytes()})), R"(m={"x": NaN, "y": 1})");
}

TEST(Merge, DerivedKeyInHeaderIsOverwrittenInPlace) {
  Ckpt c = Ckpt().w4a8("m", 4, 128, 16, R"({"format": "asym_w4a8_int8"})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"_has_codebook": "yes", "_has_correction": true}}})");
  EXPECT_EQ(verdict(run_as(kWhole, {c.bytes()})), kConflict);
  EXPECT_EQ(dumped(run_as(kPerKey, {c.bytes()})),
            R"(m={"_has_codebook": false, "_has_correction": false, "format": "asym_w4a8_int8"})");
}

TEST(Merge, PartsInTwoShardsAndTwoMetadataHeaders) {
  Ckpt s1, s2;
  s1.tensor("m.weight", st::Dtype::I8, {4, 128}).marker("m", R"({"format": "asym_w4a8_int8"})");
  s2 = Ckpt().w4a8("m", 4, 128, 64, R"({"group_size": 64, "convrot": true})");
  EXPECT_EQ(verdict(run_as(kWhole, {s1.bytes(), s2.bytes()})), kConflict);
  EXPECT_EQ(dumped(run_as(kPerKey, {s1.bytes(), s2.bytes()})),
            R"(m={"format": "asym_w4a8_int8", "group_size": 64, "convrot": true, "_has_codebook": false, "_has_correction": false})");
  Ckpt h1, h2;
  h1.tensor("m.weight", st::Dtype::I8, {4, 128}).meta("_quantization_metadata", R"({"layers": {"m": {"group_size": 64}}})");
  h2.tensor("m.weight_s_rel", st::Dtype::F8_E4M3, {4, 4}).tensor("m.weight_s_channel", st::Dtype::F32, {4});
  h2.meta("_quantization_metadata", R"({"layers": {"m": {"format": "asym_w4a8_int8", "group_size": 64.0}}})");
  EXPECT_EQ(verdict(run_as(kWhole, {h1.bytes(), h2.bytes()})), kConflict);
  EXPECT_EQ(dumped(run_as(kPerKey, {h1.bytes(), h2.bytes()})),
            R"(m={"group_size": 64.0, "format": "asym_w4a8_int8", "_has_codebook": false, "_has_correction": false})");
}

// Hostile sizes stay linear: two 60,000-key markers of one prefix (merged through a key index).
TEST(Merge, LargeMarkersMergeInLinearTime) {
  std::string a = "{", b = "{";
  for (int i = 0; i < 60000; ++i) {
    a += (i ? ", \"k" : "\"k") + std::to_string(i) + "\": " + std::to_string(i);
    b += (i ? ", \"k" : "\"k") + std::to_string(59999 - i) + "\": " + std::to_string(59999 - i);
  }
  a += ", \"only_a\": 1}";
  b += ", \"only_b\": 2}";
  Ckpt x, y;
  x.marker("m", a);
  y.marker("m", b);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_as(kPerKey, {x.bytes(), y.bytes()});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_EQ(r->layers[0].marker->members.size(), 60002u);
  EXPECT_EQ(r->layers[0].marker->members.back().first, "only_b");
  EXPECT_EQ(verdict(run_as(kWhole, {x.bytes(), y.bytes()})), kConflict);
  EXPECT_LT(s, 2.0) << "per-key merge of two 60k-key markers took " << s << " s";
}

}  // namespace
}  // namespace w4a8::validate::testing
