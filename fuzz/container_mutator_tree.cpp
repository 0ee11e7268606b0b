#include "fuzz/container_mutator_tree.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace w4a8::fuzz::tree {
namespace {

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Bytes that end a scalar: whitespace and structural bytes (a table: the scalar loop runs over
// most of a header's bytes on every mutation).
constexpr auto kEndsScalar = [] {
  std::array<bool, 256> t{};
  for (unsigned char c : std::string_view(" \t\n\r{}[],:\"")) t[c] = true;
  return t;
}();

class Parser {
 public:
  Parser(Tree& t, std::string_view s) : t_(t), s_(s) {}

  Id document() {
    const Id root = value(0);
    skip_ws();
    return i_ == s_.size() ? root : kNil;
  }

 private:
  void skip_ws() {
    while (i_ < s_.size() && is_ws(s_[i_])) ++i_;
  }

  Id string() {  // at the opening quote
    const std::size_t start = ++i_;
    const char* p = s_.data() + i_;
    const char* const end = s_.data() + s_.size();
    while (true) {
      const auto* q = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(end - p)));
      if (!q) return kNil;
      const auto* esc = static_cast<const char*>(std::memchr(p, '\\', static_cast<std::size_t>(q - p)));
      if (!esc) {
        i_ = static_cast<std::size_t>(q - s_.data()) + 1;
        return t_.add(Kind::String, s_.substr(start, i_ - 1 - start));
      }
      if (end - esc <= 2) return kNil;  // the escaped byte is the last one: no closing quote
      p = esc + 2;                      // an escape: skip the escaped byte
    }
  }

  Id value(std::size_t depth) {
    skip_ws();
    if (i_ >= s_.size()) return kNil;
    const char c = s_[i_];
    if (c == '"') return string();
    if (c == '[' || c == '{') return container(c == '{', depth);
    const std::size_t start = i_;
    while (i_ < s_.size() && !kEndsScalar[static_cast<unsigned char>(s_[i_])]) ++i_;
    return i_ == start ? kNil : t_.add(Kind::Scalar, s_.substr(start, i_ - start));
  }

  Id container(bool obj, std::size_t depth) {
    if (depth >= kMaxDepth) return kNil;
    const char close = obj ? '}' : ']';
    const Id self = t_.add(obj ? Kind::Object : Kind::Array);
    ++i_;
    skip_ws();
    if (i_ < s_.size() && s_[i_] == close) {
      ++i_;
      return self;
    }
    Id last = kNil;
    const auto link = [&](Id k) {
      (last == kNil ? t_[self].first : t_[last].next) = k;
      last = k;
    };
    while (true) {
      if (obj) {
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != '"') return kNil;
        const Id k = string();
        if (k == kNil) return kNil;
        link(k);
        skip_ws();
        if (i_ >= s_.size() || s_[i_] != ':') return kNil;
        ++i_;
      }
      const Id v = value(depth + 1);
      if (v == kNil) return kNil;
      link(v);
      skip_ws();
      if (i_ < s_.size() && s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (i_ < s_.size() && s_[i_] == close) {
        ++i_;
        return self;
      }
      return kNil;
    }
  }

  Tree& t_;
  std::string_view s_;
  std::size_t i_ = 0;
};

}  // namespace

void Tree::clear() {
  nodes_.clear();
  for (Chunk& c : arena_) c.used = 0;
  chunk_ = 0;
}

Id Tree::parse(std::string_view text) { return Parser(*this, text).document(); }

Id Tree::add(Kind kind, std::string_view text) {
  nodes_.push_back(Node{kind, text, kNil, kNil});
  return static_cast<Id>(nodes_.size() - 1);
}

Id Tree::copy(Id n) {
  const Id self = add(nodes_[n].kind, nodes_[n].text);
  Id last = kNil;
  for (Id k = nodes_[n].first; k != kNil; k = nodes_[k].next) {
    const Id c = copy(k);  // may move nodes_: no references held across it
    (last == kNil ? nodes_[self].first : nodes_[last].next) = c;
    last = c;
  }
  return self;
}

std::string_view Tree::keep(std::string_view s) {
  while (chunk_ < arena_.size() && arena_[chunk_].cap - arena_[chunk_].used < s.size()) ++chunk_;
  if (chunk_ == arena_.size()) {
    const std::size_t cap = std::max<std::size_t>(4096, s.size());
    arena_.push_back(Chunk{std::make_unique<char[]>(cap), cap, 0});
  }
  Chunk& c = arena_[chunk_];
  char* at = c.bytes.get() + c.used;
  if (!s.empty()) std::memcpy(at, s.data(), s.size());
  c.used += s.size();
  return {at, s.size()};
}

void Tree::emit(Id n, std::string& out) const {
  const Node& x = nodes_[n];
  switch (x.kind) {
    case Kind::Scalar: out += x.text; return;
    case Kind::String:
      out += '"';
      out += x.text;
      out += '"';
      return;
    case Kind::Array:
    case Kind::Object: {
      const bool obj = x.kind == Kind::Object;
      out += obj ? '{' : '[';
      std::size_t i = 0;
      for (Id k = x.first; k != kNil; k = nodes_[k].next, ++i) {
        if (i) out += obj && i % 2 ? ": " : ", ";
        emit(k, out);
      }
      out += obj ? '}' : ']';
      return;
    }
  }
}

}  // namespace w4a8::fuzz::tree
