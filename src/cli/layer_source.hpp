// The tensors of one layer from an open checkpoint, wherever its shards put them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "gemm/layer.hpp"
#include "io/checkpoint.hpp"

namespace w4a8::cli {

// Names of the tensors PREFIX.<suffix> (no further dot), each as find() resolves it, sorted.
std::vector<std::string> layer_tensor_names(const io::Checkpoint& ck, const std::string& prefix);

// gemm::load_layer on the shard holding the layer; a layer split across shards is first gathered
// into one in-memory container.
// @return Layer, or gemm::load_layer()'s errors, or SysResources (no memory file for a split layer).
Result<gemm::Layer> load_layer(const io::Checkpoint& ck, const std::string& prefix, std::int64_t group_size,
                               std::int64_t convrot_groupsize);

}  // namespace w4a8::cli
