// parse(): one test per rule of the crate's read_metadata / Metadata::validate, on hand-made bytes.
// Expected verdicts come from the crate's rules (docs/container.md) and from running the same bytes
// through safetensors 0.8.0 (safe_open) by hand.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "safetensors/reader.hpp"
#include "test_bytes.hpp"

namespace w4a8::st {
namespace {

using test::container;
using test::container_n;

ErrorKind kind_of(const std::vector<std::uint8_t>& b) {
  auto r = parse(b);
  EXPECT_FALSE(r.ok());
  return r.ok() ? ErrorKind::kCount : r.error().kind;
}

Header ok_header(const std::vector<std::uint8_t>& b) {
  auto r = parse(b);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Header{};
}

const std::string kF32 = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";

// Rule: fewer than 8 bytes -> HeaderTooSmall.
TEST(StReader, HeaderTooSmall) {
  for (std::size_t n = 0; n < 8; ++n) {
    std::vector<std::uint8_t> b(n, 0);
    auto r = parse(b);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().kind, ErrorKind::StHeaderTooSmall);
    EXPECT_EQ(r.error().message, "Error while deserializing header: header too small");
  }
}

// Rule: n > 100,000,000 -> HeaderTooLarge (before looking at the file size).
TEST(StReader, HeaderTooLarge) {
  EXPECT_EQ(kind_of(container_n(100'000'001, "{}")), ErrorKind::StHeaderTooLarge);
  EXPECT_EQ(kind_of(container_n(UINT64_MAX, "{}")), ErrorKind::StHeaderTooLarge);
  EXPECT_EQ(kind_of(container_n(1ull << 63, "")), ErrorKind::StHeaderTooLarge);
}

// Rule: 8 + n past the end -> InvalidHeaderLength; exactly 1e8 is not "too large".
TEST(StReader, InvalidHeaderLength) {
  EXPECT_EQ(kind_of(container_n(100'000'000, "{}")), ErrorKind::StInvalidHeaderLength);
  EXPECT_EQ(kind_of(container_n(3, "{}")), ErrorKind::StInvalidHeaderLength);
  EXPECT_EQ(kind_of(container_n(1, "")), ErrorKind::StInvalidHeaderLength);
}

// Rule: header bytes must be UTF-8 (Rust's definition) -> InvalidHeader, with Rust's Utf8Error
// Display as the detail (texts from safetensors 0.8.0's safe_open on the same bytes).
TEST(StReader, InvalidHeaderUtf8) {
  const std::string prefix = "Error while deserializing header: invalid UTF-8 in header: ";
  const std::string one_at_2 = prefix + "invalid utf-8 sequence of 1 bytes from index 2";
  const std::pair<std::string, std::string> cases[] = {
      {"{\"\xff\":1}", one_at_2}, {"{\"\xc0\x80\":1}", one_at_2}, {"{\"\xed\xa0\x80\":1}", one_at_2},
      {"{\"\xf4\x90\x80\x80\":1}", one_at_2}, {"{\"\x80\":1}", one_at_2}, {"{\"\xf8\x88\x80\x80\x80\":1}", one_at_2},
      {"{\"\xe0\x9f\xbf\":1}", one_at_2},
      {"{}\xe2\x82", prefix + "incomplete utf-8 byte sequence from index 2"},
      {"{\"\xe2\x82x\":1}", prefix + "invalid utf-8 sequence of 2 bytes from index 2"},
      {"ab\xf0\x9f\x98x", prefix + "invalid utf-8 sequence of 3 bytes from index 2"},
      {"\xf0\x9f\x98", prefix + "incomplete utf-8 byte sequence from index 0"},
  };
  for (const auto& [bad, message] : cases) {
    auto r = parse(container(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::StInvalidHeader) << bad;
    EXPECT_EQ(r.error().message, message);
  }
  // The largest code point of each length is well-formed.
  EXPECT_TRUE(parse(container("{\"__metadata__\":{\"\xf4\x8f\xbf\xbf\xef\xbf\xbf\xdf\xbf\":\"\"}}")).ok());
}

struct JsonCase {
  const char* name;
  std::string header;
  std::string data;
  bool ok;
};

// Rule: header JSON must deserialize into HashMetadata -> InvalidHeaderDeserialization.
// Each verdict was observed with safetensors 0.8.0.
TEST(StReader, HeaderDeserialization) {
  const std::vector<JsonCase> cases = {
      {"empty object", "{}", "", true},
      {"outer whitespace", " \t\r\n{} \n", "", true},
      {"form feed", "\f{}", "", false},
      {"vertical tab after", "{}\v", "", false},
      {"NUL padding", std::string("{}\0\0", 4), "", false},
      {"trailing garbage", "{}x", "", false},
      {"empty text", "", "", false},
      {"only spaces", "   ", "", false},
      {"array root", "[]", "", false},
      {"null root", "null", "", false},
      {"string root", "\"a\"", "", false},
      {"BOM", "\xef\xbb\xbf{}", "", false},
      {"metadata", R"({"__metadata__":{"a":"b"}})", "", true},
      {"metadata null", R"({"__metadata__":null})", "", true},
      {"metadata empty", R"({"__metadata__":{}})", "", true},
      {"metadata int value", R"({"__metadata__":{"a":1}})", "", false},
      {"metadata null value", R"({"__metadata__":{"a":null}})", "", false},
      {"metadata array", R"({"__metadata__":[]})", "", false},
      {"metadata string", R"({"__metadata__":"a"})", "", false},
      {"metadata twice", R"({"__metadata__":{"a":"b"},"__metadata__":{"c":"d"}})", "", false},
      {"metadata null twice", R"({"__metadata__":null,"__metadata__":null})", "", false},
      {"metadata repeated key", R"({"__metadata__":{"a":"b","a":"c"}})", "", true},
      {"metadata escaped name", R"({"\u005f_metadata__":{"a":"b"}})", "", true},
      {"tensor", "{\"x\":" + kF32 + "}", "abcd", true},
      {"unknown field", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"zz":[{}]}})", "abcd", true},
      {"unknown field twice", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"z":1,"z":2}})", "abcd", true},
      {"field twice", R"({"x":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"missing shape", R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", "abcd", false},
      {"missing dtype", R"({"x":{"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"missing offsets", R"({"x":{"dtype":"F32","shape":[1]}})", "abcd", false},
      {"tensor as array", R"({"x":["F32",[1],[0,4]]})", "abcd", true},
      {"tensor array long", R"({"x":["F32",[1],[0,4],5]})", "abcd", false},
      {"tensor array short", R"({"x":["F32",[1]]})", "abcd", false},
      {"tensor null", R"({"x":null})", "", false},
      {"tensor string", R"({"x":"a"})", "", false},
      {"dtype map", R"({"x":{"dtype":{"F32":null},"shape":[1],"data_offsets":[0,4]}})", "abcd", true},
      {"dtype map non-null", R"({"x":{"dtype":{"F32":[]},"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype map two keys", R"({"x":{"dtype":{"F32":null,"U8":null},"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype map same key twice", R"({"x":{"dtype":{"F32":null,"F32":null},"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype map empty", R"({"x":{"dtype":{},"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype unknown", R"({"x":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype lowercase", R"({"x":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype int", R"({"x":{"dtype":3,"shape":[1],"data_offsets":[0,4]}})", "abcd", false},
      {"dtype escaped", R"({"x":{"dtype":"F\u0033\u0032","shape":[1],"data_offsets":[0,4]}})", "abcd", true},
      {"shape negative", R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", "abcd", false},
      {"shape minus zero", R"({"x":{"dtype":"U8","shape":[-0],"data_offsets":[0,0]}})", "", false},
      {"shape float", R"({"x":{"dtype":"F32","shape":[1.0],"data_offsets":[0,4]}})", "abcd", false},
      {"shape exponent", R"({"x":{"dtype":"F32","shape":[1e0],"data_offsets":[0,4]}})", "abcd", false},
      {"shape 2^64", R"({"x":{"dtype":"F32","shape":[18446744073709551616],"data_offsets":[0,4]}})", "abcd", false},
      {"shape bool", R"({"x":{"dtype":"F32","shape":[true],"data_offsets":[0,4]}})", "abcd", false},
      {"shape string", R"({"x":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", "abcd", false},
      {"shape object", R"({"x":{"dtype":"F32","shape":{},"data_offsets":[0,4]}})", "abcd", false},
      {"shape leading zero", R"({"x":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}})", "abcd", false},
      {"shape plus", R"({"x":{"dtype":"F32","shape":[+1],"data_offsets":[0,4]}})", "abcd", false},
      {"offsets three", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4,5]}})", "abcd", false},
      {"offsets one", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", "abcd", false},
      {"offsets object", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":{"0":0,"1":4}}})", "abcd", false},
      {"offsets negative", R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-1,4]}})", "abcd", false},
      {"NaN", R"({"x":NaN})", "", false},
      {"Infinity", R"({"__metadata__":{},"x":Infinity})", "", false},
      {"lone high surrogate", "{\"\\ud800\":" + kF32 + "}", "abcd", false},
      {"lone low surrogate", "{\"\\udc00\":" + kF32 + "}", "abcd", false},
      {"surrogate pair", "{\"\\ud83d\\ude00\":" + kF32 + "}", "abcd", true},
      {"raw control char", "{\"x\x01\":1}", "", false},
      {"nesting 127", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"z\":" +
                          std::string(125, '[') + std::string(125, ']') + "}}", "abcd", true},
      {"nesting 128", "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"z\":" +
                          std::string(126, '[') + std::string(126, ']') + "}}", "abcd", false},
      {"repeated tensor keeps last", R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"x":)" + kF32 + "}", "abcd", true},
      {"repeated tensor, last wrong size", "{\"x\":" + kF32 + R"(,"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", "abcd", false},
      {"repeated tensor, first undecodable", "{\"x\":{\"dtype\":\"F99\"},\"x\":" + kF32 + "}", "abcd", false},
      {"empty tensor name", "{\"\":" + kF32 + "}", "abcd", true},
  };
  for (const auto& c : cases) {
    auto r = parse(container(c.header, c.data));
    if (c.ok) {
      EXPECT_TRUE(r.ok()) << c.name << ": " << (r.ok() ? "" : r.error().message);
      continue;
    }
    ASSERT_FALSE(r.ok()) << c.name;
    const bool expect_md = std::string_view(c.name) != "repeated tensor, last wrong size";
    EXPECT_EQ(r.error().kind, expect_md ? ErrorKind::StInvalidHeaderDeserialization
                                        : ErrorKind::StMetadataIncompleteBuffer) << c.name << ": " << r.error().message;
    if (expect_md) {
      EXPECT_TRUE(r.error().message.starts_with("Error while deserializing header: invalid JSON in header: "))
          << r.error().message;
    }
  }
}

