#include "audit/runner.hpp"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include <filesystem>

#include "audit/rerun_diff.hpp"
#include "json/dump.hpp"
#include "plugin/call_guard.hpp"

namespace w4a8::audit {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

json::Value u(std::uint64_t x) {
  json::Value v;
  v.kind = json::Kind::Int;
  v.text = std::to_string(x);
  return v;
}
json::Value str(std::string s) { return json::Value::from_string(std::move(s)); }
// Paths and the messages and commands that name them: system text (json::wtf8_from_os).
json::Value os_str(std::string_view s) { return json::Value::from_os_string(s); }

std::string absolute(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : p;
}

}  // namespace

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:=@,+") ==
                        std::string::npos)
    return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string strict_json(const json::Value& v) { return json::dump(v, json::NonFinite::String); }

Result<AuditRun> run_audit(const std::string& suite_dir, Implementation& impl, const RunOptions& opt,
                           std::string* error_file) {
  auto man = read_suite(suite_dir);
  if (!man.ok()) {
    if (error_file) *error_file = (std::filesystem::path(suite_dir) / "manifest.json").string();
    return std::move(man).error();
  }
  for (const auto& id : opt.only_cases) {
    bool found = false;
    for (const auto& c : man->cases) found = found || c.id == id;
    if (!found) return make_error(ErrorKind::AuditNoSuchCase, {"'" + id + "'", suite_dir});
  }
  AuditRun run;
  plugin::set_progress_line(opt.progress);  // a plugin's crash report then starts a line of its own
  run.suite_dir = absolute(suite_dir);
  run.grid = man->grid;
  run.unavailable = impl.unavailable_reason();
  const gemm::ActPolicy pol = opt.act_policy.value_or(impl.natural_policy());
  run.impl_name = impl.name();
  run.policy = policy_name(opt.policy);
  run.act_policy = pol == gemm::ActPolicy::Eager ? "eager" : "f32";
  run.comfy_kitchen = std::string(upstream::profile(upstream::kLatestComfyKitchen).version);
  run.literal_reference = opt.literal_reference;
  run.repeat = opt.repeat;
  const auto t0 = Clock::now();
  std::vector<const CaseSpec*> todo;
  for (const auto& c : man->cases) {
    bool want = opt.only_cases.empty();
    for (const auto& id : opt.only_cases) want = want || id == c.id;
    if (want) todo.push_back(&c);
  }
  for (std::size_t i = 0; i < todo.size(); ++i) {
    const CaseSpec& c = *todo[i];
    if (opt.progress) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s  %.1fs", i + 1, todo.size(), c.id.c_str(), since(t0));
    CaseRecord rec;
    rec.spec = c;
    rec.repro = "w4a8check audit check " + shell_quote(run.suite_dir) + " " + opt.repro_impl_args + " --case " + c.id +
                " --policy " + run.policy + (opt.act_policy ? " --act-policy " + run.act_policy : "") +
                " --reference " + (opt.literal_reference ? "literal" : "fast") +
                (opt.repeat > 1 ? " --repeat " + std::to_string(opt.repeat) : "") + " --verbose";
    if (!run.unavailable.empty()) {
      rec.status = ImplOutput::Status::Skip;
      rec.message = run.unavailable;
      ++run.skipped;
      run.cases.push_back(std::move(rec));
      continue;
    }
    auto data = load_case(suite_dir, *man, c);
    if (!data.ok()) {
      if (error_file) *error_file = (std::filesystem::path(suite_dir) / c.file).string();
      return std::move(data).error();
    }
    const auto tr = Clock::now();
    auto ref = reference_result(*data, c.out_dtype, pol, opt.literal_reference);
    rec.ref_seconds = since(tr);
    if (!ref.ok()) return make_error(ErrorKind::AuditReferenceFailed, {c.id, ref.error().message});
    CaseInput in{c, *data, (std::filesystem::path(run.suite_dir) / c.file).string(), pol};
    ImplOutput out = impl.run(in);
    rec.impl_seconds = out.seconds;
    rec.status = out.status;
    rec.message = out.message;
    // Reruns of a case that ran (a skip or a refusal is not repeated), stopping at the first difference.
    for (unsigned k = 2; out.status == ImplOutput::Status::Ok && k <= opt.repeat && rec.unstable.empty(); ++k) {
      if (opt.progress)
        std::fprintf(stderr, "\r\033[K[%zu/%zu] %s run %u/%u  %.1fs", i + 1, todo.size(), c.id.c_str(), k, opt.repeat,
                     since(t0));
      const ImplOutput again = impl.run(in);
      rec.impl_seconds += again.seconds;
      if (std::string d = rerun_difference(c, out, again); !d.empty())
        rec.unstable = "run " + std::to_string(k) + " of " + std::to_string(opt.repeat) + " differs from run 1: " + d;
    }
    switch (out.status) {
      case ImplOutput::Status::Ok:
        rec.verdict = judge(c, *data, *ref, out, pol, opt.policy);
        if (!rec.unstable.empty())
          ++run.unstable;
        else if (rec.verdict.overall == Verdict::Fail)
          ++run.failed;
        else if (rec.verdict.overall == Verdict::Order)
          ++run.order;
        else
          ++run.exact;
        break;
      case ImplOutput::Status::Skip:
        ++run.skipped;
        break;
      case ImplOutput::Status::Unsupported:
        ++run.unsupported;
        break;
      case ImplOutput::Status::UpstreamError:
        ++run.upstream_errors;
        break;
      case ImplOutput::Status::Failed:
        ++run.broken;
        break;
      case ImplOutput::Status::Wrong:
        // A result that breaks the output contract (an element left unwritten, a write past a buffer):
        // wrong, though there are no values to compare. Not rerun: it failed already.
        rec.status = ImplOutput::Status::Ok;
        rec.verdict = contract_broken(out.message);
        ++run.failed;
        break;
    }
    run.impl_seconds += rec.impl_seconds;
    run.ref_seconds += rec.ref_seconds;
    run.cases.push_back(std::move(rec));
  }
  if (opt.progress) std::fprintf(stderr, "\r\033[K");
  plugin::set_progress_line(false);
  run.seconds = since(t0) + impl.setup_seconds();
  run.impl_seconds += impl.setup_seconds();
  return run;
}

