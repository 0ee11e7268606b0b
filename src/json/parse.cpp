#include "json/parse.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <new>
#include <utility>
#include <vector>

#include "core/hex.hpp"
#include "core/key_slots.hpp"
#include "json/bytes_decode.hpp"
#include "json/flat_object.hpp"
#include "json/number.hpp"
#include "json/scan.hpp"
#include "json/serde_messages.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {

namespace {

enum class Dialect { Python, Serde };

inline constexpr int kSerdeMaxDepth = 127;         // serde_json's remaining_depth 128 hits 0 on the 128th
inline constexpr std::size_t kIndexedObjectMin = 16;      // members before a key index pays off

// serde_json's ErrorCode Display texts.
using namespace serde_msg;

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Iterative parser over validated WTF-8 (Python) or UTF-8 (Serde) text: open containers live on
// an explicit stack (bounded by the dialect's depth limit), so no input can exhaust the C++ stack,
// even under sanitizers. Every step returns false after recording the first failure, in the same
// left-to-right order in which upstream raises.
class Parser {
 public:
  // python_depth: the Python dialect's nesting limit (LoadsOptions::max_depth).
  Parser(std::string_view s, Dialect d, int python_depth = kPythonMaxDepth)
      : s_(s), d_(d), python_depth_(python_depth) {}

  ParseResult run() {
    Value root;
    skip_ws();
    if (parse_document(root)) {
      skip_ws();
      if (pos_ != s_.size()) fail(ParseFailure::Syntax, pos_, "extra data", kTrailingChars, peeked(pos_));
    }
    if (err_.failure != ParseFailure::None) return std::move(err_);
    return root;
  }

 private:
  // A container being filled, built in place where its value goes (the root, or the slot its
  // parent made for it): a slot stays put while it is open, because its parent only grows after
  // it closes. Values are never moved after they are made (a marker nested to the recursion limit
  // costs one allocation a level and nothing else).
  struct Open {
    Value* v = nullptr;
    bool array = false;
    // Python objects: key -> member position, made once the object is large (most never are, and a
    // marker nested to the recursion limit opens ~1,000 containers). Positions only, the keys are
    // the members': a node and a key copy per member made the index most of a large object's
    // memory and time (a 1.5 M-layer metadata document: 40 % of the run in the map).
    KeySlots index;
  };

  bool python() const { return d_ == Dialect::Python; }

  // serde_msg/serde_at: serde_json's text and the byte index it reports (Serde dialect only).
  bool fail(ParseFailure f, std::size_t at, std::string detail, std::string_view serde_msg = {},
            std::size_t serde_at = 0) {
    if (err_.failure == ParseFailure::None) {
      err_.failure = f;
      err_.offset = at;
      err_.detail = std::move(detail);
      if (!python()) {
        err_.serde_message.assign(serde_msg);
        const TextPosition p = serde_position(s_, std::min(serde_at, s_.size()));
        err_.line = p.line;
        err_.column = p.column;
      }
    }
    return false;
  }

  // serde_json's peek_error: the position just past the byte it peeked at (clamped at the end).
  std::size_t peeked(std::size_t i) const { return i < s_.size() ? i + 1 : s_.size(); }
  bool eof_at(std::size_t i) const { return i >= s_.size(); }

