#include "cli/layer_marker.hpp"

#include "py/int.hpp"
#include "py/repr.hpp"
#include "validate/comfy_formats.hpp"

namespace w4a8::cli {
namespace {

const validate::ComfyFormat& w4a8_format() { return validate::comfy_format(validate::ComfyFormatId::W4a8); }

Result<std::int64_t> marker_int(const validate::Layer& l, const char* key, long long dflt, py::Version pv) {
  const json::Value* v = l.marker.get(key);
  if (v == nullptr) return std::int64_t(dflt);
  auto b = py::to_int(*v, pv);
  W4A8_TRY(b);
  long long out = 0;
  if (!b->to_i64(out)) return make_error(ErrorKind::ConsumerIntRange, {py::repr_str(l.prefix, pv), key, b->text});
  return std::int64_t(out);
}

}  // namespace

bool is_w4a8(const validate::Layer& l) { return validate::comfy_format_of(l.marker) == &w4a8_format(); }

Result<MarkerGroups> marker_groups(const validate::Layer& l, py::Version pv) {
  auto g = marker_int(l, "group_size", w4a8_format().group_size, pv);
  W4A8_TRY(g);
  auto r = marker_int(l, "convrot_groupsize", w4a8_format().convrot_groupsize, pv);
  W4A8_TRY(r);
  return MarkerGroups{*g, *r};
}

}  // namespace w4a8::cli
