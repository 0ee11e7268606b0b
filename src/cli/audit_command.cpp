// `w4a8check audit`: kernel correctness audits (docs/audit.md).
//   audit make  --out DIR [--grid small|standard|full] [--seed S]   write a suite
//   audit check DIR --impl NAME | --kernel PATH.so | --command CMD   run an implementation over it
//   audit to-f32 IN OUT                                             BF16/F16/FP8 tensors -> F32 (numpy)
// Exit status: 0 pass, 1 a case failed (or the implementation raised / broke), 2 usage or I/O,
// 3 nothing ran (every case skipped or unsupported).
#include <CLI/CLI.hpp>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <ostream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <unistd.h>

#include "audit/fp8_values.hpp"
#include "audit/report_html.hpp"
#include "audit/runner.hpp"
#include "audit/suite.hpp"
#include "audit/tensor_compare.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "gemm/numerics.hpp"
#include "gemm/tensor_io.hpp"
#include "io/atomic_file.hpp"
#include "io/output_guard.hpp"
#include "plugin/call_guard.hpp"
#include "py/repr.hpp"
#include "safetensors/reader.hpp"
#include "safetensors/writer.hpp"

namespace w4a8::cli {
namespace {

struct MakeArgs {
  std::string out, grid = "small";
  std::uint64_t seed = 1;
  bool list = false;
};

struct CheckArgs {
  std::string dir, impl, kernel, command, policy = "explained", act_policy, report, reference, work_dir;
  std::vector<std::string> cases;
  bool json = false, verbose = false, keep = false, no_progress = false;
  bool impl_given = false, kernel_given = false, command_given = false;  // even with an empty value
  bool timeout_given = false, threads_given = false;
  unsigned threads = 0;
  unsigned repeat = 1;
  double timeout = 600;
};

struct ToF32Args {
  std::string in, out;
};

void run_make(const MakeArgs& a, Reporter& report) {
  auto cases = audit::grid_cases(a.grid, a.seed);
  if (!cases.ok()) return report.fail(cases.error());
  audit::Manifest m;
  m.grid = a.grid;
  m.seed = a.seed;
  m.cases = std::move(*cases);
  if (a.list) {
    for (const auto& c : m.cases) report.out() << c.id << "  " << audit::describe(c) << "\n";
    report.out() << m.cases.size() << (m.cases.size() == 1 ? " case\n" : " cases\n");
    report.succeed();
    return;
  }
  const bool tty = ::isatty(2) != 0;
  auto progress = [&](std::size_t i, std::size_t n, const std::string& id) {
    if (tty) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", i, n, id.c_str());
  };
  auto st = audit::write_suite(a.out, m, progress);
  if (tty) std::fprintf(stderr, "\r\033[K");
  if (!st.ok()) return report.fail(st.error());
  std::uint64_t elems = 0;
  for (const auto& c : m.cases) elems += c.m * c.n * c.k;
  report.out() << "wrote " << m.cases.size() << (m.cases.size() == 1 ? " case (" : " cases (") << a.grid << " grid, seed " << a.seed << ", " << elems
               << " multiply-adds in all) to " << a.out << "\n";
  report.succeed();
}

// The --command work directory. One this run made is removed when the audit is done with it (after
// the command has stopped), except a stderr log with something in it, which is kept and named; one
// the user chose (--work-dir) or asked to keep (--keep-outputs) stays, and is named.
class WorkDir {
 public:
  explicit WorkDir(Reporter& report) : report_(report) {}
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir() { finish(); }
  void set(std::string path, bool made, bool keep) { path_ = std::move(path), made_ = made, keep_ = keep; }
  void finish() {
    if (path_.empty()) return;
    const std::string dir = std::exchange(path_, "");
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path log = fs::path(dir) / "command.stderr.log";
    const bool wrote_stderr = fs::file_size(log, ec) > 0 && !ec;
    if (!made_ || keep_) {
      report_.note(std::string(keep_ ? "the command's outputs are kept in " : "the command's work directory: ") + dir);
      return;
    }
    if (!wrote_stderr) {
      fs::remove_all(dir, ec);
      return;
    }
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path() != log) fs::remove_all(e.path(), ec);
    report_.note("the command wrote to stderr: " + log.string());
  }

