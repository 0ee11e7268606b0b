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

bool fits(Dtype d, const std::vector<std::uint64_t>& shape) {
  auto b = tensor_bytes(d, shape);
  return b && *b <= kMaxTensorBytes;
}

// Retypes/reshapes t when the result stays within budget; explicit data is dropped (zero fill).
bool retype(TensorDesc* t, Dtype d) {
  if (!t || t->dtype == d || !fits(d, t->shape)) return false;
  t->dtype = d;
  t->bytes.clear();
  return true;
}
bool reshape(TensorDesc* t, std::vector<std::uint64_t> shape) {
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

std::vector<LayerDesc*> layers_of(Scenario& s, std::initializer_list<Format> fs) {
  std::vector<LayerDesc*> out;
  for (auto& l : s.layers)
    if (std::find(fs.begin(), fs.end(), l.format) != fs.end()) out.push_back(&l);
  return out;
}
LayerDesc* pick_layer(Scenario& s, ChoiceSource& src, std::initializer_list<Format> fs) {
  auto ls = layers_of(s, fs);
  return ls.empty() ? nullptr : ls[src.below(ls.size())];
}

std::vector<MarkerDesc*> markers_of(Scenario& s, const std::string& prefix) {
  std::vector<MarkerDesc*> out;
  for (auto& m : s.markers)
    if (m.prefix == prefix) out.push_back(&m);
  return out;
}

// Sets one member on every generated-object marker of the prefix (duplicates stay equal).
bool set_field(Scenario& s, const std::string& prefix, const std::string& key, const JsonDoc& v) {
  auto ms = markers_of(s, prefix);
  if (ms.empty()) return false;
  for (MarkerDesc* m : ms) {
    if (m->fields.empty() && !(m->doc.outcome == JsonDoc::Outcome::Ok && m->doc.value.is_object() && m->doc.value.members.empty()))
      return false;  // a marker some defect already replaced
  }
  for (MarkerDesc* m : ms) {
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

MarkerDesc* tensor_marker(Scenario& s, ChoiceSource& src) {
  std::vector<MarkerDesc*> ms;
  for (auto& m : s.markers)
    if (m.place == Place::Tensor) ms.push_back(&m);
  return ms.empty() ? nullptr : ms[src.below(ms.size())];
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
  const std::size_t n = 4301 + src.below(100);
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
