// Spellings of a JSON value: text that Python's json.loads reads as exactly that value, chosen by a
// ChoiceSource (0 at every choice gives the canonical json.dumps-like text). The value comes first;
// a spelling is built from it by JSON's grammar and json.loads' documented rules (derived by hand),
// never read back through a parser. What it varies:
//  - floats: the exact decimal expansion of the double (up to ~770 digits), the decimal point moved
//    with the exponent compensating, leading zeros after "0.", trailing zeros, exponents with
//    e/E, an optional '+' and zero padding ("1.6E+0001"), a tail digit far below half an ulp
//    (rounds back to the same double), zero as a tiny number ("1e-0400"), infinities as
//    overflowing literals ("2e308");
//  - ints: only "-0" for 0 (JSON has one spelling per int);
//  - strings: each code point raw, as a short escape, or as \uXXXX in any hex case; beyond the BMP
//    as an escaped surrogate pair; lone surrogates always escaped;
//  - objects: whitespace anywhere JSON allows it, and decoy duplicates: a member may first appear
//    with another (scalar) value at its own position and again with its real value further on
//    (json.loads keeps the first position and the last value, so the value is unchanged).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "gen/choice_source.hpp"
#include "json/value.hpp"

namespace w4a8::gen {

// A finite double as an exact decimal: |d| = digits * 10**exp10, digits without leading or
// trailing zeros ("0" for zero).
struct ExactDecimal {
  bool negative = false;
  std::string digits;
  int exp10 = 0;
};
// post: exact (big-integer arithmetic on the binary significand; no rounding anywhere).
ExactDecimal exact_decimal(double d);

// A JSON literal Python's float() reads as exactly d (NaN: "NaN"; infinities: "Infinity" or an
// overflowing decimal).
std::string spell_float(double d, ChoiceSource& src);
// A JSON string literal of WTF-8 text. pre: no lone high surrogate directly followed by a lone
// low one (json.loads would join the two escapes into one code point).
std::string spell_string(std::string_view wtf8, ChoiceSource& src);
// A JSON text of v. pre: as spell_string for every string and key in v.
std::string spell(const json::Value& v, ChoiceSource& src);
// spell() with choices read from a tape of bytes (ByteChoiceSource: an exhausted tape is canonical).
std::string spell_tape(const json::Value& v, std::span<const std::uint8_t> tape);

// An object whose member values are JSON texts already written (keys spelled as spell_string,
// whitespace and decoys as spell()). defer false: a real member directly follows its decoy, so the
// members keep their text order (where the first failure in the text must stay first).
std::string spell_object(std::span<const std::pair<std::string, std::string>> members, ChoiceSource& src, bool defer);

// Whether WTF-8 text holds a lone high surrogate directly followed by a lone low one.
bool has_split_surrogates(std::string_view wtf8);

}  // namespace w4a8::gen
