#include "json/flat_object.hpp"

#include "json/flat_cursor.hpp"

namespace w4a8::json {
namespace {

using flat::Scalar;

Value to_value(const Scalar& s) {
  Value v;
  v.kind = s.kind;
  v.boolean = s.boolean;
  if (s.kind == Kind::String || s.kind == Kind::Int) v.text.assign(s.lit);
  return v;
}

}  // namespace

std::optional<Value> loads_flat_object(std::string_view text, std::size_t spare) {
  flat::Cursor c{text.data(), text.data() + text.size()};
  c.ws();
  // Members wait here as views (no allocation) and are built into one vector at the end.
  std::string_view keys[kFlatMembers];
  Scalar values[kFlatMembers];
  std::size_t n = 0;
  if (!c.object(keys, values, n)) return std::nullopt;
  c.ws();
  if (c.p != c.end) return std::nullopt;
  Value out = Value::object();
  out.members.reserve(n + spare);
  for (std::size_t i = 0; i < n; ++i) out.members.emplace_back(std::string(keys[i]), to_value(values[i]));
  return out;
}

}  // namespace w4a8::json
