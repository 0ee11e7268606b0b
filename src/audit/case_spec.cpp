#include "audit/case_spec.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "gemm/tensor_io.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "py/repr.hpp"

namespace w4a8::audit {

namespace {
constexpr std::string_view kKindNames[] = {"random", "ties", "large_acc", "saturate", "zero_rows"};

Error bad(std::string_view where, const std::string& what) {
  return make_error(ErrorKind::AuditManifest, {std::string(where), what});
}

bool get_u64(const json::Value& o, std::string_view key, std::uint64_t& out) {
  const json::Value* v = o.get(key);
  if (!v || v->kind != json::Kind::Int || v->text.empty() || v->text[0] == '-') return false;
  const auto* b = v->text.data();
  return std::from_chars(b, b + v->text.size(), out).ec == std::errc{};
}
bool get_bool(const json::Value& o, std::string_view key, bool& out) {
  const json::Value* v = o.get(key);
  if (!v || v->kind != json::Kind::Bool) return false;
  out = v->boolean;
  return true;
}
bool get_str(const json::Value& o, std::string_view key, std::string& out) {
  const json::Value* v = o.get(key);
  if (!v || !v->is_string()) return false;
  out = v->text;
  return true;
}
json::Value u(std::uint64_t x) {
  json::Value v;
  v.kind = json::Kind::Int;
  v.text = std::to_string(x);
  return v;
}
}  // namespace

std::string_view data_kind_name(DataKind d) { return kKindNames[static_cast<int>(d)]; }
bool parse_data_kind(std::string_view s, DataKind& out) {
  for (int i = 0; i < 5; ++i)
    if (kKindNames[i] == s) return out = static_cast<DataKind>(i), true;
  return false;
}
std::string_view scale_dtype_name(gemm::ScaleDtype s) { return s == gemm::ScaleDtype::F32 ? "f32" : "f8_e4m3"; }
bool parse_dtype(std::string_view s, gemm::FloatDtype& out) {
  if (s == "f32") return out = gemm::FloatDtype::F32, true;
  if (s == "bf16") return out = gemm::FloatDtype::BF16, true;
  if (s == "f16") return out = gemm::FloatDtype::F16, true;
  return false;
}

json::Value case_to_json(const CaseSpec& c) {
  json::Value v = json::Value::object();
  v.set("id", json::Value::from_string(c.id));
  v.set("file", json::Value::from_string(c.file));
  v.set("m", u(c.m));
  v.set("n", u(c.n));
  v.set("k", u(c.k));
  v.set("group_size", u(std::uint64_t(c.g)));
  v.set("convrot_groupsize", u(std::uint64_t(c.r)));
  v.set("bits", u(std::uint64_t(c.bits)));
  v.set("scale_dtype", json::Value::from_string(std::string(scale_dtype_name(c.scale_dtype))));
  v.set("codebook", json::Value::from_bool(c.codebook));
  v.set("correction", json::Value::from_bool(c.correction));
  v.set("bias", json::Value::from_bool(c.bias));
  v.set("bias_dtype", json::Value::from_string(std::string(gemm::float_dtype_name(c.bias_dtype))));
  v.set("x_dtype", json::Value::from_string(std::string(gemm::float_dtype_name(c.x_dtype))));
  v.set("out_dtype", json::Value::from_string(std::string(gemm::float_dtype_name(c.out_dtype))));
  v.set("data", json::Value::from_string(std::string(data_kind_name(c.data))));
  v.set("seed", u(c.seed));
  v.set("covers", json::Value::from_string(c.covers));
  return v;
}

json::Value manifest_to_json(const Manifest& m) {
  json::Value v = json::Value::object();
  v.set("format", json::Value::from_string("w4a8check-audit-suite"));
  v.set("version", u(std::uint64_t(m.version)));
  v.set("grid", json::Value::from_string(m.grid));
  v.set("seed", u(m.seed));
  v.set("layer_prefix", json::Value::from_string(m.layer_prefix));
  v.set("input_key", json::Value::from_string(m.input_key));
  json::Value cases = json::Value::array();
  for (const auto& c : m.cases) cases.items.push_back(case_to_json(c));
  v.set("cases", std::move(cases));
  return v;
}

Result<CaseSpec> case_from_json(const json::Value& v, std::string_view man) {
  CaseSpec c;
  if (!v.is_object()) return bad(man, "a case is not an object");
  if (!get_str(v, "id", c.id) || c.id.empty()) return bad(man, "case without an id");
  // The id names the adapter's output file in the work directory and is pasted into the printed
  // repro command line: letters, digits, '_', '-', '.' only, not starting with '.' (no "..", no '/').
  const bool id_ok = c.id.size() <= 200 && c.id.front() != '.' && std::all_of(c.id.begin(), c.id.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.';
  });
  if (!id_ok) return bad(man, "case id " + py::repr_str(c.id) + " must be 1-200 of [A-Za-z0-9_.-], not starting with '.'");
  const std::string where = "case '" + c.id + "': ";
  std::uint64_t g = 0, r = 0, bits = 0;
  std::string sd, bd, xd, od, data;
  if (!get_str(v, "file", c.file) || c.file.empty()) return bad(man, where + "file");
  if (!get_u64(v, "m", c.m) || !get_u64(v, "n", c.n) || !get_u64(v, "k", c.k)) return bad(man, where + "m, n, k");
  if (!get_u64(v, "group_size", g) || !get_u64(v, "convrot_groupsize", r) || g > (1u << 30) || r > (1u << 30))
    return bad(man, where + "group_size, convrot_groupsize");
  c.g = std::int64_t(g), c.r = std::int64_t(r);
  if (!get_u64(v, "bits", bits) || (bits != 4 && bits != 6)) return bad(man, where + "bits (4 or 6)");
  c.bits = int(bits);
  if (!get_str(v, "scale_dtype", sd) || (sd != "f8_e4m3" && sd != "f32")) return bad(man, where + "scale_dtype");
  c.scale_dtype = sd == "f32" ? gemm::ScaleDtype::F32 : gemm::ScaleDtype::Fp8E4M3;
  if (!get_bool(v, "codebook", c.codebook) || !get_bool(v, "correction", c.correction) || !get_bool(v, "bias", c.bias))
    return bad(man, where + "codebook, correction, bias");
  if (!get_str(v, "bias_dtype", bd) || !parse_dtype(bd, c.bias_dtype)) return bad(man, where + "bias_dtype");
  if (!get_str(v, "x_dtype", xd) || !parse_dtype(xd, c.x_dtype)) return bad(man, where + "x_dtype");
  if (!get_str(v, "out_dtype", od) || !parse_dtype(od, c.out_dtype)) return bad(man, where + "out_dtype");
  if (!get_str(v, "data", data) || !parse_data_kind(data, c.data)) return bad(man, where + "data");
  if (!get_u64(v, "seed", c.seed)) return bad(man, where + "seed");
  (void)get_str(v, "covers", c.covers);
  // The file must stay inside the suite directory.
  if (c.file.front() == '/' || c.file.find("..") != std::string::npos)
    return bad(man, where + "file must be a relative path inside the suite");
  c.entry = v;
  return c;
}

