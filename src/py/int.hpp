// Python int() applied to a json-loaded value, with exact big-integer results and upstream's errors.
#pragma once

#include <cstddef>
#include <string>

#include "core/result.hpp"
#include "json/value.hpp"
#include "py/version.hpp"

namespace w4a8::py {

// An exact integer as canonical decimal text ("-12", "0"), with helpers to compare without overflow.
struct BigInt {
  std::string text;
  bool negative() const { return !text.empty() && text[0] == '-'; }
  // nullopt-like: false when it does not fit int64.
  bool to_i64(long long& out) const;
  int compare(long long v) const;  // <0, 0, >0
};

// int(v): bool -> 0/1; int -> itself; float -> truncation (inf: OverflowError, NaN: ValueError);
// str -> base-10 literal rules (Unicode whitespace/digits, sign, single underscores, 4300-digit
// limit; Unicode digits and spaces as Python pv knows them); None/list/dict -> TypeError.
// @return BigInt, or ErrorKind::PyIntFloatInfinity, PyIntFloatNan, PyIntInvalidLiteral,
//         PyIntBadType, PyIntMaxStrDigits.
Result<BigInt> to_int(const json::Value& v, Version pv = kDefaultVersion);
// int(d.get(key, absent)) where v is d.get(key): to_int(*v), or `absent` itself when v is nullptr.
Result<BigInt> to_int_or(const json::Value* v, long long absent, Version pv = kDefaultVersion);

// The ValueError Python pv raises for an int of `digits` decimal digits over the 4300-digit limit,
// from int() and json.loads alike (ErrorKind::PyIntMaxStrDigits, worded as pv words it).
Error max_str_digits_error(std::size_t digits, Version pv = kDefaultVersion);

}  // namespace w4a8::py