 private:
  Reporter& report_;
  std::string path_;
  bool made_ = false, keep_ = false;
};

void run_check(const CheckArgs& a, Reporter& report) {
  // With --json every error is a JSON object on stdout too; the file it concerns is named there.
  // The text names the file too when the message does not (the manifest or case file a field of it
  // is wrong in); the JSON always has it as "file".
  auto fail = [&](const Error& e, std::string_view file = {}) {
    FailStyle s;
    if (a.json) s.format = Format::Json, s.where = file;
    else if (!file.empty() && e.message.find(file) == std::string::npos) s.where = file;
    report.fail(e, s);
  };
  const int sources = int(a.impl_given) + int(a.kernel_given) + int(a.command_given);
  if (sources != 1)
    return fail(make_error(ErrorKind::AuditImplementation, {" (got " + std::to_string(sources) + ")"}));
  // An empty path would otherwise count as no --kernel at all.
  if (a.kernel_given && a.kernel.empty())
    return fail(make_error(ErrorKind::AuditImplementation, {" (--kernel is empty)"}));
  // --timeout bounds an external command or a kernel plugin's calls; the other built-ins run our own
  // code, where it would be ignored (never silently).
  if (a.timeout_given && !a.command_given && !a.kernel_given && a.impl != "cuda")
    return fail(make_error(ErrorKind::UsageError,
                           {"--timeout requires --command, --kernel or --impl cuda (--impl " + a.impl + " runs no plugin)"}));
  if (a.threads_given && !(a.impl_given && a.impl == "fast"))
    return fail(make_error(ErrorKind::UsageError, {kThreadsFastOnly}));
  if (a.timeout_given && !a.command_given) plugin::set_call_time_limit(a.timeout);
  auto policy = audit::parse_policy(a.policy);
  if (!policy.ok()) return fail(policy.error());
  audit::RunOptions opt;
  opt.policy = *policy;
  opt.only_cases = a.cases;
  opt.repeat = a.repeat;
  opt.progress = !a.no_progress && !a.json && ::isatty(2) != 0;
  if (a.act_policy == "eager")
    opt.act_policy = gemm::ActPolicy::Eager;
  else if (a.act_policy == "f32")
    opt.act_policy = gemm::ActPolicy::F32;
  // Auditing `fast` against itself would prove nothing: its expected values come from `literal`.
  opt.literal_reference = a.reference.empty() ? a.impl == "fast" : a.reference == "literal";
  WorkDir work_dir(report);  // declared before impl: removed after the command has stopped
  Result<std::unique_ptr<audit::Implementation>> impl = make_error(ErrorKind::AuditImplementation, {""});
  if (a.impl_given) {
    impl = audit::make_builtin(a.impl, a.threads);
    opt.repro_impl_args = "--impl " + a.impl;
  } else if (a.kernel_given) {
    impl = audit::make_plugin(a.kernel);
    char abs[4096];
    opt.repro_impl_args =
        "--kernel " + audit::shell_quote(::realpath(a.kernel.c_str(), abs) ? std::string(abs) : a.kernel);
  } else {
    if (a.command.empty()) return fail(make_error(ErrorKind::AuditImplementation, {" (--command is empty)"}));
    std::string work = a.work_dir;
    if (work.empty()) {
      char tmpl[] = "/tmp/w4a8check-audit-XXXXXX";
      if (!::mkdtemp(tmpl)) return fail(make_error(ErrorKind::IoWriteFailed, {tmpl, std::strerror(errno)}));
      work = tmpl;
      work_dir.set(work, true, a.keep);
    } else {
      work_dir.set(work, false, a.keep);
    }
    impl = audit::make_command(a.command, work, a.keep, a.timeout);
    opt.repro_impl_args = "--command " + audit::shell_quote(a.command);
  }
  if (!impl.ok()) return fail(impl.error());
  std::string error_file;
  auto run = audit::run_audit(a.dir, **impl, opt, &error_file);
  impl->reset();  // stops an external command before its work directory is cleaned up
  work_dir.finish();
  if (!run.ok()) return fail(run.error(), error_file);
  if (!a.report.empty()) {
    auto w = audit::write_report(a.report, *run);
    if (!w.ok()) return fail(w.error(), a.report);
    if (!a.json) report.err() << "report: " << *w << "\n";
  }
  if (a.json)
    report.out() << audit::strict_json(audit::run_to_json(*run)) << "\n";
  else
    report.out() << audit::run_to_text(*run, a.verbose);
  if (const audit::Outcome o = audit::outcome(*run); o == audit::Outcome::NothingRan)
    report.nothing_ran();
  else
    report.verdict(o == audit::Outcome::Pass);
}

void run_to_f32(const ToF32Args& a, Reporter& report) {
  io::InputGuard guard;
  guard.add(a.in);
  if (auto g = guard.check_output(a.out); !g.ok()) return report.fail(g.error());
  auto f = st::File::open(a.in);
  if (!f.ok()) {
    FailStyle s;
    s.where = a.in;
    s.input_file = true;  // a broken input is an input error (exit 2), named
    return report.fail(f.error(), s);
  }
  std::vector<st::TensorSpec> t;
  std::vector<std::string> kept_floats;
  std::size_t widened = 0;
  for (const auto& ti : f->header().tensors) {
    gemm::FloatDtype d;
    if (gemm::float_dtype_of(ti.dtype, d) && d != gemm::FloatDtype::F32) {
      auto v = gemm::read_floats(*f, ti, ti.name);
      if (!v.ok()) return report.fail(v.error());
      t.push_back(gemm::float_tensor(ti.name, gemm::FloatDtype::F32, ti.shape, *v));  // exact widening
      ++widened;
    } else if (const auto widen = audit::fp8_decoder(ti.dtype)) {
      // numpy has no float8 either; every FP8 value is a float32 value.
      const auto bytes = f->data(ti);
      std::vector<float> v(bytes.size());
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = widen(bytes[i]);
      t.push_back(gemm::float_tensor(ti.name, gemm::FloatDtype::F32, ti.shape, v));
      ++widened;
    } else {
      // F4 and F6 (packed below a byte) stay as they are: numpy cannot read them, so say so.
      if (st::dtype_bits(ti.dtype) < 8)
        kept_floats.emplace_back(py::repr_str(ti.name) + " (" + std::string(st::dtype_name(ti.dtype)) + ")");
      auto bytes = f->data(ti);
      t.push_back({ti.name, ti.dtype, ti.shape, std::vector<std::uint8_t>(bytes.begin(), bytes.end())});
    }
  }
  if (!kept_floats.empty()) {
    std::string names;
    for (const auto& k : kept_floats) {
      if (!names.empty()) names += ", ";
      names += k;
    }
    report.warn("kept in their packed dtype (not widened; numpy cannot read them): " + names);
  }
  st::WriteOptions wo;
  if (f->header().has_metadata) wo.metadata = f->header().metadata;
  auto bytes = st::serialize(t, wo);
  if (!bytes.ok()) return report.fail(bytes.error());
  auto w = io::write_file_atomic(a.out, *bytes);
  if (!w.ok()) return report.fail(w.error());
  report.out() << "wrote " << t.size() << (t.size() == 1 ? " tensor" : " tensors") << " (" << widened
               << " widened to F32 from BF16, F16 or FP8) to " << a.out << "\n";
  report.succeed();
}

}  // namespace

