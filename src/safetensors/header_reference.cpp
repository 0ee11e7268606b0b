#include "safetensors/header_reference.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>

#include "json/number.hpp"
#include "json/parse.hpp"
#include "json/serde_messages.hpp"
#include "safetensors/hash_metadata.hpp"
#include "safetensors/rust_debug.hpp"
#include "safetensors/serde_errors.hpp"

namespace w4a8::st::detail {
namespace {

using json::Kind;
using json::Value;

// A failed deserialization: serde_json's message without its position (empty = success).
using Msg = std::string;

// serde's Unexpected for a buffered JSON value. Numbers are classified from their literal here, on
// their own, rather than by json::SerdeReader, so the two paths stay independent; the Display is shared.
std::string unexpected(const Value& v) {
  using S = json::SerdeScalar;
  S s;
  s.text = v.text;
  switch (v.kind) {
    case Kind::Null: s.kind = S::Kind::Null; break;
    case Kind::Bool: s.kind = S::Kind::Bool, s.boolean = v.boolean; break;
    case Kind::Int: {
      // u64 / i64 when the literal fits; "-0" and wider literals are f64 in serde_json.
      const char* b = v.text.data();
      const char* e = b + v.text.size();
      std::int64_t i = 0;
      std::uint64_t u = 0;
      s.kind = S::Kind::F64;
      if (v.text.starts_with('-')) {
        if (v.text != "-0" && std::from_chars(b, e, i).ec == std::errc()) s.kind = S::Kind::I64;
      } else if (std::from_chars(b, e, u).ec == std::errc()) {
        s.kind = S::Kind::U64;
      }
      break;
    }
    case Kind::Float: s.kind = S::Kind::F64; break;  // text: the literal (parse_serde keeps it)
    case Kind::String: s.kind = S::Kind::String; break;
    case Kind::Array: return std::string(kUnexpectedSeq);
    case Kind::Object: return std::string(kUnexpectedMap);
  }
  return detail::unexpected(s);
}

Msg invalid_type(const Value& v, std::string_view expected) { return detail::invalid_type(unexpected(v), expected); }

// usize via serde's primitive visitor: u64 fits; i64 is an invalid value; f64 an invalid type.
Msg to_usize(const Value& v, std::uint64_t& out) {
  if (v.kind != Kind::Int) return invalid_type(v, expect::kUsize);
  const char* b = v.text.data();
  const char* e = b + v.text.size();
  if (auto r = std::from_chars(b, e, out); r.ec == std::errc() && r.ptr == e && !v.text.starts_with('-')) return {};
  std::int64_t i = 0;
  if (auto r = std::from_chars(b, e, i); r.ec == std::errc() && r.ptr == e && v.text != "-0")
    return invalid_value(unexpected(v), expect::kUsize);
  return invalid_type(v, expect::kUsize);
}

Msg to_dtype(const Value& v, Dtype& out) {
  const std::string* name = nullptr;
  if (v.kind == Kind::String) {
    name = &v.text;
  } else if (v.kind == Kind::Object) {
    // An externally tagged unit variant: {"F32": null}.
    if (v.members.size() != 1) return invalid_value(kUnexpectedMap, expect::kDtypeMap);
    name = &v.members[0].first;
  } else {
    return invalid_type(v, expect::kDtype);
  }
  auto d = dtype_from_name(*name);
  if (!d) return unknown_dtype_variant(*name);
  if (v.kind == Kind::Object && !v.members[0].second.is_null()) return invalid_type(v.members[0].second, expect::kUnit);
  out = *d;
  return {};
}

Msg to_shape(const Value& v, Shape& shape) {
  if (v.kind != Kind::Array) return invalid_type(v, expect::kShape);
  shape.clear();
  shape.reserve(v.items.size());
  for (const Value& item : v.items) {
    std::uint64_t d = 0;
    if (Msg m = to_usize(item, d); !m.empty()) return m;
    shape.push_back(d);
  }
  return {};
}

// Elements are visited in order; a short sequence fails after them, a long one after the visitor.
Msg to_offsets(const Value& v, TensorInfo& t) {
  if (v.kind != Kind::Array) return invalid_type(v, expect::kOffsets);
  std::uint64_t* dst[2] = {&t.begin, &t.end};
  for (std::size_t i = 0; i < 2; ++i) {
    if (i == v.items.size()) return invalid_length(i, expect::kOffsets);
    if (Msg m = to_usize(v.items[i], *dst[i]); !m.empty()) return m;
  }
  if (v.items.size() > 2) return invalid_length_in_seq(v.items.size(), 2);
  return {};
}

enum Field { kDtype, kShape, kOffsets, kFieldCount };
constexpr std::string_view kFieldNames[kFieldCount] = {"dtype", "shape", "data_offsets"};

Msg set_field(Field f, const Value& v, TensorInfo& t) {
  switch (f) {
    case kDtype: return to_dtype(v, t.dtype);
    case kShape: return to_shape(v, t.shape);
    case kOffsets: return to_offsets(v, t);
    case kFieldCount: break;
  }
  return {};
}

// serde's derived struct visitor: visit_map (fields by name) or visit_seq (fields in order).
Msg to_tensor(const Value& v, TensorInfo& t) {
  if (v.kind == Kind::Array) {
    for (int f = 0; f < kFieldCount; ++f) {
      if (std::size_t(f) == v.items.size())
        return invalid_length(std::size_t(f), expect::kTensorInfoSeq);
      if (Msg m = set_field(Field(f), v.items[std::size_t(f)], t); !m.empty()) return m;
    }
    if (v.items.size() > kFieldCount)
      return invalid_length_in_seq(v.items.size(), kFieldCount);
    return {};
  }
  if (v.kind != Kind::Object) return invalid_type(v, expect::kTensorInfo);
  bool seen[kFieldCount] = {};
  for (const auto& [key, value] : v.members) {
    for (int f = 0; f < kFieldCount; ++f) {
      if (key != kFieldNames[f]) continue;
      if (seen[f]) return duplicate_field(key);
      seen[f] = true;
      if (Msg m = set_field(Field(f), value, t); !m.empty()) return m;
    }
  }
  for (int f = 0; f < kFieldCount; ++f)
    if (!seen[f]) return missing_field(kFieldNames[f]);
  return {};
}

// ---- Byte spans of an already parsed (hence well-formed) document, for serde's positions. ----
bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
std::size_t skip_ws(std::string_view s, std::size_t i) {
  while (i < s.size() && is_ws(s[i])) ++i;
  return i;
}
// At a value; returns the index just past it. Bounded by s.size() whatever the input.
std::size_t skip_string(std::string_view s, std::size_t i) {
  for (++i; i < s.size() && s[i] != '"'; ++i)
    if (s[i] == '\\') ++i;
  return std::min(i + 1, s.size());
}
std::size_t skip_value(std::string_view s, std::size_t i) {
  if (i >= s.size()) return s.size();
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] != '[' && s[i] != '{') {
    // A literal or a number (-?digits, '.', exponent): the token serde_json reads, so text glued
    // to it ("2pt", "truex") is left out even in a document that failed to parse there.
    auto digits = [&] { while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i; };
    for (std::string_view word : {"true", "false", "null"})
      if (s.substr(i, word.size()) == word) return i + word.size();
    if ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) {
      while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))) ++i;
      return i;
    }
    if (s[i] == '-') ++i;
    digits();
    if (i < s.size() && s[i] == '.') ++i, digits();
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      digits();
    }
    return i;
  }
  std::size_t depth = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      i = skip_string(s, i);
      continue;
    }
    ++i;
    if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && --depth == 0) return i;
  }
  return s.size();
}
struct MemberSpan {
  std::size_t key_end = 0, value_begin = 0, value_end = 0;
};
// At '{': one span per member, in document order (as json::parse_serde keeps them).
std::vector<MemberSpan> member_spans(std::string_view s, std::size_t i) {
  std::vector<MemberSpan> out;
  i = skip_ws(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    MemberSpan m;
    m.key_end = skip_value(s, i);
    m.value_begin = skip_ws(s, skip_ws(s, m.key_end) + 1);  // past ':'
    m.value_end = skip_value(s, m.value_begin);
    out.push_back(m);
    i = skip_ws(s, m.value_end);
    if (i < s.size() && s[i] == ',') i = skip_ws(s, i + 1);
  }
  return out;
}
// Where serde_json stands after peek_invalid_type on a value: containers are not consumed.
std::size_t invalid_type_at(const Value& v, const MemberSpan& m) {
  return v.kind == Kind::Array || v.kind == Kind::Object ? m.value_begin : m.value_end;
}

