#include "gen/in_memory.hpp"

#include <algorithm>
#include <deque>

#include "gen/byte_order.hpp"
#include "gen/model.hpp"
#include "gen/properties.hpp"

namespace w4a8::gen {

std::optional<std::vector<InMemoryFile>> in_memory(const Scenario& s) {
  for (const auto& f : s.files)
    if (f.container.defect != Defect::kCount) return std::nullopt;
  // lower()'s layout (plain tensors, then marker tensors, in scenario order), written straight into
  // the file bytes (check_round_trip holds the two against each other).
  std::vector<InMemoryFile> out(s.files.size());
  for (std::size_t i = 0; i < s.files.size(); ++i) {
    InMemoryFile& m = out[i];
    m.path = s.files[i].path;
    m.bytes.assign(8, 0);  // header_len 0: data_start() == 8
    auto add = [&](const std::string& name, st::Dtype dtype, const st::Shape& shape, std::span<const std::uint8_t> bytes,
                   std::uint64_t size) {
      const std::uint64_t begin = m.bytes.size() - 8;
      if (bytes.empty()) m.bytes.resize(m.bytes.size() + size);
      else m.bytes.insert(m.bytes.end(), bytes.begin(), bytes.end());
      m.header.tensors.push_back({st::Name(name), dtype, shape, begin, begin + size});
    };
    for (const auto& t : s.tensors) {
      if (t.file != i) continue;
      const auto size = tensor_bytes(t.dtype, t.shape);
      if (!size || (!t.bytes.empty() && *size != t.bytes.size()) || t.name == "__metadata__") return std::nullopt;
      add(t.name, t.dtype, t.shape, t.bytes, *size);
    }
    std::deque<std::string> marker_names;  // viewed by the header until own_names (stable addresses)
    for (const auto& mk : s.markers) {
      if (mk.place != Place::Tensor || mk.file != i) continue;
      const std::vector<std::uint8_t> b = marker_bytes(mk);
      const std::uint64_t elems = b.size() / (st::dtype_bits(mk.dtype) / 8);
      if (b.empty()) return std::nullopt;
      add(marker_names.emplace_back(mk.prefix + ".comfy_quant"), mk.dtype, {elems}, b, b.size());
    }
    st::own_names(m.header);  // the names viewed the scenario's strings and marker_names
    std::sort(m.header.tensors.begin(), m.header.tensors.end(), [](const auto& a, const auto& b) { return bytes_less(a.name, b.name); });
    for (std::size_t k = 1; k < m.header.tensors.size(); ++k)
      if (bytes_equal(m.header.tensors[k].name, m.header.tensors[k - 1].name)) return std::nullopt;
    const FileDesc& fd = s.files[i];
    std::vector<std::pair<std::string, std::string>> meta = fd.metadata;
    if (auto q = quant_metadata_text(s, i)) meta.emplace_back("_quantization_metadata", std::move(*q));
    if (fd.has_metadata || !meta.empty()) {
      std::vector<std::string_view> keys;
      keys.reserve(meta.size());
      for (const auto& kv : meta) keys.push_back(kv.first);
      std::sort(keys.begin(), keys.end(), BytesLess{});
      for (std::size_t k = 1; k < keys.size(); ++k)
        if (bytes_equal(keys[k], keys[k - 1])) return std::nullopt;
      m.header.has_metadata = true;
      m.header.metadata = std::move(meta);
    }
  }
  return out;
}

std::optional<InMemoryCheckpoint> InMemoryCheckpoint::of(const Scenario& s) {
  auto files = in_memory(s);
  if (!files) return std::nullopt;
  InMemoryCheckpoint c;
  c.owned_ = std::make_shared<const std::vector<InMemoryFile>>(std::move(*files));
  c.views_.reserve(c.owned_->size());
  for (const auto& f : *c.owned_) c.views_.push_back({f.path, f.bytes, &f.header});
  return c;
}

Result<validate::Report> InMemoryCheckpoint::inspect(const validate::Options& opt) const {
  auto r = validate::inspect_parsed(views_, opt);
  if (r.ok()) r->keep = owned_;
  return r;
}

Result<validate::Report> run_validator_fast(const Scenario& s) {
  if (auto c = InMemoryCheckpoint::of(s)) return c->inspect(s.options);
  return run_validator(s);
}

std::string compare_in_memory_file(const InMemoryFile& m, std::span<const std::uint8_t> bytes, const st::Header& h) {
  if (h.has_metadata != m.header.has_metadata || h.metadata != m.header.metadata) return m.path + ": in-memory metadata differs";
  if (h.tensors.size() != m.header.tensors.size()) return m.path + ": in-memory tensor count differs";
  for (std::size_t k = 0; k < h.tensors.size(); ++k) {
    const st::TensorInfo &a = h.tensors[k], &b = m.header.tensors[k];
    if (a.name != b.name || a.dtype != b.dtype || a.shape != b.shape || a.end - a.begin != b.end - b.begin ||
        !std::equal(bytes.begin() + static_cast<std::ptrdiff_t>(h.data_start() + a.begin),
                    bytes.begin() + static_cast<std::ptrdiff_t>(h.data_start() + a.end),
                    m.bytes.begin() + static_cast<std::ptrdiff_t>(m.header.data_start() + b.begin)))
      return m.path + ": in-memory tensor " + b.name + " differs from the written one";
  }
  return "";
}

}  // namespace w4a8::gen
