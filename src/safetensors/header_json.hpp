// Internal: maps the serde-dialect JSON of a header onto the crate's HashMetadata, as serde's derived
// Deserialize does (`__metadata__`: Option<HashMap<String, String>>, every other key a flattened
// TensorInfo {dtype, shape: Vec<usize>, data_offsets: (usize, usize)}), with serde_json's messages.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "json/value.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::st::detail {

// Rules learnt from safetensors 0.8.0 (see tests/safetensors/header_json_test.cpp):
//  - the root must be an object; `__metadata__` at most once (even when null); null means absent;
//    otherwise an object of string values, a repeated key keeps the last value;
//  - a tensor is an object (dtype/shape/data_offsets each at most once, others ignored, none
//    missing) or an array of exactly those three values; a repeated tensor name keeps the last one,
//    but every occurrence must deserialize;
//  - dtype: a variant name, or an object {"NAME": null} with exactly one member;
//  - shape/offsets: integer literals in [0, 2^64) (no sign, fraction or exponent; -0 is a float);
//    data_offsets exactly two.
//  - `__metadata__` is deserialized while streaming (its errors come first, where serde_json stands);
//    tensors are buffered and checked after the root's closing brace (their errors point there).
// out.tensors is left in name order, unvalidated (offsets are checked by the caller).
// text: the header the root was parsed from (for " at line L column C"); empty: no position.
// @return Ok, or StInvalidHeaderDeserialization with serde_json's message.
Result<Ok> map_header(const json::Value& root, std::string_view text, Header& out);
inline Result<Ok> map_header(const json::Value& root, Header& out) { return map_header(root, {}, out); }

// serde_json::from_str::<HashMetadata>(text) on UTF-8 text: parse + map_header, with the crate's
// order of failures (a non-object root fails before any later syntax error).
// @return Ok, or StInvalidHeaderDeserialization with serde_json's message and position.
Result<Ok> deserialize_header(std::string_view text, Header& out);

// Rust's `{:?}` of a str: quoted; \" \\ \n \r \t \0 escaped, other control, non-printable and
// grapheme-extending code points as \u{hex} (rust_escape_table.inc, Unicode 14).
std::string rust_debug_quote(std::string_view utf8);

// serde_json's Display of an f64 in an Unexpected::Float (ryu-style shortest digits: positional
// for decimal exponents -5 < k <= 16, else "1e+16"/"1e-7"; ".0" added to integral values).
std::string serde_float_text(double d);

}  // namespace w4a8::st::detail
