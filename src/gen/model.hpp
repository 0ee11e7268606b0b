// The checkpoint model: files of st::TensorSpec plus "__metadata__", as the writer serializes them.
// lower() turns a Scenario into one; serialize() makes the bytes (through st::serialize, then any
// container edit the scenario asked for).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "gen/scenario.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::gen {

struct FileModel {
  std::string path;
  std::vector<st::TensorSpec> tensors;  // data laid out in this order
  std::optional<std::vector<std::pair<std::string, std::string>>> metadata;
  ContainerEdit edit;  // applied after serialization (none by default)
};

struct Checkpoint {
  std::vector<FileModel> files;
};

// post: tensors keep the scenario's names, dtypes and shapes; markers become U8/.. tensors holding
// their encoded text or metadata entries; zero-filled data unless the description has bytes.
Checkpoint lower(const Scenario& s);

// @return one byte vector per file, or UsageError when a spec is inconsistent.
Result<std::vector<std::vector<std::uint8_t>>> serialize(const Checkpoint& c);

// A marker's JSON text: doc.text, or its respelling when the marker has spelling choices.
std::string marker_text(const MarkerDesc& m);
// The bytes of a tensor marker: raw or encoded text, padded with spaces to whole elements.
std::vector<std::uint8_t> marker_bytes(const MarkerDesc& m);

// The _quantization_metadata text a file of the scenario carries (nullopt: no such entry).
std::optional<std::string> quant_metadata_text(const Scenario& s, std::size_t file);
// Whether the file carries a _quantization_metadata entry (quant_metadata_text without the text).
bool has_quant_metadata(const Scenario& s, std::size_t file);

}  // namespace w4a8::gen
