// Private to src/validate: the state inspect() builds while it walks upstream's steps, and the small
// Python-formatting helpers its messages share ("('F8_E4M3', (4, 64))", "None", exact ints).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/checked.hpp"
#include "core/result.hpp"
#include "core/upstream.hpp"
#include "json/value.hpp"
#include "py/int.hpp"
#include "safetensors/reader.hpp"
#include "validate/comfy_formats.hpp"
#include "validate/inspect.hpp"
#include "validate/prefix_index.hpp"

namespace w4a8::validate::detail {

using u128 = unsigned __int128;

// One opened file: the path as given, its whole bytes, its validated header (owned by the caller).
struct Source {
  std::string_view path;
  std::span<const std::uint8_t> bytes;
  const st::Header* header = nullptr;
  bool mapped = false;  // bytes are an st::File's mapping (st::release_pages may be used on them)
};
// Opens file i (in order, lazily: upstream opens file i only after it has processed file i - 1).
using Loader = std::function<Result<Source>(std::size_t)>;

// int(marker.get("group_size", 16)) of an asym_w4a8_int8 marker that passed (>= 4), with what the
// shape rule derives from it.
struct GroupSize {
  py::BigInt value;
  u128 small = 0;  // the value when it is below 2^120 (small_nonneg), else 0: K // group is 0
};

struct State {
  explicit State(const Options& o) : opt(o), merge(upstream::profile(o.sglang).merge) { report.sglang = o.sglang; }
  State(const State&) = delete;  // (layer_index points at report.layers)
  State& operator=(const State&) = delete;

  const Options& opt;
  upstream::MarkerMerge merge;     // how a prefix's second marker is recorded (the profile's rule)
  std::vector<Source> sources;     // opened files, in order
  Report report;                   // layers = raw_markers, tensors = checkpoint_meta
  // raw_markers' keys: prefix -> report.layers position (the keys are the layers' prefixes, views
  // into the headers or the kept metadata, which outlive the State's use of them).
  PrefixIndex layer_index{report.layers};
  // A parsed _quantization_metadata, kept as long as the Report (its layers' keys are the prefixes
  // viewed above and by Report::layers). Its address is stable.
  json::Value& keep_metadata(json::Value doc);
  std::vector<std::string_view> quantized;  // marked_dtype_weight_prefixes: sorted, unique after collect
  std::set<std::string> formats;            // global_quant_formats, lower-cased
  std::vector<py::BigInt> group_sizes;      // per layer: int(group_size) of asym_w4a8 layers
  DerivedKeys derived;                      // sets the rules' derived keys on report.layers[].marker
  LastMarkerFact<const ComfyFormat*> format_fact;  // comfy_format_of, for check_layer
  LastMarkerFact<GroupSize> group_fact;            // check_w4a8's group size
  bool collected = false;                   // section 1 finished (every file read)

 private:
  struct PrefixRange {  // report.tensors[first, last) are the names starting with `prefix` + "."
    std::string prefix;
    std::size_t first = 0, last = 0;
    bool valid = false;
  };
  struct LayerRange {  // the same, for report.layers[i]: found once, kept for the walk's later passes
    std::size_t first = 0, last = 0;
    bool known = false;
  };
  mutable PrefixRange range_;
  mutable std::vector<LayerRange> layer_ranges_;
  // meta(layer, suffix) when the layer's range is not known yet (it is found and kept).
  const TensorMeta* meta_first(std::size_t layer, std::string_view suffix) const;
  // Sets range_ to prefix's range (report.tensors is final).
  void set_range(std::string_view prefix) const;
  // The name prefix + suffix among report.tensors[first, last), prefix's range.
  const TensorMeta* find_in_range(std::string_view prefix, std::string_view suffix, std::size_t first,
                                  std::size_t last) const;

 public:

