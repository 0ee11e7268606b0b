// The validator: a port of sglang's inspect_comfy_quant_markers (../shared/spec/validator.md) that
// returns exactly the error upstream raises (type + message), plus --strict kernel/data checks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "json/value.hpp"
#include "safetensors/dtype.hpp"

namespace w4a8::validate {

struct Options {
  bool strict = false;  // add the kernel contract and data-level checks after upstream's
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

// Opens (mmap) each path, then inspect(). Missing/unreadable files: IoOpenFailed / IoReadFailed.
Result<Report> inspect_paths(std::span<const std::string> paths, const Options& opt = {});

}  // namespace w4a8::validate
