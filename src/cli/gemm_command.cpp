// `w4a8check gemm`: run the W4A8 GEMM on one layer of a checkpoint (files, a directory or an
// index.json, each shard opened once) and write the output (and optionally every intermediate) as
// safetensors. Only the requested layer is checked (the validator's only_layer, strict, plus the
// GEMM's operand validation); --check-all checks the whole checkpoint first.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cli/checkpoint_input.hpp"
#include "cli/commands.hpp"
#include "cli/consumer_matrix.hpp"
#include "cli/layer_marker.hpp"
#include "cli/layer_source.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/suggest.hpp"
#include "gemm/reference.hpp"
#include "gemm/tensor_io.hpp"
#include "io/atomic_file.hpp"
#include "io/output_guard.hpp"
#include "kernels/layer_problem.hpp"
#include "plugin/runner.hpp"
#include "py/int.hpp"
#include "py/repr.hpp"
#include "validate/inspect.hpp"
#include "validate/layers.hpp"

namespace w4a8::cli {
namespace {

constexpr std::size_t kListedRows = 8;  // non-finite rows named in a message

struct GemmArgs {
  std::vector<std::string> checkpoint;
  std::string layer, input, out, input_key = "input", kernel;
  gemm::FloatDtype out_dtype = gemm::FloatDtype::F32;
  gemm::ActPolicy policy = gemm::ActPolicy::F32;
  ImplChoice impl = ImplChoice::Fast;
  bool intermediates = false, strict = false, check_all = false;
  bool kernel_given = false;  // --kernel was on the command line (its value may be empty)
  bool threads_given = false;
  unsigned threads = 1;
  ComfyKitchenRelease ck;  // whose operand rules and decode the GEMM follows
};

// CliNoSuchLayer, with what the name is closest to: a layer of another format (named with it); a
// layer whose tensor was named (--layer P.weight for P); layers under a prefix (--layer blk.1); a
// layer differing in case only; or the nearest asym_w4a8_int8 names by edit distance.
Error no_such_layer(const std::string& layer, const io::Checkpoint& ck, const validate::Report& r) {
  std::vector<std::string_view> names;
  for (const validate::Layer& l : r.layers)
    if (is_w4a8(l)) names.push_back(l.prefix);
  const auto quoted = [](const std::vector<std::string_view>& v) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + py::repr_str(v[i]);
    return s;
  };
  const auto lower = [](std::string_view v) {
    std::string s(v);
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string hint;
  std::vector<std::string_view> owner, under, other_case;
  for (const std::string_view n : names) {
    if (layer.size() > n.size() && layer[n.size()] == '.' && std::string_view(layer).starts_with(n)) owner.push_back(n);
    if (n.size() > layer.size() && n[layer.size()] == '.' && n.starts_with(layer) && under.size() < 3) under.push_back(n);
    if (n.size() == layer.size() && lower(n) == lower(layer)) other_case.push_back(n);
  }
  const auto other = std::find_if(r.layers.begin(), r.layers.end(),
                                  [&](const validate::Layer& l) { return std::string_view(l.prefix) == layer; });
  if (other != r.layers.end()) {
    const std::string format = marker_format(other->marker);
    hint = format == marker_format(json::Value::object()) ? " (its marker names no format)"
                                                            : " (its marker's format is " + format + ")";
  } else if (!owner.empty()) {
    hint = "; it names a tensor of layer " + quoted({owner.back()}) + " (--layer takes the layer's prefix)";
  } else if (!under.empty()) {
    hint = "; layers under it: " + quoted(under) + (under.size() == 3 ? ", ..." : "");
  } else if (!other_case.empty()) {
    hint = "; names differ in case: " + quoted(other_case);
  } else if (const auto near = closest_names(layer, names); !near.empty()) {
    hint = "; closest: " + quoted({near.begin(), near.end()});
  } else if (names.empty()) {
    hint = " (it has no asym_w4a8_int8 layer)";
  }
  return make_error(ErrorKind::CliNoSuchLayer, {py::repr_str(layer), ck.describe(), hint});
}

// "3 row(s): 0, 4, 9" of GemmInputNonFinite / GemmOutputNonFinite: the first kListedRows rows, then ", ...".
std::string rows_text(const std::vector<std::uint64_t>& rows, std::uint64_t count) {
  std::string list;
  for (std::uint64_t r : rows) list += (list.empty() ? "" : ", ") + std::to_string(r);
  if (count > rows.size()) list += ", ...";
  return list;
}

// Rows r < m (of width k) of v with a NaN or infinite value, skipping rows where skip[r] is set;
// fills the first kListedRows of them, marks each in *mark (sized m on the first) when given, and
// @return their count.
std::uint64_t non_finite(std::span<const float> v, std::uint64_t m, std::uint64_t k, const std::vector<bool>& skip,
                         std::vector<std::uint64_t>& rows, std::vector<bool>* mark = nullptr) {
  std::uint64_t count = 0;
  for (std::uint64_t r = 0; r < m && k; ++r) {
    if (!skip.empty() && skip[r]) continue;
    const float* row = v.data() + r * k;
    for (std::uint64_t j = 0; j < k; ++j)
      if (!std::isfinite(row[j])) {
        if (mark) {
          if (mark->empty()) mark->assign(m, false);
          (*mark)[r] = true;
        }
        if (rows.size() < kListedRows) rows.push_back(r);
        ++count;
        break;
      }
  }
  return count;
}

// Rows of x with a NaN or infinite value (marked in bad_rows): GemmInputNonFinite naming the first
// few, or nothing.
std::optional<Error> non_finite_rows(const gemm::Activations& x, const std::string& what, std::vector<bool>& bad_rows) {
  std::vector<std::uint64_t> rows;
  const std::uint64_t count = non_finite(x.values, x.M(), x.K(), {}, rows, &bad_rows);
  if (count == 0) return std::nullopt;
  return make_error(ErrorKind::GemmInputNonFinite, {what, std::to_string(count), rows_text(rows, count)});
}

// Output rows (and x_scale entries) that are NaN or infinite although their activations are finite
// (rows of non-finite activations were reported already): the rotation or the epilogue overflowed
// float32 (activations near FLT_MAX), or a kernel produced them. GemmOutputNonFinite, or nothing.
std::optional<Error> non_finite_outputs(const gemm::GemmResult& res, const std::vector<bool>& input_rows,
                                        const std::string& what) {
  std::vector<std::uint64_t> rows;
  const std::uint64_t count = non_finite(res.out, res.M, res.N, input_rows, rows);
  if (count == 0) return std::nullopt;
  std::string cause;
  if (res.x_scale.size() == res.M) {  // integer path (plugins return it only with --intermediates)
    std::vector<std::uint64_t> srows;
    const std::uint64_t scales = non_finite(res.x_scale, res.M, 1, input_rows, srows);
    if (scales)
      cause = "; x_scale is NaN or infinite in " + std::to_string(scales) + " of them (" + rows_text(srows, scales) +
              "): the rotated activations overflow float32";
  }
  return make_error(ErrorKind::GemmOutputNonFinite, {what, std::to_string(count), rows_text(rows, count), cause});
}

// What load_input learned besides the values, for the caller's messages.
struct InputInfo {
  std::string where;            // non-empty while the error is about reading --input
  bool operand_error = false;   // the error is the layer's operand validation (comfy-kitchen's verdict)
  gemm::Shape shape;            // as declared
  std::vector<bool> bad_rows;   // rows with NaN or Inf (reported already); empty when none
};

// The activations of --input. Their dtype and declared shape are checked against the layer's operand
// rules and the size limits (gemm.too_large) from the header, before any value is read: a declared
// [2^24 + 1, 256] is refused, not a 16 GiB allocation. The file is closed (its mapping released) on
// return.
Result<gemm::Activations> load_input(const GemmArgs& a, const gemm::Layer& layer, Reporter& report, InputInfo& info) {
  info.where = "--input " + a.input;
  auto xfile = st::File::open(a.input);
  if (!xfile.ok()) return std::move(xfile).error();
  const st::TensorInfo* xt = xfile->header().find(a.input_key);
  if (!xt) {
    // The nearest names, or the first few it has: a typo in --input-key, or the default "input" on a
    // file that calls its activations something else.
    std::vector<std::string_view> names;
    for (const st::TensorInfo& t : xfile->header().tensors) names.push_back(t.name);
    const auto near = closest_names(a.input_key, names);
    std::string hint;
    const std::size_t shown = near.empty() ? std::min<std::size_t>(names.size(), 5) : near.size();
    for (std::size_t i = 0; i < shown; ++i)
      hint += (i ? ", " : "") + py::repr_str(near.empty() ? std::string(names[i]) : near[i]);
    hint = names.empty()   ? "; it holds no tensor"
           : near.empty() ? "; it holds " + hint + (names.size() > shown ? ", ..." : "")
                          : "; closest: " + hint;
    return make_error(ErrorKind::UsageError, {a.input + " has no tensor " + py::repr_str(a.input_key) +
                                              " (--input-key names the activations)" + hint});
  }
  gemm::Activations x;
  if (!gemm::float_dtype_of(xt->dtype, x.dtype))
    return make_error(ErrorKind::OpDtype, {"input", "F32, BF16 or F16", st::dtype_name(xt->dtype)});
  info.shape = xt->shape;
  // Upstream's call on this input: an empty problem on the integer path fails there as upstream's does.
  if (auto v = gemm::validate_operands(gemm::describe(layer, xt->dtype, xt->shape), a.ck.profile,
                                       gemm::EmptyProblem::AsUpstream);
      !v.ok()) {
    info.operand_error = true;
    return std::move(v).error();
  }
  auto xv = gemm::read_floats(*xfile, *xt, "input");
  if (!xv.ok()) return std::move(xv).error();
  x.shape = xt->shape;
  x.values = std::move(*xv);
  info.where.clear();
  if (auto bad = non_finite_rows(x, a.input + " [" + a.input_key + "]", info.bad_rows)) {
    if (a.strict) return std::move(*bad);
    report.warn(bad->message + " (their outputs are NaN; --strict makes this an error)");
  }
  return x;
}

// "sglang 0.5.23 (Python 3.11)"
std::string upstream_name(const Predicts& p) {
  return "sglang " + std::string(p.sglang) + " (Python " + std::string(p.python) + ")";
}

// A layer sglang refused for its storage that comfy-kitchen judges instead.
struct ComfyKitchenLayer {
  validate::LayersReport all;   // the checkpoint's per-layer report (every other check of sglang passed)
  std::optional<Error> refusal;  // comfy-kitchen's own error for the layer (validate --consumers' cell)
  bool by_strict = false;        // the refusal replaced was --strict's, not sglang's own
};

// When sglang refused `layer` for its storage (sglang.w4a8.dtypes / .shapes) and either comfy-kitchen
// `ck` accepts its operands, or the layer is stored in a form `ck` reads and sglang does not
// (gemm::comfy_kitchen_only_storage: F32 group scales, 6-bit rows) whatever else is wrong with it:
// the GEMM follows comfy-kitchen, so comfy-kitchen's verdict (comfy_kitchen_accepts, as the consumer
// matrix judges it) replaces sglang's; else nullopt (sglang's refusal stands: FP8 4-bit layers, and
// storage neither loads). The same for a --strict refusal of a layer in such a form: a 6-bit FP8
// layer with one group passes sglang's shape check by its floor division, and the strict rules would
// read its rows as 4-bit codes (K = 1.5x the real one).
std::optional<ComfyKitchenLayer> comfy_kitchen_layer(std::span<const validate::ParsedFile> files,
                                                     const validate::Options& vopt, const Error& refusal,
                                                     const std::string& layer, upstream::ComfyKitchen ck) {
  const bool storage = refusal.kind == ErrorKind::SgW4a8Dtypes || refusal.kind == ErrorKind::SgW4a8Shapes;
  const bool strict = refusal.code().starts_with("strict.");
  if (!storage && !strict) return std::nullopt;
  validate::Options plain = vopt;
  plain.strict = false;
  plain.only_layer.clear();
  auto all = validate::inspect_layers_parsed(files, plain);
  if (!all.ok() || !all->checkpoint.ok()) return std::nullopt;
  for (const validate::Layer& l : all->report.layers) {
    if (l.prefix != layer || !is_w4a8(l)) continue;
    const bool ck_only = comfy_kitchen_only_layer(all->report, l, ck, vopt.python);
    if (strict && !ck_only) return std::nullopt;  // --strict judges the layers sglang loads
    Status verdict = comfy_kitchen_accepts(all->report, l, ck, vopt.python);
    if (!verdict.ok() && !ck_only) return std::nullopt;
    return ComfyKitchenLayer{std::move(all).value(), verdict.ok() ? std::nullopt : std::optional<Error>(verdict.error()),
                             strict};
  }
  return std::nullopt;
}

void run(const GemmArgs& given, Reporter& report) {
  using namespace gemm;
  GemmArgs a = given;
  FailStyle where;
  std::string input_where;
  // Rejections name the release they predict: the validator's sglang (and its Python), then the
  // GEMM's comfy-kitchen.
  const std::string ck_label = a.ck.label();
  FailStyle by_sglang, by_ck;
  by_sglang.upstream = Predicts{upstream::profile(upstream::kLatestSglang).version, py::version_name(py::kDefaultVersion), {}};
  by_ck.upstream.comfy_kitchen = ck_label;
  // 1. The kernel module first: a missing one is reported before any long check.
  std::optional<plugin::Plugin> kernel;
  // An empty --kernel (an unset shell variable) must not quietly run the built-in implementation.
  if (a.kernel_given && a.kernel.empty())
    return report.fail(make_error(ErrorKind::UsageError, {"--kernel: empty path"}));
  // Threads apply to --impl fast only: elsewhere a cap (and its note) would speak of nothing, and a
  // --threads given would be ignored without a word (audit check refuses it the same way).
  const bool takes_threads = a.impl == ImplChoice::Fast && a.kernel.empty();
  if (a.threads_given && !takes_threads)
    return report.fail(make_error(ErrorKind::UsageError, {kThreadsFastOnly}));
  if (!a.kernel.empty() || a.impl == ImplChoice::Cuda) {
    auto p = a.kernel.empty() ? plugin::load_cuda_module() : plugin::Plugin::load(a.kernel);
    if (!p.ok()) return report.fail(p.error());
    kernel = std::move(*p);
  }
  if (takes_threads) a.threads = resolve_threads(a.threads, report);
  // 2. The checkpoint, each shard opened once; outputs must not replace any input.
  validate::Options vopt;
  vopt.strict = true;
  if (!a.check_all) vopt.only_layer = a.layer;
  auto ck = open_checkpoint(a.checkpoint, vopt, &input_where, &report);
  if (!ck.ok()) {
    // A refusal here (a container error, or an earlier shard's marker error) is what sglang raises;
    // an index error is ours.
    FailStyle s = predicted_by_sglang(ck.error()) ? by_sglang : where;
    s.where = input_where;
    return report.fail(ck.error(), s);
  }
  io::InputGuard guard;
  for (const std::string& s : ck->shards().shards) guard.add(s);
  if (!ck->shards().index.empty()) guard.add(ck->shards().index);
  guard.add(a.input);
  if (kernel) guard.add(kernel->path());  // the module is read too (and stays mapped)
  if (auto g = guard.check_output(a.out); !g.ok()) return report.fail(g.error());
  note_repeated_tensors(*ck, "is used, as sglang reads them, and the others are not", report);
  // 3. The layer (or everything with --check-all) through the validator, strict.
  const std::vector<std::string> names = layer_tensor_names(*ck, a.layer);
  if (auto idx = a.check_all ? ck->check_index() : ck->check_index(names); !idx.ok()) return report.fail(idx.error());
  const auto files = parsed_files(*ck);
  auto vr = validate::inspect_parsed(files, vopt);
  std::optional<ComfyKitchenLayer> variant;  // the layer is a storage variant sglang cannot load
  std::optional<Error> ck_refusal;            // ... which comfy-kitchen refuses too, for this reason
  if (!vr.ok()) {
    // A layer the checkpoint lacks: name the closest ones (from a metadata-only pass over all layers).
    if (vr.error().kind == ErrorKind::ValidateNoSuchLayer) {
      validate::Options plain;
      plain.sglang = vopt.sglang;
      if (auto all = validate::inspect_layers_parsed(files, plain); all.ok())
        return report.fail(no_such_layer(a.layer, *ck, all->report));
    }
    if (!a.check_all) variant = comfy_kitchen_layer(files, vopt, vr.error(), a.layer, a.ck.profile);
    if (!variant) return report.fail(vr.error(), by_sglang);
    ck_refusal = variant->refusal;
    if (variant->by_strict)
      report.note("--strict refuses layer " + py::repr_str(a.layer) + " [" + std::string(vr.error().code()) +
                  "] reading its rows as 4-bit codes, but it holds 6-bit codes, which comfy-kitchen " + ck_label +
                  (ck_refusal ? " refuses: comfy-kitchen's operand checks judge it"
                              : " reads: running it under comfy-kitchen's operand checks only (sglang's rules and "
                                "--strict do not apply)"));
    else if (ck_refusal)
      report.note(upstream_name(by_sglang.upstream) + " refuses layer " + py::repr_str(a.layer) + " [" +
                  std::string(vr.error().code()) + "] for its storage (6-bit codes or F32 group scales), which comfy-kitchen " +
                  ck_label + " reads: comfy-kitchen's operand checks judge it");
    else
      report.note(upstream_name(by_sglang.upstream) + " refuses layer " + py::repr_str(a.layer) + " [" +
                  std::string(vr.error().code()) + "], but comfy-kitchen " + ck_label +
                  " loads it (6-bit codes or F32 group scales): running it under comfy-kitchen's operand checks only "
                  "(sglang's rules and --strict do not apply)");
  }
  const validate::Report& rep = variant ? variant->all.report : *vr;
  const validate::Layer* vl = nullptr;
  for (const auto& l : rep.layers)
    if (l.prefix == a.layer) vl = &l;
  if (!vl || !is_w4a8(*vl)) return report.fail(no_such_layer(a.layer, *ck, rep));
  auto groups = marker_groups(*vl, vopt.python);
  if (!groups.ok()) return report.fail(groups.error());
  auto layer = load_layer(*ck, a.layer, groups->group_size, groups->convrot_groupsize);
  // A layer comfy-kitchen refuses is refused for that reason whatever else fails on the way (the
  // actual call's operand check below may still name the input, as upstream's call would).
  if (!layer.ok()) return report.fail(ck_refusal ? *ck_refusal : layer.error(), by_ck);
  // 4. Activations (their header checked against the layer before any value is read), then the
  // chosen release's operand rules for every implementation (the kernels' path checks the newest).
  GemmOptions opt;
  opt.policy = a.policy;
  opt.out_dtype = a.out_dtype;
  opt.threads = a.threads;
  opt.comfy_kitchen = a.ck.profile;
  InputInfo in;
  auto x = load_input(a, *layer, report, in);
  if (!x.ok() && !in.operand_error) {
    if (ck_refusal) return report.fail(*ck_refusal, by_ck);
    where.where = in.where;
    return report.fail(x.error(), where);
  }
  if (Status v = x.ok() ? validate_call(*layer, *x, opt.comfy_kitchen) : Status(x.error()); !v.ok()) {
    FailStyle s = by_ck;
    // The input's own shape is at fault (its K, or no dimensions at all): name the file it came from.
    const std::string input_name = "--input " + a.input;  // outlives s, which views it
    if (v.error().kind == ErrorKind::OpInputK || v.error().kind == ErrorKind::OpEmptyBatch || in.shape.empty())
      s.where = input_name;
    if (v.error().kind == ErrorKind::OpTooLarge) {  // this tool's size limit, not comfy-kitchen's rule
      s.upstream = {};
      if (in.shape.size() > 0) s.where = input_name;  // the input's (or the output's, from its M) size
    }
    return report.fail(v.error(), s);
  }
  if (ck_refusal) return report.fail(*ck_refusal, by_ck);  // not reached: the call's checks include the layer's
  // Past every operand check, comfy-kitchen's correction path still fails here: its F.linear takes the
  // bias in its own dtype, and torch refuses one that is not the activations' (docs/gemm.md).
  if (layer->has_correction() && layer->has_bias() && layer->bias_dtype != x->dtype)
    report.note("comfy-kitchen " + ck_label + " raises here (torch: \"self and mat2 must have the same dtype\"): layer " +
                py::repr_str(a.layer) + "'s bias is " + std::string(float_dtype_name(layer->bias_dtype)) +
                ", the activations " + std::string(float_dtype_name(x->dtype)) +
                "; computed anyway, the bias rounded to the activations' dtype");
  // 5. The GEMM.
  Result<GemmResult> res = make_error(ErrorKind::UsageError, {"no implementation chosen"});
  std::string impl_name(choice_name<ImplChoice>(kImpls, a.impl)), isa;
  if (kernel) {
    res = plugin::run_layer(*kernel, *layer, *x, opt, a.intermediates);
    if (!a.kernel.empty()) impl_name = "kernel";
    isa = std::string(kernel->name()) + " " + std::string(kernel->version());
  } else if (a.impl == ImplChoice::Emulate) {
    res = kern::gemm_emulated(*layer, *x, opt);
  } else {
    res = gemm::gemm(a.impl == ImplChoice::Literal ? Impl::Literal : Impl::Fast, *layer, *x, opt);
  }
  // The kernels' own refusals (limits, storage they lack) are not comfy-kitchen's verdict.
  if (!res.ok()) return report.fail(res.error(), res.error().kind == ErrorKind::CudaUnsupported ? FailStyle{} : by_ck);
  if (isa.empty()) isa = std::string(isa_name(res->isa));
  if (auto bad = non_finite_outputs(*res, in.bad_rows, "the output of layer " + py::repr_str(a.layer))) {
    if (a.strict) return report.fail(*bad);  // ours, like gemm.input_nonfinite: no upstream refuses it
    report.warn(bad->message + " (--strict makes this an error)");
  }
  // What is not written goes before the output is encoded (two more copies of it): the activations,
  // and the intermediates unless requested.
  std::vector<float>().swap(x->values);
  if (!a.intermediates) {
    std::vector<std::int8_t>().swap(res->x_q);
    std::vector<std::int32_t>().swap(res->acc);
  }
  // 6. Results: output [..., N], intermediates flattened to [M, K] / [M] / [M, N] / [N, K].
  Shape out_shape(x->shape.begin(), x->shape.end() - 1);
  out_shape.push_back(res->N);
  std::vector<st::TensorSpec> t;
  t.push_back(float_tensor("output", opt.out_dtype, out_shape, res->out));
  if (a.intermediates) {
    auto i8 = [](std::string name, Shape s, const std::vector<std::int8_t>& v) {
      return st::TensorSpec{std::move(name), st::Dtype::I8, std::move(s), std::vector<std::uint8_t>(v.begin(), v.end())};
    };
    if (!res->w_q.empty()) t.push_back(i8("w_q", {res->N, res->K}, res->w_q));
    if (res->correction_path) {
      if (!res->w_dequant.empty()) t.push_back(float_tensor("w_dequant", FloatDtype::F32, {res->N, res->K}, res->w_dequant));
    } else {
      t.push_back(i8("x_q", {res->M, res->K}, res->x_q));
      t.push_back(float_tensor("x_scale", FloatDtype::F32, {res->M}, res->x_scale));
      st::TensorSpec acc{"acc", st::Dtype::I32, {res->M, res->N}, std::vector<std::uint8_t>(res->acc.size() * 4)};
      if (!res->acc.empty()) std::memcpy(acc.bytes.data(), res->acc.data(), acc.bytes.size());
      t.push_back(std::move(acc));
    }
  }
  const std::string path = res->correction_path ? "correction" : "integer";
  const std::string policy(choice_name<ActPolicy>(kPolicies, a.policy));
  st::WriteOptions wopt;
  wopt.metadata = std::vector<std::pair<std::string, std::string>>{
      {"layer", a.layer}, {"path", path}, {"policy", policy}, {"impl", impl_name}, {"isa", isa},
      {"out_dtype", std::string(float_dtype_name(opt.out_dtype))}, {"comfy_kitchen", a.ck.requested},
      {"comfy_kitchen_profile", std::string(upstream::profile(a.ck.profile).version)}};
  auto bytes = st::serialize(t, wopt);
  if (!bytes.ok()) return report.fail(bytes.error());
  if (auto w = io::write_file_atomic(a.out, *bytes); !w.ok()) return report.fail(w.error());
  report.out() << "OK: " << py::shown_name(a.layer) << " M=" << res->M << " N=" << res->N << " K=" << res->K << " path=" << path
               << " policy=" << policy << " impl=" << impl_name << (kernel ? " (" + kernel->describe() + ")" : "")
               << " -> " << a.out << " (comfy-kitchen " << ck_label << ")\n";
  report.succeed();
}

}  // namespace

void add_gemm_command(CLI::App& app, Reporter& report) {
  auto args = std::make_shared<GemmArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gemm",
      "Run the W4A8 GEMM (out = x @ W^T + bias) on one asym_w4a8_int8 layer and write `output` [M, N]\n"
      "(and with --intermediates w_q, x_q, x_scale, acc or w_dequant) as safetensors. Only that layer\n"
      "is checked (validate --strict rules + the GEMM's operand checks) unless --check-all.\n"
      "Exit status: 0 success, 1 layer/input rejected (upstream's ValueError), 2 usage, I/O or\n"
      "environment error (also a layer that is not there, and upstream's other exceptions).");
  require_path(cmd->add_option("--checkpoint", args->checkpoint,
                               "the checkpoint: safetensors shard(s), a directory or an index.json"))
      ->required()->expected(1, -1);
  cmd->add_option("--layer", args->layer, "layer prefix P (tensors P.weight, P.weight_s_rel, ...)")->required();
  require_path(cmd->add_option("--input", args->input, "safetensors file with the activations [..., K] (F32/BF16/F16)"))
      ->required();
  require_path(cmd->add_option("--out", args->out, "safetensors file to write (replaced atomically; never an input)"))
      ->required();
  cmd->add_option("--input-key", args->input_key, "tensor name of the activations")->capture_default_str();
  add_enum_option<gemm::FloatDtype>(*cmd, "--out-dtype", args->out_dtype, kOutDtypes, "output dtype");
  add_enum_option<gemm::ActPolicy>(*cmd, "--policy", args->policy, kPolicies,
                             "activation rotation/quantization: all float32, or upstream's eager dtype rounding");
  auto* impl = add_enum_option<ImplChoice>(
      *cmd, "--impl", args->impl, kImpls,
      "literal (spec-literal CPU), fast (blocked/SIMD CPU, bit-identical), emulate (the CUDA kernel's\n"
      "computation order on the CPU), cuda (the CUDA kernel module, loaded at run time; needs a GPU)");
  auto* kernel = cmd->add_option("--kernel", args->kernel,
                                 "run through a kernel plugin: a shared library exporting w4a8_kernel_plugin_v1 "
                                 "(kernels/w4a8_cuda.h)");
  kernel->excludes(impl);
  auto* threads = require_decimal<unsigned>(
      cmd->add_option("--threads", args->threads, "threads for --impl fast (0 = all; capped at the hardware threads)"));
  threads->capture_default_str();
  cmd->add_flag("--intermediates", args->intermediates,
                "also write w_q I8 [N,K]; x_q I8 [M,K], x_scale F32 [M], acc I32 [M,N] (integer path) or "
                "w_dequant F32 [N,K] (correction path)");
  cmd->add_flag("--strict", args->strict,
                "NaN/Inf activation rows, and NaN/Inf outputs of finite rows, are an error (default: a warning)");
  cmd->add_flag("--check-all", args->check_all, "check the whole checkpoint (validate --strict), not just the layer");
  add_comfy_kitchen_option(*cmd, args->ck,
                           "the comfy-kitchen release whose operand rules and decode the GEMM follows: a profile (" +
                               choice_list(comfy_kitchen_choices()) +
                               ") or a release one stands for (w4a8check versions; 0.2.37 -> profile 0.2.40)");
  cmd->callback([args, kernel, threads, &report] {
    args->kernel_given = kernel->count() > 0;
    args->threads_given = threads->count() > 0;
    run(*args, report);
  });
}

}  // namespace w4a8::cli
