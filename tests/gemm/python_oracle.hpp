// Runs a Python oracle script and returns its stdout lines; the test fails (never skips) when
// python3 or its packages are missing.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace w4a8::gemm::testing {

inline std::vector<std::string> run_python(const std::string& script_rel, const std::string& args = "") {
  const std::string cmd = std::string(W4A8_PYTHON) + " " + W4A8_SOURCE_ROOT + "/" + script_rel + " " + args;
  std::vector<std::string> lines;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) { ADD_FAILURE() << "cannot run " << cmd; return lines; }
  std::string cur;
  char buf[4096];
  std::size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, p)) > 0)
    for (std::size_t i = 0; i < got; ++i) {
      if (buf[i] == '\n') { lines.push_back(cur); cur.clear(); } else { cur.push_back(buf[i]); }
    }
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << "oracle failed: " << cmd;
  EXPECT_FALSE(lines.empty()) << "oracle printed nothing: " << cmd;
  return lines;
}

}  // namespace w4a8::gemm::testing
