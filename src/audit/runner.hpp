// Runs an implementation over an audit suite: for each case, the reference (expected values), the
// implementation, and the verdict; progress on a terminal; results as JSON or text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/explain.hpp"
#include "audit/implementation.hpp"
#include "audit/tensor_compare.hpp"
#include "core/upstream.hpp"
#include "json/value.hpp"

namespace w4a8::audit {

struct RunOptions {
  Policy policy;                              // explained unless told otherwise
  std::optional<gemm::ActPolicy> act_policy;  // default: the implementation's natural policy
  bool literal_reference = false;             // expected values from gemm_literal (auditing `fast`)
  std::vector<std::string> only_cases;        // ids; empty = all
  std::string repro_impl_args;                // e.g. "--impl fast", "--kernel /x.so" (for repro lines)
  bool progress = false;                      // a progress line on stderr
  unsigned repeat = 1;                        // runs of each case; from the second on, compared with the first
};

struct CaseRecord {
  CaseSpec spec;
  ImplOutput::Status status = ImplOutput::Status::Ok;
  std::string message;  // skip / error reason
  CaseVerdict verdict;  // status Ok only
  double impl_seconds = 0, ref_seconds = 0;
  std::string repro;  // one command line reproducing this case
  std::string unstable;  // with repeat > 1: how a later run differed from the first ("" when none did)
};

struct AuditRun {
  std::string impl_name, suite_dir, grid, policy, act_policy;
  std::vector<CaseRecord> cases;
  std::string comfy_kitchen;  // whose semantics the expected values follow (upstream profile version)
  bool literal_reference = false;  // the expected values came from the literal reference (else fast)
  unsigned repeat = 1;             // runs of each case (RunOptions::repeat)
  // Each case counts once: an unstable one (a rerun differed) only as unstable, whatever run 1's verdict.
  std::uint64_t exact = 0, order = 0, failed = 0, skipped = 0, unsupported = 0, upstream_errors = 0, broken = 0,
                unstable = 0;
  double seconds = 0, impl_seconds = 0, ref_seconds = 0;
  std::string unavailable;  // the implementation's reason when it cannot run at all
};

// @return the run, or read_suite()'s / load_case()'s errors, AuditNoSuchCase for an unknown --case id,
//         AuditReferenceFailed when the reference refuses a case. error_file (when given) is set to the
//         file an error concerns: the manifest or a case file.
Result<AuditRun> run_audit(const std::string& suite_dir, Implementation& impl, const RunOptions& opt,
                           std::string* error_file = nullptr);

// Pass: every case that ran passed (exact or order) and nothing broke (unsupported and skipped cases
// are counted and listed, not failed); Fail: a case failed, the implementation raised on a valid case
// (upstream error) or its adapter broke; NothingRan: no case ran (every one skipped or unsupported),
// which is not a pass of anything, so a CI job without the GPU its audit needs does not turn green.
enum class Outcome { Pass, Fail, NothingRan };
Outcome outcome(const AuditRun& r);
std::string_view outcome_name(Outcome o);  // "pass", "fail", "nothing_ran" (the JSON's "outcome")

json::Value run_to_json(const AuditRun& r);
std::string run_to_text(const AuditRun& r, bool verbose);
// JSON text with non-finite numbers as strings ("NaN", "Infinity", "-Infinity": json::NonFinite::String),
// so any JSON reader takes it.
std::string strict_json(const json::Value& v);

// The shell-quoted form of a word ('it''s' style), for repro lines.
std::string shell_quote(const std::string& s);

}  // namespace w4a8::audit
