// describe(): a scenario as text, for failure reports (names through repr so control characters
// stay visible).
#include "gen/model.hpp"
#include "gen/scenario.hpp"
#include "py/repr.hpp"
#include "py/version.hpp"

namespace w4a8::gen {

namespace {
// repr of text cut at `keep` bytes; a cut text gets its full size, so pins (fuzz/pins.hpp) still
// see a change past the cut (a marker that lost its 1,000-level "nest" chain).
std::string shortened(const std::string& text, std::size_t keep) {
  if (text.size() <= keep) return py::repr_str(text);
  return py::repr_str(text.substr(0, keep) + "...") + " (" + std::to_string(text.size()) + " bytes)";
}
}  // namespace

std::string describe(const Scenario& s) {
  std::string out = "  options: strict=" + std::string(s.options.strict ? "true" : "false") + " sglang=" +
                    std::string(upstream::profile(s.options.sglang).version);
  // Named only when not the default, so pinned descriptions (fuzz/pins.hpp) of earlier inputs hold.
  if (s.options.python != py::kDefaultVersion) out += " python=" + std::string(py::version_name(s.options.python));
  out += "\n  defects:";
  for (Defect d : s.defects) out += " " + std::string(defect_name(d));
  if (s.defects.empty()) out += " none";
  out += "\n";
  for (std::size_t i = 0; i < s.files.size(); ++i) {
    const FileDesc& f = s.files[i];
    out += "  file " + std::to_string(i) + " " + py::repr_str(f.path);
    if (f.container.defect != Defect::kCount)
      out += " [container " + std::string(defect_name(f.container.defect)) + " param=" + std::to_string(f.container.param) + "]";
    out += "\n";
    for (const auto& [k, v] : f.metadata) out += "    meta " + py::repr_str(k) + " = " + py::repr_str(v) + "\n";
    if (auto q = quant_metadata_text(s, i)) out += "    meta '_quantization_metadata' = " + shortened(*q, 300) + "\n";
    for (const auto& t : s.tensors) {
      if (t.file != i) continue;
      out += "    " + py::repr_str(t.name) + " " + std::string(st::dtype_name(t.dtype)) + py::repr_shape(t.shape);
      if (!t.bytes.empty()) out += " (explicit data)";
      out += "\n";
    }
    for (const auto& m : s.markers) {
      if (m.file != i) continue;
      out += "    marker " + py::repr_str(m.prefix) + (m.place == Place::Tensor ? " tensor " + std::string(st::dtype_name(m.dtype)) + " " + std::string(encoding_name(m.encoding)) : std::string(" metadata")) +
             (m.raw.empty() ? "" : " raw") + (m.spelling.empty() ? "" : " respelled") + ": " + shortened(marker_text(m), 200) + "\n";
    }
  }
  return out;
}

}  // namespace w4a8::gen
