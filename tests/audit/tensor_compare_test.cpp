// Comparison statistics and policies against hand-derived values.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "audit/tensor_compare.hpp"

namespace w4a8::audit {
namespace {

using gemm::FloatDtype;

TEST(UlpDistance, HandValues) {
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f), FloatDtype::F32), 1u);
  EXPECT_EQ(ulp_distance(1.0f, 1.0f + 3 * 0x1p-23f, FloatDtype::F32), 3u);
  // Across zero: the smallest subnormals on either side are 2 apart; +0 and -0 are equal.
  EXPECT_EQ(ulp_distance(0x1p-149f, -0x1p-149f, FloatDtype::F32), 2u);
  EXPECT_EQ(ulp_distance(0.0f, -0.0f, FloatDtype::F32), 0u);
  // bf16: 1.0 and 1.0078125 are neighbours; f16: 1.0 and 1 + 2^-10.
  EXPECT_EQ(ulp_distance(1.0f, 1.0078125f, FloatDtype::BF16), 1u);
  EXPECT_EQ(ulp_distance(1.0f, 1.0f + 0x1p-10f, FloatDtype::F16), 1u);
  EXPECT_EQ(ulp_distance(2.0f, 1.0f, FloatDtype::F16), 1024u);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(ulp_distance(nan, nan, FloatDtype::F32), 0u);
  EXPECT_EQ(ulp_distance(nan, 1.0f, FloatDtype::F32), kNanUlp);
  EXPECT_EQ(ulp_distance(INFINITY, 3.4028235e38f, FloatDtype::F32), 1u);
}

TEST(UlpOf, Grid) {
  EXPECT_EQ(ulp_of(1.0, FloatDtype::F32), 0x1p-23);
  EXPECT_EQ(ulp_of(1.5, FloatDtype::BF16), 0x1p-7);
  EXPECT_EQ(ulp_of(1000.0, FloatDtype::F16), 0.5);
  EXPECT_EQ(ulp_of(0.0, FloatDtype::F16), 0x1p-24);
}

TEST(Policy, ParseAndName) {
  EXPECT_EQ(parse_policy("exact")->kind, Policy::Kind::Exact);
  EXPECT_EQ(parse_policy("ulp:3")->param, 3);
  EXPECT_EQ(parse_policy("rel:1e-6")->param, 1e-6);
  EXPECT_EQ(parse_policy("rel:.5")->param, 0.5);
  EXPECT_EQ(parse_policy("rel:2")->param, 2);
  EXPECT_EQ(parse_policy("explained")->param, 1);
  EXPECT_EQ(parse_policy("explained:2")->param, 2);
  EXPECT_EQ(policy_name(*parse_policy("rel:1e-06")), "rel:1e-06");
  EXPECT_EQ(policy_name(*parse_policy("ulp:1099511627776")), "ulp:1099511627776");  // 2^40
  // Counts are whole decimal numbers in range: nothing is rounded, wrapped or read as a float.
  for (const char* bad : {"", "ulp", "ulp:", "ulp:-1", "rel:x", "explain", "exact:1", "ulp:0.5", "ulp:1.5", "ulp:1e3",
                          "ulp:+1", "ulp: 1", "ulp:18446744073709551617", "ulp:99999999999999999999", "ulp:1099511627777",
                          "explained:0.9", "explained:1e300", "rel:nan", "rel:1e400",
                          // a tolerance is decimal (strtod took these: found by a new user's pass, 2026-12-07)
                          "rel:0x10", "rel: 1", "rel:infinity", "rel:+1", "rel:-0"})
    EXPECT_FALSE(parse_policy(bad).ok()) << bad;
}

