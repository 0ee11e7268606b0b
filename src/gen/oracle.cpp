#include "core/checked.hpp"
#include "gen/oracle.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "gen/byte_order.hpp"
#include "gen/model.hpp"
#include "gen/repr_oracle.hpp"

namespace w4a8::gen {

namespace py = oracle_py;  // repr() by the oracle's own rules (repr_oracle.hpp), never src/py's

using st::Dtype;
using u128 = unsigned __int128;

std::string offset_gap_name(const Scenario& s, std::size_t file) {
  std::string last;
  for (const auto& t : s.tensors)
    if (t.file == file) last = t.name;
  for (const auto& m : s.markers)
    if (m.place == Place::Tensor && m.file == file) last = m.prefix + ".comfy_quant";
  return last.empty() ? "~gap" : last;
}

std::string meta_repr(const TensorDesc* t) {
  if (!t) return "None";
  return "(" + py::repr_str(st::dtype_name(t->dtype)) + ", " + py::repr_shape(t->shape) + ")";
}

namespace {

// Decimal text (non-negative) to u128; nullopt when it exceeds 2**128 - 1.
std::optional<u128> parse_u128(const std::string& d) {
  u128 v = 0;
  for (char c : d) {
    const u128 next = v * 10 + static_cast<unsigned>(c - '0');
    if (next / 10 != v) return std::nullopt;
    v = next;
  }
  return v;
}

bool below_4(const std::string& dec) { return dec[0] == '-' || (dec.size() == 1 && dec[0] < '4'); }

// floor(K / G) for G >= 4 given as decimal text.
u128 floordiv(u128 k, const std::string& g) {
  auto gv = parse_u128(g);
  return gv ? k / *gv : 0;
}

// The scenario's view of one tensor in checkpoint_meta.
struct Meta {
  Dtype dtype;
  std::vector<std::uint64_t> shape;
  const TensorDesc* desc;  // nullptr for marker tensors
  const MarkerDesc* marker = nullptr;  // a marker tensor, whose shape is found on first use
};

bool shape_is(const std::vector<std::uint64_t>& s, std::initializer_list<u128> want) {
  if (s.size() != want.size()) return false;
  std::size_t i = 0;
  for (u128 w : want)
    if (s[i++] != w) return false;
  return true;
}

std::string repr_shape(const std::vector<std::uint64_t>& s) { return py::repr_shape(s); }
std::string dt(Dtype d) { return std::string(st::dtype_name(d)); }

std::string torch_name(Dtype d) {
  switch (d) {
    case Dtype::BF16: return "BFloat16";
    case Dtype::F8_E4M3: return "Float8_e4m3fn";
    case Dtype::F8_E5M2: return "Float8_e5m2";
    case Dtype::F8_E4M3FNUZ: return "Float8_e4m3fnuz";
    case Dtype::F8_E5M2FNUZ: return "Float8_e5m2fnuz";
    case Dtype::F8_E8M0: return "Float8_e8m0fnu";
    default: return "";
  }
}

// int()'s and json.loads' digit-limit ValueError under Python v, by the oracle's own knowledge:
// 3.10 spells the limit "(4300)", 3.11 and later "(4300 digits)" (measured: docs/validator.md).
Error digits_error(const std::string& digits, py::Version v) {
  return make_error(ErrorKind::PyIntMaxStrDigits, {v == py::Version::Py310 ? "4300" : "4300 digits", digits});
}

// The first `n` code points of UTF-8 text (CPython's "%.200R" cuts the repr there).
std::string first_code_points(const std::string& s, std::size_t n) {
  std::size_t i = 0;
  for (; i < s.size(); ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && n-- == 0) break;
  return s.substr(0, i);
}

// An int() failure the generator recorded (its kind and argument), as Python v raises it. A digit
// string with something after it: which error comes first, by the oracle's own table of measured
// behaviour (DigitTail: 3.12 reads the whole string before it counts digits).
Error int_failure(const IntOutcome& o, py::Version v) {
  if (o.error == ErrorKind::PyIntMaxStrDigits) {
    const bool reads_to_end = v != py::Version::Py310 && v != py::Version::Py311;
    if (o.tail == DigitTail::InvalidFirst || (o.tail == DigitTail::ByVersion && reads_to_end))
      return make_error(ErrorKind::PyIntInvalidLiteral, {first_code_points(oracle_py::repr_str(o.text, v), 200)});
    return digits_error(o.arg, v);
  }
  return o.arg.empty() ? make_error(o.error) : make_error(o.error, {o.arg});
}

// The error of json.loads for d with outcome o (loads_outcome: its nesting where it is read), under Python v.
Error json_failure(const JsonDoc& d, JsonDoc::Outcome o, Error invalid, py::Version v) {
  switch (o) {
    case JsonDoc::Outcome::IntTooLong: return digits_error(std::to_string(d.digits), v);
    case JsonDoc::Outcome::TooDeep: return make_error(ErrorKind::PyRecursion, {d.deep_objects ? "object" : "array", "unicode string"});
    default: return invalid;
  }
}

Error container_error(const Scenario& s, std::size_t i, bool& exact) {
  const ContainerEdit& e = s.files[i].container;
  exact = true;
  switch (e.defect) {
    // The hole holds the Rust library's detail (Utf8Error / serde_json position): kind only.
    case Defect::HeaderNotUtf8: exact = false; return make_error(ErrorKind::StInvalidHeader, {"?"});
    case Defect::HeaderNotJson: exact = false; return make_error(ErrorKind::StInvalidHeaderDeserialization, {"?"});
    case Defect::OffsetGap: return make_error(ErrorKind::StInvalidOffset, {offset_gap_name(s, i)});
    default: return make_error(defect_kind(e.defect));
  }
}

float f32_at(const TensorDesc& t, std::size_t i) {
  float v = 0;
  if (4 * i + 4 <= t.bytes.size()) std::memcpy(&v, &t.bytes[4 * i], 4);
  return v;
}

std::string float_repr(float f);  // defined below

// ---- Python's == on what json.loads builds, from the language rules (not json::py_equal) ----------
// The exact decimal of an integral double (|d| >= 2**63 by doubling a decimal string).
std::string integral_decimal(double d) {
  if (std::fabs(d) < 9.2e18) return std::to_string(static_cast<long long>(d));
  int e = 0;
  const double m = std::frexp(std::fabs(d), &e);  // |d| = m * 2**e, 0.5 <= m < 1
  auto mant = static_cast<std::uint64_t>(std::ldexp(m, 53));
  std::string dec = std::to_string(mant);  // |d| = mant * 2**(e - 53), e > 53 here
  for (int i = 0; i < e - 53; ++i) {
    int carry = 0;
    for (auto it = dec.rbegin(); it != dec.rend(); ++it) {
      const int v = (*it - '0') * 2 + carry;
      *it = static_cast<char>('0' + v % 10);
      carry = v / 10;
    }
    if (carry) dec.insert(dec.begin(), '1');
  }
  return d < 0 ? "-" + dec : dec;
}

bool numeric(const json::Value& v) { return v.kind == json::Kind::Bool || v.kind == json::Kind::Int || v.kind == json::Kind::Float; }
std::string int_text(const json::Value& v) { return v.kind == json::Kind::Bool ? (v.boolean ? "1" : "0") : v.text; }

// a == b for JSON-built Python objects. top: the values themselves (float NaN != NaN); inside a list
// or dict Python compares by identity first, and json returns one NaN object, so NaN == NaN there.
bool py_eq(const json::Value& a, const json::Value& b, bool top) {
  using json::Kind;
  if (numeric(a) && numeric(b)) {
    if (a.kind == Kind::Float && b.kind == Kind::Float) {
      if (std::isnan(a.number) && std::isnan(b.number)) return !top;
      return a.number == b.number;
    }
    if (a.kind == Kind::Float || b.kind == Kind::Float) {
      const double f = a.kind == Kind::Float ? a.number : b.number;
      const json::Value& i = a.kind == Kind::Float ? b : a;
      return std::isfinite(f) && std::trunc(f) == f && integral_decimal(f) == int_text(i);
    }
    return int_text(a) == int_text(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Null: return true;
    case Kind::String: return a.text == b.text;
    case Kind::Array:
      if (a.items.size() != b.items.size()) return false;
      for (std::size_t i = 0; i < a.items.size(); ++i)
        if (!py_eq(a.items[i], b.items[i], false)) return false;
      return true;
    case Kind::Object:
      if (a.members.size() != b.members.size()) return false;
      for (const auto& [k, v] : a.members) {
        const json::Value* o = b.get(k);
        if (!o || !py_eq(v, *o, false)) return false;
      }
      return true;
    default: return false;
  }
}

class Simulation {
 public:
  explicit Simulation(const Scenario& s) : s_(s), limit_(json_max_depth(s.options.python)) {}

  Expectation run() {
    Expectation x;
    for (std::size_t i = 0; i < s_.files.size(); ++i)
      if (auto e = collect(i, x.message_exact)) return fail(std::move(*e), x);
    // Section 2: the MXFP8 shortcut.
    std::size_t added = 0;
    if (formats_.size() == 1 && *formats_.begin() == "mxfp8") {
      for (const std::string& p : quantized_) {
        const Meta* w = find(p + ".weight");
        const Meta* sc = find(p + ".weight_scale");
        const bool good = w->dtype == Dtype::F8_E4M3 && w->shape.size() == 2 && w->shape[1] % 32 == 0 && sc &&
                          sc->dtype == Dtype::U8 && shape_is(sc->shape, {w->shape[0], w->shape[1] / 32});
        if (!good)
          return fail(make_error(ErrorKind::SgMxfp8Incompatible, {py::repr_str(p, s_.options.python), meta_str(w, p + ".weight"), meta_str(sc, p + ".weight_scale")}), x);
        if (!index_.count(p)) {
          index_[p] = order_.size();
          order_.push_back({p, {}});
          order_.back().second.set("format", json::Value::from_string("mxfp8"));
          ++added;
        }
      }
    }
    // Section 3: quantized weights without markers.
    std::vector<std::string> missing;
    for (const std::string& p : quantized_)
      if (!index_.count(p)) missing.push_back(p);
    if (!missing.empty()) {
      missing.resize(std::min<std::size_t>(missing.size(), 5));
      return fail(make_error(ErrorKind::SgMissingMarkers, {py::repr_str_list(missing, s_.options.python)}), x);
    }
    // Section 4, then --strict.
    for (auto& [prefix, rec] : order_)
      if (auto e = check_layer(prefix, rec)) return fail(std::move(*e), x);
    if (s_.options.strict)
      for (auto& [prefix, rec] : order_)
        if (auto e = check_strict(prefix, rec)) return fail(std::move(*e), x);
    x.ok = true;
    for (auto& [prefix, rec] : order_) x.layers.emplace_back(prefix, std::move(rec).value());  // run() is the last use
    x.unordered_tail = added;
    return x;
  }

 private:
  // A recorded marker value: a marker's document (not copied: most verdicts fail before the layers
  // are needed, and a marker nested to the recursion limit is ~1000 allocations a copy) with the
  // members later set on it (merges, the derived flags), in order. value() builds the dict.
  struct Record {
    const json::Value* base = nullptr;  // nullptr: an empty dict (the MXFP8 shortcut's)
    json::Members sets;                 // Value::set calls on top of *base, in order
    std::vector<const MarkerDesc*> descs;  // recorded into it, in order (empty: the MXFP8 shortcut's)

    const json::Value* get(std::string_view key) const {
      for (auto it = sets.rbegin(); it != sets.rend(); ++it)
        if (it->first == key) return &it->second;
      return base ? base->get(key) : nullptr;
    }
    void set(std::string key, json::Value v) { sets.emplace_back(std::move(key), std::move(v)); }
    json::Value value() && {
      json::Value v = base ? *base : json::Value::object();
      for (auto& [k, x] : sets) v.set(std::move(k), std::move(x));
      return v;
    }
  };

  static Expectation fail(Error e, Expectation& x) {
    x.ok = false;
    x.error = std::move(e);
    return x;
  }

  const Meta* find(const std::string& name) {
    auto it = meta_.find(name);
    if (it == meta_.end()) return nullptr;
    Meta& m = it->second;
    if (m.marker) {  // (1-D, the element count of its bytes: spelling and encoding it costs, so lazily)
      m.shape = {marker_len(*m.marker)};
      m.marker = nullptr;
    }
    return &m;
  }
  std::string meta_str(const Meta* m, const std::string& name) const {
    if (!m) return "None";
    (void)name;
    return "(" + py::repr_str(dt(m->dtype)) + ", " + repr_shape(m->shape) + ")";
  }

  // Records a marker under the profile's rule (validator.md "Upstream versions").
  std::optional<Error> record(const MarkerDesc& m) {
    auto it = index_.find(m.prefix);
    if (it == index_.end()) {
      index_[m.prefix] = order_.size();
      order_.push_back({m.prefix, {&m.doc.value, {}, {&m}}});
      return std::nullopt;
    }
    Record& r = order_[it->second].second;
    const Error conflict = make_error(ErrorKind::SgConflictingMarkers, {py::repr_str(m.prefix, s_.options.python)});
    if (upstream::profile(s_.options.sglang).merge == upstream::MarkerMerge::WholeMarker) {
      // dicts: values compared as nested (records get members set only after collect(), so the
      // copy is never made)
      const bool plain = r.base && r.sets.empty();
      if (!py_eq(plain ? *r.base : Record(r).value(), m.doc.value, true)) return conflict;
      r = {&m.doc.value, {}, {&m}};  // replaced, position kept
      return std::nullopt;
    }
    for (const auto& [k, v] : m.doc.value.members)
      if (const json::Value* old = r.get(k); old && !py_eq(*old, v, true)) return conflict;
    for (const auto& [k, v] : m.doc.value.members) r.set(k, v);
    r.descs.push_back(&m);
    return std::nullopt;
  }

  // The marker whose value of `key` the record holds (the last one that had the key); nullptr: none.
  static const MarkerDesc* writer(const Record& r, std::string_view key) {
    for (auto it = r.descs.rbegin(); it != r.descs.rend(); ++it)
      if ((*it)->doc.value.get(key)) return *it;
    return nullptr;
  }
  static IntOutcome group_size(const Record& r) {
    const MarkerDesc* w = writer(r, "group_size");
    return w ? w->group_size : IntOutcome{true, "16", {}, {}};
  }
  static IntOutcome convrot_groupsize(const Record& r) {
    const MarkerDesc* w = writer(r, "convrot_groupsize");
    return w ? w->convrot_groupsize : IntOutcome{true, "256", {}, {}};
  }

  std::optional<Error> collect(std::size_t i, bool& exact) {
    const FileDesc& f = s_.files[i];
    if (f.container.defect != Defect::kCount) return container_error(s_, i, exact);
    for (const auto& [k, v] : f.metadata)
      if (k == "quant_format" && !v.empty()) {
        std::string low = v;
        for (char& c : low) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        formats_.insert(low);
      }
    if (has_quant_metadata(s_, i)) {
      const Error invalid = make_error(ErrorKind::SgInvalidQuantMetadata, {f.path});
      if (f.quant_meta_override) {
        const JsonDoc& d = *f.quant_meta_override;
        if (const auto o = loads_outcome(d, 0, limit_); o != JsonDoc::Outcome::Ok) return json_failure(d, o, invalid, s_.options.python);
        if (!d.value.is_object()) return make_error(ErrorKind::SgQuantMetadataNotObject, {f.path});
        const json::Value* layers = d.value.get("layers");
        if (!layers || !layers->is_object()) return make_error(ErrorKind::SgQuantMetadataNoLayers, {f.path});
        // Overrides carry no markers of their own (generated overrides never have members).
      } else {
        for (const auto& m : s_.markers)
          if (m.place == Place::Metadata && m.file == i && loads_outcome(m.doc, 2, limit_) != JsonDoc::Outcome::Ok)
            return json_failure(m.doc, loads_outcome(m.doc, 2, limit_), invalid, s_.options.python);
        for (const auto& m : s_.markers) {
          if (m.place != Place::Metadata || m.file != i) continue;
          if (!m.doc.value.is_object()) return make_error(ErrorKind::SgMetadataMarkerNotObject, {py::repr_str(m.prefix, s_.options.python)});
          if (auto e = record(m)) return e;
        }
      }
    }
    // Tensors in key order (sorted by code point = byte order).
    std::vector<std::pair<std::string, Meta>> ts;
    for (const auto& t : s_.tensors)
      if (t.file == i) ts.push_back({t.name, {t.dtype, t.shape, &t}});
    for (const auto& m : s_.markers)
      if (m.place == Place::Tensor && m.file == i) ts.push_back({m.prefix + ".comfy_quant", {m.dtype, {}, nullptr, &m}});
    std::sort(ts.begin(), ts.end(), [](const auto& a, const auto& b) { return bytes_less(a.first, b.first); });
    for (auto& [name, meta] : ts) {
      meta_[name] = meta;
      if (bytes_ends_with(name, ".weight") && (meta.dtype == Dtype::F8_E4M3 || meta.dtype == Dtype::I8 || meta.dtype == Dtype::U8))
        quantized_.insert(name.substr(0, name.size() - 7));
      if (meta.marker) {  // generated tensor names never end in ".comfy_quant" otherwise
        const MarkerDesc& m = *meta.marker;
        if (!torch_name(m.dtype).empty()) return make_error(ErrorKind::TorchUnsupportedScalarType, {torch_name(m.dtype)});
        const Error invalid = make_error(ErrorKind::SgInvalidMarker, {py::repr_str(name, s_.options.python), f.path});
        if (m.undecodable) return invalid;
        if (const auto o = loads_outcome(m.doc, 0, limit_); o != JsonDoc::Outcome::Ok) return json_failure(m.doc, o, invalid, s_.options.python);
        if (!m.doc.value.is_object()) return make_error(ErrorKind::SgMarkerNotObject, {py::repr_str(name, s_.options.python)});
        if (auto e = record(m)) return e;
      }
    }
    return std::nullopt;
  }

  static std::uint64_t marker_len(const MarkerDesc& m) { return marker_bytes(m).size() / std::max(1u, st::dtype_bits(m.dtype) / 8); }

  std::optional<Error> require(const std::string& p, std::initializer_list<const char*> sufs) {
    std::vector<std::string> missing;
    for (const char* s : sufs)
      if (!find(p + s)) missing.push_back(p + s);
    if (missing.empty()) return std::nullopt;
    std::sort(missing.begin(), missing.end(), BytesLess{});
    return make_error(ErrorKind::SgMissingTensors, {py::repr_str(p, s_.options.python), py::repr_str_list(missing, s_.options.python)});
  }

  std::optional<Error> check_layer(const std::string& p, Record& rec) {
    const json::Value* fmt = rec.get("format");
    if (!fmt || !fmt->is_string()) return std::nullopt;
    const std::string& f = fmt->text;
    const std::string rp = py::repr_str(p, s_.options.python);
    if (f == "asym_w4a8_int8") {
      if (auto e = require(p, {".weight", ".weight_s_rel", ".weight_s_channel"})) return e;
      const IntOutcome g = group_size(rec);
      if (!g.ok) return int_failure(g, s_.options.python);
      if (below_4(g.value)) return make_error(ErrorKind::SgW4a8GroupSize, {rp, g.value});
      const Meta &w = *find(p + ".weight"), &sr = *find(p + ".weight_s_rel"), &ch = *find(p + ".weight_s_channel");
      if (w.dtype != Dtype::I8 || sr.dtype != Dtype::F8_E4M3)
        return make_error(ErrorKind::SgW4a8Dtypes, {rp, dt(w.dtype), dt(sr.dtype)});
      if (ch.dtype != Dtype::F32) return make_error(ErrorKind::SgW4a8ChannelDtype, {rp, dt(ch.dtype)});
      if (w.shape.size() != 2) return make_error(ErrorKind::SgW4a8Rank, {rp, repr_shape(w.shape)});
      const u128 k = u128{2} * w.shape[1];
      const u128 groups = floordiv(k, g.value);
      const std::uint64_t rows = w.shape[0];
      if (!shape_is(sr.shape, {rows, groups}) || !shape_is(ch.shape, {rows}))
        return make_error(ErrorKind::SgW4a8Shapes, {rp, repr_shape(w.shape), repr_shape(sr.shape), repr_shape(ch.shape)});
      const Meta* cb = find(p + ".weight_codebook");
      const Meta* co = find(p + ".weight_correction");
      rec.set("_has_codebook", json::Value::from_bool(cb != nullptr));
      rec.set("_has_correction", json::Value::from_bool(co != nullptr));
      if (cb && !(cb->dtype == Dtype::F32 && shape_is(cb->shape, {16}))) return make_error(ErrorKind::SgW4a8Codebook, {rp});
      if (co && !(co->dtype == Dtype::F32 && shape_is(co->shape, {groups, rows}))) return make_error(ErrorKind::SgW4a8Correction, {rp});
    } else if (f == "float8_e4m3fn") {
      if (auto e = require(p, {".weight", ".weight_scale"})) return e;
      rec.set("_activation_scheme", json::Value::from_string(find(p + ".input_scale") ? "static" : "dynamic"));
    } else if (f == "convrot_w4a4") {
      if (auto e = require(p, {".weight", ".weight_scale"})) return e;
      const Meta &w = *find(p + ".weight"), &sc = *find(p + ".weight_scale");
      if (w.dtype != Dtype::I8 || sc.dtype != Dtype::F32) return make_error(ErrorKind::SgW4a4Dtypes, {rp, dt(w.dtype), dt(sc.dtype)});
      if (w.shape.size() != 2 || !shape_is(sc.shape, {w.shape[0]}))
        return make_error(ErrorKind::SgW4a4Shapes, {rp, repr_shape(w.shape), repr_shape(sc.shape)});
      const IntOutcome c = convrot_groupsize(rec);
      if (!c.ok) return int_failure(c, s_.options.python);
      if (c.value != "16" && c.value != "64" && c.value != "256") return make_error(ErrorKind::SgW4a4ConvrotGroupsize, {rp, c.value});
      const u128 k = u128{2} * w.shape[1];
      const unsigned cv = static_cast<unsigned>(std::stoul(c.value));
      if (k % 64 || k % cv) return make_error(ErrorKind::SgW4a4InputSize, {rp, u128_to_string(k), c.value});
    } else if (f == "nvfp4") {
      if (auto e = require(p, {".weight", ".weight_scale", ".weight_scale_2"})) return e;
      const Meta &w = *find(p + ".weight"), &sc = *find(p + ".weight_scale"), &s2 = *find(p + ".weight_scale_2");
      if (w.dtype != Dtype::U8 || sc.dtype != Dtype::F8_E4M3) return make_error(ErrorKind::SgNvfp4Dtypes, {rp, dt(w.dtype), dt(sc.dtype)});
      if (s2.dtype != Dtype::F32 || !(s2.shape.empty() || shape_is(s2.shape, {1})))
        return make_error(ErrorKind::SgNvfp4Scale2, {rp, dt(s2.dtype), repr_shape(s2.shape)});
      if (w.shape.size() != 2) return make_error(ErrorKind::SgNvfp4Rank, {rp, repr_shape(w.shape)});
      const u128 k = u128{2} * w.shape[1];
      if (k % 16 || !shape_is(sc.shape, {w.shape[0], k / 16}))
        return make_error(ErrorKind::SgNvfp4Shapes, {rp, repr_shape(w.shape), repr_shape(sc.shape)});
      const Meta* pq = find(p + ".pre_quant_scale");
      rec.set("_has_pre_quant_scale", json::Value::from_bool(pq != nullptr));
      if (pq && !((pq->dtype == Dtype::BF16 || pq->dtype == Dtype::F16 || pq->dtype == Dtype::F32) && shape_is(pq->shape, {k})))
        return make_error(ErrorKind::SgNvfp4PreQuantScale, {rp, dt(pq->dtype), repr_shape(pq->shape)});
    } else if (f == "int8_tensorwise") {
      if (auto e = require(p, {".weight", ".weight_scale"})) return e;
      const Meta &w = *find(p + ".weight"), &sc = *find(p + ".weight_scale");
      if (w.dtype == Dtype::I8 && sc.dtype == Dtype::F32 && sc.shape.empty()) {
        if (w.shape.size() != 2) return make_error(ErrorKind::SgTensorwiseRank, {rp, repr_shape(w.shape)});
        rec.set("_is_tensorwise_scalar", json::Value::from_bool(true));
      } else {
        if (w.dtype != Dtype::I8 || sc.dtype != Dtype::F32) return make_error(ErrorKind::SgInt8Dtypes, {rp, dt(w.dtype), dt(sc.dtype)});
        if (w.shape.size() != 2 || !shape_is(sc.shape, {w.shape[0], 1}))
          return make_error(ErrorKind::SgInt8Shapes, {rp, repr_shape(w.shape), repr_shape(sc.shape)});
        rec.set("_is_rowwise", json::Value::from_bool(true));
      }
    }
    return std::nullopt;
  }

  std::optional<Error> check_strict(const std::string& p, Record& rec);

  const Scenario& s_;
  int limit_;  // json.loads' nesting limit under the scenario's interpreter
  // Byte-order containers (byte_order.hpp: no memcmp under libFuzzer).
  std::unordered_map<std::string, Meta> meta_;
  std::set<std::string, BytesLess> quantized_;  // sorted: the order sorted(missing) and MXFP8 use
  std::set<std::string, BytesLess> formats_;
  std::map<std::string, std::size_t, BytesLess> index_;
  std::vector<std::pair<std::string, Record>> order_;
};


// --strict on one asym_w4a8_int8 layer (validate.md's order: contract, then data).
std::optional<Error> Simulation::check_strict(const std::string& p, Record& rec) {
  const json::Value* fmt = rec.get("format");
  if (!fmt || !fmt->is_string() || fmt->text != "asym_w4a8_int8") return std::nullopt;
  const std::string rp = py::repr_str(p, s_.options.python);
  const Meta& w = *find(p + ".weight");
  const std::uint64_t n = w.shape[0];
  const u128 k = u128{2} * w.shape[1];
  if (n == 0 || k == 0) return make_error(ErrorKind::StrictZeroSized, {rp, std::to_string(n), u128_to_string(k)});
  if (k % 16) return make_error(ErrorKind::StrictKMultiple16, {rp, u128_to_string(k)});
  const std::string g = group_size(rec).value;
  const auto gv = parse_u128(g);  // nullopt: beyond 2**128 (never below K)
  unsigned mod16 = 0;
  for (char c : g) mod16 = (mod16 * 10 + static_cast<unsigned>(c - '0')) % 16;
  if (!((gv && (*gv == 4 || *gv == 8)) || mod16 == 0)) return make_error(ErrorKind::StrictGroupSizeShape, {rp, g});
  const u128 rest = gv ? k % *gv : k;
  if (rest) return make_error(ErrorKind::StrictKMultipleGroup, {rp, u128_to_string(k), g, u128_to_string(rest)});
  if (const MarkerDesc* cw = writer(rec, "convrot"); cw && cw->convrot &&
      !(cw->convrot->value.kind == json::Kind::Bool && cw->convrot->value.boolean))
    return make_error(ErrorKind::StrictConvrotNotTrue, {rp, cw->convrot->text});
  const IntOutcome r = convrot_groupsize(rec);
  if (!r.ok) return int_failure(r, s_.options.python);
  const auto rv = r.value[0] == '-' ? std::nullopt : parse_u128(r.value);
  bool pow4 = rv && *rv >= 4;
  for (u128 x = rv ? *rv : 0; pow4 && x > 1; x /= 4) pow4 = x % 4 == 0;
  if (!pow4) return make_error(ErrorKind::StrictConvrotGroupsize, {rp, r.value});
  if (k % *rv) return make_error(ErrorKind::StrictKMultipleConvrot, {rp, u128_to_string(k), r.value});
  if (const Meta* b = find(p + ".bias")) {
    const bool dt_ok = b->dtype == Dtype::BF16 || b->dtype == Dtype::F16 || b->dtype == Dtype::F32;
    if (!dt_ok || !shape_is(b->shape, {n})) {
      const std::vector<std::uint64_t> want{n};
      return make_error(ErrorKind::StrictBias, {rp, dt(b->dtype), repr_shape(b->shape), repr_shape(want)});
    }
  }
  // Data: explicit bytes only (zero-filled tensors are in contract).
  if (const Meta* sr = find(p + ".weight_s_rel"); sr && sr->desc) {
    const auto& bytes = sr->desc->bytes;
    for (std::size_t i = 0; i < bytes.size(); ++i)
      if ((bytes[i] & 0x7F) == 0x7F)
        return make_error(ErrorKind::StrictNanScale, {rp, bytes[i] == 0x7F ? "7f" : "ff",
                                                      std::to_string(i / sr->shape[1]), std::to_string(i % sr->shape[1])});
  }
  if (const Meta* ch = find(p + ".weight_s_channel"); ch && ch->desc)
    for (std::size_t i = 0; 4 * i < ch->desc->bytes.size(); ++i) {
      const float v = f32_at(*ch->desc, i);
      if (!std::isfinite(v) || v < 0) return make_error(ErrorKind::StrictChannelScale, {rp, float_repr(v), std::to_string(i)});
    }
  if (const Meta* cb = find(p + ".weight_codebook"); cb && cb->desc)
    for (std::size_t i = 0; 4 * i < cb->desc->bytes.size(); ++i) {
      const float v = f32_at(*cb->desc, i);
      if (!std::isfinite(v)) return make_error(ErrorKind::StrictCodebook, {rp, float_repr(v), std::to_string(i)});
    }
  if (const Meta* co = find(p + ".weight_correction"); co && co->desc)
    for (std::size_t i = 0; 4 * i < co->desc->bytes.size(); ++i) {
      const float v = f32_at(*co->desc, i);
      if (!std::isfinite(v))
        return make_error(ErrorKind::StrictCorrection, {rp, float_repr(v), std::to_string(i / n), std::to_string(i % n)});
    }
  return std::nullopt;
}

// Python's repr of the few float32 values defects plant (hand-derived; see defect.cpp).
std::string float_repr(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  if (f == -1.0f) return "-1.0";
  if (f == -0.5f) return "-0.5";
  if (f == -448.0f) return "-448.0";
  if (f == -3.0517578125e-05f) return "-3.0517578125e-05";
  return "?";
}

}  // namespace

Expectation expect(const Scenario& s) { return Simulation(s).run(); }

// The oracle's own table (docs/validator.md, "Per-Python facts"), not py::InterpreterFacts.
int json_max_depth(py::Version v) {
  switch (v) {
    case py::Version::Py310: case py::Version::Py311: return 990;  // the recursion limit less the caller's frames
    case py::Version::Py312: return 1497;                          // a C counter of 1500
    default: return 9998;                                          // 3.13's counter of 10000 (3.14 assumed)
  }
}

bool too_deep_for_python(const Scenario& s) {
  const int limit = json_max_depth(s.options.python);
  for (const auto& m : s.markers)
    if (loads_outcome(m.doc, m.place == Place::Metadata ? 2 : 0, limit) == JsonDoc::Outcome::TooDeep) return true;
  for (const auto& f : s.files)
    if (f.quant_meta_override && loads_outcome(*f.quant_meta_override, 0, limit) == JsonDoc::Outcome::TooDeep) return true;
  return false;
}

}  // namespace w4a8::gen
