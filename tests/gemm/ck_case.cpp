#include "ck_case.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <sstream>
#include <string_view>

#include "gemm/operands.hpp"
#include "gemm/reference.hpp"
#include "gemm/tensor_io.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::gemm::ck {
namespace {

Error bad(const std::string& what) { return make_error(ErrorKind::UsageError, {what}); }

const std::string* meta(const st::File& f, const std::string& key) { return f.header().meta(key); }

Result<std::int64_t> meta_int(const st::File& f, const std::string& key) {
  const std::string* v = meta(f, key);
  if (!v) return bad(f.path() + ": no metadata " + key);
  return std::int64_t(std::strtoll(v->c_str(), nullptr, 10));
}

template <class T>
Result<std::vector<T>> read_as(const st::File& f, const std::string& name, st::Dtype want) {
  const st::TensorInfo* t = f.header().find(name);
  if (!t) return bad(f.path() + ": no tensor " + name);
  if (t->dtype != want) return bad(f.path() + ": " + name + " has an unexpected dtype");
  const auto b = f.data(*t);
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

Result<std::vector<float>> read_float(const st::File& f, const std::string& name) {
  const st::TensorInfo* t = f.header().find(name);
  if (!t) return bad(f.path() + ": no tensor " + name);
  return read_floats(f, *t, name);
}

// Text joined in one buffer (clang-tidy: no temporary per '+').
std::string cat(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view x : parts) out += x;
  return out;
}

bool same_float(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

bool same_result(const GemmResult& a, const GemmResult& b) {
  return a.x_q == b.x_q && same_bits(a.x_scale, b.x_scale) && a.acc == b.acc && same_bits(a.w_dequant, b.w_dequant) &&
         same_bits(a.out, b.out);
}

double rel_l2(const std::vector<float>& got, const std::vector<float>& want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = double(got[i]) - double(want[i]);
    num += d * d;
    den += double(want[i]) * double(want[i]);
  }
  if (got.size() != want.size()) return INFINITY;
  return den == 0 ? (num == 0 ? 0.0 : INFINITY) : std::sqrt(num / den);
}

// The exactly rotated row in float64 (butterfly stages in double: exact to ~1e-16 relative).
std::vector<double> rotate_exact(const float* x, std::uint64_t k, std::int64_t r) {
  std::vector<double> v(x, x + k);
  for (std::uint64_t b0 = 0; b0 < k; b0 += std::uint64_t(r)) {
    double* b = v.data() + b0;
    for (std::int64_t s = 1; s < r; s *= 4)
      for (std::int64_t base = 0; base < r; base += 4 * s)
        for (std::int64_t o = 0; o < s; ++o) {
          double &a0 = b[base + o], &a1 = b[base + o + s], &a2 = b[base + o + 2 * s], &a3 = b[base + o + 3 * s];
          const double y0 = (a0 + a1 + a2 - a3) * 0.5, y1 = (a0 + a1 - a2 + a3) * 0.5;
          const double y2 = (a0 - a1 + a2 + a3) * 0.5, y3 = (-a0 + a1 + a2 + a3) * 0.5;
          a0 = y0, a1 = y1, a2 = y2, a3 = y3;
        }
  }
  return v;
}

// Distance of v to the nearest bf16 rounding midpoint, in bf16 ulps of v.
double bf16_tie_distance(double v) {
  const float f = float(v);
  const std::uint32_t u = f32_bits(f) & 0xFFFF0000u;
  const double lo = double(f32_from_bits(u)), hi = double(f32_from_bits(u + 0x10000u));
  const double ulp = std::fabs(hi - lo);
  if (!(ulp > 0) || !std::isfinite(ulp)) return 1.0;
  return std::fabs(std::fabs(v - (lo + hi) / 2)) / ulp;
}

std::string where(const std::string& file, std::size_t run) {
  return std::filesystem::path(file).filename().string() + " run" + std::to_string(run);
}

}  // namespace

upstream::ComfyKitchen profile_for_version(const std::string& version) {
  return comfy_kitchen_for_release(version).value_or(upstream::kLatestComfyKitchen);
}

