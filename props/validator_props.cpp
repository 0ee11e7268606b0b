// The validator's properties (issue #3 item 3), each a thin RapidCheck wrapper around a check_* body
// in src/gen/properties.cpp (the same bodies the fuzz targets run). Counts add up to > 10,000
// generated checkpoints per ctest run.
#include "gen/in_memory.hpp"
#include "props/prop_runner.hpp"

using w4a8::gen::ConfigVariant;
using w4a8::props::Case;

// Valid checkpoints are accepted with exactly the oracle's layers and derived flags.
W4A8_PROP(ValidatorProps, ValidAcceptedWithDerivedFlags, 2000) {
  Case c(ConfigVariant::Valid);
  c.require(w4a8::gen::check_verdict(c.scenario));
}

// One injected defect -> exactly its error kind where it fires under the scenario's sglang release
// (else acceptance), and the oracle's message byte for byte.
W4A8_PROP(ValidatorProps, OneDefectExactError, 3000) {
  Case c(ConfigVariant::OneDefect);
  RC_TAG(c.scenario.defects.empty() ? std::string("(none fit)") : std::string(w4a8::gen::defect_name(c.scenario.defects[0])));
  RC_TAG(std::string("sglang ") + std::string(w4a8::upstream::profile(c.scenario.options.sglang).version));
  c.require(w4a8::gen::check_single_defect(c.scenario));
}

// Several defects -> the first one in upstream's order wins.
W4A8_PROP(ValidatorProps, SeveralDefectsFirstByPrecedence, 2000) {
  Case c(ConfigVariant::Several);
  c.require(w4a8::gen::check_verdict(c.scenario));
}

// Writer/reader round trip of every generated file, and the in-memory build equals what the reader
// returns.
W4A8_PROP(ValidatorProps, WriterReaderRoundTrip, 1000) {
  Case c(ConfigVariant::Any);
  const auto mem = w4a8::gen::InMemoryCheckpoint::of(c.scenario);
  c.require(w4a8::gen::check_round_trip(c.scenario, mem ? &*mem : nullptr));
}

// Sharding across files does not change the verdict.
W4A8_PROP(ValidatorProps, ShardingKeepsVerdict, 1000) {
  Case c(ConfigVariant::Any);
  c.require(w4a8::gen::check_sharding(c.scenario, c.rec));
}

// Markers in tensors vs in _quantization_metadata: same verdict.
W4A8_PROP(ValidatorProps, MarkerPlacementKeepsVerdict, 1000) {
  Case c(ConfigVariant::Any);
  c.require(w4a8::gen::check_marker_placement(c.scenario, c.rec));
}

// The per-layer API (inspect_layers, only_layer) agrees with inspect().
W4A8_PROP(ValidatorProps, PerLayerVerdictsAgreeWithInspect, 1000) {
  Case c(ConfigVariant::Any);
  c.require(w4a8::gen::check_layers(c.scenario));
}

// The same, the way the structure-aware fuzz target runs it: one only_layer run, on a layer the
// choices pick (any layer, not only the first four), on the in-memory build.
W4A8_PROP(ValidatorProps, PickedLayerVerdictAgreesWithInspect, 500) {
  Case c(ConfigVariant::Any);
  const auto mem = w4a8::gen::InMemoryCheckpoint::of(c.scenario);
  c.require(w4a8::gen::check_layers(c.scenario, nullptr, mem ? &*mem : nullptr, &c.rec));
}

// --strict accepts only what the kernel contract allows (and agrees with the oracle).
W4A8_PROP(ValidatorProps, StrictAcceptsOnlyKernelContract, 1000) {
  Case c(ConfigVariant::Any);
  c.require(w4a8::gen::check_strict_contract(c.scenario));
  c.require(w4a8::gen::check_verdict(c.scenario));
}
