// The defect classes the generator injects (defects.def), one enum value each, each mapping to
// exactly one error kind. inject() applies one to a valid-so-far scenario.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/error_kind.hpp"

namespace w4a8::gen {

enum class Defect : std::uint8_t {
#define W4A8_DEFECT(name, kind, what) name,
#include "gen/defects.def"
#undef W4A8_DEFECT
  kCount
};
inline constexpr std::size_t kDefectCount = static_cast<std::size_t>(Defect::kCount);

std::string_view defect_name(Defect d);
std::string_view defect_description(Defect d);
// The error a scenario with only this defect produces.
ErrorKind defect_kind(Defect d);
bool is_container_defect(Defect d);
bool is_strict_defect(Defect d);

class ChoiceSource;
struct Scenario;
struct GenConfig;
// Applies d to a random eligible target of s. @return false (s unchanged) when no target fits
// (e.g. no W4A8 layer, or the result would exceed the tensor byte budget).
bool inject(Scenario& s, Defect d, ChoiceSource& src, const GenConfig& cfg);

}  // namespace w4a8::gen
