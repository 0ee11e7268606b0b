// Internal: serde_json::from_str::<HashMetadata>(header) in one pass over the text, filling the
// flat tensor table directly (no DOM): the crate's struct is
//   HashMetadata { __metadata__: Option<HashMap<String, String>>,
//                  #[serde(flatten)] tensors: HashMap<String, TensorInfo> }
//   TensorInfo { dtype: Dtype, shape: Vec<usize>, data_offsets: (usize, usize) }
// Rules (learnt from safetensors 0.8.0; tests/safetensors/message_test.cpp and differential_test.cpp
// hold the evidence):
//  - the root must be an object ('[' fails at once, a scalar after it is read);
//  - `__metadata__` is deserialized while streaming, so its errors come where serde_json stands and
//    win over any later syntax error; it may appear once (even null); null means absent; otherwise
//    an object of string values, a repeated key keeps its first place and its last value;
//  - every other member is buffered (serde's Content: full syntax, numbers converted, recursion
//    limit 128) and mapped after the root's closing brace, so the first tensor (in document order)
//    that fails to map reports its first failure at the position just past that brace; a syntax
//    error anywhere in the root wins over it; trailing text is checked last;
//  - a tensor is an object (dtype/shape/data_offsets each at most once, others ignored, none
//    missing) or an array of exactly those three values; a repeated name keeps the last one, but
//    every occurrence must deserialize;
//  - dtype: a variant name, or an object {"NAME": null} with exactly one member;
//  - shape/offsets: integers in [0, 2^64) (serde_json's u64: no sign, fraction or exponent; -0 is
//    an f64); data_offsets exactly two.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "safetensors/name_order.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::st::detail {

// pre: text is UTF-8. out.tensors is left in document order with repeated names kept, offsets
// unvalidated; out.metadata (merged) and out.has_metadata are set. Tensor names view `text` (or
// out.storage, for names with escapes): the caller keeps text alive or copies them.
// order (optional, empty): given each tensor's name as it is read, so that order->sort(out.tensors)
// needs no second pass over the names; no more names after one with escapes (sort() then sees the
// count differ and reads the table's names).
// @return Ok, or StInvalidHeaderDeserialization with serde_json's message and position.
Status read_header(std::string_view text, Header& out, NameOrder* order = nullptr);

// read_header, then the tensors in name order with repeated names resolved (sort_by_name), and
// out.name_lcp where the sort knows it.
Status deserialize_header(std::string_view text, Header& out);

// parse_prefix(), with names left viewing `prefix` when owner keeps its bytes alive (File's mapping:
// nothing copied); a null owner copies them (as parse_prefix does).
Result<Header> parse_prefix_viewing(std::span<const std::uint8_t> prefix, std::uint64_t file_size,
                                    std::shared_ptr<const void> owner);

}  // namespace w4a8::st::detail
