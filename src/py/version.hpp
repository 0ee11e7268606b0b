// The CPython version whose behaviour py:: reproduces. repr() escapes what str.isprintable()
// rejects and int() accepts Unicode digits and spaces, both from the interpreter's own Unicode
// data, so upstream's messages depend on the Python that runs it:
//   3.10 -> Unicode 13.0.0, 3.11 -> 14.0.0, 3.12 -> 15.0.0, 3.13 -> 15.1.0, 3.14 -> 16.0.0.
// Two more facts differ by interpreter (kInterpreterFacts below): json.loads' nesting limit and the
// wording of the int digit-limit ValueError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace w4a8::py {

enum class Version : std::uint8_t { Py310, Py311, Py312, Py313, Py314, kCount };

// sglang 0.5.23 requires Python >= 3.11 and ships wheels for 3.11, 3.12 and 3.13; the default is
// the oldest of them (also the interpreter this project's upstream oracles run under).
inline constexpr Version kDefaultVersion = Version::Py311;

std::string_view version_name(Version v);     // "3.11"
std::string_view unicode_version(Version v);  // "14.0.0"
// "3.11" -> Py311; nullopt for anything else.
std::optional<Version> version_from_name(std::string_view name);

// What else upstream's errors depend on, per interpreter; one row per Version, in order. The project
// models one interpreter per minor version: 3.10.13, 3.11.7, 3.12.1, 3.13.0 (measured with
// ~/.pyenv/versions/*/bin/python running sglang 0.5.23's real inspect_comfy_quant_markers through
// tools/upstream/sglang_upstream.py; docs/validator.md, "Per-Python facts"); 3.14 is not measured.
// merge_compare_max_depth where no marker json.loads accepts can reach it.
inline constexpr int kNeverInComparison = 1 << 30;

struct InterpreterFacts {
  // json.loads accepts this many nested containers (arrays and objects alike, the marker object and
  // the metadata root counted); one more raises RecursionError. 3.10/3.11: the C scanner shares the
  // recursion limit (1000) with Python frames, so the boundary moves with the caller's stack depth
  // (991 from the oracle harness, 990 modelled: json::kPythonMaxDepth). 3.12: C recursion counter
  // (Py_C_RECURSION_LIMIT 1500) independent of Python frames: 1497. 3.13: counter 10000: 9998.
  // 3.14: stack-based protection (no counter): not measured; 3.13's value kept (unverified).
  int json_max_depth;
  // Whether json_max_depth is the interpreter's own (3.12+: a C counter apart from Python frames), or
  // a model of a limit that moves with the caller's stack (3.10/3.11), exact only a few levels off.
  bool json_depth_exact;
  // The "{}" of ErrorKind::PyIntMaxStrDigits' "Exceeds the limit ({}) for integer string conversion"
  // (json.loads of a long int literal and int() of a long digit string alike): 3.10.13 prints
  // "(4300)", 3.11.7 and later "(4300 digits)".
  std::string_view int_max_str_digits_limit;
  // int() of a long digit string with junk after it ("1" * 4301 + "x"): 3.10/3.11 check the digit
  // limit as soon as the digits are read (the limit error); 3.12 and later read to the end first
  // (invalid literal). Junk after an embedded NUL still loses to the limit (the C parser stops there).
  bool int_limit_after_trailing;
  // The deepest `!=` (json::py_compare's depth) sglang 0.5.20+'s per-key marker merge makes without
  // RecursionError("maximum recursion depth exceeded in comparison"); it compares inside a generator
  // expression. 3.12 (C counter 1500) and 3.13 (10000), measured with the wheels, whatever the
  // caller's stack: two markers nested to json.loads' limit with equal leaves raise at 1496 and
  // 9997. 3.10/3.11: never below json.loads' own limit (their counter is shared with the frames the
  // parse already needed). 0.5.19's whole-marker compare runs outside the generator: never reached.
  int merge_compare_max_depth;
  bool measured;  // false: the row is inferred, not checked against that interpreter
};

inline constexpr InterpreterFacts kInterpreterFacts[] = {
    /* 3.10 */ {990, false, "4300", false, kNeverInComparison, true},
    /* 3.11 */ {990, false, "4300 digits", false, kNeverInComparison, true},
    /* 3.12 */ {1497, true, "4300 digits", true, 1495, true},
    /* 3.13 */ {9998, true, "4300 digits", true, 9996, true},
    /* 3.14 */ {9998, true, "4300 digits", true, 9996, false},
};
static_assert(std::size(kInterpreterFacts) == static_cast<std::size_t>(Version::kCount),
              "kInterpreterFacts must have one row per py::Version, in order");

constexpr const InterpreterFacts& interpreter_facts(Version v) {
  const auto i = static_cast<std::size_t>(v);
  return kInterpreterFacts[i < std::size(kInterpreterFacts) ? i : static_cast<std::size_t>(kDefaultVersion)];
}

}  // namespace w4a8::py
