// Verdicts that depend on the Python sglang runs under (Options::python), beyond Unicode data:
// json.loads' nesting limit and the wording of the int digit-limit ValueError. The expected values
// were measured with sglang 0.5.23's real inspect_comfy_quant_markers, run by
// tools/upstream/sglang_upstream.py under ~/.pyenv/versions/{3.10.13,3.11.7,3.12.1,3.13.0}/bin/python
// (with a minimal pure-Python stand-in for the safetensors package on PYTHONPATH, for the versions
// the package is not installed for), on files built as below, e.g.
//   W4A8_OFFLINE=1 PYTHONPATH=<stand-in> ~/.pyenv/versions/3.12.1/bin/python measure.py
// (a binary search over the nesting depth, for a tensor marker and a _quantization_metadata layer,
// arrays and objects): the deepest accepted was 1497 under 3.12.1 and 9998 under 3.13.0, whatever the
// Python call depth (0, 300, 900 extra frames); 991 under 3.10.13 and 3.11.7 from the harness (one less
// per extra caller frame: 990 modelled). One past it raised RecursionError("maximum recursion depth
// exceeded while decoding a JSON array from a unicode string") ("... JSON object ..." for objects)
// under every version. A 4301-digit int raised "Exceeds the limit (4300) for integer string conversion:
// value has 4301 digits; ..." under 3.10.13 (json.loads and int(group_size) alike) and "(4300 digits)"
// under the others.
#include <gtest/gtest.h>

#include <string>

#include "builder.hpp"

namespace w4a8::validate::testing {
namespace {

using py::Version;

// n nested containers of one kind.
std::string nest(bool array, int n) {
  if (array) return std::string(static_cast<std::size_t>(n), '[') + std::string(static_cast<std::size_t>(n), ']');
  std::string s;
  for (int i = 1; i < n; ++i) s += "{\"a\":";
  return s + "{}" + std::string(static_cast<std::size_t>(n - 1), '}');
}

// A well-formed asym_w4a8_int8 layer "l0" (with its plain marker tensor).
Ckpt w4a8_tensors() {
  Ckpt c;
  c.w4a8("l0");
  return c;
}

// depth: containers in all, as json.loads counts them (the marker object; the metadata root and
// "layers" around it on the metadata path).
Ckpt marker_at_depth(bool array, int depth) {
  Ckpt c;
  c.w4a8("l0", 4, 128, 16, "{\"format\": \"asym_w4a8_int8\", \"group_size\": 16, \"x\": " + nest(array, depth - 1) + "}");
  return c;
}
Ckpt metadata_at_depth(bool array, int depth) {
  Ckpt c = w4a8_tensors();  // (its tensor marker agrees with the metadata's: merged key by key)
  c.meta("_quantization_metadata", "{\"format_version\": \"1.0\", \"layers\": {\"l0\": {\"format\": \"asym_w4a8_int8\", "
                                   "\"group_size\": 16, \"x\": " + nest(array, depth - 3) + "}}}");
  return c;
}

std::string verdict_under(Version v, const Ckpt& c, std::uint64_t release_pages_from = std::uint64_t{4} << 20) {
  Options opt;
  opt.python = v;
  opt.release_pages_from = release_pages_from;
  return verdict(run(std::vector<Bytes>{c.bytes()}, opt));
}

std::string recursion(bool array) {
  return std::string("python.recursion: maximum recursion depth exceeded while decoding a JSON ") +
         (array ? "array" : "object") + " from a unicode string";
}

TEST(PythonVersions, JsonNestingLimitPerInterpreter) {
  const struct {
    Version v;
    int deepest;
  } kMeasured[] = {{Version::Py310, 990}, {Version::Py311, 990}, {Version::Py312, 1497}, {Version::Py313, 9998}};
  for (const auto& m : kMeasured) {
    for (const bool array : {true, false}) {
      const std::string what = std::string(py::version_name(m.v)) + (array ? " array" : " object");
      EXPECT_EQ(verdict_under(m.v, marker_at_depth(array, m.deepest)), "ok") << what << " marker";
      EXPECT_EQ(verdict_under(m.v, marker_at_depth(array, m.deepest + 1)), recursion(array)) << what << " marker";
      // Markers parsed ahead (a large mapped file's path): the same.
      EXPECT_EQ(verdict_under(m.v, marker_at_depth(array, m.deepest), 0), "ok") << what << " marker, ahead";
      EXPECT_EQ(verdict_under(m.v, marker_at_depth(array, m.deepest + 1), 0), recursion(array)) << what << " marker, ahead";
      EXPECT_EQ(verdict_under(m.v, metadata_at_depth(array, m.deepest)), "ok") << what << " metadata";
      EXPECT_EQ(verdict_under(m.v, metadata_at_depth(array, m.deepest + 1)), recursion(array)) << what << " metadata";
    }
  }
  // A marker member nested 1200 and 5000 deep: accepted where the limit allows.
  for (const int d : {1200, 5000}) {
    const Ckpt c = marker_at_depth(true, d + 1);
    EXPECT_EQ(verdict_under(Version::Py311, c), recursion(true)) << d;
    EXPECT_EQ(verdict_under(Version::Py312, c), d + 1 <= 1497 ? "ok" : recursion(true)) << d;
    EXPECT_EQ(verdict_under(Version::Py313, c), "ok") << d;
  }
}

TEST(PythonVersions, DigitLimitWordingPerInterpreter) {
  const std::string tail = " for integer string conversion: value has 4301 digits; use sys.set_int_max_str_digits() "
                           "to increase the limit";
  const std::string digits(4301, '1');
  for (const Version v : {Version::Py310, Version::Py311, Version::Py312, Version::Py313}) {
    const std::string want =
        std::string("python.int.max_str_digits: Exceeds the limit (") + (v == Version::Py310 ? "4300" : "4300 digits") + ")" + tail;
    const std::string name(py::version_name(v));
    // json.loads of a marker holding the literal.
    Ckpt a;
    a.w4a8("l0", 4, 128, 16, "{\"format\": \"asym_w4a8_int8\", \"x\": " + digits + "}");
    EXPECT_EQ(verdict_under(v, a), want) << name << " marker";
    // int(group_size) of a string of the digits.
    Ckpt b;
    b.w4a8("l0", 4, 128, 16, "{\"format\": \"asym_w4a8_int8\", \"group_size\": \"" + digits + "\"}");
    EXPECT_EQ(verdict_under(v, b), want) << name << " group_size";
    // json.loads of _quantization_metadata holding the literal.
    Ckpt c = w4a8_tensors();
    c.meta("_quantization_metadata", "{\"layers\": {}, \"x\": " + digits + "}");
    EXPECT_EQ(verdict_under(v, c), want) << name << " metadata";
  }
}

}  // namespace
}  // namespace w4a8::validate::testing
