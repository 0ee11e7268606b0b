#include "gen/raw_json.hpp"

#include <cstdio>

#include "core/hex.hpp"

namespace w4a8::gen::raw {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_structural(char c) { return c == '{' || c == '}' || c == '[' || c == ']' || c == ',' || c == ':' || c == '"'; }

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  std::optional<Node> document() {
    auto n = value(0);
    skip_ws();
    if (!n || i_ != t_.size()) return std::nullopt;
    return n;
  }

 private:
  void skip_ws() {
    while (i_ < t_.size() && is_ws(t_[i_])) ++i_;
  }

  std::optional<Node> string() {
    const std::size_t start = i_++;
    while (true) {
      i_ = t_.find_first_of("\"\\", i_);
      if (i_ >= t_.size()) return std::nullopt;
      if (t_[i_] == '"') break;
      i_ += 2;  // an escape: skip the escaped byte
    }
    ++i_;
    return Node{Type::String, std::string(t_.substr(start, i_ - start)), {}};
  }

  std::optional<Node> value(std::size_t depth) {
    skip_ws();
    if (i_ >= t_.size()) return std::nullopt;
    const char c = t_[i_];
    if (c == '"') return string();
    if (c == '[' || c == '{') {
      if (depth >= kMaxDepth) return std::nullopt;
      const bool obj = c == '{';
      const char close = obj ? '}' : ']';
      Node n{obj ? Type::Object : Type::Array, {}, {}};
      ++i_;
      skip_ws();
      if (i_ < t_.size() && t_[i_] == close) {
        ++i_;
        return n;
      }
      while (true) {
        if (obj) {
          skip_ws();
          if (i_ >= t_.size() || t_[i_] != '"') return std::nullopt;
          auto k = string();
          if (!k) return std::nullopt;
          skip_ws();
          if (i_ >= t_.size() || t_[i_] != ':') return std::nullopt;
          ++i_;
          n.kids.push_back(std::move(*k));
        }
        auto v = value(depth + 1);
        if (!v) return std::nullopt;
        n.kids.push_back(std::move(*v));
        skip_ws();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < t_.size() && t_[i_] == close) {
          ++i_;
          return n;
        }
        return std::nullopt;
      }
    }
    const std::size_t start = i_;
    while (i_ < t_.size() && !is_ws(t_[i_]) && !is_structural(t_[i_])) ++i_;
    if (i_ == start) return std::nullopt;
    return Node{Type::Scalar, std::string(t_.substr(start, i_ - start)), {}};
  }

  std::string_view t_;
  std::size_t i_ = 0;
};

void emit_to(const Node& n, std::string& out) {
  switch (n.type) {
    case Type::Scalar:
    case Type::String: out += n.text; return;
    case Type::Array:
    case Type::Object: {
      const bool obj = n.type == Type::Object;
      out += obj ? '{' : '[';
      for (std::size_t i = 0; i < n.kids.size(); ++i) {
        if (i) out += obj && i % 2 ? ": " : ", ";
        emit_to(n.kids[i], out);
      }
      out += obj ? '}' : ']';
      return;
    }
  }
}

// \uXXXX at s[i] (i at the backslash): the code unit, or -1.
long unit_at(std::string_view s, std::size_t i) {
  char32_t v = 0;
  if (i + 2 > s.size() || s[i] != '\\' || s[i + 1] != 'u' || !hex::read_u16(s, i + 2, v)) return -1;
  return long(v);
}

// One UTF-8 sequence at s[i] (surrogates allowed, as 'surrogatepass'); advances i. -1: malformed.
long utf8_at(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return s[i++];
  const int len = b0 >= 0xF0 ? 4 : b0 >= 0xE0 ? 3 : b0 >= 0xC2 ? 2 : 0;
  if (len == 0 || b0 > 0xF4 || i + static_cast<std::size_t>(len) > s.size()) return -1;
  long cp = b0 & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
    if ((b & 0xC0) != 0x80) return -1;
    cp = cp << 6 | (b & 0x3F);
  }
  static constexpr long kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF) return -1;
  i += static_cast<std::size_t>(len);
  return cp;
}

bool is_high(char32_t c) { return c >= 0xD800 && c <= 0xDBFF; }
bool is_low(char32_t c) { return c >= 0xDC00 && c <= 0xDFFF; }

