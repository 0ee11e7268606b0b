// The one way C++ tests run Python: oracle scripts (the real upstream packages, independent models)
// called once per batch, their stdout read back as lines. A missing interpreter, a crash or a short
// answer is a test failure, never a skip: the oracles are required (optional environments, like the
// comfy-kitchen one, are probed by the test, which then skips and says why).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::testing {

// The interpreter the build was configured with (W4A8_PYTHON).
const std::string& default_python();
// The comfy-kitchen environment's interpreter: $W4A8_CK_PYTHON, else
// ~/.cache/w4a8check/ck-venv/bin/python (tools/upstream/ck_env.sh). It may not exist.
std::string ck_python();
// Absolute path of a file of the source tree (W4A8_SOURCE_ROOT); an absolute `rel` is kept.
std::string source_path(std::string_view rel);
// `s` single-quoted for /bin/sh.
std::string shell_quote(std::string_view s);

struct PythonRun {
  int exit_code = -1;              // the script's exit status; -1: did not start or died of a signal
  std::vector<std::string> lines;  // stdout split at '\n' (a last line without '\n' is kept)
  std::string command;             // the shell command, for failure messages
  bool ok() const { return exit_code == 0; }
};

// One run, described fluently:
//   PythonCall::script("tools/oracle/x.py").args({"--batch"}).stdin_from(p).in_dir(d).run()
class PythonCall {
 public:
  // A script relative to the source root (or absolute).
  static PythonCall script(std::string path);
  // A `-c` program.
  static PythonCall code(std::string program);

  PythonCall& args(std::vector<std::string> a);  // appended, each quoted
  PythonCall& python(std::string interpreter);   // default: default_python(); a command prefix, not quoted
  PythonCall& stdin_from(std::string path);      // default: inherited
  PythonCall& stdout_to(std::string path);       // default: captured into PythonRun::lines
  PythonCall& in_dir(std::string dir);           // default: the test's working directory

  // Runs it and reports the outcome as data (the caller decides what is a failure).
  PythonRun run() const;

 private:
  PythonCall() = default;
  std::string script_, code_, python_ = default_python(), stdin_, stdout_, cwd_;
  std::vector<std::string> args_;
};

// Runs `script args...` with the configured interpreter; a non-zero exit or no output at all is a
// test failure (ADD_FAILURE). Returns stdout's lines.
std::vector<std::string> python_lines(std::string_view script, const std::vector<std::string>& args = {});

// Batch oracle: `requests` one per line on stdin, one answer line per request. A missing
// interpreter, a crash or a short answer is a failure (the answers are padded to the request count).
std::vector<std::string> ask_oracle(std::string_view script, const std::vector<std::string>& requests,
                                    const std::string& python = default_python());

// First line of a shell command's stdout, "" when it cannot run or fails (probing interpreters).
std::string command_output(const std::string& cmd);

// A real CPython of minor version `major_minor` ("3.12"): $W4A8_PYTHON_3_12, python3.12 on PATH or
// ~/.pyenv/versions/3.12.*/bin/python3, the first that reports that version; "" when none does.
std::string python_of_version(std::string_view major_minor);

// "x" + lowercase hex: the oracles' byte-string argument encoding (the "x" keeps empty strings visible).
std::string hex_arg(std::string_view bytes);
std::string hex_arg(std::span<const std::uint8_t> bytes);
// Inverse of hex_arg (the "x" is optional).
std::string from_hex_arg(std::string_view h);

}  // namespace w4a8::testing
