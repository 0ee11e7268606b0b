#include "validate/comfy_formats.hpp"

#include "validate/marker.hpp"
#include "validate/state.hpp"

namespace w4a8::validate {
namespace {

using namespace detail;  // the rule column names detail:: functions

#define W4A8_SUFFIXES(...) suffixes({__VA_ARGS__})
constexpr ComfyFormat kFormats[] = {
#define W4A8_COMFY_FORMAT(id, name, required, optional, group_size, convrot_groupsize, rule) \
  {ComfyFormatId::id, name, required, optional, group_size, convrot_groupsize, rule},
#include "validate/comfy_formats.def"
#undef W4A8_COMFY_FORMAT
};
#undef W4A8_SUFFIXES
static_assert(std::size(kFormats) == static_cast<std::size_t>(ComfyFormatId::kCount));

constexpr bool ids_in_order() {
  for (std::size_t i = 0; i < std::size(kFormats); ++i)
    if (static_cast<std::size_t>(kFormats[i].id) != i) return false;
  return true;
}
static_assert(ids_in_order());

}  // namespace

std::span<const ComfyFormat> comfy_formats() { return kFormats; }

const ComfyFormat& comfy_format(ComfyFormatId id) { return kFormats[static_cast<std::size_t>(id)]; }

const ComfyFormat* find_comfy_format(std::string_view format) {
  for (const ComfyFormat& f : kFormats)
    if (f.name == format) return &f;
  return nullptr;
}

const ComfyFormat* comfy_format_of(const json::Value& marker) {
  const json::Value* f = marker.get("format");
  return f != nullptr && f->is_string() ? find_comfy_format(f->text) : nullptr;
}

const ComfyFormat* comfy_format_of(const Marker& marker) {
  return marker.is_text() ? nullptr : comfy_format_of(marker.value());
}

}  // namespace w4a8::validate
