// `w4a8check compare EXPECTED ACTUAL`: tensor-by-tensor comparison of two safetensors files
// (matched by name; integers exactly, floats by ulp distance, max abs error, relative L2, first
// mismatching indices) under a named policy. `--policy explained --case CASE` judges ACTUAL stage
// by stage against EXPECTED (as `w4a8check gemm --intermediates` writes it) for that audit case.
// Exit status: 0 pass, 1 fail, 2 usage or I/O.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include "audit/explain.hpp"
#include "audit/runner.hpp"
#include "audit/suite.hpp"
#include "audit/tensor_compare.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "json/parse.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::cli {
namespace {

struct CompareArgs {
  std::string expected, actual, policy = "exact", case_file, act_policy = "f32";
  bool json = false;
  bool act_policy_given = false;  // --act-policy was on the command line
};

// How compare renders its errors: with --json every one is {"ok": false, "error": {...}} on stdout.
FailStyle style_of(const CompareArgs& a) {
  FailStyle s;
  s.format = a.json ? Format::Json : Format::Text;
  return s;
}

void explained_input(const CompareArgs& a, Reporter& report, const std::string& msg) {
  report.fail(make_error(ErrorKind::AuditExplainedInput, {msg}), style_of(a));
}

std::string shape_text(const std::vector<std::uint64_t>& s) { return audit::index_text(s); }

std::string stats_line(const audit::TensorStats& s) {
  char buf[256];
  std::string line = s.name + "  " + s.dtype + " " + shape_text(s.shape) + ": ";
  if (!s.present) return line + "MISSING from ACTUAL";
  if (!s.shape_error.empty()) return line + s.shape_error;
  if (s.mismatches == 0) return line + "equal";
  line += std::to_string(s.mismatches) + " of " + std::to_string(s.count) + (s.bytewise ? " bytes differ (compared byte for byte)" : " differ");
  if (s.is_float) {
    if (s.max_ulp == audit::kNanUlp)
      line += ", NaN mismatch";
    else
      line += ", max " + std::to_string(s.max_ulp) + " ulp";
    if (s.inf_mismatches) line += ", " + std::to_string(s.inf_mismatches) + " infinity mismatch(es)";
    std::snprintf(buf, sizeof buf, ", max abs %.3g, rel L2 %.3g", s.max_abs, s.rel_l2);
    line += buf;
  } else if (!s.bytewise) {
    line += ", max |diff| " + std::to_string(s.max_ulp);
  }
  const auto& f = s.first.front();
  std::snprintf(buf, sizeof buf, "; first at %s%s: expected %.9g, got %.9g", s.bytewise ? "byte " : "",
                audit::index_text(f.index).c_str(), f.expected, f.actual);
  return line + buf;
}

// The tensors of a file by name. @return the map or the reader's error.
Result<std::vector<audit::TensorData>> load(const std::string& path) {
  auto f = st::File::open(path);
  if (!f.ok()) return std::move(f).error();
  return audit::read_tensors(*f);
}

const audit::TensorData* find(const std::vector<audit::TensorData>& v, const std::string& name) {
  for (const auto& t : v)
    if (t.name == name) return &t;
  return nullptr;
}

void run_explained(const CompareArgs& a, const audit::Policy& policy, const std::vector<audit::TensorData>& exp,
                   const std::vector<audit::TensorData>& act, Reporter& report) {
  const FailStyle style = style_of(a);
  auto cf = st::File::open(a.case_file);
  if (!cf.ok()) {
    FailStyle s = style;  // an unreadable case file is bad input (exit 2), like the compared files
    s.where = a.case_file;
    s.input_file = true;
    return report.fail(cf.error(), s);
  }
  const std::string* meta = cf->header().meta("w4a8check_audit_case");
  if (!meta)
    return explained_input(a, report, a.case_file + " is not an audit case file (no w4a8check_audit_case metadata)");
  auto pj = json::loads_str(*meta);
  if (!pj.ok())
    return report.fail(
        make_error(ErrorKind::AuditManifest, {a.case_file + " (metadata w4a8check_audit_case)", "not JSON"}), style);
  auto spec = audit::case_from_json(*pj, a.case_file + " (metadata w4a8check_audit_case)");
  if (!spec.ok()) return report.fail(spec.error(), style);
  // The case file is its own one-case suite: load it through the suite loader.
  audit::Manifest m;
  audit::CaseSpec c = *spec;
  const auto slash = a.case_file.rfind('/');
  c.file = slash == std::string::npos ? a.case_file : a.case_file.substr(slash + 1);
  auto data = audit::load_case(slash == std::string::npos ? "." : a.case_file.substr(0, slash), m, c);
  if (!data.ok()) return report.fail(data.error(), style);
  const gemm::ActPolicy pol = a.act_policy == "eager" ? gemm::ActPolicy::Eager : gemm::ActPolicy::F32;
  const audit::TensorData* eo = find(exp, "output");
  const audit::TensorData* ao = find(act, "output");
  if (!eo || !eo->is_float)
    return explained_input(a, report, "EXPECTED (" + a.expected + ") needs a float tensor 'output'");
  if (!ao || !ao->is_float)
    return explained_input(a, report, "ACTUAL (" + a.actual + ") needs a float tensor 'output'");
  auto ints8 = [](const audit::TensorData* t) { return std::vector<std::int8_t>(t->i.begin(), t->i.end()); };
  gemm::GemmResult ref;
  ref.M = c.m, ref.N = c.n, ref.K = c.k, ref.out_dtype = eo->fdtype, ref.out = eo->f,
  ref.correction_path = c.correction;
  const char* need[] = {"w_q", "x_q", "x_scale", "acc"};
  for (const char* n : need) {
    if (c.correction && std::string(n) != "w_q") continue;
    if (!find(exp, n))
      return explained_input(a, report,
                             std::string("EXPECTED needs '") + n + "' (w4a8check gemm --intermediates writes it)");
  }
  ref.w_q = ints8(find(exp, "w_q"));
  if (c.correction) {
    const audit::TensorData* wd = find(exp, "w_dequant");
    if (!wd) return explained_input(a, report, "EXPECTED needs 'w_dequant' on the correction path");
    ref.w_dequant = wd->f;
  } else {
    ref.x_q = ints8(find(exp, "x_q"));
    ref.x_scale = find(exp, "x_scale")->f;
    ref.acc.assign(find(exp, "acc")->i.begin(), find(exp, "acc")->i.end());
  }
  audit::ImplOutput o;
  o.out_dtype = ao->fdtype;
  o.out = ao->f;
  if (auto* t = find(act, "w_q")) o.w_q = ints8(t);
  if (auto* t = find(act, "x_q")) o.x_q = ints8(t);
  if (auto* t = find(act, "x_scale"); t && t->is_float) o.x_scale = t->f;
  if (auto* t = find(act, "acc")) o.acc = std::vector<std::int32_t>(t->i.begin(), t->i.end());
  // Sizes must match the case before judging.
  auto bad_size = [&](const char* n, std::size_t got, std::uint64_t want) {
    if (got != want)
      explained_input(a, report, std::string("'") + n + "' has " + std::to_string(got) + " elements, the case needs " +
                                  std::to_string(want));
    return got != want;
  };
  if (bad_size("output", ref.out.size(), c.m * c.n) || bad_size("output", o.out.size(), c.m * c.n) ||
      bad_size("w_q", ref.w_q.size(), c.n * c.k) || (o.w_q && bad_size("w_q", o.w_q->size(), c.n * c.k)) ||
      (!c.correction && (bad_size("x_q", ref.x_q.size(), c.m * c.k) || bad_size("x_scale", ref.x_scale.size(), c.m) ||
                         bad_size("acc", ref.acc.size(), c.m * c.n))) ||
      (c.correction && bad_size("w_dequant", ref.w_dequant.size(), c.n * c.k)) ||
      (o.x_q && bad_size("x_q", o.x_q->size(), c.m * c.k)) ||
      (o.x_scale && bad_size("x_scale", o.x_scale->size(), c.m)) ||
      (o.acc && bad_size("acc", o.acc->size(), c.m * c.n)))
    return;
  audit::CaseVerdict v = audit::judge(c, *data, ref, o, pol, policy);
  if (a.json) {
    json::Value j = json::Value::object();
    j.set("ok", json::Value::from_bool(v.overall != audit::Verdict::Fail));
    j.set("policy", json::Value::from_string(audit::policy_name(policy)));
    j.set("verdict", json::Value::from_string(std::string(audit::verdict_name(v.overall))));
    if (!v.first_fail.empty()) j.set("failing_stage", json::Value::from_string(v.first_fail));
    json::Value st = json::Value::object();
    for (int s = 0; s < audit::kStages; ++s) {
      json::Value so = json::Value::object();
      so.set("verdict", json::Value::from_string(std::string(audit::verdict_name(v.stages[s].verdict))));
      so.set("detail", json::Value::from_string(v.stages[s].detail));
      st.set(std::string(audit::stage_name(audit::Stage(s))), std::move(so));
    }
    j.set("stages", std::move(st));
    json::Value ts = json::Value::array();
    for (const auto& t : v.tensors) ts.items.push_back(audit::stats_to_json(t));
    j.set("tensors", std::move(ts));
    report.out() << audit::strict_json(j) << "\n";
  } else {
    for (const auto& t : v.tensors) report.out() << stats_line(t) << "\n";
    for (int s = 0; s < audit::kStages; ++s)
      if (v.stages[s].verdict != audit::Verdict::Absent)
        report.out() << "  " << audit::stage_name(audit::Stage(s)) << ": " << audit::verdict_name(v.stages[s].verdict)
                     << " - " << v.stages[s].detail << "\n";
    report.out() << (v.overall == audit::Verdict::Fail ? "FAIL (stage: " + v.first_fail + ")" : "PASS") << " (policy "
                 << audit::policy_name(policy) << ")\n";
  }
  report.verdict(v.overall != audit::Verdict::Fail);
}

void run(const CompareArgs& a, Reporter& report) {
  auto policy = audit::parse_policy(a.policy);
  if (!policy.ok()) return report.fail(policy.error(), style_of(a));
  if (policy->kind != audit::Policy::Kind::Explained && (!a.case_file.empty() || a.act_policy_given))  // refused, never ignored
    return report.fail(make_error(ErrorKind::UsageError, {std::string(a.case_file.empty() ? "--act-policy" : "--case") +
                                                          " is used only with --policy explained[:N]"}),
                       style_of(a));
  // A file that cannot be read is named, and is an input error (exit 2), never a failed comparison.
  auto input_style = [&](const std::string& file) {
    FailStyle s = style_of(a);
    s.where = file;
    s.input_file = true;
    return s;
  };
  auto exp = load(a.expected);
  if (!exp.ok()) return report.fail(exp.error(), input_style(a.expected));
  auto act = load(a.actual);
  if (!act.ok()) return report.fail(act.error(), input_style(a.actual));
  if (policy->kind == audit::Policy::Kind::Explained) {
    if (a.case_file.empty())
      return explained_input(a, report, "needs --case CASE.safetensors (the audit case both files ran)");
    return run_explained(a, *policy, *exp, *act, report);
  }
  bool ok = true;
  std::vector<audit::TensorStats> stats;
  std::vector<std::string> why;
  for (const auto& e : *exp) {
    const audit::TensorData* t = find(*act, e.name);
    audit::TensorStats s;
    if (!t) {
      s.name = e.name, s.dtype = e.dtype, s.shape = e.shape, s.is_float = e.is_float, s.present = false,
      s.count = e.size();
    } else {
      s = audit::compare_tensors(e, *t);
    }
    std::string w;
    if (!audit::passes(s, *policy, &w)) ok = false, why.push_back(w);
    stats.push_back(std::move(s));
  }
  std::vector<std::string> extra;
  for (const auto& t : *act)
    if (!find(*exp, t.name)) extra.push_back(t.name);
  // Tensors present on both sides. None at all (EXPECTED holds no tensors) passes, as there is nothing
  // to fail, but says so: an empty or wrong EXPECTED must not read like a successful check.
  std::uint64_t compared = 0;
  for (const auto& s : stats) compared += s.present;
  if (a.json) {
    json::Value j = json::Value::object();
    j.set("ok", json::Value::from_bool(ok));
    j.set("policy", json::Value::from_string(audit::policy_name(*policy)));
    j.set("compared", json::Value::from_int(static_cast<long long>(compared)));
    json::Value ts = json::Value::array();
    for (const auto& s : stats) ts.items.push_back(audit::stats_to_json(s));
    j.set("tensors", std::move(ts));
    json::Value ex = json::Value::array();
    for (const auto& n : extra) ex.items.push_back(json::Value::from_string(n));
    j.set("only_in_actual", std::move(ex));
    report.out() << audit::strict_json(j) << "\n";
  } else {
    for (const auto& s : stats) report.out() << stats_line(s) << "\n";
    for (const auto& n : extra) report.out() << n << ": only in ACTUAL (not compared)\n";
    report.out() << (ok ? "PASS" : "FAIL") << " (policy " << audit::policy_name(*policy)
                 << (stats.empty() ? "; nothing compared: EXPECTED has no tensors" : "") << ")\n";
  }
  report.verdict(ok);
}

}  // namespace

