// Operand validation shared by every W4A8 GEMM entry point (the reference here, CUDA in kernels/):
// comfy-kitchen's validate_w4a8_operands of the selected release, in its order and words, then the
// input check, then ours; before any work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/upstream.hpp"
#include "gemm/layer.hpp"
#include "safetensors/dtype.hpp"

namespace w4a8::gemm {

// Most elements any operand or result tensor of one call may have (shapes are untrusted input).
// (K is not limited for int32 exactness: acc wraps mod 2^32 as torch's int32 matmul does.)
inline constexpr std::uint64_t kMaxElements = std::uint64_t(1) << 32;

struct TensorDesc {
  st::Dtype dtype{};
  Shape shape;
};

// Shapes and dtypes of one GEMM call.
struct OperandDesc {
  TensorDesc weight, s_rel, s_channel;
  std::optional<TensorDesc> codebook, correction, bias;
  TensorDesc input;
  std::int64_t group_size = 16, convrot_groupsize = 256;
};

OperandDesc describe(const Layer& layer, const Activations& x);
OperandDesc describe(const Layer& layer, st::Dtype input_dtype, const Shape& input_shape);

// Python's repr of a shape tuple: "()", "(3,)", "(3, 4)".
std::string shape_repr(const Shape& s);

// What validate_operands makes of an empty problem that passes every check of upstream's
// validate_w4a8_operands but makes its eager integer path (no correction) raise further on, in torch:
//   Allowed: computed (an empty result, or zeros plus bias): the library's contract, which prepared
//     layers (a probe input [0, K]) and audits rely on;
//   AsUpstream: upstream's exception, as `w4a8check gemm` (which runs upstream's call) reports it,
//     after upstream's Hadamard check and before ours, in upstream's order: K = 0 (profile 0.2.35 only;
//     0.2.40 refuses it earlier) UsageError "... RuntimeError: cannot reshape tensor of 0 elements ...",
//     N = 0 UsageError "... ZeroDivisionError: integer division or modulo by zero", M = 0 (no input
//     row: [0, K], [2, 0, K]) OpEmptyBatch (ValueError "torch.cat(): expected a non-empty list of
//     Tensors"). The correction path (F.linear) computes all of them upstream too.
enum class EmptyProblem : std::uint8_t { Allowed, AsUpstream };

// Upstream's checks (as release `ck` does them), then ours, first failure wins:
// @return Ok, or in this order
//   ScaleGridK (0.2.40): OpPackedWeight, OpSRelRank, OpGroupSize, OpRowWidth, OpSixBitLayout,
//     OpSixBitUniform, OpKDivisible, OpSRelShape, OpSChannelShape, OpCorrectionShape,
//     OpCodebookShape, OpInputK, OpHadamardSize;
//   PackedK (0.2.35): OpPackedWeight, OpContract, OpSRelShape, OpSChannelShape, OpCorrectionShape,
//     OpCodebookShape, OpInputK, OpHadamardSize;
// then ours: OpDtype (s_rel F8_E4M3 or F32, s_channel/codebook/correction F32, input and bias
// F32/BF16/F16), OpBiasShape, OpTooLarge. UsageError where upstream raises a non-ValueError Python
// error the table has no type for: convrot_groupsize 0 (ZeroDivisionError) and a 0-d input
// (IndexError). Inputs of rank >= 1 are accepted as upstream's [..., K]: M = product of the leading
// dimensions.
Status validate_operands(const OperandDesc& d, upstream::ComfyKitchen ck = upstream::kLatestComfyKitchen,
                         EmptyProblem empty = EmptyProblem::Allowed);

// Whether the layer is stored in a form comfy-kitchen release `ck` reads and sglang does not
// (docs/upstream.md "Who loads what"), judged from the storage alone, whatever other defect it has:
// a 2-D I8 weight with F32 group scales (every release), or with F8_E4M3 or F32 group scales and
// 6-bit rows, weight.shape[1] * 8 == 6 * K with K = s_rel.shape[1] * G > 0 (releases that read 6-bit
// rows: profile 0.2.40). sglang refuses these for their storage (sglang.w4a8.dtypes / .shapes)
// before any other rule of its own; `w4a8check gemm` then reports comfy-kitchen's verdict.
bool comfy_kitchen_only_storage(const OperandDesc& d, upstream::ComfyKitchen ck);

// The profile standing for a comfy-kitchen release: each row of comfy_kitchen_versions.def names the
// LAST release of its behaviour (the newest row: the newest release checked), so this is the first
// row not older than `version`, or the newest row for later releases ("0.2.36" -> 0.2.40,
// "0.2.30" -> 0.2.35, "0.3.0" -> 0.2.40). @return nullopt unless version is dotted decimal integers.
std::optional<upstream::ComfyKitchen> comfy_kitchen_for_release(std::string_view version);

// validate_operands(describe(layer, x), ck), then the data vectors must hold what the shapes say
// (UsageError otherwise: an internal inconsistency of the caller, not an upstream error).
Status validate_call(const Layer& layer, const Activations& x, upstream::ComfyKitchen ck = upstream::kLatestComfyKitchen);

// The first weight element whose decode is NaN (a NaN scale, a NaN codebook entry, inf * 0 between a
// scale and a code value): reported, never guessed. pre: validate_call() accepted the layer.
// @return Ok or OpNanWeight.
Status check_decodable(const Layer& layer);

}  // namespace w4a8::gemm
