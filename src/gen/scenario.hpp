// A checkpoint described at the level the validator reasons about (tensors with dtype/shape, markers
// as JSON documents, per-file metadata), plus the defects injected into it and the validator
// options. generate() builds one from a ChoiceSource; lower() (model.hpp) turns it into bytes; the
// oracle reads only this description.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gen/choice_source.hpp"
#include "gen/defect.hpp"
#include "gen/json_doc.hpp"
#include "gen/marker_fields.hpp"
#include "py/version.hpp"
#include "safetensors/dtype.hpp"
#include "validate/inspect.hpp"

namespace w4a8::gen {

enum class Format : std::uint8_t { W4a8, Fp8, Int8Rowwise, Int8Tensorwise, W4a4, Nvfp4, Mxfp8, Other, kCount };
std::string_view format_name(Format f);

struct TensorDesc {
  std::string name;
  st::Dtype dtype = st::Dtype::U8;
  std::vector<std::uint64_t> shape;
  std::size_t file = 0;
  std::vector<std::uint8_t> bytes;  // explicit content; empty means zero-filled to the shape's size
};

enum class Place : std::uint8_t { Tensor, Metadata };

struct MarkerDesc {
  std::string prefix;
  Place place = Place::Tensor;
  std::size_t file = 0;
  JsonDoc doc;
  // doc's members when it is a generated object that defects may still edit (empty once finish()
  // nested it to the recursion limit: nothing edits it after that).
  std::vector<std::pair<std::string, JsonDoc>> fields;
  // int() of the fields upstream reads, for this marker's own value of the key (the oracle takes
  // them from the marker that wrote the key last); absent keys: the format's default.
  IntOutcome group_size{true, "16", {}, {}};
  IntOutcome convrot_groupsize{true, "256", {}, {}};
  std::optional<JsonDoc> convrot;  // the "convrot" member, when present
  // Tensor markers only:
  Encoding encoding = Encoding::Utf8;
  st::Dtype dtype = st::Dtype::U8;
  bool undecodable = false;  // bytes are not valid in the detected encoding (UnicodeDecodeError)
  std::vector<std::uint8_t> raw;  // when non-empty: the exact tensor bytes (undecodable, padded)
  // Choices that respell doc's text from its value (json_spell.hpp; model.hpp's marker_text); empty:
  // doc.text as built. Only documents json.loads accepts are respelled.
  std::vector<std::uint8_t> spelling;
};

// A container-level defect applied to one serialized file (at most one a file).
struct ContainerEdit {
  Defect defect = Defect::kCount;  // kCount: none
  std::uint64_t param = 0;         // meaning depends on the defect (kept so lowering is deterministic)
  std::string name;                // InvalidOffset: the tensor the crate reports
};

struct FileDesc {
  std::string path;
  bool has_metadata = false;  // write "__metadata__" at all
  std::vector<std::pair<std::string, std::string>> metadata;  // other entries (quant_format, ...)
  std::optional<JsonDoc> quant_meta_override;  // replaces the generated _quantization_metadata text
  bool force_quant_meta = false;  // emit {"layers": {}} even without metadata markers
  ContainerEdit container;
  std::vector<std::uint8_t> meta_spelling;  // choices that respell the _quantization_metadata text
};

// The logical layer a generator made (for descriptions and the strict-contract property).
struct LayerDesc {
  std::string prefix;
  Format format = Format::W4a8;
  std::uint64_t n = 0, k = 0;  // outputs and logical inputs (K = 2 * packed width for 4-bit formats)
  std::string group_size;      // W4A8: the int() of the marker's group_size, decimal ("16" default)
};

struct GenConfig {
  std::uint64_t min_defects = 0, max_defects = 3;
  bool allow_strict = true;
  bool allow_container = true;     // container defects (their messages depend on the reader)
  bool differential_safe = false;  // avoid what another implementation may legitimately order
                                   // differently (several bad MXFP8 layers, recursion limits)
  // Nest markers at exactly Python's recursion limit as we model it (json::kPythonMaxDepth) and one
  // past it. Only for engines judged by our model: a real interpreter's limit depends on its stack.
  bool recursion_boundary = false;
  // Predict under any modelled Python (validate::Options::python: repr/int() Unicode data, the digit
  // limit's wording), not only the default. Only for engines judged by our model: the real sglang
  // runs under one interpreter.
  bool vary_python = false;
  // Predict every scenario under this interpreter instead (no choice is drawn for it): for a
  // differential against that real interpreter (tools/upstream/sglang_drift.py run by it).
  std::optional<py::Version> python;
  // Append junk or spaces to group_size strings that exceed int()'s digit limit (DigitTail): which
  // error wins depends on the interpreter.
  bool digit_tails = false;
  std::size_t max_layers = 6;
  // Layer counts from ChoiceSource::halving (mean 1.9 of 6) instead of uniform (3.5): the fuzz
  // target's scenarios, where each layer costs execution time and multi-layer cases still get half.
  bool fewer_layers = false;
  std::size_t max_files = 3;
};

struct Scenario {
  std::vector<FileDesc> files;
  std::vector<TensorDesc> tensors;
  std::vector<MarkerDesc> markers;
  std::vector<LayerDesc> layers;
  std::vector<Defect> defects;  // in injection order
  validate::Options options;

  TensorDesc* find(std::string_view name);
  const TensorDesc* find(std::string_view name) const;
};

// Builds a valid scenario, then injects between cfg.min_defects and cfg.max_defects defects.
Scenario generate(ChoiceSource& src, const GenConfig& cfg = {});
// A valid scenario only (no defects).
Scenario generate_valid(ChoiceSource& src, const GenConfig& cfg = {});
// Human-readable dump for failure reports.
std::string describe(const Scenario& s);

// Byte size of a tensor (nullopt on overflow or a partial byte).
std::optional<std::uint64_t> tensor_bytes(st::Dtype d, const std::vector<std::uint64_t>& shape);

}  // namespace w4a8::gen
