#include "gen/properties.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>

#include "gen/byte_order.hpp"
#include "gen/in_memory.hpp"
#include "gen/model.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "py/int.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "validate/layers.hpp"

namespace w4a8::gen {

bool same_json(const json::Value& a, const json::Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case json::Kind::Null: return true;
    case json::Kind::Bool: return a.boolean == b.boolean;
    case json::Kind::Int: case json::Kind::String: return a.text == b.text;
    case json::Kind::Float:
      return (std::isnan(a.number) && std::isnan(b.number)) || std::bit_cast<std::uint64_t>(a.number) == std::bit_cast<std::uint64_t>(b.number);
    case json::Kind::Array:
      return a.items.size() == b.items.size() && std::equal(a.items.begin(), a.items.end(), b.items.begin(), same_json);
    case json::Kind::Object:
      if (a.members.size() != b.members.size()) return false;
      for (std::size_t i = 0; i < a.members.size(); ++i)
        if (a.members[i].first != b.members[i].first || !same_json(a.members[i].second, b.members[i].second)) return false;
      return true;
  }
  return false;
}

Result<validate::Report> run_validator(const Scenario& s) {
  auto bytes = serialize(lower(s));
  if (!bytes) return std::move(bytes).error();
  std::vector<validate::InputFile> files;
  for (std::size_t i = 0; i < s.files.size(); ++i) files.push_back({s.files[i].path, (*bytes)[i]});
  return validate::inspect(files, s.options);
}

namespace {

std::string show_error(const Error& e) { return std::string(e.code()) + " " + std::string(e.type()) + ": " + e.message; }

std::string show_layers(const std::vector<validate::Layer>& ls) {
  std::string out;
  for (const auto& l : ls) out += "\n    " + l.prefix + " = " + json::dump(l.marker);
  return out;
}

}  // namespace

std::string compare(const Expectation& want, const Result<validate::Report>& got) {
  if (!want.ok) {
    if (got.ok()) return "expected " + show_error(want.error) + "\n  got accepted:" + show_layers(got->layers);
    const Error& e = got.error();
    if (e.kind != want.error.kind || (want.message_exact && e.message != want.error.message))
      return "expected " + show_error(want.error) + "\n  got      " + show_error(e);
    return "";
  }
  if (!got.ok()) return "expected accepted, got " + show_error(got.error());
  const auto& ls = got->layers;
  auto mismatch = [&] {  // built only on failure (dump() of every marker is not cheap)
    std::string exp;
    for (const auto& [p, v] : want.layers) exp += "\n    " + p + " = " + json::dump(v);
    return "expected layers:" + exp + "\n  got layers:" + show_layers(ls);
  };
  if (ls.size() != want.layers.size()) return mismatch();
  const std::size_t ordered = ls.size() - want.unordered_tail;
  for (std::size_t i = 0; i < ls.size(); ++i) {
    if (i < ordered) {
      if (ls[i].prefix != want.layers[i].first || !same_json(ls[i].marker, want.layers[i].second)) return mismatch();
      continue;
    }
    bool found = false;
    for (std::size_t j = ordered; j < ls.size(); ++j)
      found |= ls[i].prefix == want.layers[j].first && same_json(ls[i].marker, want.layers[j].second);
    if (!found) return mismatch();
  }
  return "";
}

std::string check_verdict(const Scenario& s) { return compare(expect(s), run_validator(s)); }

bool defect_kind_matches(const Scenario& s, Defect d, ErrorKind k) {
  if (k == defect_kind(d)) return true;
  const auto tail = [](const MarkerDesc& m) { return m.group_size.tail != DigitTail::None; };
  return d == Defect::GroupSizeTooManyDigits && k == ErrorKind::PyIntInvalidLiteral &&
         std::any_of(s.markers.begin(), s.markers.end(), tail);
}

std::string check_defect_fires(const Scenario& s, const Expectation& want) {
  if (s.defects.size() != 1) return "";
  const Defect d = s.defects[0];
  const std::string under = " under sglang " + std::string(upstream::profile(s.options.sglang).version);
  // A chain too deep for 3.11 may be read by a later interpreter: the marker is then checked with
  // its extra member, and check_verdict judges what follows.
  if (d == Defect::MarkerTooDeep && !too_deep_for_python(s)) return "";
  if (fires_under(d, s.options.sglang)) {
    if (want.ok || !defect_kind_matches(s, d, want.error.kind))
      return "defect " + std::string(defect_name(d)) + " should produce " + std::string(error_info(defect_kind(d)).code) +
             under + "; the oracle predicts " + (want.ok ? std::string("acceptance") : show_error(want.error));
  } else if (!want.ok) {
    return "defect " + std::string(defect_name(d)) + " does not fire" + under + ", but the oracle predicts " +
           show_error(want.error);
  }
  return "";
}