  void skip_ws() {
    while (pos_ < s_.size() && is_ws(s_[pos_])) ++pos_;
  }

  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  bool match(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // After '{' (first) or ',' inside an object: "key" ws ':' ws into key_, leaving pos_ at the
  // member's value.
  bool parse_member_name(bool first) {
    if (!at('"')) {
      const bool trailing_comma = !python() && at('}') && !first;
      const std::string_view serde = eof_at(pos_) ? (first ? kEofObject : kEofValue)
                                     : trailing_comma ? kTrailingComma : kKeyNotString;
      return fail(ParseFailure::Syntax, pos_, trailing_comma ? "trailing comma" : "expecting property name",
                  serde, peeked(pos_));
    }
    key_.clear();
    if (!parse_string(key_)) return false;
    skip_ws();
    if (!at(':'))
      return fail(ParseFailure::Syntax, pos_, "expecting ':'", eof_at(pos_) ? kEofObject : kExpectedColon,
                  peeked(pos_));
    ++pos_;
    skip_ws();
    return true;
  }

  // At '[' or '{': checks the depth limit and makes out the container; when it is empty, closes it
  // again (slot = nullptr), else opens it and leaves pos_ and slot at its first value.
  bool open_container(std::vector<Open>& stack, Value& out, Value*& slot) {
    const bool array = s_[pos_] == '[';
    const int limit = python() ? python_depth_ : kSerdeMaxDepth;
    const std::size_t depth = stack.size() + 1;
    if (depth > static_cast<std::size_t>(limit) || depth > static_cast<std::size_t>(kMaxDepth)) {
      err_.in_array = array;
      return fail(ParseFailure::TooDeep, pos_, "too deep", kRecursion, peeked(pos_));
    }
    ++pos_;
    skip_ws();
    out.kind = array ? Kind::Array : Kind::Object;
    slot = nullptr;
    if (at(array ? ']' : '}')) {
      ++pos_;
      return true;
    }
    if (array && eof_at(pos_)) return fail(ParseFailure::Syntax, pos_, "expecting value", kEofList, pos_);
    Open& top = stack.emplace_back();
    top.v = &out;
    top.array = array;
    if (array) {
      slot = &out.items.emplace_back();
      return true;
    }
    if (!parse_member_name(/*first=*/true)) return false;
    slot = member_slot(top);
    return true;
  }

  // serde_json's parse_ident after the first letter: each later byte is consumed, then compared.
  bool serde_ident_fail(std::string_view word) {
    for (std::size_t k = 1; k < word.size(); ++k) {
      if (eof_at(pos_ + k)) return fail(ParseFailure::Syntax, pos_, "expecting value", kEofValue, s_.size());
      if (s_[pos_ + k] != word[k])
        return fail(ParseFailure::Syntax, pos_, "expecting value", kExpectedIdent, pos_ + k + 1);
    }
    return fail(ParseFailure::Syntax, pos_, "expecting value", kExpectedIdent, pos_ + word.size());
  }

  // depth: the containers around the value.
  bool parse_scalar(Value& out, std::size_t depth) {
    if (pos_ >= s_.size()) return fail(ParseFailure::Syntax, pos_, "expecting value", kEofValue, pos_);
    // A constant's parse_constant call is one level more than the containers around it.
    if (python() && depth >= static_cast<std::size_t>(python_depth_) && depth > 0 && python_constant_at(pos_)) {
      err_.calling = true;
      return fail(ParseFailure::TooDeep, pos_, "too deep for parse_constant", kRecursion, peeked(pos_));
    }
    if (!python()) {
      const char c = s_[pos_];
      if (c == 'n' && s_.substr(pos_, 4) != "null") return serde_ident_fail("null");
      if (c == 't' && s_.substr(pos_, 4) != "true") return serde_ident_fail("true");
      if (c == 'f' && s_.substr(pos_, 5) != "false") return serde_ident_fail("false");
    }
    switch (s_[pos_]) {
      case '"': out.kind = Kind::String; return parse_string(out.text);
      case 'n': if (match("null")) { out.kind = Kind::Null; return true; } break;
      case 't': if (match("true")) { out = Value::from_bool(true); return true; } break;
      case 'f': if (match("false")) { out = Value::from_bool(false); return true; } break;
      case 'N':
        if (python() && match("NaN")) { out = constant(std::numeric_limits<double>::quiet_NaN(), "NaN"); return true; }
        break;
      case 'I':
        if (python() && match("Infinity")) { out = constant(std::numeric_limits<double>::infinity(), "Infinity"); return true; }
        break;
      case '-':
        if (python() && match("-Infinity")) { out = constant(-std::numeric_limits<double>::infinity(), "-Infinity"); return true; }
        break;
      default: break;
    }
    return parse_number(out);
  }

  bool parse_document(Value& root) {
    // Kept across documents: a deeply nested one would otherwise regrow it (and fault its pages in)
    // every time.
    thread_local std::vector<Open> stack;
    stack.clear();
    Value* slot = &root;  // where the next value goes: a fresh Value
    while (true) {
      // pos_ is at a value: read a scalar or open a container.
      if (at('[') || at('{')) {
        if (!open_container(stack, *slot, slot)) return false;
        if (slot != nullptr) continue;
      } else if (!parse_scalar(*slot, stack.size())) {
        return false;
      }
      // A value is complete: close every container that ends here, then find the next slot.
      while (true) {
        if (stack.empty()) return true;
        Open& top = stack.back();
        const bool array = top.array;
        skip_ws();
        if (at(array ? ']' : '}')) {
          ++pos_;
          stack.pop_back();
          continue;
        }
        if (!at(',')) {
          const std::string_view serde = eof_at(pos_) ? (array ? kEofList : kEofObject)
                                         : array ? kExpectedCommaList : kExpectedCommaObject;
          return fail(ParseFailure::Syntax, pos_, "expecting ','", serde, peeked(pos_));
        }
        ++pos_;
        skip_ws();
        if (array) {
          if (!python() && at(']')) return fail(ParseFailure::Syntax, pos_, "trailing comma", kTrailingComma, peeked(pos_));
          slot = &top.v->items.emplace_back();
        } else {
          if (!parse_member_name(/*first=*/false)) return false;
          slot = member_slot(top);
        }
        break;
      }
    }
  }

  // Member i's key, for the index (a view: members move as the block grows, positions do not).
  struct MemberKey {
    const Members& m;
    std::string_view operator()(std::uint32_t i) const { return m[i].first; }
  };

  // The slot for member key_ of obj, a fresh Value. Python: dict[key] = val, so a repeated key
  // keeps its first position and takes the new value (the old one is dropped now; a failure later
  // fails the whole document). The Serde dialect keeps every member in document order (the
  // header reference maps duplicates as the crate does).
  Value* member_slot(Open& obj) {
    Members& m = obj.v->members;
    if (!python()) return &append_member(m);
    const std::size_t count = m.size();
    if (count < kIndexedObjectMin) {
      for (auto& [k, v] : m)
        if (k == key_) {
          v = Value{};
          return &v;
        }
      append_member(m);
      if (count + 1 == kIndexedObjectMin) obj.index.rebuild(m.size(), 2 * m.size(), MemberKey{m});
      return &m.back().second;
    }
    if (count >= KeySlots::kEmpty) throw std::bad_alloc();  // (positions are 32-bit: 400 GB of members)
    const auto [pos, added] = obj.index.try_emplace(key_, static_cast<std::uint32_t>(count), MemberKey{m});
    if (!added) {
      m[pos].second = Value{};
      return &m[pos].second;
    }
    return &append_member(m);
  }

  // A member named key_ with a fresh value made in place.
  Value& append_member(Members& m) {
    return m.emplace_back(std::piecewise_construct, std::forward_as_tuple(std::move(key_)), std::forward_as_tuple())
        .second;
  }

  bool read_hex4(std::size_t at, char32_t& out) const { return hex::read_u16(s_, at, out); }

  // At the opening quote. Control characters (< 0x20) are errors in both dialects (json strict=True).
  bool parse_string(std::string& out) {
    const std::size_t begin = pos_++;
    while (true) {
      const std::size_t run = pos_;
      pos_ = static_cast<std::size_t>(scan::string_stop(s_.data() + pos_, s_.data() + s_.size()) - s_.data());
      if (pos_ < s_.size() && static_cast<unsigned char>(s_[pos_]) < 0x20)
        return fail(ParseFailure::Syntax, pos_, "invalid control character", kControlChar, pos_ + 1);
      out.append(s_.substr(run, pos_ - run));
      if (pos_ >= s_.size()) return fail(ParseFailure::Syntax, begin, "unterminated string", kEofString, pos_);
      if (s_[pos_++] == '"') return true;
      if (pos_ >= s_.size()) return fail(ParseFailure::Syntax, begin, "unterminated string", kEofString, pos_);
      const char e = s_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); continue;
        case '\\': out.push_back('\\'); continue;
        case '/': out.push_back('/'); continue;
        case 'b': out.push_back('\b'); continue;
        case 'f': out.push_back('\f'); continue;
        case 'n': out.push_back('\n'); continue;
        case 'r': out.push_back('\r'); continue;
        case 't': out.push_back('\t'); continue;
        case 'u': break;
        default: return fail(ParseFailure::Syntax, pos_ - 2, "invalid escape", kInvalidEscape, pos_);
      }
      char32_t cp = 0;
      if (!read_hex4(pos_, cp))
        return fail(ParseFailure::Syntax, pos_ - 1, "invalid \\uXXXX escape",
                    eof_at(pos_ + 3) ? kEofString : kInvalidEscape, eof_at(pos_ + 3) ? s_.size() : pos_ + 4);
      pos_ += 4;
      if (!python()) {
        if (!serde_surrogates(cp)) return false;
        append_wtf8(out, cp);
        continue;
      }
      if (is_high_surrogate(cp)) {
        // A following "\uDC00".."\uDFFF" escape joins; Python keeps anything else as a lone surrogate.
        char32_t low = 0;
        const bool has_escape = s_.substr(pos_, 2) == "\\u";
        if (has_escape && read_hex4(pos_ + 2, low) && is_low_surrogate(low)) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          pos_ += 6;
        }
      }
      append_wtf8(out, cp);
    }
  }

  // serde_json's parse_unicode_escape (validating, as for a str) after "\\uXXXX": a high surrogate
  // needs "\\u" + a low one right after (consumed byte by byte); a low one alone is an error.
  bool serde_surrogates(char32_t& cp) {
    if (is_low_surrogate(cp))
      return fail(ParseFailure::Syntax, pos_, "lone trailing surrogate", kLoneSurrogate, pos_);
    if (!is_high_surrogate(cp)) return true;
    for (std::size_t k = 0; k < 2; ++k) {
      if (eof_at(pos_ + k)) return fail(ParseFailure::Syntax, pos_, "lone leading surrogate", kEofString, s_.size());
      if (s_[pos_ + k] != "\\u"[k])
        return fail(ParseFailure::Syntax, pos_, "lone leading surrogate", kEndOfHexEscape, pos_ + k + 1);
    }
    char32_t low = 0;
    if (!read_hex4(pos_ + 2, low))
      return fail(ParseFailure::Syntax, pos_, "lone leading surrogate", eof_at(pos_ + 5) ? kEofString : kInvalidEscape,
                  eof_at(pos_ + 5) ? s_.size() : pos_ + 6);
    if (!is_low_surrogate(low))
      return fail(ParseFailure::Syntax, pos_, "lone leading surrogate", kLoneSurrogate, pos_ + 6);
    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    pos_ += 6;
    return true;
  }

  // serde_json's failures inside a number literal starting at start (Serde dialect): the message
  // and index it reports, or false when the grammar holds. Mirrors parse_integer/parse_decimal/
  // parse_exponent, including the i32 exponent overflow (reported mid-literal).
  bool serde_number_error(std::size_t start) {
    std::size_t i = start;
    if (s_[i] == '-') {
      ++i;
      if (eof_at(i)) return fail(ParseFailure::Syntax, start, "expecting value", kEofValue, s_.size());
    }
    if (!is_digit(s_[i])) return fail(ParseFailure::Syntax, start, "expecting value", kInvalidNumber, i + 1);
    bool zero = true;  // serde's zero significand decides whether an exponent overflow is an error
    if (s_[i] == '0') {
      ++i;
      if (!eof_at(i) && is_digit(s_[i])) return fail(ParseFailure::Syntax, i, "invalid number", kInvalidNumber, i + 1);
    } else {
      zero = false;
      while (!eof_at(i) && is_digit(s_[i])) ++i;
    }
    if (!eof_at(i) && s_[i] == '.') {
      ++i;
      if (eof_at(i)) return fail(ParseFailure::Syntax, i, "invalid number", kEofValue, s_.size());
      if (!is_digit(s_[i])) return fail(ParseFailure::Syntax, i, "invalid number", kInvalidNumber, i + 1);
      for (; !eof_at(i) && is_digit(s_[i]); ++i) zero = zero && s_[i] == '0';
    }
    if (!eof_at(i) && (s_[i] == 'e' || s_[i] == 'E')) {
      ++i;
      bool positive = true;
      if (!eof_at(i) && (s_[i] == '+' || s_[i] == '-')) positive = s_[i++] == '+';
      if (eof_at(i)) return fail(ParseFailure::Syntax, i, "invalid number", kEofValue, s_.size());
      if (!is_digit(s_[i])) return fail(ParseFailure::Syntax, i, "invalid number", kInvalidNumber, i + 1);
      constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
      std::int64_t exp = 0;
      for (; !eof_at(i) && is_digit(s_[i]); ++i) {
        const int d = s_[i] - '0';
        if (exp >= kMax / 10 && (exp > kMax / 10 || d > kMax % 10)) {
          if (!zero && positive) return fail(ParseFailure::Syntax, i, "number out of range", kOutOfRange, i + 1);
          break;  // serde skips the remaining digits: the value is 0
        }
        exp = exp * 10 + d;
      }
    }
    return true;
  }

  // JSON number grammar (both dialects); Python converts ints exactly (<= 4300 digits) and floats
  // correctly rounded; Serde keeps the literal (Int or Float by its form) for the caller to type.
  // Serde's grammar errors are all raised by serde_number_error first, so the scan below only
  // fails for Python, which backtracks where serde_json stops.
  bool parse_number(Value& out) {
    const std::size_t start = pos_;
    if (!python()) {
      if (!is_digit(s_[pos_]) && s_[pos_] != '-')
        return fail(ParseFailure::Syntax, start, "expecting value", kExpectedValue, pos_ + 1);
      if (!serde_number_error(start)) return false;
    }
    std::size_t i = pos_;
    if (i < s_.size() && s_[i] == '-') ++i;
    const std::size_t int_start = i;
    if (i < s_.size() && s_[i] >= '1' && s_[i] <= '9') {
      while (i < s_.size() && is_digit(s_[i])) ++i;
    } else if (i < s_.size() && s_[i] == '0') {
      ++i;
    } else {
      return fail(ParseFailure::Syntax, start, "expecting value");
    }
    const std::size_t int_digits = i - int_start;
    bool is_float = false;
    if (i + 1 < s_.size() && s_[i] == '.' && is_digit(s_[i + 1])) {
      is_float = true;
      i += 2;
      while (i < s_.size() && is_digit(s_[i])) ++i;
    }
    if (i < s_.size() && (s_[i] == 'e' || s_[i] == 'E')) {
      std::size_t j = i + 1;
      if (j < s_.size() && (s_[j] == '-' || s_[j] == '+')) ++j;
      const std::size_t exp_digits = j;
      while (j < s_.size() && is_digit(s_[j])) ++j;
      if (j > exp_digits) {
        is_float = true;
        i = j;
      }
      // Python backtracks to before 'e'; what follows then fails as extra data or a missing ','.
    }
    const std::string_view lit = s_.substr(start, i - start);
    pos_ = i;
    if (!python()) {
      // serde_json converts every number it buffers (all of a safetensors header) and fails on
      // overflow; ints beyond 64 bits go through its f64 path as well.
      double f = 0.0;
      if (!serde_float_from_literal(lit, f)) return fail(ParseFailure::Syntax, i, "number out of range", kOutOfRange, i);
      if (is_float) {
        out = Value::from_float(f);
        out.text.assign(lit);
      } else {
        out.kind = Kind::Int;
        out.text.assign(lit);
      }
      return true;
    }
    if (is_float) {
      out = Value::from_float(float_from_literal(lit));
      return true;
    }
    if (int_digits > kPythonMaxIntDigits) {
      err_.digits = int_digits;
      return fail(ParseFailure::IntTooLong, start, "int literal over 4300 digits");
    }
    out.kind = Kind::Int;
    out.text.assign(lit);
    if (out.text == "-0") out.text = "0";
    return true;
  }

  // json's NaN / Infinity / -Infinity: one shared float object each in Python, told apart from an
  // overflowing literal (1e999, a new float) by the token kept as the text (json::same_object).
  bool python_constant_at(std::size_t at) const {
    const std::string_view rest = s_.substr(at);
    return rest.starts_with("NaN") || rest.starts_with("Infinity") || rest.starts_with("-Infinity");
  }
  static Value constant(double d, std::string_view token) {
    Value v = Value::from_float(d);
    v.text.assign(token);
    return v;
  }

  std::string_view s_;
  Dialect d_;
  int python_depth_;  // nested containers the Python dialect accepts (LoadsOptions::max_depth)
  std::size_t pos_ = 0;
  ParseError err_;
  std::string key_;  // the member name just read (one at a time: its slot is made before its value)
};

