// Temporary directories for the audit tests, removed when the test process exits.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace w4a8::audit::test_support {

// A new directory /tmp/<stem>-XXXXXX.
inline std::string temp_dir(const std::string& stem = "w4a8-audit") {
  struct All {
    std::vector<std::string> dirs;
    ~All() {
      for (const auto& d : dirs) std::filesystem::remove_all(d);
    }
  };
  static All all;
  std::string t = "/tmp/" + stem + "-XXXXXX";
  if (::mkdtemp(t.data()) == nullptr) std::abort();
  all.dirs.push_back(t);
  return t;
}

}  // namespace w4a8::audit::test_support
