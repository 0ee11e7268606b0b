// The table of fuzz targets (one entry per line of fuzz/targets.txt; ci/test-oss-fuzz-build.sh and
// the replay tests fail when the two disagree).
#include <string>

#include "fuzz/fuzz_target.hpp"
#include "gen/fuzz_bodies.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "plugin/elf_check.hpp"
#include "py/repr.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::fuzz {
namespace {

std::string bytes_repr(std::span<const std::uint8_t> b, std::size_t limit) {
  std::string s(reinterpret_cast<const char*>(b.data()), std::min(b.size(), limit));
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + (b.size() > limit ? "..." : "");
}

std::string describe_container(std::span<const std::uint8_t> b) {
  std::string out = "  container: " + std::to_string(b.size()) + " bytes\n";
  auto h = st::parse(b);
  if (!h) return out + "  parse: " + std::string(h.error().code()) + ": " + h.error().message + "\n";
  out += "  parse: ok, header " + std::to_string(h->header_len) + " bytes, " + std::to_string(h->tensors.size()) + " tensors, " +
         (h->has_metadata ? std::to_string(h->metadata.size()) + " metadata entries" : std::string("no __metadata__")) + "\n";
  for (std::size_t i = 0; i < h->tensors.size() && i < 8; ++i) {
    const auto& t = h->tensors[i];
    out += "    " + py::repr_str(t.name) + " " + std::string(st::dtype_name(t.dtype)) + py::repr_shape(t.shape) + " [" +
           std::to_string(t.begin) + ", " + std::to_string(t.end) + ")\n";
  }
  if (h->tensors.size() > 8) out += "    ...\n";
  return out;
}

std::string describe_marker(std::span<const std::uint8_t> b) {
  std::string out = "  marker: " + std::to_string(b.size()) + " bytes: " + bytes_repr(b, 160) + "\n";
  const json::ParseResult r = json::loads_bytes(b);
  if (!r.ok()) return out + "  json.loads: fails (" + r.error().detail + " at " + std::to_string(r.error().offset) + ")\n";
  std::string d = json::dump(*r);
  if (d.size() > 160) d = d.substr(0, 160) + "...";
  return out + "  json.loads: " + d + "\n";
}

std::string describe_scenario(std::span<const std::uint8_t> b) {
  gen::ByteChoiceSource src(b);
  return gen::describe_case(gen::decode_case(src));
}

std::string describe_elf(std::span<const std::uint8_t> b) {
  const std::string why = plugin::elf_defect(b);
  return "  file: " + std::to_string(b.size()) + " bytes: " + bytes_repr(b, 64) + "\n  preflight: " +
         (why.empty() ? std::string("accepted") : why) + "\n";
}

constexpr Target kTargets[] = {
    {"container", gen::check_container_bytes, describe_container, 0, false},
    {"marker_json", gen::check_marker_bytes, describe_marker, 0, false},
    // Choices beyond 4096 bytes add nothing but time.
    {"validator_struct", gen::check_scenario_bytes, describe_scenario, 4096, true},
    // Plugin headers and program header tables fit in a few KiB; longer inputs only add data bytes.
    {"plugin_elf", gen::check_elf_bytes, describe_elf, 65536, false},
};

}  // namespace

const Target* find_target(std::string_view name) {
  for (const Target& t : kTargets)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace w4a8::fuzz
