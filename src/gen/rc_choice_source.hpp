// ChoiceSource backed by RapidCheck: every choice is one `*gen` pick inside the running property, so
// RapidCheck records, shrinks (toward 0) and replays it. Use only inside an RC property body.
#pragma once

#include <rapidcheck.h>

#include "gen/choice_source.hpp"

namespace w4a8::gen {

class RcChoiceSource final : public ChoiceSource {
 public:
  std::uint64_t below(std::uint64_t n) override {
    if (n <= 1) return 0;
    // Fixed size: the full range from the first case; complexity comes from the choices themselves.
    return *rc::gen::resize(rc::kNominalSize, rc::gen::inRange<std::uint64_t>(0, n));
  }
};

}  // namespace w4a8::gen
