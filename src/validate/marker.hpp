// A layer's marker as the validator records it: one JSON object, shared read-only by the layers whose
// markers have the same contents, copied on the first write to a shared one. A model's markers are
// nearly all the same bytes ({"format": "asym_w4a8_int8", "group_size": 16, ...} on every layer), and
// upstream's derived keys are mostly the same for every layer too, so 5,000 layers hold a handful of
// objects instead of 5,000 trees (at 20k tensors: about 3 MB of heap and a copy per layer).
// Observably the same as one object per layer: an object is never changed while another layer holds it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "json/value.hpp"

namespace w4a8::validate {

// The most keys one section-4 rule adds to a marker (rules_*.cpp): markers get room for them up front,
// since growing a member block later would move it and strand the old one.
inline constexpr std::size_t kDerivedKeysMax = 2;

// That room, made in a marker that names a format: the rules run on a layer by its marker's "format"
// (comfy_format_of), so a marker without one never gets derived keys, and a header of many distinct
// format-less markers paid 192 bytes a layer for keys never added. Capacity only: a marker that
// gets keys anyway (mxfp8.cpp gives a format to one that had none) grows its block then.
inline void make_derived_room(json::Value& marker) {
  if (marker.get("format") != nullptr) marker.members.reserve(marker.members.size() + kDerivedKeysMax);
}
// The same for a marker's text before it is parsed: whether `"format"` occurs in it at all (a key
// spelled with escapes is missed, and gets its room when it grows).
inline std::size_t derived_room(std::string_view text) {
  return text.find("\"format\"") != std::string_view::npos ? kDerivedKeysMax : 0;
}

class Marker {
 public:
  Marker() = default;  // null
  explicit Marker(json::Value v) : v_(std::make_shared<json::Value>(std::move(v))) {}

  const json::Value& value() const { return v_ ? *v_ : null_value(); }
  operator const json::Value&() const { return value(); }  // NOLINT: reads as the object it is
  const json::Value* operator->() const { return &value(); }
  const json::Value* get(std::string_view key) const { return value().get(key); }
  bool is_null() const { return value().is_null(); }

  // The object to change in place: this layer's own (a copy first when another layer shares it,
  // with room for `extra` more members).
  json::Value& edit(std::size_t extra = 0) {
    if (!v_) v_ = std::make_shared<json::Value>();
    else if (v_.use_count() > 1) v_ = std::make_shared<json::Value>(copy_with_room(*v_, extra));
    return *v_;
  }
  // The object by value: moved out when this layer holds the only reference, else copied. Leaves null.
  json::Value take() {
    if (!v_) return {};
    json::Value out = v_.use_count() > 1 ? json::Value(*v_) : std::move(*v_);
    v_.reset();
    return out;
  }
  // Another Marker holds this object too (a write would copy it).
  bool shared() const { return v_ && v_.use_count() > 1; }
  // Both hold the same object (not merely equal ones).
  bool same_object(const Marker& o) const { return v_ == o.v_; }
  // A handle that recognizes this object later (is()) without holding it: the object is not kept
  // alive, and not made shared, so a layer's own object stays editable in place.
  std::weak_ptr<const json::Value> watch() const { return v_; }
  // This Marker holds the object `w` was taken from, and that object still exists. (A weak handle
  // keeps its control block, so another object cannot pass for the one it watched.)
  bool is(const std::weak_ptr<const json::Value>& w) const {
    return v_ && !w.expired() && !w.owner_before(v_) && !v_.owner_before(w);
  }

  // `v` with room reserved for `extra` more members when it is an object (growing a member block
  // later would move it and strand the old one).
  static json::Value copy_with_room(const json::Value& v, std::size_t extra) {
    if (!v.is_object() || extra == 0) return v;
    json::Value out = json::Value::object();
    out.members.reserve(v.members.size() + extra);
    for (const auto& member : v.members) out.members.emplace_back(member);  // (append() would copy twice)
    return out;
  }

 private:
  static const json::Value& null_value() {
    static const json::Value null;
    return null;
  }

  std::shared_ptr<json::Value> v_;
};

// A fact computed from a marker object alone, kept for the last object it was computed for: most
// layers share their marker object with the layer before (the rules' format and group size, the
// CLI's report text). `of` only watches the object: holding it would make a layer's own object
// shared, and each derived key then a copy. An object may get derived keys in place after a fact
// about it (DerivedKeys); facts never read those keys.
template <class T>
struct LastMarkerFact {
  std::weak_ptr<const json::Value> of;  // empty: nothing remembered
  T value{};
  bool for_(const Marker& m) const { return m.is(of); }
};

// Sets a derived key on markers as Value::set_bool does, keeping them shared: when every layer adds
// the same key and value to the same shared object, they all get one shared result. The last few
// (object, key, value) -> result steps are remembered; the entries hold their objects, so a
// remembered object is never freed and its address reused by another.
class DerivedKeys {
 public:
  // marker[key] = b (Python dict assignment: an existing key keeps its position).
  void set_bool(Marker& m, std::string_view key, bool b) {
    for (const Step& s : steps_)  // first: the usual case, and it reads no member
      if (s.from.same_object(m) && s.key == key && s.b == b) {
        m = s.to;
        return;
      }
    if (const json::Value* v = m.get(key); v != nullptr && v->kind == json::Kind::Bool && v->boolean == b)
      return;  // already so: the same object either way
    if (!m.shared()) {
      m.edit().set_bool(key, b);  // this layer's own object: nothing to share
      return;
    }
    Step& s = steps_[next_];
    next_ = (next_ + 1) % kSteps;
    s.from = m;
    s.key.assign(key);
    s.b = b;
    m.edit(kDerivedKeysMax).set_bool(key, b);  // (a copy: s.from shares the object now)
    s.to = m;
  }

 private:
  static constexpr std::size_t kSteps = 4;  // a rule adds at most two keys; room for two rules in turn
  struct Step {
    Marker from, to;
    std::string key;
    bool b = false;
  };
  Step steps_[kSteps];
  std::size_t next_ = 0;
};

}  // namespace w4a8::validate
