// `w4a8check quantize`: a float checkpoint (shards, a directory or an index.json) -> an
// asym_w4a8_int8 checkpoint. Whole-model mode quantizes every selected 2-D float weight, copies
// every other tensor byte for byte, writes markers as .comfy_quant tensors and/or
// `_quantization_metadata`, and shards the output (with a model.safetensors.index.json when there is
// more than one shard). Layers are quantized by a pool of threads while the shards are streamed to
// disk in order, each shard through an AtomicFile (published only once every file is complete).
// Single-layer mode (--key) writes one layer (and its bias) to one file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/options.hpp"
#include "gemm/quantizer.hpp"

namespace w4a8::cli {

class Reporter;

inline constexpr std::uint64_t kDefaultMaxShardBytes = 5'000'000'000;  // Hugging Face's "5GB"

struct QuantizeJob {
  std::vector<std::string> inputs;  // the float checkpoint
  std::string out;                  // FILE.safetensors, or a directory
  std::vector<std::string> globs;   // whole model: tensors to quantize (empty: "*.weight")
  std::string key, prefix;          // single layer: the weight's name and the layer prefix
  gemm::QuantizeOptions q;
  MarkerChoice markers = MarkerChoice::Tensor;
  std::uint64_t max_shard_bytes = kDefaultMaxShardBytes;
  unsigned threads = 1;
  bool quiet = false;
};

// Runs the job and reports through `report` (summary on stdout, progress on stderr).
void run_quantize(const QuantizeJob& job, Reporter& report);

// "5GB", "500MB", "64KiB", "1000" -> bytes (decimal units as Hugging Face; KiB/MiB/GiB binary).
// @return bytes, or UsageError.
Result<std::uint64_t> parse_size(const std::string& text);

}  // namespace w4a8::cli