  // checkpoint_meta.get(prefix + suffix); nullptr when absent. No string is built; the rules ask for
  // several suffixes of one prefix in a row, so the range of names starting with prefix + "." is kept
  // from the previous call (report.tensors is final by then: collect() fills it last).
  const TensorMeta* meta(std::string_view prefix, std::string_view suffix = {}) const;
  // meta(report.layers[layer].prefix, suffix). The layer's range is found once and kept by its index:
  // the rules' many lookups of one layer, and --strict's pass over every layer after section 4, then
  // compare no layer names. pre: report.layers[layer]'s prefix stays as it is (collect() is done).
  const TensorMeta* meta(std::size_t layer, std::string_view suffix) const {
    if (layer < layer_ranges_.size() && layer_ranges_[layer].known && suffix.starts_with('.'))
      return find_in_range(report.layers[layer].prefix, suffix, layer_ranges_[layer].first, layer_ranges_[layer].last);
    return meta_first(layer, suffix);
  }
  // Layer `layer`'s tensors are report.tensors[first, last) (found by collect(), which knows them
  // from the header's LCP array); pre: they are, once report.tensors is final.
  void know_range(std::size_t layer, std::size_t first, std::size_t last) {
    if (layer_ranges_.size() <= layer) layer_ranges_.resize(std::max(layer + 1, report.layers.capacity()));
    layer_ranges_[layer] = {first, last, true};
  }
  // The bytes of checkpoint_meta[name] as stored in the file that defined it last.
  std::span<const std::uint8_t> data(const TensorMeta& t) const;
  bool has_layer(std::string_view prefix) const { return layer_index.contains(prefix); }
};

// Section 1: files, metadata, markers, checkpoint_meta, conflicts.
// @return Ok, or a Loader error (container/io), sglang.{invalid_quantization_metadata,
//         quantization_metadata_not_object, quantization_metadata_no_layers, metadata_marker_not_object,
//         conflicting_markers, invalid_marker, marker_not_object}, python.{int.max_str_digits, recursion},
//         torch.unsupported_scalar_type, safetensors.dtype_not_understood.
Status collect(State& s, std::size_t nfiles, const Loader& load);
// Section 2. @return Ok, or sglang.mxfp8_incompatible.
Status apply_mxfp8(State& s);
// Section 4 rules (the `rule` column of comfy_formats.def), required tensors already checked.
// @return Ok, or sglang.w4a8.* / sglang.{w4a4,nvfp4,int8}.* and python.int.*.
Status check_w4a8(State& s, std::size_t layer);
Status check_w4a4(State& s, std::size_t layer);
Status check_nvfp4(State& s, std::size_t layer);
Status check_int8(State& s, std::size_t layer);
Status check_float8(State& s, std::size_t layer);
// --strict on one asym_w4a8_int8 layer that passed upstream. @return Ok, or strict.w4a8.*, python.int.*.
Status check_strict(const State& s, std::size_t layer);
// Starts loading the bytes check_strict reads of `layer` (its scales), if it has them. No effect
// on any result. pre: collect() is done.
void prefetch_strict_data(const State& s, std::size_t layer);

// Records raw_markers[prefix] under the profile's rule (validator.md "Upstream versions"): WholeMarker
// replaces an equal marker; PerKey merges key by key. prefix must point into storage that outlives s.
// @return Ok, or sglang.conflicting_markers.
Status record_marker(State& s, std::string_view prefix, Marker marker);
// Appends raw_markers[prefix] = marker as a new key, without asking the index (the caller knows the
// key is new; it tells the index afterwards: PrefixIndex::appended_distinct).
void append_layer(State& s, std::string_view prefix, Marker marker);

// ---- Name order (checkpoint_meta is sorted by name, byte order = Python's str order for UTF-8) -----
// a <=> prefix + suffix (negative, zero, positive), without concatenating.
inline int compare_joined(std::string_view a, std::string_view prefix, std::string_view suffix) {
  const std::size_t n = std::min(a.size(), prefix.size());
  if (const int c = a.substr(0, n).compare(prefix.substr(0, n)); c != 0) return c;
  if (a.size() < prefix.size()) return -1;
  return a.substr(prefix.size()).compare(suffix);
}
// name starts with prefix + "." (a tensor of layer `prefix`).
inline bool is_under(std::string_view name, std::string_view prefix) {
  return name.size() > prefix.size() && name[prefix.size()] == '.' && name.starts_with(prefix);
}

// ---- Python formatting -----------------------------------------------------------------------------
// repr((dtype, shape)) for a checkpoint_meta entry, "None" for nullptr.
std::string meta_repr(const TensorMeta* t);
// (dtype, shape) == (dtype, expected) exactly.
bool meta_is(const TensorMeta* t, st::Dtype d, std::initializer_list<std::uint64_t> shape);
bool shape_is(std::span<const std::uint64_t> shape, std::initializer_list<std::uint64_t> expected);  // (a span: st::Shape converts without a copy)
// The Python int k as a non-negative u128 when 0 <= k < 2^120; false otherwise (negative or huge).
bool small_nonneg(const py::BigInt& k, u128& out);
// k mod m for a Python int k >= 0 and 0 < m < 2^32.
std::uint32_t mod_small(const py::BigInt& k, std::uint32_t m);

}  // namespace w4a8::validate::detail
