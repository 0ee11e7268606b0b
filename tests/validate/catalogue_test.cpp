// Replays corpus/validator/: every case through inspect() (bytes) and inspect_paths() (files, from
// inside the case directory so the paths in messages match), compared byte for byte with the
// expectations the Python oracle (or, for strict cases, the hand-written script) stored: type,
// message and, where stored (strict and container cases: the crate's error name), code.
// The last test re-runs the oracle over the catalogue and fails if any stored expectation drifted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "json/parse.hpp"
#include "validate/inspect.hpp"

namespace w4a8::validate {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(W4A8_SOURCE_ROOT) / "corpus" / "validator";

std::vector<std::uint8_t> read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<std::string> case_names() {
  std::vector<std::string> out;
  if (fs::is_directory(kCorpus))
    for (const auto& e : fs::directory_iterator(kCorpus))
      if (e.is_directory()) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

const json::Value& field(const json::Value& v, std::string_view key) {
  static const json::Value kNull;
  const json::Value* f = v.get(key);
  return f != nullptr ? *f : kNull;
}

// Empty when the result matches the expected verdict, else a description of the difference.
std::string compare(const json::Value& expected, const Result<Report>& got) {
  const bool want_ok = field(expected, "ok").boolean;
  if (!got.ok()) {
    const Error& e = got.error();
    const std::string got_text = std::string(e.type()) + " [" + std::string(e.code()) + "]: " + e.message;
    if (want_ok) return "expected ok, got " + got_text;
    const std::string& type = field(expected, "type").text;
    const json::Value& code = field(expected, "code");
    if (e.type() != type) return "type: expected " + type + ", got " + got_text;
    if (code.is_string() && e.code() != code.text) return "code: expected " + code.text + ", got " + got_text;
    if (e.message != field(expected, "message").text)
      return "message:\n  expected: " + field(expected, "message").text + "\n  got:      " + e.message;
    return "";
  }
  if (!want_ok) return "expected " + field(expected, "message").text + ", got ok";
  const json::Value& layers = field(expected, "layers");
  if (!layers.is_object()) return "";
  const Report& r = got.value();
  if (layers.members.size() != r.layers.size()) return "layer count differs";
  for (std::size_t i = 0; i < r.layers.size(); ++i) {
    if (layers.members[i].first != r.layers[i].prefix) return "layer order differs at " + r.layers[i].prefix;
    // Whole markers (derived keys included) under Python equality.
    if (!json::py_equal(layers.members[i].second, r.layers[i].marker)) return "marker differs: " + r.layers[i].prefix;
  }
  return "";
}

// Replays one case directory; returns "" or the differences.
std::string replay(const fs::path& dir) {
  const std::vector<std::uint8_t> doc_bytes = read_all(dir / "case.json");
  json::ParseResult doc = json::loads_str(std::string_view(reinterpret_cast<const char*>(doc_bytes.data()), doc_bytes.size()));
  if (!doc.ok()) return "bad case.json: " + doc.error().detail;
  std::vector<std::string> names;
  for (const json::Value& f : field(*doc, "files").items) names.push_back(f.text);
  std::vector<std::vector<std::uint8_t>> bytes;
  for (const std::string& n : names) bytes.push_back(read_all(dir / n));
  std::vector<InputFile> in;
  for (std::size_t i = 0; i < names.size(); ++i) in.push_back({names[i], bytes[i]});

  const bool strict = field(*doc, "strict").boolean;
  Options opt;
  opt.strict = strict;
  std::string out;
  auto note = [&](const std::string& what, const std::string& diff) {
    if (!diff.empty()) out += what + ": " + diff + "\n";
  };
  note("inspect", compare(field(*doc, "expected"), inspect(in, opt)));
  if (strict) note("inspect without --strict", compare(field(*doc, "sglang"), inspect(in)));
  // Same through the file API, with the case directory as working directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir);
  const Result<Report> from_files = inspect_paths(names, opt);
  fs::current_path(cwd);
  note("inspect_paths", compare(field(*doc, "expected"), from_files));
  return out;
}

class Catalogue : public ::testing::TestWithParam<std::string> {};

TEST_P(Catalogue, MatchesStoredVerdict) { EXPECT_EQ(replay(kCorpus / GetParam()), ""); }

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string out = info.param;
  for (char& c : out)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return out;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Catalogue, ::testing::ValuesIn(case_names()), test_name);

TEST(CatalogueIndex, HasCasesForEveryKind) {
  const std::vector<std::string> names = case_names();
  EXPECT_GE(names.size(), 150u);
  // Every sglang/python/torch/strict/safetensors kind appears as some case's expected code or message.
  std::string all;
  for (const std::string& n : names) {
    const auto b = read_all(kCorpus / n / "case.json");
    all.append(b.begin(), b.end());
  }
  for (const ErrorInfo& e : kErrorTable) {
    const std::string_view c = e.code;
    const bool wanted = c.starts_with("sglang.") || c.starts_with("python.") || c.starts_with("torch.") ||
                        c.starts_with("strict.") || c.starts_with("safetensors.");
    if (!wanted) continue;
    // A template's fixed text up to its first hole identifies it (codes are stored for strict and
    // container cases only).
    const std::string_view t = e.tmpl;
    const std::string head(t.substr(0, std::min(t.find("{}"), t.size())));
    const bool found = all.find("\"" + std::string(c) + "\"") != std::string::npos ||
                       (!head.empty() && all.find(head) != std::string::npos && !c.starts_with("safetensors."));
    EXPECT_TRUE(found) << "no catalogue case for " << c;
  }
}

// Seeded random near-valid checkpoints, verdicts from the Python oracle at test time.
TEST(RandomDifferential, MatchesOracle) {
  const fs::path dir = fs::temp_directory_path() / ("w4a8-validate-random-" + std::to_string(::getpid()));
  for (int seed : {1, 2}) {
    const std::string cmd = std::string(W4A8_PYTHON) + " " + W4A8_SOURCE_ROOT +
                            "/tools/make_validator_catalogue.py --random 300 " + std::to_string(seed) + " " +
                            dir.string() + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << " (needs python3 with safetensors + numpy)";
    int cases = 0;
    for (const auto& e : fs::directory_iterator(dir)) {
      ++cases;
      EXPECT_EQ(replay(e.path()), "") << "seed " << seed << ", " << e.path().filename();
    }
    EXPECT_EQ(cases, 300);
  }
  fs::remove_all(dir);
}

TEST(CatalogueOracle, StoredExpectationsStillHold) {
  const std::string cmd = std::string(W4A8_PYTHON) + " " + W4A8_SOURCE_ROOT +
                          "/tools/make_validator_catalogue.py --check " + kCorpus.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << " (needs python3 with safetensors + numpy)";
}

}  // namespace
}  // namespace w4a8::validate