Error deser(std::string msg, std::string_view text, std::size_t at) {
  if (!text.empty()) {
    const json::TextPosition p = json::serde_position(text, at);
    msg += " at line " + std::to_string(p.line) + " column " + std::to_string(p.column);
  }
  return make_error(ErrorKind::StInvalidHeaderDeserialization, {msg});
}

// The streamed `__metadata__` field: its errors, in document order, before any tensor's.
// The root's member spans, scanned only when an error needs a position (a second pass over the
// whole text otherwise).
class RootSpans {
 public:
  RootSpans(std::string_view text, std::size_t root_begin) : text_(text), root_begin_(root_begin) {}
  MemberSpan at(std::size_t k) {
    if (!done_) {
      if (!text_.empty()) spans_ = member_spans(text_, root_begin_);
      done_ = true;
    }
    return k < spans_.size() ? spans_[k] : MemberSpan{};
  }

 private:
  std::string_view text_;
  std::size_t root_begin_;
  bool done_ = false;
  std::vector<MemberSpan> spans_;
};

Status check_metadata(const Value& root, std::string_view text, RootSpans& spans, Header& out) {
  bool seen = false;
  for (std::size_t k = 0; k < root.members.size(); ++k) {
    const auto& [key, v] = root.members[k];
    if (key != "__metadata__") continue;
    if (seen) return deser(duplicate_field("__metadata__"), text, skip_ws(text, spans.at(k).key_end));
    seen = true;
    if (v.is_null()) continue;  // Option::None
    if (v.kind != Kind::Object) return deser(invalid_type(v, expect::kMap), text, invalid_type_at(v, spans.at(k)));
    out.has_metadata = true;
    std::map<std::string_view, std::size_t> index;
    for (std::size_t j = 0; j < v.members.size(); ++j) {
      const auto& [mk, mv] = v.members[j];
      if (mv.kind != Kind::String) {
        const auto inner = text.empty() ? std::vector<MemberSpan>{} : member_spans(text, spans.at(k).value_begin);
        return deser(invalid_type(mv, expect::kString), text, invalid_type_at(mv, j < inner.size() ? inner[j] : MemberSpan{}));
      }
      auto [it, fresh] = index.try_emplace(mk, out.metadata.size());
      if (fresh) out.metadata.emplace_back(mk, mv.text);
      else out.metadata[it->second].second = mv.text;  // HashMap::insert: last value wins
    }
  }
  return Ok{};
}

