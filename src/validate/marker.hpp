// A layer's marker as the validator records it: one JSON object, shared read-only by the layers whose
// markers have the same contents, copied on the first write to a shared one. A model's markers are
// nearly all the same bytes ({"format": "asym_w4a8_int8", "group_size": 16, ...} on every layer), and
// upstream's derived keys are mostly the same for every layer too, so 5,000 layers hold a handful of
// objects instead of 5,000 trees (at 20k tensors: about 3 MB of heap and a copy per layer).
// Observably the same as one object per layer: an object is never changed while another layer holds it.
//
// A marker read from _quantization_metadata that cannot name a format (a flat object without escapes
// and without a "format" key) is kept as its text instead, until something asks for its members: no
// rule reads such a marker, so the validator never builds it, and a hostile document of a million
// distinct format-less markers costs a pointer each instead of an object each (about 200 bytes).
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
// Whether `"format"` occurs in a marker's text at all: a key "format" spelled without escapes does
// (one spelled with escapes is missed).
inline bool mentions_format(std::string_view text) { return text.find("\"format\"") != std::string_view::npos; }
// The same room for a marker's text before it is parsed (a key spelled with escapes gets its room
// when it grows).
inline std::size_t derived_room(std::string_view text) { return mentions_format(text) ? kDerivedKeysMax : 0; }

class Marker {
 public:
  Marker() = default;  // null
  explicit Marker(json::Value v) : v_(std::make_shared<json::Value>(std::move(v))) {}

  // Whether `text` (one JSON object json.loads accepts, '{' to '}') may be kept as text: no backslash,
  // no nested object or array, no "format" anywhere. Such an object names no format, so neither
  // upstream's rules nor --strict read it, and its end is the first '}' outside a string.
  static bool text_form_allowed(std::string_view text);
  // A marker kept as `text` (text_form_allowed), parsed only when its members are asked for. The
  // bytes are viewed, not copied: they must outlive every copy of the Marker (a header's metadata
  // string, as the layers' keys view it).
  static Marker text_form(const char* text) {
    Marker m;
    m.v_ = std::shared_ptr<void>(std::shared_ptr<void>(), const_cast<char*>(text));  // a view, owning nothing
    return m;
  }
  // Kept as text (text_form): the members are parsed on demand.
  bool is_text() const {  // (owns nothing: its control block is null, found without a load through it)
    return v_.get() != nullptr && !std::shared_ptr<void>().owner_before(v_);
  }
  // The text's first byte. pre: is_text().
  const char* text() const { return static_cast<const char*>(v_.get()); }

  // The object. A text marker is parsed here and keeps the object from then on (a write behind a
  // const reader: a Report's markers are read by one thread at a time); what reads every layer (a
  // report) uses visit() instead, which does not keep it.
  const json::Value& value() const {
    if (is_text()) [[unlikely]] materialize();
    return v_ ? *object() : null_value();
  }
  operator const json::Value&() const { return value(); }  // NOLINT: reads as the object it is
  const json::Value* operator->() const { return &value(); }
  const json::Value* get(std::string_view key) const { return value().get(key); }
  bool is_null() const { return !is_text() && value().is_null(); }
  // f(the object): a text marker's is parsed for the call and dropped after it. @return f's result.
  template <class F>
  decltype(auto) visit(F&& f) const {
    if (is_text()) return f(static_cast<const json::Value&>(parse_text(text())));
    return f(value());
  }

  // The object to change in place: this layer's own (a copy first when another layer shares it,
  // with room for `extra` more members).
  json::Value& edit(std::size_t extra = 0) {
    if (is_text()) v_ = std::make_shared<json::Value>(copy_with_room(parse_text(text()), extra));
    else if (!v_) v_ = std::make_shared<json::Value>();
    else if (v_.use_count() > 1) v_ = std::make_shared<json::Value>(copy_with_room(*object(), extra));
    return *object();
  }
  // The object by value: moved out when this layer holds the only reference, else copied. Leaves null.
  json::Value take() {
    if (!v_) return {};
    json::Value out = is_text() ? parse_text(text()) : v_.use_count() > 1 ? json::Value(*object()) : std::move(*object());
    v_.reset();
    return out;
  }
  // Another Marker holds this object too (a write would copy it).
  bool shared() const { return v_ && v_.use_count() > 1; }
  // Both hold the same object (not merely equal ones), or view the same text.
  bool same_object(const Marker& o) const { return v_ == o.v_; }
  // A handle that recognizes this object later (is()) without holding it: the object is not kept
  // alive, and not made shared, so a layer's own object stays editable in place. Empty for a text
  // marker (LastMarkerFact recognizes those by their text).
  std::weak_ptr<const json::Value> watch() const {
    if (is_text()) return {};
    return std::static_pointer_cast<const json::Value>(v_);
  }
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

  json::Value* object() const { return static_cast<json::Value*>(v_.get()); }
  // A text marker becomes its object (value()).
  void materialize() const;
  // The object a text marker's bytes spell (the first '}' outside a string ends it).
  static json::Value parse_text(const char* text);

  // An object (a json::Value, shared), a text (a view with no control block), or null.
  // Mutable: value() parses a text marker in place.
  mutable std::shared_ptr<void> v_;
};

// A fact computed from a marker object alone, kept for the last object it was computed for: most
// layers share their marker object with the layer before (the rules' format and group size, the
// CLI's report text). `of` only watches the object: holding it would make a layer's own object
// shared, and each derived key then a copy. An object may get derived keys in place after a fact
// about it (DerivedKeys); facts never read those keys.
template <class T>
struct LastMarkerFact {
  std::weak_ptr<const json::Value> of;  // empty: nothing remembered (or a text marker's fact)
  const char* text = nullptr;           // the text marker it is for (a text is never freed before its markers)
  T value{};
  bool for_(const Marker& m) const { return m.is_text() ? m.text() == text : m.is(of); }
  void remember(const Marker& m, T v) {
    of = m.watch();
    text = m.is_text() ? m.text() : nullptr;
    value = std::move(v);
  }
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
