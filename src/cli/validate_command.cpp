// `w4a8check validate [--json] [--strict] [--quiet|--summary] [--sglang V] [--python V] [--consumers]
// CHECKPOINT...`: one checkpoint (files, a directory or an index.json). Every output mode is linear in
// the number of tensors: the JSON report is streamed, never built as a tree. --consumers prints the
// consumer matrix (consumer_matrix.hpp) instead of one release's verdict.
#include <CLI/CLI.hpp>

#include <array>
#include <iterator>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/checkpoint_input.hpp"
#include "cli/commands.hpp"
#include "cli/consumer_matrix.hpp"
#include "cli/options.hpp"
#include "cli/report.hpp"
#include "json/dump.hpp"
#include "py/repr.hpp"
#include "py/version.hpp"
#include "validate/inspect.hpp"
#include "validate/layers.hpp"

namespace w4a8::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  bool json = false, strict = false, quiet = false, summary = false, consumers = false;
  upstream::Sglang sglang = upstream::kLatestSglang;
  py::Version python = py::kDefaultVersion;
  std::uint64_t min_layers = 0;
};

std::string rules_text(const ValidateArgs& a) {
  const std::string v(upstream::profile(a.sglang).version);
  const std::string py = " under Python " + std::string(py::version_name(a.python));
  return (a.strict ? "(sglang " + v + " rules + strict kernel/data checks)" : "(sglang " + v + " rules)") + py;
}

void print_layers(std::ostream& out, const validate::Report& r, py::Version pv) {
  using namespace std::string_view_literals;  // every piece appended with its length (no strlen)
  static constexpr std::string_view kSuffixes[] = {"weight", "weight_s_rel", "weight_s_channel", "weight_scale",
                                                   "weight_scale_2", "weight_codebook", "weight_correction",
                                                   "bias", "input_scale", "pre_quant_scale"};
  // Each tensor line's start, "    SUFFIX: ", in one piece.
  static const auto kLeads = [] {
    std::array<std::string, std::size(kSuffixes)> leads;
    for (std::size_t k = 0; k < leads.size(); ++k) leads[k] = "    " + std::string(kSuffixes[k]) + ": ";
    return leads;
  }();
  BlockOut block(out);
  std::string& buf = block.text();
  std::size_t next = 0;  // the tensor after the previous layer's
  // Most layers share their marker object with the layer before (validate::Marker): its text is
  // formatted once.
  validate::LastMarkerFact<std::string> shown;
  struct Line {  // the last tensor line printed for a suffix, and what it shows
    st::Dtype dtype{};
    st::Shape shape;
    std::string text;
  };
  std::array<Line, std::size(kSuffixes)> lines;
  for (const validate::Layer& l : r.layers) {
    buf += "  "sv;
    py::append_repr_str(buf, l.prefix, pv);
    if (!shown.for_(l.marker)) {
      std::string text("  format="sv);
      // Strings from the file (the format, keys) as repr() shows them where they hold control or
      // other unprintable characters: a marker cannot write lines or escapes into the report.
      l.marker.visit([&text, pv](const json::Value& m) {  // (a marker kept as text is not built for good)
        text += py::shown_name(marker_format(m), pv);
        for (const auto& [key, value] : m.members) {
          if (key == "format"sv) continue;
          text += ' ';
          text += py::shown_name(key, pv);
          text += '=';
          json::dump_append(text, value);
        }
      });
      text += '\n';
      shown.remember(l.marker, std::move(text));
    }
    buf += shown.value;
    const validate::TensorMeta* found[std::size(kSuffixes)] = {};  // printed in kSuffixes' order
    for (const validate::TensorMeta* t : r.under(l.prefix, &next)) {
      // (every name here is prefix + "." + rest: its length and its kept last bytes tell most apart)
      const std::size_t rest = t->name.size() - l.prefix.size() - 1;
      for (std::size_t k = 0; k < std::size(kSuffixes); ++k)
        if (rest == kSuffixes[k].size() && t->name.ends_with(kSuffixes[k])) {
          found[k] = t;
          break;  // the suffixes differ
        }
    }
    for (std::size_t k = 0; k < std::size(kSuffixes); ++k) {
      if (found[k] == nullptr) continue;
      // Layers repeat their tensors' dtypes and shapes: a line like the one before is copied.
      Line& line = lines[k];
      if (line.text.empty() || line.dtype != found[k]->dtype || !(found[k]->shape == line.shape)) {
        line.dtype = found[k]->dtype;
        line.shape = found[k]->shape;
        line.text.assign(kLeads[k]);
        line.text += st::dtype_name(found[k]->dtype);
        py::append_repr_shape(line.text, found[k]->shape);
        line.text += '\n';
      }
      buf += line.text;
    }
    block.flush_if_full();
  }
}