// Rule: sorted by offsets, each tensor starts where the previous ended, end >= begin.
TEST(StReader, InvalidOffset) {
  auto msg = [](const std::string& h, std::string_view data) {
    auto r = parse(container(h, data));
    EXPECT_FALSE(r.ok());
    if (r.ok()) return std::string();
    EXPECT_EQ(r.error().kind, ErrorKind::StInvalidOffset);
    return r.error().message;
  };
  EXPECT_EQ(msg(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})", "abcde"),
            "Error while deserializing header: invalid offset for tensor `x`");
  EXPECT_EQ(msg(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"y":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}})", "abc"),
            "Error while deserializing header: invalid offset for tensor `y`");
  EXPECT_EQ(msg(R"({"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})", "abc"),
            "Error while deserializing header: invalid offset for tensor `y`");
  EXPECT_EQ(msg(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", "abcd"),
            "Error while deserializing header: invalid offset for tensor `x`");
  // The name is printed raw (Rust Display of a String).
  EXPECT_EQ(msg(R"({"a\"b\\\n\t\u0000\u0001é":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "ab"),
            std::string("Error while deserializing header: invalid offset for tensor `a\"b\\\n\t") + '\0' + "\x01é`");
  // Declaration order does not matter: sorted by offsets first.
  EXPECT_TRUE(parse(container(R"({"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}})", "ab")).ok());
}

