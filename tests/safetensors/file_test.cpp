// File::open: read-only mapping, empty files, I/O errors, files above 4 GiB.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"
#include "test_bytes.hpp"

namespace w4a8::st {
namespace {

namespace fs = std::filesystem;

class StFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "w4a8_st_file_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(StFile, OpensAndViewsTensorBytes) {
  const auto b = test::container(R"({"__metadata__":{"format":"pt"},"b":{"dtype":"U8","shape":[3],"data_offsets":[4,7]},)"
                                 R"("a":{"dtype":"I32","shape":[],"data_offsets":[0,4]}})",
                                 "\x01\x02\x03\x04xyz");
  ASSERT_TRUE(write_file(path("t.safetensors"), b).ok());
  auto f = File::open(path("t.safetensors"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->path(), path("t.safetensors"));
  EXPECT_EQ(f->bytes().size(), b.size());
  EXPECT_TRUE(std::equal(b.begin(), b.end(), f->bytes().begin()));
  const TensorInfo* a = f->header().find("a");
  const TensorInfo* t = f->header().find("b");
  ASSERT_TRUE(a && t);
  auto da = f->data(*a);
  EXPECT_EQ(std::string(da.begin(), da.end()), "\x01\x02\x03\x04");
  auto db = f->data(*t);
  EXPECT_EQ(std::string(db.begin(), db.end()), "xyz");
  EXPECT_EQ(*f->header().meta("format"), "pt");
  // Copies share the mapping; it outlives the original.
  File copy = *f;
  f = Error{};
  EXPECT_EQ(std::string(copy.data(*copy.header().find("b")).begin(), copy.data(*copy.header().find("b")).end()), "xyz");
}

// Past 4 MiB of header, File::open copies the names out and hands the header's pages back: every
// name (escaped ones too) must still read as written, none may point into the mapping, and the
// mapping's bytes (header included, faulted back in) and tensor data stay readable.
TEST_F(StFile, LargeHeaderNamesLeaveTheMapping) {
  constexpr int kTensors = 60000;  // about 5.5 MB of header
  std::string json = "{";
  std::string data;
  std::vector<std::string> names;
  for (int i = 0; i < kTensors; ++i) {
    const std::string stem = "model.diffusion_model.blocks." + std::to_string(i) + ".attn.qkv.w";
    const bool escaped = i % 2 == 1;  // (an escaped name never viewed the mapping: both kinds)
    names.push_back(stem + (escaped ? "\xc3\xa9ight" : "eight"));  // the JSON escape \u00e9 below
    if (i) json += ',';
    json += "\"" + stem + (escaped ? "\\u00e9ight" : "eight") + "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[" + std::to_string(i) + "," +
            std::to_string(i + 1) + "]}";
    data += static_cast<char>(i % 251);
  }
  json += "}";
  ASSERT_GT(json.size(), std::size_t{4} << 20);
  ASSERT_TRUE(write_file(path("big.safetensors"), test::container(json, data)).ok());
  auto f = File::open(path("big.safetensors"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  std::sort(names.begin(), names.end());
  ASSERT_EQ(f->header().tensors.size(), names.size());
  const auto bytes = f->bytes();
  const auto* lo = reinterpret_cast<const char*>(bytes.data());
  for (std::size_t i = 0; i < names.size(); ++i) {
    const TensorInfo& t = f->header().tensors[i];
    ASSERT_EQ(t.name.view(), names[i]);
    ASSERT_FALSE(t.name.data() >= lo && t.name.data() < lo + bytes.size()) << "name " << i << " views the mapping";
  }
  EXPECT_EQ(declared_header_len(bytes.first(8)), json.size());
  EXPECT_EQ(std::string(lo + 8, 30), json.substr(0, 30));
  const TensorInfo* t = f->header().find(names.back());
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(f->data(*t).size(), 1u);
  EXPECT_EQ(f->data(*t)[0], static_cast<std::uint8_t>(data[t->begin]));
}

// before_parse sees each file's declared header length before parsing, at most the bytes the file
// holds after the length field, and is not called for a file too short to declare one.
TEST_F(StFile, BeforeParseGetsTheDeclaredLengthCappedAtTheFile) {
  const auto good = test::container(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", "xy");
  ASSERT_TRUE(write_file(path("good"), good).ok());
  std::vector<std::uint8_t> lying(8 + 10, ' ');  // declares 2^40 bytes of header, holds 10
  lying[5] = 1;
  ASSERT_TRUE(write_file(path("lying"), lying).ok());
  ASSERT_TRUE(write_file(path("short"), std::vector<std::uint8_t>{1, 2, 3}).ok());
  std::vector<std::uint64_t> seen;
  const BeforeParse note = [&seen](std::uint64_t n) { seen.push_back(n); };
  EXPECT_TRUE(File::open(path("good"), note).ok());
  EXPECT_FALSE(File::open(path("lying"), note).ok());
  EXPECT_FALSE(File::open(path("short"), note).ok());
  const std::uint64_t declared = good[0] | std::uint64_t{good[1]} << 8;
  EXPECT_EQ(seen, (std::vector<std::uint64_t>{declared, 10}));
}

TEST_F(StFile, EmptyFileIsHeaderTooSmall) {
  std::ofstream(path("empty")).close();
  auto f = File::open(path("empty"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::StHeaderTooSmall);
}

TEST_F(StFile, ParseErrorsPassThrough) {
  ASSERT_TRUE(write_file(path("bad"), test::container("{}", "x")).ok());
  auto f = File::open(path("bad"));
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().kind, ErrorKind::StMetadataIncompleteBuffer);
}

TEST_F(StFile, IoErrors) {
  auto missing = File::open(path("missing"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::IoOpenFailed);
  EXPECT_EQ(missing.error().message, "cannot open " + path("missing") + ": No such file or directory");
  auto dir = File::open(dir_.string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind, ErrorKind::IoReadFailed);
  auto w = write_file(path("no/such/dir"), test::container("{}"));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind, ErrorKind::IoWriteFailed);
}

// A sparse 5 GiB tensor: sizes and offsets above 2^32 go through untruncated.
TEST_F(StFile, AboveFourGiB) {
  const std::uint64_t big = 5ull << 30;
  const std::string h = "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(big) + "],\"data_offsets\":[0," +
                        std::to_string(big) + "]}}";
  const auto head = test::container(h);
  ASSERT_TRUE(write_file(path("big"), head).ok());
  ASSERT_EQ(::truncate(path("big").c_str(), static_cast<off_t>(head.size() + big)), 0);
  auto f = File::open(path("big"));
  ASSERT_TRUE(f.ok()) << f.error().message;
  auto d = f->data(*f->header().find("big"));
  EXPECT_EQ(d.size(), big);
  EXPECT_EQ(d[big - 1], 0);  // last byte of the hole reads as zero
}

}  // namespace
}  // namespace w4a8::st
