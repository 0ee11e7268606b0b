// The ELF preflight before dlopen(): files made from a real plugin by truncating it or patching
// bytes are refused with the reason (PluginLoadFailed naming the file), where dlopen() would die
// with SIGBUS (a truncated file) or say "No such file or directory" (another machine's build). The
// patch offsets are the ELF64 layout's (System V gABI), written out here rather than taken from
// <elf.h>'s structs, and every expected number follows from the patched values.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <unistd.h>

#include "cli/run_cli.hpp"
#include "plugin/elf_check.hpp"
#include "plugin/plugin.hpp"

namespace w4a8::plugin {
namespace {

namespace fs = std::filesystem;

// ELF64 header and program header field offsets.
constexpr std::size_t kClass = 4, kData = 5, kType = 16, kMachine = 18, kPhoff = 32, kPhentsize = 54, kPhnum = 56;
constexpr std::size_t kPType = 0, kPOffset = 8, kPFilesz = 32;

#if defined(__x86_64__)
constexpr std::uint16_t kForeign = 183;
constexpr const char* kForeignText = "built for AArch64 (e_machine 183), this is x86-64";
#elif defined(__aarch64__)
constexpr std::uint16_t kForeign = 62;
constexpr const char* kForeignText = "built for x86-64 (e_machine 62), this is AArch64";
#endif

class ElfCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("w4a8_elf_check_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ifstream f(W4A8_EXAMPLE_PLUGIN, std::ios::binary);
    good_.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    ASSERT_GT(good_.size(), 4096u);
    ASSERT_EQ(good_.compare(0, 4, "\x7f" "ELF"), 0);
  }
  void TearDown() override {
    std::error_code ec;
    if (!HasFailure()) fs::remove_all(dir_, ec);
  }

  std::string write(const std::string& name, const std::string& bytes) const {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  template <class T>
  static void put(std::string& s, std::size_t at, T v) {  // little-endian, as the file is
    for (std::size_t i = 0; i < sizeof v; ++i) s[at + i] = char(std::uint64_t(v) >> (8 * i) & 0xFF);
  }
  template <class T>
  static T get(const std::string& s, std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) v |= std::uint64_t(std::uint8_t(s[at + i])) << (8 * i);
    return T(v);
  }
  std::string patched(std::size_t at, auto v) const {
    std::string s = good_;
    put(s, at, v);
    return s;
  }
  std::size_t phdr0() const { return get<std::uint64_t>(good_, kPhoff); }

  static std::string defect_in_memory(const std::string& bytes) {
    return elf_defect({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()});
  }

  // Both the preflight and Plugin::load refuse the file with `says`, naming it; the same bytes held
  // in memory (the fuzz target's entry) get the same reason.
  void expect_refused(const std::string& name, const std::string& bytes, const std::string& says) const {
    EXPECT_EQ(defect_in_memory(bytes), says) << name;
    const std::string path = write(name, bytes);
    const Status c = check_elf(path);
    ASSERT_FALSE(c.ok()) << name;
    EXPECT_EQ(c.error().kind, ErrorKind::PluginLoadFailed) << name;
    EXPECT_EQ(c.error().message, "cannot load kernel plugin " + path + ": " + says);
    auto p = Plugin::load(path);
    ASSERT_FALSE(p.ok()) << name;
    EXPECT_EQ(p.error().kind, ErrorKind::PluginLoadFailed) << name;
    EXPECT_EQ(p.error().message, c.error().message);
  }

  fs::path dir_;
  std::string good_;
};

TEST_F(ElfCheck, ARealPluginPassesAndLoads) {
  EXPECT_TRUE(check_elf(W4A8_EXAMPLE_PLUGIN).ok());
  EXPECT_EQ(defect_in_memory(good_), "");
  const std::string copy = write("good.so", good_);
  EXPECT_TRUE(check_elf(copy).ok());
  auto p = Plugin::load(copy);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->name(), "w4a8-example-c");
}

TEST_F(ElfCheck, AFileThatCannotBeOpenedIsLeftToDlopen) {
  EXPECT_TRUE(check_elf((dir_ / "missing.so").string()).ok());
  auto p = Plugin::load((dir_ / "missing.so").string());
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("No such file or directory"), std::string::npos) << p.error().message;
}

TEST_F(ElfCheck, NotElf) {
  expect_refused("empty.so", "", "not an ELF file");
  expect_refused("script.so", "#!/bin/sh\necho hi\n", "not an ELF file");
  expect_refused("magic3.so", good_.substr(0, 3), "not an ELF file");
  expect_refused("ident10.so", good_.substr(0, 10), "truncated: the ELF identification needs 16 bytes, the file has 10");
  expect_refused("header40.so", good_.substr(0, 40), "truncated: the ELF header needs 64 bytes, the file has 40");
}

