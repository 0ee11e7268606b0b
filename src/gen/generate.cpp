// Valid scenario generation: realistic layers of every format the validator knows, markers in
// tensors or in _quantization_metadata, optional sharding across files. Defects come after
// (inject(), defect.cpp).
#include <algorithm>
#include <cstring>
#include <limits>
#include <unordered_set>

#include "core/checked.hpp"
#include "gen/byte_order.hpp"
#include "gen/defect_edit.hpp"
#include "gen/marker_fields.hpp"
#include "gen/names.hpp"
#include "gen/oracle.hpp"
#include "gen/scenario.hpp"
#include "json/parse.hpp"
#include "py/version.hpp"

namespace w4a8::gen {

using st::Dtype;

std::string_view format_name(Format f) {
  static constexpr std::string_view kNames[] = {"asym_w4a8_int8", "float8_e4m3fn", "int8_tensorwise",
                                                "int8_tensorwise", "convrot_w4a4",  "nvfp4",
                                                "mxfp8",           "other"};
  return kNames[static_cast<int>(f)];
}

std::optional<std::uint64_t> tensor_bytes(Dtype d, const std::vector<std::uint64_t>& shape) {
  std::uint64_t n = 1;
  for (std::uint64_t dim : shape) {
    auto m = checked_mul(n, dim);
    if (!m) return std::nullopt;
    n = *m;
  }
  auto bits = checked_mul(n, st::dtype_bits(d));
  if (!bits || *bits % 8 != 0) return std::nullopt;
  return *bits / 8;
}

TensorDesc* Scenario::find(std::string_view name) {
  for (auto& t : tensors)
    if (bytes_equal(t.name, name)) return &t;
  return nullptr;
}
const TensorDesc* Scenario::find(std::string_view name) const {
  return const_cast<Scenario*>(this)->find(name);
}

namespace {

struct Builder {
  Scenario& s;
  ChoiceSource& src;
  const GenConfig& cfg;
  std::unordered_set<std::string, std::hash<std::string>, BytesEqual> names;
  bool force_tensor_marker = false;  // the next marker goes into a tensor (a defect needs one)

  std::size_t random_file() { return s.files.size() == 1 || src.chance(2, 3) ? 0 : src.below(s.files.size()); }

  bool free_prefix(const std::string& p) const {
    for (const char* suf : {".weight", ".comfy_quant", ".weight_scale", ".bias"})
      if (names.count(p + suf)) return false;
    for (const auto& l : s.layers)
      if (bytes_equal(l.prefix, p)) return false;
    return true;
  }

  void add(const std::string& prefix, const char* suffix, Dtype d, std::vector<std::uint64_t> shape,
           std::size_t file) {
    TensorDesc t{prefix + suffix, d, std::move(shape), file, {}};
    names.insert(t.name);
    s.tensors.push_back(std::move(t));
  }

  void add_marker(const std::string& prefix, std::vector<std::pair<std::string, JsonDoc>> fields, IntOutcome gs,
                  IntOutcome cg, std::optional<JsonDoc> convrot) {
    MarkerDesc m;
    m.prefix = prefix;
    m.fields = fields;
    JsonDoc doc = jobj(std::move(fields));
    m.place = src.chance(1, 3) && !force_tensor_marker ? Place::Metadata : Place::Tensor;
    force_tensor_marker = false;
    m.file = random_file();
    m.doc = std::move(doc);
    m.group_size = std::move(gs);
    m.convrot_groupsize = std::move(cg);
    m.convrot = std::move(convrot);
    if (m.place == Place::Tensor) {
      m.encoding = src.chance(1, 4) ? static_cast<Encoding>(src.below(static_cast<int>(Encoding::kCount))) : Encoding::Utf8;
      m.dtype = src.chance(1, 8) ? Dtype::I8 : Dtype::U8;
    }
    s.markers.push_back(std::move(m));
  }

  std::string prefix() {
    for (int attempt = 0;; ++attempt) {
      std::string p = src.chance(1, 6) ? stress_prefix(src) : realistic_site(src).prefix;
      if (attempt > 3) p += "." + std::to_string(attempt);  // exhausted choices repeat: make it unique
      if (free_prefix(p)) return p;
    }
  }

