// Pieces of the consumer matrix: the kernels' layer-level contract (kern::check_layer_shape) against
// check_problem itself on full problems, and the one-line consumer summary quantize prints.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "cli/consumer_matrix.hpp"
#include "kernels/problem.hpp"

namespace w4a8::cli {
namespace {

// post of check_layer_shape: the status and text check_problem gives a problem with these fields and
// every other field valid (m = 0, aligned non-null operands, valid dtypes and policy).
TEST(KernelLayerShape, AgreesWithCheckProblemOnFullProblems) {
  alignas(16) static std::int8_t weight[16];
  alignas(16) static std::uint8_t s_rel[16];
  alignas(16) static float s_channel[4];
  std::mt19937_64 rng(20261130);
  const std::int64_t sizes[] = {-1, 0, 1, 16, 48, 64, 96, 256, 1024, 4096, std::int64_t(1) << 31, std::int64_t(1) << 35};
  const std::int64_t groups[] = {0, 3, 4, 8, 12, 16, 32, 48, 128};
  const std::int64_t rots[] = {-4, 0, 4, 8, 16, 64, 256, 1024};
  const int bits[] = {0, 4, 5, 6};
  const int scales[] = {W4A8_SCALE_FP8_E4M3, W4A8_SCALE_F32, 7};
  int refused = 0;
  for (int i = 0; i < 20000; ++i) {
    kern::LayerShape s;
    s.n = sizes[rng() % std::size(sizes)];
    s.k = sizes[rng() % std::size(sizes)];
    s.group_size = groups[rng() % std::size(groups)];
    s.convrot_groupsize = rots[rng() % std::size(rots)];
    s.bits = bits[rng() % std::size(bits)];
    s.s_rel_dtype = scales[rng() % std::size(scales)];
    w4a8_problem p{};
    p.m = 0;
    p.n = s.n;
    p.k = s.k;
    p.group_size = std::int32_t(s.group_size);
    p.convrot_groupsize = std::int32_t(s.convrot_groupsize);
    p.bits = s.bits;
    std::memcpy(&p.s_rel_dtype, &s.s_rel_dtype, sizeof(int));  // any int, as a C caller may store
    p.weight = weight;
    p.s_rel = s_rel;
    p.s_channel = s_channel;
    const char *a = nullptr, *b = nullptr;
    const w4a8_status want = kern::check_problem(p, &a);
    EXPECT_EQ(kern::check_layer_shape(s, &b), want) << s.n << " " << s.k << " " << s.group_size << " " << s.bits;
    EXPECT_STREQ(a, b);
    refused += want != W4A8_OK;
  }
  EXPECT_GT(refused, 1000);
  EXPECT_LT(refused, 19990);
}

TEST(KernelLayerShape, NamesTheStorageVariants) {
  kern::LayerShape s{8, 256, 16, 256, 6, W4A8_SCALE_FP8_E4M3};
  const char* why = nullptr;
  EXPECT_EQ(kern::check_layer_shape(s, &why), W4A8_ERR_UNSUPPORTED);
  EXPECT_STREQ(why, "6-bit codes (bits = 6) unsupported by this kernel");
  s.bits = 4;
  s.s_rel_dtype = W4A8_SCALE_F32;
  EXPECT_EQ(kern::check_layer_shape(s, &why), W4A8_ERR_UNSUPPORTED);
  EXPECT_STREQ(why, "F32 group scales (s_rel_dtype = W4A8_SCALE_F32) unsupported by this kernel");
  s.s_rel_dtype = W4A8_SCALE_FP8_E4M3;
  EXPECT_EQ(kern::check_layer_shape(s, &why), W4A8_OK);
  EXPECT_STREQ(why, "");
}

ConsumerMatrix matrix_of(std::vector<std::vector<std::uint32_t>> rows, std::vector<Error> errors) {
  ConsumerMatrix m;
  for (const char* v : {"0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"}) m.consumers.push_back({ConsumerKind::Sglang, v, kCellOk, {}, {}});
  m.consumers.push_back({ConsumerKind::ComfyKitchen, "0.2.35", kCellOk, {}, {}});
  m.consumers.push_back({ConsumerKind::ComfyKitchen, "0.2.40", kCellOk, {}, {}});
  m.consumers.push_back({ConsumerKind::Kernel, "", kCellOk, {}, {}});
  for (auto& r : rows) m.rows.push_back({"p", "asym_w4a8_int8", std::move(r), {}});
  for (Error& e : errors) m.errors.push_back({std::move(e), 1});
  m.selected = 4;
  return m;
}

TEST(ConsumersLine, JoinsRunsOfOneKindWithOneOutcome) {
  const std::uint32_t ok = kCellOk, na = kCellNotApplicable;
  const Error shapes = make_error(ErrorKind::SgW4a8Shapes, {"'p'", "(1, 2)", "(1, 1)", "(1,)"});
  const Error contract = make_error(ErrorKind::OpContract, {"1", "2", "3"});
  const Error cuda = make_error(ErrorKind::CudaUnsupported, {"x"});
  ConsumerMatrix m = matrix_of({{0, 0, 0, 0, 0, 1, ok, 2}}, {shapes, contract, cuda});
  EXPECT_EQ(consumers_line(m),
            "loaded by comfy-kitchen 0.2.40; refused by sglang 0.5.19-0.5.23 [sglang.w4a8.shapes], comfy-kitchen 0.2.35 "
            "[gemm.contract], CUDA kernel [cuda.unsupported]");
  m = matrix_of({{ok, ok, ok, ok, ok, ok, ok, ok}, {ok, ok, ok, ok, ok, na, na, na}}, {});
  EXPECT_EQ(consumers_line(m), "loaded by sglang 0.5.19-0.5.23, comfy-kitchen 0.2.35, 0.2.40, CUDA kernel");
  EXPECT_TRUE(m.accepts(4));
  // A checkpoint-level refusal counts for every layer.
  m.consumers[0].checkpoint = 0;
  m.errors.push_back({make_error(ErrorKind::SgConflictingMarkers, {"'p'"}), 1});
  m.consumers[0].checkpoint = std::uint32_t(m.errors.size() - 1);
  EXPECT_EQ(m.refused(0), 2u);
  EXPECT_FALSE(m.accepts(0));
  EXPECT_EQ(consumers_line(m),
            "loaded by sglang 0.5.20-0.5.23, comfy-kitchen 0.2.35, 0.2.40, CUDA kernel; refused by sglang 0.5.19 "
            "[sglang.conflicting_markers]");
}

}  // namespace
}  // namespace w4a8::cli
