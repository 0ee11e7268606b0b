// json.loads of the shape every Comfy marker has, a flat object of plain scalars
// ({"format": "asym_w4a8_int8", "group_size": 64, "convrot": true}), read in one pass without the
// general parser's machinery. Anything else returns nullopt and is left to the general parser, so
// every error and every unusual value still comes from one place.
#pragma once

#include <optional>
#include <string_view>

#include "json/value.hpp"

namespace w4a8::json {

// Accepts: whitespace, '{', members "key": value separated by ',', '}', whitespace, the end; keys and
// string values of printable ASCII without escapes; values true, false, null, strings, and ints
// (-?(0|[1-9][0-9]*), up to kFlatIntDigits digits); at most kFlatMembers members, no repeated key.
// post: when it returns a value, it equals what loads_str(text) returns for that text (and, since
// every accepted byte is ASCII, what loads_bytes returns for those bytes), with room for `spare` more
// members (a caller that adds keys then does not move the members to a larger block).
std::optional<Value> loads_flat_object(std::string_view text, std::size_t spare = 0);

inline constexpr std::size_t kFlatMembers = 16;   // beyond: the general parser (it indexes keys)
inline constexpr std::size_t kFlatIntDigits = 64;  // far below Python's 4300-digit limit

}  // namespace w4a8::json
