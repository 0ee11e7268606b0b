// Object building and lookup stay linear for huge objects: append() (no search), MemberIndex
// (hashed lookup), dump() (one buffer). 200,000 members would take minutes through set()/get().
#include <gtest/gtest.h>

#include <string>

#include "json/dump.hpp"
#include "json/parse.hpp"
#include "json/value.hpp"

namespace w4a8::json {
namespace {

TEST(ValueObjects, AppendIndexAndDumpAreLinear) {
  constexpr int kMembers = 200000;
  Value obj = Value::object();
  for (int i = 0; i < kMembers; ++i) obj.append("layer." + std::to_string(i), Value::from_int(i));
  ASSERT_EQ(obj.members.size(), std::size_t(kMembers));
  const MemberIndex index(obj);
  for (int i = 0; i < kMembers; i += 7) {
    const Value* v = index.get("layer." + std::to_string(i));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(v->text, std::to_string(i));
  }
  EXPECT_EQ(index.get("layer.x"), nullptr);
  const std::string text = dump(obj);
  auto back = loads_str(text);
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(py_equal(obj, *back));
}

TEST(ValueObjects, IndexFindsTheFirstOfRepeatedKeysAsGetDoes) {
  Value obj = Value::object();
  obj.append("a", Value::from_int(1));
  obj.append("a", Value::from_int(2));
  EXPECT_EQ(MemberIndex(obj).get("a")->text, "1");
  EXPECT_EQ(obj.get("a")->text, "1");
  obj.set("a", Value::from_int(3));  // set() replaces the first, keeping its place
  EXPECT_EQ(obj.members[0].second.text, "3");
}

}  // namespace
}  // namespace w4a8::json