// Rule: checked element and bit counts -> ValidationOverflow.
TEST(StReader, ValidationOverflow) {
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", "abcd")),
            ErrorKind::StValidationOverflow);
  // 2^61 bytes is 2^64 bits: overflows in bits even for U8.
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"U8","shape":[2305843009213693952],"data_offsets":[0,0]}})")),
            ErrorKind::StValidationOverflow);
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,18446744073709551615]}})", "abcd")),
            ErrorKind::StValidationOverflow);
  // A zero anywhere before the overflow keeps the product 0 (checked left to right, as the crate).
  EXPECT_TRUE(parse(container(R"({"x":{"dtype":"U8","shape":[0,18446744073709551615,18446744073709551615],"data_offsets":[0,0]}})")).ok());
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"U8","shape":[18446744073709551615,18446744073709551615,0],"data_offsets":[0,0]}})")),
            ErrorKind::StValidationOverflow);
}

// Rule: bits % 8 != 0 -> MisalignedSlice (checked before the byte count).
TEST(StReader, MisalignedSlice) {
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", "ab")), ErrorKind::StMisalignedSlice);
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F6_E3M2","shape":[1],"data_offsets":[0,1]}})", "a")), ErrorKind::StMisalignedSlice);
  EXPECT_TRUE(parse(container(R"({"x":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})", "a")).ok());
  EXPECT_TRUE(parse(container(R"({"x":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}})", "abc")).ok());
}

