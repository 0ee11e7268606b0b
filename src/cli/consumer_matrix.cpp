#include "cli/consumer_matrix.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <ostream>
#include <unordered_map>

#include "cli/checkpoint_input.hpp"
#include "cli/layer_marker.hpp"
#include "cli/report.hpp"
#include "core/key_hash.hpp"
#include "json/dump.hpp"
#include "kernels/problem.hpp"
#include "py/int.hpp"
#include "py/repr.hpp"
#include "validate/comfy_formats.hpp"

namespace w4a8::cli {
namespace {

constexpr std::string_view kNoFormat = "(no format)";  // a marker without a "format" key

constexpr std::size_t kMaxLabelWidth = 60;  // longer layer names overflow their column

std::optional<gemm::TensorDesc> desc(const validate::Report& r, const std::string& name) {
  const validate::TensorMeta* t = r.find(name);
  if (t == nullptr) return std::nullopt;
  return gemm::TensorDesc{t->dtype, t->shape};
}

// The layer's K as the kernels and comfy-kitchen >= 0.2.36 read it: s_rel.shape[1] * G; else the
// packed 4-bit reading 2 * weight.shape[1]; 0 when neither is defined.
std::uint64_t layer_k(const gemm::OperandDesc& d) {
  std::uint64_t k = 0;
  if (d.s_rel.shape.size() == 2 && d.group_size > 0 &&
      !__builtin_mul_overflow(d.s_rel.shape[1], std::uint64_t(d.group_size), &k))
    return k;
  if (d.weight.shape.size() == 2 && !__builtin_mul_overflow(d.weight.shape[1], std::uint64_t(2), &k)) return k;
  return 0;
}

struct Described {
  gemm::OperandDesc d;
  std::uint64_t k = 0;
};

Result<Described> describe_layer(const validate::Report& r, const validate::Layer& l, py::Version pv) {
  Described out;
  gemm::OperandDesc& d = out.d;
  const st::Name& p = l.prefix;
  const auto weight = desc(r, p + ".weight"), s_rel = desc(r, p + ".weight_s_rel"), s_ch = desc(r, p + ".weight_s_channel");
  for (const auto& [t, suffix] : {std::pair{&weight, ".weight"}, {&s_rel, ".weight_s_rel"}, {&s_ch, ".weight_s_channel"}})
    if (!*t) return make_error(ErrorKind::ConsumerMissingTensor, {py::repr_str(p, pv), py::repr_str(p + suffix, pv)});
  d.weight = *weight;
  d.s_rel = *s_rel;
  d.s_channel = *s_ch;
  d.codebook = desc(r, p + ".weight_codebook");
  d.correction = desc(r, p + ".weight_correction");
  d.bias = desc(r, p + ".bias");
  auto groups = marker_groups(l, pv);
  W4A8_TRY(groups);
  d.group_size = groups->group_size;
  d.convrot_groupsize = groups->convrot_groupsize;
  out.k = layer_k(d);
  d.input = gemm::TensorDesc{st::Dtype::F32, {1, out.k}};
  return out;
}

std::string cell_text(std::uint32_t c, bool json) {
  if (c == kCellOk) return "ok";
  if (c == kCellNotApplicable) return json ? "n/a" : "-";
  return "E" + std::to_string(c + 1);
}

}  // namespace

std::string marker_format(const json::Value& marker) {
  std::string out;
  append_marker_format(out, marker);
  return out;
}

std::string marker_format(const validate::Marker& marker) {
  return marker.is_text() ? std::string(kNoFormat) : marker_format(marker.value());
}

void append_marker_format(std::string& out, const json::Value& marker) {
  const json::Value* f = marker.get("format");
  if (f == nullptr)
    out += kNoFormat;
  else if (f->is_string())
    out += f->text;
  else
    json::dump_append(out, *f);
}

std::string Consumer::name() const {
  switch (kind) {
    case ConsumerKind::Sglang: return "sglang " + version;
    case ConsumerKind::ComfyKitchen: return "comfy-kitchen " + version;
    case ConsumerKind::Kernel: break;
  }
  return "CUDA kernel";
}

bool ConsumerMatrix::accepts(std::size_t c) const { return refused(c) == 0 && consumers[c].checkpoint == kCellOk; }

std::size_t ConsumerMatrix::refused(std::size_t c) const {
  if (consumers[c].checkpoint != kCellOk) return rows.size();
  return std::size_t(std::count_if(rows.begin(), rows.end(), [c](const MatrixRow& r) {
    return r.cells[c] != kCellOk && r.cells[c] != kCellNotApplicable;
  }));
}

namespace {

// Release `ck`'s verdict on the described layer: its operand checks, then what its eager call raises
// on an empty problem (N = 0, or K = 0 under 0.2.35, on the integer path), as `gemm` reports it. The
// input [1, K] has a row, and those errors come before the row count matters: upstream raises them
// for every M.
Status judge(const Described& d, upstream::ComfyKitchen ck) {
  return gemm::validate_operands(d.d, ck, gemm::EmptyProblem::AsUpstream);
}

}  // namespace

Status comfy_kitchen_accepts(const validate::Report& r, const validate::Layer& l, upstream::ComfyKitchen ck,
                             py::Version pv) {
  auto d = describe_layer(r, l, pv);
  W4A8_TRY(d);
  return judge(*d, ck);
}

bool comfy_kitchen_only_layer(const validate::Report& r, const validate::Layer& l, upstream::ComfyKitchen ck,
                              py::Version pv) {
  auto d = describe_layer(r, l, pv);
  return d.ok() && gemm::comfy_kitchen_only_storage(d->d, ck);
}

Status kernel_accepts(const validate::Report& r, const validate::Layer& l, py::Version pv) {
  auto d = describe_layer(r, l, pv);
  W4A8_TRY(d);
  W4A8_TRY(judge(*d, upstream::kLatestComfyKitchen));  // `gemm --impl cuda` reports these before the kernel runs
  // Accepted there: the row width is 4 or 6 bits of K, s_rel F8_E4M3 or F32.
  kern::LayerShape s;
  s.n = std::int64_t(d->d.weight.shape[0]);
  s.k = std::int64_t(d->k);
  s.group_size = d->d.group_size;
  s.convrot_groupsize = d->d.convrot_groupsize;
  s.bits = d->k == 0 ? 0 : std::int32_t(d->d.weight.shape[1] * 8 / d->k);
  s.s_rel_dtype = d->d.s_rel.dtype == st::Dtype::F32 ? W4A8_SCALE_F32 : W4A8_SCALE_FP8_E4M3;
  const char* why = "";
  if (kern::check_layer_shape(s, &why) != W4A8_OK) return make_error(ErrorKind::CudaUnsupported, {why});
  return Ok{};
}

// An error no loader gets past: the container cannot be parsed (safetensors' header errors) or the
// index is unusable. Every consumer opens the files with safetensors, so each refuses the whole
// checkpoint; sglang's other checkpoint-level errors (markers) concern sglang alone.
bool unreadable_checkpoint(ErrorKind k) {
  const std::string_view code = error_info(k).code;
  return (k >= ErrorKind::StHeaderTooSmall && k <= ErrorKind::StMetadataIncompleteBuffer) ||
         code.substr(0, 6) == "index.";
}

ConsumerMatrix build_consumer_matrix(std::span<const validate::LayersReport> per_sglang, upstream::Sglang selected,
                                     py::Version pv) {
  ConsumerMatrix m;
  m.python = pv;
  std::unordered_map<ErrorKind, std::uint32_t> error_ids;
  auto id_of = [&](const Error& e) {
    auto [it, fresh] = error_ids.emplace(e.kind, std::uint32_t(m.errors.size()));
    if (fresh) m.errors.push_back({e, 0});
    return it->second;
  };
  // A layer-level verdict: its cell, and its exact message kept on the row.
  auto cell = [&](MatrixRow& row, std::size_t consumer, const Status& s) {
    if (s.ok()) return kCellOk;
    row.messages.emplace_back(std::uint32_t(consumer), s.error().message);
    return id_of(s.error());
  };

  for (const validate::LayersReport& r : per_sglang) {
    Consumer c{ConsumerKind::Sglang, std::string(upstream::profile(r.sglang).version), kCellOk, {}, {}};
    if (!r.checkpoint.ok()) {
      c.checkpoint = id_of(r.checkpoint.error());
      c.checkpoint_message = r.checkpoint.error().message;
      c.checkpoint_file = r.checkpoint_file;
    }
    if (r.sglang == selected) m.selected = m.consumers.size();
    m.consumers.push_back(std::move(c));
  }
  const std::size_t n_sglang = m.consumers.size();
  for (const auto& p : upstream::kComfyKitchenProfiles)
    m.consumers.push_back({ConsumerKind::ComfyKitchen, std::string(p.version), kCellOk, {}, {}});
  m.consumers.push_back({ConsumerKind::Kernel, "", kCellOk, {}, {}});
  if (!per_sglang.empty() && !per_sglang.front().checkpoint.ok() &&
      unreadable_checkpoint(per_sglang.front().checkpoint.error().kind))
    for (std::size_t c = n_sglang; c < m.consumers.size(); ++c) {
      m.consumers[c].checkpoint = m.consumers[0].checkpoint;
      m.consumers[c].checkpoint_message = m.consumers[0].checkpoint_message;
      m.consumers[c].checkpoint_file = m.consumers[0].checkpoint_file;
    }

  // Rows: every recorded layer, the newest profile first (it names each layer's marker and tensors).
  struct Source {
    const validate::Report* report;
    const validate::Layer* layer;
  };
  std::vector<Source> sources;
  // Layer prefixes come from the files: keyed hashes (core/key_hash.hpp).
  std::vector<std::unordered_map<std::string_view, std::size_t, KeyHash>> index(per_sglang.size());
  std::unordered_map<std::string_view, std::size_t, KeyHash> row_of;
  for (std::size_t j = per_sglang.size(); j-- > 0;) {
    const validate::Report& rep = per_sglang[j].report;
    for (std::size_t i = 0; i < rep.layers.size(); ++i) {
      const validate::Layer& l = rep.layers[i];
      index[j].emplace(l.prefix, i);
      if (row_of.emplace(l.prefix, m.rows.size()).second) {
        m.rows.push_back(
            {l.prefix, marker_format(l.marker), std::vector<std::uint32_t>(m.consumers.size(), kCellNotApplicable), {}});
        sources.push_back({&rep, &l});
      }
    }
  }
  for (std::size_t row = 0; row < m.rows.size(); ++row) {
    MatrixRow& out = m.rows[row];
    for (std::size_t j = 0; j < n_sglang; ++j) {
      const validate::LayersReport& r = per_sglang[j];
      if (m.consumers[j].checkpoint != kCellOk) {
        out.cells[j] = m.consumers[j].checkpoint;
        continue;
      }
      const auto it = index[j].find(out.prefix);
      if (it != index[j].end()) out.cells[j] = cell(out, j, r.verdicts[it->second].upstream);
    }
    const Source& src = sources[row];
    if (m.consumers[n_sglang].checkpoint != kCellOk) {
      for (std::size_t c = n_sglang; c < m.consumers.size(); ++c) out.cells[c] = m.consumers[c].checkpoint;
      continue;
    }
    if (!is_w4a8(*src.layer)) continue;
    for (std::size_t c = 0; c < upstream::kComfyKitchenCount; ++c)
      out.cells[n_sglang + c] =
          cell(out, n_sglang + c, comfy_kitchen_accepts(*src.report, *src.layer, upstream::kComfyKitchenProfiles[c].id, pv));
    out.cells.back() = cell(out, out.cells.size() - 1, kernel_accepts(*src.report, *src.layer, pv));
  }
  for (const MatrixRow& r : m.rows)
    for (std::uint32_t c : r.cells)
      if (c != kCellOk && c != kCellNotApplicable) ++m.errors[c].cells;
  return m;
}

Result<ConsumerMatrix> consumer_matrix_of(const io::Checkpoint& ck, upstream::Sglang selected, py::Version pv) {
  const auto files = parsed_files(ck);
  std::vector<validate::LayersReport> per;
  validate::Options o;
  o.python = pv;
  for (const auto& p : upstream::kSglangProfiles) {
    o.sglang = p.id;
    auto r = validate::inspect_layers_parsed(files, o);
    W4A8_TRY(r);
    per.push_back(std::move(r).value());
  }
  return build_consumer_matrix(per, selected, pv);
}

std::string consumers_line(const ConsumerMatrix& m) {
  // Each consumer's outcome: "" (loads every layer) or the code of its first refusal.
  auto outcome = [&m](std::size_t c) -> std::string {
    if (m.consumers[c].checkpoint != kCellOk) return std::string(m.errors[m.consumers[c].checkpoint].first.code());
    for (const MatrixRow& r : m.rows)
      if (r.cells[c] != kCellOk && r.cells[c] != kCellNotApplicable) return std::string(m.errors[r.cells[c]].first.code());
    return "";
  };
  std::string loaded, refused;
  for (std::size_t c = 0; c < m.consumers.size();) {
    const std::string o = outcome(c);
    std::size_t e = c + 1;
    while (e < m.consumers.size() && m.consumers[e].kind == m.consumers[c].kind && outcome(e) == o) ++e;
    std::string who = m.consumers[c].name();
    if (e - c >= 3) who += "-" + m.consumers[e - 1].version;
    else if (e - c == 2) who += ", " + m.consumers[c + 1].version;
    std::string& list = o.empty() ? loaded : refused;
    list += (list.empty() ? "" : ", ") + who + (o.empty() ? "" : " [" + o + "]");
    c = e;
  }
  std::string out;
  if (!loaded.empty()) out = "loaded by " + loaded;
  if (!refused.empty()) out += (out.empty() ? "" : "; ") + std::string("refused by ") + refused;
  return out;
}

namespace {

struct Group {
  const MatrixRow* first;
  std::size_t count;
};

// Rows with the same format and cells, in first-seen order.
std::vector<Group> groups_of(const ConsumerMatrix& m) {
  std::vector<Group> out;
  std::map<std::pair<std::string_view, std::vector<std::uint32_t>>, std::size_t> at;
  for (const MatrixRow& r : m.rows) {
    auto [it, fresh] = at.emplace(std::pair{std::string_view(r.format), r.cells}, out.size());
    if (fresh) out.push_back({&r, 0});
    ++out[it->second].count;
  }
  return out;
}

std::string verdict_line(const ConsumerMatrix& m) {
  const Consumer& c = m.consumers[m.selected];
  const std::string who = c.name() + " (Python " + std::string(py::version_name(m.python)) + ")";
  if (c.checkpoint != kCellOk)
    return "REJECTED: " + who + " refuses the whole checkpoint: " + cell_text(c.checkpoint, false);
  const std::size_t bad = m.refused(m.selected);
  if (bad == 0) return "OK: " + who + " accepts all " + std::to_string(m.rows.size()) + " layer(s)";
  return "REJECTED: " + who + " refuses " + std::to_string(bad) + " of " + std::to_string(m.rows.size()) + " layer(s)";
}

void pad(std::ostream& out, const std::string& s, std::size_t width) {
  out << s;
  for (std::size_t i = s.size(); i < width; ++i) out << ' ';
}

// Terminal columns of UTF-8 text (repr() output: printable characters only): one a code point, two for
// the East Asian wide and fullwidth blocks, so that rows with non-ASCII names stay aligned (a byte
// count shifted them by a column per extra byte).
std::size_t columns(std::string_view s) {
  std::size_t w = 0;
  for (std::size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const std::size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    char32_t cp = n == 1 ? b : b & (0x7F >> n);
    for (std::size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    const bool wide = (cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF && cp != 0x303F) ||
                      (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE30 && cp <= 0xFE4F) ||
                      (cp >= 0xFF00 && cp <= 0xFF60) || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1F64F) ||
                      (cp >= 0x1F900 && cp <= 0x1F9FF) || (cp >= 0x20000 && cp <= 0x3FFFD);
    w += wide ? 2 : 1;
    i += n;
  }
  return w;
}

}  // namespace

void print_matrix_text(std::ostream& out, const ConsumerMatrix& m, bool summary) {
  out << verdict_line(m) << "\n";
  // Row labels and the widths of the columns.
  std::vector<std::string> labels, formats;  // formats as repr() shows unprintable ones (file text)
  std::vector<const MatrixRow*> rows;
  if (summary) {
    for (const Group& g : groups_of(m)) {
      labels.push_back(std::to_string(g.count) + " layer(s), e.g. " + py::repr_str(g.first->prefix, m.python));
      rows.push_back(g.first);
    }
  } else {
    for (const MatrixRow& r : m.rows) {
      labels.push_back(py::repr_str(r.prefix, m.python));
      rows.push_back(&r);
    }
  }
  for (const MatrixRow* r : rows) formats.push_back(py::shown_name(r->format, m.python));
  std::size_t label_w = summary ? 6 : 5, format_w = 6;  // "layers" / "layer", "format"
  for (std::size_t i = 0; i < rows.size(); ++i) {
    label_w = std::max(label_w, std::min(columns(labels[i]), kMaxLabelWidth));
    format_w = std::max(format_w, std::min(columns(formats[i]), kMaxLabelWidth));
  }
  std::vector<std::string> heads;
  for (const Consumer& c : m.consumers) heads.push_back(c.kind == ConsumerKind::Kernel ? "cuda" : c.version);
  std::vector<std::size_t> col_w(heads.size());
  const std::size_t code_w = cell_text(std::uint32_t(m.errors.size()), false).size();
  for (std::size_t c = 0; c < heads.size(); ++c) col_w[c] = std::max(heads[c].size(), code_w);
  // Two header lines: the consumer families (each at its first column), then each column's version.
  out << "\n";
  pad(out, "", label_w + 2 + format_w + 2);
  std::string line;
  std::size_t at = 0;  // where column c starts, after the label and format columns
  for (std::size_t c = 0; c < heads.size(); ++c) {
    if (c == 0 || m.consumers[c].kind != m.consumers[c - 1].kind) {
      if (!line.empty()) line.append(line.size() < at ? at - line.size() : 1, ' ');
      line += m.consumers[c].kind == ConsumerKind::Sglang         ? "sglang"
              : m.consumers[c].kind == ConsumerKind::ComfyKitchen ? "comfy-kitchen"
                                                                  : "kernel";
    }
    at += col_w[c] + 2;
  }
  out << line << "\n";
  line.clear();
  pad(out, summary ? "layers" : "layer", label_w + 2);
  pad(out, "format", format_w + 2);
  for (std::size_t c = 0; c < heads.size(); ++c) {
    line += heads[c];
    if (c + 1 < heads.size()) line.append(col_w[c] + 2 - heads[c].size(), ' ');
  }
  out << line << "\n";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    line.clear();
    line += labels[i];
    const std::size_t lw = columns(labels[i]), fw = columns(formats[i]);
    line.append(lw < label_w ? label_w - lw + 2 : 2, ' ');
    line += formats[i];
    line.append(fw < format_w ? format_w - fw + 2 : 2, ' ');
    for (std::size_t c = 0; c < heads.size(); ++c) {
      const std::string t = cell_text(rows[i]->cells[c], false);
      line += t;
      if (c + 1 < heads.size()) line.append(col_w[c] + 2 - t.size(), ' ');
    }
    out << line << "\n";
  }
  if (rows.empty()) out << "(no layer recorded)\n";
  // Checkpoint-level errors once, then the legend.
  bool any_checkpoint = false;
  for (const Consumer& c : m.consumers) {
    if (c.checkpoint == kCellOk) continue;
    if (!any_checkpoint) out << "\n";
    any_checkpoint = true;
    out << c.name() << " refuses the whole checkpoint (every layer): " << cell_text(c.checkpoint, false) << " "
        << (c.checkpoint_file.empty() ? "" : c.checkpoint_file + ": ") << m.errors[c.checkpoint].first.type() << ": "
        << c.checkpoint_message << "\n";
  }
  out << "\nok: loads it   -: not a W4A8 layer   En: refused (one code per error kind; --json: each layer's message)\n";
  for (std::size_t e = 0; e < m.errors.size(); ++e) {
    const Error& x = m.errors[e].first;
    // A whole-checkpoint refusal with no layer row to fill: "0 cell(s)" read as if nothing refused.
    std::size_t refusing = 0;
    for (const Consumer& c : m.consumers) refusing += c.checkpoint == e ? 1 : 0;
    out << cell_text(std::uint32_t(e), false) << "  [" << x.code() << "] ";
    if (refusing > 0 && m.errors[e].cells == 0)
      out << "the whole checkpoint, for " << refusing << " consumer(s)";
    else
      out << m.errors[e].cells << " cell(s)";
    out << ", first: " << x.type() << ": " << x.message << "\n";
  }
}

