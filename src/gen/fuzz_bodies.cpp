#include "gen/fuzz_bodies.hpp"

#include <algorithm>
#include <cstring>

#include <sys/mman.h>
#include <unistd.h>

#include "gen/byte_order.hpp"
#include "gen/elf_oracle.hpp"
#include "gen/model.hpp"
#include "gen/raw_json.hpp"
#include "json/dump.hpp"
#include "json/flat_layers.hpp"
#include "json/parse.hpp"
#include "json/wtf8.hpp"
#include "plugin/elf_check.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::gen {
namespace {

std::string show_error(const Error& e) { return std::string(e.code()) + " " + std::string(e.type()) + ": " + e.message; }
std::string show(const Result<validate::Report>& r) { return r.ok() ? std::string("accepted") : show_error(r.error()); }

// FNV-1a over the size and up to the first and last 32 bytes: cheap, and any edit near either end
// (where mutations of a header or its data land) moves the input in or out of the sample.
std::uint64_t sample_hash(std::span<const std::uint8_t> b) {
  std::uint64_t h = 1469598103934665603ull ^ b.size();
  auto mix = [&](std::span<const std::uint8_t> part) {
    for (std::uint8_t c : part) h = (h ^ c) * 1099511628211ull;
  };
  mix(b.first(std::min<std::size_t>(32, b.size())));
  if (b.size() > 32) mix(b.last(std::min<std::size_t>(32, b.size() - 32)));
  return h;
}

// Writer round trip of a parsed container: same tensors, data and metadata.
std::string container_round_trip(std::span<const std::uint8_t> bytes, const st::Header& h) {
  std::vector<st::TensorSpec> specs;
  const auto* d = bytes.data() + h.data_start();
  for (const auto& t : h.tensors) specs.push_back({t.name, t.dtype, t.shape, std::vector<std::uint8_t>(d + t.begin, d + t.end)});
  st::WriteOptions opt;
  if (h.has_metadata) opt.metadata = h.metadata;
  auto again = st::serialize(specs, opt);
  if (!again) return "writer rejected what the reader accepted: " + show_error(again.error());
  auto h2 = st::parse(*again);
  if (!h2) return "reader rejected the writer's output: " + show_error(h2.error());
  if (h2->tensors.size() != h.tensors.size() || h2->metadata != h.metadata || h2->has_metadata != h.has_metadata)
    return "round trip changed the header";
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& t = h2->tensors[i];
    if (t.name != specs[i].name || t.dtype != specs[i].dtype || t.shape != specs[i].shape ||
        !std::equal(specs[i].bytes.begin(), specs[i].bytes.end(), again->begin() + static_cast<std::ptrdiff_t>(h2->data_start() + t.begin)))
      return "round trip changed tensor " + specs[i].name;
  }
  return "";
}

}  // namespace

std::string check_container_bytes(std::span<const std::uint8_t> bytes) {
  const bool sampled = sample_hash(bytes) % kContainerSampleEvery == 0;
  auto h = st::parse(bytes);
  if (sampled && bytes.size() >= 8) {
    const std::uint64_t n = st::declared_header_len(bytes);
    if (n <= bytes.size() - 8) {
      auto hp = st::parse_prefix(bytes.first(8 + n), bytes.size());
      if (hp.ok() != h.ok() || (!h.ok() && hp.error().kind != h.error().kind))
        return "parse_prefix disagrees with parse: " + (h.ok() ? std::string("ok") : show_error(h.error())) + " vs " +
               (hp.ok() ? std::string("ok") : show_error(hp.error()));
    }
  }
  if (!h) return "";
  for (const auto& t : h->tensors) {
    const auto size = tensor_bytes(t.dtype, t.shape);
    if (t.begin > t.end || h->data_start() + t.end > bytes.size() || h->data_start() + t.end < h->data_start())
      return "accepted tensor " + t.name + " has out-of-bounds offsets";
    if (!size || *size != t.end - t.begin) return "accepted tensor " + t.name + " whose size does not match its offsets";
  }
  const validate::ParsedFile file{"fuzz.safetensors", bytes, &*h};
  (void)validate::inspect_parsed({&file, 1});  // must not crash on any accepted container
  return sampled ? container_round_trip(bytes, *h) : "";
}