// Rule: end - begin must equal the byte count -> TensorInvalidInfo.
TEST(StReader, TensorInvalidInfo) {
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd")), ErrorKind::StTensorInvalidInfo);
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F32","shape":[],"data_offsets":[0,2]}})", "ab")), ErrorKind::StTensorInvalidInfo);
  // Tensors are checked in offset order: the first bad one decides.
  EXPECT_EQ(kind_of(container(R"({"b":{"dtype":"F4","shape":[1],"data_offsets":[1,2]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,1]}})", "ab")),
            ErrorKind::StTensorInvalidInfo);
}

// Rule: last end + 8 + n == file size -> else MetadataIncompleteBuffer.
TEST(StReader, MetadataIncompleteBuffer) {
  EXPECT_EQ(kind_of(container("{\"x\":" + kF32 + "}", "abcde")), ErrorKind::StMetadataIncompleteBuffer);
  EXPECT_EQ(kind_of(container("{\"x\":" + kF32 + "}", "abc")), ErrorKind::StMetadataIncompleteBuffer);
  EXPECT_EQ(kind_of(container("{}", "a")), ErrorKind::StMetadataIncompleteBuffer);
  // 8 tensors of 2^61-1 bytes end at 2^64-8: end + 8 + n wraps in the crate; still incomplete.
  std::string h = "{";
  const std::uint64_t m = (1ull << 61) - 1;
  for (int i = 0; i < 8; ++i) {
    if (i) h += ',';
    h += "\"t" + std::to_string(i) + "\":{\"dtype\":\"U8\",\"shape\":[" + std::to_string(m) +
         "],\"data_offsets\":[" + std::to_string(i * m) + "," + std::to_string((i + 1) * m) + "]}";
  }
  h += "}";
  EXPECT_EQ(kind_of(container(h, "abcd")), ErrorKind::StMetadataIncompleteBuffer);
}

