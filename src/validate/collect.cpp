// Section 1 of validator.md: per file, global quant formats, _quantization_metadata layers, then every
// tensor key (checkpoint_meta, quantized-weight prefixes, .comfy_quant markers), with conflict checks.
#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "core/key_hash.hpp"
#include "core/key_slots.hpp"
#include "json/flat_layers.hpp"
#include "json/parse.hpp"
#include "py/int.hpp"
#include "py/repr.hpp"
#include "py/version.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {
namespace {

constexpr std::string_view kWeightSuffix = ".weight";
constexpr std::string_view kMarkerSuffix = ".comfy_quant";
constexpr std::size_t kLinearRange = 16;     // a layer with more tensors than this: found by galloping
constexpr std::size_t kUnindexedFrom = std::size_t{1} << 16;  // metadata layers appended without the index
constexpr std::size_t kReleaseReadFrom = std::size_t{1} << 18;  // ... and whose flat read is handed back as it goes (1 MiB)

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// json.loads as the interpreter v runs it: its nesting limit (py::interpreter_facts).
json::LoadsOptions loads_options(py::Version v) { return {py::interpreter_facts(v).json_max_depth}; }

// json.loads failures that upstream does not turn into its own ValueError propagate unchanged:
// the 4300-digit int limit (plain ValueError, worded as interpreter v words it) and RecursionError.
// Both the str and the bytes path report "from a unicode string" (bytes are decoded to str first).
Error json_failure(const json::ParseError& e, Error invalid, py::Version v) {
  switch (e.failure) {
    case json::ParseFailure::IntTooLong:
      return py::max_str_digits_error(e.digits, v);
    case json::ParseFailure::TooDeep:
      if (e.calling) return make_error(ErrorKind::PyRecursionCall, {});
      return make_error(ErrorKind::PyRecursion, {e.in_array ? "array" : "object", "unicode string"});
    default:
      return invalid;
  }
}

// Upstream reads a marker as checkpoint.get_tensor(key).numpy().tobytes() with torch tensors: numpy
// has no bfloat16/float8 types, so torch raises TypeError("Got unsupported ScalarType <name>") for
// those dtypes before any JSON is read. Every other dtype yields the raw stored bytes.
// F4 behaves the same; F6 has no torch dtype, so safetensors' get_tensor itself refuses it (both
// checked with torch 2.15 and safetensors 0.8.0: tools/upstream/sglang_upstream.py --real-torch).
std::optional<std::string_view> torch_unsupported_name(st::Dtype d) {
  switch (d) {
    case st::Dtype::BF16: return "BFloat16";
    case st::Dtype::F8_E4M3: return "Float8_e4m3fn";
    case st::Dtype::F8_E5M2: return "Float8_e5m2";
    case st::Dtype::F8_E4M3FNUZ: return "Float8_e4m3fnuz";
    case st::Dtype::F8_E5M2FNUZ: return "Float8_e5m2fnuz";
    case st::Dtype::F8_E8M0: return "Float8_e8m0fnu";
    case st::Dtype::F4: return "Float4_e2m1fn_x2";
    default: return std::nullopt;
  }
}

// A model's markers are mostly byte-identical ({"format": "asym_w4a8_int8", ...} on every layer), and
// parsing is pure: the last object parsed is kept with its bytes, and a marker with the same bytes
// shares it (Marker: read-only while shared) instead of being parsed again.
// Objects only: a marker that fails or is not an object is parsed again for its error.
class MarkerMemo {
 public:
  explicit MarkerMemo(const json::LoadsOptions& opt) : opt_(opt) {}
  // The marker of `bytes` when they hold an object: the kept one when they equal its bytes, else
  // json::loads_bytes' object. Null otherwise, with that parse's result (an error or a non-object)
  // in *other. same_as_last: the caller knows the bytes equal the last ones parsed (the flat read
  // compared them already), so they are not compared again.
  Marker parse(std::span<const std::uint8_t> bytes, std::optional<json::ParseResult>* other, bool same_as_last = false) {
    if (valid_ && bytes.size() == bytes_.size() &&
        (same_as_last || bytes.empty() || std::memcmp(bytes.data(), bytes_.data(), bytes.size()) == 0))
      return kept_;
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    json::ParseResult parsed = json::loads_bytes(bytes, derived_room(text), opt_);
    valid_ = parsed.ok() && parsed->is_object();
    if (!valid_) {
      if (other != nullptr) other->emplace(std::move(parsed));
      return {};
    }
    bytes_ = bytes;
    kept_ = Marker(std::move(parsed).value());
    return kept_;
  }

