// --strict: each kernel-contract and data check, in order, with hand-derived messages.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "builder.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;

std::string strict_verdict(const Ckpt& c) {
  EXPECT_EQ(verdict(run(c, false)), "ok");  // every case here is one upstream accepts
  return verdict(run(c, true));
}

std::string marker_with(const std::string& extra) { return R"({"format": "asym_w4a8_int8", )" + extra + "}"; }

TEST(Strict, ValidLayerPasses) {
  Ckpt c = Ckpt().w4a8("blk");
  c.tensor("blk.weight_codebook", Dtype::F32, {16}).tensor("blk.weight_correction", Dtype::F32, {16, 4});
  c.tensor("blk.bias", Dtype::BF16, {4});
  EXPECT_EQ(strict_verdict(c), "ok");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("k", 2, 32, 16, marker_with(R"("convrot_groupsize": 16, "convrot": true)"))), "ok");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("k", 2, 8, 4, marker_with(R"("group_size": 4, "convrot_groupsize": 4)"))), "ok");
}

TEST(Strict, KernelContract) {
  const std::string p = "Comfy W4A8 layer 'b' ";
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 0)), "strict.w4a8.zero_sized: " + p + "is empty: N=0 and K=256 must both be positive");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 0)), "strict.w4a8.zero_sized: " + p + "is empty: N=4 and K=0 must both be positive");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 4, 4)),
            "strict.w4a8.k_multiple_16: " + p + "has K=8, which the W4A8 kernels need divisible by 16");
  for (int g : {5, 12, 24, 100})
    EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, g)),
              "strict.w4a8.group_size_shape: " + p + "has group_size=" + std::to_string(g) +
                  ", which must divide 16 or be a multiple of 16");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 24, 32)),
            "strict.w4a8.k_multiple_group: " + p + "has K=48 not divisible by group_size=32 (floor division hides 16 trailing inputs)");
  Ckpt huge;
  huge.tensor("b.weight", Dtype::I8, {4, 128}).tensor("b.weight_s_rel", Dtype::F8_E4M3, {4, 0});
  huge.tensor("b.weight_s_channel", Dtype::F32, {4}, f32_bytes({1, 1, 1, 1}));
  huge.marker("b", marker_with(R"("group_size": 340282366920938463463374607431768211456)"));  // 2^128
  EXPECT_EQ(strict_verdict(huge), "strict.w4a8.k_multiple_group: " + p +
                                      "has K=256 not divisible by group_size=340282366920938463463374607431768211456 "
                                      "(floor division hides 256 trailing inputs)");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, 16, marker_with(R"("convrot": false)"))),
            "strict.w4a8.convrot_not_true: " + p + "has convrot=false, but the W4A8 kernels always rotate (convrot must be true)");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, 16, marker_with(R"("convrot": "yes")"))),
            "strict.w4a8.convrot_not_true: " + p + "has convrot=\"yes\", but the W4A8 kernels always rotate (convrot must be true)");
  for (const char* r : {"32", "0", "-4", "2", "8", "1099511627776000"})
    EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, 16, marker_with(std::string(R"("convrot_groupsize": )") + r))),
              "strict.w4a8.convrot_groupsize: " + p + "has convrot_groupsize=" + r + ", which must be a power of 4 >= 4");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, 16, marker_with(R"("convrot_groupsize": Infinity)"))),
            "python.int.float_infinity: cannot convert float infinity to integer");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 32)),
            "strict.w4a8.k_multiple_convrot: " + p + "has K=64 not divisible by convrot_groupsize=256");
  EXPECT_EQ(strict_verdict(Ckpt().w4a8("b", 4, 128, 16, marker_with(R"("convrot_groupsize": 1024)"))),
            "strict.w4a8.k_multiple_convrot: " + p + "has K=256 not divisible by convrot_groupsize=1024");
  Ckpt bias = Ckpt().w4a8("b");
  bias.tensor("b.bias", Dtype::F32, {4, 1});
  EXPECT_EQ(strict_verdict(bias), "strict.w4a8.bias: " + p +
                                      "has an incompatible bias: F32(4, 1), expected a BF16/F16/F32 tensor of shape (4,)");
  Ckpt bias_dtype = Ckpt().w4a8("b");
  bias_dtype.tensor("b.bias", Dtype::F64, {4});
  EXPECT_EQ(strict_verdict(bias_dtype), "strict.w4a8.bias: " + p +
                                            "has an incompatible bias: F64(4,), expected a BF16/F16/F32 tensor of shape (4,)");
}