TEST_F(ElfCheck, ForeignClassByteOrderMachineOrType) {
  expect_refused("class32.so", patched(kClass, std::uint8_t(1)), "a 32-bit ELF file (ELFCLASS32), this is a 64-bit process");
  expect_refused("class7.so", patched(kClass, std::uint8_t(7)), "unknown ELF class 7");
  expect_refused("msb.so", patched(kData, std::uint8_t(2)), "a big-endian ELF file, this machine is little-endian");
#if defined(__x86_64__) || defined(__aarch64__)
  expect_refused("foreign.so", patched(kMachine, kForeign), kForeignText);
  const std::string here = kForeign == 183 ? "x86-64" : "AArch64";
  expect_refused("unknown_machine.so", patched(kMachine, std::uint16_t(0x1234)),
                 "built for another machine (e_machine 4660), this is " + here);
#endif
  expect_refused("exec.so", patched(kType, std::uint16_t(2)), "not a shared library (ELF type ET_EXEC, an executable)");
  expect_refused("object.so", patched(kType, std::uint16_t(1)), "not a shared library (ELF type ET_REL, a relocatable object)");
  expect_refused("phent.so", patched(kPhentsize, std::uint16_t(32)), "program header entries of 32 bytes, expected 56");
}

TEST_F(ElfCheck, ProgramHeaderTableOutsideTheFile) {
  const std::uint64_t size = good_.size();
  const auto n = get<std::uint16_t>(good_, kPhnum);
  expect_refused("phoff_end.so", patched(kPhoff, size - 8),
                 "truncated: the program header table (" + std::to_string(n) + " entries at byte " +
                     std::to_string(size - 8) + ") does not fit in the file's " + std::to_string(size) + " bytes");
  // An offset near 2^64: offset + table size would wrap.
  expect_refused("phoff_wrap.so", patched(kPhoff, std::uint64_t(0) - 16),
                 "truncated: the program header table (" + std::to_string(n) + " entries at byte 18446744073709551600)" +
                     " does not fit in the file's " + std::to_string(size) + " bytes");
}

TEST_F(ElfCheck, SegmentsPastTheEndOrWrapping) {
  const std::uint64_t size = good_.size();
  const std::size_t ph = phdr0();
  ASSERT_EQ(get<std::uint32_t>(good_, ph + kPType), 1u);  // segment 0 is a PT_LOAD (readelf -l)
  std::string s = good_;
  put(s, ph + kPOffset, std::uint64_t(100));
  put(s, ph + kPFilesz, size);
  expect_refused("load_past_end.so", s,
                 "truncated: segment 0 (PT_LOAD) ends at byte " + std::to_string(size + 100) + ", the file has " +
                     std::to_string(size));
  put(s, ph + kPType, std::uint32_t(2));
  expect_refused("dynamic_past_end.so", s,
                 "truncated: segment 0 (PT_DYNAMIC) ends at byte " + std::to_string(size + 100) + ", the file has " +
                     std::to_string(size));
  s = good_;
  put(s, ph + kPOffset, std::uint64_t(0) - 16);
  put(s, ph + kPFilesz, std::uint64_t(32));
  expect_refused("load_wrap.so", s,
                 "segment 0 (PT_LOAD) has a file range that overflows (offset 18446744073709551600, size 32)");
  // A segment may end exactly at the end of the file; one byte more is refused.
  s = good_;
  put(s, ph + kPOffset, std::uint64_t(100));
  put(s, ph + kPFilesz, size - 100);
  EXPECT_TRUE(check_elf(write("ends_at_end.so", s)).ok());
  put(s, ph + kPFilesz, size - 99);
  expect_refused("one_past_end.so", s,
                 "truncated: segment 0 (PT_LOAD) ends at byte " + std::to_string(size + 1) + ", the file has " +
                     std::to_string(size));
}

// The tester's reproduction: the first 1000 bytes of a plugin. dlopen() mapped it and died with SIGBUS.
TEST_F(ElfCheck, TruncatedCopyIsRefusedByTheLibraryAndTheCli) {
  const std::string path = write("trunc.so", good_.substr(0, 1000));
  auto p = Plugin::load(path);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().kind, ErrorKind::PluginLoadFailed);
  const std::string head = "cannot load kernel plugin " + path + ": truncated: segment ";
  EXPECT_EQ(p.error().message.rfind(head, 0), 0u) << p.error().message;
  EXPECT_NE(p.error().message.find(", the file has 1000"), std::string::npos) << p.error().message;

  // The kernel module is loaded before any other input is read, so none has to exist.
  const std::string out = (dir_ / "o.st").string();
  auto r = testing::run_cli("gemm --checkpoint " + (dir_ / "none.safetensors").string() + " --layer l --input " +
                            (dir_ / "x.st").string() + " --out " + out + " --kernel " + path + " 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(head), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[plugin.load_failed]"), std::string::npos) << r.out;
#if defined(__x86_64__) || defined(__aarch64__)
  const std::string foreign = write("foreign.so", patched(kMachine, kForeign));
  r = testing::run_cli("gemm --checkpoint " + (dir_ / "none.safetensors").string() + " --layer l --input " +
                       (dir_ / "x.st").string() + " --out " + out + " --kernel " + foreign + " 2>&1");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(foreign + ": " + kForeignText), std::string::npos) << r.out;
#endif
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace w4a8::plugin
