// Section 4 for float8_e4m3fn, convrot_w4a4, nvfp4, int8_tensorwise and unchecked formats.
#include <gtest/gtest.h>

#include "builder.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;
using Shape = std::vector<std::uint64_t>;

TEST(Float8, ActivationScheme) {
  Ckpt c;
  c.tensor("f.weight", Dtype::F8_E4M3, {4, 8}).tensor("f.weight_scale", Dtype::F32, {});
  c.marker("f", R"({"format": "float8_e4m3fn"})");
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_EQ(r->layers[0].marker.get("_activation_scheme")->text, "dynamic");
  c.tensor("f.input_scale", Dtype::F32, {});
  r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_EQ(r->layers[0].marker.get("_activation_scheme")->text, "static");
  Ckpt missing;
  missing.marker("f", R"({"format": "float8_e4m3fn"})");
  EXPECT_EQ(verdict(run(missing)),
            "sglang.missing_tensors: Comfy layer 'f' is missing checkpoint tensors: ['f.weight', 'f.weight_scale']");
}

TEST(Unchecked, FormatsOutsideTheListAreSkipped) {
  Ckpt c;
  c.tensor("u.weight", Dtype::I8, {2, 2}).marker("u", R"({"format": "ASYM_W4A8_INT8"})");
  c.tensor("n.weight", Dtype::I8, {2, 2}).marker("n", R"({"format": 5})");
  c.tensor("o.weight", Dtype::U8, {2, 2}).marker("o", R"({"other": 1})");
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_EQ(r->layers.size(), 3u);
}

Ckpt w4a4(Dtype wd, Shape ws, Dtype sd, Shape ss, const char* marker = R"({"format": "convrot_w4a4"})") {
  Ckpt c;
  c.tensor("c.weight", wd, ws).tensor("c.weight_scale", sd, ss).marker("c", marker);
  return c;
}

TEST(W4a4, ChecksInOrder) {
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 128}, Dtype::F32, {4}))), "ok");
  EXPECT_EQ(verdict(run(w4a4(Dtype::U8, {4, 128}, Dtype::BF16, {4}))),
            "sglang.w4a4.dtypes: Comfy W4A4 layer 'c' needs I8 packed weights and F32 scales, got U8 and BF16");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {512}, Dtype::F32, {4}))),
            "sglang.w4a4.shapes: Comfy W4A4 layer 'c' has incompatible weight/scale shapes: (512,) and (4,)");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 128}, Dtype::F32, {4, 1}))),
            "sglang.w4a4.shapes: Comfy W4A4 layer 'c' has incompatible weight/scale shapes: (4, 128) and (4, 1)");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 128}, Dtype::F32, {4}, R"({"format": "convrot_w4a4", "convrot_groupsize": 32})"))),
            "sglang.w4a4.convrot_groupsize: Comfy W4A4 layer 'c' has unsupported convrot_groupsize=32");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 128}, Dtype::F32, {4}, R"({"format": "convrot_w4a4", "convrot_groupsize": 1e20})"))),
            "sglang.w4a4.convrot_groupsize: Comfy W4A4 layer 'c' has unsupported convrot_groupsize=100000000000000000000");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 128}, Dtype::F32, {4}, R"({"format": "convrot_w4a4", "convrot_groupsize": "x"})"))),
            "python.int.invalid_literal: invalid literal for int() with base 10: 'x'");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 96}, Dtype::F32, {4}))),
            "sglang.w4a4.input_size: Comfy W4A4 layer 'c' has input size 192, incompatible with quant_group_size=64 "
            "and convrot_groupsize=256");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 96}, Dtype::F32, {4}, R"({"format": "convrot_w4a4", "convrot_groupsize": 64.5})"))),
            "ok");
  EXPECT_EQ(verdict(run(w4a4(Dtype::I8, {4, 16}, Dtype::F32, {4}, R"({"format": "convrot_w4a4", "convrot_groupsize": 16})"))),
            "sglang.w4a4.input_size: Comfy W4A4 layer 'c' has input size 32, incompatible with quant_group_size=64 "
            "and convrot_groupsize=16");
}

Ckpt nvfp4(Shape ws, Shape ss, Dtype s2d, Shape s2s, Dtype wd = Dtype::U8, Dtype sd = Dtype::F8_E4M3) {
  Ckpt c;
  c.tensor("v.weight", wd, ws).tensor("v.weight_scale", sd, ss).tensor("v.weight_scale_2", s2d, s2s);
  return c.marker("v", R"({"format": "nvfp4"})");
}

