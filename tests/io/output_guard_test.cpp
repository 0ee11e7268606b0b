// InputGuard: an output is refused when it resolves to an input, however it is spelled.
#include <gtest/gtest.h>

#include <unistd.h>

#include "io/output_guard.hpp"
#include "io_test_util.hpp"

namespace w4a8::io {
namespace {

using test::spit;
using test::TempDir;

TEST(InputGuard, RefusesEverySpellingOfAnInput) {
  TempDir d("guard");
  const std::string in = d / "ckpt.safetensors";
  spit(in, "x");
  ::mkdir((d / "sub").c_str(), 0755);
  ASSERT_EQ(::symlink(in.c_str(), (d / "alias.safetensors").c_str()), 0);
  ASSERT_EQ(::link(in.c_str(), (d / "hard.safetensors").c_str()), 0);
  InputGuard g;
  g.add(in);
  for (const std::string& out : {in, d / "alias.safetensors", d / "hard.safetensors", d / "sub/../ckpt.safetensors",
                                 d / "./ckpt.safetensors"}) {
    const Status s = g.check_output(out);
    ASSERT_FALSE(s.ok()) << out;
    EXPECT_EQ(s.error().kind, ErrorKind::IoOutputIsInput);
    EXPECT_EQ(s.error().message, "refusing to write " + out + ": it is the input " + in + " (same file)");
  }
}

TEST(InputGuard, AcceptsOtherAndNewFiles) {
  TempDir d("guard_ok");
  spit(d / "a", "a");
  spit(d / "b", "b");
  InputGuard g;
  g.add(d / "a");
  g.add(d / "missing");  // cannot be stat'ed: nothing to protect
  EXPECT_TRUE(g.check_output(d / "b").ok());
  EXPECT_TRUE(g.check_output(d / "new").ok());
  EXPECT_TRUE(g.check_output(d / "missing").ok());
}

// A character device is written in place and replaces nothing, so naming it as both input and
// output is not this error: the input is refused as a device on its own (gemm --input /dev/null
// --out /dev/null said "it is the input /dev/null"; found by a new user's pass, 2026-12-07).
TEST(InputGuard, ACharacterDeviceOutputReplacesNothing) {
  if (::access("/dev/null", W_OK) != 0) GTEST_SKIP() << "no writable /dev/null on this system";
  InputGuard g;
  g.add("/dev/null");
  EXPECT_TRUE(g.check_output("/dev/null").ok());
}

}  // namespace
}  // namespace w4a8::io