Outcome outcome(const AuditRun& r) {
  if (r.failed || r.upstream_errors || r.broken || r.unstable) return Outcome::Fail;
  return r.exact + r.order == 0 ? Outcome::NothingRan : Outcome::Pass;
}

std::string_view outcome_name(Outcome o) {
  switch (o) {
    case Outcome::Pass:
      return "pass";
    case Outcome::Fail:
      return "fail";
    case Outcome::NothingRan:
      break;
  }
  return "nothing_ran";
}

json::Value run_to_json(const AuditRun& r) {
  json::Value v = json::Value::object();
  v.set("ok", json::Value::from_bool(outcome(r) == Outcome::Pass));
  v.set("outcome", str(std::string(outcome_name(outcome(r)))));
  v.set("implementation", os_str(r.impl_name));
  v.set("suite", os_str(r.suite_dir));
  v.set("grid", str(r.grid));
  v.set("policy", str(r.policy));
  v.set("act_policy", str(r.act_policy));
  v.set("repeat", u(r.repeat));
  v.set("reference", str("CPU reference (" + std::string(r.literal_reference ? "literal" : "fast") + "), comfy-kitchen " +
                         r.comfy_kitchen + " semantics"));
  if (!r.unavailable.empty()) v.set("unavailable", os_str(r.unavailable));
  json::Value counts = json::Value::object();
  counts.set("cases", u(r.cases.size()));
  counts.set("exact", u(r.exact));
  counts.set("order", u(r.order));
  counts.set("failed", u(r.failed));
  counts.set("skipped", u(r.skipped));
  counts.set("unsupported", u(r.unsupported));
  counts.set("upstream_errors", u(r.upstream_errors));
  counts.set("broken", u(r.broken));
  counts.set("unstable", u(r.unstable));
  v.set("counts", std::move(counts));
  v.set("seconds", json::Value::from_float(r.seconds));
  v.set("impl_seconds", json::Value::from_float(r.impl_seconds));
  v.set("reference_seconds", json::Value::from_float(r.ref_seconds));
  json::Value cases = json::Value::array();
  for (const auto& c : r.cases) {
    json::Value o = json::Value::object();
    o.set("id", str(c.spec.id));
    o.set("describe", str(describe(c.spec)));
    o.set("covers", str(c.spec.covers));
    o.set("status", str(std::string(status_name(c.status))));
    if (!c.message.empty()) o.set("message", os_str(c.message));
    if (!c.unstable.empty()) o.set("unstable", os_str(c.unstable));
    if (c.status == ImplOutput::Status::Ok) {
      o.set("verdict", str(std::string(verdict_name(c.verdict.overall))));
      if (!c.verdict.first_fail.empty()) o.set("failing_stage", str(c.verdict.first_fail));
      json::Value stages = json::Value::object();
      for (int s = 0; s < kStages; ++s) {
        const StageResult& sr = c.verdict.stages[s];
        json::Value so = json::Value::object();
        so.set("verdict", str(std::string(verdict_name(sr.verdict))));
        if (sr.verdict != Verdict::Absent) {
          so.set("differing", u(sr.differing));
          so.set("explained", u(sr.explained));
          so.set("detail", str(sr.detail));
        }
        stages.set(std::string(stage_name(Stage(s))), std::move(so));
      }
      o.set("stages", std::move(stages));
      json::Value ts = json::Value::array();
      for (const auto& t : c.verdict.tensors) ts.items.push_back(stats_to_json(t));
      o.set("tensors", std::move(ts));
      const TensorStats& os = c.verdict.out_vs_ref;
      if (!os.tiles.empty()) {
        json::Value tm = json::Value::object();
        tm.set("tile_m", u(os.tile_m));
        tm.set("tile_n", u(os.tile_n));
        tm.set("rows", u(os.tiles_m));
        tm.set("cols", u(os.tiles_n));
        json::Value cells = json::Value::array();
        for (auto t : os.tiles) cells.items.push_back(u(t == kNanUlp ? std::uint64_t(1) << 53 : t));
        tm.set("max_ulp", std::move(cells));
        o.set("output_tiles", std::move(tm));
      }
    }
    o.set("impl_seconds", json::Value::from_float(c.impl_seconds));
    o.set("reference_seconds", json::Value::from_float(c.ref_seconds));
    o.set("repro", os_str(c.repro));
    cases.items.push_back(std::move(o));
  }
  v.set("cases", std::move(cases));
  return v;
}

