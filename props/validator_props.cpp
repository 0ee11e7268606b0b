// The validator's properties (issue #3 item 3), each a thin RapidCheck wrapper around a check_* body
// in src/gen/properties.cpp (the same bodies the fuzz targets run). Counts add up to > 10,000
// generated checkpoints per ctest run.
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gen/in_memory.hpp"
#include "gen/model.hpp"
#include "json/dump.hpp"
#include "props/prop_runner.hpp"
#include "validate/inspect.hpp"

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

// Releasing pages (Options::release_pages_from: markers parsed ahead in file order, data pages
// handed back during --strict) changes memory only: the same files opened by path give the same
// verdict, layers and markers with it on for every size (0) and off.
W4A8_PROP(ValidatorProps, ReleasingPagesKeepsEveryVerdict, 300) {
  Case c(ConfigVariant::Any);
  auto bytes = w4a8::gen::serialize(w4a8::gen::lower(c.scenario));
  RC_PRE(bytes.ok());
  std::string tmpl = (std::filesystem::temp_directory_path() / "w4a8_release_XXXXXX").string();
  RC_ASSERT(::mkdtemp(tmpl.data()) != nullptr);
  std::vector<std::string> paths;
  for (std::size_t i = 0; i < bytes->size(); ++i) {
    paths.push_back(tmpl + "/f" + std::to_string(i) + ".safetensors");
    std::ofstream(paths.back(), std::ios::binary)
        .write(reinterpret_cast<const char*>((*bytes)[i].data()), std::streamsize((*bytes)[i].size()));
  }
  auto run = [&](std::uint64_t from) {
    w4a8::validate::Options o = c.scenario.options;
    o.release_pages_from = from;
    return w4a8::validate::inspect_paths(paths, o);
  };
  const auto on = run(0), off = run(UINT64_MAX);
  std::filesystem::remove_all(tmpl);
  RC_ASSERT(on.ok() == off.ok());
  if (!on.ok()) {
    RC_ASSERT(on.error().kind == off.error().kind);
    RC_ASSERT(on.error().message == off.error().message);
    return;
  }
  RC_ASSERT(on->layers.size() == off->layers.size());
  for (std::size_t i = 0; i < on->layers.size(); ++i) {
    RC_ASSERT(on->layers[i].prefix == off->layers[i].prefix);
    RC_ASSERT(w4a8::json::dump(on->layers[i].marker) == w4a8::json::dump(off->layers[i].marker));
  }
}
