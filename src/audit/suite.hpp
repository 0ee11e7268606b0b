// Audit suites: the case grids (small: CI seconds; standard: under a minute through the fast
// reference; full: long), deterministic data for each case, and the suite directory on disk:
//   DIR/manifest.json            the Manifest (case_spec.hpp), written last
//   DIR/cases/<id>.safetensors   the layer (PREFIX.weight, ... PREFIX.comfy_quant) and `input` [M, K]
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/case_spec.hpp"
#include "core/result.hpp"
#include "gemm/layer.hpp"

namespace w4a8::audit {

inline constexpr std::string_view kGrids[] = {"small", "standard", "full"};
inline constexpr std::uint64_t kMaxManifestBytes = 64u << 20;

// The cases of a grid (ids, files, shapes, dtypes, data kinds, seeds derived from `seed`).
// @return cases, or AuditUnknownGrid.
Result<std::vector<CaseSpec>> grid_cases(std::string_view grid, std::uint64_t seed);

struct CaseData {
  gemm::Layer layer;
  gemm::Activations x;
};
// The layer and activations of a case: a pure function of the spec (seed included).
// pre: the spec's K, G, R satisfy the kernel contract (grid_cases only makes such specs).
CaseData generate_case(const CaseSpec& c);

// Progress callback: (done, total, case id).
using Progress = std::function<void(std::size_t, std::size_t, const std::string&)>;

// Writes the suite into dir (created if missing). Refuses a dir that already holds a manifest
// (never overwrites a suite); each file is written to a temp name, synced and renamed.
// @return Ok, or AuditSuiteExists, IoWriteFailed.
Status write_suite(const std::string& dir, const Manifest& m, const Progress& progress = {});

// @return the manifest of dir, or io::read_small_file()'s errors, AuditManifest (not a suite).
Result<Manifest> read_suite(const std::string& dir);

// Loads one case file of a suite (the layer through gemm::load_layer, the activations).
// @return CaseData, or the loader's errors (missing tensor, dtype), AuditCaseFile when the stored
//         input, shapes or storage (bits, scale dtype) disagree with the manifest entry.
Result<CaseData> load_case(const std::string& dir, const Manifest& m, const CaseSpec& c);

}  // namespace w4a8::audit