  // N and K for a layer: tiny non-zero (data present), or real sizes with a zero dimension.
  void dims(std::uint64_t& n, std::uint64_t& k, std::uint64_t k_unit, bool strict) {
    const LinearSite site = realistic_site(src);
    const std::uint64_t choice = strict ? 0 : src.below(6);
    if (choice <= 3) {  // tiny
      n = 1 + src.below(4);
      k = k_unit * (1 + src.below(3));
    } else if (choice == 4) {  // zero rows, real K
      n = 0;
      k = site.k - site.k % k_unit;
      if (src.chance(1, 8)) k = std::uint64_t{1} << 63;  // K beyond 2**63: 128-bit arithmetic upstream
    } else {  // real rows, zero K
      n = site.n;
      k = 0;
    }
  }

  void w4a8_layer(const std::string& p, std::size_t file) {
    const bool strict = s.options.strict;
    LayerDesc L{p, Format::W4a8, 0, 0, "16"};
    // Group size and ConvRot group (strict: only the kernel contract's values).
    long long g = 16;
    std::optional<IntField> gs;
    std::optional<IntField> cg;
    long long r = 256;
    bool huge = false;
    if (strict) {
      static constexpr long long kG[] = {16, 4, 8, 32, 64, 128};
      g = kG[src.below(std::size(kG))];
      if (g != 16 || src.flip()) gs = int_field(g, src);
      static constexpr long long kR[] = {256, 4, 16, 64};
      r = kR[src.below(std::size(kR))];
      if (r != 256 || src.flip()) cg = int_field(r, src);
    } else {
      static constexpr long long kG[] = {16, 16, 4, 8, 32, 64, 5, 12, 100, 7, 48};
      g = kG[src.below(std::size(kG))];
      if (src.chance(1, 16)) { gs = huge_int_field(src); huge = true; }
      else if (g != 16 || src.flip()) gs = int_field(g, src);
      if (src.chance(1, 4)) {
        static constexpr long long kR[] = {256, 4, 16, 64, 8, 3};
        r = kR[src.below(std::size(kR))];
        cg = int_field(r, src);
      }
    }
    std::uint64_t n = 0, k = 0;
    bool k_past_u64 = false;  // K = 2**64: only zero-row layers can claim it
    if (strict) {
      const std::uint64_t unit = std::max<std::uint64_t>({16, static_cast<std::uint64_t>(g), static_cast<std::uint64_t>(r)});
      n = 1 + src.below(4);
      k = unit * (1 + src.below(2));
    } else {
      dims(n, k, 16, false);
      if (k && k % 2) ++k;
      if (src.chance(1, 6) && k) k += 2 * (1 + src.below(7));  // K % 16 != 0: fine for upstream
      if (n == 0 && k == std::uint64_t{1} << 63 && src.flip()) k_past_u64 = true;
    }
    L.n = n;
    L.k = k;
    L.group_size = huge ? gs->outcome.value : std::to_string(g);
    const unsigned __int128 kk = k_past_u64 ? static_cast<unsigned __int128>(1) << 64 : k;
    std::uint64_t groups = static_cast<std::uint64_t>(kk / static_cast<std::uint64_t>(g));
    if (huge) {  // K // G exactly (2**64 // 2**64 == 1); beyond 2**128 it is 0
      unsigned __int128 gv = 0;
      bool fits = true;
      for (char c : gs->outcome.value) {
        const unsigned __int128 next = gv * 10 + static_cast<unsigned>(c - '0');
        fits = fits && next / 10 == gv;
        gv = next;
      }
      groups = fits ? static_cast<std::uint64_t>(kk / gv) : 0;
    }
    if (k_past_u64) L.k = 0;  // not representable; only upstream's 128-bit K matters here
    add(p, ".weight", Dtype::I8, {n, static_cast<std::uint64_t>(kk / 2)}, file);
    add(p, ".weight_s_rel", Dtype::F8_E4M3, {n, groups}, s.files.size() > 1 ? random_file() : file);
    add(p, ".weight_s_channel", Dtype::F32, {n}, file);
    const bool small = n * (k ? k : 1) <= 4096;
    if (src.chance(1, 4)) add(p, ".weight_codebook", Dtype::F32, {16}, file);
    if (small && src.chance(1, 5)) add(p, ".weight_correction", Dtype::F32, {groups, n}, file);
    if (small && src.chance(1, 4)) {
      static constexpr Dtype kBias[] = {Dtype::BF16, Dtype::F16, Dtype::F32};
      add(p, ".bias", kBias[src.below(3)], {n}, file);
    }
    if (small && n && k && src.chance(1, 3)) fill_w4a8_data(p);
    // Marker fields (absent ones take upstream's defaults).
    std::vector<std::pair<std::string, JsonDoc>> f{{"format", jstr("asym_w4a8_int8")}};
    IntOutcome gso{true, L.group_size, {}, {}}, cgo{true, std::to_string(r), {}, {}};
    if (gs) { f.emplace_back("group_size", gs->doc); gso = gs->outcome; }
    std::optional<JsonDoc> convrot;
    if (src.flip()) { convrot = jbool(true); f.emplace_back("convrot", *convrot); }
    if (cg) { f.emplace_back("convrot_groupsize", cg->doc); cgo = cg->outcome; }
    if (src.chance(1, 4)) extra_fields(f, src);
    if (src.chance(1, 3)) std::swap(f.front(), f.back());
    add_marker(p, std::move(f), gso, cgo, convrot);
    s.layers.push_back(std::move(L));
  }