// Layers per marker format, in first-seen order.
std::vector<std::pair<std::string, std::uint64_t>> format_counts(const validate::Report& r) {
  std::vector<std::pair<std::string, std::uint64_t>> counts;
  std::map<std::string, std::size_t> pos;
  for (const validate::Layer& l : r.layers) {
    const std::string f = marker_format(l.marker);
    auto [it, fresh] = pos.emplace(f, counts.size());
    if (fresh) counts.emplace_back(f, 0);
    ++counts[it->second].second;
  }
  return counts;
}

void print_json(std::ostream& out, const validate::Report& r, const ValidateArgs& a,
                const std::vector<std::string>& notes) {
  JsonWriter w(out);
  w.begin_object().key("ok").boolean(true);
  Predicts{upstream::profile(a.sglang).version, py::version_name(a.python), {}}.write(w.key("upstream"));
  w.key("strict").boolean(a.strict);
  w.notes(notes);
  if (a.summary) {
    // As the OK line counts: the layers whose marker names a format sglang knows, the others apart.
    w.key("layer_count").number(std::uint64_t(r.layers.size() - r.unknown_format));
    w.key("unknown_format_count").number(std::uint64_t(r.unknown_format));
    w.key("formats").begin_object();
    for (const auto& [f, n] : format_counts(r)) w.key(f).number(n);
    w.end_object();
  } else {
    w.key("layers").begin_object();
    validate::LastMarkerFact<std::string> shown;  // as in print_layers: one dump per marker object in a row
    for (const validate::Layer& l : r.layers) {
      if (!shown.for_(l.marker))  // (quoted non-finite floats: the output is read by any JSON parser)
        shown.remember(l.marker, l.marker.visit([](const json::Value& m) { return json::dump(m, json::NonFinite::String); }));
      w.key(l.prefix).dumped(shown.value);
    }
    w.end_object();
  }
  w.end_object();
  out << "\n";
}

// `validate` runs once per process, and the process ends right after printing: an accepted
// checkpoint's report and parsed headers are handed to the OS at exit instead of being freed block by
// block (tens of thousands of small blocks on a big model). They stay reachable from here, so leak
// checkers do not report them.
struct KeptUntilExit {
  io::Checkpoint checkpoint;
  validate::Report report;
};
const validate::Report& keep_until_exit(io::Checkpoint ck, validate::Report r) {
  static auto* kept = new std::vector<std::unique_ptr<KeptUntilExit>>;  // never destroyed (see above)
  kept->emplace_back(new KeptUntilExit{std::move(ck), std::move(r)});
  return kept->back()->report;
}

// An index error is ours, not a prediction: the text names no release (JSON keeps its shape).
FailStyle ours(FailStyle s) {
  if (s.format == Format::Text) s.upstream = {};
  return s;
}
// The style for a failure to open the checkpoint: index.* errors (an index that is not JSON, names an
// unsafe shard, ...) are ours too; a container error is upstream's prediction.
FailStyle open_style(const Error& e, const FailStyle& s) {
  return error_info(e.kind).code.starts_with("index.") ? ours(s) : s;
}

// What validate does with a tensor several files hold (the note's words).
constexpr std::string_view kRepeatedChecked = "is checked, as sglang reads them, and the others are not";