Status compare_case_file(const std::string& path, const CompareOptions& opt, Stats& s) {
  auto file = st::File::open(path);
  if (!file.ok()) return std::move(file).error();
  const st::File& f = *file;
  auto g = meta_int(f, "group_size");
  W4A8_TRY(g);
  auto r = meta_int(f, "convrot_groupsize");
  W4A8_TRY(r);
  auto runs = meta_int(f, "runs");
  W4A8_TRY(runs);
  if (const std::string* v = meta(f, "comfy_kitchen")) s.upstream_version = *v;
  auto layer = load_layer(f, "layer", *g, *r);
  W4A8_TRY(layer);
  const Layer& l = *layer;
  GemmOptions gopt;
  gopt.policy = ActPolicy::Eager;
  gopt.comfy_kitchen = opt.profile;
  gopt.threads = opt.threads;
  std::optional<PreparedLayer> prepared;
  if (opt.all_impls) {
    auto p = prepare_layer(l, gopt);
    if (!p.ok()) {
      s.problems.push_back(path + ": prepare_layer: " + p.error().message);
      return Ok{};
    }
    prepared = std::move(*p);
  }
  auto want_wq = read_as<std::int8_t>(f, "expect.w_q", st::Dtype::I8);
  W4A8_TRY(want_wq);
  ++s.layers;
  const std::uint64_t n = l.N(), k = l.K();
  bool wq_checked = false;
  for (std::int64_t run = 0; run < *runs; ++run) {
    const std::string p = "run" + std::to_string(run) + ".";
    const std::string* act = meta(f, p + "act");
    if (!act) return bad(cat({path, ": no metadata ", p, "act"}));
    if (*act != "f32" && *act != "bf16" && *act != "f16") return bad(cat({path, ": ", p, "act is not f32, bf16 or f16"}));
    const int di = *act == "bf16" ? 1 : (*act == "f16" ? 2 : 0);
    DtypeStats& d = s.dt[std::size_t(di)];
    const FloatDtype act_dtype = di == 1 ? FloatDtype::BF16 : (di == 2 ? FloatDtype::F16 : FloatDtype::F32);
    FloatDtype out_dtype = act_dtype;
    if (const std::string* od = meta(f, p + "out_dtype")) {
      if (*od == "f32") out_dtype = FloatDtype::F32;
      else if (*od == "bf16") out_dtype = FloatDtype::BF16;
      else if (*od == "f16") out_dtype = FloatDtype::F16;
      else return bad(cat({path, ": ", p, "out_dtype is not f32, bf16 or f16"}));
    }
    const std::string* exact_meta = meta(f, p + "exact");
    const bool exact = exact_meta && *exact_meta == "1";
    const st::TensorInfo* in = f.header().find(p + "input");
    if (!in || in->shape.size() != 2) return bad(cat({path, ": ", p, "input missing or not 2-D"}));
    Activations x;
    x.dtype = act_dtype;
    x.shape = in->shape;
    auto xv = read_floats(f, *in, "input");
    W4A8_TRY(xv);
    x.values = std::move(*xv);
    gopt.out_dtype = out_dtype;
    ++d.runs;
    auto res = gemm_fast(l, x, gopt);
    if (!res.ok()) {
      s.problems.push_back(where(path, std::size_t(run)) + ": ours refused: " + res.error().message);
      continue;
    }
    if (opt.all_impls) {
      auto lit = gemm_literal(l, x, gopt);
      auto pre = gemm_prepared(*prepared, x, gopt);
      if (!lit.ok() || !pre.ok() || !same_result(*lit, *res) || !same_result(*pre, *res) || lit->w_q != res->w_q ||
          !std::ranges::equal(prepared->w_q(), res->w_q)) {
        ++s.implementations_disagree;
        s.problems.push_back(where(path, std::size_t(run)) + ": literal / fast / prepared differ");
      }
    }
    if (!wq_checked) {
      wq_checked = true;
      s.w_q_elems += want_wq->size();
      std::uint64_t eq = 0;
      for (std::size_t i = 0; i < want_wq->size() && i < res->w_q.size(); ++i) eq += (*want_wq)[i] == res->w_q[i];
      s.w_q_equal += eq;
      if (eq == want_wq->size() && res->w_q.size() == want_wq->size()) ++s.w_q_exact_layers;
      else s.problems.push_back(path + ": w_q differs in " + std::to_string(want_wq->size() - eq) + " elements");
    }
    if (const std::string* e = meta(f, p + "error")) {
      ++d.upstream_failures;
      s.upstream_failures.push_back(where(path, std::size_t(run)) + ": " + *e);
      continue;
    }
    auto want_out = read_float(f, p + "out");
    W4A8_TRY(want_out);
    if (want_out->size() != res->out.size()) return bad(cat({path, ": ", p, "out has the wrong size"}));
    const double err = rel_l2(res->out, *want_out);
    const std::uint64_t m = x.M();
    std::uint64_t nonfinite = 0;
    for (std::size_t i = 0; i < want_out->size(); ++i)
      nonfinite += std::isfinite((*want_out)[i]) && !std::isfinite(res->out[i]);
    if (nonfinite) {
      d.nonfinite_ours += nonfinite;
      s.problems.push_back(where(path, std::size_t(run)) + ": " + std::to_string(nonfinite) +
                           " outputs non-finite where upstream's are finite");
    }
    if (exact) {
      ++d.exact_runs;
      d.exact_elems += want_out->size();
      std::uint64_t eq = 0;
      for (std::size_t i = 0; i < want_out->size(); ++i) eq += same_float(res->out[i], (*want_out)[i]);
      d.exact_equal += eq;
      if (eq != want_out->size())
        s.problems.push_back(where(path, std::size_t(run)) + ": exact run: out differs in " +
                             std::to_string(want_out->size() - eq) + " of " + std::to_string(want_out->size()) +
                             " elements");
    }
    if (res->correction_path) {
      ++d.corr_runs;
      if (err >= d.rel_l2_corr_max) d.rel_l2_corr_max = err, d.worst_corr = where(path, std::size_t(run));
      auto want_wd = read_float(f, p + "w_dequant");
      W4A8_TRY(want_wd);
      d.w_dequant_rel_l2_max = std::max(d.w_dequant_rel_l2_max, rel_l2(res->w_dequant, *want_wd));
      if (exact && !same_bits(res->w_dequant, *want_wd)) {
        ++d.exact_elems;  // counted as one mismatch: the run is not exact
        s.problems.push_back(where(path, std::size_t(run)) + ": exact run: w_dequant differs");
      }
      continue;
    }
    ++d.int_runs;
    auto want_xq = read_as<std::int8_t>(f, p + "x_q", st::Dtype::I8);
    W4A8_TRY(want_xq);
    auto want_scale = read_as<float>(f, p + "x_scale", st::Dtype::F32);
    W4A8_TRY(want_scale);
    auto want_acc = read_as<std::int32_t>(f, p + "acc", st::Dtype::I32);
    W4A8_TRY(want_acc);
    if (want_xq->size() != m * k || want_scale->size() != m || want_acc->size() != m * n)
      return bad(cat({path, ": ", p, " intermediates have the wrong size"}));
    bool run_has_ties = false;
    for (std::uint64_t a = 0; a < m; ++a) {
      // Our epilogue on upstream's integers and scale must give upstream's output bit for bit.
      ++d.epilogue_rows;
      bool epi_eq = true;
      for (std::uint64_t i = 0; i < n && epi_eq; ++i) {
        const float o = finish_output(epilogue((*want_acc)[a * n + i], (*want_scale)[a], l.s_channel[i]), out_dtype,
                                      l.has_bias() ? &l.bias[i] : nullptr);
        epi_eq = same_float(o, (*want_out)[a * n + i]);
      }
      d.epilogue_rows_equal += epi_eq;
      if (!epi_eq) s.problems.push_back(where(path, std::size_t(run)) + ": epilogue on upstream's acc/scale differs");
      const bool scale_eq = same_float(res->x_scale[a], (*want_scale)[a]);
      ++d.scale_rows;
      d.scale_equal += scale_eq;
      const std::vector<double> exact = rotate_exact(x.values.data() + a * k, k, l.convrot_groupsize);
      bool row_eq = true;
      for (std::uint64_t j = 0; j < k; ++j) {
        const std::int8_t ours8 = res->x_q[a * k + j], theirs8 = (*want_xq)[a * k + j];
        const int ours = ours8, theirs = theirs8;
        ++d.x_q_elems;
        if (ours == theirs) {
          ++d.x_q_equal;
          continue;
        }
        row_eq = false;
        if (std::abs(ours - theirs) == 1) ++d.x_q_off_by_one;
        else ++d.x_q_beyond_one;
        // Explained: a different scale, or the exact value at a rounding boundary.
        const double q = exact[j] / double(res->x_scale[a]);
        const double frac = std::fabs(q - std::floor(q) - 0.5);
        const bool q_tie = frac < kTieWindow;
        const bool bf16_tie = di == 1 && bf16_tie_distance(exact[j]) < kTieWindow;  // (no F16 integer runs yet)
        if (!(std::abs(ours - theirs) == 1 && (!scale_eq || q_tie || bf16_tie))) {
          ++d.x_q_unexplained;
          char buf[200];
          std::snprintf(buf, sizeof buf, ": x_q[%llu, %llu] ours %d upstream %d (x_rot %.9g, q %.6f)",
                        (unsigned long long)a, (unsigned long long)j, ours, theirs, exact[j], q);
          s.problems.push_back(where(path, std::size_t(run)) + buf);
        }
      }
      if (!row_eq) {
        // The flips account for the whole acc difference: acc_ours - acc_up == sum dx_q * w_q.
        run_has_ties = true;
        ++d.tie_rows;
        bool ok = true;
        for (std::uint64_t i = 0; i < n && ok; ++i) {
          std::int64_t delta = 0;
          for (std::uint64_t j = 0; j < k; ++j)
            delta += std::int64_t(res->x_q[a * k + j] - (*want_xq)[a * k + j]) * res->w_q[i * k + j];
          ok = std::int64_t(res->acc[a * n + i]) - std::int64_t((*want_acc)[a * n + i]) == delta;
        }
        d.tie_rows_explained += ok;
        if (!ok) s.problems.push_back(where(path, std::size_t(run)) + ": acc difference not explained by the x_q flips");
      }
      if (row_eq) {
        ++d.acc_rows;
        const bool acc_eq = std::equal(res->acc.begin() + long(a * n), res->acc.begin() + long((a + 1) * n),
                                       want_acc->begin() + long(a * n));
        d.acc_equal += acc_eq;
        if (!acc_eq) s.problems.push_back(where(path, std::size_t(run)) + ": acc differs on a row with equal x_q");
        if (scale_eq) {
          ++d.exact_rows;
          const bool out_eq = std::memcmp(res->out.data() + a * n, want_out->data() + a * n, n * 4) == 0;
          d.exact_rows_equal += out_eq;
          if (!out_eq)
            s.problems.push_back(where(path, std::size_t(run)) + ": out not bit-exact on a row with equal x_q and scale");
        }
      }
    }
    if (run_has_ties) {
      ++d.tie_runs;
      d.rel_l2_tie_max = std::max(d.rel_l2_tie_max, err);
    } else if (err >= d.rel_l2_int_max) {
      d.rel_l2_int_max = err, d.worst_int = where(path, std::size_t(run));
    }
  }
  return Ok{};
}

