// Private to src/gen: the editing helpers defect injectors share, and the injectors per family
// (defect.cpp: layer rules and --strict; defect_collection.cpp: container and collection defects;
// defect_merge.cpp: a prefix's markers recorded twice).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "gen/scenario.hpp"

namespace w4a8::gen::edit {

using st::Dtype;
using u128 = unsigned __int128;

inline constexpr std::uint64_t kMaxTensorBytes = 1 << 18;  // keep every case small and fast

// A tensor or marker of a scenario by position: unlike a pointer, it stays valid when the vector
// grows (injectors add tensors while they hold others). Erasing invalidates refs behind the erased one.
template <class T, std::vector<T> Scenario::*Vec>
class Ref {
 public:
  Ref() = default;
  Ref(Scenario& s, std::size_t i) : s_(&s), i_(i) {}
  explicit operator bool() const { return s_ != nullptr; }
  T& operator*() const { return (s_->*Vec)[i_]; }
  T* operator->() const { return &(s_->*Vec)[i_]; }
  std::size_t index() const { return i_; }

 private:
  Scenario* s_ = nullptr;
  std::size_t i_ = 0;
};
using TensorRef = Ref<TensorDesc, &Scenario::tensors>;
using MarkerRef = Ref<MarkerDesc, &Scenario::markers>;

TensorRef find_tensor(Scenario& s, std::string_view name);  // empty ref when absent
TensorRef add_tensor(Scenario& s, TensorDesc t);
// The tensor `name`, added as `t` when absent.
TensorRef find_or_add(Scenario& s, TensorDesc t);
void erase_tensor(Scenario& s, TensorRef t);

bool fits(Dtype d, const std::vector<std::uint64_t>& shape);
// Retypes/reshapes t when the result differs and stays within budget; explicit data is dropped.
bool retype(TensorRef t, Dtype d);
bool reshape(TensorRef t, std::vector<std::uint64_t> shape);
// Any whole-byte dtype but `avoid` (one choice: exhausted fuzzer bytes repeat choices, so no retry).
Dtype other_dtype(Dtype avoid, ChoiceSource& src);
// A random layer of one of the formats (a copy: injectors never edit LayerDesc); nullopt when none.
std::optional<LayerDesc> pick_layer(Scenario& s, ChoiceSource& src, std::initializer_list<Format> fs);
std::vector<MarkerRef> markers_of(Scenario& s, const std::string& prefix);
// Sets one member on every generated-object marker of the prefix (duplicates stay equal).
bool set_field(Scenario& s, const std::string& prefix, const std::string& key, const JsonDoc& v);
// Whether a marker is a generated object whose members (fields) can be edited and copied.
bool editable(const MarkerDesc& m);
// Whether a second marker of m.prefix may go to m.place in m.file (one marker per place, and no plain
// tensor named like the marker tensor).
bool place_free(const Scenario& s, const MarkerDesc& m);
u128 k_of(const TensorDesc& w);
// K // G for G given as decimal text (0 when G does not fit 128 bits or is not a plain number).
std::uint64_t groups_of(u128 k, const std::string& g);
std::size_t free_file(Scenario& s, ChoiceSource& src);  // SIZE_MAX when every file has an edit
MarkerRef tensor_marker(Scenario& s, ChoiceSource& src);
JsonDoc non_object(ChoiceSource& src);
JsonDoc huge_int_doc(ChoiceSource& src);
// Zero-filled explicit bytes for t, then the f32 value v at element i.
void poke_f32(TensorDesc& t, std::uint64_t i, float v);
// A non-finite float (or, with negatives, sometimes a negative one) whose Python repr the oracle knows.
float bad_float(ChoiceSource& src, bool negatives);

bool inject_container(Scenario& s, Defect d, ChoiceSource& src);
bool inject_collection(Scenario& s, Defect d, ChoiceSource& src, const GenConfig& cfg);
bool inject_w4a8(Scenario& s, Defect d, ChoiceSource& src);
bool inject_other(Scenario& s, Defect d, ChoiceSource& src);
bool inject_strict(Scenario& s, Defect d, ChoiceSource& src);
bool inject_merge(Scenario& s, Defect d, ChoiceSource& src);

}  // namespace w4a8::gen::edit
