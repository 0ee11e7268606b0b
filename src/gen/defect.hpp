// The defect classes the generator injects (defects.def), one enum value each, each mapping to
// exactly one error kind, with the columns that drive dispatch: family (which injector, which
// scenario), layout sensitivity (which layout properties apply) and the merge rules it fires under.
// inject() applies one to a valid-so-far scenario.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/error_kind.hpp"
#include "core/upstream.hpp"

namespace w4a8::gen {

enum class Defect : std::uint8_t {
#define W4A8_DEFECT(name, kind, family, layout, fires, what) name,
#include "gen/defects.def"
#undef W4A8_DEFECT
  kCount
};
inline constexpr std::size_t kDefectCount = static_cast<std::size_t>(Defect::kCount);

// Which injector applies a defect (and what the scenario must contain for it).
enum class DefectFamily : std::uint8_t { Container, Collection, W4a8, Other, Strict, Merge };
// Which layout changes keep the verdict of a scenario whose only defect this is.
enum class DefectLayout : std::uint8_t {
  Neutral,    // resharding and moving/deduplicating markers
  Shard,      // resharding only (the defect is a second marker of a prefix)
  Sensitive,  // neither (messages name files or the first of several)
};
// The merge rules (upstream::MarkerMerge) under which the defect produces its error kind.
enum class DefectFires : std::uint8_t { Any, WholeMarker, PerKey };

struct DefectInfo {
  Defect defect;
  std::string_view name;
  ErrorKind kind;
  DefectFamily family;
  DefectLayout layout;
  DefectFires fires;
  std::string_view what;
};

inline constexpr DefectInfo kDefectTable[] = {
#define W4A8_DEFECT(name, kind, family, layout, fires, what) \
  {Defect::name, #name, ErrorKind::kind, DefectFamily::family, DefectLayout::layout, DefectFires::fires, what},
#include "gen/defects.def"
#undef W4A8_DEFECT
};
static_assert(std::size(kDefectTable) == kDefectCount);

constexpr const DefectInfo& defect_info(Defect d) { return kDefectTable[static_cast<std::size_t>(d)]; }
constexpr std::string_view defect_name(Defect d) { return defect_info(d).name; }
constexpr std::string_view defect_description(Defect d) { return defect_info(d).what; }
// The error a scenario with only this defect produces (where it fires).
constexpr ErrorKind defect_kind(Defect d) { return defect_info(d).kind; }
constexpr bool is_container_defect(Defect d) { return defect_info(d).family == DefectFamily::Container; }
constexpr bool is_strict_defect(Defect d) { return defect_info(d).family == DefectFamily::Strict; }
// Whether the defect produces its kind when sglang release v is predicted (else: accepted).
constexpr bool fires_under(Defect d, upstream::Sglang v) {
  switch (defect_info(d).fires) {
    case DefectFires::Any: return true;
    case DefectFires::WholeMarker: return upstream::profile(v).merge == upstream::MarkerMerge::WholeMarker;
    case DefectFires::PerKey: return upstream::profile(v).merge == upstream::MarkerMerge::PerKey;
  }
  return true;
}

class ChoiceSource;
struct Scenario;
struct GenConfig;
// Applies d to a random eligible target of s. @return false (s unchanged) when no target fits
// (e.g. no W4A8 layer, or the result would exceed the tensor byte budget).
bool inject(Scenario& s, Defect d, ChoiceSource& src, const GenConfig& cfg);

}  // namespace w4a8::gen
