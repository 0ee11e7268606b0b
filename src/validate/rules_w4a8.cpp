// Section 4 of validator.md for asym_w4a8_int8 layers, checks in upstream's order.
#include "py/repr.hpp"
#include "validate/state.hpp"

namespace w4a8::validate::detail {

namespace {

// int(marker.get("group_size", 16)), which must be >= 4. The marker object is usually the previous
// layer's: its result is kept (errors are not; they end the walk).
Result<const GroupSize*> group_size(State& s, const Layer& l) {
  if (s.group_fact.for_(l.marker)) return &s.group_fact.value;
  const long long absent = comfy_format(ComfyFormatId::W4a8).group_size;
  Result<py::BigInt> group = py::to_int_or(l.marker.get("group_size"), absent, s.opt.python);
  if (!group.ok()) return std::move(group).error();
  if (group->compare(4) < 0)
    return make_error(ErrorKind::SgW4a8GroupSize, {py::repr_str(l.prefix, s.opt.python), group->text});
  GroupSize g{std::move(group).value()};
  if (!small_nonneg(g.value, g.small)) g.small = 0;  // > 2^119: K // group is 0 for any K < 2^65
  s.group_fact.remember(l.marker, std::move(g));
  return &s.group_fact.value;
}

}  // namespace

Status check_w4a8(State& s, std::size_t layer) {
  Layer& l = s.report.layers[layer];
  const st::Name& p = l.prefix;
  const TensorMeta& weight = *s.meta(layer, ".weight");  // presence checked by the caller
  const TensorMeta& s_rel = *s.meta(layer, ".weight_s_rel");
  const TensorMeta& channel = *s.meta(layer, ".weight_s_channel");

  Result<const GroupSize*> group = group_size(s, l);
  if (!group.ok()) return std::move(group).error();
  if (weight.dtype != st::Dtype::I8 || s_rel.dtype != st::Dtype::F8_E4M3)
    return make_error(ErrorKind::SgW4a8Dtypes,
                      {py::repr_str(p, s.opt.python), st::dtype_name(weight.dtype), st::dtype_name(s_rel.dtype)});
  if (channel.dtype != st::Dtype::F32)
    return make_error(ErrorKind::SgW4a8ChannelDtype, {py::repr_str(p, s.opt.python), st::dtype_name(channel.dtype)});
  if (weight.shape.size() != 2)
    return make_error(ErrorKind::SgW4a8Rank, {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape)});

  const std::uint64_t rows = weight.shape[0];
  const u128 k = u128{weight.shape[1]} * 2;  // may exceed 2^64
  // K // group_size: K < 2^65 and group >= 4, so < 2^63; a group of 2^120 or more gives 0.
  const u128 g = (*group)->small;
  const std::uint64_t groups = g == 0 ? 0 : static_cast<std::uint64_t>(k / g);
  if (!shape_is(s_rel.shape, {rows, groups}) || !shape_is(channel.shape, {rows}))
    return make_error(ErrorKind::SgW4a8Shapes, {py::repr_str(p, s.opt.python), py::repr_shape(weight.shape),
                                                py::repr_shape(s_rel.shape), py::repr_shape(channel.shape)});

  const TensorMeta* codebook = s.meta(layer, ".weight_codebook");
  const TensorMeta* correction = s.meta(layer, ".weight_correction");
  s.derived.set_bool(l.marker, "_has_codebook", codebook != nullptr);
  s.derived.set_bool(l.marker, "_has_correction", correction != nullptr);
  if (codebook != nullptr && !meta_is(codebook, st::Dtype::F32, {16}))
    return make_error(ErrorKind::SgW4a8Codebook, {py::repr_str(p, s.opt.python)});
  if (correction != nullptr && !meta_is(correction, st::Dtype::F32, {groups, rows}))
    return make_error(ErrorKind::SgW4a8Correction, {py::repr_str(p, s.opt.python)});
  if (s.group_sizes.size() < s.report.layers.size()) s.group_sizes.resize(s.report.layers.size());
  s.group_sizes[layer] = (*group)->value;
  return Ok{};
}

}  // namespace w4a8::validate::detail
