// Section 1 of validator.md: per file, global quant formats, _quantization_metadata layers, then every
// tensor key (checkpoint_meta, quantized-weight prefixes, .comfy_quant markers), with conflict checks.
#include <algorithm>
#include <optional>
#include <string>

#include "json/parse.hpp"
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {
namespace {

constexpr std::string_view kWeightSuffix = ".weight";
constexpr std::string_view kMarkerSuffix = ".comfy_quant";

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// json.loads failures that upstream does not turn into its own ValueError propagate unchanged:
// the 4300-digit int limit (plain ValueError) and RecursionError. Both the str and the bytes path
// report "from a unicode string" (bytes are decoded to str first).
Error json_failure(const json::ParseError& e, Error invalid) {
  switch (e.failure) {
    case json::ParseFailure::IntTooLong:
      return make_error(ErrorKind::PyIntMaxStrDigits, {std::to_string(e.digits)});
    case json::ParseFailure::TooDeep:
      return make_error(ErrorKind::PyRecursion, {e.in_array ? "array" : "object", "unicode string"});
    default:
      return invalid;
  }
}

// Upstream reads a marker as checkpoint.get_tensor(key).numpy().tobytes() with torch tensors: numpy
// has no bfloat16/float8 types, so torch raises TypeError("Got unsupported ScalarType <name>") for
// those dtypes before any JSON is read. Every other dtype yields the raw stored bytes.
// Approximation (documented in docs/validator.md): F4 and F6 markers are treated like FP8 ones with
// the names below; torch has no F6 dtype and safetensors' own error for them is not modelled.
std::optional<std::string_view> torch_unsupported_name(st::Dtype d) {
  switch (d) {
    case st::Dtype::BF16: return "BFloat16";
    case st::Dtype::F8_E4M3: return "Float8_e4m3fn";
    case st::Dtype::F8_E5M2: return "Float8_e5m2";
    case st::Dtype::F8_E4M3FNUZ: return "Float8_e4m3fnuz";
    case st::Dtype::F8_E5M2FNUZ: return "Float8_e5m2fnuz";
    case st::Dtype::F8_E8M0: return "Float8_e8m0fnu";
    case st::Dtype::F4: return "Float4_e2m1fn_x2";
    case st::Dtype::F6_E2M3: return "Float6_e2m3fn";
    case st::Dtype::F6_E3M2: return "Float6_e3m2fn";
    default: return std::nullopt;
  }
}

Status collect_metadata(State& s, const Source& src) {
  const st::Header& h = *src.header;
  if (const std::string* qf = h.meta("quant_format"); qf != nullptr && !qf->empty())
    s.formats.insert(ascii_lower(*qf));
  const std::string* serialized = h.meta("_quantization_metadata");
  if (serialized == nullptr) return Ok{};
  json::ParseResult parsed = json::loads_str(*serialized);
  if (!parsed.ok())
    return json_failure(parsed.error(), make_error(ErrorKind::SgInvalidQuantMetadata, {src.path}));
  if (!parsed->is_object()) return make_error(ErrorKind::SgQuantMetadataNotObject, {src.path});
  json::Value* layers = parsed->get("layers");
  if (layers == nullptr || !layers->is_object())
    return make_error(ErrorKind::SgQuantMetadataNoLayers, {src.path});
  for (auto& [prefix, marker] : layers->members) {
    if (!marker.is_object())
      return make_error(ErrorKind::SgMetadataMarkerNotObject, {py::repr_str(prefix)});
    W4A8_TRY(record_marker(s, prefix, std::move(marker)));
  }
  return Ok{};
}

Status collect_marker(State& s, const Source& src, const st::TensorInfo& t) {
  if (auto name = torch_unsupported_name(t.dtype))
    return make_error(ErrorKind::TorchUnsupportedScalarType, {*name});
  // parse() validated begin <= end <= data size, so this view is in bounds.
  const std::span<const std::uint8_t> raw =
      src.bytes.subspan(src.header->data_start() + t.begin, t.end - t.begin);
  json::ParseResult parsed = json::loads_bytes(raw);
  if (!parsed.ok())
    return json_failure(parsed.error(),
                        make_error(ErrorKind::SgInvalidMarker, {py::repr_str(t.name), src.path}));
  if (!parsed->is_object())
    return make_error(ErrorKind::SgMarkerNotObject, {py::repr_str(t.name)});
  const std::string prefix = t.name.substr(0, t.name.size() - kMarkerSuffix.size());
  return record_marker(s, prefix, std::move(parsed).value());
}

bool is_quantized_dtype(st::Dtype d) {
  return d == st::Dtype::F8_E4M3 || d == st::Dtype::I8 || d == st::Dtype::U8;
}

// checkpoint_meta in sorted key order, each name from the last file that holds it.
void finalize_meta(State& s) {
  std::vector<TensorRef> all;
  std::size_t total = 0;
  for (const Source& src : s.sources) total += src.header->tensors.size();
  all.reserve(total);
  for (std::size_t f = 0; f < s.sources.size(); ++f)
    for (std::size_t i = 0; i < s.sources[f].header->tensors.size(); ++i) all.push_back({f, i});
  auto name_of = [&](const TensorRef& r) -> const std::string& {
    return s.sources[r.file].header->tensors[r.index].name;
  };
  // Each header is sorted already; one file needs no sort. Stable: equal names stay in file order.
  if (s.sources.size() > 1)
    std::stable_sort(all.begin(), all.end(),
                     [&](const TensorRef& a, const TensorRef& b) { return name_of(a) < name_of(b); });
  s.report.tensors.clear();
  s.refs.clear();
  s.report.tensors.reserve(all.size());
  s.refs.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i + 1 < all.size() && name_of(all[i]) == name_of(all[i + 1])) continue;  // a later file wins
    const st::TensorInfo& t = s.sources[all[i].file].header->tensors[all[i].index];
    s.report.tensors.push_back(TensorMeta{t.name, t.dtype, t.shape});
    s.refs.push_back(all[i]);
  }
}

}  // namespace

