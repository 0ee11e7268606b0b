// Per-layer verdicts, for the CLI's consumer matrix (which sglang releases accept which layer, and
// with which error): each layer's own section-4 and --strict outcome, plus the checkpoint-level error
// (sections 1-3) that makes upstream refuse every layer.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "validate/inspect.hpp"

namespace w4a8::validate {

struct LayerVerdict {
  Status upstream = Ok{};  // section 4 on this layer alone (Ok when upstream skips its format)
  Status strict = Ok{};    // --strict on it (Ok unless opt.strict, asym_w4a8_int8 and upstream Ok)
};

struct LayersReport {
  upstream::Sglang sglang = upstream::kLatestSglang;  // the release these verdicts predict
  // Sections 1-3 (files, markers, MXFP8 shortcut, missing markers): Ok, or the error upstream raises
  // before it checks any layer. Container errors land here too.
  Status checkpoint = Ok{};
  // The file a container or I/O error in `checkpoint` is about ("" for other errors, or unknown).
  std::string checkpoint_file;
  // The recorded layers with derived keys, and their verdicts (parallel to report.layers). Empty
  // when section 1 failed (upstream built no dict); complete when only section 2 or 3 failed.
  Report report;
  std::vector<LayerVerdict> verdicts;

  // sglang (this release) accepts layer i: no checkpoint error and its own section 4 passed.
  bool accepted(std::size_t i) const { return checkpoint.ok() && verdicts[i].upstream.ok(); }
  // What inspect() returns with the same options (only_layer aside): the checkpoint error, else the
  // first layer's section-4 error, else (strict) the first layer's strict error, else Ok.
  Status overall() const;
};

// Runs every layer's checks (opt.only_layer is ignored: every layer gets a verdict).
// @return LayersReport, whose checkpoint/verdicts hold every Reject-class error; or a Usage-class
//         error (io.open_failed, io.read_failed) when a file cannot be read at all.
Result<LayersReport> inspect_layers(std::span<const InputFile> files, const Options& opt = {});
// As inspect_layers on files whose headers the caller parsed (they must outlive the report).
Result<LayersReport> inspect_layers_parsed(std::span<const ParsedFile> files, const Options& opt = {});

// The consumer matrix: the files are opened (mmap) and parsed once, then judged under every sglang
// profile, in upstream::kSglangProfiles order (opt.sglang is ignored).
// @return one LayersReport per profile, or a Usage-class error as inspect_layers.
Result<std::vector<LayersReport>> inspect_consumers(std::span<const std::string> paths, const Options& opt = {});

}  // namespace w4a8::validate