 private:
  json::LoadsOptions opt_;
  bool valid_ = false;
  std::span<const std::uint8_t> bytes_;  // a view into a source's mapping or header, alive for the whole walk
  Marker kept_;
};

std::span<const std::uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

Status collect_metadata(State& s, const Source& src) {
  const st::Header& h = *src.header;
  if (const std::string* qf = h.meta("quant_format"); qf != nullptr && !qf->empty())
    s.formats.insert(ascii_lower(*qf));
  const std::string* serialized = h.meta("_quantization_metadata");
  if (serialized == nullptr) return Ok{};
  // Read without building it: the keys view the header's text (as tensor names do), and layers whose
  // marker text repeats share one object (MarkerMemo), as tensor markers do. json.loads' errors and
  // upstream's first checks come from the same read; only a text that is not UTF-8 (never a header's
  // decoded string) goes to the general parser below.
  const json::LoadsOptions loads = loads_options(s.opt.python);
  json::FlatRead read = json::read_flat_layers(*serialized, loads);
  switch (read.shape) {
    case json::MetadataShape::Invalid:
      return json_failure(read.error, make_error(ErrorKind::SgInvalidQuantMetadata, {src.path}), s.opt.python);
    case json::MetadataShape::NotObject: return make_error(ErrorKind::SgQuantMetadataNotObject, {src.path});
    case json::MetadataShape::NoLayers: return make_error(ErrorKind::SgQuantMetadataNoLayers, {src.path});
    case json::MetadataShape::Declined: break;
    case json::MetadataShape::Layers: {
      json::FlatLayers* flat = &read.layers;
      // Room for these layers on top of what collect() reserved for the file's tensor markers.
      const std::size_t room = s.report.layers.capacity() + flat->size();
      // The first layers recorded (the first file's metadata comes before any marker) are new and
      // distinct (the read merged repeats), so they are appended without asking the index. A few
      // (under kUnindexedFrom) keep the table the read's repeat check built over their keys; of many,
      // the table is dropped and the index hashes them only if a later step asks it anything, so a
      // header of nothing but layers never holds one. (Hashing at the first lookup was slower than
      // keeping the read's table or hashing on arrival for 5,000 layers: the keys are cold by then.)
      const bool first = s.report.layers.empty();
      KeySlots table = flat->take_key_slots();  // (empty when the keys came in increasing order)
      if (!first || flat->size() >= kUnindexedFrom) table = KeySlots();  // freed before the layers grow
      if (flat->has_decoded_keys()) {  // keys spelled with escapes: kept as long as the Report, as a parsed document is
        const json::Value& kept = s.keep_metadata(json::Value::from_string(flat->take_decoded_keys()));
        flat->decoded_keys_moved_to(kept.text);
      }
      s.report.layers.reserve(room);
      if (!first) s.layer_index.reserve(room);
      // A marker whose bytes repeat the layer before's is that layer's Marker (one object, or one
      // view of a text); a format-less flat one is kept as its text (Marker::text_form), since nothing
      // reads it unless a report prints it; any other is parsed.
      MarkerMemo memo(loads);
      std::string_view marker;  // the layer before's, whose bytes usually repeat
      Marker before;            // ... and its Marker
      // A large read's table goes as the layers grow (each layer is read once); a small one's pages
      // are not worth a system call.
      const bool release = flat->size() >= kReleaseReadFrom;
      std::size_t i = 0;  // l's position
      for (const json::FlatLayer& l : *flat) {
        if (release && i != 0 && i % json::FlatLayers::kBlock == 0) flat->release_before(i);
        ++i;
        const auto [key, text] = flat->read(l, *serialized, marker);
        if (text.front() != '{')  // (the read kept it: an error only now, in upstream's order)
          return make_error(ErrorKind::SgMetadataMarkerNotObject, {py::repr_str(key, s.opt.python)});
        if (marker.empty() || !(l.repeats() || text == marker))
          before = Marker::text_form_allowed(text) ? Marker::text_form(text.data()) : memo.parse(as_bytes(text), nullptr);
        marker = text;
        Marker m = before;
        if (first) append_layer(s, key, std::move(m));
        else W4A8_TRY(record_marker(s, key, std::move(m)));
      }
      if (first && !table.empty()) s.layer_index.appended_distinct(std::move(table));
      else if (first) s.layer_index.appended_distinct(flat->increasing());
      return Ok{};
    }
  }
  json::ParseResult parsed = json::loads_str(*serialized, loads);
  if (!parsed.ok())
    return json_failure(parsed.error(), make_error(ErrorKind::SgInvalidQuantMetadata, {src.path}), s.opt.python);
  if (!parsed->is_object()) return make_error(ErrorKind::SgQuantMetadataNotObject, {src.path});
  // Kept: the layers' keys are the prefixes layer_index and the Report's layers view.
  json::Value& doc = s.keep_metadata(std::move(parsed).value());
  json::Value* layers = doc.get("layers");
  if (layers == nullptr || !layers->is_object())
    return make_error(ErrorKind::SgQuantMetadataNoLayers, {src.path});
  // A layer whose marker is identical to the one before shares its object, as MarkerMemo shares
  // equal texts: one object, not a copy (and room for derived keys) per layer, which was most of
  // this path's memory when a document's markers repeat (a hostile one of `"N":{}` layers: 550
  // bytes a layer).
  Marker last;
  for (auto& [prefix, marker] : layers->members) {
    if (!marker.is_object())
      return make_error(ErrorKind::SgMetadataMarkerNotObject, {py::repr_str(prefix, s.opt.python)});
    if (last.is_null() || !json::identical(last.value(), marker)) {
      make_derived_room(marker);  // as record_marker does for a marker it holds alone
      last = Marker(std::move(marker));
    }
    marker = json::Value();  // taken, or the same as the kept one: the document keeps only its keys
    W4A8_TRY(record_marker(s, prefix, last));
  }
  return Ok{};
}

// parse() validated begin <= end <= data size, so this view is in bounds.
std::span<const std::uint8_t> marker_bytes(const Source& src, const st::TensorInfo& t) {
  return src.bytes.subspan(src.header->data_start() + t.begin, t.end - t.begin);
}

bool marker_readable(st::Dtype d) {
  return !torch_unsupported_name(d) && d != st::Dtype::F6_E2M3 && d != st::Dtype::F6_E3M2;
}

// preparsed: the marker when it was parsed ahead (an object), else nullptr.
Status collect_marker(State& s, const Source& src, const st::TensorInfo& t, Marker* preparsed, MarkerMemo& memo) {
  if (auto name = torch_unsupported_name(t.dtype))
    return make_error(ErrorKind::TorchUnsupportedScalarType, {*name});
  if (t.dtype == st::Dtype::F6_E2M3 || t.dtype == st::Dtype::F6_E3M2)  // no torch dtype at all
    return make_error(ErrorKind::StDtypeNotUnderstood, {st::dtype_name(t.dtype)});
  const std::string_view prefix = std::string_view(t.name).substr(0, t.name.size() - kMarkerSuffix.size());
  if (preparsed != nullptr) return record_marker(s, prefix, std::move(*preparsed));
  std::optional<json::ParseResult> other;
  Marker marker = memo.parse(marker_bytes(src, t), &other);
  if (!marker.is_null()) return record_marker(s, prefix, std::move(marker));
  if (!other->ok())
    return json_failure(other->error(),
                        make_error(ErrorKind::SgInvalidMarker, {py::repr_str(t.name, s.opt.python), src.path}),
                        s.opt.python);
  return make_error(ErrorKind::SgMarkerNotObject, {py::repr_str(t.name, s.opt.python)});
}

// A large mapped file's markers (tensor indices, in name order), parsed ahead in file-offset order:
// parsing is pure, so recording the results in name order afterwards is exactly what parsing them
// there would do (a marker that fails or is not an object is left to be parsed again in its turn,
// for its error). The data pages behind the offset are released as it advances: markers scattered
// among the tensor data (a writer that keeps each layer's tensors together) would otherwise leave
// the whole data region resident. @return out[k] for markers[k]; objects only, others empty.
std::vector<Marker> preparse_markers(const Source& src, const std::vector<std::uint32_t>& markers,
                                     const json::LoadsOptions& loads) {
  const auto& ts = src.header->tensors;
  std::vector<std::uint32_t> by_offset(markers.size());
  for (std::uint32_t k = 0; k < by_offset.size(); ++k) by_offset[k] = k;
  std::sort(by_offset.begin(), by_offset.end(),
            [&](std::uint32_t a, std::uint32_t b) { return ts[markers[a]].begin < ts[markers[b]].begin; });
  std::vector<Marker> out(markers.size());
  constexpr std::uint64_t kReleaseStep = std::uint64_t{1} << 20;  // one madvise per MiB passed
  const std::uint64_t data_start = src.header->data_start();
  std::uint64_t released = data_start;  // [data_start, released) handed back already
  MarkerMemo memo(loads);  // (its view of the last marker's bytes stays valid: release_pages keeps the mapping)
  for (std::uint32_t k : by_offset) {
    const st::TensorInfo& t = ts[markers[k]];
    if (!marker_readable(t.dtype)) continue;
    if (const std::uint64_t at = data_start + t.begin; at >= released + kReleaseStep) {
      st::release_pages(src.bytes.subspan(released, at - released));  // whole pages before `at` only
      released = at;
    }
    out[k] = memo.parse(marker_bytes(src, t), nullptr);
  }
  st::release_pages(src.bytes.subspan(released));
  return out;
}

bool is_quantized_dtype(st::Dtype d) {
  return d == st::Dtype::F8_E4M3 || d == st::Dtype::I8 || d == st::Dtype::U8;
}

bool name_less(const TensorMeta* a, const TensorMeta* b) { return a->name < b->name; }

// checkpoint_meta in sorted key order, each name from the last file that holds it.
void finalize_meta(State& s) {
  std::vector<const TensorMeta*>& out = s.report.tensors;
  out.clear();
  if (s.sources.size() == 1) {  // one header: already sorted and unique
    const auto& ts = s.sources[0].header->tensors;
    out.reserve(ts.size());
    for (const st::TensorInfo& t : ts) out.push_back(&t);
    return;
  }
  std::size_t total = 0;
  for (const Source& src : s.sources) total += src.header->tensors.size();
  out.reserve(total);
  for (const Source& src : s.sources)
    for (const st::TensorInfo& t : src.header->tensors) out.push_back(&t);
  // Stable: equal names stay in file order, and the last of each run (the latest file) is kept.
  std::stable_sort(out.begin(), out.end(), name_less);
  std::size_t w = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i + 1 < out.size() && out[i]->name == out[i + 1]->name) {
      if (i == 0 || out[i - 1]->name != out[i]->name)  // once per name
        if (s.report.replaced_tensors++ == 0) s.report.first_replaced = out[i]->name;
      continue;
    }
    out[w++] = out[i];
  }
  out.resize(w);
}

