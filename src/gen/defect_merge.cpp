// Injectors for the Merge family: a prefix's marker recorded a second time (validator.md "Upstream
// versions"). Each builds the second marker from an editable first one and places it elsewhere (the
// other place or another file), so sglang's merge rule decides the verdict.
#include <algorithm>
#include <limits>

#include "gen/defect_edit.hpp"

namespace w4a8::gen::edit {
namespace {

bool has_key(const std::vector<std::pair<std::string, JsonDoc>>& fields, std::string_view key) {
  for (const auto& [k, v] : fields)
    if (k == key) return true;
  return false;
}

// What int() makes of a part's own keys: the whole marker's outcomes for keys it kept, defaults else.
void outcomes_for(MarkerDesc& part, const MarkerDesc& whole) {
  part.group_size = has_key(part.fields, "group_size") ? whole.group_size : IntOutcome{true, "16", {}, {}};
  part.convrot_groupsize =
      has_key(part.fields, "convrot_groupsize") ? whole.convrot_groupsize : IntOutcome{true, "256", {}, {}};
  part.convrot = has_key(part.fields, "convrot") ? whole.convrot : std::nullopt;
}

// A random editable marker with at least `min_fields` members.
MarkerRef pick_editable(Scenario& s, ChoiceSource& src, std::size_t min_fields) {
  std::vector<std::size_t> ms;
  for (std::size_t i = 0; i < s.markers.size(); ++i)
    if (editable(s.markers[i]) && s.markers[i].fields.size() >= min_fields) ms.push_back(i);
  if (ms.empty()) return {};
  return {s, ms[src.below(ms.size())]};
}

// Places m (a new marker of an existing prefix) in a random free place: UTF-8 U8 when a tensor.
bool place_copy(Scenario& s, MarkerDesc m, ChoiceSource& src) {
  m.doc = jobj(m.fields);
  m.place = src.flip() ? Place::Tensor : Place::Metadata;
  m.file = src.below(s.files.size());
  m.encoding = Encoding::Utf8;
  m.dtype = Dtype::U8;
  if (!place_free(s, m)) {
    m.place = m.place == Place::Tensor ? Place::Metadata : Place::Tensor;
    if (!place_free(s, m)) return false;
  }
  s.markers.push_back(std::move(m));
  return true;
}

JsonDoc nan_doc() { return jfloat("NaN", std::numeric_limits<double>::quiet_NaN()); }

}  // namespace

bool inject_merge(Scenario& s, Defect d, ChoiceSource& src) {
  switch (d) {
    case Defect::MarkerSubset: {  // e.g. a header marker that summarizes the tensor marker
      const MarkerRef m = pick_editable(s, src, 1);
      if (!m) return false;
      MarkerDesc c = *m;
      const std::size_t drop = src.below(c.fields.size());  // at least one key goes
      c.fields.clear();
      for (std::size_t i = 0; i < m->fields.size(); ++i)
        if (i != drop && src.flip()) c.fields.push_back(m->fields[i]);
      outcomes_for(c, *m);
      return place_copy(s, std::move(c), src);
    }
    case Defect::MarkerExtraKey: {  // one more key, unknown or one of upstream's derived keys
      const MarkerRef m = pick_editable(s, src, 0);
      if (!m) return false;
      const std::pair<std::string, JsonDoc> extra[] = {
          {"comment", jstr("calibrated")},      {"_has_codebook", jbool(true)},
          {"_has_codebook", jstr("yes")},       {"_has_correction", jbool(false)},
          {"_is_rowwise", jbool(true)},         {"_activation_scheme", jstr("static")},
          {"_has_pre_quant_scale", jbool(true)}, {"quant_version", jint(2)},
          {"calib", jarr({nan_doc(), jint(1)})}};
      const auto& [key, value] = extra[src.below(std::size(extra))];
      if (has_key(m->fields, key)) return false;
      MarkerDesc c = *m;
      c.fields.insert(c.fields.begin() + static_cast<std::ptrdiff_t>(src.below(c.fields.size() + 1)), {key, value});
      outcomes_for(c, *m);
      return place_copy(s, std::move(c), src);
    }
    case Defect::MarkerSplit: {  // the keys shared out between two places (some may be in both)
      const MarkerRef m = pick_editable(s, src, 2);
      if (!m) return false;
      const MarkerDesc whole = *m;
      const std::size_t n = whole.fields.size();
      const std::size_t only_a = src.below(n), only_b = (only_a + 1 + src.below(n - 1)) % n;
      std::vector<std::pair<std::string, JsonDoc>> a, b;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t where = i == only_a ? 0 : i == only_b ? 1 : src.below(3);  // 2: both
        if (where != 1) a.push_back(whole.fields[i]);
        if (where != 0) b.push_back(whole.fields[i]);
      }
      m->fields = std::move(a);
      m->doc = jobj(m->fields);
      outcomes_for(*m, whole);
      MarkerDesc c = whole;
      c.fields = std::move(b);
      outcomes_for(c, whole);
      return place_copy(s, std::move(c), src);
    }
    case Defect::MarkerNanTwice: {  // equal markers whose key holds a bare NaN
      const MarkerRef m = pick_editable(s, src, 0);
      if (!m || has_key(m->fields, "nan_scale")) return false;
      const std::string prefix = m->prefix;
      if (!set_field(s, prefix, "nan_scale", nan_doc())) return false;  // every marker of the prefix
      MarkerDesc c = *markers_of(s, prefix).front();
      if (src.flip()) std::reverse(c.fields.begin(), c.fields.end());
      return place_copy(s, std::move(c), src);
    }
    default: return false;
  }
}

}  // namespace w4a8::gen::edit
