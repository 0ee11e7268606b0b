// The validator: a port of sglang's inspect_comfy_quant_markers (docs/validator.md) that returns
// exactly the error upstream raises (type + message) for a chosen sglang release, plus --strict
// kernel/data checks. Per-layer verdicts for the CLI's consumer matrix: layers.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "json/value.hpp"
#include "py/version.hpp"
#include "safetensors/dtype.hpp"
#include "safetensors/reader.hpp"
#include "validate/marker.hpp"

namespace w4a8::validate {

struct Options {
  bool strict = false;  // add the kernel contract and data-level checks after upstream's
  upstream::Sglang sglang = upstream::kLatestSglang;  // the release whose behaviour is predicted
  py::Version python = py::kDefaultVersion;  // the Python sglang runs under (repr()/int() Unicode data)
  // Non-empty: run section 4 and --strict on this prefix only (`w4a8check gemm` checks the layer it
  // runs, not the whole checkpoint); sections 1-3 are unchanged. A prefix without a marker after
  // section 3 is ValidateNoSuchLayer.
  std::string only_layer;
  // Memory, not verdicts: a mapped file (ParsedFile::mapped, or opened by path) whose tensor data is at
  // least this large has its markers parsed in file order first with the data pages behind released
  // (collect.cpp), and its data pages released every few thousand layers of --strict (inspect.cpp);
  // every verdict is the same either way (tests run both with 0 here).
  std::uint64_t release_pages_from = std::uint64_t{4} << 20;
};

// One checkpoint file: the path exactly as the caller gave it (it appears in messages) and its bytes.
struct InputFile {
  std::string path;
  std::span<const std::uint8_t> bytes;
};

// A checkpoint_meta entry: name, dtype, shape (and the data offsets in its file), as parsed.
using TensorMeta = st::TensorInfo;

struct Layer {
  // A view, like the tensors' names (no allocation per layer): of a tensor name in the parsed
  // headers, or of a key of a file's _quantization_metadata (in the header's text of it, or in the
  // document Report::metadata keeps when it had to be parsed whole). Like `tensors`, it must not
  // outlive the Report (nor, for inspect_parsed, the caller's headers).
  st::Name prefix;
  Marker marker;  // as recorded (merged under per-key profiles), plus upstream's derived keys
};

struct Report {
  upstream::Sglang sglang = upstream::kLatestSglang;  // the release this verdict predicts
  std::vector<Layer> layers;  // upstream's result dict, in insertion order
  // Of those, the layers whose marker names no format upstream knows (no "format", or another
  // string): section 4 skips them silently, so they are accepted without a check of their tensors.
  std::size_t unknown_format = 0;
  // Tensor names held by more than one of the files (a later file's replaces the earlier ones), and
  // the first such name: sharded checkpoints hold each tensor once, so this is worth a note.
  std::size_t replaced_tensors = 0;
  std::string_view first_replaced;
  // checkpoint_meta, sorted by name (a later file's tensor replaces an earlier one of that name).
  // Pointers into the parsed headers, which `keep` owns (inspect, inspect_paths) or the caller
  // keeps alive (inspect_parsed).
  std::vector<const TensorMeta*> tensors;
  std::shared_ptr<const void> keep;      // the parsed headers, or what the caller keeps them in
  std::shared_ptr<const void> metadata;  // _quantization_metadata documents parsed whole (prefixes view them)

  // checkpoint_meta.get(name); nullptr when absent.
  const TensorMeta* find(std::string_view name) const;
  // The tensors named prefix + "." + anything (a layer's own): one run of the sorted table.
  // hint (optional, in and out): where to look first, set to the position after the run found.
  // Walking layers in name order with one hint finds each run without a search.
  std::span<const TensorMeta* const> under(std::string_view prefix, std::size_t* hint = nullptr) const;
};

// @return Report, or the first error upstream raises (safetensors container errors, sglang.*,
//         python.*, torch.*, safetensors.dtype_not_understood), or with opt.strict also strict.*
//         errors; with opt.only_layer also validate.no_such_layer.
Result<Report> inspect(std::span<const InputFile> files, const Options& opt = {});

// A file whose header the caller already parsed (st::parse or an equivalent in-memory model):
// inspect() without re-parsing. bytes must be the whole file the header describes (marker tensors
// and --strict data are read from it at header->data_start() + offsets). The headers must outlive
// the Report (its tensors point into them).
struct ParsedFile {
  std::string_view path;
  std::span<const std::uint8_t> bytes;
  const st::Header* header = nullptr;
  bool mapped = false;  // bytes are an st::File's mapping: the validator may release pages it has read
};
// @return as inspect(); container errors cannot occur (the caller parsed the headers).
Result<Report> inspect_parsed(std::span<const ParsedFile> files, const Options& opt = {});

// Opens (mmap) each path, then inspect(). Missing/unreadable files: IoOpenFailed / IoReadFailed.
Result<Report> inspect_paths(std::span<const std::string> paths, const Options& opt = {});

}  // namespace w4a8::validate