// Valid files: zero-sized tensors, scalars, sub-byte dtypes, no padding needed, lookups.
TEST(StReader, ValidHeader) {
  const auto b = container(
      R"({"__metadata__":{"k":"v","a":"1","k":"w"},"z":{"dtype":"U8","shape":[0,5],"data_offsets":[0,0]},)"
      R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"e":{"dtype":"BF16","shape":[0],"data_offsets":[4,4]},)"
      R"("é":{"dtype":"F4","shape":[2,2],"data_offsets":[4,6]},"B":{"dtype":"C64","shape":[1],"data_offsets":[6,14]}})",
      "0123456789abcd");
  Header h = ok_header(b);
  ASSERT_EQ(h.tensors.size(), 5u);
  std::vector<std::string> names;
  for (const auto& t : h.tensors) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"B", "e", "s", "z", "é"}));  // code point order
  EXPECT_TRUE(h.has_metadata);
  ASSERT_EQ(h.metadata.size(), 2u);
  EXPECT_EQ(h.metadata[0], (std::pair<std::string, std::string>{"k", "w"}));
  EXPECT_EQ(h.metadata[1], (std::pair<std::string, std::string>{"a", "1"}));
  ASSERT_NE(h.meta("k"), nullptr);
  EXPECT_EQ(*h.meta("k"), "w");
  EXPECT_EQ(h.meta("missing"), nullptr);
  const TensorInfo* s = h.find("s");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->dtype, Dtype::F32);
  EXPECT_TRUE(s->shape.empty());
  EXPECT_EQ(s->begin, 0u);
  EXPECT_EQ(s->end, 4u);
  const TensorInfo* z = h.find("z");
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(z->shape, (std::vector<std::uint64_t>{0, 5}));
  EXPECT_EQ(h.find("é")->dtype, Dtype::F4);
  EXPECT_EQ(h.find("x"), nullptr);
  EXPECT_EQ(h.find(""), nullptr);
  EXPECT_EQ(h.data_start(), 8 + h.header_len);

  Header none = ok_header(container("{}"));
  EXPECT_FALSE(none.has_metadata);
  EXPECT_TRUE(none.tensors.empty());
  Header null_meta = ok_header(container(R"({"__metadata__":null})"));
  EXPECT_FALSE(null_meta.has_metadata);
  Header empty_meta = ok_header(container(R"({"__metadata__":{}})"));
  EXPECT_TRUE(empty_meta.has_metadata);
  EXPECT_TRUE(empty_meta.metadata.empty());
}

// Checks run in the crate's order: size, length, UTF-8, JSON, offsets, coverage.
TEST(StReader, RuleOrder) {
  // Too large wins over a short file.
  EXPECT_EQ(kind_of(container_n(200'000'000, "\xff")), ErrorKind::StHeaderTooLarge);
  // Invalid length wins over bad UTF-8 inside what is there.
  EXPECT_EQ(kind_of(container_n(10, "\xff\xff")), ErrorKind::StInvalidHeaderLength);
  // UTF-8 wins over JSON.
  EXPECT_EQ(kind_of(container("\xff")), ErrorKind::StInvalidHeader);
  // JSON wins over offsets and coverage.
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[3,4]},"y":1})", "z")),
            ErrorKind::StInvalidHeaderDeserialization);
  // Offsets win over coverage.
  EXPECT_EQ(kind_of(container(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[3,7]}})", "")), ErrorKind::StInvalidOffset);
}

