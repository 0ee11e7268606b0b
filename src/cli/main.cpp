// w4a8check: command-line entry point. Subcommands live in their own files (commands.hpp); every
// outcome goes through the Reporter. Nothing escapes as an exception: out-of-memory and failures
// to start threads end as a clean message with exit status 2.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/stat.h>

#include "cli/commands.hpp"
#include "cli/heap_pages.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "cli/suggest.hpp"
#include "core/version.hpp"
#include "io/atomic_file.hpp"
#include "py/repr.hpp"

namespace {

using AddCommand = void (*)(CLI::App&, w4a8::cli::Reporter&);
struct Command {
  std::string_view name;
  AddCommand add;
};
// Every subcommand, in --help's order.
constexpr Command kCommands[] = {
    {"validate", w4a8::cli::add_validate_command}, {"gemm", w4a8::cli::add_gemm_command},
    {"quantize", w4a8::cli::add_quantize_command}, {"versions", w4a8::cli::add_versions_command},
#ifdef W4A8_CLI_HAVE_AUDIT
    {"audit", w4a8::cli::add_audit_command},       {"compare", w4a8::cli::add_compare_command},
#endif
};

// Whether `flag` is among the options (before any "--").
bool has_flag(int argc, char** argv, std::string_view flag) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == flag) return true;
  }
  return false;
}
bool asks_for_json(int argc, char** argv) { return has_flag(argc, argv, "--json"); }
// validate --quiet: every message on one line. (quantize's --quiet only silences its progress.)
bool one_line_messages(int argc, char** argv) {
  return argc > 1 && std::string_view(argv[1]) == "validate" && has_flag(argc, argv, "--quiet");
}

// An existing file whose name starts with '-' is read as an option, and the error then speaks of
// something else ("checkpoint is required"): say how to name it. And a "--" after a file name ends
// nothing (CLI11 takes it only before the first one): the names after it are "not expected".
void note_dash_files(int argc, char** argv, std::string_view error, w4a8::cli::Reporter& report) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") {
      const bool after_refused = error.find(" not expected") != std::string_view::npos && i + 1 < argc &&
                                 error.find(argv[i + 1]) != std::string_view::npos;
      if (after_refused)
        report.note("-- ends the options only before the first file name: write every file name after it (w4a8check "
                    "COMMAND [OPTIONS] -- FILE...), or a name that starts with '-' as ./NAME");
      return;
    }
    struct stat st {};
    if (a.size() > 1 && a[0] == '-' && ::stat(argv[i], &st) == 0)
      report.note("'" + std::string(a) + "' was read as an option; to name that file, write ./" + std::string(a) +
                  " or put -- before the first file name (options before it)");
  }
}

