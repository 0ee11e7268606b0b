// A main() for builds without a fuzzing engine (g++, plain clang): runs every file named on the
// command line, or found (recursively, sorted) under a named directory, through
// LLVMFuzzerTestOneInput once, printing each input's description first (so a crash shows what
// the input meant). With -pins=FILE, also checks every regress-* input against its pinned decoding
// (fuzz/pins.hpp) and fails loudly on a difference.
// Exit status 0 when all ran and the pins hold; a failing property aborts inside the target.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fuzz/pins.hpp"

const w4a8::fuzz::Target& w4a8_fuzz_this_target();
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

int main(int argc, char** argv) {
  using namespace w4a8::fuzz;
  const Target& t = w4a8_fuzz_this_target();
  std::vector<std::filesystem::path> paths;
  std::filesystem::path pins_file;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.starts_with("-pins=")) {
      pins_file = a.substr(6);
    } else if (a == "-pins" || a == "-pin" || a.starts_with("-pin=")) {
      // A near miss would replay the pins file as an input and check no pin, with status 0.
      std::fprintf(stderr, "%s: write -pins=FILE (got %s)\n", argv[0], a.c_str());
      return 2;
    } else if (a == "-quiet") {
      quiet = true;
    } else if (a.starts_with("-")) {
      std::fprintf(stderr, "%s: note: ignoring %s (libFuzzer-style flags other than -pins= and -quiet)\n", argv[0], a.c_str());
    } else {
      paths.emplace_back(a);
    }
  }
  const auto files = collect_inputs(paths);
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s [-pins=FILE] [-quiet] FILE_OR_DIR...\n(no inputs found)\n", argv[0]);
    return 2;
  }
  std::size_t ran = 0, too_long = 0;
  for (const auto& f : files) {
    const auto b = read_bytes(f);
    if (!b) {
      std::fprintf(stderr, "cannot read %s\n", f.c_str());
      continue;
    }
    if (t.max_input != 0 && b->size() > t.max_input) {  // the target would return at once: say so
      std::printf("== %s\nskipped: %zu bytes, longer than the target's %zu-byte limit\n", f.c_str(), b->size(), t.max_input);
      ++too_long;
      continue;
    }
    const std::span<const std::uint8_t> bytes(reinterpret_cast<const std::uint8_t*>(b->data()), b->size());
    if (!quiet) std::printf("== %s\n%s", f.c_str(), t.describe(bytes).c_str());
    std::fflush(stdout);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++ran;
  }
  std::printf("replayed %zu/%zu inputs of %s", ran, files.size(), std::string(t.name).c_str());
  if (too_long > 0) std::printf(" (%zu skipped: longer than %zu bytes)", too_long, t.max_input);
  std::printf("\n");
  int status = ran + too_long == files.size() ? 0 : 1;
  if (!pins_file.empty()) {
    const auto pins = read_pins(pins_file);
    const std::string report = pins ? check_pins(t, files, *pins, pins_file) : "cannot read " + pins_file.string() + "\n";
    if (!report.empty()) {
      std::fprintf(stderr, "\n%s", report.c_str());
      status = 1;
    } else {
      std::printf("pins hold: %zu pinned inputs decode as recorded\n", pins->size());
    }
  }
  return status;
}