namespace {

// The marker's text respelled (raw_json.hpp) must parse to the same structure. Only for documents
// read as UTF-8 (no NUL byte, no UTF-16/32 BOM): other encodings would need re-encoding.
std::string check_respelling(std::span<const std::uint8_t> bytes, const json::Value& value) {
  if (bytes.empty() || std::memchr(bytes.data(), 0, bytes.size()) != nullptr) return "";
  if (bytes.size() >= 2 && ((bytes[0] == 0xFF && bytes[1] == 0xFE) || (bytes[0] == 0xFE && bytes[1] == 0xFF))) return "";
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);
  const auto tree = raw::parse(text);
  if (!tree) return "";
  const auto re = raw::respell(*tree);
  if (!re) return "";
  const std::string again = raw::emit(*re);
  const json::ParseResult r = json::loads_str(again);
  if (!r.ok()) return "a respelling of an accepted document was rejected: " + again;
  if (!same_json(value, *r)) return "a respelling of the document parsed differently:\n  " + again + "\n  gave " + json::dump(*r) + "\n  not " + json::dump(value);
  return "";
}

// A string holding a lone high surrogate directly followed by a lone low one (WTF-8: ED A0..AF xx
// ED B0..BF xx). json.dumps escapes both and json.loads then joins them into one code point, so in
// Python too such a value does not survive dumps/loads.
bool has_split_pair(const json::Value& v) {
  auto split = [](const std::string& s) {
    for (std::size_t i = 0; i + 5 < s.size(); ++i)
      if (static_cast<unsigned char>(s[i]) == 0xED && (static_cast<unsigned char>(s[i + 1]) & 0xF0) == 0xA0 &&
          static_cast<unsigned char>(s[i + 3]) == 0xED && (static_cast<unsigned char>(s[i + 4]) & 0xF0) == 0xB0)
        return true;
    return false;
  };
  if (v.kind == json::Kind::String) return split(v.text);
  for (const auto& x : v.items)
    if (has_split_pair(x)) return true;
  for (const auto& [k, x] : v.members)
    if (split(k) || has_split_pair(x)) return true;
  return false;
}

}  // namespace

std::string check_metadata_text(std::string_view text) {
  const json::FlatRead flat = json::read_flat_layers(text);
  if (flat.shape == json::MetadataShape::Declined) {
    if (text.size() < json::FlatLayer::kIndirect && json::find_invalid_wtf8(text, false) == std::string_view::npos)
      return "read_flat_layers declined a UTF-8 text";
    return "";
  }
  const json::ParseResult r = json::loads_str(text);
  if (flat.shape == json::MetadataShape::Invalid) {
    const json::ParseError& e = flat.error;
    if (r.ok() || r.error().failure != e.failure ||
        (e.failure == json::ParseFailure::IntTooLong && r.error().digits != e.digits) ||
        (e.failure == json::ParseFailure::TooDeep && r.error().in_array != e.in_array))
      return "read_flat_layers and json.loads disagree on a failure: " + (r.ok() ? std::string("json.loads accepts") : r.error().detail);
    return "";
  }
  if (!r.ok()) return "read_flat_layers read a text json.loads rejects (" + r.error().detail + ")";
  if (flat.shape == json::MetadataShape::NotObject) return r->is_object() ? "read_flat_layers: an object read as not one" : "";
  const json::Value* layers = r->is_object() ? r->get("layers") : nullptr;
  if (flat.shape == json::MetadataShape::NoLayers)
    return layers != nullptr && layers->is_object() ? "read_flat_layers found no layers where json.loads does" : "";
  if (layers == nullptr || !layers->is_object() || layers->members.size() != flat.layers.size())
    return "read_flat_layers answered for a document whose layers json.loads does not build so";
  for (std::size_t i = 0; i < flat.layers.size(); ++i) {
    const std::string_view m = flat.layers.marker(flat.layers[i], text);
    const json::ParseResult marker = json::loads_bytes({reinterpret_cast<const std::uint8_t*>(m.data()), m.size()});  // (as collect() parses it)
    if (flat.layers.key(flat.layers[i], text) != layers->members[i].first || !marker.ok() ||
        !same_json(*marker, layers->members[i].second))
      return "read_flat_layers read layer " + std::to_string(i) + " unlike json.loads";
  }
  return "";
}

