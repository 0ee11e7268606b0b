// Section 4 of validator.md for float8_e4m3fn, convrot_w4a4, nvfp4 and int8_tensorwise layers,
// checks in upstream's order.
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {

Status check_float8(State& s, std::size_t layer) {
  Layer& l = s.report.layers[layer];
  const bool static_scale = s.meta(layer, ".input_scale") != nullptr;
  l.marker.edit(kDerivedKeysMax).set("_activation_scheme", json::Value::from_string(static_scale ? "static" : "dynamic"));
  return Ok{};
}

Status check_w4a4(State& s, std::size_t layer) {
  const Layer& l = s.report.layers[layer];
  const st::Name& p = l.prefix;
  const TensorMeta& weight = *s.meta(layer, ".weight");
  const TensorMeta& scale = *s.meta(layer, ".weight_scale");
  if (weight.dtype != st::Dtype::I8 || scale.dtype != st::Dtype::F32)
    return make_error(ErrorKind::SgW4a4Dtypes,
                      {py::repr_str(p, s.opt.python), st::dtype_name(weight.dtype), st::dtype_name(scale.dtype)});
  if (weight.shape.size() != 2 || !shape_is(scale.shape, {weight.shape[0]}))
    return make_error(ErrorKind::SgW4a4Shapes,
                      {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape), py::repr_shape(scale.shape)});
  const u128 k = u128{weight.shape[1]} * 2;
  const json::Value* cv = l.marker.get("convrot_groupsize");
  const long long absent = comfy_format(ComfyFormatId::W4a4).convrot_groupsize;
  Result<py::BigInt> c = py::to_int_or(cv, absent, s.opt.python);
  if (!c.ok()) return std::move(c).error();
  long long cg = 0;
  if (!c->to_i64(cg) || (cg != 16 && cg != 64 && cg != 256))
    return make_error(ErrorKind::SgW4a4ConvrotGroupsize, {py::repr_str(p, s.opt.python), c->text});
  if (k % 64 != 0 || k % static_cast<unsigned>(cg) != 0)
    return make_error(ErrorKind::SgW4a4InputSize, {py::repr_str(p, s.opt.python), u128_to_string(k), c->text});
  return Ok{};
}

Status check_nvfp4(State& s, std::size_t layer) {
  Layer& l = s.report.layers[layer];
  const st::Name& p = l.prefix;
  const TensorMeta& weight = *s.meta(layer, ".weight");
  const TensorMeta& scale = *s.meta(layer, ".weight_scale");
  const TensorMeta& scale_2 = *s.meta(layer, ".weight_scale_2");
  if (weight.dtype != st::Dtype::U8 || scale.dtype != st::Dtype::F8_E4M3)
    return make_error(ErrorKind::SgNvfp4Dtypes,
                      {py::repr_str(p, s.opt.python), st::dtype_name(weight.dtype), st::dtype_name(scale.dtype)});
  if (scale_2.dtype != st::Dtype::F32 || !(scale_2.shape.empty() || shape_is(scale_2.shape, {1})))
    return make_error(ErrorKind::SgNvfp4Scale2,
                      {py::repr_str(p, s.opt.python), st::dtype_name(scale_2.dtype), py::repr_shape(scale_2.shape)});
  if (weight.shape.size() != 2)
    return make_error(ErrorKind::SgNvfp4Rank, {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape)});
  const u128 k = u128{weight.shape[1]} * 2;
  if (k % 16 != 0 || !shape_is(scale.shape, {weight.shape[0], static_cast<std::uint64_t>(k / 16)}))
    return make_error(ErrorKind::SgNvfp4Shapes,
                      {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape), py::repr_shape(scale.shape)});
  const TensorMeta* pre = s.meta(layer, ".pre_quant_scale");
  s.derived.set_bool(l.marker, "_has_pre_quant_scale", pre != nullptr);
  if (pre != nullptr) {
    const bool dtype_ok =
        pre->dtype == st::Dtype::BF16 || pre->dtype == st::Dtype::F16 || pre->dtype == st::Dtype::F32;
    // K may be 2^65 - 2, which no u64 dimension equals.
    const bool shape_ok = pre->shape.size() == 1 && u128{pre->shape[0]} == k;
    if (!dtype_ok || !shape_ok)
      return make_error(ErrorKind::SgNvfp4PreQuantScale,
                        {py::repr_str(p, s.opt.python), st::dtype_name(pre->dtype), py::repr_shape(pre->shape)});
  }
  return Ok{};
}

Status check_int8(State& s, std::size_t layer) {
  Layer& l = s.report.layers[layer];
  const st::Name& p = l.prefix;
  const TensorMeta& weight = *s.meta(layer, ".weight");
  const TensorMeta& scale = *s.meta(layer, ".weight_scale");
  if (weight.dtype == st::Dtype::I8 && scale.dtype == st::Dtype::F32 && scale.shape.empty()) {
    if (weight.shape.size() != 2)
      return make_error(ErrorKind::SgTensorwiseRank, {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape)});
    s.derived.set_bool(l.marker, "_is_tensorwise_scalar", true);
    return Ok{};
  }
  if (weight.dtype != st::Dtype::I8 || scale.dtype != st::Dtype::F32)
    return make_error(ErrorKind::SgInt8Dtypes,
                      {py::repr_str(p, s.opt.python), st::dtype_name(weight.dtype), st::dtype_name(scale.dtype)});
  if (weight.shape.size() != 2 || !shape_is(scale.shape, {weight.shape[0], 1}))
    return make_error(ErrorKind::SgInt8Shapes,
                      {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape), py::repr_shape(scale.shape)});
  s.derived.set_bool(l.marker, "_is_rowwise", true);
  return Ok{};
}

}  // namespace w4a8::validate::detail
