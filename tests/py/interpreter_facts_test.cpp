// py::kInterpreterFacts (version.hpp) against each real interpreter found here (W4A8_PYTHON_3_10 ..
// W4A8_PYTHON_3_14, python3.X on PATH, ~/.pyenv/versions/3.X*): the digit-limit ValueError of int()
// and of json.loads, the RecursionError json.loads raises, and (where it does not depend on the
// caller's stack: 3.12 and later) the deepest nesting json.loads accepts. A version with no
// interpreter is skipped, visibly; the measured values are also written down here, so the table
// is checked without any interpreter too.
#include "py/version.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "core/error_kind.hpp"
#include "json/parse.hpp"
#include "py/int.hpp"
#include "support/python.hpp"

namespace w4a8::py {
namespace {

using testing::command_output;
using testing::PythonCall;

// A real CPython of this version, or "" (tests/support: python_of_version).
std::string interpreter_for(Version v) { return testing::python_of_version(version_name(v)); }

std::string digits_message(std::size_t digits, Version v) { return max_str_digits_error(digits, v).message; }

// Written down from the interpreters (each printed str(e) of int("1" * 4301) and of
// json.loads("1" * 4301), identical for both):
//   for v in 3.10.13 3.11.7 3.12.1 3.13.0; do ~/.pyenv/versions/$v/bin/python -c
//     "$(printf 'try: int("1"*4301)\nexcept ValueError as e: print(e)')"; done   (one line)
// 3.14: not measured (no interpreter here); CPython's wording has been "(4300 digits)" since 3.11.
TEST(InterpreterFacts, DigitLimitWordingAsMeasured) {
  const std::string tail = " for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() "
                           "to increase the limit";
  EXPECT_EQ(digits_message(4301, Version::Py310), "Exceeds the limit (4300)" + tail);  // 3.10.13
  for (Version v : {Version::Py311, Version::Py312, Version::Py313, Version::Py314})
    EXPECT_EQ(digits_message(4301, v), "Exceeds the limit (4300 digits)" + tail) << version_name(v);
  // int() and json.loads share it (py::to_int of a 4301-digit string, as sglang's int(group_size)).
  const auto r = to_int(json::Value::from_string(std::string(4301, '1')), Version::Py310);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::PyIntMaxStrDigits);
  EXPECT_EQ(r.error().message, "Exceeds the limit (4300)" + tail);
}

// Measured with sglang 0.5.23's real inspect_comfy_quant_markers run by tools/upstream/sglang_upstream.py
// under each interpreter (the safetensors package replaced by a minimal pure-Python stand-in), for a
// tensor marker and a _quantization_metadata layer, arrays and objects alike, at 0, 300 and 900
// extra Python frames: the deepest nesting accepted (containers in all: the marker object and the
// metadata root counted) was 1497 under 3.12.1 and 9998 under 3.13.0 whatever the frames; 991 under
// 3.10.13 and 3.11.7 from the harness's own depth, one less per extra frame (990 modelled).
TEST(InterpreterFacts, JsonDepthAsMeasured) {
  EXPECT_EQ(interpreter_facts(Version::Py310).json_max_depth, json::kPythonMaxDepth);
  EXPECT_EQ(interpreter_facts(Version::Py311).json_max_depth, json::kPythonMaxDepth);
  EXPECT_EQ(interpreter_facts(Version::Py312).json_max_depth, 1497);
  EXPECT_EQ(interpreter_facts(Version::Py313).json_max_depth, 9998);
  EXPECT_FALSE(interpreter_facts(Version::Py314).measured);  // 3.14: stack-based, not measured
  for (const auto& f : kInterpreterFacts) EXPECT_LE(f.json_max_depth, json::kMaxDepth);
}

// Junk after 4301 digits (the probe's JUNK, in order): which of the digit limit and the invalid literal wins.
constexpr std::string_view kJunk[] = {"x", " x", std::string_view("\0", 1), std::string_view(" \0x", 3), "_1x",
                                      "\xd9\xa1x"};

// "ValueError: MESSAGE" of py::to_int under v, as the probe prints Python's.
std::string outcome_of(const std::string& text, Version v) {
  const auto r = to_int(json::Value::from_string(text), v);
  return r.ok() ? "ok" : "ValueError: " + r.error().message;
}

// Written down from the interpreters (int("1" * 4301 + "x") and the same with a NUL before the "x"):
// 3.10.13 and 3.11.7 raise the digit limit as soon as the digits are read; 3.12.1 and 3.13.0 read to
// the end first, so junk is an invalid literal, except after a NUL (the C parser stops there).
TEST(InterpreterFacts, JunkAfterTooManyDigitsAsMeasured) {
  const std::string d(4301, '1');
  for (Version v : {Version::Py310, Version::Py311}) {
    EXPECT_EQ(outcome_of(d + "x", v), "ValueError: " + digits_message(4301, v)) << version_name(v);
    EXPECT_EQ(outcome_of(d + " x", v), "ValueError: " + digits_message(4301, v)) << version_name(v);
  }
  for (Version v : {Version::Py312, Version::Py313, Version::Py314}) {
    EXPECT_EQ(outcome_of(d + "x", v).substr(0, 59),
              "ValueError: invalid literal for int() with base 10: '111111")
        << version_name(v);
    EXPECT_EQ(outcome_of(d + std::string("\0x", 2), v), "ValueError: " + digits_message(4301, v)) << version_name(v);
  }
  EXPECT_FALSE(interpreter_facts(Version::Py314).measured);  // 3.14 keeps 3.13's order (unverified)
}

// One line from the interpreter: int()'s and json.loads' digit messages, json.loads' RecursionError
// for arrays and objects (bytes input, as a marker is read), and the deepest nesting json.loads(bytes)
// accepts from a function called at module level (a binary search).
constexpr const char* kProbe = R"PY(
import json
JUNK = ["x", " x", "\x00", " \x00x", "_1x", "\u0661x"]
def err(f):
    try:
        f()
    except (ValueError, RecursionError) as e:
        return type(e).__name__ + ": " + str(e)
    return "ok"
def nest(n, o, c):
    return (o * n + c * n).encode()
def deepest():
    lo, hi = 1, 30000
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if err(lambda: json.loads(nest(mid, "[", "]"))) == "ok": lo = mid
        else: hi = mid
    return lo
print("\t".join([err(lambda: int("1" * 4301)), err(lambda: json.loads(b"[" + b"1" * 4301 + b"]")),
                 err(lambda: json.loads(nest(40000, "[", "]"))), err(lambda: json.loads(b'{"a":' * 40000)),
                 str(deepest())] + [err(lambda: int("1" * 4301 + junk)) for junk in JUNK]))
)PY";

