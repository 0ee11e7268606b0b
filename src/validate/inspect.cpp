// inspect(): upstream's steps in order (collect, mxfp8 shortcut, missing markers, per-marker checks),
// with --strict on each asym_w4a8_int8 layer once upstream's checks of it pass (its first error is
// the verdict only when upstream accepts every layer).
#include "validate/inspect.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

#include "py/repr.hpp"
#include "validate/pipeline.hpp"

namespace w4a8::validate {
namespace detail {
namespace {

constexpr std::size_t kMissingMarkersShown = 5;  // upstream prints sorted(missing)[:5]

Status check_missing_markers(const State& s) {
  std::vector<std::string> missing;  // s.quantized is sorted, as sorted() orders code points
  for (std::string_view q : s.quantized) {
    if (s.has_layer(q)) continue;
    missing.emplace_back(q);
    if (missing.size() == kMissingMarkersShown) break;
  }
  if (missing.empty()) return Ok{};
  return make_error(ErrorKind::SgMissingMarkers, {py::repr_str_list(missing, s.opt.python)});
}

Status check_required(const State& s, std::size_t layer, const ComfyFormat& f) {
  const st::Name& prefix = s.report.layers[layer].prefix;
  std::vector<std::string> missing;
  for (std::string_view suffix : f.required)
    if (s.meta(layer, suffix) == nullptr) missing.push_back(std::string(prefix).append(suffix));
  if (missing.empty()) return Ok{};
  std::sort(missing.begin(), missing.end());
  return make_error(ErrorKind::SgMissingTensors, {py::repr_str(prefix, s.opt.python), py::repr_str_list(missing, s.opt.python)});
}

// The data pages of every large mapped source (the header pages went at open).
void release_data_pages(const State& s) {
  for (const Source& src : s.sources) {
    const std::uint64_t start = src.header->data_start();
    if (src.mapped && src.bytes.size() - start >= s.opt.release_pages_from) st::release_pages(src.bytes.subspan(start));
  }
}

}  // namespace

Status prepare(State& s, std::size_t nfiles, const Loader& load) {
  W4A8_TRY(collect(s, nfiles, load));
  W4A8_TRY(apply_mxfp8(s));
  return check_missing_markers(s);
}

Status check_layer(State& s, std::size_t i) {
  const Marker& m = s.report.layers[i].marker;
  if (!s.format_fact.for_(m)) s.format_fact.remember(m, comfy_format_of(m));  // usually the layer before's object
  const ComfyFormat* f = s.format_fact.value;
  s.report.unknown_format += f == nullptr;
  if (f == nullptr || f->rule == nullptr) return Ok{};  // upstream skips other formats silently
  W4A8_TRY(check_required(s, i, *f));
  return f->rule(s, i);
}

Status check_layer_strict(const State& s, std::size_t i) {
  if (comfy_format_of(s.report.layers[i].marker) != &comfy_format(ComfyFormatId::W4a8)) return Ok{};
  return check_strict(s, i);
}

Result<Report> run(std::size_t nfiles, const Loader& load, const Options& opt, std::shared_ptr<const void> keep) {
  State s(opt);
  s.report.keep = std::move(keep);
  W4A8_TRY(prepare(s, nfiles, load));
  std::size_t first = 0, last = s.report.layers.size();
  if (!opt.only_layer.empty()) {
    const auto found = s.layer_index.find(opt.only_layer);
    if (!found) return make_error(ErrorKind::ValidateNoSuchLayer, {py::repr_str(opt.only_layer, s.opt.python)});
    first = *found;
    last = first + 1;
  }
  // --strict runs on each layer right after upstream's checks of it, while its tensors are in cache,
  // but an upstream error of any later layer still wins: the first strict error waits for the end.
  // (Upstream's checks of later layers change nothing a layer's strict checks read.) Its scales lie
  // scattered through the data in name order: the pages are handed back every few thousand layers,
  // or a file that keeps each layer's tensors together ends with its whole data region resident.
  // Where each layer's tensors lie together, consecutive layers' scales are a layer's weights apart
  // (and name order jumps: blocks.1, then blocks.10), which no hardware prefetcher follows: each
  // layer's first read waited for memory. The loads of a layer a few ahead are started early.
  constexpr std::size_t kReleaseEvery = 4096, kPrefetchAhead = 4;
  std::optional<Error> strict_error;
  for (std::size_t i = first; i < last; ++i) {
    if (opt.strict && i + kPrefetchAhead < last) prefetch_strict_data(s, i + kPrefetchAhead);
    W4A8_TRY(check_layer(s, i));
    if (!opt.strict || strict_error) continue;
    if (Status st = check_layer_strict(s, i); !st.ok()) strict_error = std::move(st).error();
    if ((i - first + 1) % kReleaseEvery == 0) release_data_pages(s);
  }
  if (strict_error) return std::move(*strict_error);
  return std::move(s.report);
}

Loader parsed_loader(std::span<const ParsedFile> files) {
  return [files](std::size_t i) -> Result<Source> { return Source{files[i].path, files[i].bytes, files[i].header, files[i].mapped}; };
}

Loader bytes_loader(std::span<const InputFile> files, std::vector<st::Header>& headers) {
  return [files, &headers](std::size_t i) -> Result<Source> {
    Result<st::Header> h = st::parse(files[i].bytes);
    if (!h.ok()) return std::move(h).error();
    headers.push_back(std::move(h).value());
    return Source{files[i].path, files[i].bytes, &headers.back()};
  };
}

Loader file_loader(std::span<const std::string> paths, std::vector<st::File>& opened) {
  return [paths, &opened](std::size_t i) -> Result<Source> {
    Result<st::File> f = st::File::open(paths[i]);
    if (!f.ok()) return std::move(f).error();
    opened.push_back(std::move(f).value());
    const st::File& file = opened.back();
    return Source{paths[i], file.bytes(), &file.header(), true};
  };
}

}  // namespace detail

// checkpoint_meta.get(name): tensors are sorted by name.
const TensorMeta* Report::find(std::string_view name) const {
  auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                             [](const TensorMeta* t, std::string_view n) { return t->name < n; });
  return it != tensors.end() && (*it)->name == name ? *it : nullptr;
}

