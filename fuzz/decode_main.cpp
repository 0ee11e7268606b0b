// fuzz_decode: makes a fuzz input readable.
//   fuzz_decode TARGET FILE [OUTDIR]  what the input means (the replay's description); for
//                                     validator_struct also writes the scenario's checkpoint files
//                                     to OUTDIR (default $TMPDIR/fuzz_decode-NAME: never next to the
//                                     input, where a corpus directory would take the files as inputs)
//                                     and prints the oracle's expected
//                                     verdict and the validator's actual one; then the target's
//                                     property result.
//   fuzz_decode pin TARGET DIR...     prints the pins file for the regress-* inputs (fuzz/pins.hpp)
#include <cstdio>
#include <filesystem>
#include <string>

#include "fuzz/pins.hpp"
#include "gen/fuzz_bodies.hpp"
#include "gen/model.hpp"
#include "core/upstream.hpp"
#include "json/dump.hpp"
#include "py/version.hpp"
#include "safetensors/writer.hpp"

namespace {

using namespace w4a8;

std::string show_error(const Error& e) { return std::string(e.code()) + " " + std::string(e.type()) + ": " + e.message; }

std::string show_layers(const std::vector<std::pair<std::string, json::Value>>& ls) {
  std::string out;
  for (const auto& [p, v] : ls) out += "\n    " + p + " = " + json::dump(v);
  return out;
}

int decode_scenario(std::span<const std::uint8_t> bytes, const std::filesystem::path& outdir) {
  gen::ByteChoiceSource src(bytes);
  const gen::ScenarioCase c = gen::decode_case(src);
  std::printf("%s", gen::describe_case(c).c_str());
  auto files = gen::serialize(gen::lower(c.scenario));
  if (!files) {
    std::printf("writer refused the checkpoint: %s\n", show_error(files.error()).c_str());
  } else {
    std::filesystem::create_directories(outdir);
    std::string args;
    for (std::size_t i = 0; i < files->size(); ++i) {
      // Scenario paths may hold any character; write files under safe names, in order.
      const auto p = outdir / ("file" + std::to_string(i) + ".safetensors");
      if (!st::write_file(p.string(), (*files)[i]).ok()) std::printf("cannot write %s\n", p.c_str());
      args += " " + p.string();
    }
    const auto& o = c.scenario.options;  // the release and Python the scenario predicts
    std::printf("files: written to %s (check them with: w4a8check validate%s --sglang %s --python %s%s)\n",
                outdir.c_str(), o.strict ? " --strict" : "", std::string(upstream::profile(o.sglang).version).c_str(),
                std::string(py::version_name(o.python)).c_str(), args.c_str());
  }
  const gen::Expectation want = gen::expect(c.scenario);
  if (want.ok) std::printf("expected (oracle): accepted, %zu layers%s\n", want.layers.size(), show_layers(want.layers).c_str());
  else std::printf("expected (oracle): %s%s\n", show_error(want.error).c_str(), want.message_exact ? "" : " (kind only)");
  const auto got = gen::run_validator(c.scenario);
  if (got.ok()) {
    std::vector<std::pair<std::string, json::Value>> ls;
    for (const auto& l : got->layers) ls.emplace_back(l.prefix, l.marker);
    std::printf("actual (validator): accepted, %zu layers%s\n", ls.size(), show_layers(ls).c_str());
  } else {
    std::printf("actual (validator): %s\n", show_error(got.error()).c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace w4a8::fuzz;
  if (argc >= 4 && std::string(argv[1]) == "pin") {
    const Target* t = find_target(argv[2]);
    if (!t) return std::fprintf(stderr, "unknown target %s\n", argv[2]), 2;
    std::vector<std::filesystem::path> dirs(argv + 3, argv + argc);
    std::printf("%s", format_pins(*t, collect_inputs(dirs)).c_str());
    return 0;
  }
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: %s TARGET FILE [OUTDIR]\n       %s pin TARGET DIR...\n", argv[0], argv[0]);
    return 2;
  }
  const Target* t = find_target(argv[1]);
  if (!t) return std::fprintf(stderr, "unknown target %s\n", argv[1]), 2;
  const auto b = read_bytes(argv[2]);
  if (!b) return std::fprintf(stderr, "cannot read %s\n", argv[2]), 2;
  const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(b->data()), b->size());
  std::printf("input: %s (%zu bytes), target %s\n", argv[2], bytes.size(), argv[1]);
  if (t->name == "validator_struct") {
    std::error_code ec;
    const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
    const std::string out = argc == 4 ? std::string(argv[3])
                                      : ((ec ? std::filesystem::path("/tmp") : tmp) /
                                         ("fuzz_decode-" + std::filesystem::path(argv[2]).filename().string()))
                                            .string();
    decode_scenario(bytes, out);
  } else {
    std::printf("%s", t->describe(bytes).c_str());
  }
  if (t->max_input != 0 && bytes.size() > t->max_input) {
    std::printf("property: not run (longer than the target's %zu-byte limit)\n", t->max_input);
    return 0;
  }
  const std::string r = t->check(bytes);
  std::printf("property: %s\n", r.empty() ? "holds" : ("FAILS\n" + r).c_str());
  return r.empty() ? 0 : 1;
}