std::string check_single_defect(const Scenario& s) {
  if (s.defects.size() != 1) return "";
  const Expectation want = expect(s);
  if (std::string r = check_defect_fires(s, want); !r.empty()) return r;
  return compare(want, run_validator(s));
}

std::string check_round_trip(const Scenario& s, const InMemoryCheckpoint* mem) {
  const Checkpoint c = lower(s);
  auto bytes = serialize(c);
  if (!bytes) return "serialize failed: " + show_error(bytes.error());
  for (std::size_t i = 0; i < c.files.size(); ++i) {
    const FileModel& f = c.files[i];
    if (f.edit.defect != Defect::kCount) continue;
    const auto& b = (*bytes)[i];
    auto h = st::parse(b);
    if (!h) return f.path + ": written file rejected: " + show_error(h.error());
    std::vector<const st::TensorSpec*> want;
    for (const auto& t : f.tensors) want.push_back(&t);
    std::sort(want.begin(), want.end(), [](auto* a, auto* b) { return a->name < b->name; });
    if (want.size() != h->tensors.size()) return f.path + ": tensor count differs";
    for (std::size_t k = 0; k < want.size(); ++k) {
      const st::TensorInfo& t = h->tensors[k];
      if (t.name != want[k]->name || t.dtype != want[k]->dtype || t.shape != want[k]->shape)
        return f.path + ": tensor " + want[k]->name + " read back as " + t.name;
      if (t.end - t.begin != want[k]->bytes.size() ||
          !std::equal(want[k]->bytes.begin(), want[k]->bytes.end(), b.begin() + static_cast<std::ptrdiff_t>(h->data_start() + t.begin)))
        return f.path + ": data of " + t.name + " differs";
    }
    if (h->has_metadata != f.metadata.has_value()) return f.path + ": __metadata__ presence differs";
    if (f.metadata) {
      auto a = *f.metadata, m = h->metadata;
      std::sort(a.begin(), a.end());
      std::sort(m.begin(), m.end());
      if (a != m) return f.path + ": metadata differs";
    }
    // (mem exists only when no file has a container edit, so every file gets here.)
    if (mem) {
      if (std::string e = compare_in_memory_file(mem->model()[i], b, *h); !e.empty()) return e;
    }
  }
  return "";
}

namespace {

// Verdicts compared up to layer order (Python equality of markers), for layout changes.
std::string compare_unordered(const Result<validate::Report>& a, const Result<validate::Report>& b) {
  if (a.ok() != b.ok()) return std::string("verdicts differ: ") + (a.ok() ? "accepted" : show_error(a.error())) + " vs " + (b.ok() ? "accepted" : show_error(b.error()));
  if (!a.ok()) return a.error() == b.error() ? "" : "errors differ: " + show_error(a.error()) + " vs " + show_error(b.error());
  std::map<std::string, const json::Value*, BytesLess> m;
  for (const auto& l : a->layers) m[l.prefix] = &l.marker.value();
  if (m.size() != b->layers.size()) return "layer sets differ";
  for (const auto& l : b->layers) {
    auto it = m.find(l.prefix);
    if (it == m.end() || !json::py_equal(*it->second, l.marker)) return "layer " + l.prefix + " differs";
  }
  return "";
}

// Whether a layout change may legitimately change the verdict (messages with paths, first-of-many,
// a prefix's second marker): the defect table's Layout column says which changes each defect survives.
bool keeps_verdict(const Scenario& s, DefectLayout change) {
  if (s.defects.size() > 1) return false;
  for (Defect d : s.defects) {
    const DefectLayout l = defect_info(d).layout;
    if (l == DefectLayout::Sensitive || (change == DefectLayout::Neutral && l != DefectLayout::Neutral)) return false;
  }
  return true;
}

}  // namespace