// parse_prefix: only 8 + n bytes at hand, the file size known.
TEST(StReader, ParsePrefix) {
  const auto b = container("{\"x\":" + kF32 + "}", "abcd");
  const std::span<const std::uint8_t> head(b.data(), b.size() - 4);
  auto r = parse_prefix(head, b.size());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->tensors.size(), 1u);
  EXPECT_EQ(parse_prefix(head, b.size() + 1).error().kind, ErrorKind::StMetadataIncompleteBuffer);
  EXPECT_EQ(parse_prefix(head, 7).error().kind, ErrorKind::StHeaderTooSmall);
  EXPECT_EQ(parse_prefix(std::span(b.data(), 8), b.size() - 4).error().kind, ErrorKind::UsageError);
  EXPECT_EQ(parse_prefix(std::span(b.data(), 8), 9).error().kind, ErrorKind::StInvalidHeaderLength);
  // A claimed tensor of 2^60 bytes is accepted from the header alone when the size says so.
  const std::string big = R"({"x":{"dtype":"U8","shape":[1152921504606846976],"data_offsets":[0,1152921504606846976]}})";
  const auto hb = container(big);
  auto rb = parse_prefix(hb, hb.size() + (1ull << 60));
  ASSERT_TRUE(rb.ok()) << rb.error().message;
  EXPECT_EQ(rb->tensors[0].end, 1ull << 60);
}

// Untrusted input: any header text and any data give a value or a container error, never a crash
// (run under ASan/UBSan too).
RC_GTEST_PROP(StReader, AnyBytesGiveAContainerVerdict, (const std::string& header, const std::string& data)) {
  const std::uint64_t n = *rc::gen::oneOf(rc::gen::just<std::uint64_t>(header.size()),
                                          rc::gen::arbitrary<std::uint64_t>(),
                                          rc::gen::inRange<std::uint64_t>(0, header.size() + data.size() + 2));
  auto r = parse(container_n(n, header, data));
  if (!r.ok()) {
    const auto k = r.error().kind;
    RC_ASSERT(k >= ErrorKind::StHeaderTooSmall && k <= ErrorKind::StMetadataIncompleteBuffer);
  }
}

// Same, with JSON-shaped headers so the later rules are reached.
RC_GTEST_PROP(StReader, JsonShapedHeadersGiveAContainerVerdict, ()) {
  const auto num = rc::gen::oneOf(rc::gen::map(rc::gen::arbitrary<std::uint64_t>(), [](std::uint64_t v) { return std::to_string(v); }),
                                  rc::gen::map(rc::gen::inRange(0, 9), [](int v) { return std::to_string(v); }),
                                  rc::gen::element<std::string>("-1", "1.5", "18446744073709551616", "-0", "1e400"));
  const auto nums = rc::gen::map(rc::gen::container<std::vector<std::string>>(num), [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
    return s + "]";
  });
  const auto dtype = rc::gen::element<std::string>("\"F4\"", "\"F6_E2M3\"", "\"U8\"", "\"F32\"", "\"C64\"", "\"X\"");
  const auto tensor = rc::gen::apply([](const std::string& d, const std::string& s, const std::string& o) {
    return "{\"dtype\":" + d + ",\"shape\":" + s + ",\"data_offsets\":" + o + "}";
  }, dtype, nums, nums);
  const auto entries = *rc::gen::container<std::vector<std::string>>(tensor);
  std::string h = "{";
  for (std::size_t i = 0; i < entries.size(); ++i) h += (i ? ",\"t" : "\"t") + std::to_string(i % 3) + "\":" + entries[i];
  h += "}";
  const std::size_t data = *rc::gen::inRange<std::size_t>(0, 64);
  auto r = parse(container(h, std::string(data, 'x')));
  if (!r.ok()) {
    const auto k = r.error().kind;
    RC_ASSERT(k >= ErrorKind::StHeaderTooSmall && k <= ErrorKind::StMetadataIncompleteBuffer);
  } else {
    std::uint64_t covered = 0;
    for (const auto& t : r->tensors) covered += t.end - t.begin;
    RC_ASSERT(covered == data);
  }
}

}  // namespace
}  // namespace w4a8::st