// The first position in ts[lo, hi) whose name is not below a + b (ts is sorted by name).
std::size_t lower_joined(const std::vector<const TensorMeta*>& ts, std::size_t lo, std::size_t hi, std::string_view a,
                         std::string_view b) {
  return static_cast<std::size_t>(std::lower_bound(ts.begin() + static_cast<std::ptrdiff_t>(lo),
                                                   ts.begin() + static_cast<std::ptrdiff_t>(hi), 0,
                                                   [&](const TensorMeta* t, int) { return compare_joined(t->name, a, b) < 0; }) -
                                  ts.begin());
}

}  // namespace

const TensorMeta* State::meta(std::string_view prefix, std::string_view suffix) const {
  const auto& ts = report.tensors;
  if (!suffix.starts_with('.')) {  // not of the form prefix + "." + rest: search everything
    const std::size_t i = lower_joined(ts, 0, ts.size(), prefix, suffix);
    return i < ts.size() && compare_joined(ts[i]->name, prefix, suffix) == 0 ? ts[i] : nullptr;
  }
  if (!range_.valid || range_.prefix != prefix) set_range(prefix);
  return find_in_range(prefix, suffix, range_.first, range_.last);
}

void State::set_range(std::string_view prefix) const {
  const auto& ts = report.tensors;
  auto search = [&](std::size_t lo, std::size_t hi, std::string_view a, std::string_view b) {
    return lower_joined(ts, lo, hi, a, b);
  };
  auto under = [&](std::size_t i) { return is_under(ts[i]->name, prefix); };
  // Layers are mostly checked in name order, each right after the previous one's tensors: try
  // there first (its names and the one before it tell), then gallop forward, else search all.
  if (const std::size_t i = range_.valid ? range_.last : 0; i < ts.size() && under(i) &&
                                                              (i == 0 || compare_joined(ts[i - 1]->name, prefix, ".") < 0)) {
    std::size_t end = i + 1;
    while (end < ts.size() && end - i < kLinearRange && under(end)) ++end;
    if (end == ts.size() || !under(end)) {
      range_.prefix.assign(prefix);
      range_.first = i;
      range_.last = end;
      range_.valid = true;
      return;
    }
  }
  std::size_t lo = 0, hi = ts.size();
  if (range_.valid && range_.first < ts.size() && compare_joined(ts[range_.first]->name, prefix, ".") < 0) {
    lo = range_.first;
    std::size_t step = 1;
    while (lo + step < ts.size() && compare_joined(ts[lo + step]->name, prefix, ".") < 0) {
      lo += step;
      step *= 2;
    }
    hi = std::min(ts.size(), lo + step + 1);
  }
  range_.prefix.assign(prefix);
  range_.first = search(lo, hi, prefix, ".");
  std::size_t end = range_.first, step = 1;  // the range is short: gallop to its end too
  while (end + step <= ts.size() && compare_joined(ts[end + step - 1]->name, prefix, "/") < 0) {
    end += step;
    step *= 2;
  }
  range_.last = search(end, std::min(ts.size(), end + step), prefix, "/");  // '/' follows '.'
  range_.valid = true;
}