  // Finite, in-contract data: s_rel bytes below 0x7F, positive channel scales, finite codebook.
  void fill_w4a8_data(const std::string& p) {
    if (auto* t = s.find(p + ".weight_s_rel")) {
      t->bytes.resize(*tensor_bytes(t->dtype, t->shape));
      for (auto& b : t->bytes) b = static_cast<std::uint8_t>(src.below(0x7F));
    }
    if (auto* t = s.find(p + ".weight_s_channel")) {
      t->bytes.resize(*tensor_bytes(t->dtype, t->shape));
      const float one = 0.015625f;
      for (std::size_t i = 0; i + 4 <= t->bytes.size(); i += 4) std::memcpy(&t->bytes[i], &one, 4);
    }
    if (auto* t = s.find(p + ".weight_codebook")) {
      t->bytes.resize(64);
      for (int i = 0; i < 16; ++i) { const float v = static_cast<float>(i - 8); std::memcpy(&t->bytes[4 * i], &v, 4); }
    }
  }

  void simple_marker(const std::string& p, std::vector<std::pair<std::string, JsonDoc>> f,
                     IntOutcome cg = {true, "256", {}, {}}) {
    if (src.chance(1, 8)) extra_fields(f, src);
    add_marker(p, std::move(f), {true, "16", {}, {}}, std::move(cg), std::nullopt);
  }

