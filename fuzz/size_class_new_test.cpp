// fuzz/size_class_new.cpp linked into a test binary of its own (it replaces operator new for the
// whole process): blocks of every size class and beyond keep their contents and malloc's 16-byte
// alignment, a freed block is handed out again for any size of its class, and a double delete
// aborts with the allocator's own message (a large block's header is malloc's to reuse once freed,
// so there it may read as an invalid pointer).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace {

unsigned char pattern(std::size_t n, std::size_t i) { return static_cast<unsigned char>(n * 31 + i); }

TEST(SizeClassNew, BlocksKeepContentsAndAlignment) {
  std::vector<std::pair<unsigned char*, std::size_t>> blocks;
  for (int round = 0; round < 2; ++round) {  // the second round takes blocks from the free lists
    for (std::size_t n = 0; n <= 2100; n += 5) {
      auto* b = static_cast<unsigned char*>(::operator new(n));
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 16, 0u) << n;
      for (std::size_t i = 0; i < n; ++i) b[i] = pattern(n, i);
      blocks.emplace_back(b, n);
    }
    for (const auto& [b, n] : blocks)
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(b[i], pattern(n, i)) << n << " " << i;
    for (const auto& [b, n] : blocks) ::operator delete(b);
    blocks.clear();
  }
}

TEST(SizeClassNew, FreedBlockServesItsWholeClass) {
  // 104 and 108 bytes share the 97..112 class here; glibc's bins (chunks of 112 and 128 bytes)
  // would not hand the same block back.
  void* a = ::operator new(104);
  ::operator delete(a);
  void* b = ::operator new(108);
  EXPECT_EQ(a, b);
  ::operator delete(b);
}

TEST(SizeClassNewDeathTest, DoubleDeleteAborts) {
  EXPECT_DEATH(
      {
        void* volatile small = ::operator new(40);  // volatile: no use-after-free warning
        ::operator delete(small);
        ::operator delete(small);
      },
      "operator delete: double free");
  EXPECT_DEATH(
      {
        void* volatile large = ::operator new(5000);
        ::operator delete(large);
        ::operator delete(large);
      },
      "operator delete: (double free|invalid pointer)");  // free() reuses the header word
}

}  // namespace