ParseError fail_unicode(std::size_t offset) {
  ParseError e;
  e.failure = ParseFailure::Unicode;
  e.offset = offset;
  e.detail = "invalid text encoding";
  return e;
}

}  // namespace

namespace detail {
ParseResult loads_general(std::string_view text, const LoadsOptions& opt) {
  return Parser(text, Dialect::Python, opt.max_depth).run();
}
}  // namespace detail

ParseResult loads_str(std::string_view text, const LoadsOptions& opt) {
  if (auto flat = loads_flat_object(text)) return std::move(*flat);
  const std::size_t bad = find_invalid_wtf8(text, /*allow_surrogates=*/true);
  if (bad != std::string_view::npos) return fail_unicode(bad);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    ParseError e;
    e.failure = ParseFailure::Syntax;
    e.detail = "unexpected UTF-8 BOM";
    return e;
  }
  return Parser(text, Dialect::Python, opt.max_depth).run();
}

ParseResult loads_bytes(std::span<const std::uint8_t> bytes, std::size_t spare_members, const LoadsOptions& opt) {
  // Printable ASCII (all the flat form accepts) is its own UTF-8 decoding: no copy needed.
  if (auto flat = loads_flat_object({reinterpret_cast<const char*>(bytes.data()), bytes.size()}, spare_members))
    return std::move(*flat);
  std::string text;
  std::size_t err = 0;
  if (!decode_json_bytes(bytes, text, err)) return fail_unicode(err);
  return Parser(text, Dialect::Python, opt.max_depth).run();
}

TextPosition serde_position(std::string_view text, std::size_t index) {
  index = std::min(index, text.size());
  // memchr from newline to newline: every rejected header computes this, and a byte loop here was
  // one comparison hook per header byte in the fuzz builds (7 % of fuzz_container's time).
  TextPosition p;
  std::size_t line_start = 0;
  // (line_start < index first: memchr must not see the null data() of an empty view)
  while (line_start < index) {
    const void* nl = std::memchr(text.data() + line_start, '\n', index - line_start);
    if (nl == nullptr) break;
    ++p.line;
    line_start = static_cast<std::size_t>(static_cast<const char*>(nl) - text.data()) + 1;
  }
  p.column = index - line_start;
  return p;
}

ParseResult parse_serde(std::string_view text) {
  const std::size_t bad = find_invalid_wtf8(text, /*allow_surrogates=*/false);
  if (bad != std::string_view::npos) return fail_unicode(bad);
  return Parser(text, Dialect::Serde).run();
}

}  // namespace w4a8::json
