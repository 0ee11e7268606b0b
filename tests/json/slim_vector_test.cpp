// SlimVector against std::vector (the second implementation): random operation sequences on strings
// long enough to live on the heap (so ASan sees any element moved or freed twice), the self-aliasing
// push_back at full capacity, and strong exception safety of copies.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "json/slim_vector.hpp"
#include "json/value.hpp"

namespace w4a8::json {
namespace {

using Slim = SlimVector<std::string>;

void expect_same(const Slim& s, const std::vector<std::string>& v) {
  RC_ASSERT(s.size() == v.size());
  RC_ASSERT(s.empty() == v.empty());
  RC_ASSERT(s.capacity() >= s.size());
  RC_ASSERT(std::vector<std::string>(s.begin(), s.end()) == v);
}

RC_GTEST_PROP(SlimVector, BehavesAsStdVector, ()) {
  Slim s;
  std::vector<std::string> v;
  const int steps = *rc::gen::inRange(0, 200);
  for (int step = 0; step < steps; ++step) {
    const std::string fresh = "element-on-the-heap-" + std::to_string(step);
    switch (*rc::gen::inRange(0, 9)) {
      case 0: s.push_back(fresh); v.push_back(fresh); break;
      case 1: s.emplace_back(fresh, 3); v.emplace_back(fresh, 3); break;  // a constructor's arguments
      case 2:
        if (!v.empty()) {  // an element of the vector itself, possibly while it must grow
          const std::size_t i = *rc::gen::inRange<std::size_t>(0, v.size());
          s.push_back(s[i]);
          v.push_back(v[i]);
        }
        break;
      case 3:
        if (!v.empty()) {
          s.pop_back();
          v.pop_back();
        }
        break;
      case 4: {
        const std::size_t at = *rc::gen::inRange<std::size_t>(0, v.size() + 1);
        const std::string* got = s.insert(s.begin() + at, fresh);
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), fresh);
        RC_ASSERT(got == s.begin() + at);
        break;
      }
      case 5: {
        const std::size_t n = *rc::gen::inRange<std::size_t>(0, 64);
        s.reserve(n);
        RC_ASSERT(s.capacity() >= n);
        break;
      }
      case 6: {  // copies are independent of the original
        Slim copy = s;
        expect_same(copy, v);
        if (!copy.empty()) copy[0] = "changed";
        expect_same(s, v);
        s = copy;
        if (!v.empty()) v[0] = "changed";
        break;
      }
      case 7: {
        Slim moved = std::move(s);
        expect_same(moved, v);
        s = std::move(moved);
        Slim& self = s;
        s = self;  // self-assignment keeps everything
        break;
      }
      case 8:
        if (*rc::gen::inRange(0, 8) == 0) {
          s.clear();
          v.clear();
        }
        break;
    }
    expect_same(s, v);
  }
  if (!v.empty()) {
    RC_ASSERT(s.front() == v.front());
    RC_ASSERT(s.back() == v.back());
    RC_ASSERT(std::vector<std::string>(s.rbegin(), s.rend()) == std::vector<std::string>(v.rbegin(), v.rend()));
  }
}

TEST(SlimVector, PushOfOwnElementAtFullCapacity) {
  Slim s;
  s.push_back(std::string(100, 'x'));
  ASSERT_EQ(s.capacity(), 1u);
  s.push_back(s[0]);  // the source lives in the block being replaced
  s.emplace_back(s.back());
  ASSERT_EQ(s.size(), 3u);
  for (const std::string& e : s) EXPECT_EQ(e, std::string(100, 'x'));
}

// Throws on the n-th copy made while armed.
struct Fragile {
  static inline int copies_left = -1;
  std::string payload = std::string(40, 'p');
  Fragile() = default;
  Fragile(const Fragile& o) : payload(o.payload) {
    if (copies_left == 0) throw std::runtime_error("copy failed");
    if (copies_left > 0) --copies_left;
  }
  Fragile(Fragile&&) noexcept = default;
  Fragile& operator=(const Fragile&) = default;
  Fragile& operator=(Fragile&&) noexcept = default;
};

TEST(SlimVector, AFailedCopyLeavesTheTargetAndLeaksNothing) {
  SlimVector<Fragile> a;
  for (int i = 0; i < 5; ++i) a.emplace_back();
  SlimVector<Fragile> b;
  b.emplace_back();
  Fragile::copies_left = 3;  // the fourth element's copy throws
  EXPECT_THROW(b = a, std::runtime_error);
  Fragile::copies_left = 3;
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): the copy is what is tested
  EXPECT_THROW({ const SlimVector<Fragile> c(a); }, std::runtime_error);  // (ASan's leak check: nothing stays)
  Fragile::copies_left = -1;
  EXPECT_EQ(b.size(), 1u);  // the assignment changed nothing
  const Fragile extra;
  Fragile::copies_left = 0;
  EXPECT_THROW(b.push_back(extra), std::runtime_error);
  Fragile::copies_left = -1;
  EXPECT_EQ(b.size(), 1u);
}

// What the slim vectors are for: a Value with both of its containers empty is 64 bytes, not 96.
TEST(SlimVector, OnePointerWide) {
  static_assert(sizeof(SlimVector<Value>) == sizeof(void*));
  static_assert(sizeof(Value) <= 64);
  Value v = Value::object();
  EXPECT_EQ(v.members.capacity(), 0u);  // nothing allocated until the first member
}

}  // namespace
}  // namespace w4a8::json
