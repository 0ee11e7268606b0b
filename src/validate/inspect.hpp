// The validator: a port of sglang's inspect_comfy_quant_markers (../shared/spec/validator.md) that
// returns exactly the error upstream raises (type + message), plus --strict kernel/data checks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "json/value.hpp"
#include "py/version.hpp"
#include "safetensors/dtype.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::validate {

struct Options {
  bool strict = false;  // add the kernel contract and data-level checks after upstream's
  upstream::Sglang sglang = upstream::kLatestSglang;  // the release whose behaviour is predicted
  py::Version python = py::kDefaultVersion;  // the Python sglang runs under (repr()/int() Unicode data)
  // Non-empty: run section 4 and --strict on this prefix only (`w4a8check gemm` checks the layer it
  // runs, not the whole checkpoint); sections 1-3 are unchanged.
  std::string only_layer;
};

// One checkpoint file: the path exactly as the caller gave it (it appears in messages) and its bytes.
struct InputFile {
  std::string path;
  std::span<const std::uint8_t> bytes;
};

struct TensorMeta {
  std::string name;
  st::Dtype dtype{};
  std::vector<std::uint64_t> shape;
};

struct Layer {
  std::string prefix;
  json::Value marker;  // as parsed, plus upstream's derived keys (_has_codebook, ...)
};

struct Report {
  std::vector<Layer> layers;         // upstream's result dict, in insertion order
  std::vector<TensorMeta> tensors;   // checkpoint_meta, sorted by name (later files overwrite)
  const TensorMeta* find(std::string_view name) const;
};

// @return Report, or the first error upstream raises (safetensors container errors, sglang.*,
//         python.*, torch.*), or with opt.strict also strict.* errors.
Result<Report> inspect(std::span<const InputFile> files, const Options& opt = {});

// A file whose header the caller already parsed (st::parse or an equivalent in-memory model):
// inspect() without re-parsing. bytes must be the whole file the header describes (marker tensors
// and --strict data are read from it at header->data_start() + offsets).
struct ParsedFile {
  std::string_view path;
  std::span<const std::uint8_t> bytes;
  const st::Header* header = nullptr;
};
// @return as inspect(); container errors cannot occur (the caller parsed the headers).
Result<Report> inspect_parsed(std::span<const ParsedFile> files, const Options& opt = {});

// Opens (mmap) each path, then inspect(). Missing/unreadable files: IoOpenFailed / IoReadFailed.
Result<Report> inspect_paths(std::span<const std::string> paths, const Options& opt = {});

}  // namespace w4a8::validate