int run(int argc, char** argv, w4a8::cli::Reporter& report) {
  CLI::App app{
      "w4a8check: validate Comfy asym_w4a8_int8 safetensors checkpoints exactly as sglang does\n"
      "(plus --strict kernel checks), quantize float checkpoints, and run the W4A8 GEMM on their layers.\n"
      "Exit status: 0 success/accepted, 1 rejected, 2 usage, I/O or environment error.",
      "w4a8check"};
  w4a8::cli::use_help_format(app);  // before the subcommands: they copy it
  app.require_subcommand(1);
  app.set_version_flag("--version", "w4a8check " W4A8CHECK_VERSION);
  // A command line that starts with a subcommand's name gets that subcommand alone: building the
  // others' options and tearing them down was a third of a `validate` start-up's instructions. Any
  // other command line (--help, --version, a typo) gets them all, so its help and errors list them.
  const Command* named = nullptr;
  for (const Command& c : kCommands)
    if (argc > 1 && c.name == argv[1]) named = &c;
  // Where no command comes first, CLI11 would only say "A subcommand is required": name what is wrong.
  std::string all;
  std::vector<std::string_view> names;
  for (const Command& c : kCommands) names.push_back(c.name), all += (all.empty() ? "" : ", ") + std::string(c.name);
  const auto usage = [&](const std::string& what) {
    w4a8::cli::FailStyle style;
    if (asks_for_json(argc, argv)) style.format = w4a8::cli::Format::Json;
    report.fail(w4a8::make_error(w4a8::ErrorKind::UsageError, {what + " (commands: " + all + "; w4a8check --help)"}), style);
    return 2;
  };
  if (named == nullptr) {
    int first_word = 0;  // the first argument that is not an option
    for (int i = 1; i < argc && first_word == 0; ++i)
      if (argv[i][0] != '-') first_word = i;
    const std::string_view first = argc > 1 ? argv[1] : "";
    if (first_word == 1) {  // a mistyped command
      const auto near = w4a8::cli::closest_names(argv[1], names, 1);
      return usage("unknown command " + w4a8::py::repr_str(argv[1]) + (near.empty() ? "" : "; did you mean " + near.front() + "?"));
    }
    if (argc == 1) return usage("a command is required");
    if (first != "--help" && first != "-h" && first != "--version") {  // (CLI11 answers those)
      if (first_word == 0)
        return usage("a command is required (" + w4a8::py::repr_str(first) + " is an option: options go after the command)");
      return usage("the command comes first: " + w4a8::py::repr_str(first) +
                   " is not a command, and options go after the command (w4a8check COMMAND " + std::string(first) + " ...)");
    }
  }
  if (named != nullptr) {
    named->add(app, report);
  } else {
    for (const Command& c : kCommands) c.add(app, report);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Through the one reporter, as every other error ("w4a8check: MESSAGE" and its code), then
    // where help is; with --json the error object on stdout as well (a script reads JSON there).
    // CLI11's words for an option given twice, said plainly.
    std::string what = e.what();
    constexpr std::string_view kTwice = ": At Most 1 required but received ";
    if (const auto at = what.find(kTwice); at != std::string::npos)
      what = what.substr(0, at) + " is given " + what.substr(at + kTwice.size()) + " times; give it once";
    const w4a8::Error err = w4a8::make_error(w4a8::ErrorKind::UsageError, {what});
    report.fail(err);
    std::string help = "w4a8check";
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      help += " " + sub->get_name();
    }
    report.err() << "Run " << help << " --help for more information.\n";
    note_dash_files(argc, argv, what, report);
    if (asks_for_json(argc, argv)) {
      w4a8::cli::FailStyle json;
      json.format = w4a8::cli::Format::Json;
      report.fail(err, json);
    }
    return 2;  // usage errors exit 2, as documented
  }
  return report.exit_code();
}

// The exit status, once everything printed has reached standard output. A verdict or report that
// could not be written (a full disk, a closed descriptor) must not leave status 0 behind it: a
// script would read "accepted" with no report. (A closed pipe ends the process by SIGPIPE first.)
int finish(w4a8::cli::Reporter& report, bool one_line) {
  errno = 0;
  std::cout.flush();
  const bool written = static_cast<bool>(std::cout) && std::fflush(stdout) == 0 && std::ferror(stdout) == 0;
  if (written) return report.exit_code();
  const int err = errno;
  w4a8::cli::FailStyle style;
  style.one_line = one_line;  // --quiet: every message on one line, this one too
  report.fail(w4a8::make_error(w4a8::ErrorKind::IoWriteFailed, {"standard output", err != 0 ? std::strerror(err) : "write error"}),
              style);
  return report.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  w4a8::cli::reserve_heap_in_huge_pages(std::size_t{32} << 20);
  w4a8::io::install_output_cleanup();
  w4a8::io::set_read_fault_json(asks_for_json(argc, argv));
  w4a8::cli::Reporter report(std::cout, std::cerr);
  try {
    const int rc = run(argc, argv, report);
    return rc == report.exit_code() ? finish(report, one_line_messages(argc, argv)) : rc;  // (a usage error, already reported)
  } catch (const std::bad_alloc&) {
    report.fail(w4a8::make_error(w4a8::ErrorKind::SysResources, {"out of memory", "std::bad_alloc"}));
  } catch (const std::system_error& e) {
    report.fail(w4a8::make_error(w4a8::ErrorKind::SysResources, {"system error", e.what()}));
  } catch (const std::exception& e) {
    report.fail(w4a8::make_error(w4a8::ErrorKind::SysResources, {"internal error", e.what()}));
  }
  return finish(report, one_line_messages(argc, argv));
}