Status compare_operand_file(const std::string& path, const CompareOptions& opt, Stats& s) {
  auto file = st::File::open(path);
  if (!file.ok()) return std::move(file).error();
  const st::File& f = *file;
  auto sets = meta_int(f, "sets");
  W4A8_TRY(sets);
  for (std::int64_t i = 0; i < *sets; ++i) {
    const std::string p = "e" + std::to_string(i);
    auto g = meta_int(f, p + ".group_size");
    W4A8_TRY(g);
    auto r = meta_int(f, p + ".convrot_groupsize");
    W4A8_TRY(r);
    const std::string* expect = meta(f, p + ".expect");
    const std::string* defects = meta(f, p + ".defects");
    if (!expect) return bad(cat({path, ": no metadata ", p, ".expect"}));
    const st::TensorInfo* in = f.header().find(p + ".input");
    if (!in) return bad(cat({path, ": no tensor ", p, ".input"}));
    ++s.op_sets;
    auto layer = load_layer(f, p, *g, *r);
    Status ours = Ok{};
    if (!layer.ok()) ours = layer.error();
    else ours = validate_operands(describe(*layer, in->dtype, in->shape), opt.profile);
    const std::string label = p + " [" + (defects ? *defects : "?") + "]";
    const bool multi = defects && defects->find('+') != std::string::npos;
    s.op_multi += multi;
    const std::uint64_t agree_before = s.op_agree;
    struct CountMulti {  // counts an agreement on a multi-defect set when the scope ends
      Stats& s;
      bool multi;
      std::uint64_t before;
      ~CountMulti() { s.op_multi_agree += multi && s.op_agree > before; }
    } count_multi{s, multi, agree_before};
    auto own_kind = [](ErrorKind k) {
      return k == ErrorKind::OpDtype || k == ErrorKind::OpBiasShape || k == ErrorKind::OpTooLarge;
    };
    const std::size_t colon = expect->find(": ");
    const std::string type = *expect == "ok" ? "" : expect->substr(0, colon);
    const std::string msg = colon == std::string::npos ? "" : expect->substr(colon + 2);
    const std::string ours_text = ours.ok() ? "ok" : std::string(ours.error().type()) + ": " + ours.error().message;
    if (*expect == "ok") {
      if (ours.ok()) ++s.op_agree;
      else if (own_kind(ours.error().kind)) ++s.op_ours_only;
      else {
        ++s.op_mismatch;
        s.problems.push_back(cat({label, ": upstream ok, ours ", ours_text}));
      }
      continue;
    }
    if (type == "ValueError") {
      if (!ours.ok() && ours.error().type() == "ValueError" && ours.error().message == msg) ++s.op_agree;
      else {
        ++s.op_mismatch;
        s.problems.push_back(cat({label, ": upstream ", *expect, " | ours ", ours_text}));
      }
      continue;
    }
    if (type == "ZeroDivisionError" || type == "IndexError") {  // ours: UsageError naming it
      const std::string tail = "upstream raises " + *expect;
      if (!ours.ok() && ours.error().kind == ErrorKind::UsageError && ours.error().message.size() >= tail.size() &&
          ours.error().message.compare(ours.error().message.size() - tail.size(), tail.size(), tail) == 0)
        ++s.op_agree;
      else {
        ++s.op_mismatch;
        s.problems.push_back(cat({label, ": upstream ", *expect, " | ours ", ours_text}));
      }
      continue;
    }
    // Upstream passed its validation and failed later inside torch (RuntimeError, TypeError...).
    if (!ours.ok() && own_kind(ours.error().kind)) ++s.op_torch_later;
    else if (ours.ok()) ++s.op_ours_accepts;
    else {
      ++s.op_mismatch;
      s.problems.push_back(cat({label, ": upstream ", *expect, " | ours ", ours_text}));
    }
  }
  return Ok{};
}