std::string run_to_text(const AuditRun& r, bool verbose) {
  std::string s;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "audit of %s on %s (%s grid), policy %s, activation policy %s, expected values: comfy-kitchen %s "
                "semantics (%s reference)\n",
                r.impl_name.c_str(), r.suite_dir.c_str(), r.grid.c_str(), r.policy.c_str(), r.act_policy.c_str(),
                r.comfy_kitchen.c_str(), r.literal_reference ? "literal" : "fast");
  s += buf;
  if (!r.unavailable.empty()) s += "SKIPPED: every case: " + r.unavailable + "\n";
  for (const auto& c : r.cases) {
    const bool bad = c.status == ImplOutput::Status::UpstreamError || c.status == ImplOutput::Status::Failed ||
                     (c.status == ImplOutput::Status::Ok && (c.verdict.overall == Verdict::Fail || !c.unstable.empty()));
    if (!bad && !verbose) continue;
    if (c.status != ImplOutput::Status::Ok) {
      if (c.status == ImplOutput::Status::Skip && !r.unavailable.empty() && !verbose) continue;
      const char* tag = c.status == ImplOutput::Status::Skip            ? "SKIP"
                        : c.status == ImplOutput::Status::Unsupported   ? "UNSUPPORTED"
                        : c.status == ImplOutput::Status::UpstreamError ? "UPSTREAM ERROR"
                                                                        : "BROKEN";
      s += std::string(tag) + " " + c.spec.id + ": " + c.message + "\n";
      continue;
    }
    if (!c.unstable.empty()) {
      s += "UNSTABLE " + c.spec.id + ": " + c.unstable + "\n  run 1's verdict: " +
           std::string(verdict_name(c.verdict.overall)) + "\n  repro: " + c.repro + "\n";
      continue;
    }
    s += (c.verdict.overall == Verdict::Fail    ? "FAIL "
          : c.verdict.overall == Verdict::Order ? "ORDER "
                                                : "EXACT ") +
         c.spec.id;
    if (!c.verdict.first_fail.empty()) s += "  [stage: " + c.verdict.first_fail + "]";
    s += "\n";
    for (int st = 0; st < kStages; ++st) {
      const StageResult& sr = c.verdict.stages[st];
      if (sr.verdict == Verdict::Absent) continue;
      if (!verbose && sr.verdict != Verdict::Fail) continue;
      s += "  " + std::string(stage_name(Stage(st))) + ": " + std::string(verdict_name(sr.verdict)) + " - " +
           sr.detail + "\n";
    }
    if (bad) s += "  repro: " + c.repro + "\n";
  }
  if (!verbose) {
    // Unsupported and skipped cases by reason, one line each (the case ids are in --verbose and the
    // JSON); skips of an implementation unavailable for every case are its SKIPPED line above.
    for (const auto& [status, tag] : {std::pair{ImplOutput::Status::Unsupported, "UNSUPPORTED"},
                                      std::pair{ImplOutput::Status::Skip, "SKIPPED"}}) {
      if (status == ImplOutput::Status::Skip && !r.unavailable.empty()) continue;
      std::vector<std::pair<std::string, std::uint64_t>> why;
      for (const auto& c : r.cases) {
        if (c.status != status) continue;
        auto it = std::find_if(why.begin(), why.end(), [&](const auto& w) { return w.first == c.message; });
        if (it == why.end())
          why.emplace_back(c.message, 1);
        else
          ++it->second;
      }
      for (const auto& [msg, n] : why)
        s += std::string(tag) + " (" + std::to_string(n) + (n == 1 ? " case): " : " cases): ") + msg + "\n";
    }
  }
  std::snprintf(buf, sizeof buf,
                "%zu %s: %llu exact, %llu order (explained), %llu failed, %llu unsupported by this implementation, "
                "%llu skipped, %llu upstream %s, %llu broken",
                r.cases.size(), r.cases.size() == 1 ? "case" : "cases", (unsigned long long)r.exact,
                (unsigned long long)r.order, (unsigned long long)r.failed, (unsigned long long)r.unsupported,
                (unsigned long long)r.skipped, (unsigned long long)r.upstream_errors,
                r.upstream_errors == 1 ? "error" : "errors", (unsigned long long)r.broken);
  s += buf;
  if (r.repeat > 1) {
    std::snprintf(buf, sizeof buf, ", %llu unstable (each case run %u times)", (unsigned long long)r.unstable, r.repeat);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, " (%.1f s; implementation %.1f s, reference %.1f s)\n", r.seconds, r.impl_seconds,
                r.ref_seconds);
  s += buf;
  // A run where nothing ran is not a pass: say so plainly (exit status 3).
  const Outcome o = outcome(r);
  s += o == Outcome::Fail          ? "FAIL\n"
       : o == Outcome::NothingRan  ? "NOTHING RAN (every case skipped or unsupported)\n"
       : r.unsupported + r.skipped ? "PASS (on the cases it ran; the others are listed as unsupported or skipped)\n"
                                   : "PASS\n";
  return s;
}

}  // namespace w4a8::audit
