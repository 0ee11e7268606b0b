// The consumer matrix (`validate --consumers`): for each layer of a checkpoint, which consumers load
// it and with which error -- every sglang profile (its validator, layer by layer), every
// comfy-kitchen profile (gemm::validate_operands on the layer's dtypes and shapes, with upstream's
// errors for empty problems as `gemm` reports them) and this project's CUDA kernel
// (kern::check_layer_shape after the newest comfy-kitchen profile's operand checks, as `gemm --impl
// cuda` runs them). Judged from the headers alone: no tensor data is read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "gemm/operands.hpp"
#include "io/checkpoint.hpp"
#include "json/value.hpp"
#include "py/version.hpp"
#include "validate/layers.hpp"

namespace w4a8::cli {

// marker["format"] as validate prints it: the string, the JSON of any other value, "(no format)".
std::string marker_format(const json::Value& marker);
// The same for a recorded marker, without parsing one kept as text (it has no "format" key).
std::string marker_format(const validate::Marker& marker);
// marker_format(marker) appended to out.
void append_marker_format(std::string& out, const json::Value& marker);

enum class ConsumerKind : std::uint8_t { Sglang, ComfyKitchen, Kernel };

inline constexpr std::uint32_t kCellOk = UINT32_MAX;             // the consumer loads the layer
inline constexpr std::uint32_t kCellNotApplicable = UINT32_MAX - 1;  // not a format it loads

struct Consumer {
  ConsumerKind kind;
  std::string version;               // "0.5.23", "0.2.40"; "" for the kernel
  // The error refusing the whole checkpoint (an errors index): sglang's own, or for every consumer a
  // container or index error no loader gets past.
  std::uint32_t checkpoint = kCellOk;
  std::string checkpoint_message;      // ... and its exact message
  std::string checkpoint_file;         // ... and the shard it concerns, for a container error
  std::string name() const;          // "sglang 0.5.23", "comfy-kitchen 0.2.40", "CUDA kernel"
};

struct MatrixRow {
  std::string prefix;
  std::string format;                // marker_format()
  std::vector<std::uint32_t> cells;  // per consumer: kCellOk, kCellNotApplicable or an errors index
  // The exact message of each layer-level refusal: (consumer, message); checkpoint-level ones are
  // the consumer's own (Consumer::checkpoint).
  std::vector<std::pair<std::uint32_t, std::string>> messages;
};

// One error kind of the legend: the first error of that kind seen (its message is an example: most
// messages name their layer) and how many cells it fills.
struct MatrixError {
  Error first;
  std::size_t cells = 0;
};

struct ConsumerMatrix {
  std::vector<Consumer> consumers;  // sglang profiles, comfy-kitchen profiles (oldest first), kernel
  std::vector<MatrixRow> rows;      // every layer any sglang profile recorded, newest profile's order
  std::vector<MatrixError> errors;  // one per error kind (code), in first-seen order
  std::size_t selected = 0;         // the consumer whose verdict is the exit status (--sglang)
  py::Version python = py::kDefaultVersion;

  // No checkpoint-level error and no refused layer.
  bool accepts(std::size_t consumer) const;
  // Layers the consumer refuses (every layer under a checkpoint-level error).
  std::size_t refused(std::size_t consumer) const;
};

// comfy-kitchen's operand validation (profile ck) of layer `l` from `r`'s tensor metadata: the
// OperandDesc of its weight, scales, codebook, correction and bias, G and R from the marker (int() as
// Python pv, the format's defaults when absent; beyond 64 bits ConsumerIntRange), and an F32 input [1, K],
// K = s_rel.shape[1] * G (2 * weight.shape[1] when s_rel is not 2-D), judged as gemm::EmptyProblem::AsUpstream
// (upstream's N = 0 and K = 0 errors on the integer path: it raises them whatever M is).
// @return Ok, gemm::validate_operands()'s errors, python.int.* (G or R), ConsumerIntRange (G or R
//         beyond 64 bits), or ConsumerMissingTensor.
Status comfy_kitchen_accepts(const validate::Report& r, const validate::Layer& l, upstream::ComfyKitchen ck,
                             py::Version pv);
// Whether layer `l` is stored in a form comfy-kitchen release `ck` reads and sglang does not
// (gemm::comfy_kitchen_only_storage on the same OperandDesc comfy_kitchen_accepts judges); false when
// that description cannot be made (a tensor missing, G or R not an int).
bool comfy_kitchen_only_layer(const validate::Report& r, const validate::Layer& l, upstream::ComfyKitchen ck,
                              py::Version pv);
// The CUDA kernel: comfy_kitchen_accepts() under the newest profile, then kern::check_layer_shape.
// @return Ok, those errors, or CudaUnsupported naming the kernel's reason.
Status kernel_accepts(const validate::Report& r, const validate::Layer& l, py::Version pv);

// One LayersReport per sglang profile, in upstream::kSglangProfiles order (validate::inspect_consumers
// or inspect_layers_parsed under each profile); `selected` is the --sglang profile.
ConsumerMatrix build_consumer_matrix(std::span<const validate::LayersReport> per_sglang, upstream::Sglang selected,
                                     py::Version pv);

// Every sglang profile on an open checkpoint (its headers parsed once), then the matrix. The index
// is not checked here (callers do it first).
// @return the matrix, or the validator's Usage-class errors.
Result<ConsumerMatrix> consumer_matrix_of(const io::Checkpoint& ck, upstream::Sglang selected, py::Version pv);

// One line: "loaded by A, B; refused by C [CODE], D [CODE]", consecutive consumers of one kind with the
// same outcome joined ("sglang 0.5.19-0.5.23"); CODE is the first refused layer's error.
std::string consumers_line(const ConsumerMatrix& m);

// Text: the verdict line of the selected consumer, one line per layer (summary: per group of
// identical rows) with short codes (ok, -, E1...: one per error kind), the checkpoint-level errors
// once, the legend (each kind's code, type, cell count and first message).
void print_matrix_text(std::ostream& out, const ConsumerMatrix& m, bool summary);
// JSON: {"ok", "upstream", "consumers": [...], "layers": {P: {"format", "cells", "messages"}} |
// "groups": [...], "errors": {"E1": {"type", "code", "cells", "example"}}}.
// notes: the run's notes (Reporter::notes()), written as "notes" when there are any.
void print_matrix_json(std::ostream& out, const ConsumerMatrix& m, bool summary, const std::vector<std::string>& notes = {});

}  // namespace w4a8::cli