Status compare_dir(const std::string& dir, const CompareOptions& opt, Stats& s) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) files.push_back(e.path().string());
  if (ec) return bad("cannot list " + dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  bool any = false;
  for (const auto& p : files) {
    const std::string name = std::filesystem::path(p).filename().string();
    if (name.rfind("case_", 0) == 0 && name.size() > 12 && name.substr(name.size() - 12) == ".safetensors") {
      W4A8_TRY(compare_case_file(p, opt, s));
      any = true;
    } else if (name == "operand_errors.safetensors") {
      W4A8_TRY(compare_operand_file(p, opt, s));
      any = true;
    }
  }
  if (!any) return bad("no oracle files in " + dir);
  return Ok{};
}

std::string format_stats(const Stats& s, const CompareOptions& opt) {
  std::string o;
  char b[400];
  std::snprintf(b, sizeof b, "comfy-kitchen %s (eager, CPU) vs w4a8check reference (profile %s)\n",
                s.upstream_version.c_str(), std::string(upstream::profile(opt.profile).version).c_str());
  o += b;
  std::snprintf(b, sizeof b, "layers %llu: w_q bit-exact in %llu layers, %llu / %llu elements equal\n",
                (unsigned long long)s.layers, (unsigned long long)s.w_q_exact_layers, (unsigned long long)s.w_q_equal,
                (unsigned long long)s.w_q_elems);
  o += b;
  o += "act   runs  upstream-fail  x_q equal (+-1, >1, unexplained)  scale rows eq  acc rows eq  out rows bit-exact  "
       "epilogue rows eq  tie rows explained  relL2 int max  relL2 int w/ ties (runs)  relL2 corr max  w_dequant relL2 max\n";
  static constexpr const char* kNames[3] = {"f32", "bf16", "f16"};
  for (int i = 0; i < 3; ++i) {
    const DtypeStats& d = s.dt[std::size_t(i)];
    if (i == 2 && d.runs == 0) continue;
    const double frac = d.x_q_elems ? double(d.x_q_equal) / double(d.x_q_elems) : 1.0;
    auto u = [](std::uint64_t v) { return (unsigned long long)v; };
    std::snprintf(b, sizeof b,
                  "%-5s %4llu  %13llu  %.6f (%llu/%llu) (%llu, %llu, %llu)  %llu/%llu  %llu/%llu  %llu/%llu  %llu/%llu  "
                  "%llu/%llu  %.3g  %.3g (%llu)  %.3g  %.3g\n",
                  kNames[i], u(d.runs), u(d.upstream_failures), frac, u(d.x_q_equal), u(d.x_q_elems),
                  u(d.x_q_off_by_one), u(d.x_q_beyond_one), u(d.x_q_unexplained), u(d.scale_equal), u(d.scale_rows),
                  u(d.acc_equal), u(d.acc_rows), u(d.exact_rows_equal), u(d.exact_rows), u(d.epilogue_rows_equal),
                  u(d.epilogue_rows), u(d.tie_rows_explained), u(d.tie_rows), d.rel_l2_int_max, d.rel_l2_tie_max,
                  u(d.tie_runs), d.rel_l2_corr_max, d.w_dequant_rel_l2_max);
    o += b;
    if (d.exact_runs || d.nonfinite_ours) {
      std::snprintf(b, sizeof b, "%-5s exact runs (out bit for bit) %llu: %llu / %llu elements equal; outputs non-finite "
                    "where upstream's are finite: %llu\n", kNames[i], u(d.exact_runs), u(d.exact_equal),
                    u(d.exact_elems), u(d.nonfinite_ours));
      o += b;
    }
  }
  for (int i = 0; i < 3; ++i)
    if (!s.dt[std::size_t(i)].worst_int.empty())
      o += std::string(kNames[i]) + " worst relL2: integer path " + s.dt[std::size_t(i)].worst_int +
           (s.dt[std::size_t(i)].worst_corr.empty() ? "" : ", correction path " + s.dt[std::size_t(i)].worst_corr) + "\n";
  std::snprintf(b, sizeof b,
                "operand sets %llu: identical error/acceptance %llu, mismatches %llu; ours-only refusals %llu, upstream "
                "fails later in torch (ours refuses earlier) %llu, upstream fails and ours runs %llu; sets with 2-4 "
                "defects: %llu, identical %llu\n",
                (unsigned long long)s.op_sets, (unsigned long long)s.op_agree, (unsigned long long)s.op_mismatch,
                (unsigned long long)s.op_ours_only, (unsigned long long)s.op_torch_later,
                (unsigned long long)s.op_ours_accepts, (unsigned long long)s.op_multi,
                (unsigned long long)s.op_multi_agree);
  o += b;
  if (opt.all_impls) o += "literal / fast / prepared disagreements: " + std::to_string(s.implementations_disagree) + "\n";
  for (const auto& u : s.upstream_failures) o += "upstream failure (not compared): " + u + "\n";
  const std::size_t shown = std::min<std::size_t>(s.problems.size(), 40);
  for (std::size_t i = 0; i < shown; ++i) o += "PROBLEM " + s.problems[i] + "\n";
  if (s.problems.size() > shown) o += "... " + std::to_string(s.problems.size() - shown) + " more problems\n";
  return o;
}