std::string check_marker_bytes(std::span<const std::uint8_t> bytes) {
  if (std::string e = check_metadata_text({reinterpret_cast<const char*>(bytes.data()), bytes.size()}); !e.empty())
    return e;
  const json::ParseResult r = json::loads_bytes(bytes);
  if (r.ok() && !has_split_pair(*r)) {
    const std::string text = json::dump(*r);
    const json::ParseResult back = json::loads_str(text);
    if (!back.ok()) return "loads_str rejected dump() output: " + text;
    // Structural equality: Python's == is False for a bare NaN, but the round trip must keep it.
    if (!same_json(*r, *back)) return "dump/loads changed the value: " + text;
    if (std::string e = check_respelling(bytes, *r); !e.empty()) return e;
  }
  // The same bytes as a marker of a valid tiny W4A8 layer.
  Scenario s;
  s.files.push_back({"m.safetensors", false, {}, {}, false, {}, {}});
  s.tensors.push_back({"l.weight", st::Dtype::I8, {1, 8}, 0, {}});
  s.tensors.push_back({"l.weight_s_rel", st::Dtype::F8_E4M3, {1, 1}, 0, {}});
  s.tensors.push_back({"l.weight_s_channel", st::Dtype::F32, {1}, 0, {}});
  MarkerDesc m;
  m.prefix = "l";
  m.raw.assign(bytes.begin(), bytes.end());
  if (m.raw.empty()) m.doc.text = "";
  s.markers.push_back(std::move(m));
  const auto got = run_validator_fast(s);
  if (!r.ok()) {
    const ErrorKind want = r.error().failure == json::ParseFailure::IntTooLong ? ErrorKind::PyIntMaxStrDigits
                           : r.error().failure == json::ParseFailure::TooDeep
                               ? (r.error().calling ? ErrorKind::PyRecursionCall : ErrorKind::PyRecursion)
                                                                            : ErrorKind::SgInvalidMarker;
    // Which side said what: the JSON reader (the oracle here) and the kind it implies, then the validator.
    if (got.ok() || got.error().kind != want)
      return "oracle (json.loads): marker JSON rejected (" + r.error().detail + "), expected " +
             std::string(error_info(want).code) + "; validator: " + show(got);
  } else if (!r->is_object()) {
    if (got.ok() || got.error().kind != ErrorKind::SgMarkerNotObject)
      return "oracle (json.loads): the marker is not an object, expected sglang.marker_not_object; validator: " + show(got);
  } else if (!got.ok()) {
    const std::string_view code = got.error().code();
    if (code.starts_with("safetensors.") || code.starts_with("sglang.invalid") || code == "sglang.marker_not_object")
      return "an object marker was rejected as " + show_error(got.error());
  }
  return "";
}

std::string_view meta_check_name(MetaCheck c) {
  static constexpr std::string_view kNames[] = {"none", "round-trip", "strict-contract", "sharding", "marker-placement", "per-layer"};
  return c < MetaCheck::kCount ? kNames[static_cast<std::size_t>(c)] : "none";
}

GenConfig case_config(ConfigVariant v) {
  GenConfig cfg = config_variant(v);
  cfg.fewer_layers = true;
  return cfg;
}

