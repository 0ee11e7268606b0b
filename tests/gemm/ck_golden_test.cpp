// Replays the committed comfy-kitchen golden vectors (corpus/golden/ck, written by
// tools/upstream/ck_oracle.py from the real comfy-kitchen eager backend; MANIFEST.md there) through
// the literal, fast and prepared reference: no torch needed, every CI run.
#include <gtest/gtest.h>

#include <filesystem>

#include "ck_case.hpp"

namespace w4a8::gemm::ck {
namespace {

const std::string kDir = std::string(W4A8_SOURCE_ROOT) + "/corpus/golden/ck";

TEST(CkGolden, MatchesComfyKitchenEager) {
  ASSERT_TRUE(std::filesystem::exists(kDir + "/operand_errors.safetensors")) << kDir;
  CompareOptions opt;
  opt.profile = upstream::kLatestComfyKitchen;
  opt.all_impls = true;
  opt.threads = 2;
  Stats s;
  const Status st = compare_dir(kDir, opt, s);
  ASSERT_TRUE(st.ok()) << st.error().message;
  std::printf("%s", format_stats(s, opt).c_str());
  EXPECT_GE(s.layers, 30u);
  EXPECT_GE(s.op_sets, 200u);
  EXPECT_EQ(s.upstream_version, std::string(upstream::profile(upstream::kLatestComfyKitchen).version));
  for (const auto& f : tolerance_failures(s)) ADD_FAILURE() << f;
  // The golden set must exercise what it claims: both dtypes, both paths, multi-defect sets.
  EXPECT_GT(s.dt[0].int_runs, 0u);
  EXPECT_GT(s.dt[1].int_runs, 0u);
  EXPECT_GT(s.dt[0].corr_runs + s.dt[1].corr_runs, 0u);
  EXPECT_GT(s.op_agree, 150u);
}

}  // namespace
}  // namespace w4a8::gemm::ck
