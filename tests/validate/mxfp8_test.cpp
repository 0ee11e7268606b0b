// Section 2 (mxfp8 shortcut) and section 3 (missing markers), hand-derived expectations.
#include <gtest/gtest.h>

#include "builder.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;

TEST(Mxfp8, AddsMarkersWhenEveryFormatIsMxfp8) {
  Ckpt c;
  c.meta("quant_format", "MxFp8");
  c.tensor("x.weight", Dtype::F8_E4M3, {4, 64}).tensor("x.weight_scale", Dtype::U8, {4, 2});
  c.tensor("b.weight", Dtype::F8_E4M3, {1, 32}).tensor("b.weight_scale", Dtype::U8, {1, 1});
  c.marker("b", R"({"format": "kept"})");
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  ASSERT_EQ(r->layers.size(), 2u);
  EXPECT_EQ(r->layers[0].prefix, "b");
  EXPECT_EQ(r->layers[0].marker.get("format")->text, "kept");  // setdefault keeps an existing marker
  EXPECT_EQ(r->layers[1].prefix, "x");
  EXPECT_EQ(r->layers[1].marker.get("format")->text, "mxfp8");
}

TEST(Mxfp8, IncompatibleLayers) {
  struct Case { Dtype wd; std::vector<std::uint64_t> ws; std::optional<std::pair<Dtype, std::vector<std::uint64_t>>> scale; const char* expected; };
  const Case cases[] = {
      {Dtype::F8_E4M3, {4, 64}, std::nullopt, "('F8_E4M3', (4, 64)) and None"},
      {Dtype::F8_E4M3, {4, 64}, {{Dtype::U8, {4, 3}}}, "('F8_E4M3', (4, 64)) and ('U8', (4, 3))"},
      {Dtype::F8_E4M3, {4, 64}, {{Dtype::I8, {4, 2}}}, "('F8_E4M3', (4, 64)) and ('I8', (4, 2))"},
      {Dtype::I8, {64}, {{Dtype::U8, {2}}}, "('I8', (64,)) and ('U8', (2,))"},
      {Dtype::U8, {2, 48}, {{Dtype::U8, {2, 1}}}, "('U8', (2, 48)) and ('U8', (2, 1))"},
      {Dtype::F8_E4M3, {}, {{Dtype::U8, {}}}, "('F8_E4M3', ()) and ('U8', ())"},
  };
  for (const Case& k : cases) {
    Ckpt c;
    c.meta("quant_format", "mxfp8");
    c.tensor("x.weight", k.wd, k.ws);
    if (k.scale) c.tensor("x.weight_scale", k.scale->first, k.scale->second);
    EXPECT_EQ(verdict(run(c)),
              std::string("sglang.mxfp8_incompatible: MXFP8 layer 'x' has incompatible weight/scale metadata: ") +
                  k.expected);
  }
}

TEST(Mxfp8, FirstBadPrefixInSortedOrder) {
  Ckpt c;
  c.meta("quant_format", "mxfp8");
  c.tensor("b.weight", Dtype::U8, {1});
  c.tensor("a.weight", Dtype::I8, {2});
  EXPECT_EQ(verdict(run(c)),
            "sglang.mxfp8_incompatible: MXFP8 layer 'a' has incompatible weight/scale metadata: ('I8', (2,)) and None");
}

TEST(Mxfp8, ShortcutNeedsExactlyMxfp8) {
  Ckpt a, b;
  a.meta("quant_format", "mxfp8").tensor("x.weight", Dtype::F8_E4M3, {4, 64});
  b.meta("quant_format", "fp8").tensor("y", Dtype::F32, {1});
  EXPECT_EQ(verdict(run(std::vector<Bytes>{a.bytes(), b.bytes()})),
            "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['x']");
  Ckpt empty;  // an empty quant_format is ignored, so the set stays {"mxfp8"}
  empty.meta("quant_format", "");
  EXPECT_EQ(verdict(run(std::vector<Bytes>{a.bytes(), empty.bytes()})).substr(0, 26), "sglang.mxfp8_incompatible:");
}

TEST(MissingMarkers, FirstFiveSorted) {
  Ckpt c;
  for (const char* n : {"w7", "w3", "w1", "w6", "w2", "w5", "w4", "Z", "\xC3\xA9"})
    c.tensor(std::string(n) + ".weight", Dtype::I8, {1});
  c.tensor("f.weight", Dtype::F32, {1});   // not a quantized dtype
  c.tensor("w0.weight", Dtype::U8, {1}).marker("w0", R"({"format": "other"})");
  EXPECT_EQ(verdict(run(c)),
            "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['Z', 'w1', 'w2', 'w3', 'w4']");
  // Prefixes in another order than their weights' names ("x-.weight" < "x.a.weight" < "x.weight",
  // but "x" < "x-" < "x.a"), and prefixes that first differ before either ends (in name order).
  Ckpt nested;
  for (const char* n : {"x.weight", "x.a.weight", "x-.weight", "y1.weight", "y2.weight"})
    nested.tensor(n, Dtype::I8, {1});
  EXPECT_EQ(verdict(run(nested)),
            "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['x', 'x-', 'x.a', 'y1', 'y2']");
  Ckpt shorter;  // the later name's prefix is the earlier one's start: "x-.weight" < "x.weight", "x" < "x-"
  shorter.tensor("x-.weight", Dtype::I8, {1}).tensor("x.weight", Dtype::I8, {1});
  EXPECT_EQ(verdict(run(shorter)), "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['x', 'x-']");
  Ckpt one;
  one.tensor("a\nb.weight", Dtype::F8_E4M3, {1});
  EXPECT_EQ(verdict(run(one)), "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['a\\nb']");
}

}  // namespace
}  // namespace w4a8::validate::testing