ScenarioCase decode_case(ChoiceSource& src) {
  ScenarioCase c;
  c.variant = static_cast<ConfigVariant>(src.below(static_cast<std::uint64_t>(ConfigVariant::kCount)));
  c.scenario = generate(src, case_config(c.variant));
  const std::uint64_t m = src.below(kMetaCheckChoices);
  c.check = m < static_cast<std::uint64_t>(MetaCheck::kCount) ? static_cast<MetaCheck>(m) : MetaCheck::None;
  return c;
}

std::string describe_case(const ScenarioCase& c) {
  static constexpr std::string_view kVariants[] = {"any", "valid", "one-defect", "several"};
  return "  variant: " + std::string(kVariants[static_cast<std::size_t>(c.variant)]) + "\n  check: " +
         std::string(meta_check_name(c.check)) + "\n" + describe(c.scenario);
}

std::string check_scenario_bytes(std::span<const std::uint8_t> bytes) {
  ByteChoiceSource src(bytes);
  const ScenarioCase c = decode_case(src);
  const Scenario& s = c.scenario;
  const Expectation want = expect(s);
  std::string r = check_defect_fires(s, want);
  if (!r.empty()) return r + "\n" + describe_case(c);
  // One in-memory build serves the verdict and the per-layer check's reruns; scenarios with a
  // container edit go through the writer and the reader (their defect lives in the bytes).
  const std::optional<InMemoryCheckpoint> mem = InMemoryCheckpoint::of(s);
  const Result<validate::Report> got = mem ? mem->inspect(s.options) : run_validator(s);
  r = compare(want, got);
  if (r.empty()) {
    switch (c.check) {
      case MetaCheck::RoundTrip:
        r = check_round_trip(s, mem ? &*mem : nullptr);  // and the in-memory build against the bytes
        break;
      case MetaCheck::Strict: r = check_strict_contract(s, &got); break;
      case MetaCheck::Sharding: r = check_sharding(s, src, &got); break;
      case MetaCheck::Placement: r = check_marker_placement(s, src, &got); break;
      case MetaCheck::Layers: r = check_layers(s, &got, mem ? &*mem : nullptr, &src); break;
      default: break;
    }
  }
  return r.empty() ? "" : r + "\n" + describe_case(c);
}

// ---- plugin_elf ----

namespace {

// The bytes as a file check_elf() opens by path (a memfd, named through /proc): "" when the reason
// it gives is `why`, the difference otherwise; "" also where memfd or /proc is missing.
std::string check_elf_file_agrees(std::span<const std::uint8_t> bytes, const std::string& why) {
#ifdef __linux__
  const int fd = ::memfd_create("plugin_elf", MFD_CLOEXEC);
  if (fd < 0) return "";
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  std::string out;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (done == bytes.size() && ::access(path.c_str(), R_OK) == 0) {
    const Status s = plugin::check_elf(path);
    const std::string got = s.ok() ? std::string() : s.error().message;
    const std::string want = why.empty() ? std::string() : path + ": " + why;
    if (!bytes_ends_with(got, want) || got.empty() != want.empty())
      out = "check_elf on a file says '" + got + "', elf_defect on its bytes '" + why + "'";
  }
  ::close(fd);
  return out;
#else
  (void)bytes, (void)why;
  return "";
#endif
}

}  // namespace

std::string check_elf_bytes(std::span<const std::uint8_t> bytes) {
  const std::string why = plugin::elf_defect(bytes);
#if defined(__x86_64__)
  const std::string want = elf_expected_reason(bytes);
  if (why.empty() != want.empty() || !bytes_equal(std::string_view(why).substr(0, want.size()), want))
    return "the preflight says '" + why + "', the second reader expects '" + want + "...'";
  if (why.empty()) {
    std::vector<std::uint8_t> longer(bytes.begin(), bytes.end());
    longer.resize(longer.size() + 64);
    if (std::string w = plugin::elf_defect(longer); !w.empty())
      return "accepted, but refused with 64 bytes appended: " + w;
  }
#endif
  if (sample_hash(bytes) % kContainerSampleEvery == 0) return check_elf_file_agrees(bytes, why);
  return "";
}

}  // namespace w4a8::gen