// A layer whose s_rel / channel / codebook / correction bytes are given.
Ckpt data_layer(Bytes s_rel, Bytes channel, std::optional<Bytes> codebook = {}, std::optional<Bytes> corr = {}) {
  Ckpt c;
  c.tensor("d.weight", Dtype::I8, {2, 128}).tensor("d.weight_s_rel", Dtype::F8_E4M3, {2, 16}, s_rel);
  c.tensor("d.weight_s_channel", Dtype::F32, {2}, channel);
  if (codebook) c.tensor("d.weight_codebook", Dtype::F32, {16}, *codebook);
  if (corr) c.tensor("d.weight_correction", Dtype::F32, {16, 2}, *corr);
  return c.marker("d", R"({"format": "asym_w4a8_int8"})");
}

// The NaN scan over weight_s_rel, exhaustively: every byte value at every position of three layouts
// (32 bytes: whole 8-byte words only; 12 and 5: a tail after the words, or no word at all). FP8 E4M3FN
// has two NaN encodings, 0x7F and 0xFF; every other byte is finite. A second NaN after the first
// must not be the one reported.
TEST(Strict, NanScaleScanFindsTheFirstNanAtEveryPosition) {
  struct Layout {
    std::uint64_t rows, group;  // K = 256 (cols 128): groups = 256 / group
  };
  for (const Layout lay : {Layout{2, 16}, Layout{3, 64}, Layout{5, 256}}) {
    const std::uint64_t groups = 256 / lay.group, size = lay.rows * groups;
    for (std::uint64_t at = 0; at < size; ++at)
      for (int byte = 0; byte < 256; ++byte) {
        Bytes rel(size, 0x38);  // 1.0
        rel[at] = static_cast<std::uint8_t>(byte);
        if (at + 1 < size) rel[size - 1] = 0x7F;  // a later NaN (or `at` itself when it is the last)
        const bool nan = (byte & 0x7F) == 0x7F;
        Ckpt c;
        c.tensor("d.weight", Dtype::I8, {lay.rows, 128}).tensor("d.weight_s_rel", Dtype::F8_E4M3, {lay.rows, groups}, rel);
        Bytes ones;
        for (std::uint64_t r = 0; r < lay.rows; ++r) ones.insert(ones.end(), {0, 0, 0x80, 0x3F});  // 1.0f
        c.tensor("d.weight_s_channel", Dtype::F32, {lay.rows}, ones);
        c.marker("d", R"({"format": "asym_w4a8_int8", "group_size": )" + std::to_string(lay.group) + "}");
        const std::uint64_t first = nan || at + 1 == size ? at : size - 1;
        const bool first_is_ff = nan ? byte == 0xFF : false;
        const std::string want = "strict.w4a8.nan_group_scale: Comfy W4A8 layer 'd' has a NaN FP8 group scale (byte 0x" +
                                 std::string(first_is_ff ? "ff" : "7f") + ") at weight_s_rel[" + std::to_string(first / groups) +
                                 ", " + std::to_string(first % groups) + "]";
        if (!nan && at + 1 == size) {
          ASSERT_EQ(strict_verdict(c), "ok") << size << " " << at << " " << byte;
          continue;
        }
        ASSERT_EQ(strict_verdict(c), want) << size << " " << at << " " << byte;
      }
  }
}

