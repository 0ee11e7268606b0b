// Editing helpers shared by the defect injectors.
#include "gen/defect_edit.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

namespace w4a8::gen::edit {

namespace {

// Dtypes a dtype defect may switch to (whole bytes, so the container stays valid).
constexpr Dtype kDtypePool[] = {Dtype::U8,  Dtype::I8,   Dtype::F8_E4M3, Dtype::F8_E5M2, Dtype::BOOL,
                                Dtype::I16, Dtype::F16,  Dtype::BF16,    Dtype::F32,     Dtype::I32,
                                Dtype::F64, Dtype::I64,  Dtype::U64,     Dtype::C64,     Dtype::F8_E8M0};

}  // namespace

TensorRef find_tensor(Scenario& s, std::string_view name) {
  for (std::size_t i = 0; i < s.tensors.size(); ++i)
    if (s.tensors[i].name == name) return {s, i};
  return {};
}
TensorRef add_tensor(Scenario& s, TensorDesc t) {
  s.tensors.push_back(std::move(t));
  return {s, s.tensors.size() - 1};
}
TensorRef find_or_add(Scenario& s, TensorDesc t) {
  if (TensorRef r = find_tensor(s, t.name)) return r;
  return add_tensor(s, std::move(t));
}
void erase_tensor(Scenario& s, TensorRef t) { s.tensors.erase(s.tensors.begin() + static_cast<std::ptrdiff_t>(t.index())); }

bool fits(Dtype d, const std::vector<std::uint64_t>& shape) {
  auto b = tensor_bytes(d, shape);
  return b && *b <= kMaxTensorBytes;
}

// Retypes/reshapes t when the result stays within budget; explicit data is dropped (zero fill).
bool retype(TensorRef t, Dtype d) {
  if (!t || t->dtype == d || !fits(d, t->shape)) return false;
  t->dtype = d;
  t->bytes.clear();
  return true;
}
bool reshape(TensorRef t, std::vector<std::uint64_t> shape) {
  if (!t || t->shape == shape || !fits(t->dtype, shape)) return false;
  t->shape = std::move(shape);
  t->bytes.clear();
  return true;
}
// Any pool dtype but `avoid` (one choice, no retry loop: exhausted fuzzer bytes repeat choices).
Dtype other_dtype(Dtype avoid, ChoiceSource& src) {
  Dtype rest[std::size(kDtypePool)];
  std::size_t n = 0;
  for (Dtype d : kDtypePool)
    if (d != avoid) rest[n++] = d;
  return rest[src.below(n)];
}

std::optional<LayerDesc> pick_layer(Scenario& s, ChoiceSource& src, std::initializer_list<Format> fs) {
  std::vector<std::size_t> ls;
  for (std::size_t i = 0; i < s.layers.size(); ++i)
    if (std::find(fs.begin(), fs.end(), s.layers[i].format) != fs.end()) ls.push_back(i);
  if (ls.empty()) return std::nullopt;
  return s.layers[ls[src.below(ls.size())]];
}

std::vector<MarkerRef> markers_of(Scenario& s, const std::string& prefix) {
  std::vector<MarkerRef> out;
  for (std::size_t i = 0; i < s.markers.size(); ++i)
    if (s.markers[i].prefix == prefix) out.emplace_back(s, i);
  return out;
}

bool editable(const MarkerDesc& m) {
  return m.raw.empty() && !m.undecodable && m.doc.outcome == JsonDoc::Outcome::Ok && m.doc.value.is_object() &&
         m.fields.size() == m.doc.value.members.size();
}

bool place_free(const Scenario& s, const MarkerDesc& m) {
  for (const auto& o : s.markers)
    if (o.prefix == m.prefix && o.place == m.place && o.file == m.file) return false;
  if (m.place == Place::Tensor)
    for (const auto& t : s.tensors)
      if (t.name == m.prefix + ".comfy_quant") return false;
  return true;
}

// Sets one member on every generated-object marker of the prefix (duplicates stay equal).
bool set_field(Scenario& s, const std::string& prefix, const std::string& key, const JsonDoc& v) {
  auto ms = markers_of(s, prefix);
  if (ms.empty()) return false;
  for (const MarkerRef& m : ms) {
    if (m->fields.empty() && !(m->doc.outcome == JsonDoc::Outcome::Ok && m->doc.value.is_object() && m->doc.value.members.empty()))
      return false;  // a marker some defect already replaced
  }
  for (const MarkerRef& m : ms) {
    bool done = false;
    for (auto& [k, d] : m->fields)
      if (k == key) { d = v; done = true; }
    if (!done) m->fields.emplace_back(key, v);
    m->doc = jobj(m->fields);
  }
  return true;
}

u128 k_of(const TensorDesc& w) { return w.shape.size() == 2 ? u128{2} * w.shape[1] : 0; }
std::uint64_t groups_of(u128 k, const std::string& g) {
  u128 v = 0;
  for (char c : g) {
    if (c < '0' || c > '9') return 0;
    const u128 next = v * 10 + static_cast<unsigned>(c - '0');
    if (next / 10 != v) return 0;
    v = next;
  }
  return v ? static_cast<std::uint64_t>(k / v) : 0;
}

std::size_t free_file(Scenario& s, ChoiceSource& src) {
  std::vector<std::size_t> free;
  for (std::size_t i = 0; i < s.files.size(); ++i)
    if (s.files[i].container.defect == Defect::kCount) free.push_back(i);
  return free.empty() ? SIZE_MAX : free[src.below(free.size())];
}

MarkerRef tensor_marker(Scenario& s, ChoiceSource& src) {
  std::vector<std::size_t> ms;
  for (std::size_t i = 0; i < s.markers.size(); ++i)
    if (s.markers[i].place == Place::Tensor) ms.push_back(i);
  if (ms.empty()) return {};
  return {s, ms[src.below(ms.size())]};
}

JsonDoc non_object(ChoiceSource& src) {
  switch (src.below(7)) {
    case 0: return jarr({});
    case 1: return jint(16);
    case 2: return jstr("asym_w4a8_int8");
    case 3: return jnull();
    case 4: return jfloat("NaN", std::numeric_limits<double>::quiet_NaN());
    case 5: return jbool(false);
    default: return jarr({jobj({{"format", jstr("asym_w4a8_int8")}})});
  }
}

JsonDoc huge_int_doc(ChoiceSource& src) {
  const std::size_t n = kMaxIntDigits + 1 + (src.flip() ? 0 : src.below(100));  // often just past the limit
  JsonDoc d = jraw_invalid(std::string(n, '9'), JsonDoc::Outcome::IntTooLong);
  d.digits = n;
  return d;
}

// Zero-filled explicit bytes for t, then f32 value v at element i.
void poke_f32(TensorDesc& t, std::uint64_t i, float v) {
  t.bytes.resize(*tensor_bytes(t.dtype, t.shape));
  std::memcpy(&t.bytes[4 * i], &v, 4);
}

float bad_float(ChoiceSource& src, bool negatives) {
  static constexpr float kNonFinite[] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                         -std::numeric_limits<float>::infinity()};
  static constexpr float kNegative[] = {-1.0f, -0.5f, -448.0f, -3.0517578125e-05f};
  if (negatives && src.flip()) return kNegative[src.below(4)];
  return kNonFinite[src.below(3)];
}

}  // namespace w4a8::gen::edit
