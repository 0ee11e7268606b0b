// Memory bound: headers that claim huge sizes are rejected (or accepted from the header alone)
// without allocating more than a small multiple of the header's own size. Counts every operator
// new in this binary while parse runs.
#include <gtest/gtest.h>

#include <cstdio>

#include "safetensors/reader.hpp"
#include "support/counting_new.hpp"
#include "test_bytes.hpp"

namespace w4a8::st {
namespace {

using testing::heap::Usage;

// Peak live bytes (and total requested) from operator new while parse_prefix runs.
Usage measure(std::span<const std::uint8_t> prefix, std::uint64_t file_size, ErrorKind* kind) {
  testing::heap::start();
  {
    auto r = parse_prefix(prefix, file_size);
    *kind = r.ok() ? ErrorKind::kCount : r.error().kind;
  }
  return testing::heap::stop();
}

std::size_t allocated_by_parse(std::span<const std::uint8_t> prefix, std::uint64_t file_size, ErrorKind* kind) {
  const Usage u = measure(prefix, file_size, kind);
  std::printf("  peak %zu bytes live, %zu requested\n", u.peak, u.total);
  return u.peak;
}

constexpr std::size_t kSlack = 16 * 1024;  // per-parse constant: error strings, small vectors

TEST(StMemory, HugeTensorClaimIn1KB) {
  std::string h = R"({"x":{"dtype":"U8","shape":[1152921504606846976],"data_offsets":[0,1152921504606846976]}})";
  h.resize(1016, ' ');
  const auto b = test::container(h);
  ASSERT_EQ(b.size(), 1024u);
  ErrorKind k{};
  EXPECT_LE(allocated_by_parse(b, b.size(), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::StMetadataIncompleteBuffer);
  // Accepted when the file size agrees: still nothing proportional to 2^60.
  EXPECT_LE(allocated_by_parse(b, b.size() + (1ull << 60), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::kCount);
}

TEST(StMemory, HugeHeaderLengthIn1KB) {
  ErrorKind k{};
  const auto b = test::container_n(100'000'000, std::string(1016, ' '));
  EXPECT_LE(allocated_by_parse(b, b.size(), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::StInvalidHeaderLength);
  const auto c = test::container_n(100'000'001, std::string(1016, ' '));
  EXPECT_LE(allocated_by_parse(c, c.size(), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::StHeaderTooLarge);
  const auto d = test::container_n(UINT64_MAX - 7, std::string(1016, ' '));
  EXPECT_LE(allocated_by_parse(d, d.size(), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::StHeaderTooLarge);
}

TEST(StMemory, HugeShapeCountsIn1KB) {
  // Many large dims, one huge rank claim in text: allocation tracks the text, not the values.
  std::string h = R"({"x":{"dtype":"F64","shape":[)";
  for (int i = 0; i < 40; ++i) h += (i ? ",18446744073709551615" : "18446744073709551615");
  h += R"(],"data_offsets":[0,0]}})";
  const auto b = test::container(h);
  ErrorKind k{};
  EXPECT_LE(allocated_by_parse(b, b.size(), &k), kSlack);
  EXPECT_EQ(k, ErrorKind::StValidationOverflow);
}

// Allocation grows with the header, not faster. The worst case is many tiny entries: each costs a
// TensorInfo (80 bytes) and a shape vector however short its text (~63 bytes here).
TEST(StMemory, ProportionalToHeader) {
  std::string h = "{";
  std::uint64_t off = 0;
  for (int i = 0; h.size() < 1'000'000; ++i) {
    if (i) h += ',';
    h += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + std::to_string(off) +
         "," + std::to_string(off + 1) + "]}";
    ++off;
  }
  h += '}';
  const auto b = test::container(h);
  ErrorKind k{};
  const Usage u = measure(b, b.size() + off, &k);
  EXPECT_EQ(k, ErrorKind::kCount);
  EXPECT_LE(u.peak, 3 * h.size());
  std::printf("1 MB header (%llu tensors): peak %zu bytes live (%.1fx), %zu requested\n", (unsigned long long)off,
              u.peak, double(u.peak) / double(h.size()), u.total);
}

// A header as checkpoints have them (long names, 2-D shapes, ~120 bytes an entry): the parsed table
// peaks under twice the header (the DOM path it replaced took ~10x).
TEST(StMemory, RealisticHeaderUnderTwiceItsSize) {
  std::string h = R"({"__metadata__":{"format":"pt"})";
  std::uint64_t off = 0;
  static const char* kSuffix[] = {".weight", ".weight_s_rel", ".weight_s_channel", ".comfy_quant"};
  for (int i = 0; h.size() < 1'000'000; ++i) {
    h += ",\"model.diffusion_model.double_blocks." + std::to_string(i / 48) + ".img_attn.proj_" +
         std::to_string(i / 4 % 12) + kSuffix[i % 4] + "\":{\"dtype\":\"U8\",\"shape\":[3,5],\"data_offsets\":[" +
         std::to_string(off) + "," + std::to_string(off + 15) + "]}";
    off += 15;
  }
  h += '}';
  const auto b = test::container(h);
  ErrorKind k{};
  const Usage u = measure(b, b.size() + off, &k);
  EXPECT_EQ(k, ErrorKind::kCount);
  EXPECT_LE(u.peak, 2 * h.size());
  std::printf("1 MB realistic header (%llu tensors): peak %zu bytes live (%.2fx)\n", (unsigned long long)(off / 15),
              u.peak, double(u.peak) / double(h.size()));
}

}  // namespace
}  // namespace w4a8::st