const TensorMeta* State::meta_first(std::size_t layer, std::string_view suffix) const {
  const st::Name& prefix = report.layers[layer].prefix;
  if (!suffix.starts_with('.')) return meta(prefix, suffix);
  if (layer_ranges_.size() <= layer) layer_ranges_.resize(std::max(layer + 1, report.layers.size()));
  LayerRange& r = layer_ranges_[layer];
  if (!r.known) {
    if (!range_.valid || range_.prefix != prefix) set_range(prefix);
    r = {range_.first, range_.last, true};
  }
  return find_in_range(prefix, suffix, r.first, r.last);
}

const TensorMeta* State::find_in_range(std::string_view prefix, std::string_view suffix, std::size_t first,
                                       std::size_t last) const {
  const auto& ts = report.tensors;
  // Inside the range every name starts with prefix + ".": compare the rest only. A layer's handful
  // of tensors are scanned, lengths first (most differ); a large range is searched.
  if (last - first <= kLinearRange) {
    for (std::size_t i = first; i < last; ++i) {
      const st::Name& n = ts[i]->name;
      if (n.size() == prefix.size() + suffix.size() && n.ends_with(suffix)) return ts[i];
    }
    return nullptr;
  }
  auto it = std::lower_bound(ts.begin() + static_cast<std::ptrdiff_t>(first), ts.begin() + static_cast<std::ptrdiff_t>(last),
                             suffix, [&](const TensorMeta* t, std::string_view suf) {
                               return std::string_view(t->name).substr(prefix.size()) < suf;
                             });
  const auto end = ts.begin() + static_cast<std::ptrdiff_t>(last);
  return it != end && std::string_view((*it)->name).substr(prefix.size()) == suffix ? *it : nullptr;
}