  void other_layer(Format fmt, const std::string& p, std::size_t file) {
    LayerDesc L{p, fmt, 0, 0, ""};
    std::uint64_t n = 0, k = 0;
    switch (fmt) {
      case Format::Fp8:
        dims(n, k, 16, false);
        add(p, ".weight", Dtype::F8_E4M3, {n, k}, file);
        add(p, ".weight_scale", Dtype::F32, {}, file);
        if (src.flip()) add(p, ".input_scale", Dtype::F32, {}, file);
        simple_marker(p, {{"format", jstr("float8_e4m3fn")}});
        break;
      case Format::Int8Rowwise:
      case Format::Int8Tensorwise:
        dims(n, k, 16, false);
        add(p, ".weight", Dtype::I8, {n, k}, file);
        if (fmt == Format::Int8Rowwise) add(p, ".weight_scale", Dtype::F32, {n, 1}, file);
        else add(p, ".weight_scale", Dtype::F32, {}, file);
        simple_marker(p, {{"format", jstr("int8_tensorwise")}});
        break;
      case Format::W4a4: {
        static constexpr long long kC[] = {256, 16, 64};
        const long long c = kC[src.below(3)];
        dims(n, k, static_cast<std::uint64_t>(std::max(64LL, c)), false);
        add(p, ".weight", Dtype::I8, {n, k / 2}, file);
        add(p, ".weight_scale", Dtype::F32, {n}, file);
        std::vector<std::pair<std::string, JsonDoc>> f{{"format", jstr("convrot_w4a4")}};
        IntOutcome co{true, std::to_string(c), {}, {}};
        if (c != 256 || src.flip()) {
          IntField cf = int_field(c, src);
          f.emplace_back("convrot_groupsize", cf.doc);
          co = cf.outcome;
        }
        simple_marker(p, std::move(f), co);
        break;
      }
      case Format::Nvfp4:
        dims(n, k, 16, false);
        add(p, ".weight", Dtype::U8, {n, k / 2}, file);
        add(p, ".weight_scale", Dtype::F8_E4M3, {n, k / 16}, file);
        if (src.flip()) add(p, ".weight_scale_2", Dtype::F32, {}, file);
        else add(p, ".weight_scale_2", Dtype::F32, {1}, file);
        if (k <= 4096 && src.flip()) {
          static constexpr Dtype kPre[] = {Dtype::BF16, Dtype::F16, Dtype::F32};
          add(p, ".pre_quant_scale", kPre[src.below(3)], {k}, file);
        }
        simple_marker(p, {{"format", jstr("nvfp4")}});
        break;
      case Format::Mxfp8:
        n = src.chance(1, 4) ? 0 : 1 + src.below(4);
        k = 32 * src.below(4);
        if (n == 0 && src.flip()) k = 32 * 96;
        add(p, ".weight", Dtype::F8_E4M3, {n, k}, file);
        add(p, ".weight_scale", Dtype::U8, {n, k / 32}, file);
        if (src.chance(1, 5)) simple_marker(p, {{"format", jstr("mxfp8")}});
        break;
      default: {  // a marker upstream skips: unknown or missing format, any weight
        static constexpr Dtype kW[] = {Dtype::I8, Dtype::U8, Dtype::F8_E4M3, Dtype::BF16};
        n = src.below(3);
        k = 2 * src.below(3);
        add(p, ".weight", kW[src.below(4)], {n, k}, file);
        switch (src.below(4)) {
          case 0: simple_marker(p, {{"format", jstr("gguf_q4_k")}}); break;
          case 1: simple_marker(p, {}); break;
          case 2: simple_marker(p, {{"format", jint(7)}}); break;
          default: simple_marker(p, {{"format", jstr("ASYM_W4A8_INT8")}, {"group_size", jnull()}}); break;
        }
      }
    }
    L.n = n;
    L.k = k;
    s.layers.push_back(std::move(L));
  }