TEST(Nvfp4, ChecksInOrder) {
  auto r = run(nvfp4({4, 8}, {4, 1}, Dtype::F32, {}));
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_FALSE(r->layers[0].marker.get("_has_pre_quant_scale")->boolean);
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {4, 1}, Dtype::F32, {1}))), "ok");
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {4, 1}, Dtype::F32, {}, Dtype::I8))),
            "sglang.nvfp4.dtypes: Comfy NVFP4 layer 'v' needs U8 packed weights and FP8 block scales, got I8 and F8_E4M3");
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {4, 1}, Dtype::F32, {2}))),
            "sglang.nvfp4.scale_2: Comfy NVFP4 layer 'v' needs a scalar F32 weight_scale_2, got F32(2,)");
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {4, 1}, Dtype::F64, {}))),
            "sglang.nvfp4.scale_2: Comfy NVFP4 layer 'v' needs a scalar F32 weight_scale_2, got F64()");
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {4, 1}, Dtype::F32, {1, 1}))),
            "sglang.nvfp4.scale_2: Comfy NVFP4 layer 'v' needs a scalar F32 weight_scale_2, got F32(1, 1)");
  EXPECT_EQ(verdict(run(nvfp4({32}, {4, 1}, Dtype::F32, {}))),
            "sglang.nvfp4.rank: Comfy NVFP4 layer 'v' needs a 2D packed weight, got (32,)");
  EXPECT_EQ(verdict(run(nvfp4({4, 4}, {4, 0}, Dtype::F32, {}))),
            "sglang.nvfp4.shapes: Comfy NVFP4 layer 'v' has incompatible weight/scale shapes: (4, 4) and (4, 0)");
  EXPECT_EQ(verdict(run(nvfp4({4, 8}, {1, 4}, Dtype::F32, {}))),
            "sglang.nvfp4.shapes: Comfy NVFP4 layer 'v' has incompatible weight/scale shapes: (4, 8) and (1, 4)");
  Ckpt pre = nvfp4({4, 8}, {4, 1}, Dtype::F32, {});
  pre.tensor("v.pre_quant_scale", Dtype::BF16, {16});
  r = run(pre);
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_TRUE(r->layers[0].marker.get("_has_pre_quant_scale")->boolean);
  Ckpt bad = nvfp4({4, 8}, {4, 1}, Dtype::F32, {});
  bad.tensor("v.pre_quant_scale", Dtype::F32, {8});
  EXPECT_EQ(verdict(run(bad)),
            "sglang.nvfp4.pre_quant_scale: Comfy NVFP4 layer 'v' has an incompatible pre_quant_scale: F32(8,)");
  Ckpt bad_dtype = nvfp4({4, 8}, {4, 1}, Dtype::F32, {});
  bad_dtype.tensor("v.pre_quant_scale", Dtype::I8, {16});
  EXPECT_EQ(verdict(run(bad_dtype)),
            "sglang.nvfp4.pre_quant_scale: Comfy NVFP4 layer 'v' has an incompatible pre_quant_scale: I8(16,)");
  Ckpt missing;
  missing.tensor("v.weight", Dtype::U8, {4, 8}).tensor("v.weight_scale", Dtype::F8_E4M3, {4, 1});
  missing.marker("v", R"({"format": "nvfp4"})");
  EXPECT_EQ(verdict(run(missing)), "sglang.missing_tensors: Comfy layer 'v' is missing checkpoint tensors: ['v.weight_scale_2']");
}

Ckpt int8(Dtype wd, Shape ws, Dtype sd, Shape ss) {
  Ckpt c;
  c.tensor("i.weight", wd, ws).tensor("i.weight_scale", sd, ss);
  return c.marker("i", R"({"format": "int8_tensorwise"})");
}

TEST(Int8, TensorwiseAndRowwise) {
  auto r = run(int8(Dtype::I8, {4, 8}, Dtype::F32, {}));
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_NE(r->layers[0].marker.get("_is_tensorwise_scalar"), nullptr);
  r = run(int8(Dtype::I8, {4, 8}, Dtype::F32, {4, 1}));
  ASSERT_EQ(verdict(r), "ok");
  EXPECT_NE(r->layers[0].marker.get("_is_rowwise"), nullptr);
  EXPECT_EQ(verdict(run(int8(Dtype::I8, {4, 8, 1}, Dtype::F32, {}))),
            "sglang.int8.tensorwise_rank: Comfy tensorwise INT8 layer 'i' needs a 2D weight, got (4, 8, 1)");
  EXPECT_EQ(verdict(run(int8(Dtype::U8, {4, 8}, Dtype::F32, {}))),
            "sglang.int8.dtypes: Comfy INT8 layer 'i' needs I8 weights and F32 scales, got U8 and F32");
  EXPECT_EQ(verdict(run(int8(Dtype::I8, {4, 8}, Dtype::F32, {4}))),
            "sglang.int8.shapes: Comfy INT8 layer 'i' has incompatible weight/scale shapes: (4, 8) and (4,)");
  EXPECT_EQ(verdict(run(int8(Dtype::I8, {8}, Dtype::F32, {8, 1}))),
            "sglang.int8.shapes: Comfy INT8 layer 'i' has incompatible weight/scale shapes: (8,) and (8, 1)");
}

}  // namespace
}  // namespace w4a8::validate::testing