// serde_json streams `__metadata__`, so its errors win over a syntax error later in the text.
// For a document that failed to parse at byte stop: the first metadata error wholly before stop.
std::optional<Error> metadata_error_before(std::string_view text, std::size_t stop) {
  auto scalar = [&](std::size_t b, std::size_t e) -> std::optional<Value> {
    auto r = json::parse_serde(text.substr(b, e - b));
    if (!r.ok()) return std::nullopt;
    return std::move(r).value();
  };
  bool seen = false;
  std::size_t i = skip_ws(text, 0) + 1;  // past the root '{'
  while (true) {
    i = skip_ws(text, i);
    if (i >= stop || text[i] != '"') return std::nullopt;
    const std::size_t key_end = skip_string(text, i);
    const auto key = scalar(i, key_end);
    if (key_end > stop || !key) return std::nullopt;
    const std::size_t colon = skip_ws(text, key_end);
    const bool meta = key->text == "__metadata__";
    if (meta && seen) return deser(duplicate_field("__metadata__"), text, colon);  // before the ':'
    if (colon >= stop || text[colon] != ':') return std::nullopt;
    seen = seen || meta;
    const std::size_t vb = skip_ws(text, colon + 1);
    if (vb >= stop) return std::nullopt;
    std::size_t ve = 0;
    if (meta && text[vb] == '[') return deser(detail::invalid_type(kUnexpectedSeq, expect::kMap), text, vb);
    if (meta && text[vb] == '{') {
      std::size_t j = skip_ws(text, vb + 1);
      while (j < stop && text[j] == '"') {
        const std::size_t mb = skip_ws(text, skip_ws(text, skip_string(text, j)) + 1);  // past ':'
        if (mb >= stop) return std::nullopt;
        if (text[mb] == '[' || text[mb] == '{')
          return deser(detail::invalid_type(text[mb] == '[' ? kUnexpectedSeq : kUnexpectedMap, expect::kString), text, mb);
        const std::size_t me = skip_value(text, mb);
        if (me > stop) return std::nullopt;
        const auto v = scalar(mb, me);
        if (!v) return std::nullopt;
        if (v->kind != Kind::String) return deser(invalid_type(*v, expect::kString), text, me);
        j = skip_ws(text, me);
        if (j < stop && text[j] == ',') j = skip_ws(text, j + 1);
      }
      if (j >= stop || text[j] != '}') return std::nullopt;
      ve = j + 1;
    } else {
      ve = skip_value(text, vb);
      if (ve > stop) return std::nullopt;
      if (meta) {
        const auto v = scalar(vb, ve);
        if (!v) return std::nullopt;
        if (!v->is_null()) return deser(invalid_type(*v, expect::kMap), text, ve);
      }
    }
    i = skip_ws(text, ve);
    if (i >= stop || text[i] != ',') return std::nullopt;
    ++i;
  }
}

}  // namespace

