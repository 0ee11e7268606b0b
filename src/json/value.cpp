#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <optional>
#include <cstdlib>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "json/number.hpp"
#include "json/value.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {

const Value* Value::get(std::string_view key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& [k, v] : members)
    if (k == key) return &v;
  return nullptr;
}

Value Value::from_os_string(std::string_view bytes) { return from_string(wtf8_from_os(bytes)); }

Value* Value::get(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value&>(*this).get(key));
}

void Value::set(std::string key, Value v) {
  if (Value* slot = get(key)) {
    *slot = std::move(v);
    return;
  }
  members.emplace_back(std::move(key), std::move(v));
}

void Value::set_bool(std::string_view key, bool b) {
  Value* slot = get(key);
  if (slot == nullptr) {
    slot = &members.emplace_back(std::piecewise_construct, std::forward_as_tuple(key), std::forward_as_tuple()).second;
  } else {
    *slot = Value();  // a replaced value keeps its position and nothing of what it held
  }
  slot->kind = Kind::Bool;
  slot->boolean = b;
}

MemberIndex::MemberIndex(const Value& object) {
  map_.reserve(object.members.size());
  for (const auto& [k, v] : object.members) map_.emplace(k, &v);  // emplace keeps the first
}

const Value* MemberIndex::get(std::string_view key) const {
  auto it = map_.find(key);
  return it == map_.end() ? nullptr : it->second;
}

namespace {

bool is_numeric(Kind k) { return k == Kind::Bool || k == Kind::Int || k == Kind::Float; }

// Exact int (canonical text) == float, as Python compares int with float (no rounding).
bool int_equals_float(const std::string& int_text, double d) {
  if (!std::isfinite(d) || std::trunc(d) != d) return false;
  return exact_integer_text(d) == int_text;
}

// Int text of an Int or Bool (True is 1).
const std::string& int_text_of(const Value& v) {
  static const std::string kZero = "0", kOne = "1";
  if (v.kind == Kind::Bool) return v.boolean ? kOne : kZero;
  return v.text;
}

// Python's == on two scalars (containers: compare_impl). nested: inside a container, where Python
// compares by identity first, so json's one shared NaN object equals itself.
bool scalars_equal(const Value& a, const Value& b, bool nested) {
  if (is_numeric(a.kind) && is_numeric(b.kind)) {
    if (a.kind == Kind::Float && b.kind == Kind::Float) {
      if (nested && std::isnan(a.number) && std::isnan(b.number)) return true;
      return a.number == b.number;
    }
    if (a.kind == Kind::Float) return int_equals_float(int_text_of(b), a.number);
    if (b.kind == Kind::Float) return int_equals_float(int_text_of(a), b.number);
    return int_text_of(a) == int_text_of(b);
  }
  if (a.kind != b.kind) return false;
  return a.kind == Kind::Null || (a.kind == Kind::String && a.text == b.text);  // (numeric kinds above)
}

// One object in both results of json.loads (so `is` holds and a container skips the comparison):
// the singletons, the small-int cache, json's shared NaN and Infinity constants (parsed from their
// tokens, which the Python dialect keeps as the text; an overflowing literal such as 1e999 is a new
// float), "" and one-character Latin-1 strings.
bool same_object(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Null: return true;
    case Kind::Bool: return a.boolean == b.boolean;
    case Kind::Int: {
      if (a.text != b.text || a.text.size() > 4) return false;
      const long v = std::strtol(a.text.c_str(), nullptr, 10);
      return v >= -5 && v <= 256;
    }
    case Kind::Float: return !a.text.empty() && a.text == b.text && !std::isfinite(a.number);
    case Kind::String: {
      if (a.text != b.text) return false;
      if (a.text.empty() || (a.text.size() == 1 && static_cast<unsigned char>(a.text[0]) < 0x80)) return true;
      return a.text.size() == 2 && (static_cast<unsigned char>(a.text[0]) & 0xFE) == 0xC2;  // U+0080..U+00FF
    }
    default: return false;
  }
}

// The recursion of `a != b` (PyObject_RichCompare at depth 1): see py_compare.
Compared compare_impl(const Value& a, const Value& b, bool nested) {
  std::size_t deepest = 0;
  const auto item = [&deepest](const Value& x, const Value& y) {
    if (same_object(x, y)) return true;  // PyObject_RichCompareBool's identity shortcut
    const Compared c = compare_impl(x, y, true);
    deepest = std::max(deepest, c.depth);
    return c.equal;
  };
  if (a.kind == Kind::Array && b.kind == Kind::Array) {
    bool eq = a.items.size() == b.items.size();
    for (std::size_t i = 0; eq && i < a.items.size(); ++i) eq = item(a.items[i], b.items[i]);
    return {eq, 1 + deepest};
  }
  if (a.kind == Kind::Object && b.kind == Kind::Object) {
    bool eq = a.members.size() == b.members.size();
    if (eq && !a.members.empty()) {
      // Python dict ==: same key set, equal values; an index keeps big untrusted objects linear.
    const std::optional<MemberIndex> index = b.members.size() > 16 ? std::optional<MemberIndex>(std::in_place, b) : std::nullopt;
      for (const auto& [k, v] : a.members) {
        const Value* other = index ? index->get(k) : b.get(k);
        if (other == nullptr || !item(v, *other)) {
          eq = false;
          break;
        }
      }
    }
    return {eq, 1 + deepest};
  }
  return {scalars_equal(a, b, nested), 1};
}

}  // namespace

bool py_equal(const Value& a, const Value& b) { return compare_impl(a, b, false).equal; }

Compared py_compare(const Value& a, const Value& b) { return compare_impl(a, b, false); }

bool identical(const Value& a, const Value& b) {
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::Null: return true;
    case Kind::Bool: return a.boolean == b.boolean;
    case Kind::Float: return std::bit_cast<std::uint64_t>(a.number) == std::bit_cast<std::uint64_t>(b.number);
    case Kind::Int:
    case Kind::String: return a.text == b.text;
    case Kind::Array:
      return std::equal(a.items.begin(), a.items.end(), b.items.begin(), b.items.end(),
                        [](const Value& x, const Value& y) { return identical(x, y); });
    case Kind::Object:
      return std::equal(a.members.begin(), a.members.end(), b.members.begin(), b.members.end(),
                        [](const auto& x, const auto& y) { return x.first == y.first && identical(x.second, y.second); });
  }
  return false;
}

}  // namespace w4a8::json