TEST(Strict, DataChecks) {
  const std::string p = "Comfy W4A8 layer 'd' ";
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Bytes rel(32, 0x38);
  rel[16 + 5] = 0xFF;
  rel[25] = 0x7F;
  rel[3] = 0xFE;  // -448: finite
  EXPECT_EQ(strict_verdict(data_layer(rel, f32_bytes({1, 1}))),
            "strict.w4a8.nan_group_scale: " + p + "has a NaN FP8 group scale (byte 0xff) at weight_s_rel[1, 5]");
  Bytes rel_7f(32, 0x38);
  rel_7f[31] = 0xFF;
  rel_7f[2] = 0x7F;
  EXPECT_EQ(strict_verdict(data_layer(rel_7f, f32_bytes({1, 1}))),
            "strict.w4a8.nan_group_scale: " + p + "has a NaN FP8 group scale (byte 0x7f) at weight_s_rel[0, 2]");
  const Bytes good(32, 0x38);
  EXPECT_EQ(strict_verdict(data_layer(good, f32_bytes({-0.0f, -2.5f}))),
            "strict.w4a8.channel_scale: " + p + "has a non-finite or negative channel scale -2.5 at weight_s_channel[1]");
  EXPECT_EQ(strict_verdict(data_layer(good, f32_bytes({nan, 1}))),
            "strict.w4a8.channel_scale: " + p + "has a non-finite or negative channel scale nan at weight_s_channel[0]");
  EXPECT_EQ(strict_verdict(data_layer(good, f32_bytes({1, -inf}))),
            "strict.w4a8.channel_scale: " + p + "has a non-finite or negative channel scale -inf at weight_s_channel[1]");
  Bytes cb = f32_bytes({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, inf});
  EXPECT_EQ(strict_verdict(data_layer(good, f32_bytes({0.1f, 1}), cb)),
            "strict.w4a8.codebook: " + p + "has a non-finite codebook entry inf at weight_codebook[15]");
  Bytes corr(16 * 2 * 4, 0);
  const float bad = nan;
  std::memcpy(corr.data() + 4 * (7 * 2 + 1), &bad, 4);
  EXPECT_EQ(strict_verdict(data_layer(good, f32_bytes({1, 1}), std::nullopt, corr)),
            "strict.w4a8.correction: " + p + "has a non-finite correction nan at weight_correction[7, 1]");
}

TEST(Strict, LayersInMarkerOrderAndOnlyW4a8) {
  Ckpt c = Ckpt().w4a8("z").w4a8("a", 4, 32);
  c.tensor("i.weight", Dtype::I8, {4, 3}).tensor("i.weight_scale", Dtype::F32, {}).marker("i", R"({"format": "int8_tensorwise"})");
  EXPECT_EQ(strict_verdict(c), "strict.w4a8.k_multiple_convrot: Comfy W4A8 layer 'a' has K=64 not divisible by convrot_groupsize=256");
}

// --strict runs on each layer right after upstream's checks of it, yet upstream's verdict comes
// first: an upstream error in a later layer wins over a strict error in an earlier one, and of two
// strict errors the first layer's wins.
TEST(Strict, UpstreamErrorsOfLaterLayersWinOverStrictErrors) {
  Ckpt c = Ckpt().w4a8("a", 4, 32);  // 'a': K=64, which --strict alone refuses (convrot_groupsize 256)
  c.tensor("c.weight", Dtype::I8, {4, 128, 1}).tensor("c.weight_s_rel", Dtype::F8_E4M3, {4, 16});
  c.tensor("c.weight_s_channel", Dtype::F32, {4}).marker("c", R"({"format": "asym_w4a8_int8"})");
  const std::string upstream = verdict(run(c, false));
  EXPECT_TRUE(upstream.starts_with("sglang.w4a8.rank: ") && upstream.find("'c'") != std::string::npos) << upstream;
  EXPECT_EQ(verdict(run(c, true)), upstream);

  Ckpt two = Ckpt().w4a8("a", 4, 32).w4a8("b", 4, 4, 4);  // both refused by --strict only
  EXPECT_EQ(strict_verdict(two), "strict.w4a8.k_multiple_convrot: Comfy W4A8 layer 'a' has K=64 not divisible by convrot_groupsize=256");
}

}  // namespace
}  // namespace w4a8::validate::testing