// parse() validated every range, so the view is in bounds.
std::span<const std::uint8_t> State::data(const TensorMeta& t) const {
  for (const Source& src : sources) {
    const auto& ts = src.header->tensors;
    if (ts.empty() || &t < ts.data() || &t >= ts.data() + ts.size()) continue;
    return src.bytes.subspan(src.header->data_start() + t.begin, t.end - t.begin);
  }
  return {};  // not a checkpoint_meta entry (cannot happen: callers pass meta() results)
}

namespace {

Error conflict(std::string_view prefix, py::Version v) {
  return make_error(ErrorKind::SgConflictingMarkers, {py::repr_str(prefix, v)});
}

// 0.5.20+: a key already recorded with a value that `!=` the new one conflicts (Python's `!=` on the
// values themselves: a top-level NaN differs from itself), and a comparison that recurses past the
// interpreter's limit raises; then dict.update. Large markers get a key index so a hostile one stays
// linear.
Status merge_per_key(json::Value& recorded, std::string_view prefix, json::Value&& marker, py::Version v) {
  constexpr std::size_t kLinearMax = 16;
  const bool indexed = recorded.members.size() + marker.members.size() > kLinearMax;
  std::unordered_map<std::string_view, std::size_t, KeyHash> index;
  // The index holds views of the keys: no reallocation may move them (a short key lives inside its
  // string, so a moved string leaves the view dangling).
  recorded.members.reserve(recorded.members.size() + marker.members.size());
  if (indexed) {
    index.reserve(recorded.members.size());
    for (std::size_t i = 0; i < recorded.members.size(); ++i) index.emplace(recorded.members[i].first, i);
  }
  auto find = [&](std::string_view key) -> json::Value* {
    if (!indexed) return recorded.get(key);
    auto it = index.find(key);
    return it == index.end() ? nullptr : &recorded.members[it->second].second;
  };
  const auto max_depth = static_cast<std::size_t>(py::interpreter_facts(v).merge_compare_max_depth);
  for (const auto& [key, value] : marker.members) {
    const json::Value* old = find(key);
    if (old == nullptr) continue;
    const json::Compared c = json::py_compare(*old, value);
    if (c.depth > max_depth) return make_error(ErrorKind::PyRecursionInComparison, {});
    if (!c.equal) return conflict(prefix, v);
  }
  for (auto& [key, value] : marker.members) {
    if (json::Value* old = find(key)) {
      *old = std::move(value);  // update() overwrites in place: the key keeps its position
      continue;
    }
    recorded.members.emplace_back(std::move(key), std::move(value));
    if (indexed) index.emplace(recorded.members.back().first, recorded.members.size() - 1);
  }
  return Ok{};
}

}  // namespace

