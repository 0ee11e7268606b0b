// Section 1 (files, metadata, markers, conflicts): expected strings derived by hand from
// validator.md and Python's repr rules.
#include <gtest/gtest.h>

#include <cstdio>

#include "builder.hpp"
#include "json/flat_layers.hpp"

namespace w4a8::validate::testing {
namespace {

using st::Dtype;

Ckpt int8_layer(const std::string& marker_json) {
  Ckpt c;
  c.tensor("i.weight", Dtype::I8, {4, 8}).tensor("i.weight_scale", Dtype::F32, {});
  c.marker("i", marker_json);
  return c;
}

TEST(Collect, AcceptsMarkerAndSetsDerivedKey) {
  auto r = run(int8_layer(R"({"format": "int8_tensorwise"})"));
  ASSERT_EQ(verdict(r), "ok");
  ASSERT_EQ(r->layers.size(), 1u);
  EXPECT_EQ(r->layers[0].prefix, "i");
  ASSERT_NE(r->layers[0].marker.get("_is_tensorwise_scalar"), nullptr);
  EXPECT_TRUE(r->layers[0].marker.get("_is_tensorwise_scalar")->boolean);
  ASSERT_EQ(r->tensors.size(), 3u);  // checkpoint_meta keeps every tensor, sorted
  EXPECT_EQ(r->tensors[0]->name, "i.comfy_quant");
}

// Report::under: a layer's own tensors, hand-listed; names that only share the prefix's bytes
// ("a2.x", "a_b", "a") or sort between its tensors ("a-" < "a.") are not its.
TEST(Collect, ReportUnderListsALayersOwnTensors) {
  Ckpt c;
  c.w4a8("a", 4, 32, 16);
  c.tensor("a.bias", st::Dtype::F32, {4}).tensor("a2.x", st::Dtype::F32, {1}).tensor("a_b", st::Dtype::F32, {1});
  c.tensor("a-", st::Dtype::F32, {1}).tensor("a", st::Dtype::F32, {1});
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << verdict(r);
  std::vector<std::string> names;
  for (const TensorMeta* t : r->under("a")) names.emplace_back(t->name);
  EXPECT_EQ(names, (std::vector<std::string>{"a.bias", "a.comfy_quant", "a.weight", "a.weight_s_channel", "a.weight_s_rel"}));
  EXPECT_TRUE(r->under("zz").empty());
  EXPECT_TRUE(r->under("a.weight").empty());
  // With a hint: every hint (right, inside the run, past it, beyond the table) gives the same run,
  // and the hint moves past it; an absent layer leaves the hint alone.
  const auto want = r->under("a");
  const std::size_t past = static_cast<std::size_t>(want.data() + want.size() - r->tensors.data());
  for (std::size_t h = 0; h <= r->tensors.size() + 1; ++h) {
    std::size_t hint = h;
    const auto got = r->under("a", &hint);
    EXPECT_EQ(got.data(), want.data()) << "hint " << h;
    EXPECT_EQ(got.size(), want.size()) << "hint " << h;
    EXPECT_EQ(hint, past) << "hint " << h;
    hint = h;
    EXPECT_TRUE(r->under("zz", &hint).empty());
    EXPECT_EQ(hint, h);
  }
}

TEST(Collect, MetadataJsonErrors) {
  const Ckpt base = Ckpt().w4a8("m");
  struct Case { const char* text; const char* expected; };
  const Case cases[] = {
      {"{layers", "sglang.invalid_quantization_metadata: Invalid _quantization_metadata in model.safetensors"},
      {"", "sglang.invalid_quantization_metadata: Invalid _quantization_metadata in model.safetensors"},
      {"\xEF\xBB\xBF{}", "sglang.invalid_quantization_metadata: Invalid _quantization_metadata in model.safetensors"},
      {"[]", "sglang.quantization_metadata_not_object: _quantization_metadata in model.safetensors must contain an object"},
      {"{}", "sglang.quantization_metadata_no_layers: _quantization_metadata in model.safetensors must contain a layers object"},
      {R"({"layers": 1})", "sglang.quantization_metadata_no_layers: _quantization_metadata in model.safetensors must contain a layers object"},
      {R"({"layers": {"a'b": []}})", "sglang.metadata_marker_not_object: Comfy quantization metadata for \"a'b\" must be an object"},
      {R"({"layers": {"m": {"format": "x"}, "\ud800": 0}})", "sglang.metadata_marker_not_object: Comfy quantization metadata for '\\ud800' must be an object"},
  };
  for (const Case& c : cases) {
    Ckpt k = base;
    k.meta("_quantization_metadata", c.text);
    EXPECT_EQ(verdict(run(k)), c.expected) << c.text;
  }
}

// A text the metadata reader leaves to the general parser (a WTF-8 surrogate, which no container's
// decoded header holds, but a header built in memory may): the document parsed whole, its layers
// as json.loads gives them.
TEST(Collect, MetadataTheReaderDeclinesIsParsedWhole) {
  Ckpt c = Ckpt().w4a8("m");
  c.meta("_quantization_metadata", "{}");
  const Bytes bytes = c.bytes();
  auto h = st::parse(bytes);
  ASSERT_TRUE(h.ok());
  const std::string text = R"({"layers": {"m": {"format": "asym_w4a8_int8", "group_size": 16}, ")" "\xed\xa0\x80" R"(": {}}})";
  ASSERT_EQ(json::read_flat_layers(text).shape, json::MetadataShape::Declined);  // (else this tests nothing)
  for (auto& [k, v] : h->metadata)
    if (k == "_quantization_metadata") v = text;
  const ParsedFile f{"model.safetensors", bytes, &*h, false};
  const auto r = inspect_parsed(std::span(&f, 1));
  ASSERT_TRUE(r.ok()) << verdict(r);
  ASSERT_EQ(r->layers.size(), 2u);
  EXPECT_EQ(std::string_view(r->layers[0].prefix), "m");
  EXPECT_EQ(std::string_view(r->layers[1].prefix), "\xed\xa0\x80");
  EXPECT_EQ(r->unknown_format, 1u);
  // The same document as a header can hold it (the key escaped): the reader's, the same layers.
  Ckpt escaped = Ckpt().w4a8("m");
  escaped.meta("_quantization_metadata", R"({"layers": {"m": {"format": "asym_w4a8_int8", "group_size": 16}, "\ud800": {}}})");
  const auto same = run(escaped);
  ASSERT_TRUE(same.ok()) << verdict(same);
  ASSERT_EQ(same->layers.size(), 2u);
  EXPECT_EQ(std::string_view(same->layers[1].prefix), "\xed\xa0\x80");
}

TEST(Collect, DigitLimitAndRecursionPropagate) {
  Ckpt a = int8_layer("{\"x\": " + std::string(4301, '9') + "}");
  EXPECT_EQ(verdict(run(a)),
            "python.int.max_str_digits: Exceeds the limit (4300 digits) for integer string conversion: value has "
            "4301 digits; use sys.set_int_max_str_digits() to increase the limit");
  Ckpt b = int8_layer(std::string(3000, '[') + std::string(3000, ']'));
  EXPECT_EQ(verdict(run(b)),
            "python.recursion: maximum recursion depth exceeded while decoding a JSON array from a unicode string");
  Ckpt c = Ckpt().w4a8("m");
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += "{\"a\": ";
  deep += "1" + std::string(3000, '}');
  c.meta("_quantization_metadata", deep);
  EXPECT_EQ(verdict(run(c)),
            "python.recursion: maximum recursion depth exceeded while decoding a JSON object from a unicode string");
  // In the metadata too, wherever the int is (a member upstream never reads).
  Ckpt d = Ckpt().w4a8("m");
  d.meta("_quantization_metadata", R"({"layers": {}, "x": [)" + std::string(4301, '7') + "]}");
  EXPECT_EQ(verdict(run(d)),
            "python.int.max_str_digits: Exceeds the limit (4300 digits) for integer string conversion: value has "
            "4301 digits; use sys.set_int_max_str_digits() to increase the limit");
}

TEST(Collect, MarkerErrors) {
  EXPECT_EQ(verdict(run(int8_layer("{bad"))),
            "sglang.invalid_marker: Invalid Comfy quantization marker 'i.comfy_quant' in model.safetensors");
  EXPECT_EQ(verdict(run(int8_layer(""))),
            "sglang.invalid_marker: Invalid Comfy quantization marker 'i.comfy_quant' in model.safetensors");
  EXPECT_EQ(verdict(run(int8_layer(std::string("{}\0", 3)))),
            "sglang.invalid_marker: Invalid Comfy quantization marker 'i.comfy_quant' in model.safetensors");
  EXPECT_EQ(verdict(run(int8_layer("{\"a\": \"\xC3\"}"))),  // UnicodeDecodeError
            "sglang.invalid_marker: Invalid Comfy quantization marker 'i.comfy_quant' in model.safetensors");
  EXPECT_EQ(verdict(run(int8_layer("[1]"))),
            "sglang.marker_not_object: Comfy quantization marker 'i.comfy_quant' must contain a JSON object");
  EXPECT_EQ(verdict(run(int8_layer(" \t\n{\"format\": \"int8_tensorwise\"}\r\n"))), "ok");
}

// Byte-identical markers are parsed once and copied (collect's memo): each layer must still get its
// own object (the derived keys differ per layer), a different marker in between must not be served
// from the memo, and a repeated marker that fails must fail again for its own tensor.
TEST(Collect, IdenticalMarkerBytesGiveEachLayerItsOwnMarker) {
  const std::string same = R"({"format": "asym_w4a8_int8", "group_size": 16})";
  Ckpt c;
  c.w4a8("a", 4, 128, 16, same).w4a8("b", 4, 128, 16, same).w4a8("c", 4, 128, 32).w4a8("d", 4, 128, 16, same);
  c.tensor("b.weight_codebook", Dtype::F32, {16});  // b alone gets _has_codebook = True
  auto r = run(c);
  ASSERT_TRUE(r.ok()) << verdict(r);
  ASSERT_EQ(r->layers.size(), 4u);
  const char* prefixes[] = {"a", "b", "c", "d"};
  const long long groups[] = {16, 16, 32, 16};
  for (std::size_t i = 0; i < 4; ++i) {
    const json::Value& m = r->layers[i].marker;
    EXPECT_EQ(r->layers[i].prefix, prefixes[i]);
    ASSERT_EQ(m.members.size(), 4u) << prefixes[i];  // format, group_size, _has_codebook, _has_correction
    EXPECT_EQ(m.get("group_size")->text, std::to_string(groups[i])) << prefixes[i];
    EXPECT_EQ(m.get("_has_codebook")->boolean, i == 1) << prefixes[i];
    EXPECT_FALSE(m.get("_has_correction")->boolean) << prefixes[i];
  }

  // The same through the ahead-of-time parse of a mapped file (release_pages_from 0 forces it).
  const Bytes bytes = c.bytes();
  const std::string path = ::testing::TempDir() + "identical_markers.safetensors";
  ASSERT_TRUE(st::write_file(path, bytes).ok());
  Options ahead;
  ahead.release_pages_from = 0;
  auto mapped = inspect_paths(std::vector<std::string>{path}, ahead);
  ASSERT_TRUE(mapped.ok()) << verdict(mapped);
  ASSERT_EQ(mapped->layers.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(mapped->layers[i].prefix, prefixes[i]);
    EXPECT_TRUE(json::py_equal(mapped->layers[i].marker, r->layers[i].marker)) << prefixes[i];
    EXPECT_EQ(mapped->layers[i].marker->members.size(), 4u) << prefixes[i];
  }
  std::remove(path.c_str());

  Ckpt bad;  // the second of two identical non-objects is reached only if the first is skipped
  bad.w4a8("a", 4, 128, 16).w4a8("b", 4, 128, 16, "[1]").w4a8("c", 4, 128, 16, "[1]");
  EXPECT_EQ(verdict(run(bad)),
            "sglang.marker_not_object: Comfy quantization marker 'b.comfy_quant' must contain a JSON object");
  Ckpt late;  // a good marker, then the same bytes cut short (not a prefix match: a parse)
  late.w4a8("a", 4, 128, 16, same).w4a8("b", 4, 128, 16, same.substr(0, same.size() - 1));
  EXPECT_EQ(verdict(run(late)),
            "sglang.invalid_marker: Invalid Comfy quantization marker 'b.comfy_quant' in model.safetensors");
}

TEST(Collect, MarkerEncodingsByBomAndZeroPattern) {
  const std::string text = R"({"format": "int8_tensorwise"})";
  auto widen = [&](int width, bool big_endian, std::string bom) {
    std::string out = std::move(bom);
    for (char ch : text) {
      std::string unit(width, '\0');
      unit[big_endian ? width - 1 : 0] = ch;
      out += unit;
    }
    return out;
  };
  const std::string cases[] = {
      "\xEF\xBB\xBF" + text,
      widen(2, false, ""), widen(2, true, ""), widen(2, false, "\xFF\xFE"), widen(2, true, "\xFE\xFF"),
      widen(4, false, ""), widen(4, true, ""), widen(4, false, std::string("\xFF\xFE\0\0", 4)),
      widen(4, true, std::string("\0\0\xFE\xFF", 4)),
  };
  for (const std::string& c : cases) EXPECT_EQ(verdict(run(int8_layer(c))), "ok") << c.size();
}

TEST(Collect, MarkerDtypes) {
  const std::string text = R"({"format": "int8_tensorwise"}   )";  // 32 bytes
  for (Dtype d : {Dtype::I8, Dtype::BOOL, Dtype::I16, Dtype::U16, Dtype::I32, Dtype::F32, Dtype::F16,
                  Dtype::I64, Dtype::U64, Dtype::F64, Dtype::C64}) {
    Ckpt c;
    c.tensor("i.weight", Dtype::I8, {4, 8}).tensor("i.weight_scale", Dtype::F32, {}).marker("i", text, d);
    EXPECT_EQ(verdict(run(c)), "ok") << st::dtype_name(d);
  }
  const std::pair<Dtype, const char*> unsupported[] = {
      {Dtype::BF16, "BFloat16"}, {Dtype::F8_E4M3, "Float8_e4m3fn"}, {Dtype::F8_E5M2, "Float8_e5m2"},
      {Dtype::F8_E4M3FNUZ, "Float8_e4m3fnuz"}, {Dtype::F8_E5M2FNUZ, "Float8_e5m2fnuz"},
      {Dtype::F8_E8M0, "Float8_e8m0fnu"}, {Dtype::F4, "Float4_e2m1fn_x2"}};
  for (const auto& [d, name] : unsupported) {
    Ckpt c;
    const std::uint64_t n = 32 * 8 / st::dtype_bits(d);
    c.tensor("i.comfy_quant", d, {n}, Bytes(text.begin(), text.end()));
    EXPECT_EQ(verdict(run(c)), std::string("torch.unsupported_scalar_type: Got unsupported ScalarType ") + name);
  }
  // torch has no F6 dtype: safetensors' get_tensor itself refuses them (torch 2.15, safetensors 0.8.0).
  for (Dtype d : {Dtype::F6_E2M3, Dtype::F6_E3M2}) {
    Ckpt c;
    c.tensor("i.comfy_quant", d, {32}, Bytes(text.begin(), text.begin() + 24));
    EXPECT_EQ(verdict(run(c)), "safetensors.dtype_not_understood: Dtype not understood: " + std::string(st::dtype_name(d)));
  }
}

// 0.5.19: a prefix's markers must be equal as whole dicts (Python ==). The per-key rule of later
// releases: merge_test.cpp.
// Metadata layers in an order that is not sorted, appended without asking the prefix index: 5,000
// keep the flat read's table of their keys, 70,000 (over collect.cpp's kUnindexedFrom, 65,536) are
// hashed at the first lookup. Either way a later tensor marker of one of them must still merge into
// it, and weights with and without a marker must still be told apart.
class ManyMetadataLayers : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Collect, ManyMetadataLayers, ::testing::Values(std::size_t{5000}, std::size_t{70000}));

TEST_P(ManyMetadataLayers, AreFoundByLaterMarkersAndWeights) {
  const std::size_t kLayers = GetParam();
  std::string doc = R"({"layers": {)";
  std::size_t at_l5 = 0;
  for (std::size_t i = 0; i < kLayers; ++i) {
    const std::size_t k = i * 7919 % kLayers;  // a permutation
    if (k == 5) at_l5 = i;
    doc += (i ? ", \"L" : "\"L") + std::to_string(k) + R"(": {"n": )" + std::to_string(k) + "}";
  }
  doc += "}}";
  Ckpt c;
  c.meta("_quantization_metadata", doc);
  c.marker("L5", R"({"format": "not_checked"})").tensor("L7.weight", Dtype::I8, {2, 2});
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  ASSERT_EQ(r->layers.size(), kLayers);  // L5's tensor marker merged into its metadata layer
  EXPECT_EQ(r->layers[at_l5].prefix, "L5");
  ASSERT_NE(r->layers[at_l5].marker.get("format"), nullptr);
  EXPECT_EQ(r->layers[at_l5].marker.get("n")->text, "5");
  c.tensor("zz.weight", Dtype::I8, {2, 2});
  EXPECT_EQ(verdict(run(c)), "sglang.missing_markers: Quantized weights are missing comfy_quant metadata: ['zz']");
  Ckpt d;  // a conflicting tensor marker for a metadata layer
  d.meta("_quantization_metadata", doc).marker("L9", R"({"n": 10})");
  EXPECT_EQ(verdict(run(d)), "sglang.conflicting_markers: Conflicting Comfy quantization markers for 'L9'");
}

