// Object building and lookup stay linear for huge objects: append() (no search), MemberIndex
// (hashed lookup), dump() (one buffer). 200,000 members would take minutes through set()/get().
#include <gtest/gtest.h>

#include <string>
#include <string_view>

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

// set_bool(k, b) against set(k, from_bool(b)): on keys already holding an array, an object, a string
// or a float (replaced in place, nothing of the old value left) and on a new key (appended last).
TEST(ValueObjects, SetBoolIsSetOfFromBool) {
  for (const char* key : {"a", "o", "_x", "c", "_new"})
    for (bool b : {true, false}) {
      auto parsed = loads_str(R"({"a": [1, {"b": 2}], "o": {"k": "v"}, "_x": "s", "c": 1.5})");
      ASSERT_TRUE(parsed.ok());
      Value fast = *parsed, slow = *parsed;
      fast.set_bool(key, b);
      slow.set(key, Value::from_bool(b));
      EXPECT_EQ(dump(fast), dump(slow)) << key << " " << b;
      const Value* v = fast.get(key);
      ASSERT_NE(v, nullptr);
      EXPECT_TRUE(v->kind == Kind::Bool && v->boolean == b && v->text.empty() && v->items.empty() &&
                  v->members.empty() && v->number == 0.0)
          << key;
      EXPECT_EQ(fast.members.size(), std::string_view(key) == "_new" ? 5u : 4u);
    }
}

}  // namespace
// Python's `a != b` on two json.loads results: equality, and the recursion depth CPython reaches
// (hand-derived from list/dict richcompare: items compared in order up to the first unequal one,
// items that are one object skipped; the outermost call is 1).
TEST(PyCompare, DepthFollowsCPythonsRecursion) {
  const auto cmp = [](std::string_view a, std::string_view b) {
    const auto x = loads_str(std::string(a)), y = loads_str(std::string(b));
    EXPECT_TRUE(x.ok() && y.ok()) << a << " " << b;
    return py_compare(*x, *y);
  };
  struct Case {
    const char *a, *b;
    bool equal;
    std::size_t depth;
  };
  for (const Case& c : std::initializer_list<Case>{
           {"1", "1", true, 1},                 // a top-level compare is one call, even of one object
           {"[[[1]]]", "[[[1]]]", true, 3},     // the small int 1 is one object: skipped
           {"[[[1]]]", "[[[2]]]", false, 4},    // 1 vs 2: one call more
           {"[[[1.5]]]", "[[[1.5]]]", true, 4}, // floats are new objects
           {"[[[257]]]", "[[[257]]]", true, 4}, // past the small-int cache
           {"[[[\"a\"]]]", "[[[\"a\"]]]", true, 3},    // one Latin-1 character: one object
           {"[[[\"ab\"]]]", "[[[\"ab\"]]]", true, 4},  // two: new objects
           {"[[[NaN]]]", "[[[NaN]]]", true, 3},  // json's one NaN object: equal, skipped
           {"[[[null, true]]]", "[[[null, true]]]", true, 3},
           {"[[1], [[[2]]]]", "[[1], [[[3]]]]", false, 5},  // the second item differs, deeper
           {"[[[[2]]], [1]]", "[[[[3]]], [2]]", false, 5},  // the first differs: the second is never compared
           {"[[[1]], 2]", "[[[1]]]", false, 1},  // lengths differ: no item compared
           {"{\"a\": {\"a\": 1}}", "{\"a\": {\"a\": 1}}", true, 2},
           {"{\"a\": {\"a\": 1.5}}", "{\"a\": {\"a\": 1.5}}", true, 3},
           {"{\"a\": [1.5], \"b\": [[[1.5]]]}", "{\"b\": [[[1.5]]], \"a\": [2.5]}", false, 3},  // a's order: "a" first
       }) {
    const Compared r = cmp(c.a, c.b);
    EXPECT_EQ(r.equal, c.equal) << c.a << " != " << c.b;
    EXPECT_EQ(r.depth, c.depth) << c.a << " != " << c.b;
    EXPECT_EQ(r.equal, py_equal(*loads_str(c.a), *loads_str(c.b))) << c.a;
  }
}

}  // namespace w4a8::json
