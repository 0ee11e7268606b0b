// Two runs of one implementation on one case, compared bit for bit (`audit check --repeat N`): the
// same input must give the same bits every time. A difference points at a race, a read of memory the
// kernel never wrote, or state kept between calls, which a single run compared against the
// reference can pass by luck.
#pragma once

#include <string>

#include "audit/case_spec.hpp"
#include "audit/implementation.hpp"

namespace w4a8::audit {

// "" when `again` equals `first` (status, message, and every tensor's bits); else what differs first
// and how many elements differ in that tensor, e.g. "out[2, 7] is 1.5 (0x3fc00000), was 1.25
// (0x3fa00000) in the first run; 3 of 96 elements of out differ".
std::string rerun_difference(const CaseSpec& c, const ImplOutput& first, const ImplOutput& again);

}  // namespace w4a8::audit