TEST(Collect, ConflictsUsePythonEqualityWholeMarker) {
  const auto run = [](const std::vector<Bytes>& f) { return run_as(upstream::Sglang::V0_5_19, f); };
  const auto run1 = [&](const Ckpt& c) { return run(std::vector<Bytes>{c.bytes()}); };
  Ckpt a = Ckpt().w4a8("c", 4, 128, 16, R"({"format": "asym_w4a8_int8", "group_size": 16, "f": true})");
  Ckpt same, differs;
  same.marker("c", R"({"f": 1.0, "group_size": 16.0, "format": "asym_w4a8_int8"})");
  differs.marker("c", R"({"f": 1.0, "group_size": 16.5, "format": "asym_w4a8_int8"})");
  auto ok = run(std::vector<Bytes>{a.bytes(), same.bytes()});
  ASSERT_EQ(verdict(ok), "ok");
  // The later equal marker replaces the value: group_size is now the float 16.0.
  EXPECT_EQ(ok->layers[0].marker.get("group_size")->kind, json::Kind::Float);
  EXPECT_EQ(verdict(run(std::vector<Bytes>{a.bytes(), differs.bytes()})),
            "sglang.conflicting_markers: Conflicting Comfy quantization markers for 'c'");
  Ckpt m = Ckpt().w4a8("c");
  m.meta("_quantization_metadata", R"({"layers": {"c": {"format": "asym_w4a8_int8", "group_size": 32}}})");
  EXPECT_EQ(verdict(run1(m)), "sglang.conflicting_markers: Conflicting Comfy quantization markers for 'c'");
  Ckpt n1, n2;
  n1.marker("q", R"({"x": NaN, "y": [NaN]})");
  n2.marker("q", R"({"y": [NaN], "x": NaN})");
  EXPECT_EQ(verdict(run(std::vector<Bytes>{n1.bytes(), n2.bytes()})), "ok");
}