void add_compare_command(CLI::App& app, Reporter& report) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "Compare two safetensors files tensor by tensor (matched by name): integers exactly, floats by ulp\n"
      "distance in their dtype (BF16/F16 and the 8-bit floats read exactly), max abs error, relative L2,\n"
      "first mismatches; F64, C64, F4 and F6 byte for byte.\n"
      "Exit status: 0 pass, 1 fail, 2 usage or I/O error.");
  require_path(cmd->add_option("expected", a->expected, "reference file (e.g. from w4a8check gemm --intermediates)"))
      ->required();
  require_path(cmd->add_option("actual", a->actual, "file to check"))->required();
  cmd->add_option("--policy", a->policy, "exact | ulp:N | rel:X | explained[:N] (explained needs --case)")
      ->capture_default_str();
  cmd->add_option("--case", a->case_file, "the audit case file both ran (for --policy explained)");
  cmd->add_option("--act-policy", a->act_policy, "activation policy EXPECTED was computed with (explained)")
      ->check(CLI::IsMember({"f32", "eager"}))
      ->capture_default_str();
  cmd->add_flag("--json", a->json, "print the comparison as JSON");
  CLI::Option* act = cmd->get_option("--act-policy");
  cmd->callback([a, act, &report] {
    a->act_policy_given = act->count() > 0;
    run(*a, report);
  });
}

}  // namespace w4a8::cli