TEST(CompareTensors, StatsByHand) {
  // expected [2, 3]; actual differs at [0, 1] by 1 ulp and at [1, 2] by 0.5.
  std::vector<float> e = {1, 2, 3, 4, 5, 6}, a = e;
  a[1] = std::nextafter(2.0f, 3.0f);
  a[5] = 6.5f;
  auto s = compare_tensors(float_tensor_data("t", FloatDtype::F32, {2, 3}, e),
                           float_tensor_data("t", FloatDtype::F32, {2, 3}, a));
  EXPECT_EQ(s.count, 6u);
  EXPECT_EQ(s.mismatches, 2u);
  EXPECT_EQ(s.max_ulp, 0x1p-1 / 0x1p-21);  // 0.5 at 6.0: ulp(6) = 2^-21 -> 2^20
  EXPECT_DOUBLE_EQ(s.max_abs, 0.5);
  const double d1 = double(a[1]) - 2.0;
  EXPECT_DOUBLE_EQ(s.rel_l2, std::sqrt((d1 * d1 + 0.25) / 91.0));
  ASSERT_EQ(s.first.size(), 2u);
  EXPECT_EQ(s.first[0].index, (std::vector<std::uint64_t>{0, 1}));
  EXPECT_EQ(s.first[1].index, (std::vector<std::uint64_t>{1, 2}));
  EXPECT_EQ(s.hist[0], 4u);
  EXPECT_EQ(s.hist[1], 1u);
  EXPECT_EQ(s.hist[9], 1u);
  EXPECT_EQ(s.tiles_m * s.tiles_n, 6u);  // 1x1 tiles on a small tensor
  EXPECT_EQ(s.tiles[1], 1u);
  EXPECT_EQ(s.tiles[5], 1u << 20);

  std::string why;
  EXPECT_FALSE(passes(s, *parse_policy("exact"), &why));
  EXPECT_FALSE(passes(s, *parse_policy("ulp:1"), &why));
  EXPECT_NE(why.find("ulp"), std::string::npos);
  EXPECT_TRUE(passes(s, *parse_policy("ulp:1048576")));
  EXPECT_TRUE(passes(s, *parse_policy("rel:0.06")));
  EXPECT_FALSE(passes(s, *parse_policy("rel:0.05")));
}

TEST(CompareTensors, IntegersAreExactUnderAnyPolicy) {
  auto s = compare_tensors(int_tensor_data("q", "I8", {3}, std::vector<int>{1, 2, 3}),
                           int_tensor_data("q", "I8", {3}, std::vector<int>{1, 2, 4}));
  EXPECT_EQ(s.mismatches, 1u);
  EXPECT_EQ(s.max_ulp, 1u);  // |difference| for integers
  EXPECT_FALSE(passes(s, *parse_policy("ulp:100")));
  EXPECT_FALSE(passes(s, *parse_policy("rel:1")));
}

TEST(CompareTensors, SizeMismatchAndNan) {
  auto s = compare_tensors(float_tensor_data("t", FloatDtype::F32, {2}, {1, 2}),
                           float_tensor_data("t", FloatDtype::F32, {3}, {1, 2, 3}));
  EXPECT_FALSE(s.shape_error.empty());
  EXPECT_FALSE(passes(s, *parse_policy("rel:1")));
  // As many elements, equal values: a transposed shape or another float dtype still fails.
  const std::vector<float> six = {1, 2, 3, 4, 5, 6};
  auto t = compare_tensors(float_tensor_data("t", FloatDtype::F32, {2, 3}, six),
                           float_tensor_data("t", FloatDtype::F32, {3, 2}, six));
  EXPECT_EQ(t.shape_error, "expected F32 [2, 3], got F32 [3, 2]");
  EXPECT_FALSE(passes(t, *parse_policy("exact")));
  auto d = compare_tensors(float_tensor_data("t", FloatDtype::BF16, {2, 3}, six),
                           float_tensor_data("t", FloatDtype::F32, {2, 3}, six));
  EXPECT_EQ(d.shape_error, "expected BF16 [2, 3], got F32 [2, 3]");
  EXPECT_FALSE(passes(d, *parse_policy("ulp:100")));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto n = compare_tensors(float_tensor_data("t", FloatDtype::BF16, {2}, {1, nan}),
                           float_tensor_data("t", FloatDtype::BF16, {2}, {1, 1}));
  EXPECT_EQ(n.nan_mismatches, 1u);
  EXPECT_FALSE(passes(n, *parse_policy("rel:1000")));
  // No distance for a NaN against a number: NaN (they read "inf"), also after a finite difference.
  EXPECT_TRUE(std::isnan(n.max_abs));
  EXPECT_TRUE(std::isnan(n.rel_l2));
  auto m = compare_tensors(float_tensor_data("t", FloatDtype::F32, {3}, {nan, 2, 5}),
                           float_tensor_data("t", FloatDtype::F32, {3}, {0, 3, 5}));
  EXPECT_TRUE(std::isnan(m.max_abs));
  EXPECT_TRUE(std::isnan(m.rel_l2));
}

