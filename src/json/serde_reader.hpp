// A pull reader of JSON text in serde_json's dialect, for deserializers that map the text onto
// their own types in one pass (no DOM): whitespace, strings (views into the input when they hold no
// escape), numbers typed as serde_json types them, literals, generic skipping under serde_json's
// recursion limit, and the first failure with serde_json's own message and byte index.
// Every position a caller reports comes from this cursor: fail() records serde_json's index, and
// serde_position() turns it into " at line L column C" once, on failure only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>

#include "json/scan.hpp"
#include "json/serde_messages.hpp"

namespace w4a8::json {

// A scalar as serde_json's deserialize_any reads it (numbers typed as its ParserNumber).
struct SerdeScalar {
  enum class Kind : std::uint8_t { Null, Bool, U64, I64, F64, String };
  Kind kind = Kind::Null;
  bool boolean = false;     // Kind::Bool
  std::uint64_t u64 = 0;    // Kind::U64
  std::string_view text;    // numbers: the literal as written; String: the decoded text (a view
                            // into the input, or into the reader's scratch until the next string)
};

// Frees SerdeReader's decoding scratch. A large one's pages go back to the kernel first: under the
// CLI's heap, which keeps freed pages resident, a hostile header's 44 MB metadata value otherwise
// stayed in the process's peak memory after its copy was made.
struct ScratchFree {
  std::size_t size = 0;
  void operator()(char* p) const noexcept;
};

class SerdeReader {
 public:
  // serde_json's remaining_depth starts at 128: the 128th nested container fails.
  static constexpr int kMaxDepth = 127;

  // pre: text is UTF-8 (serde_json::from_str takes a &str).
  explicit SerdeReader(std::string_view text) : s_(text.data()), n_(text.size()) {}

  std::string_view text() const { return {s_, n_}; }
  std::size_t pos() const { return i_; }
  bool eof() const { return i_ >= n_; }
  bool at(char c) const { return i_ < n_ && s_[i_] == c; }
  char peek() const { return s_[i_]; }  // pre: !eof()
  void skip_ws() {
    while (i_ < n_ && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }

  // Moves the cursor forward to i. pre: pos() <= i <= text().size(), and the caller has read
  // [pos(), i) itself and found it well-formed (a fast path over a shape it recognizes).
  void skip_to(std::size_t i) { i_ = i; }
  // Frees the buffer of decoded strings (the last one read with escapes no longer needed): a large
  // value read early (the header's __metadata__) would otherwise keep it for the whole read.
  void drop_scratch() { scratch_ = std::unique_ptr<char[], ScratchFree>(); }

  // ---- failure: the first one wins; later calls are ignored -----------------------------------
  bool failed() const { return failed_; }
  const std::string& message() const { return msg_; }
  std::size_t index() const { return at_; }  // serde_json's index for the position
  // Records msg at serde_json's index `at` (clamped to the text); always returns false.
  bool fail(std::string_view msg, std::size_t at);
  // serde_json's peek_error: the index just past the byte under the cursor.
  bool fail_peek(std::string_view msg) { return fail(msg, i_ < n_ ? i_ + 1 : n_); }
  // serde_json's error(): the index of the cursor itself.
  bool fail_here(std::string_view msg) { return fail(msg, i_); }

  // ---- values -----------------------------------------------------------------------------------
  // At '"': reads one string (escapes decoded, surrogate pairs joined, lone ones rejected).
  bool read_string(std::string_view& out) {
    const std::size_t begin = ++i_;
    const char* stop = scan::string_stop(s_ + begin, s_ + n_);
    const auto j = static_cast<std::size_t>(stop - s_);
    if (j < n_ && *stop == '"') {  // the common case: no escape, no control character
      out = {s_ + begin, j - begin};
      i_ = j + 1;
      return true;
    }
    return read_string_slow(begin, j, out);
  }
  // At a value that is not '[' or '{' (or at the end): null, true, false, a number or a string.
  // Fails as serde_json's deserialize_any does ("expected value", "EOF while parsing a value", ...).
  bool read_scalar(SerdeScalar& out);
  // At any value (ws skipped): consumes it, containers included. depth = containers around it.
  bool skip_value(int depth);

  // ---- containers, driven by the caller -------------------------------------------------------
  // At '[' or '{' with `depth` containers around it: checks the recursion limit, consumes it and
  // the whitespace after it.
  bool enter(int depth) {
    if (depth + 1 > kMaxDepth) return fail_peek(serde_msg::kRecursion);
    ++i_;
    skip_ws();
    return true;
  }
  // In an array after enter(): 1 = an element is next (cursor on it), 0 = ']' consumed, -1 = failed.
  int next_element(bool& first) {
    if (first) {
      first = false;
      if (at(']')) return ++i_, 0;
      if (eof()) return fail_here(serde_msg::kEofList), -1;
      return 1;
    }
    skip_ws();
    if (at(']')) return ++i_, 0;
    if (!at(',')) return fail_peek(eof() ? serde_msg::kEofList : serde_msg::kExpectedCommaList), -1;
    ++i_;
    skip_ws();
    if (at(']')) return fail_peek(serde_msg::kTrailingComma), -1;
    return 1;
  }
  // In an object after enter(): 1 = a key was read (cursor just past it; call colon() next),
  // 0 = '}' consumed, -1 = failed.
  int next_key(bool& first, std::string_view& key) {
    const bool was_first = first;
    if (first) {
      first = false;
      if (at('}')) return ++i_, 0;
    } else {
      skip_ws();
      if (at('}')) return ++i_, 0;
      if (!at(',')) return fail_peek(eof() ? serde_msg::kEofObject : serde_msg::kExpectedCommaObject), -1;
      ++i_;
      skip_ws();
    }
    if (!at('"')) {
      const std::string_view m = eof()               ? (was_first ? serde_msg::kEofObject : serde_msg::kEofValue)
                                 : at('}') && !was_first ? serde_msg::kTrailingComma
                                                         : serde_msg::kKeyNotString;
      return fail_peek(m), -1;
    }
    return read_string(key) ? 1 : -1;
  }
  // After a key: whitespace, ':', whitespace.
  bool colon() {
    skip_ws();
    if (!at(':')) return fail_peek(eof() ? serde_msg::kEofObject : serde_msg::kExpectedColon);
    ++i_;
    skip_ws();
    return true;
  }

 private:
  bool read_string_slow(std::size_t begin, std::size_t j, std::string_view& out);
  // Room for `more` bytes after o (a position in scratch_), which may move: the new o. Past
  // kExactScratchFrom, room for all the string can still need (run: where its undecoded text starts).
  char* grow_scratch(char* o, std::size_t more, std::size_t run);
  std::size_t string_end_bound(std::size_t j) const;
  static constexpr std::size_t kExactScratchFrom = std::size_t{8} << 20;
  bool read_hex4(std::size_t at, char32_t& out) const;
  bool read_surrogate_pair(char32_t& cp);
  bool read_number(SerdeScalar& out);
  bool ident_fail(std::string_view word);

  const char* s_;
  std::size_t n_;
  std::size_t i_ = 0;
  // The last decoded string that had escapes, at the front of scratch_ (read_string_slow). It keeps
  // its largest size.
  std::unique_ptr<char[], ScratchFree> scratch_;
  std::size_t scratch_size() const { return scratch_.get_deleter().size; }
  bool failed_ = false;
  std::string msg_;
  std::size_t at_ = 0;
};

}  // namespace w4a8::json
