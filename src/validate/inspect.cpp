// inspect(): upstream's steps in order (collect, mxfp8 shortcut, missing markers, per-marker checks),
// then --strict on every asym_w4a8_int8 layer.
#include <algorithm>
#include <array>
#include <string_view>

#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate {
namespace {

using detail::State;

constexpr std::size_t kMissingMarkersShown = 5;  // upstream prints sorted(missing)[:5]

enum class Format { Unchecked, Float8, Int8Tensorwise, W4a8, W4a4, Nvfp4 };

Format format_of(const json::Value& marker) {
  const json::Value* f = marker.get("format");
  if (f == nullptr || !f->is_string()) return Format::Unchecked;  // upstream skips silently
  const std::string_view t = f->text;
  if (t == "float8_e4m3fn") return Format::Float8;
  if (t == "int8_tensorwise") return Format::Int8Tensorwise;
  if (t == "asym_w4a8_int8") return Format::W4a8;
  if (t == "convrot_w4a4") return Format::W4a4;
  if (t == "nvfp4") return Format::Nvfp4;
  return Format::Unchecked;
}

Status check_missing_markers(const State& s) {
  std::vector<std::string> missing;  // s.quantized is sorted, as sorted() orders code points
  for (const std::string& q : s.quantized) {
    if (s.layer_index.contains(q)) continue;
    missing.push_back(q);
    if (missing.size() == kMissingMarkersShown) break;
  }
  if (missing.empty()) return Ok{};
  return make_error(ErrorKind::SgMissingMarkers, {py::repr_str_list(missing)});
}

Status check_required(const State& s, const std::string& prefix, Format f) {
  std::vector<std::string> missing;
  auto need = [&](std::string_view suffix) {
    std::string name = prefix + std::string(suffix);
    if (s.meta(name) == nullptr) missing.push_back(std::move(name));
  };
  need(".weight");
  if (f == Format::W4a8) {
    need(".weight_s_rel");
    need(".weight_s_channel");
  } else {
    need(".weight_scale");
    if (f == Format::Nvfp4) need(".weight_scale_2");
  }
  if (missing.empty()) return Ok{};
  std::sort(missing.begin(), missing.end());
  return make_error(ErrorKind::SgMissingTensors, {py::repr_str(prefix), py::repr_str_list(missing)});
}

Status check_layer(State& s, std::size_t i) {
  const Format f = format_of(s.report.layers[i].marker);
  if (f == Format::Unchecked) return Ok{};
  W4A8_TRY(check_required(s, s.report.layers[i].prefix, f));
  switch (f) {
    case Format::Float8: detail::mark_float8(s, i); return Ok{};
    case Format::W4a8: return detail::check_w4a8(s, i);
    case Format::W4a4: return detail::check_w4a4(s, i);
    case Format::Nvfp4: return detail::check_nvfp4(s, i);
    case Format::Int8Tensorwise: return detail::check_int8(s, i);
    case Format::Unchecked: break;
  }
  return Ok{};
}

Result<Report> run(std::size_t nfiles, const detail::Loader& load, const Options& opt) {
  State s;
  W4A8_TRY(detail::collect(s, nfiles, load));
  W4A8_TRY(detail::apply_mxfp8(s));
  W4A8_TRY(check_missing_markers(s));
  for (std::size_t i = 0; i < s.report.layers.size(); ++i) W4A8_TRY(check_layer(s, i));
  if (opt.strict)
    for (std::size_t i = 0; i < s.report.layers.size(); ++i)
      if (format_of(s.report.layers[i].marker) == Format::W4a8) W4A8_TRY(detail::check_strict(s, i));
  return std::move(s.report);
}

}  // namespace

// checkpoint_meta.get(name): tensors are sorted by name.
const TensorMeta* Report::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorMeta& t, std::string_view n) { return t.name < n; });
  return it != tensors.end() && it->name == name ? &*it : nullptr;
}

Result<Report> inspect(std::span<const InputFile> files, const Options& opt) {
  std::vector<st::Header> headers;
  headers.reserve(files.size());  // Sources point into it: no reallocation
  auto load = [&](std::size_t i) -> Result<detail::Source> {
    Result<st::Header> h = st::parse(files[i].bytes);
    if (!h.ok()) return std::move(h).error();
    headers.push_back(std::move(h).value());
    return detail::Source{files[i].path, files[i].bytes, &headers.back()};
  };
  return run(files.size(), load, opt);
}

Result<Report> inspect_parsed(std::span<const ParsedFile> files, const Options& opt) {
  auto load = [&](std::size_t i) -> Result<detail::Source> {
    return detail::Source{files[i].path, files[i].bytes, files[i].header};
  };
  return run(files.size(), load, opt);
}

Result<Report> inspect_paths(std::span<const std::string> paths, const Options& opt) {
  std::vector<st::File> opened;
  opened.reserve(paths.size());  // Sources point into it: no reallocation
  auto load = [&](std::size_t i) -> Result<detail::Source> {
    Result<st::File> f = st::File::open(paths[i]);
    if (!f.ok()) return std::move(f).error();
    opened.push_back(std::move(f).value());
    const st::File& file = opened.back();
    return detail::Source{paths[i], file.bytes(), &file.header()};
  };
  return run(paths.size(), load, opt);
}

}  // namespace w4a8::validate
