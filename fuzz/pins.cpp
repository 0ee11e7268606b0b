#include "fuzz/pins.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace w4a8::fuzz {

bool is_pinned_name(const std::string& filename) { return filename.starts_with("regress-"); }

std::optional<std::string> read_bytes(const std::filesystem::path& p) {
  // A directory opens as a stream and then throws on the first read: only regular files are inputs.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return std::nullopt;
  std::ifstream in(p, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::filesystem::path> collect_inputs(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::filesystem::path> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (std::filesystem::is_directory(p, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p))
        if (e.is_regular_file() && e.path().extension() != ".pins") files.push_back(e.path());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

std::string describe_file(const Target& t, const std::filesystem::path& p) {
  const auto b = read_bytes(p);
  if (!b) return "(unreadable)\n";
  return t.describe({reinterpret_cast<const std::uint8_t*>(b->data()), b->size()});
}

}  // namespace

std::optional<std::map<std::string, std::string>> read_pins(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  std::map<std::string, std::string> pins;
  std::string line, name;
  while (std::getline(in, line)) {
    if (line.starts_with("=== ")) {
      name = line.substr(4);
      pins[name];
    } else if (!name.empty()) {
      pins[name] += line + "\n";
    }
  }
  return pins;
}

std::string format_pins(const Target& t, const std::vector<std::filesystem::path>& inputs) {
  std::string out = "# Pinned decodings of corpus/" + std::string(t.name) + "/regress-* (see fuzz/pins.hpp). Re-pin after a\n"
                    "# deliberate generator change, and review the diff:\n"
                    "#   build/fuzz/fuzz_decode pin " + std::string(t.name) + " corpus/" + std::string(t.name) + " > corpus/" +
                    std::string(t.name) + ".pins\n";
  for (const auto& p : inputs)
    if (is_pinned_name(p.filename().string())) out += "=== " + p.filename().string() + "\n" + describe_file(t, p);
  return out;
}

std::string check_pins(const Target& t, const std::vector<std::filesystem::path>& inputs,
                       const std::map<std::string, std::string>& pins, const std::filesystem::path& pins_file) {
  std::string report;
  std::set<std::string> seen;
  bool missing = false, changed = false;
  for (const auto& p : inputs) {
    const std::string name = p.filename().string();
    if (!is_pinned_name(name)) continue;
    seen.insert(name);
    const std::string now = describe_file(t, p);
    auto it = pins.find(name);
    if (it == pins.end()) {
      missing = true;
      report.append("PIN MISSING: ").append(name).append(" has no pin in ").append(pins_file.string());
      report.append("; it decodes to:\n").append(now);
    } else if (it->second != now) {
      changed = true;
      report.append("PIN MISMATCH: ").append(name).append(" no longer decodes to the scenario it was kept for.\n  pinned:\n");
      report.append(it->second).append("  now:\n").append(now);
    }
  }
  for (const auto& [name, desc] : pins)
    if (!seen.count(name)) report.append("PIN WITHOUT INPUT: ").append(name).append(" is pinned but not in the corpus\n");
  if (report.empty()) return report;
  // A new input only needs its pin; a changed decoding needs a decision (the message said the
  // generator had changed even when an input was merely new).
  if (changed)
    report += "\nThe generator now reads these choice bytes differently. Either restore the decoding, or re-pin\n"
              "consciously (review that each input still tests what its name says), with:\n";
  else
    report += missing ? "\nA new regression input needs its pin; record it (the diff should add only that entry) with:\n"
                      : "\nRe-pin (the pins file lists an input the corpus no longer has) with:\n";
  report.append("  build/fuzz/fuzz_decode pin ").append(t.name).append(" corpus/").append(t.name).append(" > ");
  report.append(pins_file.string()).append("\n");
  return report;
}

}  // namespace w4a8::fuzz
