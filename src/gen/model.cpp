#include "gen/model.hpp"

#include <algorithm>
#include <cstdint>

#include "core/checked.hpp"
#include "gen/json_spell.hpp"

namespace w4a8::gen {

namespace {

// Whether a document may be respelled from its value: json.loads accepts it, and it is nested no
// deeper than 3.11 reads. The speller recurses once a level, so the chains later interpreters read
// (up to 9,998 levels) keep their text as built; under AddressSanitizer's larger frames the
// recursion overflowed the stack.
bool spellable(const JsonDoc& d) { return d.outcome == JsonDoc::Outcome::Ok && d.depth <= json::kPythonMaxDepth; }

bool respelled(const MarkerDesc& m) { return !m.spelling.empty() && m.raw.empty() && spellable(m.doc); }

}  // namespace

std::string marker_text(const MarkerDesc& m) {
  if (!respelled(m)) return m.doc.text;
  return spell_tape(m.doc.value, m.spelling);
}

bool has_quant_metadata(const Scenario& s, std::size_t file) {
  const FileDesc& f = s.files[file];
  if (f.quant_meta_override || f.force_quant_meta) return true;
  for (const auto& m : s.markers)
    if (m.place == Place::Metadata && m.file == file) return true;
  return false;
}

std::optional<std::string> quant_metadata_text(const Scenario& s, std::size_t file) {
  const FileDesc& f = s.files[file];
  if (f.quant_meta_override) {
    const JsonDoc& d = *f.quant_meta_override;
    if (f.meta_spelling.empty() || !spellable(d)) return d.text;
    return spell_tape(d.value, f.meta_spelling);
  }
  if (!has_quant_metadata(s, file)) return std::nullopt;
  std::vector<std::pair<std::string, std::string>> layers;
  bool all_ok = true;  // else the members keep their text order (the first failure stays first)
  for (const auto& m : s.markers) {
    if (m.place != Place::Metadata || m.file != file) continue;
    layers.emplace_back(m.prefix, marker_text(m));
    all_ok = all_ok && loads_outcome(m.doc, 2) == JsonDoc::Outcome::Ok;
  }
  if (f.meta_spelling.empty()) {
    std::string text;
    for (const auto& [p, t] : layers) text += (text.empty() ? "" : ", ") + json_literal(p) + ": " + t;
    return "{\"format_version\": \"1.0\", \"layers\": {" + text + "}}";
  }
  ByteChoiceSource src(f.meta_spelling);
  const std::string version = spell_string("1.0", src);
  const std::pair<std::string, std::string> top[] = {{"format_version", version}, {"layers", spell_object(layers, src, all_ok)}};
  return spell_object(top, src, true);
}

std::vector<std::uint8_t> marker_bytes(const MarkerDesc& m) {
  const unsigned elem = std::max(1u, st::dtype_bits(m.dtype) / 8);
  if (!m.raw.empty()) {
    std::vector<std::uint8_t> b = m.raw;
    while (b.size() % elem) b.push_back(' ');
    return b;
  }
  // The document's own text is encoded in place (marker_text would copy it first: markers nested to
  // the recursion limit are kilobytes, and every in-memory build and lowering encodes each marker).
  std::string spelled;
  const bool respell = respelled(m);
  if (respell) spelled = marker_text(m);
  const std::string& text = respell ? spelled : m.doc.text;
  std::vector<std::uint8_t> b = encode(text, m.encoding);
  if (b.size() % elem) b = encode(text + std::string(elem - b.size() % elem, ' '), m.encoding);
  return b;
}

Checkpoint lower(const Scenario& s) {
  Checkpoint c;
  for (std::size_t i = 0; i < s.files.size(); ++i) {
    const FileDesc& fd = s.files[i];
    FileModel f;
    f.path = fd.path;
    f.edit = fd.container;
    for (const auto& t : s.tensors) {
      if (t.file != i) continue;
      st::TensorSpec spec{t.name, t.dtype, t.shape, t.bytes};
      if (spec.bytes.empty()) spec.bytes.resize(tensor_bytes(t.dtype, t.shape).value_or(0));
      f.tensors.push_back(std::move(spec));
    }
    for (const auto& m : s.markers) {
      if (m.place != Place::Tensor || m.file != i) continue;
      st::TensorSpec spec{m.prefix + ".comfy_quant", m.dtype, {}, marker_bytes(m)};
      spec.shape = {spec.bytes.size() / (st::dtype_bits(m.dtype) / 8)};
      f.tensors.push_back(std::move(spec));
    }
    std::vector<std::pair<std::string, std::string>> meta = fd.metadata;
    if (auto q = quant_metadata_text(s, i)) meta.emplace_back("_quantization_metadata", *q);
    if (fd.has_metadata || !meta.empty()) f.metadata = std::move(meta);
    c.files.push_back(std::move(f));
  }
  return c;
}

namespace {

std::string shape_json(const std::vector<std::uint64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

struct RawTensor {
  std::string name;
  std::string dtype;
  std::vector<std::uint64_t> shape;
  std::uint64_t begin, end;
};

// A header written by hand so edits can break exactly one rule.
std::string header_json(const std::optional<std::vector<std::pair<std::string, std::string>>>& meta,
                        const std::vector<RawTensor>& ts) {
  std::string h = "{";
  bool first = true;
  if (meta) {
    h += "\"__metadata__\": {";
    for (std::size_t i = 0; i < meta->size(); ++i)
      h += (i ? ", " : "") + json_literal((*meta)[i].first) + ": " + json_literal((*meta)[i].second);
    h += "}";
    first = false;
  }
  for (const auto& t : ts) {
    h += first ? "" : ", ";
    first = false;
    h += json_literal(t.name) + ": {\"dtype\": \"" + t.dtype + "\", \"shape\": " + shape_json(t.shape) +
         ", \"data_offsets\": [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]}";
  }
  return h + "}";
}

void put_le64(std::vector<std::uint8_t>& b, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::vector<std::uint8_t> apply_edit(const FileModel& f, std::vector<std::uint8_t> valid) {
  const ContainerEdit& e = f.edit;
  std::vector<RawTensor> ts;
  std::vector<std::uint8_t> data;
  for (const auto& t : f.tensors) {
    ts.push_back({t.name, std::string(st::dtype_name(t.dtype)), t.shape, data.size(), data.size() + t.bytes.size()});
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  const std::uint64_t end = data.size();
  switch (e.defect) {
    case Defect::HeaderTooSmall: valid.resize(std::min<std::uint64_t>(e.param % 8, valid.size())); return valid;
    case Defect::HeaderTooLarge: put_le64(valid, e.param); return valid;
    case Defect::HeaderLengthPastEnd: put_le64(valid, valid.size() - 8 + 1 + e.param); return valid;
    case Defect::HeaderNotUtf8: {
      static constexpr std::string_view kBad[] = {"\xff", "\xc0\x80", "\xed\xa0\x80", "\x80", "\xf4\x90\x80\x80"};
      return st::serialize_raw(header_json(f.metadata, ts) + std::string(kBad[e.param % std::size(kBad)]), data);
    }
    case Defect::HeaderNotJson: {
      static constexpr std::string_view kBad[] = {
          "{", "[]", "{\"t\": {\"dtype\": \"Q4\", \"shape\": [0], \"data_offsets\": [0, 0]}}",
          "{\"__metadata__\": {\"k\": 1}}", "{\"t\": {\"dtype\": \"U8\", \"shape\": [-1], \"data_offsets\": [0, 0]}}",
          "null", "{\"t\": {\"dtype\": \"U8\", \"shape\": 5, \"data_offsets\": [0, 0]}}"};
      if (e.param % (std::size(kBad) + 1) == std::size(kBad))  // valid header, then junk
        return st::serialize_raw(header_json(f.metadata, ts) + "x", data);
      return st::serialize_raw(kBad[e.param % (std::size(kBad) + 1)], data);
    }
    case Defect::OffsetGap:
      // The last tensor in layout order (the reported one, e.name) starts one byte late.
      if (ts.empty()) ts.push_back({"~gap", "U8", {1}, 0, 1});  // nothing to misplace: add one tensor
      ts.back().begin += 1;
      ts.back().end += 1;
      data.resize(ts.back().end);
      return st::serialize_raw(header_json(f.metadata, ts), data);
    case Defect::ShapeOverflow:
      ts.push_back({"~overflow", "U8", {std::uint64_t{1} << 32, std::uint64_t{1} << 32, 2 + e.param % 5}, end, end});
      return st::serialize_raw(header_json(f.metadata, ts), data);
    case Defect::PartialByte:
      ts.push_back({"~nibbles", "F4", {2 * (e.param % 4) + 1}, end, end + e.param % 4 + 1});
      data.resize(end + e.param % 4 + 1);
      return st::serialize_raw(header_json(f.metadata, ts), data);
    case Defect::SizeMismatch:
      ts.push_back({"~short", "U8", {2 + e.param % 3}, end, end + 1});
      data.push_back(0);
      return st::serialize_raw(header_json(f.metadata, ts), data);
    case Defect::TrailingBytes: valid.resize(valid.size() + 1 + e.param % 9); return valid;
    default: return valid;
  }
}

}  // namespace

Result<std::vector<std::vector<std::uint8_t>>> serialize(const Checkpoint& c) {
  std::vector<std::vector<std::uint8_t>> out;
  for (const auto& f : c.files) {
    st::WriteOptions opt;
    opt.metadata = f.metadata;
    auto bytes = st::serialize(f.tensors, opt);
    if (!bytes) return std::move(bytes).error();
    out.push_back(f.edit.defect == Defect::kCount ? std::move(bytes).value() : apply_edit(f, std::move(bytes).value()));
  }
  return out;
}

}  // namespace w4a8::gen