std::string check_sharding(const Scenario& s, ChoiceSource& src, const Result<validate::Report>* verdict) {
  if (!keeps_verdict(s, DefectLayout::Shard)) return "";
  Scenario t = s;
  const std::size_t extra = src.below(3);
  for (std::size_t i = 0; i < extra; ++i) t.files.push_back({"shard-" + std::to_string(i) + ".safetensors", false, {}, {}, false, {}, {}});
  for (auto& x : t.tensors) x.file = src.below(t.files.size());
  for (auto& m : t.markers)
    if (m.place == Place::Tensor) m.file = src.below(t.files.size());
  // Two tensor markers of one prefix in one file would be one tensor name twice: not a resharding.
  for (std::size_t i = 0; i < t.markers.size(); ++i)
    for (std::size_t j = i + 1; j < t.markers.size(); ++j)
      if (t.markers[i].place == Place::Tensor && t.markers[j].place == Place::Tensor &&
          t.markers[i].prefix == t.markers[j].prefix && t.markers[i].file == t.markers[j].file)
        return "";
  std::optional<Result<validate::Report>> own;  // (a ?: of *verdict and a new result would copy the report)
  const Result<validate::Report>& before = verdict ? *verdict : own.emplace(run_validator_fast(s));
  const std::string r = compare_unordered(before, run_validator_fast(t));
  return r.empty() ? "" : "resharding changed the verdict: " + r + "\n  resharded:\n" + describe(t);
}

std::string check_marker_placement(const Scenario& s, ChoiceSource& src, const Result<validate::Report>* verdict) {
  if (!keeps_verdict(s, DefectLayout::Neutral)) return "";
  // _quantization_metadata nests a marker two levels deeper: near the interpreter's nesting limit,
  // moving one there (or out) changes json.loads' verdict.
  const int limit = json_max_depth(s.options.python);
  for (const auto& m : s.markers)
    if (loads_outcome(m.doc, 0, limit) != loads_outcome(m.doc, 2, limit)) return "";
  Scenario t = s;
  // One marker a prefix (equal duplicates are Python-equal to the first, so dropping one is neutral).
  std::vector<MarkerDesc> kept;
  for (const auto& m : t.markers)
    if (std::none_of(kept.begin(), kept.end(), [&](const MarkerDesc& k) { return k.prefix == m.prefix; })) kept.push_back(m);
  const bool to_tensors = src.flip();
  for (auto& m : kept) {
    if (to_tensors && m.place != Place::Tensor) { m.place = Place::Tensor; m.encoding = Encoding::Utf8; m.dtype = st::Dtype::U8; }
    if (!to_tensors) m.place = Place::Metadata;
    m.file = src.below(t.files.size());
  }
  t.markers = std::move(kept);
  // The reference: the same deduplication with the placement untouched (s itself when it has one
  // marker a prefix, whose verdict the caller may have).
  std::optional<Scenario> u;
  if (t.markers.size() != s.markers.size()) {
    u = s;
    u->markers.clear();
    for (const auto& m : s.markers)
      if (std::none_of(u->markers.begin(), u->markers.end(), [&](const MarkerDesc& k) { return k.prefix == m.prefix; })) u->markers.push_back(m);
  }
  std::optional<Result<validate::Report>> own;  // (a ?: of *verdict and a new result would copy the report)
  const Result<validate::Report>& before = !u && verdict ? *verdict : own.emplace(run_validator_fast(u ? *u : s));
  const std::string r = compare_unordered(before, run_validator_fast(t));
  return r.empty() ? "" : std::string("moving markers to ") + (to_tensors ? "tensors" : "metadata") + " changed the verdict: " + r + "\n  moved:\n" + describe(t);
}

std::string check_strict_contract(const Scenario& s, const Result<validate::Report>* verdict) {
  if (!s.options.strict) return "";
  std::optional<Result<validate::Report>> own;  // (a ?: of *verdict and a new result would copy the report)
  const Result<validate::Report>& got = verdict ? *verdict : own.emplace(run_validator(s));
  if (!got.ok()) return "";
  for (const auto& l : got->layers) {
    const json::Value* f = l.marker.get("format");
    if (!f || !f->is_string() || f->text != "asym_w4a8_int8") continue;
    const validate::TensorMeta* w = got->find(l.prefix + ".weight");
    if (!w || w->shape.size() != 2) return l.prefix + ": accepted without a 2-D weight";
    const unsigned __int128 n = w->shape[0], k = static_cast<unsigned __int128>(w->shape[1]) * 2;
    const json::Value* gv = l.marker.get("group_size");
    const json::Value* rv = l.marker.get("convrot_groupsize");
    const json::Value* cv = l.marker.get("convrot");
    auto g = py::to_int_or(gv, 16);
    auto r = py::to_int_or(rv, 256);
    long long G = 0, R = 0;
    if (!g || !r || !g->to_i64(G) || !r->to_i64(R)) return l.prefix + ": accepted with a group size outside int64";
    const bool g_ok = G >= 4 && (16 % G == 0 || G % 16 == 0);
    const bool r_ok = R >= 4 && std::has_single_bit(static_cast<unsigned long long>(R)) && std::countr_zero(static_cast<unsigned long long>(R)) % 2 == 0;
    if (n == 0 || k == 0 || k % 16 || !g_ok || !r_ok || k % static_cast<unsigned>(G) || k % static_cast<unsigned>(R) ||
        (cv && !(cv->kind == json::Kind::Bool && cv->boolean)))
      return l.prefix + ": --strict accepted a layer outside the kernel contract (N=" + std::to_string(static_cast<unsigned long long>(n)) +
             ", K=" + std::to_string(static_cast<unsigned long long>(k)) + ", G=" + std::to_string(G) + ", R=" + std::to_string(R) + ")";
  }
  return "";
}

