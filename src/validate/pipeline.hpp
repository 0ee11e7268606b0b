// Private to src/validate: upstream's steps as functions over State, shared by inspect() (first error
// wins) and inspect_layers() (every layer's own verdict), and the loaders both open files with.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "validate/state.hpp"

namespace w4a8::validate::detail {

// Sections 1-3: collect, the MXFP8 shortcut, missing markers.
// @return Ok, or collect()'s and apply_mxfp8()'s errors, or sglang.missing_markers.
Status prepare(State& s, std::size_t nfiles, const Loader& load);
// Section 4 on layer i: its format's required tensors, then its rule (table comfy_formats.def).
// Counts the layer in report.unknown_format when its marker names no known format (once per call:
// each walk checks each layer once).
Status check_layer(State& s, std::size_t i);
// --strict on layer i when it is asym_w4a8_int8 (after check_layer passed).
Status check_layer_strict(const State& s, std::size_t i);
// inspect()'s walk: prepare, then section 4 and --strict over every layer (or opt.only_layer).
Result<Report> run(std::size_t nfiles, const Loader& load, const Options& opt, std::shared_ptr<const void> keep);

// Loaders. files/paths/opened must outlive the returned loader's use.
Loader parsed_loader(std::span<const ParsedFile> files);
// Parses files[i].bytes with st::parse into `headers` (reserved by the caller: Sources point into it).
Loader bytes_loader(std::span<const InputFile> files, std::vector<st::Header>& headers);
// Opens paths[i] with st::File::open into `opened` (reserved by the caller: Sources point into it).
Loader file_loader(std::span<const std::string> paths, std::vector<st::File>& opened);

}  // namespace w4a8::validate::detail
