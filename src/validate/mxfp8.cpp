// Section 2 of validator.md: when every global quant_format is "mxfp8", each quantized-weight prefix
// must be an F8_E4M3 [rows, cols] weight with a U8 [rows, cols / 32] weight_scale; it then gets a
// {"format": "mxfp8"} marker unless it has one.
// Upstream walks a Python set, whose order is hash-randomized per process: with several bad layers
// it reports a random one. We walk the prefixes sorted (deterministic; docs/validator.md).
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {

Status apply_mxfp8(State& s) {
  if (s.formats.size() != 1 || *s.formats.begin() != "mxfp8") return Ok{};
  for (std::string_view prefix : s.quantized) {
    const TensorMeta* weight = s.meta(prefix, ".weight");  // present: the prefix came from it
    const TensorMeta* scale = s.meta(prefix, ".weight_scale");
    const bool ok = weight != nullptr && weight->dtype == st::Dtype::F8_E4M3 &&
                    weight->shape.size() == 2 && weight->shape[1] % 32 == 0 &&
                    meta_is(scale, st::Dtype::U8, {weight->shape[0], weight->shape[1] / 32});
    if (!ok)
      return make_error(ErrorKind::SgMxfp8Incompatible,
                        {py::repr_str(prefix, s.opt.python), meta_repr(weight), meta_repr(scale)});
    if (!s.has_layer(prefix)) {
      json::Value marker = json::Value::object();
      marker.set("format", json::Value::from_string("mxfp8"));
      W4A8_TRY(record_marker(s, prefix, Marker(std::move(marker))));
    }
  }
  return Ok{};
}

}  // namespace w4a8::validate::detail