std::string check_layers(const Scenario& s, const Result<validate::Report>* verdict, const InMemoryCheckpoint* mem,
                         ChoiceSource* pick) {
  std::vector<std::vector<std::uint8_t>> bytes;
  std::vector<validate::InputFile> files;
  if (mem == nullptr) {
    auto b = serialize(lower(s));
    if (!b) return "";
    bytes = std::move(*b);
    for (std::size_t i = 0; i < s.files.size(); ++i) files.push_back({s.files[i].path, bytes[i]});
  }
  auto inspect = [&](const validate::Options& o) { return mem ? mem->inspect(o) : validate::inspect(files, o); };
  std::optional<Result<validate::Report>> own;
  const Result<validate::Report>& whole = verdict ? *verdict : own.emplace(inspect(s.options));
  const auto layers = mem ? validate::inspect_layers_parsed(mem->files(), s.options) : validate::inspect_layers(files, s.options);
  if (!layers.ok()) {
    if (whole.ok() || !(whole.error() == layers.error())) return "inspect_layers failed: " + show_error(layers.error());
    return "";
  }
  const Status overall = layers->overall();
  if (overall.ok() != whole.ok() || (!whole.ok() && !(overall.error() == whole.error())))
    return "inspect_layers' overall() is " + (overall.ok() ? std::string("ok") : show_error(overall.error())) +
           ", inspect() says " + (whole.ok() ? std::string("ok") : show_error(whole.error()));
  if (whole.ok()) {
    const auto& a = whole->layers;
    const auto& b = layers->report.layers;
    if (a.size() != b.size()) return "inspect_layers reports another layer count";
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i].prefix != b[i].prefix || !same_json(a[i].marker, b[i].marker)) return "inspect_layers differs at " + a[i].prefix;
  }
  // Each layer alone (a few of them, or the one picked: every only_layer run repeats sections 1-3).
  const std::size_t n = layers->verdicts.size();
  const std::size_t first = pick && n > 0 ? pick->below(n) : 0;
  const std::size_t end = pick ? std::min(n, first + 1) : std::min<std::size_t>(n, 4);
  for (std::size_t i = first; i < end; ++i) {
    validate::Options o = s.options;
    o.only_layer = layers->report.layers[i].prefix;
    const auto one = inspect(o);
    const validate::LayerVerdict& v = layers->verdicts[i];
    const Status want = !layers->checkpoint.ok() ? layers->checkpoint : !v.upstream.ok() ? v.upstream : v.strict;
    if (one.ok() != want.ok() || (!one.ok() && !(one.error() == want.error())))
      return "only_layer " + o.only_layer + " gives " + (one.ok() ? std::string("ok") : show_error(one.error())) +
             ", its per-layer verdict is " + (want.ok() ? std::string("ok") : show_error(want.error()));
  }
  return "";
}

GenConfig config_variant(ConfigVariant v) {
  GenConfig c;
  c.recursion_boundary = true;  // every engine using these configs is judged by our oracle
  c.vary_python = true;
  c.digit_tails = true;
  switch (v) {
    case ConfigVariant::Valid: c.min_defects = c.max_defects = 0; break;
    case ConfigVariant::OneDefect: c.min_defects = c.max_defects = 1; break;
    case ConfigVariant::Several: c.min_defects = 2; c.max_defects = 4; break;
    default: break;
  }
  return c;
}

}  // namespace w4a8::gen