  // A second marker for an existing prefix that Python's == finds equal (other place or file,
  // reordered keys, 16 <-> 16.0): upstream records it again without error.
  void equal_duplicate() {
    std::vector<std::size_t> objs;
    for (std::size_t i = 0; i < s.markers.size(); ++i)
      if (s.markers[i].doc.outcome == JsonDoc::Outcome::Ok && s.markers[i].doc.value.is_object()) objs.push_back(i);
    if (objs.empty()) return;
    MarkerDesc m = s.markers[objs[src.below(objs.size())]];
    std::vector<std::pair<std::string, JsonDoc>> f;
    for (const auto& [key, v] : m.doc.value.members) {
      JsonDoc d;
      if (v.kind == json::Kind::Int && v.text.size() < 15 && src.flip())
        d = jfloat(v.text + ".0", std::stod(v.text));
      else if (v.kind == json::Kind::String) d = jstr(v.text);
      else if (v.kind == json::Kind::Int) d = jint(v.text);
      else if (v.kind == json::Kind::Bool) d = jbool(v.boolean);
      else return;  // keep it simple: floats/containers are not re-spelled
      f.emplace_back(key, std::move(d));
    }
    std::reverse(f.begin(), f.end());
    m.fields = f;
    m.doc = jobj(std::move(f));
    m.place = m.place == Place::Tensor ? Place::Metadata : Place::Tensor;
    m.file = random_file();
    m.encoding = Encoding::Utf8;
    m.dtype = Dtype::U8;
    if (m.place == Place::Tensor && names.count(m.prefix + ".comfy_quant")) return;
    for (const auto& o : s.markers)
      if (o.prefix == m.prefix && o.place == m.place && o.file == m.file) return;  // one a place
    s.markers.push_back(std::move(m));
  }
};

}  // namespace

namespace {

// What a scenario must contain for a defect class to apply (so defects are drawn uniformly by
// class, not by how often their target happens to exist).
struct Hint {
  int strict = -1, mx = -1;  // -1: random
  std::optional<Format> first_format;
  bool tensor_marker = false;
};

Hint hint_for(Defect d) {
  Hint h;
  switch (defect_info(d).family) {
    case DefectFamily::Strict: h.strict = 1; h.first_format = Format::W4a8; return h;
    case DefectFamily::W4a8: case DefectFamily::Merge: h.mx = 0; h.first_format = Format::W4a8; return h;
    default: break;
  }
  switch (d) {
    case Defect::Mxfp8Incompatible: h.mx = 1; h.strict = 0; break;
    case Defect::MarkerInvalidJson: case Defect::MarkerNotObject: case Defect::MarkerTorchDtype: case Defect::MarkerTooDeep:
      h.mx = 0; h.tensor_marker = true; break;
    case Defect::MissingMarker: case Defect::MissingTensor: case Defect::ConflictingMarkers: h.mx = 0; break;
    case Defect::W4a4Dtypes: case Defect::W4a4Shapes: case Defect::W4a4ConvrotGroupsize: case Defect::W4a4InputSize:
      h.mx = 0; h.first_format = Format::W4a4; break;
    case Defect::Nvfp4Dtypes: case Defect::Nvfp4Scale2: case Defect::Nvfp4Rank: case Defect::Nvfp4Shapes:
    case Defect::Nvfp4PreQuantScale: h.mx = 0; h.first_format = Format::Nvfp4; break;
    case Defect::TensorwiseRank: h.mx = 0; h.first_format = Format::Int8Tensorwise; break;
    case Defect::Int8Shapes: h.mx = 0; h.first_format = Format::Int8Rowwise; break;
    case Defect::Int8Dtypes: h.mx = 0; h.first_format = Format::Int8Rowwise; break;
    default: break;
  }
  return h;
}

Scenario build_valid(ChoiceSource& src, const GenConfig& cfg, const Hint& h) {
  Scenario s;
  Builder b{s, src, cfg, {}};
  s.options.strict = cfg.allow_strict && (h.strict >= 0 ? h.strict == 1 : src.chance(1, 3));
  const bool mx = !s.options.strict && (h.mx >= 0 ? h.mx == 1 : src.chance(1, 8));
  const std::size_t nfiles = src.chance(1, 3) ? 1 + src.below(std::max<std::size_t>(cfg.max_files, 1)) : 1;
  s.files.reserve(nfiles);
  for (std::size_t i = 0; i < nfiles; ++i) {
    FileDesc f;
    f.path = "model-" + std::to_string(100001 + i).substr(1) + "-of-" + std::to_string(100000 + nfiles).substr(1) + ".safetensors";
    if (src.chance(1, 8)) f.path = "ckpt dir/\xc3\xa9t\xc3\xa9 '" + std::to_string(i) + "'.safetensors";
    if (src.chance(1, 4)) { f.has_metadata = true; f.metadata.emplace_back("format", "pt"); }
    s.files.push_back(std::move(f));
  }
  const std::size_t max_layers = std::clamp<std::size_t>(cfg.max_layers, 1, 16);
  const std::size_t nlayers = cfg.fewer_layers ? src.halving(max_layers) : 1 + src.below(max_layers);
  // Room for every layer's tensors, plus a few plain ones and what defects add. (Not the markers:
  // MarkerDesc is large, and a block over 1 KiB makes glibc's malloc consolidate its fast bins.)
  s.layers.reserve(nlayers);
  s.tensors.reserve(8 * nlayers + 4);
  for (std::size_t i = 0; i < nlayers; ++i) {
    const std::string p = b.prefix();
    const std::size_t file = b.random_file();
    if (mx) { b.other_layer(Format::Mxfp8, p, file); continue; }
    if (i == 0 && (h.first_format || h.tensor_marker)) {
      b.force_tensor_marker = h.tensor_marker;
      const Format f = h.first_format.value_or(Format::W4a8);
      if (f == Format::W4a8) b.w4a8_layer(p, file);
      else b.other_layer(f, p, file);
      continue;
    }
    const std::uint64_t pick = src.below(16);
    if (pick < 9) b.w4a8_layer(p, file);
    else {
      static constexpr Format kOther[] = {Format::Fp8,   Format::Int8Rowwise, Format::Int8Tensorwise, Format::W4a4,
                                          Format::Nvfp4, Format::Other,       Format::W4a4};
      b.other_layer(kOther[pick - 9], p, file);
    }
  }
  // Plain tensors without markers (norms and biases of unquantized layers).
  for (std::uint64_t i = 0, e = src.below(3); i < e; ++i) {
    const std::string p = b.prefix();
    const std::size_t file = b.random_file();  // one choice a statement: argument order is unspecified
    const std::uint64_t len = src.below(5);
    b.add(p, ".weight", src.flip() ? Dtype::BF16 : Dtype::F32, {len}, file);
  }
  if (src.chance(1, 8)) b.equal_duplicate();
  // Global quant_format: exactly {"mxfp8"} triggers the shortcut; other values just sit there.
  if (mx) {
    static constexpr const char* kMx[] = {"mxfp8", "MXFP8", "MxFp8"};
    const std::size_t i = src.below(s.files.size());
    s.files[i].has_metadata = true;
    s.files[i].metadata.emplace_back("quant_format", kMx[src.below(3)]);
    if (s.files.size() > 1 && src.flip()) {  // an empty quant_format elsewhere is ignored
      FileDesc& g = s.files[(i + 1 + src.below(s.files.size() - 1)) % s.files.size()];
      g.has_metadata = true;
      g.metadata.emplace_back("quant_format", "");
    }
  } else if (src.chance(1, 6)) {
    static constexpr const char* kOther[] = {"asym_w4a8_int8", "", "comfy"};
    FileDesc& f = s.files[src.below(s.files.size())];
    f.has_metadata = true;
    f.metadata.emplace_back("quant_format", kOther[src.below(3)]);
  }
  for (auto& f : s.files)
    if (f.has_metadata && src.chance(1, 6)) f.force_quant_meta = true;
  return s;
}

}  // namespace

// Equal markers of one prefix whose key holds NaN inside a list: equal under both merge rules (Python
// compares container items by identity first, and json returns one NaN object).
void nested_nan_duplicate(Scenario& s, ChoiceSource& src) {
  std::vector<std::size_t> ms;
  for (std::size_t i = 0; i < s.markers.size(); ++i)
    if (edit::editable(s.markers[i]) && !s.markers[i].doc.value.get("calib")) ms.push_back(i);
  if (ms.empty()) return;
  const std::string prefix = s.markers[ms[src.below(ms.size())]].prefix;
  const JsonDoc nan = jfloat("NaN", std::numeric_limits<double>::quiet_NaN());
  const JsonDoc calib = src.flip() ? jarr({nan, jint(1)}) : jobj({{"w", nan}});
  Scenario before = s;
  if (!edit::set_field(s, prefix, "calib", calib)) return;
  MarkerDesc c = *edit::markers_of(s, prefix).front();
  std::reverse(c.fields.begin(), c.fields.end());
  c.doc = jobj(c.fields);
  c.place = src.flip() ? Place::Tensor : Place::Metadata;
  c.file = src.below(s.files.size());
  c.encoding = Encoding::Utf8;
  c.dtype = Dtype::U8;
  if (!edit::place_free(s, c)) { s = std::move(before); return; }
  s.markers.push_back(std::move(c));
}

// A marker nested to exactly `limit` where it is read, or up to two levels less (json.loads accepts
// it), or with `past` up to one level more: an extra member holding a chain of arrays or objects.
// Only a prefix's single marker (two such markers would be compared near the limit: validator.md,
// not modelled). @return the chain went past the limit.
bool nest_to_limit(Scenario& s, ChoiceSource& src, int limit = json::kPythonMaxDepth, bool past = false) {
  std::vector<std::size_t> ms;
  for (std::size_t i = 0; i < s.markers.size(); ++i)
    if (edit::editable(s.markers[i]) && edit::markers_of(s, s.markers[i].prefix).size() == 1) ms.push_back(i);
  if (ms.empty()) return false;
  MarkerDesc& m = s.markers[ms[src.below(ms.size())]];
  const int above = m.place == Place::Metadata ? 2 : 0;  // the _quantization_metadata root and "layers"
  const int total = limit + (past ? 1 : 0) - above - static_cast<int>(src.below(3));
  const bool over = total + above > limit;
  JsonDoc inner = src.flip() ? jint(0) : jstr(any_text(src, 2));
  // The marker object is one level; the chain's innermost container holds the scalar.
  JsonDoc chain = jnest(std::move(inner), total - 1, src.flip());
  // edit::set_field's result (the member replaced in place, or appended), with the chain moved into
  // the document rather than copied into the fields and again into the document: the marker is not
  // edited after finish(), so its fields are dropped (a 990-level value costs a few thousand
  // allocations a copy, and fuzzing keeps mutating inputs that carry one).
  std::vector<std::pair<std::string, JsonDoc>> f = std::move(m.fields);
  auto it = std::find_if(f.begin(), f.end(), [](const auto& kv) { return kv.first == "nest"; });
  if (it != f.end()) it->second = std::move(chain);
  else f.emplace_back("nest", std::move(chain));
  m.doc = jobj(std::move(f));
  m.fields.clear();
  return over;
}

// Respelling choices for markers and _quantization_metadata texts (json_spell.hpp): about half of
// them get a tape of up to 48 choices (shrinking empties it: the text as built).
void draw_spellings(Scenario& s, ChoiceSource& src) {
  auto tape = [&](std::vector<std::uint8_t>& t) {
    if (!src.flip()) return;
    t.resize(1 + src.below(48));
    for (auto& b : t) b = static_cast<std::uint8_t>(src.below(256));
  };
  for (auto& m : s.markers) tape(m.spelling);
  for (auto& f : s.files) tape(f.meta_spelling);
}

// The interpreter predicted. Choice 0 (also an exhausted stream) is the default one, so recorded
// inputs that ran out of choices before this one decode as before. Documents nested near or past
// the default's limit may then be read (3.12 reads 1,497 levels, 3.13 9,998): the oracle judges
// them by the drawn interpreter's limit.
void draw_python(Scenario& s, ChoiceSource& src) {
  constexpr auto kCount = static_cast<std::uint64_t>(py::Version::kCount);
  const std::uint64_t k = src.below(kCount);
  if (k == 0) return;
  // 1, 2, ...: the other versions in order, the default skipped.
  const auto def = static_cast<std::uint64_t>(py::kDefaultVersion);
  s.options.python = static_cast<py::Version>(k <= def ? k - 1 : k);
}

// Something after the digits of each group_size string int() rejects for its length (a defect put
// it there; every marker of the prefix gets the same string, as the defect gave them). Which error
// Python raises then depends on the interpreter (DigitTail).
void draw_digit_tails(Scenario& s, ChoiceSource& src) {
  std::vector<std::string> prefixes;
  for (const auto& m : s.markers)
    if (!m.group_size.ok && m.group_size.error == ErrorKind::PyIntMaxStrDigits && m.group_size.tail == DigitTail::None &&
        std::find(prefixes.begin(), prefixes.end(), m.prefix) == prefixes.end())
      prefixes.push_back(m.prefix);
  for (const std::string& p : prefixes) {
    const std::vector<edit::MarkerRef> ms = edit::markers_of(s, p);
    const json::Value* g0 = ms.front()->doc.value.get("group_size");
    if (g0 == nullptr || !g0->is_string()) continue;
    const std::string digits = g0->text;  // (set_field below replaces the documents)
    const bool same = std::all_of(ms.begin(), ms.end(), [&](const edit::MarkerRef& m) {
      const json::Value* g = m->doc.value.get("group_size");
      return !m->fields.empty() && g != nullptr && g->is_string() && g->text == digits;  // (set_field's rule)
    });
    if (!same) continue;  // a later defect changed or replaced one of them: leave the prefix as it is
    const std::optional<IntField> f = with_digit_tail(digits, src);
    if (f && edit::set_field(s, p, "group_size", f->doc))
      for (const edit::MarkerRef& m : ms) m->group_size = f->outcome;
  }
}

// Choices made after everything else (so recorded inputs of earlier versions decode as before):
// profile-neutral extras of valid scenarios, the sglang release predicted (0: the oldest), then
// nesting at the recursion limit, the spellings, the interpreter and the digit strings' tails.
void finish(Scenario& s, ChoiceSource& src, bool valid, const GenConfig& cfg) {
  if (valid && src.below(4) == 3) nested_nan_duplicate(s, src);
  s.options.sglang = static_cast<upstream::Sglang>(src.below(upstream::kSglangCount));
  // One in 16, at the top of the range: an exhausted stream (choices 0) must not nest. At 0, as it
  // was, every fuzz input shorter than its choices and every shrunk case carried a 1,000-level
  // chain: 28 % of a grown corpus, three times the cost of the rest each.
  if (cfg.recursion_boundary && src.below(16) == 15) nest_to_limit(s, src);
  draw_spellings(s, src);
  if (cfg.python) s.options.python = *cfg.python;
  else if (cfg.vary_python) draw_python(s, src);
  if (cfg.digit_tails) draw_digit_tails(s, src);
  // One in 16 again, under another interpreter: a chain at its own limit (3.12's 1,497 levels,
  // 3.13's 9,998), one past it or just under.
  // Past it only where a scenario has several defects already (it is one more: MarkerTooDeep).
  if (cfg.recursion_boundary && s.options.python != py::kDefaultVersion && src.below(16) == 15) {
    const bool past = !valid && s.defects.size() >= 2;
    if (nest_to_limit(s, src, json_max_depth(s.options.python), past)) s.defects.push_back(Defect::MarkerTooDeep);
  }
}

Scenario generate_valid(ChoiceSource& src, const GenConfig& cfg) {
  Scenario s = build_valid(src, cfg, Hint{});
  finish(s, src, true, cfg);
  return s;
}

Scenario generate(ChoiceSource& src, const GenConfig& cfg) {
  const std::uint64_t want = cfg.min_defects + src.below(cfg.max_defects - cfg.min_defects + 1);
  if (want == 0) return generate_valid(src, cfg);
  // The first defect class is drawn uniformly, and the scenario shaped so that it applies.
  std::vector<Defect> allowed;
  for (std::size_t i = 0; i < kDefectCount; ++i) {
    const auto d = static_cast<Defect>(i);
    if ((is_strict_defect(d) && !cfg.allow_strict) || (is_container_defect(d) && !cfg.allow_container)) continue;
    allowed.push_back(d);
  }
  const Defect first = allowed[src.below(allowed.size())];
  Scenario s = build_valid(src, cfg, hint_for(first));
  for (int attempts = 0; s.defects.size() < want && attempts < 64; ++attempts) {
    const Defect d = attempts == 0 ? first : static_cast<Defect>(src.below(kDefectCount));
    if (is_strict_defect(d) && !s.options.strict) continue;
    if (is_container_defect(d) && !cfg.allow_container) continue;
    Scenario before = s;  // injectors may stop half way; a failed one must leave no trace
    if (inject(s, d, src, cfg)) s.defects.push_back(d);
    else s = std::move(before);
  }
  finish(s, src, false, cfg);
  return s;
}

}  // namespace w4a8::gen