std::optional<std::string> respell_string(std::string_view literal) {
  const auto cps = decode_string(literal);
  if (!cps) return std::nullopt;
  std::string out = "\"";
  char buf[16];
  for (std::size_t i = 0; i < cps->size(); ++i) {
    const char32_t c = (*cps)[i];
    // Two lone surrogates written side by side as escapes would be read back as one pair.
    if (is_high(c) && i + 1 < cps->size() && is_low((*cps)[i + 1])) return std::nullopt;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else if (c > 0xFFFF) {
      const char32_t v = c - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04X", static_cast<unsigned>(0xD800 + (v >> 10)), static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
      out += buf;
    }
  }
  return out + "\"";
}

std::string respell_float(std::string_view s) {
  std::size_t e = s.find_first_of("eE");
  std::string mant(s.substr(0, e));
  if (mant.find('.') != std::string::npos) mant += '0';
  std::string sign = "+", digits = "0";
  if (e != std::string_view::npos) {
    std::string_view x = s.substr(e + 1);
    if (!x.empty() && (x[0] == '+' || x[0] == '-')) {
      sign = std::string(1, x[0]);
      x.remove_prefix(1);
    }
    digits = std::string(x);
  }
  if (digits.size() < 4) digits.insert(0, 4 - digits.size(), '0');
  return mant + "e" + sign + digits;
}

}  // namespace

std::optional<Node> parse(std::string_view text) { return Parser(text).document(); }

std::string emit(const Node& n) {
  std::string out;
  emit_to(n, out);
  return out;
}

bool is_float_literal(std::string_view s) {
  std::size_t i = s.starts_with('-') ? 1 : 0;
  if (i >= s.size() || s[i] < '0' || s[i] > '9') return false;
  return s.find_first_of(".eE") != std::string_view::npos;
}

std::optional<std::u32string> decode_string(std::string_view lit) {
  if (lit.size() < 2 || lit.front() != '"' || lit.back() != '"') return std::nullopt;
  const std::string_view s = lit.substr(1, lit.size() - 2);
  std::u32string out;
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] != '\\') {
      const long cp = utf8_at(s, i);
      if (cp < 0) return std::nullopt;
      out.push_back(static_cast<char32_t>(cp));
      continue;
    }
    if (i + 1 >= s.size()) return std::nullopt;
    const char e = s[i + 1];
    static constexpr std::string_view kFrom = "\"\\/bfnrt", kTo = "\"\\/\b\f\n\r\t";
    if (const auto k = kFrom.find(e); k != std::string_view::npos) {
      out.push_back(static_cast<unsigned char>(kTo[k]));
      i += 2;
      continue;
    }
    const long u = unit_at(s, i);
    if (u < 0) return std::nullopt;
    i += 6;
    if (is_high(static_cast<char32_t>(u))) {  // json.loads joins an escaped pair, nothing else
      const long lo = unit_at(s, i);
      if (lo >= 0 && is_low(static_cast<char32_t>(lo))) {
        out.push_back(static_cast<char32_t>(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)));
        i += 6;
        continue;
      }
    }
    out.push_back(static_cast<char32_t>(u));
  }
  return out;
}

std::optional<Node> respell(const Node& n) {
  switch (n.type) {
    case Type::Scalar: return is_float_literal(n.text) ? Node{Type::Scalar, respell_float(n.text), {}} : n;
    case Type::String: {
      auto s = respell_string(n.text);
      if (!s) return std::nullopt;
      return Node{Type::String, std::move(*s), {}};
    }
    case Type::Array: {
      Node out{Type::Array, {}, {}};
      for (const Node& k : n.kids) {
        auto r = respell(k);
        if (!r) return std::nullopt;
        out.kids.push_back(std::move(*r));
      }
      return out;
    }
    case Type::Object: {
      // A dict: the first occurrence of a key fixes its position, the last one its value.
      std::vector<std::u32string> keys;
      std::vector<std::size_t> value_of;  // per kept key: index into n.kids of its last value
      for (std::size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        auto k = decode_string(n.kids[i].text);
        if (!k) return std::nullopt;
        std::size_t j = 0;
        while (j < keys.size() && keys[j] != *k) ++j;
        if (j == keys.size()) {
          keys.push_back(std::move(*k));
          value_of.push_back(i + 1);
        } else {
          value_of[j] = i + 1;
        }
      }
      Node out{Type::Object, {}, {}};
      for (std::size_t j = 0; j < keys.size(); ++j) {
        auto k = respell(n.kids[value_of[j] - 1]);  // any spelling of the key decodes the same
        auto v = respell(n.kids[value_of[j]]);
        if (!k || !v) return std::nullopt;
        out.kids.push_back(std::move(*k));
        out.kids.push_back(std::move(*v));
      }
      return out;
    }
  }
  return std::nullopt;
}

}  // namespace w4a8::gen::raw
