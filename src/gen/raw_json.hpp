// A token-preserving JSON tree for fuzzing (not a validator: it accepts more than JSON and keeps
// every scalar and string exactly as written). Two users: the container target's structural
// mutator (edit a header, emit it again) and the marker target's respelling oracle (the same
// document written differently must parse to the same value; the rules are json.loads' documented
// behaviour, derived by hand, never read back from the parser under test).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace w4a8::gen::raw {

enum class Type : unsigned char { Scalar, String, Array, Object };

struct Node {
  Type type = Type::Scalar;
  std::string text;         // Scalar: the literal as written; String: the literal, quotes included
  std::vector<Node> kids;   // Array: items; Object: key, value, key, value... (keys are String)
};

inline constexpr std::size_t kMaxDepth = 2000;  // deeper documents are not parsed (nullopt)

// Whitespace is ' ', \t, \n, \r; a scalar is a maximal run of other non-structural bytes; strings
// are kept raw (escapes and bytes unchecked). @return nullopt on unbalanced structure, a missing
// ':' or ',', trailing bytes, or nesting beyond kMaxDepth.
std::optional<Node> parse(std::string_view text);

// Compact text (", " and ": " separators); parse(emit(n)) == n for parsed trees.
std::string emit(const Node& n);

// A float literal of JSON's grammar (a '.' or an exponent; Python makes a float of it).
bool is_float_literal(std::string_view s);

// The respelled document json.loads must read as the same value (for a document it accepted, read
// as UTF-8 text): in every object a repeated key (equal after decoding escapes) is kept once, at
// its first position with its last value (a dict's assignment); every float literal gets a zero
// appended to its fraction and an exponent of at least 4 digits ("1.5" -> "1.50e+0000",
// "2e-7" -> "2e-0007"); every string is rewritten with \uXXXX escapes for all non-ASCII and
// control code points (surrogate pairs beyond the BMP). @return nullopt when a string holds
// something this cannot respell safely (invalid UTF-8, adjacent lone surrogates).
std::optional<Node> respell(const Node& n);

// The code points of a string literal as json.loads decodes it (escaped surrogate pairs combined,
// everything else one code point; raw UTF-8, encoded surrogates allowed). nullopt: malformed.
std::optional<std::u32string> decode_string(std::string_view literal);

}  // namespace w4a8::gen::raw
