#include "json/serde_reader.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/hex.hpp"
#include "core/pages.hpp"
#include "json/number.hpp"
#include "json/wtf8.hpp"

namespace w4a8::json {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool SerdeReader::fail(std::string_view msg, std::size_t at) {
  if (!failed_) {
    failed_ = true;
    msg_.assign(msg);
    at_ = std::min(at, n_);
  }
  return false;
}

bool SerdeReader::read_hex4(std::size_t at, char32_t& out) const { return hex::read_u16(text(), at, out); }

// After "\uXXXX" (cursor past it): a high surrogate needs "\u" + a low one right after, checked
// byte by byte as serde_json does; a low one alone is an error.
bool SerdeReader::read_surrogate_pair(char32_t& cp) {
  if (is_low_surrogate(cp)) return fail_here(serde_msg::kLoneSurrogate);
  if (!is_high_surrogate(cp)) return true;
  for (std::size_t k = 0; k < 2; ++k) {
    if (i_ + k >= n_) return fail(serde_msg::kEofString, n_);
    if (s_[i_ + k] != "\\u"[k]) return fail(serde_msg::kEndOfHexEscape, i_ + k + 1);
  }
  char32_t low = 0;
  if (!read_hex4(i_ + 2, low)) {
    const bool short_text = i_ + 5 >= n_;
    return fail(short_text ? serde_msg::kEofString : serde_msg::kInvalidEscape, short_text ? n_ : i_ + 6);
  }
  if (!is_low_surrogate(low)) return fail(serde_msg::kLoneSurrogate, i_ + 6);
  cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
  i_ += 6;
  return true;
}

// Where the string whose text reaches j ends: its closing '"' (one after an even run of '\\'), or the
// end of the input. Decoding never lengthens a string (an escape of 2 or 6 bytes gives 1 to 3, a
// pair of 12 gives 4), so the text up to there bounds what it decodes to.
std::size_t SerdeReader::string_end_bound(std::size_t j) const {  // (j: inside the string, past its '"')
  for (const char* p = s_ + j; p < s_ + n_; ++p) {
    p = static_cast<const char*>(std::memchr(p, '"', static_cast<std::size_t>(s_ + n_ - p)));
    if (p == nullptr) break;
    std::size_t slashes = 0;  // (each run is counted once: for the quote right after it)
    while (p - slashes > s_ + j && p[-1 - static_cast<std::ptrdiff_t>(slashes)] == '\\') ++slashes;
    if (slashes % 2 == 0) return static_cast<std::size_t>(p - s_);
  }
  return n_;
}

// From the first '\\' or control character at j of a string whose text starts at begin. The text
// is decoded through a pointer into scratch_ (kept at its largest size): a _quantization_metadata
// value escapes every quote of the JSON inside it (50,000 escapes in a 20k-tensor checkpoint's),
// and std::string's append and push_back per piece cost about 150 instructions an escape. The
// scratch grows by doubling up to kExactScratchFrom, then once to what the rest of the string can
// need (string_end_bound): doubling all the way left each smaller buffer behind, freed but still
// resident under the CLI's heap, which keeps its pages (63 MB of them after a 44 MB metadata value,
// the largest part of a hostile header's peak). Below that size the bound's scan (a quarter more
// instructions for the value's decoding) does not pay.
bool SerdeReader::read_string_slow(std::size_t begin, std::size_t j, std::string_view& out) {
  char* o = scratch_.get();  // the next decoded byte goes here
  std::size_t run = begin;   // s_[run, i_) is plain text, copied as it is
  i_ = j;
  while (true) {
    if (i_ < n_ && static_cast<unsigned char>(s_[i_]) < 0x20) return fail(serde_msg::kControlChar, i_ + 1);
    // Copy the run, leaving room for an escape (at most 4 bytes). A short run, the usual one between
    // two escapes, is copied as a fixed 16 bytes (one load, one store) where the input has them:
    // the bytes beyond it are overwritten next.
    const std::size_t n = i_ - run;
    if (scratch_size() - static_cast<std::size_t>(o - scratch_.get()) < n + 16) o = grow_scratch(o, n + 16, run);
    if (n <= 16 && run + 16 <= n_) std::memcpy(o, s_ + run, 16);
    else std::memcpy(o, s_ + run, n);
    o += n;
    if (i_ >= n_) return fail_here(serde_msg::kEofString);
    if (s_[i_++] == '"') {
      out = {scratch_.get(), static_cast<std::size_t>(o - scratch_.get())};
      return true;
    }
    if (i_ >= n_) return fail_here(serde_msg::kEofString);
    switch (s_[i_++]) {
      case '"': *o++ = '"'; break;
      case '\\': *o++ = '\\'; break;
      case '/': *o++ = '/'; break;
      case 'b': *o++ = '\b'; break;
      case 'f': *o++ = '\f'; break;
      case 'n': *o++ = '\n'; break;
      case 'r': *o++ = '\r'; break;
      case 't': *o++ = '\t'; break;
      case 'u': {
        char32_t cp = 0;
        if (!read_hex4(i_, cp)) {
          const bool short_text = i_ + 3 >= n_;
          return fail(short_text ? serde_msg::kEofString : serde_msg::kInvalidEscape, short_text ? n_ : i_ + 4);
        }
        i_ += 4;
        if (!read_surrogate_pair(cp)) return false;
        o = put_wtf8(o, cp);  // (the copy above left the room)
        break;
      }
      default: return fail_here(serde_msg::kInvalidEscape);
    }
    run = i_;
    i_ = static_cast<std::size_t>(scan::string_stop(s_ + i_, s_ + n_) - s_);  // a '"', a '\\' or a control byte
  }
}

void ScratchFree::operator()(char* p) const noexcept {
  release_freed_block(p, size);
  delete[] p;
}

char* SerdeReader::grow_scratch(char* o, std::size_t more, std::size_t run) {
  if (2 * scratch_size() >= kExactScratchFrom) more = std::max(more, string_end_bound(i_) - run + 16);  // the rest at once
  const auto used = static_cast<std::size_t>(o - scratch_.get());
  const std::size_t size = std::max(2 * scratch_size(), used + more + 64);
  std::unique_ptr<char[], ScratchFree> bigger(new char[size], ScratchFree{size});  // (not zeroed: only bytes written are read)
  if (used > 0) std::memcpy(bigger.get(), scratch_.get(), used);
  scratch_ = std::move(bigger);
  return scratch_.get() + used;
}

// serde_json's parse_ident after the first letter: each later byte is consumed, then compared.
bool SerdeReader::ident_fail(std::string_view word) {
  for (std::size_t k = 1; k < word.size(); ++k) {
    if (i_ + k >= n_) return fail(serde_msg::kEofValue, n_);
    if (s_[i_ + k] != word[k]) return fail(serde_msg::kExpectedIdent, i_ + k + 1);
  }
  return fail(serde_msg::kExpectedIdent, i_ + word.size());  // not reached: word was not there
}

// serde_json's parse_integer / parse_decimal / parse_exponent: the grammar errors where it stops,
// the i32 exponent overflow (an error only for a nonzero significand and a positive exponent),
// then its f64 conversion, which can overflow ("number out of range" at the literal's end).
bool SerdeReader::read_number(SerdeScalar& out) {
  const std::size_t start = i_;
  std::size_t i = i_;
  const bool negative = s_[i] == '-';
  if (negative && ++i >= n_) return fail(serde_msg::kEofValue, n_);
  if (!is_digit(s_[i])) return fail(serde_msg::kInvalidNumber, i + 1);
  bool zero = true;  // the significand is zero (decides the exponent overflow case)
  if (s_[i] == '0') {
    ++i;
    if (i < n_ && is_digit(s_[i])) return fail(serde_msg::kInvalidNumber, i + 1);
  } else {
    zero = false;
    while (i < n_ && is_digit(s_[i])) ++i;
  }
  const std::size_t int_end = i;
  bool is_float = false;
  if (i < n_ && s_[i] == '.') {
    is_float = true;
    if (++i >= n_) return fail(serde_msg::kEofValue, n_);
    if (!is_digit(s_[i])) return fail(serde_msg::kInvalidNumber, i + 1);
    for (; i < n_ && is_digit(s_[i]); ++i) zero = zero && s_[i] == '0';
  }
  if (i < n_ && (s_[i] == 'e' || s_[i] == 'E')) {
    is_float = true;
    bool positive = true;
    if (++i < n_ && (s_[i] == '+' || s_[i] == '-')) positive = s_[i++] == '+';
    if (i >= n_) return fail(serde_msg::kEofValue, n_);
    if (!is_digit(s_[i])) return fail(serde_msg::kInvalidNumber, i + 1);
    constexpr std::int64_t kMax = 2147483647;  // i32::MAX
    std::int64_t exp = 0;
    bool overflowed = false;
    for (; i < n_ && is_digit(s_[i]); ++i) {
      if (overflowed) continue;  // serde skips the rest: the value is 0
      const int d = s_[i] - '0';
      if (exp >= kMax / 10 && (exp > kMax / 10 || d > kMax % 10)) {
        if (!zero && positive) return fail(serde_msg::kOutOfRange, i + 1);
        overflowed = true;
        continue;
      }
      exp = exp * 10 + d;
    }
  }
  i_ = i;
  out.text = {s_ + start, i - start};
  const std::size_t digits = int_end - start - (negative ? 1 : 0);
  if (!is_float && digits <= 19) {
    std::uint64_t v = 0;
    for (std::size_t k = start + (negative ? 1 : 0); k < int_end; ++k) v = v * 10 + std::uint64_t(s_[k] - '0');
    if (!negative) {
      out.kind = SerdeScalar::Kind::U64;
      out.u64 = v;
      return true;
    }
    // serde_json: -0 and magnitudes past i64 become f64.
    out.kind = v != 0 && v <= (std::uint64_t{1} << 63) ? SerdeScalar::Kind::I64 : SerdeScalar::Kind::F64;
    return true;
  }
  if (!is_float && !negative && digits == 20) {
    std::uint64_t v = 0;
    bool fits = true;
    for (std::size_t k = start; k < int_end && fits; ++k) {
      const auto d = std::uint64_t(s_[k] - '0');
      fits = v < UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d <= UINT64_MAX % 10);
      v = v * 10 + d;
    }
    if (fits) {
      out.kind = SerdeScalar::Kind::U64;
      out.u64 = v;
      return true;
    }
  }
  out.kind = SerdeScalar::Kind::F64;
  double f = 0.0;
  if (!serde_float_from_literal(out.text, f)) return fail_here(serde_msg::kOutOfRange);
  return true;
}

