// Markers kept as text (marker.hpp): which texts may be, and their parse when asked for.
#include "validate/marker.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "json/parse.hpp"

namespace w4a8::validate {

bool Marker::text_form_allowed(std::string_view text) {
  // Without escapes a key "format" is spelled so; a value "format" is refused too (such a marker is
  // merely built, as before).
  if (text.find('\\') != std::string_view::npos || mentions_format(text)) return false;
  bool in_string = false;  // (no escapes: every '"' opens or closes a string)
  for (std::size_t i = 1; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') in_string = !in_string;
    else if (!in_string && (c == '{' || c == '[')) return false;
  }
  return true;
}

void Marker::materialize() const { v_ = std::make_shared<json::Value>(parse_text(text())); }

json::Value Marker::parse_text(const char* text) {
  std::size_t n = 1;
  for (bool in_string = false; in_string || text[n] != '}'; ++n)
    if (text[n] == '"') in_string = !in_string;
  json::ParseResult r = json::loads_bytes(std::span(reinterpret_cast<const std::uint8_t*>(text), n + 1));
  if (!r.ok() || !r->is_object()) {
    // Internal invariant: only texts the metadata reader accepted as objects are kept (collect.cpp).
    std::fprintf(stderr, "w4a8check: internal error: a kept marker text does not parse: %.*s\n", int(n + 1), text);
    std::abort();
  }
  return std::move(r).value();
}

}  // namespace w4a8::validate
