// Internal: the reference deserializer of a header, kept as an independent second implementation
// for differential tests and fuzzing (production uses hash_metadata.hpp). It builds a DOM with
// json::parse_serde, then maps it onto HashMetadata with its own scan of the text for serde_json's
// positions. Slow (a DOM of copied strings, ~10x the header) but simple; same contract and
// messages as detail::deserialize_header.
#pragma once

#include <string_view>

#include "core/result.hpp"
#include "json/value.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::st::detail {

// Maps a parse_serde DOM onto the crate's HashMetadata (rules: hash_metadata.hpp).
// text: the header the root was parsed from (for " at line L column C"); empty: no position.
// out.tensors is left in name order, unvalidated.
// @return Ok, or StInvalidHeaderDeserialization with serde_json's message.
Status map_header(const json::Value& root, std::string_view text, Header& out);
inline Status map_header(const json::Value& root, Header& out) { return map_header(root, {}, out); }

// serde_json::from_str::<HashMetadata>(text) on UTF-8 text: parse_serde + map_header, with the
// crate's order of failures.
// @return Ok, or StInvalidHeaderDeserialization with serde_json's message and position.
Status deserialize_header_reference(std::string_view text, Header& out);

}  // namespace w4a8::st::detail
