// Runs the built w4a8check binary (W4A8_CLI_BINARY) or another command through the shell and
// captures its exit status and output.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/wait.h>

namespace w4a8::testing {

struct CliRun {
  int rc = -1;
  std::string out;  // stdout (and stderr when merged by the caller)
};

// post: rc is the exit status, or -1 when the process did not exit normally.
inline CliRun run_command(const std::string& cmd) {
  CliRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = ::pclose(p);
  r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// Arguments are passed through the shell as written; merge stderr with " 2>&1" when needed.
inline CliRun run_cli(const std::string& args) { return run_command(std::string(W4A8_CLI_BINARY) + " " + args); }

}  // namespace w4a8::testing
