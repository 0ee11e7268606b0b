// `w4a8check validate [--json] [--strict] FILE...`: one checkpoint (its shards in the order given).
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "json/dump.hpp"
#include "py/repr.hpp"
#include "validate/inspect.hpp"

namespace w4a8::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  bool json = false;
  bool strict = false;
};

bool is_io_error(const Error& e) {
  return e.kind == ErrorKind::IoOpenFailed || e.kind == ErrorKind::IoReadFailed;
}

json::Value error_object(const Error& e) {
  json::Value err = json::Value::object();
  err.set("type", json::Value::from_string(std::string(e.type())));
  err.set("message", json::Value::from_string(e.message));
  err.set("code", json::Value::from_string(std::string(e.code())));
  return err;
}

std::string marker_format(const json::Value& marker) {
  const json::Value* f = marker.get("format");
  if (f == nullptr) return "(no format)";
  return f->is_string() ? f->text : json::dump(*f);
}

void print_tensor(std::ostream& out, const validate::Report& r, const std::string& name) {
  if (const validate::TensorMeta* t = r.find(name))
    out << "    " << name.substr(name.rfind('.') + 1) << ": " << st::dtype_name(t->dtype)
        << py::repr_shape(t->shape) << "\n";
}

void print_human(std::ostream& out, const validate::Report& r, bool strict) {
  out << "OK: " << r.layers.size() << " quantized layer(s) accepted"
      << (strict ? " (sglang rules + strict kernel/data checks)" : " (sglang rules)") << "\n";
  static const char* const kSuffixes[] = {"weight", "weight_s_rel", "weight_s_channel", "weight_scale",
                                          "weight_scale_2", "weight_codebook", "weight_correction",
                                          "bias", "input_scale", "pre_quant_scale"};
  for (const validate::Layer& l : r.layers) {
    out << "  " << py::repr_str(l.prefix) << "  format=" << marker_format(l.marker);
    for (const auto& [key, value] : l.marker.members) {
      if (key == "format") continue;
      out << " " << key << "=" << json::dump(value);
    }
    out << "\n";
    for (const char* s : kSuffixes) print_tensor(out, r, l.prefix + "." + s);
  }
}

void run(const ValidateArgs& a, CommandContext& ctx) {
  validate::Options opt;
  opt.strict = a.strict;
  Result<validate::Report> r = validate::inspect_paths(a.files, opt);
  if (r.ok()) {
    if (a.json) {
      json::Value layers = json::Value::object();
      for (const validate::Layer& l : r->layers) layers.append(l.prefix, l.marker);  // prefixes are unique
      json::Value top = json::Value::object();
      top.set("ok", json::Value::from_bool(true));
      top.set("layers", std::move(layers));
      ctx.out << json::dump(top) << "\n";
    } else {
      print_human(ctx.out, *r, a.strict);
    }
    ctx.exit_code = 0;
    return;
  }
  const Error& e = r.error();
  ctx.exit_code = is_io_error(e) ? 2 : 1;
  if (a.json) {
    json::Value top = json::Value::object();
    top.set("ok", json::Value::from_bool(false));
    top.set("error", error_object(e));
    ctx.out << json::dump(top) << "\n";
  } else if (ctx.exit_code == 2) {
    ctx.err << "w4a8check: " << e.message << "\n";
  } else {
    ctx.out << "REJECTED: " << e.type() << ": " << e.message << "\n  [" << e.code() << "]\n";
  }
}

}  // namespace

void add_validate_command(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate",
      "Check one checkpoint (all its shards, in the order given) the way sglang's\n"
      "inspect_comfy_quant_markers does, and report exactly the error sglang would raise.\n"
      "Exit status: 0 accepted, 1 rejected, 2 usage or I/O error.");
  cmd->add_option("files", args->files, "safetensors shard(s) of one checkpoint; paths appear in messages as given")
      ->required();
  cmd->add_flag("--json", args->json,
                "print one JSON object: {\"ok\": true, \"layers\": {PREFIX: MARKER}} or "
                "{\"ok\": false, \"error\": {\"type\", \"message\", \"code\"}}");
  cmd->add_flag("--strict", args->strict,
                "also enforce the W4A8 kernels' contract (K, group size, ConvRot) and check tensor data "
                "(NaN FP8 scales, non-finite or negative channel scales, codebook, correction)");
  cmd->callback([args, &ctx] { run(*args, ctx); });
}

}  // namespace w4a8::cli
