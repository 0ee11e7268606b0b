// Options::only_layer and the per-layer API (layers.hpp): expectations derived by hand from
// docs/validator.md; LayersReport::overall() must equal inspect()'s verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "builder.hpp"
#include "validate/layers.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;

// Layer a: a 3-D weight (section 4 fails); b: fine upstream, K = 64 (strict: not a multiple of 256).
Ckpt two_layers() {
  Ckpt c;
  c.tensor("a.weight", Dtype::I8, {4, 8, 2}).tensor("a.weight_s_rel", Dtype::F8_E4M3, {4, 1});
  c.tensor("a.weight_s_channel", Dtype::F32, {4}).marker("a", R"({"format": "asym_w4a8_int8"})");
  c.w4a8("b", 4, 32, 16);
  return c;
}
const char* kRankError = "sglang.w4a8.rank: Comfy W4A8 layer 'a' needs a 2D packed weight, got (4, 8, 2)";
const char* kStrictB = "strict.w4a8.k_multiple_convrot: Comfy W4A8 layer 'b' has K=64 not divisible by convrot_groupsize=256";

Result<Report> run_only(const Ckpt& c, const std::string& layer, bool strict = false) {
  Options o;
  o.only_layer = layer;
  o.strict = strict;
  return run(std::vector<Bytes>{c.bytes()}, o);
}

std::string status(const Status& s) { return s.ok() ? "ok" : std::string(s.error().code()) + ": " + s.error().message; }

TEST(OnlyLayer, ChecksThatPrefixOnly) {
  const Ckpt c = two_layers();
  EXPECT_EQ(verdict(run(c)), kRankError);
  EXPECT_EQ(verdict(run_only(c, "b")), "ok");
  EXPECT_EQ(verdict(run_only(c, "a")), kRankError);
  EXPECT_EQ(verdict(run_only(c, "b", true)), kStrictB);
  EXPECT_EQ(verdict(run_only(c, "zz")), "validate.no_such_layer: no Comfy quantization marker for layer 'zz'");
  EXPECT_EQ(error_info(ErrorKind::ValidateNoSuchLayer).exit, ExitClass::Usage);
  auto r = run_only(c, "b");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->layers.size(), 2u);  // every recorded layer is reported; only b got derived keys
  EXPECT_EQ(r->layers[0].marker.get("_has_codebook"), nullptr);
  EXPECT_NE(r->layers[1].marker.get("_has_codebook"), nullptr);
}

TEST(OnlyLayer, SectionsOneToThreeStillApply) {
  Ckpt c = two_layers();
  c.tensor("c.weight", Dtype::I8, {2, 2});  // a quantized weight without a marker
  EXPECT_EQ(verdict(run_only(c, "b")), "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['c']");
  Ckpt d = two_layers();
  d.meta("_quantization_metadata", "[]");
  EXPECT_EQ(verdict(run_only(d, "b")),
            "sglang.quantization_metadata_not_object: _quantization_metadata in model.safetensors must contain an object");
}

TEST(InspectLayers, EachLayerGetsItsOwnVerdict) {
  const Ckpt c = two_layers();
  Options o;
  o.strict = true;
  auto r = inspect_layers(named({c.bytes()}), o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->checkpoint.ok());
  ASSERT_EQ(r->report.layers.size(), 2u);
  ASSERT_EQ(r->verdicts.size(), 2u);
  EXPECT_EQ(status(r->verdicts[0].upstream), kRankError);
  EXPECT_EQ(status(r->verdicts[0].strict), "ok");  // not run: upstream failed
  EXPECT_EQ(status(r->verdicts[1].upstream), "ok");
  EXPECT_EQ(status(r->verdicts[1].strict), kStrictB);
  EXPECT_FALSE(r->accepted(0));
  EXPECT_TRUE(r->accepted(1));
  EXPECT_EQ(status(r->overall()), kRankError);
  EXPECT_EQ(r->sglang, upstream::kLatestSglang);
}

