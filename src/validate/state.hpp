// Private to src/validate: the state inspect() builds while it walks upstream's steps, and the small
// Python-formatting helpers its messages share ("('F8_E4M3', (4, 64))", "None", exact ints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/checked.hpp"
#include "core/result.hpp"
#include "json/value.hpp"
#include "py/int.hpp"
#include "safetensors/reader.hpp"
#include "validate/inspect.hpp"

namespace w4a8::validate::detail {

using u128 = unsigned __int128;

// One opened file: the path as given, its whole bytes, its validated header (owned by the caller).
struct Source {
  std::string_view path;
  std::span<const std::uint8_t> bytes;
  const st::Header* header = nullptr;
};
// Opens file i (in order, lazily: upstream opens file i only after it has processed file i - 1).
using Loader = std::function<Result<Source>(std::size_t)>;

// Where checkpoint_meta[name] came from (the last file holding it), for --strict data reads.
struct TensorRef {
  std::size_t file = 0;
  std::size_t index = 0;  // into that file's header().tensors
};

struct State {
  std::vector<Source> sources;              // opened files, in order
  Report report;                            // layers = raw_markers, tensors = checkpoint_meta
  std::vector<TensorRef> refs;              // parallel to report.tensors
  std::unordered_map<std::string, std::size_t> layer_index;  // prefix -> report.layers position
  std::set<std::string> quantized;          // marked_dtype_weight_prefixes (sorted: our set order)
  std::set<std::string> formats;            // global_quant_formats, lower-cased
  std::vector<py::BigInt> group_sizes;      // per layer: int(group_size) of asym_w4a8 layers

  // checkpoint_meta.get(name); nullptr when absent.
  const TensorMeta* meta(std::string_view name) const { return report.find(name); }
  // The bytes of checkpoint_meta[name] as stored in the file that defined it last.
  std::span<const std::uint8_t> data(const TensorMeta& t) const;
};

// Section 1: files, metadata, markers, checkpoint_meta, conflicts.
// @return Ok, or a Loader error (container/io), sglang.{invalid_quantization_metadata,
//         quantization_metadata_not_object, quantization_metadata_no_layers, metadata_marker_not_object,
//         conflicting_markers, invalid_marker, marker_not_object}, python.{int.max_str_digits, recursion},
//         torch.unsupported_scalar_type.
Status collect(State& s, std::size_t nfiles, const Loader& load);
// Section 2. @return Ok, or sglang.mxfp8_incompatible.
Status apply_mxfp8(State& s);
// Section 4, asym_w4a8_int8. @return Ok, or sglang.w4a8.* and python.int.*.
Status check_w4a8(State& s, std::size_t layer);
// Section 4, the other formats. @return Ok, or sglang.{w4a4,nvfp4,int8}.* and python.int.*.
Status check_w4a4(State& s, std::size_t layer);
Status check_nvfp4(State& s, std::size_t layer);
Status check_int8(State& s, std::size_t layer);
void mark_float8(State& s, std::size_t layer);
// --strict on one asym_w4a8_int8 layer that passed upstream. @return Ok, or strict.w4a8.*, python.int.*.
Status check_strict(const State& s, std::size_t layer);

// Records a marker for prefix as raw_markers[prefix] = marker after upstream's conflict check.
// @return Ok, or sglang.conflicting_markers.
Status record_marker(State& s, const std::string& prefix, json::Value marker);

// ---- Python formatting -----------------------------------------------------------------------------
// repr((dtype, shape)) for a checkpoint_meta entry, "None" for nullptr.
std::string meta_repr(const TensorMeta* t);
// str(dtype) + repr(shape), as upstream's f"{dtype}{shape}".
std::string dtype_shape_str(const TensorMeta& t);
// (dtype, shape) == (dtype, expected) exactly.
bool meta_is(const TensorMeta* t, st::Dtype d, std::initializer_list<std::uint64_t> shape);
bool shape_is(const std::vector<std::uint64_t>& shape, std::initializer_list<std::uint64_t> expected);
// The Python int k as a non-negative u128 when 0 <= k < 2^120; false otherwise (negative or huge).
bool small_nonneg(const py::BigInt& k, u128& out);
// k mod m for a Python int k >= 0 and 0 < m < 2^32.
std::uint32_t mod_small(const py::BigInt& k, std::uint32_t m);
// K // group_size for K < 2^65 and a Python int group_size >= 4 (any size: huge ones give 0).
std::uint64_t floor_div_k(u128 k, const py::BigInt& group_size);
// The marker value of key, or nullptr (marker.get(key)).
const json::Value* marker_get(const State& s, std::size_t layer, std::string_view key);

}  // namespace w4a8::validate::detail