std::vector<std::string> tolerance_failures(const Stats& s) {
  std::vector<std::string> out;
  if (s.w_q_exact_layers != s.layers) out.push_back("w_q not bit-exact in every layer");
  for (int i = 0; i < 3; ++i) {
    const DtypeStats& d = s.dt[std::size_t(i)];
    const char* name = i == 1 ? "bf16" : (i == 2 ? "f16" : "f32");
    const double frac = d.x_q_elems ? double(d.x_q_equal) / double(d.x_q_elems) : 1.0;
    if (frac < kMinXqEqualFraction) out.push_back(std::string(name) + ": x_q equal fraction below 0.999");
    if (d.x_q_beyond_one || d.x_q_unexplained) out.push_back(std::string(name) + ": x_q differences not explained by ties");
    if (d.acc_equal != d.acc_rows) out.push_back(std::string(name) + ": acc differs on rows with equal x_q");
    if (d.exact_rows_equal != d.exact_rows) out.push_back(std::string(name) + ": out not bit-exact where x_q and scale agree");
    if (d.epilogue_rows_equal != d.epilogue_rows) out.push_back(std::string(name) + ": epilogue differs on upstream's acc");
    if (d.tie_rows_explained != d.tie_rows) out.push_back(std::string(name) + ": acc not explained by x_q tie flips");
    const double lim = i ? kMaxRelL2Bf16 : kMaxRelL2F32;
    if (d.rel_l2_int_max > lim || d.rel_l2_corr_max > lim || d.w_dequant_rel_l2_max > lim)
      out.push_back(std::string(name) + ": relative L2 above the tolerance");
    if (d.exact_equal != d.exact_elems) out.push_back(std::string(name) + ": an exact run is not bit-exact");
    if (d.nonfinite_ours) out.push_back(std::string(name) + ": outputs non-finite where upstream's are finite");
  }
  if (s.op_mismatch) out.push_back("operand errors differ from upstream's");
  if (s.implementations_disagree) out.push_back("literal / fast / prepared disagree");
  if (!s.problems.empty() && out.empty()) out.push_back("problems listed above");
  return out;
}

}  // namespace w4a8::gemm::ck
