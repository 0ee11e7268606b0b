// Injectors for container defects (byte-level edits applied at serialization) and for the
// collection stage (metadata, markers, MXFP8, missing markers and tensors).
#include <algorithm>
#include <limits>

#include "gen/defect_edit.hpp"
#include "gen/marker_fields.hpp"
#include "gen/repr_oracle.hpp"
#include "json/parse.hpp"

namespace w4a8::gen::edit {

bool inject_container(Scenario& s, Defect d, ChoiceSource& src) {
  const std::size_t f = free_file(s, src);
  if (f == SIZE_MAX) return false;
  ContainerEdit e{d, 0, {}};
  switch (d) {
    case Defect::HeaderTooSmall: e.param = src.below(8); break;
    case Defect::HeaderTooLarge: e.param = src.range(100'000'001, UINT64_MAX); break;
    case Defect::HeaderLengthPastEnd: e.param = src.below(src.flip() ? 4 : 1'000'000); break;
    default: e.param = src.below(64); break;
  }
  s.files[f].container = e;
  return true;
}

bool inject_collection(Scenario& s, Defect d, ChoiceSource& src, const GenConfig& cfg) {
  switch (d) {
    case Defect::QuantMetaInvalidJson: case Defect::QuantMetaNotObject: case Defect::QuantMetaNoLayers:
    case Defect::QuantMetaHugeInt: {
      FileDesc& f = s.files[src.below(s.files.size())];
      if (f.quant_meta_override) return false;
      JsonDoc doc;
      if (d == Defect::QuantMetaInvalidJson) {
        static constexpr std::string_view kBad[] = {"", "{", "{\"layers\": {}} x", "\xef\xbb\xbf{\"layers\": {}}",
                                                    "{\"layers\": {},}", "[1, 2", "{'layers': {}}",
                                                    std::string_view("{\"layers\": {}}\0", 15), "nan", "{\"a\": 01}",
                                                    "{\"layers\": {\"a\": -}}", "\"\\ud800"};
        doc = jraw_invalid(std::string(kBad[src.below(std::size(kBad))]));
      } else if (d == Defect::QuantMetaNotObject) {
        doc = non_object(src);
      } else if (d == Defect::QuantMetaNoLayers) {
        switch (src.below(5)) {
          case 0: doc = jobj({}); break;
          case 1: doc = jobj({{"layers", jarr({})}}); break;
          case 2: doc = jobj({{"format_version", jstr("1.0")}, {"layers", jnull()}}); break;
          case 3: doc = jobj({{"Layers", jobj({})}}); break;
          default: doc = jobj({{"layers", jobj({})}, {"layers", jstr("x")}}); break;  // last duplicate wins
        }
      } else {
        doc = jobj({{"layers", jobj({})}, {"n", huge_int_doc(src)}});
      }
      f.quant_meta_override = std::move(doc);
      f.has_metadata = true;
      return true;
    }
    case Defect::MetaMarkerNotObject: {
      MarkerDesc m;
      m.prefix = "extra." + std::to_string(s.markers.size());
      m.place = Place::Metadata;
      m.file = src.below(s.files.size());
      m.doc = non_object(src);
      s.markers.push_back(std::move(m));
      return true;
    }
    case Defect::ConflictingMarkers: {
      // A copy with one shared key's value changed: a conflict under either merge rule.
      std::vector<std::size_t> objs;
      for (std::size_t i = 0; i < s.markers.size(); ++i)
        if (editable(s.markers[i]) && !s.markers[i].fields.empty()) objs.push_back(i);
      if (objs.empty()) return false;
      MarkerDesc m = s.markers[objs[src.below(objs.size())]];
      auto& [key, value] = m.fields[src.below(m.fields.size())];
      const std::string conflict = "_conflict_" + std::to_string(s.markers.size());
      value = jstr(conflict);
      // What int() makes of it, for when the conflict never comes: a later defect may replace the
      // marker it was copied from (MarkerTooDeep, which 3.12+ may read), and the copy's value is read.
      const IntOutcome literal{false, {}, ErrorKind::PyIntInvalidLiteral, oracle_py::repr_str(conflict)};
      if (key == "group_size") m.group_size = literal;
      if (key == "convrot_groupsize") m.convrot_groupsize = literal;
      m.doc = jobj(m.fields);
      m.place = src.flip() ? Place::Tensor : Place::Metadata;
      m.file = src.below(s.files.size());
      m.encoding = Encoding::Utf8;
      m.dtype = Dtype::U8;
      if (!place_free(s, m)) return false;
      s.markers.push_back(std::move(m));
      return true;
    }
    case Defect::MarkerInvalidJson: {
      const MarkerRef m = tensor_marker(s, src);
      if (!m) return false;
      m->fields.clear();
      // Appending to or truncating a too-deep document still fails on depth first: replace it.
      const std::uint64_t how = loads_outcome(m->doc, 0) == JsonDoc::Outcome::Ok ? src.below(4) : (src.flip() ? 0 : 3);
      switch (how) {
        case 0: {  // undecodable bytes
          static constexpr std::string_view kRaw[] = {"{\"format\": \"\xff\"}", "\xff\xfe\x7b", "{\x80}", "\xc3"};
          const std::string_view r = kRaw[src.below(std::size(kRaw))];
          m->raw.assign(r.begin(), r.end());
          m->undecodable = true;
          m->doc = jraw_invalid(std::string(r));
          return true;
        }
        case 1: m->doc = jraw_invalid(m->doc.text + std::string(1, '\0')); return true;
        case 2: {  // drop the closing bracket (text without one: a lone "{")
          const std::string& t = m->doc.text;
          const bool closes = !t.empty() && (t.back() == '}' || t.back() == ']');
          m->doc = jraw_invalid(closes ? t.substr(0, t.size() - 1) : "{");
          return true;
        }
        default: {
          static constexpr std::string_view kBad[] = {"", "{,}", "{'a': 1}", "{\"format\": NaN1}", "{\"a\" 1}", "[", "tru", "{\"a\": 1}}"};
          m->doc = jraw_invalid(std::string(kBad[src.below(std::size(kBad))]));
          m->encoding = Encoding::Utf8;
          return true;
        }
      }
    }
    case Defect::MarkerNotObject: {
      const MarkerRef m = tensor_marker(s, src);
      if (!m || m->undecodable) return false;
      m->fields.clear();
      m->doc = non_object(src);
      return true;
    }
    case Defect::MarkerTorchDtype: {
      const MarkerRef m = tensor_marker(s, src);
      if (!m) return false;
      static constexpr Dtype kBad[] = {Dtype::BF16, Dtype::F8_E4M3, Dtype::F8_E5M2, Dtype::F8_E4M3FNUZ, Dtype::F8_E5M2FNUZ, Dtype::F8_E8M0};
      m->dtype = kBad[src.below(std::size(kBad))];
      return true;
    }
    case Defect::MarkerTooDeep: {
      const MarkerRef m = tensor_marker(s, src);
      if (!m || m->undecodable) return false;
      m->fields.clear();
      if (cfg.recursion_boundary && src.flip()) {  // one or two containers past the limit, inside a marker
        // Choices read one statement each: the order of a call's arguments is unspecified (and
        // g++ and clang differ), so two reads in one call would decode differently per compiler.
        const bool objects = src.flip();
        const int depth = json::kPythonMaxDepth + static_cast<int>(src.below(2));
        std::vector<std::pair<std::string, JsonDoc>> f;  // (a braced list would copy the chain)
        f.emplace_back("format", jstr("asym_w4a8_int8"));
        f.emplace_back("nest", jnest(jint(1), depth, objects));
        m->doc = jobj(std::move(f));
        return true;
      }
      // Deeper than every interpreter reads (3.13's limit is 9,998), so no value is built: a chain
      // of values costs an allocation a level in every copy of the scenario.
      const std::size_t depth = 10000 + src.below(3000);
      m->doc = jraw_invalid(std::string(depth, '[') + std::string(depth, ']'), JsonDoc::Outcome::TooDeep);
      return true;
    }
    case Defect::Mxfp8Incompatible: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::Mxfp8});
      if (!L) return false;
      if (cfg.differential_safe)
        for (Defect o : s.defects)
          if (o == Defect::Mxfp8Incompatible) return false;
      TensorRef w = find_tensor(s, L->prefix + ".weight");
      TensorRef sc = find_tensor(s, L->prefix + ".weight_scale");
      if (!w || !sc || w->shape.size() != 2) return false;
      const std::uint64_t rows = w->shape[0], cols = w->shape[1];
      static constexpr int kVariant[] = {0, 1, 2, 2, 2, 3, 4, 5};  // mostly the %32-only case
      switch (kVariant[src.below(std::size(kVariant))]) {
        case 0: return retype(w, src.flip() ? Dtype::I8 : Dtype::U8);
        case 1: return reshape(w, {rows, cols, 1});
        case 2:  // cols % 32 == 16 with the scale upstream would then expect: only the % 32 rule fails
          if (!reshape(w, {rows, cols + 16})) return false;
          sc->shape = {rows, (cols + 16) / 32};
          sc->bytes.clear();
          return fits(sc->dtype, sc->shape);
        case 3: erase_tensor(s, sc); return true;
        case 4: return retype(sc, Dtype::F32);
        default: return reshape(sc, {rows, cols / 32 + 1});
      }
    }
    case Defect::MissingMarker: {
      std::vector<std::string> cands;
      for (const auto& l : s.layers) {
        const TensorRef w = find_tensor(s, l.prefix + ".weight");
        if (l.format != Format::Mxfp8 && w && (w->dtype == Dtype::I8 || w->dtype == Dtype::U8 || w->dtype == Dtype::F8_E4M3))
          cands.push_back(l.prefix);
      }
      if (cands.empty()) return false;
      const bool all = src.chance(1, 3);  // often all of them: upstream prints the first five, sorted
      const std::uint64_t count = all ? cands.size() : 1 + src.below(std::min<std::size_t>(cands.size(), 7));
      for (std::uint64_t i = 0; i < count; ++i) {
        const std::string p = cands[all ? i : src.below(cands.size())];
        std::erase_if(s.markers, [&](const MarkerDesc& m) { return m.prefix == p; });
      }
      return true;
    }
    case Defect::MissingTensor: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::W4a8, Format::Fp8, Format::Int8Rowwise, Format::Int8Tensorwise, Format::W4a4, Format::Nvfp4});
      if (!L) return false;
      std::vector<std::string> req = {".weight"};
      if (L->format == Format::W4a8) req.insert(req.end(), {".weight_s_rel", ".weight_s_channel"});
      else req.push_back(".weight_scale");
      if (L->format == Format::Nvfp4) req.push_back(".weight_scale_2");
      bool removed = false;
      for (const auto& r : req) {
        if (!src.flip() && !(r == req.back() && !removed)) continue;
        const std::string name = L->prefix + r;
        const auto before = s.tensors.size();
        std::erase_if(s.tensors, [&](const TensorDesc& t) { return t.name == name; });
        removed |= s.tensors.size() != before;
      }
      return removed;
    }
    default: return false;
  }
}

}  // namespace w4a8::gen::edit