// The consumer matrix: every sglang profile on the files parsed once (a container error: each profile
// replays the files itself, so an earlier shard's marker error still wins where upstream's would).
void run_consumers(const ValidateArgs& a, const validate::Options& opt, const FailStyle& style, Reporter& report) {
  auto list = io::resolve_checkpoint(a.files);
  if (!list.ok()) return report.fail(list.error(), open_style(list.error(), style));
  for (const std::string& n : list->notes) report.note(n);
  const std::vector<std::string> shards = list->shards;
  std::string failed;
  std::vector<validate::LayersReport> per;
  auto ck = io::Checkpoint::open(std::move(*list), &failed, huge_pages_for_large_headers());
  if (ck.ok()) {
    if (auto idx = ck->check_index(); !idx.ok()) return report.fail(idx.error(), ours(style));
    note_repeated_tensors(*ck, kRepeatedChecked, report, a.python);
    const auto files = parsed_files(*ck);
    for (const auto& p : upstream::kSglangProfiles) {
      validate::Options o = opt;
      o.sglang = p.id;
      auto r = validate::inspect_layers_parsed(files, o);
      if (!r.ok()) return report.fail(r.error(), style);
      per.push_back(std::move(r).value());
    }
  } else {
    // A later shard that cannot be opened is reached only if no profile refuses an earlier one first
    // (upstream checks each shard before opening the next), as open_checkpoint decides for validate.
    if (exit_status(ck.error()) != 1 && (shards.empty() || failed == shards.front())) {
      FailStyle s = open_style(ck.error(), style);
      if (ck.error().message.find(failed) == std::string::npos) s.where = failed;  // (named once)
      return report.fail(ck.error(), s);
    }
    auto r = validate::inspect_consumers(shards, opt);
    if (!r.ok()) return report.fail(r.error(), style);
    per = std::move(r).value();
  }
  const ConsumerMatrix m = build_consumer_matrix(per, a.sglang, a.python);
  report.verdict(m.accepts(m.selected));
  if (a.json) return print_matrix_json(report.out(), m, a.summary, report.notes());
  print_matrix_text(report.out(), m, a.summary);
}

void run(const ValidateArgs& a, Reporter& report) {
  validate::Options opt;
  opt.strict = a.strict;
  opt.sglang = a.sglang;
  opt.python = a.python;
  const std::string_view version = upstream::profile(a.sglang).version;
  FailStyle style;
  style.format = a.json ? Format::Json : Format::Text;
  style.upstream = Predicts{version, py::version_name(a.python), {}};
  style.strict = a.strict;
  style.one_line = a.quiet;
  // A prediction resting on facts not checked against that interpreter says so.
  if (auto pv = static_cast<std::size_t>(a.python); !py::kInterpreterFacts[pv].measured) {
    std::size_t from = pv;  // the nearest earlier interpreter that was measured (the table's rows follow it)
    while (from > 0 && !py::kInterpreterFacts[from].measured) --from;
    report.note("Python " + std::string(py::version_name(a.python)) +
                "'s json.loads nesting limit, the depth a marker merge's comparison reaches and int() error order are "
                "assumed from Python " +
                std::string(py::version_name(py::Version(from))) +
                "'s, not checked against that interpreter (w4a8check versions)");
  }
  if (a.consumers) return run_consumers(a, opt, style, report);
  std::string where;
  auto ck = open_checkpoint(a.files, opt, &where, &report);
  if (!ck.ok()) {
    style.where = where;
    return report.fail(ck.error(), open_style(ck.error(), style));
  }
  if (auto idx = ck->check_index(); !idx.ok()) return report.fail(idx.error(), ours(style));
  const auto files = parsed_files(*ck);
  Result<validate::Report> r = validate::inspect_parsed(files, opt);
  if (!r.ok()) {
    note_repeated_tensors(*ck, kRepeatedChecked, report, a.python);  // (the validator's count is lost with it)
    return report.fail(r.error(), style);
  }
  report.succeed();
  const validate::Report& kept = keep_until_exit(std::move(ck).value(), std::move(r).value());
  if (kept.replaced_tensors > 0)
    report.note(repeated_tensors_note(kept.replaced_tensors, kept.first_replaced, kRepeatedChecked, a.python));
  // A gate that requires a quantized model: a checkpoint with no markers is one sglang loads as is.
  if (const std::uint64_t known = kept.layers.size() - kept.unknown_format; known < a.min_layers)
    return report.fail(make_error(ErrorKind::ValidateTooFewLayers, {std::to_string(known), std::to_string(a.min_layers)}),
                       style);
  std::ostream& out = report.out();
  if (a.json) return print_json(out, kept, a, report.notes());
  // Markers that name no known format are accepted unchecked (upstream skips them): counted apart,
  // so "N quantized layer(s)" counts the layers whose tensors were checked.
  out << "OK: " << kept.layers.size() - kept.unknown_format << " quantized layer(s) accepted " << rules_text(a);
  if (kept.unknown_format > 0)
    out << "; " << kept.unknown_format << " marker(s) name no known format and were skipped, as sglang skips them";
  out << "\n";
  if (a.quiet) return;
  if (a.summary) {
    for (const auto& [f, n] : format_counts(kept)) out << "  " << py::shown_name(f, a.python) << ": " << n << "\n";
    return;
  }
  print_layers(out, kept, a.python);
}

}  // namespace

