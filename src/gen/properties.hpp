// Property bodies shared by every engine (style.md 7): RapidCheck properties (props/), libFuzzer
// targets and their corpus replay (fuzz/), and seeded tests (tests/gen/). Each returns "" when the
// property holds, else a description of the failure.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "gen/choice_source.hpp"
#include "gen/oracle.hpp"
#include "gen/scenario.hpp"
#include "validate/inspect.hpp"

namespace w4a8::gen {

class InMemoryCheckpoint;

// Serializes s and runs validate::inspect on the in-memory files (paths as in the scenario).
Result<validate::Report> run_validator(const Scenario& s);
// Compares a verdict with the oracle's expectation ("" when they agree).
std::string compare(const Expectation& want, const Result<validate::Report>& got);

// 1. The validator's verdict equals the oracle's: accepted with the same layers and derived flags,
//    or the same error type and message (kind only where the oracle cannot know the text).
std::string check_verdict(const Scenario& s);
// 2. A scenario with exactly one defect fails with that defect's error kind (and check_verdict).
std::string check_single_defect(const Scenario& s);
// 2a. The oracle's expectation for a one-defect scenario: that defect's error kind where it fires
//     under the scenario's sglang release, acceptance where it does not ("" when consistent).
std::string check_defect_fires(const Scenario& s, const Expectation& want);
// Whether a lone defect d explains error kind k in s: the defect table's kind, or int()'s invalid
// literal where GenConfig::digit_tails put junk after a GroupSizeTooManyDigits string.
bool defect_kind_matches(const Scenario& s, Defect d, ErrorKind k);
// 3. Writer/reader round trip: every file without a container edit parses back to the same
//    tensors (name, dtype, shapes, bytes) and metadata.
// mem: InMemoryCheckpoint::of(s), when the caller has it: each parsed file must also equal its
//      in-memory build (compare_in_memory_file).
std::string check_round_trip(const Scenario& s, const InMemoryCheckpoint* mem = nullptr);
// 4. Moving tensors between (possibly new) files leaves the verdict unchanged (for scenarios whose
//    verdict cannot depend on layout: at most one layer-level defect).
// verdict: the validator's verdict on s when the caller has it already (else it is computed).
std::string check_sharding(const Scenario& s, ChoiceSource& src, const Result<validate::Report>* verdict = nullptr);
// 5. Moving every marker into tensors, or into _quantization_metadata, leaves the verdict unchanged.
//    verdict: as for check_sharding.
std::string check_marker_placement(const Scenario& s, ChoiceSource& src, const Result<validate::Report>* verdict = nullptr);
// 6. --strict accepts only layers inside the W4A8 kernel contract (checked on the validator's own
//    report: N, K > 0, K % 16, K % G, K % R, G shape, R a power of 4, convrot true).
std::string check_strict_contract(const Scenario& s, const Result<validate::Report>* verdict = nullptr);
// 7. The per-layer API agrees with inspect(): LayersReport::overall() is inspect()'s verdict (layers
//    included), and inspect() with only_layer = P gives the checkpoint error, else P's own verdict.
//    verdict: inspect()'s verdict on s when the caller has it; mem: s in memory (in_memory.hpp) when
//    the caller built it (the runs then skip the writer and the reader), else s is serialized.
//    pick: which layer gets the only_layer run, drawn from it (the fuzz target: one run an input,
//    each layer as likely); nullptr: the first four layers (each run repeats the marker parsing).
std::string check_layers(const Scenario& s, const Result<validate::Report>* verdict = nullptr,
                         const InMemoryCheckpoint* mem = nullptr, ChoiceSource* pick = nullptr);

// Generator configurations the structure-aware target selects by its first choice, so a case found
// by any engine replays as fuzzer bytes (the properties record their choices behind this prefix).
enum class ConfigVariant : std::uint8_t { Any, Valid, OneDefect, Several, kCount };
GenConfig config_variant(ConfigVariant v);

// Fuzz bodies over raw bytes: gen/fuzz_bodies.hpp.

// Exact structural equality of JSON values (kinds, int text, float bits, member order).
bool same_json(const json::Value& a, const json::Value& b);

}  // namespace w4a8::gen
