// `w4a8check versions`: the upstream releases whose behaviour this build predicts (the .def tables
// read through core/upstream.hpp) and what differs between them.
#include <CLI/CLI.hpp>

#include <iterator>
#include <ostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "core/version.hpp"
#include "core/upstream.hpp"
#include "py/version.hpp"

namespace w4a8::cli {
namespace {

std::string_view merge_text(upstream::MarkerMerge m) {
  return m == upstream::MarkerMerge::WholeMarker ? "whole-marker compare" : "per-key merge";
}

void run(bool json, Reporter& report) {
  std::ostream& out = report.out();
  report.succeed();
  if (json) {
    JsonWriter w(out);
    w.begin_object().key("w4a8check").string(W4A8CHECK_VERSION);
    w.key("sglang").begin_object().key("default").string(upstream::profile(upstream::kLatestSglang).version);
    w.key("profiles").begin_object();
    for (const auto& p : upstream::kSglangProfiles)
      w.key(p.version).begin_object().key("markers").string(merge_text(p.merge)).key("changes").string(p.note).end_object();
    w.end_object().end_object();
    w.key("comfy_kitchen").begin_object().key("default").string(upstream::profile(upstream::kLatestComfyKitchen).version);
    w.key("profiles").begin_object();
    // Each profile with the releases it stands for (what --comfy-kitchen accepts and maps to it).
    const auto ranges = comfy_kitchen_release_ranges();
    for (std::size_t i = 0; i < std::size(upstream::kComfyKitchenProfiles); ++i) {
      const auto& p = upstream::kComfyKitchenProfiles[i];
      w.key(p.version).begin_object().key("changes").string(p.note);
      w.key("releases").begin_object().key("first").string(ranges[i].first).key("last").string(ranges[i].second).end_object();
      w.end_object();
    }
    w.end_object().end_object();
    // The Pythons --python models, with whether each row was checked against that interpreter.
    w.key("python").begin_object().key("default").string(py::version_name(py::kDefaultVersion));
    w.key("versions").begin_object();
    for (std::size_t i = 0; i < std::size_t(py::Version::kCount); ++i) {
      const auto v = py::Version(i);
      const py::InterpreterFacts& f = py::kInterpreterFacts[i];
      w.key(py::version_name(v)).begin_object().key("unicode").string(py::unicode_version(v));
      w.key("json_max_depth").number(std::uint64_t(f.json_max_depth)).key("measured").boolean(f.measured).end_object();
    }
    w.end_object().end_object().end_object();
    out << "\n";
    return;
  }
  out << "w4a8check " W4A8CHECK_VERSION "\n\n";
  out << "sglang (inspect_comfy_quant_markers; validate --sglang V, default "
      << upstream::profile(upstream::kLatestSglang).version << "):\n";
  for (const auto& p : upstream::kSglangProfiles)
    out << "  " << p.version << "  " << merge_text(p.merge) << "  " << p.note << "\n";
  out << "\ncomfy-kitchen (W4A8 operand rules and numerics, default "
      << upstream::profile(upstream::kLatestComfyKitchen).version << "):\n";
  for (const auto& p : upstream::kComfyKitchenProfiles) out << "  " << p.version << "  " << p.note << "\n";
  out << "\nPython sglang runs under (repr()/int() Unicode data, json.loads nesting limit; validate --python P, default "
      << py::version_name(py::kDefaultVersion) << "):\n";
  for (std::size_t i = 0; i < std::size_t(py::Version::kCount); ++i) {
    const auto v = py::Version(i);
    const py::InterpreterFacts& f = py::kInterpreterFacts[i];
    out << "  " << py::version_name(v) << "  Unicode " << py::unicode_version(v) << ", nesting limit " << f.json_max_depth
        << (f.measured ? "" : "  (nesting limit, comparison depth and int() error order assumed from the Python before; not checked "
                              "against that interpreter)")
        << "\n";
  }
}

}  // namespace

void add_versions_command(CLI::App& app, Reporter& report) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "versions", "Print the sglang and comfy-kitchen releases whose behaviour this build predicts, and what "
                  "differs between them.");
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([json, &report] { run(*json, report); });
}

}  // namespace w4a8::cli
