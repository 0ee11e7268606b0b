// The independent oracle: the verdict upstream must reach on a scenario, computed from the
// scenario's description (dtypes, shapes, marker documents with their known json.loads and int()
// outcomes, injected container edits) by the order of validator.md, never by running the validator
// or parsing the bytes. Messages come from the shared table (make_error) and py::repr_*.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "gen/scenario.hpp"
#include "json/value.hpp"
#include "py/version.hpp"

namespace w4a8::gen {

struct Expectation {
  bool ok = false;
  Error error;                 // when !ok
  bool message_exact = true;   // false: only the kind is predictable (the JSON reader's detail text)
  std::vector<std::pair<std::string, json::Value>> layers;  // when ok: upstream's dict, in order
  std::size_t unordered_tail = 0;  // trailing layers added by the MXFP8 shortcut in set order
};

Expectation expect(const Scenario& s);

// The nesting json.loads accepts under Python v, by the oracle's own table (measured with each
// interpreter: docs/validator.md, "Per-Python facts"; 3.14 assumed as 3.13).
int json_max_depth(w4a8::py::Version v);
// Some marker or _quantization_metadata document of s is too deeply nested for s's interpreter.
bool too_deep_for_python(const Scenario& s);

// The tensor the safetensors crate reports for an OffsetGap edit of file i (the last one laid out).
std::string offset_gap_name(const Scenario& s, std::size_t file);

// Python's repr of checkpoint_meta entries: "('F8_E4M3', (4, 64))", or "None".
std::string meta_repr(const TensorDesc* t);

}  // namespace w4a8::gen
