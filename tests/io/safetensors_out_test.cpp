// safetensors_prefix + tensor bytes written back to back == st::serialize's file, byte for byte (the
// container module's writer is the independent reference), and the reader accepts it.
#include <gtest/gtest.h>

#include <random>

#include "io/safetensors_out.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::io {
namespace {

TEST(SafetensorsOut, MatchesTheContainerWriterByteForByte) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<st::TensorSpec> specs;
    std::vector<OutTensor> outs;
    const int count = int(rng() % 6);
    for (int i = 0; i < count; ++i) {
      const st::Dtype dt = std::vector<st::Dtype>{st::Dtype::F32, st::Dtype::I8, st::Dtype::BF16, st::Dtype::U8}[rng() % 4];
      std::vector<std::uint64_t> shape;
      for (std::uint32_t r = rng() % 3; r > 0; --r) shape.push_back(rng() % 5);
      const auto bytes = tensor_bytes(dt, shape);
      ASSERT_TRUE(bytes);
      std::vector<std::uint8_t> data(*bytes);
      for (auto& b : data) b = std::uint8_t(rng());
      const std::string name = "t" + std::to_string(i) + (i % 2 ? "\"quoted\\" : ".weight");
      specs.push_back({name, dt, shape, data});
      outs.push_back({name, dt, shape});
    }
    std::vector<std::pair<std::string, std::string>> meta{{"format", "pt"}, {"k\n", "v\"w"}};
    st::WriteOptions wo;
    if (round % 2) wo.metadata = meta;
    auto ref = st::serialize(specs, wo);
    ASSERT_TRUE(ref.ok());
    auto head = safetensors_prefix(outs, round % 2 ? &meta : nullptr);
    ASSERT_TRUE(head.ok());
    std::vector<std::uint8_t> ours(head->begin(), head->end());
    for (const auto& s : specs) ours.insert(ours.end(), s.bytes.begin(), s.bytes.end());
    EXPECT_EQ(ours, *ref) << "round " << round;
    EXPECT_TRUE(st::parse(ours).ok());
  }
}

TEST(SafetensorsOut, RefusesDuplicatesAndImpossibleShapes) {
  std::vector<OutTensor> dup{{"a", st::Dtype::F32, {1}}, {"a", st::Dtype::F32, {2}}};
  EXPECT_FALSE(safetensors_prefix(dup, nullptr).ok());
  std::vector<OutTensor> huge{{"a", st::Dtype::F32, {1ull << 40, 1ull << 40}}};
  EXPECT_FALSE(safetensors_prefix(huge, nullptr).ok());
  EXPECT_FALSE(tensor_bytes(st::Dtype::F32, std::vector<std::uint64_t>{1ull << 62, 8}).has_value());
}

}  // namespace
}  // namespace w4a8::io
