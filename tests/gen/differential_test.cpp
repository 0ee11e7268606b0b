// End-to-end differential (issue #3 item 6): thousands of seeded generated checkpoints written to a
// temp dir, judged by the C++ validator and by tools/oracle/sglang_spec.py (Python's real json.loads,
// repr, int() and the safetensors package; each case under the sglang release the generator chose)
// in one batch process; verdicts must agree byte for byte
// (for invalid-UTF-8 / invalid-JSON headers the Rust library's detail text after the table's prefix is
// counted, not failed). Fails, never skips, when python3 or its packages are missing.
#include <gtest/gtest.h>

#include <algorithm>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gen/choice_source.hpp"
#include "gen/model.hpp"
#include "gen/properties.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "support/python.hpp"

namespace w4a8::gen {
namespace {

namespace fs = std::filesystem;

std::uint64_t env_u64(const char* name, std::uint64_t def) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : def;
}

struct Case {
  Scenario scenario;
  Result<validate::Report> verdict = Error{};
};

std::string verdict_text(const Result<validate::Report>& r) {
  if (!r.ok()) return std::string(r.error().code()) + " " + std::string(r.error().type()) + ": " + r.error().message;
  std::string out = "accepted:";
  for (const auto& l : r->layers) out += " " + l.prefix + "=" + json::dump(l.marker);
  return out;
}

std::size_t detail_differences = 0;  // serde/UTF-8 detail texts that differ (reported, not failed)

// "" when Python's JSON line agrees with the C++ verdict.
std::string disagreement(const json::Value& py, const Result<validate::Report>& cpp) {
  const json::Value* ok = py.get("ok");
  if (!ok || ok->kind != json::Kind::Bool) return "malformed oracle line";
  if (ok->boolean != cpp.ok()) return "verdicts differ";
  if (!cpp.ok()) {
    const json::Value* type = py.get("type");
    const json::Value* msg = py.get("message");
    const json::Value* code = py.get("code");
    if (!type || type->text != cpp.error().type()) return "exception types differ";
    if (!msg || !msg->is_string()) return "oracle line without a message";
    (void)code;
    const ErrorKind k = cpp.error().kind;
    if (k == ErrorKind::StInvalidHeader || k == ErrorKind::StInvalidHeaderDeserialization) {
      // Same error; the Rust library's detail after the template's prefix is compared separately.
      const std::string_view t = error_info(k).tmpl;
      const std::string prefix(t.substr(0, t.find("{}")));
      if (!msg->text.starts_with(prefix)) return "container errors differ";
      if (msg->text != cpp.error().message) ++detail_differences;
      return "";
    }
    return msg->text == cpp.error().message ? "" : "messages differ";
  }
  const json::Value* layers = py.get("layers");
  if (!layers || !layers->is_object() || layers->members.size() != cpp->layers.size()) return "layer counts differ";
  for (std::size_t i = 0; i < cpp->layers.size(); ++i)
    if (layers->members[i].first != cpp->layers[i].prefix || !same_json(layers->members[i].second, cpp->layers[i].marker))
      return "layer " + cpp->layers[i].prefix + " differs";
  return "";
}

TEST(GenDifferential, ValidatorAgreesWithPythonSpec) {
  const std::uint64_t n = env_u64("W4A8_DIFF_CASES", 2500);
  const std::uint64_t seed = env_u64("W4A8_DIFF_SEED", 20261129);
  char tmpl[] = "/tmp/w4a8-gen-diff-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path root = tmpl;
  GenConfig cfg;
  cfg.allow_strict = false;  // the Python spec has no --strict (strict is covered by the oracle)
  cfg.differential_safe = true;
  cfg.digit_tails = true;  // junk after > 4300 digits: judged here by the real interpreter too
  SeededChoiceSource src(seed);
  std::vector<Case> cases;
  std::ofstream jobs(root / "jobs.jsonl");
  for (std::uint64_t i = 0; i < n; ++i) {
    Case c;
    c.scenario = generate(src, cfg);
    auto bytes = serialize(lower(c.scenario));
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    const fs::path dir = root / ("case-" + std::to_string(i));
    std::string files;
    for (std::size_t f = 0; f < c.scenario.files.size(); ++f) {
      const fs::path p = dir / c.scenario.files[f].path;
      fs::create_directories(p.parent_path());
      std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>((*bytes)[f].data()), static_cast<std::streamsize>((*bytes)[f].size()));
      files += (f ? ", " : "") + json_literal(c.scenario.files[f].path);
    }
    jobs << "{\"dir\": " << json_literal("case-" + std::to_string(i)) << ", \"files\": [" << files
         << "], \"sglang\": " << json_literal(std::string(upstream::profile(c.scenario.options.sglang).version)) << "}\n";
    c.verdict = run_validator(c.scenario);
    // The same files through inspect_paths (mmap): same verdict kind and layers (paths differ).
    std::vector<std::string> paths;
    for (const auto& f : c.scenario.files) paths.push_back((dir / f.path).string());
    const auto mapped = validate::inspect_paths(paths, c.scenario.options);
    ASSERT_EQ(mapped.ok(), c.verdict.ok()) << verdict_text(mapped) << " vs " << verdict_text(c.verdict);
    if (!mapped.ok()) ASSERT_EQ(mapped.error().kind, c.verdict.error().kind) << verdict_text(mapped);
    else ASSERT_EQ(mapped->layers.size(), c.verdict->layers.size());
    cases.push_back(std::move(c));
  }
  jobs.close();
  const auto run = w4a8::testing::PythonCall::script("tools/oracle/sglang_spec.py")
                       .args({"--batch"})
                       .stdin_from("jobs.jsonl")
                       .stdout_to("verdicts.jsonl")
                       .in_dir(root.string())
                       .run();
  ASSERT_TRUE(run.ok()) << "the Python oracle failed (python3, safetensors and numpy are required): " << run.command;
  std::ifstream in(root / "verdicts.jsonl");
  std::string line;
  std::size_t i = 0, bad = 0, accepted = 0;
  while (std::getline(in, line) && i < cases.size()) {
    const json::ParseResult py = json::loads_str(line);
    ASSERT_TRUE(py.ok()) << "unreadable oracle output: " << line;
    const std::string why = disagreement(*py, cases[i].verdict);
    accepted += cases[i].verdict.ok();
    if (!why.empty() && ++bad <= 5)
      ADD_FAILURE() << "case " << i << " (seed " << seed << "): " << why << "\n  python: " << line
                    << "\n  c++:    " << verdict_text(cases[i].verdict) << "\n" << describe(cases[i].scenario);
    ++i;
  }
  EXPECT_EQ(i, cases.size()) << "the oracle answered fewer cases than asked";
  EXPECT_EQ(bad, 0u) << bad << " of " << cases.size() << " cases disagree";
  RecordProperty("cases", static_cast<int>(cases.size()));
  RecordProperty("accepted", static_cast<int>(accepted));
  const auto tailed = std::count_if(cases.begin(), cases.end(), [](const Case& c) {
    return std::any_of(c.scenario.markers.begin(), c.scenario.markers.end(),
                       [](const MarkerDesc& m) { return m.group_size.tail != DigitTail::None; });
  });
  RecordProperty("digit_tails", static_cast<int>(tailed));
  RecordProperty("container_detail_differences", static_cast<int>(detail_differences));
  std::printf("%zu cases, %zu accepted, %zu container-error detail texts differ from Python's\n", cases.size(), accepted,
              detail_differences);
  if (bad == 0) fs::remove_all(root);
}

}  // namespace
}  // namespace w4a8::gen