Status map_header(const Value& root, std::string_view text, Header& out) {
  const std::size_t root_begin = skip_ws(text, 0);
  if (root.kind != Kind::Object) {
    const std::size_t at = root.kind == Kind::Array ? root_begin : skip_value(text, root_begin);
    return deser(invalid_type(root, expect::kHashMetadata), text, at);
  }
  RootSpans spans(text, root_begin);
  W4A8_TRY(check_metadata(root, text, spans, out));
  // Buffered tensors are deserialized once serde_json has consumed the root's closing brace.
  auto root_end = [&] { return text.empty() ? std::size_t{0} : skip_value(text, root_begin); };
  std::vector<std::pair<std::string_view, TensorInfo>> tensors;  // document order
  tensors.reserve(root.members.size());
  for (const auto& [key, value] : root.members) {
    if (key == "__metadata__") continue;
    TensorInfo t;
    if (Msg m = to_tensor(value, t); !m.empty()) return deser(m, text, root_end());
    tensors.emplace_back(key, std::move(t));
  }
  // Name order; a repeated name keeps the last (ties sort by document position).
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int c = tensors[a].first.compare(tensors[b].first);
    return c != 0 ? c < 0 : a < b;
  });
  out.tensors.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    auto& [name, info] = tensors[order[i]];
    if (i + 1 < order.size() && tensors[order[i + 1]].first == name) continue;  // a later duplicate wins
    info.name = Name(name);  // views the DOM until own_names below
    out.tensors.push_back(std::move(info));
  }
  own_names(out);
  return Ok{};
}

Status deserialize_header_reference(std::string_view text, Header& out) {
  const std::size_t root_begin = skip_ws(text, 0);
  // deserialize_map on a non-object fails at once: '[' without reading it, a scalar after it.
  if (root_begin < text.size() && text[root_begin] == '[')
    return deser(detail::invalid_type(kUnexpectedSeq, expect::kHashMetadata), text, root_begin);
  json::ParseResult r = json::parse_serde(text);
  if (r.ok()) return map_header(*r, text, out);
  const json::ParseError& e = r.error();
  const std::string msg = e.serde_message.empty() ? e.detail : e.serde_message;
  Error syntax = make_error(ErrorKind::StInvalidHeaderDeserialization,
                            {msg + " at line " + std::to_string(e.line) + " column " + std::to_string(e.column)});
  if (e.serde_message == json::serde_msg::kTrailingChars) {
    // serde_json deserializes the root value completely before it looks for trailing text.
    std::size_t end = e.offset;
    while (end > root_begin && is_ws(text[end - 1])) --end;
    const std::string_view doc = text.substr(0, end);
    auto root = json::parse_serde(doc);
    if (root.ok()) W4A8_TRY(map_header(*root, doc, out));
    return syntax;
  }
  if (root_begin < text.size() && text[root_begin] == '{')
    if (auto m = metadata_error_before(text, e.offset)) return std::move(*m);
  return syntax;
}

}  // namespace w4a8::st::detail
