#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/result.hpp"

namespace w4a8 {
namespace {

TEST(ErrorTable, InOrderAndComplete) {
  ASSERT_EQ(std::size(kErrorTable), kErrorKindCount);
  for (std::size_t i = 0; i < kErrorKindCount; ++i)
    EXPECT_EQ(static_cast<std::size_t>(kErrorTable[i].kind), i) << kErrorTable[i].code;
}

TEST(ErrorTable, CodesUniqueAndTypesKnown) {
  std::set<std::string_view> codes;
  const std::set<std::string_view> types = {"SafetensorError", "OSError", "UsageError", "ValueError",
                                            "TypeError", "OverflowError", "RecursionError"};
  for (const auto& e : kErrorTable) {
    EXPECT_TRUE(codes.insert(e.code).second) << "duplicate code " << e.code;
    EXPECT_TRUE(types.count(e.py_type)) << e.code << " has type " << e.py_type;
    ErrorKind k{};
    ASSERT_TRUE(error_kind_from_code(e.code, k));
    EXPECT_EQ(k, e.kind);
  }
}

TEST(ErrorTable, MakeErrorFillsHolesInOrder) {
  // Hand-derived from validator.md's template for step 6.
  Error e = make_error(ErrorKind::SgW4a8Shapes, {"'blk.0'", "(4, 8)", "(4, 1)", "(4,)"});
  EXPECT_EQ(e.message, "Comfy W4A8 layer 'blk.0' has incompatible weight/scale shapes: (4, 8), (4, 1), and (4,)");
  EXPECT_EQ(e.type(), "ValueError");
  EXPECT_EQ(e.code(), "sglang.w4a8.shapes");
}

TEST(ErrorTable, HoleCount) {
  EXPECT_EQ(template_holes("a {} b {}"), 2u);
  EXPECT_EQ(template_holes("none"), 0u);
  EXPECT_DEATH(make_error(ErrorKind::SgW4a8Rank, {"x"}), "holes");
}

}  // namespace
}  // namespace w4a8
