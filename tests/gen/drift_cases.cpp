// Checkpoints plus OUR verdicts, for tools/upstream/sglang_drift.py to hold against sglang's real
// function from each release's wheel.
//   gen_drift_cases generate N SEED OUT_DIR   N seeded generated scenarios (any defects, no --strict)
//                                             written under OUT_DIR/case-<i>/
//   gen_drift_cases judge CATALOGUE_DIR       the catalogue's cases (corpus/validator/*/case.json)
//   gen_drift_cases deep-merge OUT_DIR        two markers of one prefix nested to json.loads' limit,
//                                             leaves shared or not: the per-key merge's `!=` and its
//                                             RecursionError (their lines hold no layers: compared
//                                             by verdict, type and message; "compare": "verdict")
//   gen_drift_cases pythons                   the interpreters the validator models, one "X.Y" a line
//   --python X.Y first: our verdicts predicted under that interpreter (default 3.11), as
//   sglang_drift.py asks for the one it runs under; generated group_size strings past int()'s digit
//   limit then get the tails whose error depends on it (GenConfig::digit_tails).
// Either way one JSON line a case goes to OUT_DIR/cases.jsonl (generate) or stdout (judge):
//   {"dir": D, "files": [...], "verdicts": {"<version>": {"ok", "type", "message", "layers"}, ...}}
// with the validator's verdict under every profile of src/core/sglang_versions.def (layers: the
// whole markers, derived keys included, in order; ASCII JSON in Python's dialect).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gen/choice_source.hpp"
#include "gen/model.hpp"
#include "gen/properties.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "safetensors/writer.hpp"
#include "validate/inspect.hpp"