void print_matrix_json(std::ostream& out, const ConsumerMatrix& m, bool summary, const std::vector<std::string>& notes) {
  JsonWriter w(out);
  w.begin_object().key("ok").boolean(m.accepts(m.selected));
  const std::string sg = m.consumers[m.selected].version;
  Predicts{sg, py::version_name(m.python), {}}.write(w.key("upstream"));
  w.notes(notes);
  w.key("consumers").begin_array();
  for (std::size_t c = 0; c < m.consumers.size(); ++c) {
    const Consumer& k = m.consumers[c];
    w.begin_object().key("name").string(k.name());
    w.key("kind").string(k.kind == ConsumerKind::Sglang ? "sglang" : k.kind == ConsumerKind::ComfyKitchen ? "comfy_kitchen" : "kernel");
    if (!k.version.empty()) w.key("version").string(k.version);
    w.key("accepts").boolean(m.accepts(c)).key("refused_layers").number(std::uint64_t(m.refused(c)));
    w.key("checkpoint");
    if (k.checkpoint == kCellOk) w.null();
    else {
      w.begin_object().key("error").string(cell_text(k.checkpoint, true)).key("message").os_string(k.checkpoint_message);
      if (!k.checkpoint_file.empty()) w.key("file").os_string(k.checkpoint_file);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  auto cells = [&](const MatrixRow& r) {
    w.key("cells").begin_array();
    for (std::uint32_t c : r.cells) w.string(cell_text(c, true));
    w.end_array();
  };
  auto messages = [&](const MatrixRow& r) {
    w.key("messages").begin_object();
    for (const auto& [c, text] : r.messages) w.key(m.consumers[c].name()).os_string(text);
    w.end_object();
  };
  if (summary) {
    w.key("groups").begin_array();
    for (const Group& g : groups_of(m)) {
      w.begin_object().key("count").number(std::uint64_t(g.count)).key("first").string(g.first->prefix);
      w.key("format").string(g.first->format);
      cells(*g.first);
      w.end_object();
    }
    w.end_array();
  } else {
    w.key("layers").begin_object();
    for (const MatrixRow& r : m.rows) {
      w.key(r.prefix).begin_object().key("format").string(r.format);
      cells(r);
      messages(r);
      w.end_object();
    }
    w.end_object();
  }
  w.key("errors").begin_object();
  for (std::size_t e = 0; e < m.errors.size(); ++e) {
    const Error& x = m.errors[e].first;
    w.key(cell_text(std::uint32_t(e), true)).begin_object();
    w.key("type").string(x.type()).key("code").string(x.code()).key("cells").number(std::uint64_t(m.errors[e].cells));
    w.key("example").os_string(x.message);
    w.end_object();
  }
  w.end_object().end_object();
  out << "\n";
}

}  // namespace w4a8::cli
