// Section 4, asym_w4a8_int8: each check in order, hand-derived messages.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "builder.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;

std::string w4a8_marker(const std::string& group_size_json) {
  return R"({"format": "asym_w4a8_int8", "group_size": )" + group_size_json + "}";
}

TEST(W4a8, AcceptsAndSetsDerivedKeysInOrder) {
  Ckpt c = Ckpt().w4a8("l");
  c.tensor("l.weight_codebook", Dtype::F32, {16}).tensor("l.weight_correction", Dtype::F32, {16, 4});
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  const json::Members& m = r->layers[0].marker->members;
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[2].first, "_has_codebook");
  EXPECT_EQ(m[3].first, "_has_correction");
  EXPECT_TRUE(m[2].second.boolean && m[3].second.boolean);
}

TEST(W4a8, MissingTensorsSorted) {
  Ckpt c;
  c.tensor("m.weight", Dtype::I8, {4, 8}).marker("m", R"({"format": "asym_w4a8_int8"})");
  EXPECT_EQ(verdict(run(c)), "sglang.missing_tensors: Comfy layer 'm' is missing checkpoint tensors: "
                             "['m.weight_s_channel', 'm.weight_s_rel']");
}

TEST(W4a8, GroupSizeThroughPythonInt) {
  struct Case { std::string json; std::string expected; };
  const std::string invalid = "sglang.w4a8.group_size: Comfy W4A8 layer 'g' has invalid group_size=";
  const Case cases[] = {
      {"2", invalid + "2"}, {"true", invalid + "1"}, {"false", invalid + "0"}, {"3.9", invalid + "3"},
      {"-16", invalid + "-16"}, {"\" 3 \"", invalid + "3"}, {"-0.5", invalid + "0"},
      {"-99999999999999999999999", invalid + "-99999999999999999999999"},
      {"NaN", "python.int.float_nan: cannot convert float NaN to integer"},
      {"Infinity", "python.int.float_infinity: cannot convert float infinity to integer"},
      {"null", "python.int.bad_type: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"},
      {"[]", "python.int.bad_type: int() argument must be a string, a bytes-like object or a real number, not 'list'"},
      {"{}", "python.int.bad_type: int() argument must be a string, a bytes-like object or a real number, not 'dict'"},
      {"\"1__6\"", "python.int.invalid_literal: invalid literal for int() with base 10: '1__6'"},
      {"\"it's\"", "python.int.invalid_literal: invalid literal for int() with base 10: \"it's\""},
  };
  for (const Case& k : cases)
    EXPECT_EQ(verdict(run(Ckpt().w4a8("g", 4, 128, 16, w4a8_marker(k.json)))), k.expected) << k.json;
  // Accepted spellings of 16 and 32 (s_rel is (4, 16) / (4, 8) for K = 256).
  for (const char* ok16 : {"16", "16.0", "16.9", "\"  16 \"", "\"1_6\"", "\"+16\"", "1.6e1"})
    EXPECT_EQ(verdict(run(Ckpt().w4a8("g", 4, 128, 16, w4a8_marker(ok16)))), "ok") << ok16;
  EXPECT_EQ(verdict(run(Ckpt().w4a8("g", 4, 128, 32, w4a8_marker("\"\xD9\xA3\xD9\xA2\"")))), "ok");  // Arabic 32
  EXPECT_EQ(verdict(run(Ckpt().w4a8("g", 4, 128, 16, R"({"format": "asym_w4a8_int8"})"))), "ok");  // default 16
}

TEST(W4a8, HugeGroupSizeMeansZeroGroups) {
  Ckpt c;
  c.tensor("h.weight", Dtype::I8, {4, 128}).tensor("h.weight_s_rel", Dtype::F8_E4M3, {4, 0});
  c.tensor("h.weight_s_channel", Dtype::F32, {4});
  c.marker("h", w4a8_marker("1000000000000000000000000000000"));
  EXPECT_EQ(verdict(run(c)), "ok");
}

TEST(W4a8, KBeyond64Bits) {
  // K = 2 * (2^64 - 1) and group_size = 2^63: K // G = 3.
  Ckpt c;
  c.tensor("h.weight", Dtype::I8, {0, 18446744073709551615ull}).tensor("h.weight_s_rel", Dtype::F8_E4M3, {0, 3});
  c.tensor("h.weight_s_channel", Dtype::F32, {0});
  c.marker("h", w4a8_marker("9223372036854775808"));
  EXPECT_EQ(verdict(run(c)), "ok");
}

