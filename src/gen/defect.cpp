// Defect table and injection dispatch; the injectors for layer rules and --strict. Each injector
// breaks exactly one rule on a random eligible target and leaves the rest as generated.
#include "gen/defect.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gen/defect_edit.hpp"
#include "gen/scenario.hpp"

namespace w4a8::gen {
namespace edit {

bool inject_w4a8(Scenario& s, Defect d, ChoiceSource& src) {
  const std::optional<LayerDesc> L = pick_layer(s, src, {Format::W4a8});
  if (!L) return false;
  const std::string& p = L->prefix;
  TensorRef w = find_tensor(s, p + ".weight");
  TensorRef sr = find_tensor(s, p + ".weight_s_rel");
  TensorRef ch = find_tensor(s, p + ".weight_s_channel");
  auto set_gs = [&](const IntField& f) {
    if (!set_field(s, p, "group_size", f.doc)) return false;
    for (const MarkerRef& m : markers_of(s, p)) m->group_size = f.outcome;
    return true;
  };
  switch (d) {
    case Defect::GroupSizeNan:
      // Two markers of the prefix holding NaN conflict under per-key merging (NaN != NaN): one only.
      if (markers_of(s, p).size() > 1) return false;
      return set_gs(bad_int_field(ErrorKind::PyIntFloatNan, src));
    case Defect::GroupSizeInfinity: return set_gs(bad_int_field(ErrorKind::PyIntFloatInfinity, src));
    case Defect::GroupSizeBadLiteral: return set_gs(bad_int_field(ErrorKind::PyIntInvalidLiteral, src));
    case Defect::GroupSizeBadType: return set_gs(bad_int_field(ErrorKind::PyIntBadType, src));
    case Defect::GroupSizeTooManyDigits: return set_gs(bad_int_field(ErrorKind::PyIntMaxStrDigits, src));
    case Defect::GroupSizeTooSmall: return set_gs(small_int_field(src));
    case Defect::W4a8WeightDtype: return w && retype(w, other_dtype(Dtype::I8, src));
    case Defect::W4a8ScaleDtype: return sr && retype(sr, other_dtype(Dtype::F8_E4M3, src));
    case Defect::W4a8ChannelDtype: return ch && retype(ch, other_dtype(Dtype::F32, src));
    default: break;
  }
  if (!w || !sr || !ch || w->shape.size() != 2) return false;
  const std::uint64_t rows = w->shape[0];
  const u128 k = k_of(*w);
  std::string g = "16";
  for (const MarkerRef& m : markers_of(s, p))
    if (m->group_size.ok) g = m->group_size.value;
  const std::uint64_t groups = g[0] == '-' ? 0 : groups_of(k, g);
  const std::uint64_t packed = w->shape[1];
  switch (d) {
    case Defect::W4a8Rank: {
      switch (src.below(4)) {
        case 0: return reshape(w, {rows, packed, 1});
        case 1: return reshape(w, {rows * packed});
        case 2: return reshape(w, {});
        default: return reshape(w, {1, rows, packed});
      }
    }
    case Defect::W4a8SRelRows: return reshape(sr, {rows == 0 || src.flip() ? rows + 1 : rows - 1, groups});
    case Defect::W4a8SRelCols: return reshape(sr, {rows, groups == 0 || src.flip() ? groups + 1 : groups - 1});
    case Defect::W4a8SRelRank: return src.flip() ? reshape(sr, {rows, groups, 1}) : reshape(sr, {groups}) || reshape(sr, {rows});
    case Defect::W4a8ChannelShape:
      switch (src.below(3)) {
        case 0: return reshape(ch, {rows + 1});
        case 1: return reshape(ch, {rows, 1});
        default: return reshape(ch, {});
      }
    case Defect::W4a8Codebook: {
      const TensorRef cb = find_or_add(s, {p + ".weight_codebook", Dtype::F32, {16}, w->file, {}});
      switch (src.below(4)) {
        case 0: return retype(cb, Dtype::F16) || reshape(cb, {15});
        case 1: return reshape(cb, {15});
        case 2: return reshape(cb, {16, 1});
        default: return retype(cb, Dtype::F64) || reshape(cb, {});
      }
    }
    case Defect::W4a8Correction: {
      const TensorRef co = find_or_add(s, {p + ".weight_correction", Dtype::F32, {groups, rows}, w->file, {}});
      co->dtype = Dtype::F32;
      co->shape = {groups, rows};
      co->bytes.clear();
      switch (src.below(3)) {
        case 0: return retype(co, Dtype::F16);
        case 1: return reshape(co, {groups + 1, rows});
        default: return reshape(co, {groups, rows + 1});
      }
    }
    default: return false;
  }
}

bool inject_other(Scenario& s, Defect d, ChoiceSource& src) {
  switch (d) {
    case Defect::W4a4Dtypes: case Defect::W4a4Shapes: case Defect::W4a4ConvrotGroupsize: case Defect::W4a4InputSize: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::W4a4});
      if (!L) return false;
      TensorRef w = find_tensor(s, L->prefix + ".weight");
      TensorRef sc = find_tensor(s, L->prefix + ".weight_scale");
      if (!w || !sc || w->shape.size() != 2) return false;
      const std::uint64_t rows = w->shape[0];
      if (d == Defect::W4a4Dtypes) return src.flip() ? retype(w, other_dtype(Dtype::I8, src)) : retype(sc, other_dtype(Dtype::F32, src));
      if (d == Defect::W4a4Shapes) return src.flip() ? reshape(w, {rows, w->shape[1], 1}) : reshape(sc, {rows + 1}) || reshape(sc, {rows, 1});
      if (d == Defect::W4a4InputSize) return reshape(w, {rows, w->shape[1] + 8 * (1 + src.below(3))});
      static constexpr long long kC[] = {4, 32, 128, 512, 0, -16, 1024, 1};
      const IntField f = int_field(kC[src.below(std::size(kC))], src);
      if (!set_field(s, L->prefix, "convrot_groupsize", f.doc)) return false;
      for (const MarkerRef& m : markers_of(s, L->prefix)) m->convrot_groupsize = f.outcome;
      return true;
    }
    case Defect::Nvfp4Dtypes: case Defect::Nvfp4Scale2: case Defect::Nvfp4Rank: case Defect::Nvfp4Shapes:
    case Defect::Nvfp4PreQuantScale: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::Nvfp4});
      if (!L) return false;
      TensorRef w = find_tensor(s, L->prefix + ".weight");
      TensorRef sc = find_tensor(s, L->prefix + ".weight_scale");
      TensorRef s2 = find_tensor(s, L->prefix + ".weight_scale_2");
      if (!w || !sc || !s2 || w->shape.size() != 2) return false;
      const std::uint64_t rows = w->shape[0], k = 2 * w->shape[1];
      switch (d) {
        case Defect::Nvfp4Dtypes: return src.flip() ? retype(w, other_dtype(Dtype::U8, src)) : retype(sc, other_dtype(Dtype::F8_E4M3, src));
        case Defect::Nvfp4Scale2:
          switch (src.below(4)) {
            case 0: return retype(s2, Dtype::F16) || retype(s2, Dtype::F64);
            case 1: return reshape(s2, {2});
            case 2: return reshape(s2, {1, 1});
            default: return reshape(s2, {0});
          }
        case Defect::Nvfp4Rank: return src.flip() ? reshape(w, {rows * w->shape[1]}) : reshape(w, {rows, w->shape[1], 1});
        case Defect::Nvfp4Shapes:
          return src.flip() ? reshape(sc, {rows, k / 16 + 1}) : reshape(w, {rows, w->shape[1] + 1 + src.below(7)});
        default: {
          const TensorRef pq = find_or_add(s, {L->prefix + ".pre_quant_scale", Dtype::F32, {k}, w->file, {}});
          pq->dtype = Dtype::F32;
          pq->shape = {k};
          pq->bytes.clear();
          switch (src.below(3)) {
            case 0: return retype(pq, src.flip() ? Dtype::F64 : Dtype::I8);
            case 1: return reshape(pq, {k + 1});
            default: return reshape(pq, {1, k});
          }
        }
      }
    }
    case Defect::TensorwiseRank: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::Int8Tensorwise});
      TensorRef w = L ? find_tensor(s, L->prefix + ".weight") : TensorRef{};
      if (!w || w->shape.size() != 2) return false;
      return src.flip() ? reshape(w, {w->shape[0] * w->shape[1]}) : reshape(w, {w->shape[0], w->shape[1], 1});
    }
    case Defect::Int8Dtypes: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::Int8Tensorwise, Format::Int8Rowwise});
      if (!L) return false;
      TensorRef w = find_tensor(s, L->prefix + ".weight");
      TensorRef sc = find_tensor(s, L->prefix + ".weight_scale");
      return src.flip() ? retype(w, other_dtype(Dtype::I8, src)) : retype(sc, other_dtype(Dtype::F32, src));
    }
    case Defect::Int8Shapes: {
      const std::optional<LayerDesc> L = pick_layer(s, src, {Format::Int8Rowwise});
      if (!L) return false;
      TensorRef w = find_tensor(s, L->prefix + ".weight");
      TensorRef sc = find_tensor(s, L->prefix + ".weight_scale");
      if (!w || !sc || w->shape.size() != 2) return false;
      const std::uint64_t rows = w->shape[0];
      switch (src.below(3)) {
        case 0: return reshape(sc, {rows});
        case 1: return reshape(sc, {rows, 2});
        default: return reshape(w, {rows, w->shape[1], 1});
      }
    }
    default: return false;
  }
}