Result<Manifest> parse_manifest(std::string_view text, std::string_view man) {
  auto p = json::loads_str(text);
  if (!p.ok()) return bad(man, "not JSON (" + p.error().detail + ")");
  const json::Value& v = *p;
  Manifest m;
  std::string fmt;
  std::uint64_t ver = 0;
  if (!v.is_object() || !get_str(v, "format", fmt) || fmt != "w4a8check-audit-suite")
    return bad(man, "not a w4a8check audit suite");
  if (!get_u64(v, "version", ver) || ver != std::uint64_t(kManifestVersion))
    return bad(man, "version must be " + std::to_string(kManifestVersion));
  (void)get_str(v, "grid", m.grid);
  (void)get_u64(v, "seed", m.seed);
  (void)get_str(v, "layer_prefix", m.layer_prefix);
  (void)get_str(v, "input_key", m.input_key);
  const json::Value* cases = v.get("cases");
  if (!cases || cases->kind != json::Kind::Array) return bad(man, "no cases array");
  for (const auto& cv : cases->items) {
    auto c = case_from_json(cv, man);
    if (!c.ok()) return std::move(c).error();
    for (const auto& prev : m.cases)
      if (prev.id == c->id) return bad(man, "duplicate case id '" + c->id + "'");
    m.cases.push_back(std::move(*c));
  }
  return m;
}

std::string describe(const CaseSpec& c) {
  std::ostringstream o;
  o << "M=" << c.m << " N=" << c.n << " K=" << c.k << " G=" << c.g << " R=" << c.r;
  if (c.bits != 4) o << " bits=" << c.bits;
  if (c.scale_dtype != gemm::ScaleDtype::Fp8E4M3) o << " s_rel=" << scale_dtype_name(c.scale_dtype);
  o << (c.codebook ? " codebook" : " uniform") << (c.correction ? " correction" : "");
  if (c.bias) o << " bias=" << gemm::float_dtype_name(c.bias_dtype);
  o << " x=" << gemm::float_dtype_name(c.x_dtype) << " out=" << gemm::float_dtype_name(c.out_dtype) << " "
    << data_kind_name(c.data);
  return o.str();
}

}  // namespace w4a8::audit