json::Value& State::keep_metadata(json::Value doc) {
  // Each document in a block of its own, chained onto report.metadata: it never moves, and it lives
  // as long as any copy of the Report.
  struct Kept {
    std::shared_ptr<const void> earlier;
    json::Value doc;
  };
  auto kept = std::make_shared<Kept>(Kept{std::move(report.metadata), std::move(doc)});
  json::Value& out = kept->doc;
  report.metadata = std::move(kept);
  return out;
}

void append_layer(State& s, std::string_view prefix, Marker marker) {
  // Room for the keys section 4 adds (_has_codebook, ...) to markers that name a format: growing
  // them then would double every marker's block and strand the old one. A no-op for markers the
  // parser already gave the room; a shared marker gets its room when it is copied, and one kept as
  // text names no format.
  if (!marker.shared() && !marker.is_text()) make_derived_room(marker.edit());
  s.report.layers.push_back(Layer{st::Name(prefix), std::move(marker)});
}

Status record_marker(State& s, std::string_view prefix, Marker marker) {
  const auto [position, inserted] = s.layer_index.try_emplace(prefix);
  if (inserted) {  // PerKey: setdefault({}) then update() -- the marker's own members, in order
    append_layer(s, prefix, std::move(marker));
    return Ok{};
  }
  Marker& previous = s.report.layers[position].marker;
  switch (s.merge) {
    case upstream::MarkerMerge::WholeMarker:
      if (!json::py_equal(previous, marker)) return conflict(prefix, s.opt.python);
      previous = std::move(marker);  // Python replaces the value and keeps the key's first position
      return Ok{};
    case upstream::MarkerMerge::PerKey:
      return merge_per_key(previous.edit(kDerivedKeysMax), prefix, marker.take(), s.opt.python);
  }
  return Ok{};
}

