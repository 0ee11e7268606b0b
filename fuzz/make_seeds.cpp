// Writes the committed seed corpora (deterministic): corpus/validator_struct/seed-<defect> (recorded
// generator choices, one per defect class and config variant, each followed by a metamorphic-check
// choice, cycling through them), corpus/container/seed-* (one small file per defect class, at most
// kMaxSeed bytes), corpus/marker_json/seed-* (small tensor markers' bytes) and corpus/plugin_elf/seed-*
// (a minimal shared-library header and one variant per preflight rule).
// Usage: fuzz_make_seeds <corpus dir>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "gen/choice_source.hpp"
#include "gen/elf_oracle.hpp"
#include "gen/fuzz_bodies.hpp"
#include "gen/model.hpp"

namespace {

constexpr std::size_t kMaxSeed = 2048;  // small seeds: fast executions, room for the mutators

void write(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

std::string case_name(const w4a8::gen::Scenario& s) {
  return s.defects.empty() ? std::string(s.options.strict ? "valid-strict" : "valid") : std::string(w4a8::gen::defect_name(s.defects[0]));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace w4a8::gen;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  std::set<std::string> done;
  std::uint64_t checks = 0;
  for (std::uint64_t seed = 1; seed < 20000 && done.size() < kDefectCount + 2; ++seed) {
    SeededChoiceSource inner(seed);
    RecordingChoiceSource rec(inner);
    const auto v = static_cast<ConfigVariant>(seed % 2 ? 2 : 1);  // OneDefect, Valid
    rec.note(static_cast<std::uint64_t>(ConfigVariant::kCount), static_cast<std::uint64_t>(v));
    const Scenario s = generate(rec, case_config(v));
    if (!done.insert(case_name(s)).second) continue;
    rec.note(kMetaCheckChoices, checks++ % static_cast<std::uint64_t>(MetaCheck::kCount));
    write(root / "validator_struct" / ("seed-" + case_name(s)), rec.bytes());
  }
  // Containers and markers from small scenarios: one file, few layers.
  GenConfig small = config_variant(ConfigVariant::OneDefect);
  small.max_layers = 2;
  small.max_files = 1;
  small.recursion_boundary = false;  // ~1,000 nested containers would not fit a small seed
  std::set<std::string> containers;
  int markers = 0;
  for (std::uint64_t seed = 1; seed < 40000 && containers.size() < kDefectCount + 2; ++seed) {
    SeededChoiceSource src(seed);
    GenConfig cfg = small;
    if (seed % 3 == 0) cfg.min_defects = cfg.max_defects = 0;
    const Scenario s = generate(src, cfg);
    const std::string name = case_name(s);
    auto bytes = serialize(lower(s));
    if (!bytes || bytes->empty() || (*bytes)[0].size() > kMaxSeed || containers.count(name)) continue;
    containers.insert(name);
    write(root / "container" / ("seed-" + name), (*bytes)[0]);
    for (const auto& m : s.markers)
      if (m.place == Place::Tensor && markers < 80 && marker_bytes(m).size() <= kMaxSeed / 2)
        write(root / "marker_json" / ("seed-" + name + "-" + std::to_string(markers++)), marker_bytes(m));
  }
  const auto elf = elf_seeds();
  for (const auto& [name, bytes] : elf) write(root / "plugin_elf" / ("seed-" + name), bytes);
  std::printf("%zu validator_struct, %zu container, %d marker_json, %zu plugin_elf seeds\n", done.size(),
              containers.size(), markers, elf.size());
  return 0;
}
