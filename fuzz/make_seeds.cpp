// Writes the committed seed corpora (deterministic): corpus/validator_struct/seed-<defect> (recorded
// generator choices, one per defect class and config variant), corpus/container/seed-* (the first
// file of such scenarios) and corpus/marker_json/seed-* (their tensor markers' bytes).
// Usage: fuzz_make_seeds <corpus dir>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gen/choice_source.hpp"
#include "gen/model.hpp"
#include "gen/properties.hpp"

namespace {

void write(const std::filesystem::path& p, const std::vector<std::uint8_t>& b) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace w4a8::gen;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  std::map<std::string, int> done;
  int containers = 0, markers = 0;
  for (std::uint64_t seed = 1; seed < 20000 && done.size() < kDefectCount + 2; ++seed) {
    SeededChoiceSource inner(seed);
    RecordingChoiceSource rec(inner);
    const auto v = static_cast<ConfigVariant>(seed % 2 ? 2 : 1);  // OneDefect, Valid
    rec.note(static_cast<std::uint64_t>(ConfigVariant::kCount), static_cast<std::uint64_t>(v));
    const Scenario s = generate(rec, config_variant(v));
    const std::string name = s.defects.empty() ? std::string(s.options.strict ? "valid-strict" : "valid")
                                               : std::string(defect_name(s.defects[0]));
    if (done.count(name)) continue;
    done[name] = 1;
    write(root / "validator_struct" / ("seed-" + name), rec.bytes());
    auto bytes = serialize(lower(s));
    if (bytes && containers < 40 && !bytes->empty() && (*bytes)[0].size() <= 16384) {
      write(root / "container" / ("seed-" + name), (*bytes)[0]);
      ++containers;
    }
    for (const auto& m : s.markers)
      if (m.place == Place::Tensor && markers < 60 && marker_bytes(m).size() <= 16384) {
        write(root / "marker_json" / ("seed-" + name + "-" + std::to_string(markers)), marker_bytes(m));
        ++markers;
      }
  }
  std::printf("%zu validator_struct, %d container, %d marker_json seeds\n", done.size(), containers, markers);
  return 0;
}