Status collect(State& s, std::size_t nfiles, const Loader& load) {
  s.sources.reserve(nfiles);
  bool quantized_in_order = true;  // s.quantized is known to be sorted and distinct
  for (std::size_t f = 0; f < nfiles; ++f) {
    Result<Source> opened = load(f);
    if (!opened.ok()) return std::move(opened).error();
    s.sources.push_back(*opened);
    const Source& src = s.sources.back();
    std::size_t markers = 0;  // room for this file's layers up front (no rehash or regrowth)
    for (const st::TensorInfo& t : src.header->tensors) markers += t.name.ends_with(kMarkerSuffix);
    s.report.layers.reserve(s.report.layers.size() + markers);
    s.layer_index.reserve(s.report.layers.size() + markers);
    W4A8_TRY(collect_metadata(s, src));
    std::vector<Marker> ahead;  // the markers in name order, parsed ahead (null: parsed in turn)
    if (src.mapped && markers > 0 && src.bytes.size() - src.header->data_start() >= s.opt.release_pages_from) {
      std::vector<std::uint32_t> indices;
      indices.reserve(markers);
      for (std::uint32_t i = 0; i < src.header->tensors.size(); ++i)
        if (src.header->tensors[i].name.ends_with(kMarkerSuffix)) indices.push_back(i);
      ahead = preparse_markers(src, indices, loads_options(s.opt.python));
    }
    MarkerMemo memo(loads_options(s.opt.python));
    std::size_t k = 0;  // this marker's position in name order
    const auto& ts = src.header->tensors;
    // One file: report.tensors will be its table, so a layer that a marker here starts has its
    // tensors around the marker, told apart by the LCP array (names sharing prefix + "." with a
    // neighbour that does) instead of by comparing names later.
    const std::vector<std::uint32_t>& lcp = src.header->name_lcp;
    const bool ranges = nfiles == 1 && lcp.size() == ts.size();
    // The same table tells whether the weight prefixes come out sorted and distinct: two names that
    // first differ before either prefix ends have prefixes in the names' order.
    std::uint32_t shared = UINT32_MAX;  // the LCP of this name and the last quantized weight's
    std::size_t last_prefix = 0;        // that weight's prefix length
    for (std::size_t j = 0; j < ts.size(); ++j) {
      const st::TensorInfo& t = ts[j];
      if (ranges && j > 0) shared = std::min(shared, lcp[j]);
      if (t.name.ends_with(kWeightSuffix) && is_quantized_dtype(t.dtype)) {
        const std::size_t n = t.name.size() - kWeightSuffix.size();
        if (!s.quantized.empty() && !(ranges && shared < std::min(n, last_prefix))) quantized_in_order = false;
        s.quantized.push_back(t.name.substr(0, n));
        shared = UINT32_MAX;
        last_prefix = n;
      }
      if (t.name.ends_with(kMarkerSuffix)) {
        Marker* pre = k < ahead.size() && !ahead[k].is_null() ? &ahead[k] : nullptr;
        ++k;
        const std::size_t before = s.report.layers.size();
        W4A8_TRY(collect_marker(s, src, t, pre, memo));
        if (ranges && s.report.layers.size() > before) {  // a new layer, whose prefix is this name's start
          const std::size_t shared = t.name.size() - kMarkerSuffix.size() + 1;  // prefix + "."
          std::size_t first = j, last = j + 1;
          while (first > 0 && lcp[first] >= shared) --first;
          while (last < ts.size() && lcp[last] >= shared) ++last;
          s.know_range(before, first, last);
        }
      }
    }
  }
  // A set: sorted (code point order), unique. One file's prefixes are usually in order already.
  if (!quantized_in_order) {
    if (!std::is_sorted(s.quantized.begin(), s.quantized.end())) std::sort(s.quantized.begin(), s.quantized.end());
    s.quantized.erase(std::unique(s.quantized.begin(), s.quantized.end()), s.quantized.end());
  }
  finalize_meta(s);
  s.collected = true;
  return Ok{};
}

}  // namespace w4a8::validate::detail
