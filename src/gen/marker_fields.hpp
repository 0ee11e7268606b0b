// Marker field values with the result Python's int() gives for them, written by hand from the
// rules in validator.md (asym_w4a8_int8 step 1), so the oracle never evaluates int() itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error_kind.hpp"
#include "gen/choice_source.hpp"
#include "gen/json_doc.hpp"

namespace w4a8::gen {

// int(value): either an exact decimal or an error kind with its message argument (already
// formatted: repr of the string, type name in quotes, digit count; empty when the template has none).
// What follows the digits of a string int() rejects for its length (ErrorKind::PyIntMaxStrDigits),
// by which error CPython raises first (measured on 3.10.13, 3.11.7, 3.12.1 and 3.13.0;
// docs/validator.md, "Per-Python facts").
enum class DigitTail : std::uint8_t {
  None,          // nothing: the digit limit
  LimitFirst,    // whitespace (still a valid literal) or a NUL (the C parser stops there): the limit, every version
  InvalidFirst,  // an underscore ending the digits: invalid literal, every version (the digit scan rejects it)
  ByVersion,     // other junk: the limit through 3.11 (checked once the digits are read), invalid
                 // literal from 3.12 (the whole string is read first)
};

struct IntOutcome {
  bool ok = true;
  std::string value;  // canonical decimal when ok
  ErrorKind error{};
  std::string arg;
  DigitTail tail = DigitTail::None;  // PyIntMaxStrDigits only
  std::string text{};                // tail != None: the whole string int() is given (UTF-8)
};

struct IntField {
  JsonDoc doc;
  IntOutcome outcome;
};

// A spelling of the integer v that int() maps back to v: int, float, or one of several string forms.
IntField int_field(long long v, ChoiceSource& src);
// A value int() maps to something < 4 (bools, small/negative numbers and strings, 3.99, -10**21).
IntField small_int_field(ChoiceSource& src);
// A value int() rejects with exactly `kind` (PyIntFloatNan, PyIntFloatInfinity, PyIntInvalidLiteral,
// PyIntBadType or PyIntMaxStrDigits).
IntField bad_int_field(ErrorKind kind, ChoiceSource& src);
// A huge positive integer (>= 2**64) as a JSON int; K // value is 0 for any real K.
IntField huge_int_field(ChoiceSource& src);
// `digits`, a string of more than kMaxIntDigits digits (bad_int_field's PyIntMaxStrDigits), with
// something drawn after it (and sometimes whitespace before it): DigitTail says which error wins.
// nullopt (choice 0, so an exhausted stream adds nothing): left as it is.
std::optional<IntField> with_digit_tail(const std::string& digits, ChoiceSource& src);

// Members upstream ignores, appended to f (keys not yet in f): scalars of every JSON kind (floats
// from 5e-324 to DBL_MAX, -0.0, ints of up to exactly kMaxIntDigits digits), strings over an
// alphabet of quotes, escapes, controls, DEL, non-ASCII of every plane and lone surrogates, small
// arrays and objects; sometimes enough members that the object passes 16 (json's indexed path).
// Never a top-level NaN (equal duplicates would conflict) and never a value json.loads rejects.
void extra_fields(std::vector<std::pair<std::string, JsonDoc>>& f, ChoiceSource& src);
// A JSON value json.loads accepts, at most `depth` containers deep (the extra members' values).
JsonDoc any_value(ChoiceSource& src, int depth);
// WTF-8 text of up to max_len code points of that alphabet (no lone high surrogate directly
// before a lone low one).
std::string any_text(ChoiceSource& src, std::size_t max_len);

}  // namespace w4a8::gen
