// What the W4A8 GEMM reads from a validated layer's marker: whether it is an asym_w4a8_int8 layer,
// and its group sizes (gemm runs them; the consumer matrix judges them).
#pragma once

#include <cstdint>

#include "core/result.hpp"
#include "py/version.hpp"
#include "validate/inspect.hpp"

namespace w4a8::cli {

bool is_w4a8(const validate::Layer& l);

struct MarkerGroups {
  std::int64_t group_size = 0;         // G
  std::int64_t convrot_groupsize = 0;  // R
};
// int(marker.get("group_size", dflt)) and the same for "convrot_groupsize", as Python pv evaluates
// them, with the defaults of comfy_formats.def. Python's int is unbounded and the operand checks are
// modelled in 64 bits: a value beyond them is named as not predicted (saturating it would print, and
// judge, another number).
// @return MarkerGroups, or ConsumerIntRange, or py::to_int's errors (python.int.*).
Result<MarkerGroups> marker_groups(const validate::Layer& l, py::Version pv);

}  // namespace w4a8::cli
