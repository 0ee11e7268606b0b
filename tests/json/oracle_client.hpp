// Runs a Python oracle script once on a batch of request lines and returns its answer lines, so a
// test asks python3 thousands of questions in one process. Shared by tests/json and tests/py.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

namespace w4a8::testing {

// "x" + lowercase hex: the oracle's argument encoding (the "x" keeps empty byte strings visible).
inline std::string hex_arg(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "x";
  for (unsigned char c : bytes) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 15]);
  }
  return out;
}
inline std::string hex_arg(std::span<const std::uint8_t> bytes) {
  return hex_arg(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// Inverse of hex_arg (the "x" prefix is optional); malformed input yields what parsed so far.
inline std::string from_hex_arg(std::string_view h) {
  if (!h.empty() && h[0] == 'x') h.remove_prefix(1);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(nibble(h[i]) << 4 | nibble(h[i + 1])));
  return out;
}

// Runs `python script` with the requests on stdin. A missing interpreter, a crash or a short
// answer is a test failure (never a skip): the oracle is required.
inline std::vector<std::string> ask_oracle_with(const std::string& python, const std::string& script,
                                                const std::vector<std::string>& requests) {
  char path[] = "/tmp/w4a8_oracle_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    ADD_FAILURE() << "mkstemp failed";
    return {};
  }
  close(fd);
  {
    std::ofstream in(path, std::ios::binary);
    for (const auto& r : requests) in << r << '\n';
  }
  const std::string cmd = python + " '" + script + "' < '" + path + "'";
  std::vector<std::string> answers;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "cannot run " << cmd;
    std::remove(path);
    return {};
  }
  std::string line;
  char buf[65536];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) {
    for (std::size_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        answers.push_back(std::move(line));
        line.clear();
      } else {
        line.push_back(buf[i]);
      }
    }
  }
  const int status = pclose(pipe);
  std::remove(path);
  if (status != 0) ADD_FAILURE() << "oracle failed (status " << status << "): " << cmd;
  if (answers.size() != requests.size())
    ADD_FAILURE() << "oracle gave " << answers.size() << " answers for " << requests.size() << " requests";
  answers.resize(requests.size());
  return answers;
}

// The same with W4A8_PYTHON, the interpreter the build was configured with.
inline std::vector<std::string> ask_oracle(const std::string& script, const std::vector<std::string>& requests) {
  return ask_oracle_with(W4A8_PYTHON, script, requests);
}

// First line of a command's stdout ("" when it cannot run or fails).
inline std::string command_output(const std::string& cmd) {
  FILE* pipe = popen((cmd + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buf[256];
  while (fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  if (pclose(pipe) != 0) return {};
  return out.substr(0, out.find('\n'));
}

inline std::string source_path(std::string_view rel) { return std::string(W4A8_SOURCE_ROOT) + "/" + std::string(rel); }

}  // namespace w4a8::testing