TEST(InterpreterFacts, AgainstEachInterpreter) {
  int checked = 0;
  std::string skipped;
  for (std::size_t i = 0; i < static_cast<std::size_t>(Version::kCount); ++i) {
    const auto v = static_cast<Version>(i);
    const std::string python = interpreter_for(v);
    if (python.empty()) {
      skipped += " " + std::string(version_name(v));
      continue;
    }
    const auto run = PythonCall::code(kProbe).python("'" + python + "'").run();
    ASSERT_TRUE(run.ok() && run.lines.size() == 1) << run.command;
    std::vector<std::string> f;
    for (std::size_t b = 0, e; b <= run.lines[0].size(); b = e + 1) {
      e = run.lines[0].find('\t', b);
      if (e == std::string::npos) e = run.lines[0].size();
      f.push_back(run.lines[0].substr(b, e - b));
    }
    ASSERT_EQ(f.size(), 5u + std::size(kJunk)) << run.lines[0];
    const std::string digits = "ValueError: " + digits_message(4301, v);
    EXPECT_EQ(f[0], digits) << python << " int()";
    EXPECT_EQ(f[1], digits) << python << " json.loads";
    // The RecursionError text: ErrorKind::PyRecursion's (3.14's stack-overflow text would differ).
    const std::string rec = "RecursionError: " + std::string(error_info(ErrorKind::PyRecursion).tmpl);
    EXPECT_EQ(f[2], rec.substr(0, rec.find("{}")) + "array" + " from a unicode string") << python;
    EXPECT_EQ(f[3], rec.substr(0, rec.find("{}")) + "object" + " from a unicode string") << python;
    const int deepest = std::atoi(f[4].c_str());
    const int modelled = interpreter_facts(v).json_max_depth;
    if (v == Version::Py310 || v == Version::Py311) {
      // Shared with Python frames: from here (fewer frames than sglang's caller) a little deeper.
      EXPECT_GE(deepest, modelled) << python;
      EXPECT_LE(deepest, modelled + 8) << python;
    } else {
      EXPECT_EQ(deepest, modelled) << python << ": json.loads' nesting limit";
    }
    for (std::size_t j = 0; j < std::size(kJunk); ++j)
      EXPECT_EQ(f[5 + j], outcome_of(std::string(4301, '1') + std::string(kJunk[j]), v)) << python << " junk " << j;
    ++checked;
  }
  if (!skipped.empty()) std::printf("[ SKIPPED  ] no interpreter for Python%s\n", skipped.c_str());
  if (checked == 0) GTEST_SKIP() << "no interpreter for any modelled Python";
}

}  // namespace
}  // namespace w4a8::py