namespace {

using namespace w4a8;
namespace fs = std::filesystem;

py::Version python = py::kDefaultVersion;  // --python: the interpreter sglang is run under

std::string verdict_json(const Result<validate::Report>& r) {
  if (!r.ok())
    return "{\"ok\": false, \"type\": " + json::dump_string(r.error().type()) +
           ", \"message\": " + json::dump_os_string(r.error().message) + "}";  // (messages name files)
  std::string out = "{\"ok\": true, \"type\": null, \"message\": null, \"layers\": {";
  for (std::size_t i = 0; i < r->layers.size(); ++i)
    out += (i ? ", " : "") + json::dump_string(r->layers[i].prefix) + ": " + json::dump(r->layers[i].marker);
  return out + "}}";
}

// One line: the case, then our verdict under every profile (without the layers: verdict_only).
std::string line(const std::string& dir, const std::vector<std::string>& names,
                 const std::vector<std::vector<std::uint8_t>>& bytes, bool verdict_only = false) {
  std::vector<validate::InputFile> in;
  for (std::size_t i = 0; i < names.size(); ++i) in.push_back({names[i], bytes[i]});
  std::string out = "{\"dir\": " + json::dump_string(dir) + ", \"files\": [";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + json::dump_string(names[i]);
  out += "], \"verdicts\": {";
  for (std::size_t v = 0; v < upstream::kSglangCount; ++v) {
    validate::Options opt;
    opt.sglang = upstream::kSglangProfiles[v].id;
    opt.python = python;
    const auto r = validate::inspect(in, opt);
    std::string verdict = verdict_json(r);
    if (verdict_only && r.ok()) verdict = R"({"ok": true, "type": null, "message": null})";
    out += (v ? ", " : "") + json::dump_string(upstream::kSglangProfiles[v].version) + ": " + verdict;
  }
  return out + (verdict_only ? R"(}, "compare": "verdict"})" : "}}") + "\n";
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& b) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::vector<std::uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

int write_generated(std::uint64_t n, std::uint64_t seed, const fs::path& out) {
  gen::GenConfig cfg;
  cfg.allow_strict = false;  // sglang has no --strict
  cfg.python = python;
  cfg.digit_tails = true;
  gen::SeededChoiceSource src(seed);
  fs::create_directories(out);
  std::ofstream jobs(out / "cases.jsonl", std::ios::binary);
  for (std::uint64_t i = 0; i < n; ++i) {
    const gen::Scenario s = gen::generate(src, cfg);
    auto bytes = gen::serialize(gen::lower(s));
    if (!bytes.ok()) {
      std::fprintf(stderr, "case %llu: %s\n", static_cast<unsigned long long>(i), bytes.error().message.c_str());
      return 1;
    }
    const std::string dir = "case-" + std::to_string(i);
    std::vector<std::string> names;
    for (std::size_t f = 0; f < s.files.size(); ++f) {
      names.push_back(s.files[f].path);
      write_file(out / dir / s.files[f].path, (*bytes)[f]);
    }
    jobs << line(dir, names, *bytes);
  }
  return 0;
}

// One file holding marker tensor q.comfy_quant = `text` (U8); or, with in_metadata, no tensor and
// `text` as the _quantization_metadata document.
std::vector<std::uint8_t> marker_file(const std::string& text, bool in_metadata = false) {
  st::WriteOptions opt;
  std::vector<st::TensorSpec> tensors;
  if (in_metadata)
    opt.metadata = std::vector<std::pair<std::string, std::string>>{{"_quantization_metadata", text}};
  else
    tensors.push_back({"q.comfy_quant", st::Dtype::U8, {text.size()}, {text.begin(), text.end()}});
  auto bytes = st::serialize(tensors, opt);
  if (!bytes.ok()) {  // (cannot happen: one tensor of the right size)
    std::fprintf(stderr, "gen_drift_cases: %s\n", bytes.error().message.c_str());
    std::exit(1);
  }
  return std::move(bytes).value();
}

// Two files, each a marker {"format": "z", "v": V} with V nested n deep around a leaf (lists, or
// dicts {"a": ...}), for n up to json.loads' limit for this interpreter: sglang 0.5.20+ compare the
// two V with != (RecursionError past the interpreter's depth), 0.5.19 the whole markers.
int write_deep_merge(const fs::path& out) {
  // Up to the limit where it is the interpreter's own; a few levels below a modelled one (3.10/3.11:
  // the real limit moves with sglang's caller's stack).
  const py::InterpreterFacts& facts = py::interpreter_facts(python);
  const int limit = facts.json_max_depth - (facts.json_depth_exact ? 0 : 3);
  struct Leaves {
    const char* name;
    const char *a, *b;
    bool dicts;
  };
  // Which leaves are one object in both parses (no comparison) and which are not (one level more).
  const Leaves leaves[] = {{"shared", "1", "1", false},
                           {"differ", "1", "2", false},
                           {"float", "1.5", "1.5", false},
                           {"string", "\"ab\"", "\"ab\"", false},
                           {"dicts", "1", "1", true},
                           {"inf-literal", "1e999", "1e999", false},
                           {"inf-token-literal", "Infinity", "1e999", false},
                           {"nan-token", "NaN", "NaN", false},
                           {"minus-inf-token", "-Infinity", "-Infinity", false},
                           {"empty-string", "\"\"", "\"\"", false},
                           {"one-char", "\"a\"", "\"a\"", false},
                           {"latin1-char", "\"\u00e9\"", "\"\\u00e9\"", false},
                           {"u0100-char", "\"\\u0100\"", "\"\\u0100\"", false},
                           {"int-256", "256", "256", false},
                           {"int-257", "257", "257", false},
                           {"int-minus-5", "-5", "-5", false},
                           {"int-minus-6", "-6", "-6", false},
                           {"null", "null", "null", false},
                           {"true", "true", "true", false}};
  for (int n = limit - 3; n <= limit - 1; ++n)
    for (const Leaves& l : leaves) {
      auto nest = [&](const char* leaf) {
        std::string v;
        for (int i = 0; i < n; ++i) v += l.dicts ? R"({"a": )" : "[";
        v += leaf;
        for (int i = 0; i < n; ++i) v += l.dicts ? "}" : "]";
        return R"({"format": "z", "v": )" + v + "}";
      };
      const std::string dir = "deep-" + std::string(l.name) + "-" + std::to_string(n);
      const std::vector<std::string> names = {"a.safetensors", "b.safetensors"};
      const std::vector<std::vector<std::uint8_t>> bytes = {marker_file(nest(l.a)), marker_file(nest(l.b))};
      for (std::size_t f = 0; f < names.size(); ++f) write_file(out / dir / names[f], bytes[f]);
      std::fputs(line(dir, names, bytes, true).c_str(), stdout);
    }
  // A NaN at the deepest level json.loads allows, and one level above it: in a marker, and in the
  // _quantization_metadata document (its root and "layers" are two levels of their own).
  for (int n = limit - 2; n <= limit - 1; ++n)
    for (const bool in_metadata : {false, true}) {
      const int levels = in_metadata ? n - 2 : n;
      std::string v = std::string(static_cast<std::size_t>(levels), '[') + "NaN" + std::string(static_cast<std::size_t>(levels), ']');
      std::string marker = R"({"format": "z", "v": )" + v + "}";
      if (in_metadata) marker.insert(0, R"({"layers": {"q": )").append("}}");
      const std::string dir = std::string(in_metadata ? "deep-nan-metadata-" : "deep-nan-marker-") + std::to_string(n);
      const std::vector<std::string> names = {"a.safetensors"};
      const std::vector<std::vector<std::uint8_t>> bytes = {marker_file(marker, in_metadata)};
      write_file(out / dir / names[0], bytes[0]);
      std::fputs(line(dir, names, bytes, true).c_str(), stdout);
    }
  return 0;
}

int judge_catalogue(const fs::path& catalogue) {
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(catalogue))
    if (fs::exists(e.path() / "case.json")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  for (const fs::path& c : cases) {
    const auto doc_bytes = read_file(c / "case.json");
    const json::ParseResult doc = json::loads_bytes(doc_bytes);
    if (!doc.ok()) {
      std::fprintf(stderr, "%s: bad case.json\n", c.c_str());
      return 1;
    }
    if (const json::Value* strict = doc->get("strict"); strict && strict->boolean) continue;  // ours only
    std::vector<std::string> names;
    std::vector<std::vector<std::uint8_t>> bytes;
    for (const json::Value& f : doc->get("files")->items) {
      names.push_back(f.text);
      bytes.push_back(read_file(c / f.text));
    }
    std::fputs(line(c.filename().string(), names, bytes).c_str(), stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() >= 2 && a[0] == "--python") {
    const auto v = py::version_from_name(a[1]);
    if (!v) {
      std::fprintf(stderr, "gen_drift_cases: Python %s is not one the validator models (src/py/version.hpp)\n", a[1].c_str());
      return 2;
    }
    python = *v;
    a.erase(a.begin(), a.begin() + 2);
  }
  if (a.size() == 4 && a[0] == "generate") return write_generated(std::strtoull(a[1].c_str(), nullptr, 10),
                                                                 std::strtoull(a[2].c_str(), nullptr, 10), a[3]);
  if (a.size() == 2 && a[0] == "judge") return judge_catalogue(a[1]);
  if (a.size() == 2 && a[0] == "deep-merge") return write_deep_merge(a[1]);
  if (a.size() == 1 && a[0] == "pythons") {
    for (std::size_t v = 0; v < static_cast<std::size_t>(py::Version::kCount); ++v)
      std::printf("%s\n", std::string(py::version_name(static_cast<py::Version>(v))).c_str());
    return 0;
  }
  std::fprintf(stderr,
               "usage: gen_drift_cases [--python X.Y] generate N SEED OUT_DIR | judge CATALOGUE_DIR | deep-merge OUT_DIR | "
               "pythons\n");
  return 2;
}