TEST(Collect, FilesAreProcessedInOrder) {
  Ckpt bad_marker;
  bad_marker.marker("i", "{bad");
  const Bytes truncated = {1, 2, 3};
  // A marker error in file 1 wins over a container error in file 2 (upstream opens file 2 later).
  EXPECT_EQ(verdict(run(std::vector<Bytes>{bad_marker.bytes(), truncated})),
            "sglang.invalid_marker: Invalid Comfy quantization marker 'i.comfy_quant' in shard-1.safetensors");
  EXPECT_EQ(verdict(run(std::vector<Bytes>{Ckpt().w4a8("a").bytes(), truncated})),
            "safetensors.HeaderTooSmall: Error while deserializing header: header too small");
  // A later file overwrites checkpoint_meta entries.
  Ckpt over;
  over.tensor("o.weight_s_channel", Dtype::F64, {4});
  EXPECT_EQ(verdict(run(std::vector<Bytes>{Ckpt().w4a8("o").bytes(), over.bytes()})),
            "sglang.w4a8.channel_dtype: Comfy W4A8 layer 'o' needs F32 channel scales, got F64");
}

TEST(Collect, MarkerOrderIsInsertionOrderAcrossSources) {
  Ckpt c = Ckpt().w4a8("b").w4a8("a");
  c.meta("_quantization_metadata", R"({"layers": {"z": {"format": "none"}, "b": {"format": "asym_w4a8_int8", "group_size": 16}}})");
  auto r = run(c);
  ASSERT_EQ(verdict(r), "ok");
  ASSERT_EQ(r->layers.size(), 3u);
  EXPECT_EQ(r->layers[0].prefix, "z");  // metadata layers first, then markers in sorted key order
  EXPECT_EQ(r->layers[1].prefix, "b");
  EXPECT_EQ(r->layers[2].prefix, "a");
}

TEST(Collect, QuantFormatAndInspectPathsErrors) {
  std::vector<std::string> paths = {"/nonexistent/dir/model.safetensors"};
  auto r = inspect_paths(paths);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().kind, ErrorKind::IoOpenFailed);
}

}  // namespace
}  // namespace w4a8::validate::testing
