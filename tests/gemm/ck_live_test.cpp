// The LIVE comfy-kitchen oracle: when the comfy-kitchen environment exists (tools/upstream/ck_env.sh;
// W4A8_CK_PYTHON overrides its interpreter), ck_oracle.py quantizes and runs a quick set of layers
// and malformed operand sets with the installed comfy-kitchen (plus its hand-built exact and
// near-FLT_MAX cases), and the reference must agree within the contract's tolerances. Without the
// environment the test is SKIPPED (never passed) and says why.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

#include "ck_case.hpp"
#include "support/python.hpp"

namespace w4a8::gemm::ck {
namespace {

TEST(CkLive, QuickSetMatchesInstalledComfyKitchen) {
  const std::string py = w4a8::testing::ck_python();
  if (!std::filesystem::exists(py)) GTEST_SKIP() << "skipped: no comfy-kitchen env at " << py;
  // The env must import torch and comfy_kitchen; a broken env is a failure, not a skip.
  const auto probe = w4a8::testing::PythonCall::code("import torch, comfy_kitchen").python(py).run();
  ASSERT_TRUE(probe.ok()) << "comfy-kitchen env at " << py << " does not import torch/comfy_kitchen";
  const std::string dir = (std::filesystem::temp_directory_path() / ("w4a8_ck_live_" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(dir);
  const auto gen = w4a8::testing::PythonCall::script("tools/upstream/ck_oracle.py")
                       .args({"gen", "--set", "quick", "--out", dir})
                       .python(py)
                       .run();
  ASSERT_TRUE(gen.ok()) << gen.command;
  CompareOptions opt;
  Stats s;
  const Status st = compare_dir(dir, opt, s);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(st.ok()) << st.error().message;
  opt.profile = profile_for_version(s.upstream_version);
  std::printf("%s", format_stats(s, opt).c_str());
  EXPECT_GE(s.layers, 8u);
  EXPECT_GE(s.op_sets, 50u);
  // The hand-built cases: a correction-path layer with a bias compared bit for bit with BF16 and F16
  // activations (out in the activation dtype and in F32), and activations up to 3e38 on the integer
  // path (x_q, scale and a finite output, as upstream's).
  EXPECT_GE(s.dt[1].exact_runs, 2u);
  EXPECT_GE(s.dt[2].exact_runs, 2u);
  EXPECT_GE(s.dt[0].exact_runs, 1u);
  for (const auto& f : tolerance_failures(s)) ADD_FAILURE() << f;
}

}  // namespace
}  // namespace w4a8::gemm::ck