// parse() validated every range, so the view is in bounds.
std::span<const std::uint8_t> State::data(const TensorMeta& t) const {
  const std::size_t i = static_cast<std::size_t>(&t - report.tensors.data());
  const TensorRef& r = refs[i];
  const Source& src = sources[r.file];
  const st::TensorInfo& info = src.header->tensors[r.index];
  return src.bytes.subspan(src.header->data_start() + info.begin, info.end - info.begin);
}

Status record_marker(State& s, const std::string& prefix, json::Value marker) {
  auto [it, inserted] = s.layer_index.try_emplace(prefix, s.report.layers.size());
  if (inserted) {
    s.report.layers.push_back(Layer{prefix, std::move(marker)});
    return Ok{};
  }
  json::Value& previous = s.report.layers[it->second].marker;
  if (!json::py_equal(previous, marker))
    return make_error(ErrorKind::SgConflictingMarkers, {py::repr_str(prefix)});
  previous = std::move(marker);  // Python replaces the value and keeps the key's first position
  return Ok{};
}

Status collect(State& s, std::size_t nfiles, const Loader& load) {
  s.sources.reserve(nfiles);
  for (std::size_t f = 0; f < nfiles; ++f) {
    Result<Source> opened = load(f);
    if (!opened.ok()) return std::move(opened).error();
    s.sources.push_back(*opened);
    const Source& src = s.sources.back();
    W4A8_TRY(collect_metadata(s, src));
    for (const st::TensorInfo& t : src.header->tensors) {
      const std::string_view name = t.name;
      if (name.ends_with(kWeightSuffix) && is_quantized_dtype(t.dtype))
        s.quantized.emplace(name.substr(0, name.size() - kWeightSuffix.size()));
      if (name.ends_with(kMarkerSuffix)) W4A8_TRY(collect_marker(s, src, t));
    }
  }
  finalize_meta(s);
  return Ok{};
}

}  // namespace w4a8::validate::detail
