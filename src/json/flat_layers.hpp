// json.loads of a _quantization_metadata document in the shape writers give it
// ({"format_version": "1.0", "layers": {"<prefix>": {<flat marker>}, ...}}), read in one pass without
// building it: each layer comes back as a view of its key and of its marker's text. The general
// parser builds an object per layer (about nine allocations each); here there are none per layer,
// and a caller can parse each distinct marker text once. Anything else returns nullopt and is left
// to the general parser, so every error and every unusual document still comes from one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace w4a8::json {

// One layer: where its key and its marker's text are in the document, as offsets, so that a layer
// takes 16 bytes (a hostile document of minimal layers, `"k":{}` each, stays near its own size).
struct FlatLayer {
  std::uint32_t key_at, key_size;        // the member's key: plain, so its text is the key itself
  std::uint32_t marker_at, marker_size;  // its value's text, '{' to '}' (loads_flat_object accepts it)

  // pre: text is the document this layer was read from.
  std::string_view key(std::string_view text) const { return {text.data() + key_at, key_size}; }
  std::string_view marker(std::string_view text) const { return {text.data() + marker_at, marker_size}; }
};

// Accepts: whitespace, '{', members "key": value separated by ',', '}', whitespace, the end, with
//  - at most kFlatMembers members, keys plain as loads_flat_object's (printable ASCII, no escapes)
//    and none repeated, one of them "layers";
//  - the value of "layers" an object of any number of members "key": flat object (loads_flat_object's
//    shape), with plain keys, none repeated;
//  - every other value a flat object or one of its scalars;
//  - a text shorter than 4 GiB (the offsets are 32-bit).
// post: when it answers, loads_str(text) is an object whose "layers" member is an object with exactly
// these members in this order, each value equal to loads_flat_object(marker).
std::optional<std::vector<FlatLayer>> read_flat_layers(std::string_view text);

}  // namespace w4a8::json