std::span<const TensorMeta* const> Report::under(std::string_view prefix, std::size_t* hint) const {
  auto under_at = [&](std::size_t i) { return detail::is_under(tensors[i]->name, prefix); };
  std::size_t first = 0;
  if (const std::size_t h = hint != nullptr ? *hint : 0; h < tensors.size() && under_at(h) && (h == 0 || !under_at(h - 1))) {
    first = h;  // the run starts at the hint
  } else {
    first = static_cast<std::size_t>(std::lower_bound(tensors.begin(), tensors.end(), 0, [prefix](const TensorMeta* t, int) {
                                       return detail::compare_joined(t->name, prefix, ".") < 0;
                                     }) - tensors.begin());
  }
  std::size_t last = first;
  while (last < tensors.size() && under_at(last)) ++last;
  if (hint != nullptr && last > first) *hint = last;
  return std::span(tensors).subspan(first, last - first);
}

Result<Report> inspect(std::span<const InputFile> files, const Options& opt) {
  auto headers = std::make_shared<std::vector<st::Header>>();
  headers->reserve(files.size());  // Sources point into it: no reallocation
  return detail::run(files.size(), detail::bytes_loader(files, *headers), opt, headers);
}

Result<Report> inspect_parsed(std::span<const ParsedFile> files, const Options& opt) {
  return detail::run(files.size(), detail::parsed_loader(files), opt, nullptr);
}

Result<Report> inspect_paths(std::span<const std::string> paths, const Options& opt) {
  auto opened = std::make_shared<std::vector<st::File>>();
  opened->reserve(paths.size());  // Sources point into it: no reallocation
  return detail::run(paths.size(), detail::file_loader(paths, *opened), opt, opened);
}

}  // namespace w4a8::validate