// Report::unknown_format: the layers section 4 skips because their marker names no known format
// (none at all, an unknown string, a non-string). Hand-counted: 3 of 5; both walks count the same.
TEST(InspectLayers, CountsLayersWithoutAKnownFormat) {
  Ckpt c;
  c.w4a8("b", 4, 32, 16);
  c.marker("n", "{}").marker("u", R"({"format": "w9a9"})").marker("v", R"({"format": 7})");
  c.tensor("f.weight", Dtype::F8_E4M3, {2, 2}).tensor("f.weight_scale", Dtype::F32, {});
  c.marker("f", R"({"format": "float8_e4m3fn"})");
  auto whole = run(c);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->layers.size(), 5u);
  EXPECT_EQ(whole->unknown_format, 3u);
  auto layers = inspect_layers(named({c.bytes()}));
  ASSERT_TRUE(layers.ok());
  EXPECT_TRUE(layers->overall().ok());
  EXPECT_EQ(layers->report.unknown_format, 3u);
  EXPECT_EQ(run_only(c, "b")->unknown_format, 0u);  // only the layer checked counts
  EXPECT_EQ(run_only(c, "n")->unknown_format, 1u);
}

TEST(InspectLayers, CheckpointErrors) {
  Ckpt c = two_layers();
  c.tensor("c.weight", Dtype::I8, {2, 2});
  auto r = inspect_layers(named({c.bytes()}));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(status(r->checkpoint), "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['c']");
  ASSERT_EQ(r->verdicts.size(), 2u);  // collection finished: layers still judged
  EXPECT_FALSE(r->accepted(1));      // but no layer is accepted
  EXPECT_EQ(status(r->verdicts[1].upstream), "ok");
  Ckpt bad;
  bad.marker("x", "{bad");
  auto q = inspect_layers(named({bad.bytes()}));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(status(q->checkpoint), "sglang.invalid_marker: Invalid Comfy quantization marker 'x.comfy_quant' in model.safetensors");
  EXPECT_TRUE(q->report.layers.empty());
  const Bytes truncated = {1, 2, 3};
  auto t = inspect_layers(named({truncated}));
  ASSERT_TRUE(t.ok());  // a container error is a verdict, not a failure to run
  EXPECT_EQ(status(t->checkpoint), "safetensors.HeaderTooSmall: Error while deserializing header: header too small");
}

TEST(InspectConsumers, MatrixAcrossProfiles) {
  // A header marker summarizing the tensor marker: 0.5.19 refuses the checkpoint, 0.5.20+ accept.
  Ckpt c = Ckpt().w4a8("m", 4, 128, 32, R"({"format": "asym_w4a8_int8", "group_size": 32})");
  c.meta("_quantization_metadata", R"({"layers": {"m": {"format": "asym_w4a8_int8"}}})");
  const auto dir = std::filesystem::temp_directory_path() / ("w4a8-consumers-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "m.safetensors").string();
  const Bytes b = c.bytes();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  const std::vector<std::string> paths = {path, (dir / "missing.safetensors").string()};
  auto missing = inspect_consumers(paths);
  // 0.5.19 stops at file 1's conflict, but 0.5.20+ go on to file 2 and cannot read it: no matrix.
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::IoOpenFailed);
  auto r = inspect_consumers(std::span(paths).first(1));
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), upstream::kSglangCount);
  for (std::size_t i = 0; i < r->size(); ++i) {
    const LayersReport& l = (*r)[i];
    EXPECT_EQ(l.sglang, upstream::kSglangProfiles[i].id);
    if (upstream::kSglangProfiles[i].merge == upstream::MarkerMerge::WholeMarker) {
      EXPECT_EQ(status(l.checkpoint), "sglang.conflicting_markers: Conflicting Comfy quantization markers for 'm'");
    } else {
      ASSERT_TRUE(l.checkpoint.ok()) << status(l.checkpoint);
      ASSERT_EQ(l.verdicts.size(), 1u);
      EXPECT_TRUE(l.accepted(0));
      EXPECT_EQ(l.report.find("m.weight")->shape, (std::vector<std::uint64_t>{4, 128}));  // kept alive
    }
  }
}

}  // namespace
}  // namespace w4a8::validate::testing