TEST(W4a8, DtypeRankShapeCodebookCorrection) {
  auto with = [](Dtype w, Dtype s, Dtype ch) {
    Ckpt c;
    c.tensor("d.weight", w, {4, 128}).tensor("d.weight_s_rel", s, {4, 16}).tensor("d.weight_s_channel", ch, {4});
    return c.marker("d", R"({"format": "asym_w4a8_int8"})");
  };
  EXPECT_EQ(verdict(run(with(Dtype::U8, Dtype::F8_E4M3, Dtype::F32))),
            "sglang.w4a8.dtypes: Comfy W4A8 layer 'd' needs I8 weights and FP8 group scales, got U8 and F8_E4M3");
  EXPECT_EQ(verdict(run(with(Dtype::I8, Dtype::F8_E5M2, Dtype::F16))),
            "sglang.w4a8.dtypes: Comfy W4A8 layer 'd' needs I8 weights and FP8 group scales, got I8 and F8_E5M2");
  EXPECT_EQ(verdict(run(with(Dtype::I8, Dtype::F8_E4M3, Dtype::BF16))),
            "sglang.w4a8.channel_dtype: Comfy W4A8 layer 'd' needs F32 channel scales, got BF16");

  Ckpt rank;
  rank.tensor("r.weight", Dtype::I8, {4, 8, 2}).tensor("r.weight_s_rel", Dtype::F8_E4M3, {4, 1});
  rank.tensor("r.weight_s_channel", Dtype::F32, {4}).marker("r", R"({"format": "asym_w4a8_int8"})");
  EXPECT_EQ(verdict(run(rank)), "sglang.w4a8.rank: Comfy W4A8 layer 'r' needs a 2D packed weight, got (4, 8, 2)");

  Ckpt shapes;  // floor division: K = 18, G = 4 -> 4 groups; (4, 5) is wrong
  shapes.tensor("s.weight", Dtype::I8, {4, 9}).tensor("s.weight_s_rel", Dtype::F8_E4M3, {4, 5});
  shapes.tensor("s.weight_s_channel", Dtype::F32, {4}).marker("s", w4a8_marker("4"));
  EXPECT_EQ(verdict(run(shapes)),
            "sglang.w4a8.shapes: Comfy W4A8 layer 's' has incompatible weight/scale shapes: (4, 9), (4, 5), and (4,)");
  Ckpt chan;
  chan.tensor("s.weight", Dtype::I8, {4, 9}).tensor("s.weight_s_rel", Dtype::F8_E4M3, {4, 4});
  chan.tensor("s.weight_s_channel", Dtype::F32, {1, 4}).marker("s", w4a8_marker("4"));
  EXPECT_EQ(verdict(run(chan)),
            "sglang.w4a8.shapes: Comfy W4A8 layer 's' has incompatible weight/scale shapes: (4, 9), (4, 4), and (1, 4)");

  Ckpt cb = Ckpt().w4a8("c");
  cb.tensor("c.weight_codebook", Dtype::F32, {4, 4});
  EXPECT_EQ(verdict(run(cb)), "sglang.w4a8.codebook: Comfy W4A8 layer 'c' needs an F32[16] codebook");
  Ckpt corr = Ckpt().w4a8("c");
  corr.tensor("c.weight_correction", Dtype::F32, {4, 16});  // transposed
  EXPECT_EQ(verdict(run(corr)), "sglang.w4a8.correction: Comfy W4A8 layer 'c' has an incompatible correction tensor");
}

// Property: any well-formed layer is accepted; any other s_rel width is rejected with the exact text.
RC_GTEST_PROP(W4a8Property, SRelWidthMustBeFloorKOverG, ()) {
  const std::uint64_t n = *rc::gen::inRange<std::uint64_t>(0, 5);
  const std::uint64_t cols = *rc::gen::inRange<std::uint64_t>(0, 80);
  const std::uint64_t g = *rc::gen::inRange<std::uint64_t>(4, 70);
  const std::uint64_t width = *rc::gen::inRange<std::uint64_t>(0, 45);
  Ckpt c;
  c.tensor("p.weight", Dtype::I8, {n, cols}).tensor("p.weight_s_rel", Dtype::F8_E4M3, {n, width});
  c.tensor("p.weight_s_channel", Dtype::F32, {n}).marker("p", w4a8_marker(std::to_string(g)));
  const std::string got = verdict(run(c));
  if (width == 2 * cols / g) {
    RC_ASSERT(got == "ok");
  } else {
    RC_ASSERT(got == "sglang.w4a8.shapes: Comfy W4A8 layer 'p' has incompatible weight/scale shapes: (" +
                         std::to_string(n) + ", " + std::to_string(cols) + "), (" + std::to_string(n) + ", " +
                         std::to_string(width) + "), and (" + std::to_string(n) + ",)");
  }
}

}  // namespace
}  // namespace w4a8::validate::testing
