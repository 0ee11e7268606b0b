// A tensor's name in a parsed Header: a read-only view of UTF-8 bytes that the Header keeps alive
// (Header::storage: the file's mapping, or one buffer of names), so parsing allocates nothing per
// tensor. It reads like std::string_view, converts to std::string where one is needed, and compares
// with strings of every kind.
// Lifetime: like a pointer into the Header. Copies of the Header share the bytes; a Name copied out
// of its Header must not outlive every copy of that Header.
#pragma once

#include <bit>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/key_hash.hpp"

namespace w4a8::st {

class Name {
 public:
  using size_type = std::size_t;
  using const_iterator = const char*;
  using iterator = const char*;
  using value_type = char;
  static constexpr size_type npos = std::string_view::npos;

  constexpr Name() = default;
  // pre: [p, p + n) stays valid while this Name (or a copy) is used.
  // pre: s.size() < 2^32 (a name lives in a header of at most 100 MB).
  constexpr explicit Name(std::string_view s)
      : p_(s.data()), n_(static_cast<std::uint32_t>(s.size())), tail_(pack_tail(s.data(), s.size())) {}

  constexpr operator std::string_view() const noexcept { return {p_, n_}; }
  constexpr std::string_view view() const noexcept { return {p_, n_}; }
  std::string str() const { return std::string(p_, n_); }
  operator std::string() const { return str(); }  // (implicit: code written for std::string names)

  constexpr const char* data() const noexcept { return p_; }
  constexpr size_type size() const noexcept { return n_; }
  constexpr size_type length() const noexcept { return n_; }
  constexpr bool empty() const noexcept { return n_ == 0; }
  constexpr const char* begin() const noexcept { return p_; }
  constexpr const char* end() const noexcept { return p_ + n_; }
  constexpr char operator[](size_type i) const { return p_[i]; }
  constexpr char front() const { return p_[0]; }
  constexpr char back() const { return p_[n_ - 1]; }

  constexpr std::string_view substr(size_type pos = 0, size_type n = npos) const { return view().substr(pos, n); }
  constexpr bool starts_with(std::string_view s) const noexcept { return view().starts_with(s); }
  constexpr bool starts_with(char c) const noexcept { return view().starts_with(c); }
  // Its last bytes are held in place: a suffix that differs there is told apart without reading
  // the name (a table's names lie scattered through a header; the suffix tests that group tensors
  // into layers would otherwise miss the cache on nearly every one).
  constexpr bool ends_with(std::string_view s) const noexcept {
    if (s.size() > n_) return false;
    const std::size_t k = s.size() < kTail ? s.size() : kTail;
    if (k > 0 && (tail_ >> (8 * (kTail - k))) != pack_tail(s.data() + s.size() - k, k) >> (8 * (kTail - k))) return false;
    return s.size() <= kTail || same_bytes(p_ + n_ - s.size(), s.data(), s.size() - kTail);
  }
  constexpr bool ends_with(char c) const noexcept { return view().ends_with(c); }
  constexpr size_type find(std::string_view s, size_type pos = 0) const noexcept { return view().find(s, pos); }
  constexpr size_type find(char c, size_type pos = 0) const noexcept { return view().find(c, pos); }
  constexpr size_type rfind(std::string_view s, size_type pos = npos) const noexcept { return view().rfind(s, pos); }
  constexpr size_type rfind(char c, size_type pos = npos) const noexcept { return view().rfind(c, pos); }
  constexpr int compare(std::string_view s) const noexcept { return view().compare(s); }
  constexpr int compare(size_type pos, size_type n, std::string_view s) const { return view().compare(pos, n, s); }

  // Byte order (= code point order for UTF-8), against a Name or anything that reads as a string_view.
  friend constexpr bool operator==(const Name& a, const Name& b) noexcept { return a.view() == b.view(); }
  friend constexpr std::strong_ordering operator<=>(const Name& a, const Name& b) noexcept {
    return a.view().compare(b.view()) <=> 0;  // libc++ 14 has no <=> for string_view
  }
  template <class S>
    requires(std::is_convertible_v<const S&, std::string_view> && !std::is_same_v<S, Name>)
  friend constexpr bool operator==(const Name& a, const S& b) noexcept {
    return a.view() == std::string_view(b);
  }
  template <class S>
    requires(std::is_convertible_v<const S&, std::string_view> && !std::is_same_v<S, Name>)
  friend constexpr std::strong_ordering operator<=>(const Name& a, const S& b) noexcept {
    return a.view().compare(std::string_view(b)) <=> 0;
  }

  friend std::string operator+(const Name& a, std::string_view b) { return std::string(a.view()).append(b); }
  friend std::string operator+(std::string_view a, const Name& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const Name& a, const char* b) { return std::string(a.view()).append(b); }
  friend std::string operator+(const char* a, const Name& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(const Name& a, const std::string& b) { return std::string(a.view()).append(b); }
  friend std::string operator+(const std::string& a, const Name& b) { return std::string(a).append(b.view()); }
  friend std::string operator+(std::string&& a, const Name& b) { return std::move(a.append(b.view())); }
  friend std::string operator+(const Name& a, char b) { return std::string(a.view()) + b; }
  friend std::ostream& operator<<(std::ostream& os, const Name& n) { return os << n.view(); }

 private:
  static constexpr std::size_t kTail = 4;
  // a[0, n) == b[0, n), in words (no library call: suffixes are a few bytes). Not json::scan's
  // mismatch, which is made for long shared prefixes: it compares a tail under 8 bytes byte by
  // byte, and validate at 20k tensors took 0.07 ms longer with it.
  static constexpr bool same_bytes(const char* a, const char* b, std::size_t n) noexcept {
    if (std::is_constant_evaluated() || n < 4) return std::string_view(a, n) == std::string_view(b, n);
    const auto word = [](const char* p) {
      std::uint32_t w;
      std::memcpy(&w, p, 4);
      return w;
    };
    for (; n > 4; n -= 4, a += 4, b += 4)
      if (word(a) != word(b)) return false;
    return word(a + n - 4) == word(b + n - 4);  // the last 4, overlapping bytes already equal
  }
  // The last min(n, 4) bytes of p[0, n) as a little-endian word, the last byte highest (a shorter
  // name's bytes are the high ones, zeros below).
  static constexpr std::uint32_t pack_tail(const char* p, std::size_t n) noexcept {
    std::uint32_t t = 0;
    if (!std::is_constant_evaluated() && n >= kTail) {
      std::memcpy(&t, p + n - kTail, kTail);
      return std::endian::native == std::endian::little ? t : __builtin_bswap32(t);
    }
    for (std::size_t i = n < kTail ? 0 : n - kTail; i < n; ++i)
      t = (t >> 8) | static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << 24;
    return t;
  }

  const char* p_ = "";
  std::uint32_t n_ = 0;
  std::uint32_t tail_ = 0;  // pack_tail(p_, n_)
};
static_assert(sizeof(Name) == 16);

}  // namespace w4a8::st

template <>
struct std::hash<w4a8::st::Name> {
  std::size_t operator()(const w4a8::st::Name& n) const noexcept { return w4a8::KeyHash{}(n.view()); }
};
