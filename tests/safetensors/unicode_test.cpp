// Rust's `{:?}` of strings in serde's messages, on every code point: for each Unicode plane one
// header whose shape holds a string of all its code points (surrogates aside), so the crate
// answers `invalid type: string "...", expected usize` with each one printed or escaped as the
// rustc that built the `safetensors` wheel decides (Unicode 17.0 for 0.8.0). Our message must be
// the same, byte for byte, through tools/oracle/safetensors_verdict.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "json/parse.hpp"
#include "json/wtf8.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "support/python.hpp"

namespace w4a8::st {
namespace {

namespace fs = std::filesystem;

// {"a":{"dtype":"F32","shape":["<every code point of the plane>"],"data_offsets":[0,4]}}
std::string plane_header(char32_t plane) {
  std::string s = R"({"a":{"dtype":"F32","shape":[")";
  for (char32_t cp = plane << 16; cp <= (plane << 16 | 0xFFFF); ++cp) {
    if (json::is_surrogate(cp)) continue;
    if (cp < 0x20 || cp == '"' || cp == '\\') {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      s += buf;
    } else {
      json::append_wtf8(s, cp);
    }
  }
  return s + R"("],"data_offsets":[0,4]}})";
}

TEST(StUnicode, RustDebugMatchesSafetensorsOnEveryCodePoint) {
  std::string tmpl = (fs::temp_directory_path() / "w4a8_st_unicode_XXXXXX").string();
  ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
  const fs::path dir = tmpl;
  std::vector<std::vector<std::uint8_t>> files;
  {
    std::ofstream list(dir / "list.txt");
    for (char32_t plane = 0; plane <= 16; ++plane) {
      const std::string h = plane_header(plane);
      std::vector<std::uint8_t> b(8);
      for (int k = 0; k < 8; ++k) b[std::size_t(k)] = std::uint8_t(std::uint64_t(h.size()) >> (8 * k));
      b.insert(b.end(), h.begin(), h.end());
      b.resize(b.size() + 4);
      const fs::path p = dir / ("plane" + std::to_string(plane) + ".safetensors");
      ASSERT_TRUE(write_file(p.string(), b).ok());
      list << p.string() << "\n";
      files.push_back(std::move(b));
    }
  }
  auto run = w4a8::testing::PythonCall::script("tools/oracle/safetensors_verdict.py")
                 .stdin_from((dir / "list.txt").string())
                 .run();
  ASSERT_TRUE(run.ok()) << "oracle failed (python3 or the safetensors package missing?): " << run.command;
  const std::vector<std::string> lines = std::move(run.lines);
  ASSERT_EQ(lines.size(), files.size());
  for (std::size_t plane = 0; plane < files.size(); ++plane) {
    auto v = json::loads_str(lines[plane]);
    ASSERT_TRUE(v.ok() && v->is_object()) << lines[plane].substr(0, 200);
    const json::Value* msg = v->get("message");
    ASSERT_TRUE(msg && msg->is_string());
    ASSERT_NE(msg->text.find("invalid type: string \""), std::string::npos) << msg->text.substr(0, 200);
    auto r = parse(files[plane]);
    ASSERT_FALSE(r.ok());
    const std::string& mine = r.error().message;
    if (mine == msg->text) continue;
    // Point at the first code point printed differently.
    std::size_t i = 0;
    while (i < mine.size() && i < msg->text.size() && mine[i] == msg->text[i]) ++i;
    ADD_FAILURE() << "plane " << plane << ": messages differ at byte " << i << "\n  python: "
                  << msg->text.substr(i > 20 ? i - 20 : 0, 60) << "\n  ours:   " << mine.substr(i > 20 ? i - 20 : 0, 60);
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace w4a8::st
