// Fuzz bodies over raw bytes, one per fuzz target (fuzz/targets.txt), shared by libFuzzer, AFL++,
// the corpus replay and the decode tool. Each returns "" when its properties hold, else a
// description of the failure. Built for speed: one validator run per input on an already-parsed
// (or never-serialized) header; the costlier cross-checks run on a deterministic sample.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "gen/in_memory.hpp"
#include "gen/properties.hpp"
#include "gen/scenario.hpp"
#include "safetensors/reader.hpp"
#include "validate/inspect.hpp"

namespace w4a8::gen {

// ---- container ----
// Raw file bytes: parse never crashes; accepted => offsets in bounds and sizes consistent, and the
// validator runs on the parsed header without crashing. On 1 input in kContainerSampleEvery
// (chosen by a hash of the bytes) also: parse_prefix agrees with parse, and the writer round-trips
// the parsed tensors.
inline constexpr std::uint64_t kContainerSampleEvery = 16;
std::string check_container_bytes(std::span<const std::uint8_t> bytes);

// ---- marker_json ----
// Marker bytes: json::loads_bytes never crashes; accepted => dump/loads_str keeps the exact
// structure, and a value-preserving respelling of the text (raw_json.hpp: duplicate keys resolved
// as a dict does, floats respelled with 4-digit exponents, non-ASCII escaped) parses to the same
// structure; as the .comfy_quant tensor of a valid tiny W4A8 layer, the validator's error kind
// matches the JSON verdict; as a _quantization_metadata text, check_metadata_text.
std::string check_marker_bytes(std::span<const std::uint8_t> bytes);
// json::read_flat_layers(text) against json::loads_str(text), its contract (flat_layers.hpp): the
// same failure (kind, digit count, container), the same shape, or the same layers (keys, and each
// marker's text parsing to the value json.loads gives it); declined only where it may be. "" if so.
std::string check_metadata_text(std::string_view text);

// ---- validator_struct ----
// The metamorphic check an input asks for (one choice after the scenario; 0 and most values: none).
enum class MetaCheck : std::uint8_t { None, RoundTrip, Strict, Sharding, Placement, Layers, kCount };
inline constexpr std::uint64_t kMetaCheckChoices = 16;  // values >= kCount mean None
std::string_view meta_check_name(MetaCheck c);

// Fuzzer bytes decoded: the first choice picks the generator configuration, then the scenario,
// then the metamorphic check (sharding and placement draw their own choices from the rest).
struct ScenarioCase {
  ConfigVariant variant = ConfigVariant::Any;
  Scenario scenario;
  MetaCheck check = MetaCheck::None;
};
ScenarioCase decode_case(ChoiceSource& src);
// The generator configuration of a variant as the case decodes it: config_variant's, with fewer
// layers (each layer costs execution time; the properties keep the uniform count).
GenConfig case_config(ConfigVariant v);
// The text pinned for a choice-byte input (corpus/validator_struct.pins): variant, check, scenario.
std::string describe_case(const ScenarioCase& c);

// Bytes -> case -> oracle verdict == the validator's (one in-memory run; one-defect cases also
// produce that defect's kind), then the case's metamorphic check.
std::string check_scenario_bytes(std::span<const std::uint8_t> bytes);

// ---- plugin_elf ----
// A kernel plugin file's bytes: the preflight before dlopen() (plugin::elf_defect) never crashes or
// reads outside them; on x86-64 its verdict and the rule it names agree with the second reader
// (elf_oracle.hpp); an accepted file stays accepted with bytes appended; and on 1 input in
// kContainerSampleEvery the same bytes in a file (check_elf's descriptor reads) get the same reason.
std::string check_elf_bytes(std::span<const std::uint8_t> bytes);

}  // namespace w4a8::gen