void add_validate_command(CLI::App& app, Reporter& report) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check one checkpoint the way sglang's inspect_comfy_quant_markers does, and report exactly the\n"
      "error sglang would raise. A checkpoint is one or more .safetensors shards (in the order given),\n"
      "a directory, or a model.safetensors.index.json.\n"
      "Exit status: 0 accepted, 1 rejected, 2 usage or I/O error.");
  require_path(cmd->add_option("checkpoint", args->files,
                               "safetensors shard(s), a directory or an index.json; paths appear in messages as given"))
      ->required();
  cmd->add_flag("--json", args->json,
                "print one JSON object: {\"ok\": true, \"upstream\": {\"sglang\": V, \"python\": P}, \"strict\": B[, "
                "\"notes\": [...]], \"layers\": {PREFIX: MARKER}} or {\"ok\": false, \"upstream\": ..., \"strict\": B[, "
                "\"notes\": [...]], \"error\": {\"type\", \"message\", \"code\"[, \"file\"]}} (docs/json.md)");
  cmd->add_flag("--strict", args->strict,
                "also enforce the W4A8 kernels' contract (K, group size, ConvRot) and check tensor data "
                "(NaN FP8 scales, non-finite or negative channel scales, codebook, correction)");
  require_decimal<std::uint64_t>(cmd->add_option(
      "--min-layers", args->min_layers,
      "reject (exit 1, validate.too_few_layers) a checkpoint with fewer quantized layers of a format sglang knows; "
      "--min-layers 1 fails a checkpoint with no quantization markers, which sglang loads as is"))
      ->type_name("N")
      ->capture_default_str();
  auto* quiet = cmd->add_flag("--quiet", args->quiet, "print the verdict line only");
  auto* summary = cmd->add_flag("--summary", args->summary,
                                "print layer counts per marker format instead of every layer (huge models); with --consumers, one "
                                "line per group of identical rows");
  quiet->excludes(summary);
  add_enum_option(*cmd, "--sglang", args->sglang, sglang_choices(),
                  "the sglang release whose behaviour is predicted (w4a8check versions lists them); with "
                  "--consumers, the one whose verdict is the exit status");
  add_enum_option(*cmd, "--python", args->python, python_choices(),
                  "the Python sglang runs under: repr() escapes and int() digits follow its Unicode data");
  auto* consumers = cmd->add_flag(
      "--consumers", args->consumers,
      "print the consumer matrix: per layer, which sglang releases, comfy-kitchen releases and the CUDA kernel "
      "load it, with short error codes and a legend (--summary: identical rows grouped; --json)");
  consumers->excludes(quiet);
  consumers->excludes("--strict");
  consumers->excludes("--min-layers");
  cmd->callback([args, &report] { run(*args, report); });
}

}  // namespace w4a8::cli