// An infinity is one step past the largest finite value on each grid (FLT_MAX, BF16 0x7F7F, F16
// 65504), but an overflow against a finite value is never "within N ulps"; nor is +inf against -inf
// (4.3e9 F32 steps apart, within ulp:2^40). NaN against NaN stays equal, inf against inf too.
TEST(CompareTensors, InfinityAgainstFiniteFailsEveryUlpBudget) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float bf16_max = 0x1.FEp127f;  // 0x7F7F: (2 - 2^-7) * 2^127
  struct Case {
    FloatDtype d;
    float top;
  };
  for (const Case& c : {Case{FloatDtype::F32, std::numeric_limits<float>::max()}, Case{FloatDtype::BF16, bf16_max},
                        Case{FloatDtype::F16, 65504.0f}}) {
    EXPECT_EQ(ulp_distance(inf, c.top, c.d), 1u);  // the metric itself is unchanged
    auto s = compare_tensors(float_tensor_data("t", c.d, {3}, {inf, -c.top, 1}),
                             float_tensor_data("t", c.d, {3}, {c.top, -inf, 1}));
    EXPECT_EQ(s.mismatches, 2u);
    EXPECT_EQ(s.inf_mismatches, 2u);
    EXPECT_EQ(s.max_ulp, 1u);
    std::string why;
    EXPECT_FALSE(passes(s, *parse_policy("ulp:1"), &why)) << int(c.d);
    EXPECT_EQ(why, "t: 2 infinity mismatches (inf against a finite value or -inf)");
    EXPECT_FALSE(passes(s, *parse_policy("ulp:1099511627776")));
    EXPECT_FALSE(passes(s, *parse_policy("rel:1000")));
    EXPECT_EQ(stats_to_json(s).get("inf_mismatches")->text, "2");
  }
  auto pm = compare_tensors(float_tensor_data("t", FloatDtype::F32, {1}, {inf}),
                            float_tensor_data("t", FloatDtype::F32, {1}, {-inf}));
  EXPECT_EQ(pm.inf_mismatches, 1u);
  EXPECT_FALSE(passes(pm, *parse_policy("ulp:1099511627776")));
  // Equal infinities and NaN against NaN are no mismatch; a finite 1-ulp difference still passes ulp:1.
  const float one_up = std::nextafter(1.0f, 2.0f);
  auto eq = compare_tensors(float_tensor_data("t", FloatDtype::F32, {4}, {inf, -inf, nan, 1}),
                            float_tensor_data("t", FloatDtype::F32, {4}, {inf, -inf, nan, one_up}));
  EXPECT_EQ(eq.mismatches, 1u);
  EXPECT_EQ(eq.inf_mismatches, 0u);
  EXPECT_TRUE(passes(eq, *parse_policy("ulp:1")));
}

TEST(UlpBucket, Edges) {
  EXPECT_EQ(ulp_bucket(0), 0);
  EXPECT_EQ(ulp_bucket(2), 2);
  EXPECT_EQ(ulp_bucket(4), 3);
  EXPECT_EQ(ulp_bucket(5), 4);
  EXPECT_EQ(ulp_bucket(4096), 8);
  EXPECT_EQ(ulp_bucket(4097), 9);
  EXPECT_EQ(ulp_bucket(kNanUlp), 9);
}

}  // namespace
}  // namespace w4a8::audit
