// safetensors <-> gemm: load a W4A8 layer and float activations from a container, and build the
// tensors the CLI writes (results, quantized layers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "gemm/reference.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::gemm {

// FloatDtype of a safetensors dtype, if it is F32/BF16/F16.
bool float_dtype_of(st::Dtype d, FloatDtype& out);
st::Dtype st_dtype_of(FloatDtype d);
std::string_view float_dtype_name(FloatDtype d);  // "f32", "bf16", "f16"

// Values of a F32/BF16/F16 tensor. @return values, or OpDtype ("{what} must be F32, BF16 or F16").
Result<std::vector<float>> read_floats(const st::File& f, const st::TensorInfo& t, std::string_view what);

// The layer PREFIX of a file: PREFIX.weight, .weight_s_rel, .weight_s_channel and, when present,
// .weight_codebook, .weight_correction, .bias, with their stored dtypes and shapes (malformed ones
// are left for validate_operands to report, in upstream's order). @return Layer, or UsageError
// (missing tensor), OpDtype (a bias that is not F32/BF16/F16: upstream never checks the bias).
Result<Layer> load_layer(const st::File& f, const std::string& prefix, std::int64_t group_size,
                         std::int64_t convrot_groupsize);

// A tensor from float values, encoded in dtype (values must already be representable).
st::TensorSpec float_tensor(std::string name, FloatDtype dtype, Shape shape, const std::vector<float>& v);

// The stored tensors of a layer (weight, s_rel, s_channel, codebook, correction, bias) plus its
// PREFIX.comfy_quant marker, ready for st::serialize.
std::vector<st::TensorSpec> layer_tensors(const Layer& l, const std::string& prefix);
// The .comfy_quant marker layer_tensors writes for a layer of this G and R (its exact bytes).
std::string layer_marker(std::int64_t group_size, std::int64_t convrot_groupsize);

}  // namespace w4a8::gemm
