// serialize(): the layout the crate writes, usage errors, and the round trip
// serialize -> parse -> same tensors, metadata and bytes (RapidCheck).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <set>

#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::st {
namespace {

std::string header_text(const std::vector<std::uint8_t>& b) {
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | b[std::size_t(i)];
  return std::string(b.begin() + 8, b.begin() + 8 + static_cast<std::ptrdiff_t>(n));
}

// The crate's own serializer test (tensor.rs test_serialization): the same tensor gives the same
// header text, padded with spaces to a multiple of 8.
TEST(StWriter, MatchesCrateLayout) {
  std::vector<std::uint8_t> data(24, 0);
  TensorSpec t{"attn.0", Dtype::F32, {1, 2, 3}, data};
  auto r = serialize(std::span(&t, 1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(header_text(*r), R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})");
  EXPECT_EQ(r->size(), 8u + 64u + 24u);

  auto empty = serialize({});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, (std::vector<std::uint8_t>{8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '}));

  WriteOptions opt;
  opt.metadata = {{{"framework", "pt"}}};
  auto meta = serialize({}, opt);
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(header_text(*meta), R"({"__metadata__":{"framework":"pt"}}     )");

  opt.pad_to_8 = false;
  auto unpadded = serialize({}, opt);
  ASSERT_TRUE(unpadded.ok());
  EXPECT_EQ(header_text(*unpadded), R"({"__metadata__":{"framework":"pt"}})");
  EXPECT_TRUE(parse(*unpadded).ok());
}

TEST(StWriter, TensorsInGivenOrder) {
  std::vector<TensorSpec> ts = {{"b", Dtype::U8, {2}, {1, 2}}, {"a", Dtype::I16, {}, {3, 4}}};
  auto r = serialize(ts);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(header_text(*r).substr(0, 105),
            R"({"b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"a":{"dtype":"I16","shape":[],"data_offsets":[2,4]}})");
  EXPECT_EQ(std::vector<std::uint8_t>(r->end() - 4, r->end()), (std::vector<std::uint8_t>{1, 2, 3, 4}));
}

TEST(StWriter, UsageErrors) {
  auto kind = [](std::vector<TensorSpec> ts, WriteOptions o = {}) {
    auto r = serialize(ts, o);
    return r.ok() ? ErrorKind::kCount : r.error().kind;
  };
  EXPECT_EQ(kind({{"x", Dtype::F32, {2}, {0, 0, 0, 0}}}), ErrorKind::UsageError);             // byte count
  EXPECT_EQ(kind({{"x", Dtype::F4, {3}, {0, 0}}}), ErrorKind::UsageError);                    // half a byte
  EXPECT_EQ(kind({{"x", Dtype::U8, {1ull << 62, 4}, {}}}), ErrorKind::UsageError);            // overflow
  EXPECT_EQ(kind({{"x", Dtype::U8, {1}, {0}}, {"x", Dtype::U8, {1}, {0}}}), ErrorKind::UsageError);
  EXPECT_EQ(kind({{"__metadata__", Dtype::U8, {1}, {0}}}), ErrorKind::UsageError);
  EXPECT_EQ(kind({{"\xff", Dtype::U8, {1}, {0}}}), ErrorKind::UsageError);
  EXPECT_EQ(kind({{"\xed\xa0\x80", Dtype::U8, {1}, {0}}}), ErrorKind::UsageError);
  WriteOptions dup;
  dup.metadata = {{{"k", "a"}, {"k", "b"}}};
  EXPECT_EQ(kind({}, dup), ErrorKind::UsageError);
  EXPECT_EQ(kind({{"x", Dtype::F4, {3, 2}, {0, 0, 0}}}), ErrorKind::kCount);
  EXPECT_EQ(kind({{"x", Dtype::F6_E2M3, {4}, {0, 0, 0}}}), ErrorKind::kCount);
}

// JSON escapes as serde_json writes them (checked against Python's json.loads in the differential).
TEST(StWriter, JsonQuote) {
  EXPECT_EQ(json_quote("a"), "\"a\"");
  EXPECT_EQ(json_quote("\"\\/"), "\"\\\"\\\\/\"");
  EXPECT_EQ(json_quote(std::string("\b\f\n\r\t\x01\x1f\x7f\0", 9)), "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\\u0000\"");
  EXPECT_EQ(json_quote("é😀\u2028"), "\"é😀\u2028\"");
}

TEST(StWriter, SerializeRaw) {
  const std::uint8_t data[] = {9, 8};
  EXPECT_EQ(serialize_raw("{}", data), (std::vector<std::uint8_t>{2, 0, 0, 0, 0, 0, 0, 0, '{', '}', 9, 8}));
}

// ---- round trip --------------------------------------------------------------------------------

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += char(c);
  } else if (c < 0x800) {
    s += char(0xC0 | (c >> 6));
    s += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += char(0xE0 | (c >> 12));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  } else {
    s += char(0xF0 | (c >> 18));
    s += char(0x80 | ((c >> 12) & 0x3F));
    s += char(0x80 | ((c >> 6) & 0x3F));
    s += char(0x80 | (c & 0x3F));
  }
  return s;
}

// Code points that stress escaping: quotes, backslash, controls, DEL, C1, non-BMP, U+2028, U+FFFF.
rc::Gen<std::string> gen_text() {
  const std::vector<char32_t> special = {'"', '\\', '/', '\0', '\b', '\f', '\n', '\r', '\t', 0x1F, 0x7F, 0x80,
                                         0x9F, 0xE9, 0x2028, 0xFEFF, 0xFFFF, 0x1F600, 0x10FFFF, '_', '.'};
  auto cp = rc::gen::oneOf(rc::gen::inRange<char32_t>('a', 'z' + 1), rc::gen::elementOf(special),
                           rc::gen::inRange<char32_t>(0x20, 0xD800), rc::gen::inRange<char32_t>(0xE000, 0x110000));
  return rc::gen::map(rc::gen::container<std::vector<char32_t>>(cp), [](const std::vector<char32_t>& cps) {
    std::string s;
    for (char32_t c : cps) s += utf8(c);
    return s;
  });
}

struct Case {
  std::vector<TensorSpec> tensors;
  std::optional<std::vector<std::pair<std::string, std::string>>> metadata;
};

rc::Gen<TensorSpec> gen_tensor(std::string name) {
  return rc::gen::mapcat(
      rc::gen::pair(rc::gen::inRange<int>(0, int(Dtype::kCount)),
                    rc::gen::container<std::vector<std::uint64_t>>(rc::gen::inRange<std::uint64_t>(0, 6))),
      [name](const std::pair<int, std::vector<std::uint64_t>>& p) {
        std::vector<std::uint64_t> shape = p.second;
        if (shape.size() > 4) shape.resize(4);
        std::uint64_t n = 1;
        for (auto d : shape) n *= d;
        auto dtype = Dtype(p.first);
        if (n * dtype_bits(dtype) % 8 != 0) dtype = Dtype::U8;  // keep whole bytes
        const std::size_t bytes = n * dtype_bits(dtype) / 8;
        return rc::gen::map(rc::gen::container<std::vector<std::uint8_t>>(bytes, rc::gen::arbitrary<std::uint8_t>()),
                            [=](std::vector<std::uint8_t> data) { return TensorSpec{name, dtype, shape, std::move(data)}; });
      });
}

rc::Gen<Case> gen_case() {
  auto names = rc::gen::suchThat(rc::gen::uniqueBy<std::vector<std::string>>(gen_text(), [](const std::string& s) { return s; }),
                                 [](const std::vector<std::string>& v) {
                                   for (const auto& s : v) if (s == "__metadata__") return false;
                                   return v.size() <= 12;
                                 });
  auto tensors = rc::gen::mapcat(names, [](const std::vector<std::string>& ns) {
    std::vector<rc::Gen<TensorSpec>> gens;
    for (const auto& n : ns) gens.push_back(gen_tensor(n));
    return rc::gen::exec([gens] {
      std::vector<TensorSpec> out;
      for (const auto& g : gens) out.push_back(*g);
      return out;
    });
  });
  auto meta = rc::gen::maybe(rc::gen::map(
      rc::gen::container<std::map<std::string, std::string>>(gen_text(), gen_text()),
      [](const std::map<std::string, std::string>& m) {
        return std::vector<std::pair<std::string, std::string>>(m.begin(), m.end());
      }));
  return rc::gen::apply(
      [](std::vector<TensorSpec> t, rc::Maybe<std::vector<std::pair<std::string, std::string>>> m) {
        Case c{std::move(t), std::nullopt};
        if (m) c.metadata = *m;
        return c;
      },
      tensors, meta);
}

// post: parse(serialize(ts, m)) has ts's names (sorted), dtypes, shapes and bytes, and m.
RC_GTEST_PROP(StWriter, RoundTrip, ()) {
  const Case c = *gen_case();
  const bool pad = *rc::gen::arbitrary<bool>();
  WriteOptions opt;
  opt.metadata = c.metadata;
  opt.pad_to_8 = pad;
  auto bytes = serialize(c.tensors, opt);
  RC_ASSERT(bytes.ok());
  auto h = parse(*bytes);
  RC_ASSERT(h.ok());
  if (pad) RC_ASSERT(h->header_len % 8 == 0);
  RC_ASSERT(h->tensors.size() == c.tensors.size());
  for (std::size_t i = 1; i < h->tensors.size(); ++i) RC_ASSERT(h->tensors[i - 1].name < h->tensors[i].name);
  std::uint64_t offset = 0;
  for (const TensorSpec& t : c.tensors) {
    const TensorInfo* info = h->find(t.name);
    RC_ASSERT(info != nullptr);
    RC_ASSERT(info->dtype == t.dtype);
    RC_ASSERT(info->shape == t.shape);
    RC_ASSERT(info->begin == offset);  // laid out in the given order
    offset += t.bytes.size();
    RC_ASSERT(info->end == offset);
    const auto* p = bytes->data() + h->data_start() + info->begin;
    RC_ASSERT(std::vector<std::uint8_t>(p, p + (info->end - info->begin)) == t.bytes);
  }
  RC_ASSERT(h->has_metadata == c.metadata.has_value());
  if (c.metadata) RC_ASSERT(h->metadata == *c.metadata);
}

}  // namespace
}  // namespace w4a8::st
