#include "gen/json_doc.hpp"

#include "core/hex.hpp"
#include "gen/byte_order.hpp"

#include "json/parse.hpp"

namespace w4a8::gen {

JsonDoc jnull() { return {"null", JsonDoc::Outcome::Ok, json::Value::null(), 0}; }
JsonDoc jbool(bool b) { return {b ? "true" : "false", JsonDoc::Outcome::Ok, json::Value::from_bool(b), 0}; }
JsonDoc jint(std::string decimal) {
  const std::size_t digits = decimal.size() - (decimal[0] == '-');
  if (digits > kMaxIntDigits) {
    JsonDoc d{std::move(decimal), JsonDoc::Outcome::IntTooLong, json::Value::null(), digits};
    return d;
  }
  json::Value v;
  v.kind = json::Kind::Int;
  v.text = decimal;
  return {std::move(decimal), JsonDoc::Outcome::Ok, std::move(v), 0};
}
JsonDoc jint(long long v) { return jint(std::to_string(v)); }
JsonDoc jfloat(std::string text, double v) { return {std::move(text), JsonDoc::Outcome::Ok, json::Value::from_float(v), 0}; }
JsonDoc jstr(std::string utf8) {
  std::string t = json_literal(utf8);
  return {std::move(t), JsonDoc::Outcome::Ok, json::Value::from_string(std::move(utf8)), 0};
}

namespace {
// Worst outcome of the parts (the first failure in text order wins; all failures here are equal
// in rank because a document holds at most one deliberately broken part).
void absorb(JsonDoc& out, const JsonDoc& part) {
  if (part.depth + 1 > out.depth) {
    out.depth = part.depth + 1;
    out.deep_objects = part.depth > 0 ? part.deep_objects : out.value.is_object();
  }
  if (out.outcome == JsonDoc::Outcome::Ok && part.outcome != JsonDoc::Outcome::Ok) {
    out.outcome = part.outcome;
    out.digits = part.digits;
  }
}
}  // namespace

JsonDoc jarr(std::vector<JsonDoc> items) {
  JsonDoc d;
  d.value = json::Value::array();
  d.depth = 1;
  d.text = "[";
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) d.text += ", ";
    d.text += items[i].text;
    absorb(d, items[i]);
    d.value.items.push_back(std::move(items[i].value));
  }
  d.text += "]";
  return d;
}

JsonDoc jobj(std::vector<std::pair<std::string, JsonDoc>> members) {
  JsonDoc d;
  d.value = json::Value::object();
  d.depth = 1;
  d.deep_objects = true;
  d.text = "{";
  for (std::size_t i = 0; i < members.size(); ++i) {
    if (i) d.text += ", ";
    d.text += json_literal(members[i].first);
    d.text += ": ";
    d.text += members[i].second.text;
    absorb(d, members[i].second);
    // Python dict semantics by hand: a repeated key keeps its position, takes the new value.
    bool replaced = false;
    for (auto& m : d.value.members)
      if (bytes_equal(m.first, members[i].first)) { m.second = members[i].second.value; replaced = true; }
    if (!replaced) d.value.members.emplace_back(members[i].first, std::move(members[i].second.value));
  }
  d.text += "}";
  return d;
}

JsonDoc jnest(JsonDoc inner, int levels, bool objects) {
  if (levels <= 0) return inner;
  JsonDoc d;
  d.outcome = inner.outcome;
  d.digits = inner.digits;
  d.depth = inner.depth + levels;
  d.deep_objects = objects;
  const std::size_t n = static_cast<std::size_t>(levels);
  d.text.reserve(inner.text.size() + n * (objects ? 8 : 2));
  for (std::size_t i = 0; i < n; ++i) d.text += objects ? "{\"n\": " : "[";
  d.text += inner.text;
  d.text.append(n, objects ? '}' : ']');
  // The value from the outside in: one allocation a level, each container built in place (no
  // moves of the levels below it).
  json::Value* at = &d.value;
  for (std::size_t i = 0; i < n; ++i) {
    at->kind = objects ? json::Kind::Object : json::Kind::Array;
    if (objects) at = &at->members.emplace_back("n", json::Value{}).second;
    else at = &at->items.emplace_back();
  }
  *at = std::move(inner.value);
  return d;
}

JsonDoc::Outcome loads_outcome(const JsonDoc& d, int above, int max_depth) {
  if (d.outcome == JsonDoc::Outcome::Ok && d.depth + above > max_depth) return JsonDoc::Outcome::TooDeep;
  return d.outcome;
}

JsonDoc jraw_invalid(std::string text, JsonDoc::Outcome outcome) {
  return {std::move(text), outcome, json::Value::null(), 0};
}

std::string json_literal(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (std::size_t i = 0; i < s.size(); ++i) {
    // A run of characters that need no escape is copied whole.
    std::size_t j = i;
    while (j < s.size()) {
      const auto c = static_cast<unsigned char>(s[j]);
      if (c < 0x20 || c == '"' || c == '\\' || c == 0x7f || c == 0xED) break;
      ++j;
    }
    out.append(s, i, j - i);
    if (j == s.size()) break;
    i = j;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0xED && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0xA0) {  // a surrogate
      const unsigned cp = 0xD000 | ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 6) | (static_cast<unsigned char>(s[i + 2]) & 0x3F);
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      out += buf;
      i += 2;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          hex::append_u_escape(out, c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

std::string_view encoding_name(Encoding e) {
  static constexpr std::string_view kNames[] = {"utf-8", "utf-8-sig", "utf-16-le", "utf-16-be",
                                                "utf-16", "utf-32-le", "utf-32-be", "utf-32"};
  return kNames[static_cast<int>(e)];
}

namespace {

// Decodes well-formed UTF-8 (the generator only encodes text it built itself).
std::vector<char32_t> code_points(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    int len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t u, bool be) {
  if (be) { out.push_back(u >> 8); out.push_back(u & 0xFF); }
  else { out.push_back(u & 0xFF); out.push_back(u >> 8); }
}
void put32(std::vector<std::uint8_t>& out, std::uint32_t u, bool be) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(u >> (8 * (be ? 3 - i : i))));
}

}  // namespace

std::vector<std::uint8_t> encode(std::string_view utf8, Encoding e) {
  std::vector<std::uint8_t> out;
  if (e == Encoding::Utf8 || e == Encoding::Utf8Bom) {
    out.reserve(utf8.size() + 3);
    if (e == Encoding::Utf8Bom) out = {0xEF, 0xBB, 0xBF};
    out.insert(out.end(), utf8.begin(), utf8.end());
    return out;
  }
  out.reserve(4 * utf8.size() + 4);  // UTF-32 of ASCII: the most any encoding takes
  const bool utf16 = e == Encoding::Utf16Le || e == Encoding::Utf16Be || e == Encoding::Utf16Bom;
  const bool be = e == Encoding::Utf16Be || e == Encoding::Utf32Be;  // BOM forms: little endian
  if (e == Encoding::Utf16Bom) put16(out, 0xFEFF, false);
  if (e == Encoding::Utf32Bom) put32(out, 0xFEFF, false);
  for (char32_t cp : code_points(utf8)) {
    if (!utf16) { put32(out, cp, be); continue; }
    if (cp < 0x10000) { put16(out, static_cast<std::uint16_t>(cp), be); continue; }
    cp -= 0x10000;
    put16(out, static_cast<std::uint16_t>(0xD800 + (cp >> 10)), be);
    put16(out, static_cast<std::uint16_t>(0xDC00 + (cp & 0x3FF)), be);
  }
  return out;
}

}  // namespace w4a8::gen