bool inject_strict(Scenario& s, Defect d, ChoiceSource& src) {
  const std::optional<LayerDesc> L = pick_layer(s, src, {Format::W4a8});
  if (!L) return false;
  const std::string& p = L->prefix;
  TensorRef w = find_tensor(s, p + ".weight");
  TensorRef sr = find_tensor(s, p + ".weight_s_rel");
  TensorRef ch = find_tensor(s, p + ".weight_s_channel");
  if (!w || !sr || !ch || w->shape.size() != 2) return false;
  std::string g = "16";
  for (const MarkerRef& m : markers_of(s, p))
    if (m->group_size.ok) g = m->group_size.value;
  if (g[0] == '-') return false;
  const std::uint64_t rows = w->shape[0];
  const u128 k = k_of(*w);
  // Re-lays the layer out for new N/K/G, keeping upstream's shape rules satisfied.
  auto relayout = [&](std::uint64_t n, u128 kk, const std::string& gg) {
    const std::uint64_t groups = groups_of(kk, gg);
    if (!fits(Dtype::I8, {n, static_cast<std::uint64_t>(kk / 2)}) || !fits(Dtype::F8_E4M3, {n, groups})) return false;
    w->shape = {n, static_cast<std::uint64_t>(kk / 2)};
    sr->shape = {n, groups};
    ch->shape = {n};
    w->bytes.clear(); sr->bytes.clear(); ch->bytes.clear();
    if (const TensorRef co = find_tensor(s, p + ".weight_correction")) { co->shape = {groups, n}; co->bytes.clear(); }
    if (const TensorRef b = find_tensor(s, p + ".bias")) { b->shape = {n}; b->bytes.clear(); }
    return true;
  };
  auto set_int = [&](const char* key, const IntField& f, bool is_group) {
    if (!set_field(s, p, key, f.doc)) return false;
    for (const MarkerRef& m : markers_of(s, p)) (is_group ? m->group_size : m->convrot_groupsize) = f.outcome;
    return true;
  };
  switch (d) {
    case Defect::StrictZeroSized: return src.flip() ? relayout(0, k, g) : relayout(rows, 0, g);
    case Defect::StrictK16: return k % 16 == 0 && relayout(rows, k + 2 * (1 + src.below(7)), g);
    case Defect::StrictGroupShape: {
      static constexpr long long kG[] = {5, 12, 24, 40, 100, 6, 7, 20};
      const IntField f = int_field(kG[src.below(std::size(kG))], src);
      return set_int("group_size", f, true) && relayout(rows, k, f.outcome.value);
    }
    case Defect::StrictKGroup: {
      if (k == 0 || k % 16) return false;
      const long long g2 = static_cast<long long>(k) * (src.flip() ? 2 : 3);  // a multiple of 16 above K
      IntField f = src.chance(1, 4) ? huge_int_field(src) : int_field(g2, src);
      if (f.outcome.value.size() > 1 && f.outcome.value.back() != '0' && f.outcome.value.back() != '6') f = int_field(g2, src);
      return set_int("group_size", f, true) && relayout(rows, k, f.outcome.value);
    }
    case Defect::StrictConvrot: {
      JsonDoc v;
      // The text is json.dumps of the value (the message prints it; the marker may spell it otherwise).
      switch (src.below(13)) {
        case 0: v = jbool(false); break;
        case 1: v = jint(0); break;
        case 2: v = jint(1); break;
        case 3: v = jstr("true"); break;
        case 4: v = jnull(); break;
        case 5: v = jfloat("1.0", 1.0); break;
        case 6: v = jarr({}); break;
        case 7: v = jfloat("-0.0", -0.0); break;
        case 8: v = jfloat("0.0", 0.0); break;
        case 9: v = jfloat("1e+16", 1e16); break;
        case 10: v = jfloat("1e-05", 1e-05); break;
        case 11: v = jfloat("10.0", 10.0); break;
        default: v = jobj({}); break;
      }
      if (!set_field(s, p, "convrot", v)) return false;
      for (const MarkerRef& m : markers_of(s, p)) m->convrot = v;
      return true;
    }
    case Defect::StrictConvrotGroupsize: {
      static constexpr long long kR[] = {8, 32, 2, 1, 0, -4, 128, 12, 48, 3};
      return set_int("convrot_groupsize", int_field(kR[src.below(std::size(kR))], src), false);
    }
    case Defect::StrictKConvrot: {
      if (k == 0) return false;
      long long r = 4;
      while (k % static_cast<u128>(r) == 0 && r < (1LL << 40)) r *= 4;
      if (k % static_cast<u128>(r) == 0) return false;
      return set_int("convrot_groupsize", int_field(r, src), false);
    }
    case Defect::StrictBias: {
      const TensorRef b = find_or_add(s, {p + ".bias", Dtype::F32, {rows}, w->file, {}});
      b->dtype = Dtype::F32;
      b->shape = {rows};
      b->bytes.clear();
      switch (src.below(4)) {
        case 0: return retype(b, src.flip() ? Dtype::I8 : Dtype::F64);
        case 1: return reshape(b, {rows + 1});
        case 2: return reshape(b, {1, rows});
        default: return reshape(b, {});
      }
    }
    case Defect::StrictNanScale: {
      const std::uint64_t n = *tensor_bytes(sr->dtype, sr->shape);
      if (n == 0 || sr->dtype != Dtype::F8_E4M3) return false;
      sr->bytes.resize(n);
      sr->bytes[src.below(n)] = src.flip() ? 0x7F : 0xFF;
      return true;
    }
    case Defect::StrictChannelScale: {
      if (ch->dtype != Dtype::F32 || ch->shape.size() != 1 || ch->shape[0] == 0) return false;
      const float bad = bad_float(src, true);  // before the index: one choice a statement
      poke_f32(*ch, src.below(ch->shape[0]), bad);
      return true;
    }
    case Defect::StrictCodebook: {
      const TensorRef cb = find_or_add(s, {p + ".weight_codebook", Dtype::F32, {16}, w->file, {}});
      if (cb->dtype != Dtype::F32 || cb->shape != std::vector<std::uint64_t>{16}) return false;
      const float bad = bad_float(src, false);  // before the index: one choice a statement
      poke_f32(*cb, src.below(16), bad);
      return true;
    }
    case Defect::StrictCorrection: {
      const std::uint64_t groups = groups_of(k, g);
      if (groups == 0 || rows == 0 || !fits(Dtype::F32, {groups, rows})) return false;
      const TensorRef co = find_or_add(s, {p + ".weight_correction", Dtype::F32, {groups, rows}, w->file, {}});
      if (co->dtype != Dtype::F32 || co->shape != std::vector<std::uint64_t>{groups, rows}) return false;
      const float bad = bad_float(src, false);  // before the index: one choice a statement
      poke_f32(*co, src.below(groups * rows), bad);
      return true;
    }
    default: return false;
  }
}

}  // namespace edit

bool inject(Scenario& s, Defect d, ChoiceSource& src, const GenConfig& cfg) {
  using namespace edit;
  switch (defect_info(d).family) {
    case DefectFamily::Container: return inject_container(s, d, src);
    case DefectFamily::Collection: return inject_collection(s, d, src, cfg);
    case DefectFamily::W4a8: return inject_w4a8(s, d, src);
    case DefectFamily::Other: return inject_other(s, d, src);
    case DefectFamily::Strict: return s.options.strict && inject_strict(s, d, src);
    case DefectFamily::Merge: return inject_merge(s, d, src);
  }
  return false;
}

}  // namespace w4a8::gen
