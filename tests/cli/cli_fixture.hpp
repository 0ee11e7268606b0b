// Shared helpers of the CLI tests: a scratch directory per test, small checkpoints built with the
// library's writer, byte-exact file reads, and the binary run through the shell.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "gemm/tensor_io.hpp"
#include "run_cli.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::testing {

namespace fs = std::filesystem;

inline const std::string kRoot = W4A8_SOURCE_ROOT;
inline const std::string kBin = W4A8_CLI_BINARY;

// `name` in this process's scratch directory for `tag` (made on first use), for tests without the fixture.
inline fs::path scratch(const std::string& tag, const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("w4a8_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d / name;
}

// A checkpoint of `t` written with the library's writer (a failure fails the calling test).
inline void write_checkpoint(const std::string& path, const std::vector<st::TensorSpec>& t,
                             const st::WriteOptions& o = {}) {
  auto bytes = st::serialize(t, o);
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes->data()), std::streamsize(bytes->size()));
  ASSERT_TRUE(f.flush().good()) << path;
}

class CliFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("w4a8_cli_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);  // kept for inspection when a test fails
  }
  std::string p(const std::string& name) const { return (dir_ / name).string(); }

  static void write(const std::string& path, const std::vector<st::TensorSpec>& t, const st::WriteOptions& o = {}) {
    write_checkpoint(path, t, o);
  }
  static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }
  static void spit(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary);
    f << bytes;
  }
  std::vector<std::string> names(const std::string& sub = "") const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(sub.empty() ? dir_ : dir_ / sub)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
  // stdout and stderr merged.
  static CliRun cli(const std::string& args) { return run_cli(args + " 2>&1"); }
  // A shell command line (environment, ulimit, pipes), stdout and stderr merged.
  static CliRun sh(const std::string& script) {
    return run_command("bash -c '" + script + "' 2>&1");
  }

  fs::path dir_;
};

}  // namespace w4a8::testing
