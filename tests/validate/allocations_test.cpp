// The validator allocates nothing per layer once its tables are sized: a model's layers share their
// marker objects (validate::Marker), and the rules build no strings or vectors on the accepted path.
// Regressions here were invisible to every other test: a copy of each marker, then an implicit
// st::Shape -> std::vector conversion in shape_is (two allocations per layer), each cost 5-10 % of a
// 20k-tensor `validate`. Counted with a replaced global operator new (support/counting_new.hpp).
#include <gtest/gtest.h>

#include <cstdio>

#include <string>

#include "builder.hpp"
#include "support/counting_new.hpp"

namespace w4a8::validate::testing {
namespace {

constexpr std::string_view kMarker = R"({"format": "asym_w4a8_int8", "group_size": 16})";

// A layer name as real models have them: longer than any short-string buffer, so a std::string per
// layer would allocate (Layer::prefix was one until it became a view).
std::string layer_name(int i) { return "model.diffusion_model.double_blocks." + std::to_string(i) + ".img_attn.qkv"; }

// Where the markers are: .comfy_quant tensors; _quantization_metadata in the shape writers give it
// (read without building it, json/flat_layers.hpp); or with other root members the reader only
// checks (a NaN, a nested value: before, such a document was built whole, 3 allocations a layer).
enum class Markers { Tensors, Metadata, MetadataWithOthers };

// Allocations of one inspect() (parse + validate) of `layers` equal asym_w4a8_int8 layers with the
// same marker bytes.
long allocations(int layers, bool strict, Markers where = Markers::Tensors) {
  Ckpt c;
  std::string meta = where == Markers::MetadataWithOthers ? R"({"format_version": "1.0", "tools": [NaN, {"a": []}], "layers": {)"
                                                    : R"({"format_version": "1.0", "layers": {)";
  for (int i = 0; i < layers; ++i) {
    const std::string p = layer_name(i);
    if (where == Markers::Tensors) {
      c.w4a8(p, 4, 128, 16, std::string(kMarker));
      continue;
    }
    c.tensor(p + ".weight", st::Dtype::I8, {4, 128});
    c.tensor(p + ".weight_s_rel", st::Dtype::F8_E4M3, {4, 16}, std::nullopt, 0x38);
    c.tensor(p + ".weight_s_channel", st::Dtype::F32, {4}, f32_bytes({1, 1, 1, 1}));
    meta += (i ? ", \"" : "\"") + p + "\": " + std::string(kMarker);
  }
  if (where != Markers::Tensors) c.meta("_quantization_metadata", meta + "}}");
  const std::vector<Bytes> files{c.bytes()};
  w4a8::testing::heap::start();
  auto r = run(files, strict);
  const long n = w4a8::testing::heap::stop().count;
  EXPECT_TRUE(r.ok()) << verdict(r);
  EXPECT_EQ(r.ok() ? r->layers.size() : 0u, static_cast<std::size_t>(layers));
  return n;
}

TEST(Allocations, NonePerLayerOnTheAcceptedPath) {
  for (Markers where : {Markers::Tensors, Markers::Metadata, Markers::MetadataWithOthers})
    for (bool strict : {false, true}) {
      const long small = allocations(200, strict, where), large = allocations(1200, strict, where);
      // Tables grow by doubling: a handful more for 6x the layers, far below one per layer (1,000).
      EXPECT_LT(large - small, 60) << (where != Markers::Tensors ? "markers in metadata: " : "")
                                   << (strict ? "--strict: " : "") << small << " allocations for 200 layers, "
                                   << large << " for 1,200";
    }
}

}  // namespace
}  // namespace w4a8::validate::testing
