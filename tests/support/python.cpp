#include "python.hpp"

#include <gtest/gtest.h>

#include <glob.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/hex.hpp"

namespace w4a8::testing {

const std::string& default_python() {
  static const std::string python = W4A8_PYTHON;
  return python;
}

std::string ck_python() {
  if (const char* p = std::getenv("W4A8_CK_PYTHON"); p != nullptr && *p != '\0') return p;
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/root") + "/.cache/w4a8check/ck-venv/bin/python";
}

std::string source_path(std::string_view rel) {
  if (!rel.empty() && rel.front() == '/') return std::string(rel);
  return std::string(W4A8_SOURCE_ROOT) + "/" + std::string(rel);
}

std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += "'\\''";
    else out.push_back(c);
  }
  out.push_back('\'');
  return out;
}

PythonCall PythonCall::script(std::string path) {
  PythonCall c;
  c.script_ = std::move(path);
  return c;
}
PythonCall PythonCall::code(std::string program) {
  PythonCall c;
  c.code_ = std::move(program);
  return c;
}
PythonCall& PythonCall::args(std::vector<std::string> a) {
  for (auto& s : a) args_.push_back(std::move(s));
  return *this;
}
PythonCall& PythonCall::python(std::string interpreter) {
  python_ = std::move(interpreter);
  return *this;
}
PythonCall& PythonCall::stdin_from(std::string path) {
  stdin_ = std::move(path);
  return *this;
}
PythonCall& PythonCall::stdout_to(std::string path) {
  stdout_ = std::move(path);
  return *this;
}
PythonCall& PythonCall::in_dir(std::string dir) {
  cwd_ = std::move(dir);
  return *this;
}

PythonRun PythonCall::run() const {
  PythonRun run;
  std::string& cmd = run.command;
  if (!cwd_.empty()) cmd = "cd " + shell_quote(cwd_) + " && ";
  cmd += python_;  // unquoted: W4A8_PYTHON may be a command with words ("env X=1 python3")
  if (!code_.empty()) cmd += " -c " + shell_quote(code_);
  else cmd += " " + shell_quote(source_path(script_));
  for (const auto& a : args_) cmd += " " + shell_quote(a);
  if (!stdin_.empty()) cmd += " < " + shell_quote(stdin_);
  if (!stdout_.empty()) cmd += " > " + shell_quote(stdout_);
  std::FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) return run;
  std::string line;
  char buf[65536];
  std::size_t n = 0;
  bool partial = false;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0) {
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        run.lines.push_back(std::move(line));
        line.clear();
        partial = false;
      } else {
        line.push_back(buf[i]);
        partial = true;
      }
    }
  }
  if (partial) run.lines.push_back(std::move(line));
  const int status = ::pclose(pipe);
  run.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

std::vector<std::string> python_lines(std::string_view script, const std::vector<std::string>& args) {
  PythonRun run = PythonCall::script(std::string(script)).args(args).run();
  if (!run.ok()) ADD_FAILURE() << "oracle failed (exit " << run.exit_code << "): " << run.command;
  if (run.lines.empty()) ADD_FAILURE() << "oracle printed nothing: " << run.command;
  return std::move(run.lines);
}

std::vector<std::string> ask_oracle(std::string_view script, const std::vector<std::string>& requests,
                                    const std::string& python) {
  char path[] = "/tmp/w4a8_oracle_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return std::vector<std::string>(requests.size());
  }
  ::close(fd);
  {
    std::ofstream in(path, std::ios::binary);
    for (const auto& r : requests) in << r << '\n';
  }
  PythonRun run = PythonCall::script(std::string(script)).python(python).stdin_from(path).run();
  std::remove(path);
  if (!run.ok()) ADD_FAILURE() << "oracle failed (exit " << run.exit_code << "): " << run.command;
  if (run.lines.size() != requests.size())
    ADD_FAILURE() << "oracle gave " << run.lines.size() << " answers for " << requests.size() << " requests";
  run.lines.resize(requests.size());
  return std::move(run.lines);
}

std::string command_output(const std::string& cmd) {
  std::FILE* pipe = ::popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buf[256];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  if (::pclose(pipe) != 0) return {};
  return out.substr(0, out.find('\n'));
}

std::string python_of_version(std::string_view major_minor) {
  const std::string name(major_minor);
  std::string key = name;
  for (char& c : key)
    if (c == '.') c = '_';
  std::vector<std::string> cands;
  if (const char* e = std::getenv(("W4A8_PYTHON_" + key).c_str())) cands.push_back(e);
  cands.push_back("python" + name);
  glob_t g{};
  const std::string pattern =
      std::string(std::getenv("HOME") ? std::getenv("HOME") : "/root") + "/.pyenv/versions/" + name + ".*/bin/python3";
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) cands.push_back(g.gl_pathv[i]);
  globfree(&g);
  for (const auto& c : cands)
    if (command_output("'" + c + "' -c \"import sys; print('%d.%d' % sys.version_info[:2])\"") == name) return c;
  return {};
}

std::string hex_arg(std::string_view bytes) { return "x" + hex::bytes(bytes); }
std::string hex_arg(std::span<const std::uint8_t> bytes) { return "x" + hex::bytes(bytes); }
std::string from_hex_arg(std::string_view h) {
  if (!h.empty() && h.front() == 'x') h.remove_prefix(1);
  return hex::decode(h);
}

}  // namespace w4a8::testing