void add_audit_command(CLI::App& app, Reporter& report) {
  CLI::App* audit = app.add_subcommand(
      "audit",
      "Kernel correctness audits: write a suite of W4A8 cases, run any implementation over it (built-in,\n"
      "kernel plugin library, external command) and judge it stage by stage (docs/audit.md).");
  audit->require_subcommand(1);

  auto mk = std::make_shared<MakeArgs>();
  CLI::App* make =
      audit->add_subcommand("make", "Write an audit suite: case files (layer + activations) and manifest.json.");
  auto* make_out = make->add_option("--out", mk->out, "directory to create (must not already hold a suite)");
  add_name_option(*make, "--grid", mk->grid, {"small", "standard", "full"},
                  "small (CI, seconds), standard (< 1 min through fast), full (long)");
  require_decimal<std::uint64_t>(make->add_option("--seed", mk->seed, "seed of every case's data (0 to 2^64 - 1)"))
      ->capture_default_str();
  make->add_flag("--list", mk->list, "print the grid's cases instead of writing them")->excludes(make_out);
  make->callback([mk, &report] {
    if (mk->out.empty() && !mk->list) return report.fail(make_error(ErrorKind::AuditNoOutput, {}));
    run_make(*mk, report);
  });

  auto ck = std::make_shared<CheckArgs>();
  CLI::App* check =
      audit->add_subcommand("check",
                            "Run an implementation over a suite and compare it with the CPU reference.\n"
                            "Exit status: 0 pass, 1 a case failed or the implementation raised/broke, 2 usage or I/O,\n"
                            "3 nothing ran (every case skipped or unsupported, e.g. no GPU).");
  // (an empty one read ./manifest.json: whatever suite the working directory holds)
  require_path(check->add_option("suite", ck->dir, "suite directory (from `audit make`)"))->required();
  auto* impl = add_name_option(*check, "--impl", ck->impl, {"literal", "fast", "emulate", "cuda"},
                               "built-in: literal, fast, emulate, cuda");
  auto* kernel =
      check->add_option("--kernel", ck->kernel, "shared library exporting w4a8_kernel_plugin_v1 (kernels/w4a8_cuda.h)");
  auto* command =
      check->add_option("--command", ck->command, "external command speaking the audit line protocol (docs/audit.md)");
  check->add_option("--policy", ck->policy, "exact | ulp:N | rel:X | explained[:N]")->capture_default_str();
  add_name_option(*check, "--act-policy", ck->act_policy, {"f32", "eager"},
                  "activation policy of the expected values (default: the implementation's)");
  add_name_option(*check, "--reference", ck->reference, {"fast", "literal"},
                  "fast or literal (default: fast; literal when auditing --impl fast)");
  check->add_option("--case", ck->cases, "only these case ids (repeatable)");
  require_decimal(check->add_option("--repeat", ck->repeat,
                                    "run each case N times; a case whose reruns differ from its first run in any bit "
                                    "fails as unstable (races, unwritten or stale memory)"),
                  1, 1000)
      ->type_name("N")
      ->capture_default_str();
  // An empty DIR (an unset shell variable) is refused, not taken as "no report".
  check->add_option("--report", ck->report, "write a self-contained HTML report (index.html) and results.json here")
      ->check([](const std::string& v) { return v.empty() ? std::string("an empty directory name") : std::string(); });
  auto* threads =
      require_decimal<unsigned>(check->add_option("--threads", ck->threads, "threads for --impl fast (0 = all cores)"));
  threads->capture_default_str();
  // --command's own options are refused without it (never silently ignored).
  check->add_option("--work-dir", ck->work_dir, "--command: where its outputs go (default: a new /tmp dir)")->needs(command);
  check->add_flag("--keep-outputs", ck->keep, "--command: keep its output files")->needs(command);
  auto* timeout = check->add_option(
      "--timeout", ck->timeout,
      "seconds (over 0, at most 1000000) --command gets for its hello line and for each case, then it and everything "
      "it started are killed; and each call into a kernel plugin (--kernel, --impl cuda) may take, then the audit "
      "ends (exit 2). Plugins have no limit without it");
  timeout
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            char* end = nullptr;
            const double t = std::strtod(v.c_str(), &end);
            // (also refuses inf and nan: a deadline past the clock's range expired at once)
            if (end == v.c_str() || *end != '\0' || !(t > 0 && t <= 1e6)) return "--timeout must be a number of seconds in (0, 1000000]";
            return "";
          },
          "SECONDS"));
  check->add_flag("--json", ck->json, "print the results as JSON");
  check->add_flag("--verbose", ck->verbose, "list every case and stage, not only failures");
  check->add_flag("--no-progress", ck->no_progress, "no progress line even on a terminal");
  check->callback([ck, impl, kernel, command, timeout, threads, &report] {
    ck->timeout_given = timeout->count() > 0;
    ck->threads_given = threads->count() > 0;
    ck->impl_given = impl->count() > 0;
    ck->kernel_given = kernel->count() > 0;
    ck->command_given = command->count() > 0;
    run_check(*ck, report);
  });

  auto tf = std::make_shared<ToF32Args>();
  CLI::App* to_f32 =
      audit->add_subcommand("to-f32", "Copy a safetensors file with BF16, F16 and FP8 tensors (FNUZ included) widened to F32 (for\n"
                            "numpy); F4/F6 tensors are kept as they are, with a warning.");
  require_path(to_f32->add_option("in", tf->in, "input file"))->required();
  require_path(to_f32->add_option("out", tf->out, "output file (written atomically)"))->required();
  to_f32->callback([tf, &report] { run_to_f32(*tf, report); });
}

}  // namespace w4a8::cli
