// The Comfy layer formats as data (comfy_formats.def): marker name, required and optional tensor
// suffixes, the defaults of absent marker keys, and the section-4 rule. The validator's format
// dispatch and required-tensor lists read this table; the CLI prints a layer's tensors from it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "core/result.hpp"
#include "json/value.hpp"

namespace w4a8::validate {

class Marker;
namespace detail {
struct State;
}

enum class ComfyFormatId : std::uint8_t {
#define W4A8_COMFY_FORMAT(id, name, required, optional, group_size, convrot_groupsize, rule) id,
#include "validate/comfy_formats.def"
#undef W4A8_COMFY_FORMAT
  kCount
};

// A short fixed list of tensor suffixes (".weight", ...), usable in constexpr tables.
struct Suffixes {
  std::array<std::string_view, 4> items{};
  std::size_t count = 0;
  constexpr const std::string_view* begin() const { return items.data(); }
  constexpr const std::string_view* end() const { return items.data() + count; }
  constexpr std::size_t size() const { return count; }
};
constexpr Suffixes suffixes(std::initializer_list<std::string_view> list) {
  Suffixes s;
  for (std::string_view x : list) s.items[s.count++] = x;  // at most 4 (a compile error beyond)
  return s;
}

// A section-4 rule on layer `layer` of the validator's state. @return Ok, or the rule's errors.
using ComfyRule = Status (*)(detail::State&, std::size_t layer);

struct ComfyFormat {
  ComfyFormatId id;
  std::string_view name;        // the marker's "format" value, matched exactly (case-sensitive)
  Suffixes required;            // checked in section 4 (sglang.missing_tensors lists the absent ones)
  Suffixes optional;            // read by the rule (or --strict) when present
  long long group_size;         // int() of an absent "group_size" (0: not a key of this format)
  long long convrot_groupsize;  // int() of an absent "convrot_groupsize" (0: not a key of this format)
  ComfyRule rule;               // nullptr: section 4 skips the format
};

std::span<const ComfyFormat> comfy_formats();
const ComfyFormat& comfy_format(ComfyFormatId id);
// The row whose name is `format`; nullptr when none.
const ComfyFormat* find_comfy_format(std::string_view format);
// The row a marker names: marker["format"] when it is a string equal to a row's name; else nullptr
// (upstream compares with ==, so numbers, other case, or a missing key name no format).
const ComfyFormat* comfy_format_of(const json::Value& marker);
// The same for a recorded marker, without parsing one kept as text (such a marker names no format).
const ComfyFormat* comfy_format_of(const Marker& marker);

}  // namespace w4a8::validate