bool SerdeReader::read_scalar(SerdeScalar& out) {
  if (i_ >= n_) return fail_here(serde_msg::kEofValue);
  auto word = [&](std::string_view w) { return n_ - i_ >= w.size() && std::memcmp(s_ + i_, w.data(), w.size()) == 0; };
  switch (s_[i_]) {
    case 'n':
      if (!word("null")) return ident_fail("null");
      i_ += 4;
      out.kind = SerdeScalar::Kind::Null;
      return true;
    case 't':
      if (!word("true")) return ident_fail("true");
      i_ += 4;
      out.kind = SerdeScalar::Kind::Bool;
      out.boolean = true;
      return true;
    case 'f':
      if (!word("false")) return ident_fail("false");
      i_ += 5;
      out.kind = SerdeScalar::Kind::Bool;
      out.boolean = false;
      return true;
    case '"':
      out.kind = SerdeScalar::Kind::String;
      return read_string(out.text);
    default:
      if (s_[i_] == '-' || is_digit(s_[i_])) return read_number(out);
      return fail_peek(serde_msg::kExpectedValue);
  }
}

bool SerdeReader::skip_value(int depth) {
  bool is_array[kMaxDepth + 1];  // the open containers; enter() keeps depth + top <= kMaxDepth
  int top = 0;
  SerdeScalar scalar;
  std::string_view key;
  while (true) {
    // The cursor is at a value: open a container or read a scalar.
    if (at('[') || at('{')) {
      const bool array = peek() == '[';
      if (!enter(depth + top)) return false;
      bool first = true;
      const int r = array ? next_element(first) : next_key(first, key);
      if (r < 0) return false;
      if (r == 1) {
        is_array[top++] = array;
        if (!array && !colon()) return false;
        continue;
      }
    } else if (!read_scalar(scalar)) {
      return false;
    }
    // A value ended: close every container that ends with it, then move to the next value.
    while (true) {
      if (top == 0) return true;
      const bool array = is_array[top - 1];
      bool first = false;
      const int r = array ? next_element(first) : next_key(first, key);
      if (r < 0) return false;
      if (r == 0) {
        --top;
        continue;
      }
      if (!array && !colon()) return false;
      break;
    }
  }
}

}  // namespace w4a8::json
