// `w4a8check quantize`: options; the work is in quantize_model.cpp.
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/quantize_model.hpp"
#include "cli/report.hpp"

namespace w4a8::cli {
namespace {

struct QuantizeArgs {
  QuantizeJob job;
  std::string max_shard_size = "5GB";
  bool codebook = false, uniform = false;
  unsigned threads = 0;
};

void run(QuantizeArgs& a, Reporter& report) {
  QuantizeJob job = a.job;
  if (job.q.bits == 6 && a.codebook)
    return report.fail(make_error(ErrorKind::UsageError, {"--codebook: 6-bit codes are uniform only (--bits 6 implies --uniform)"}));
  job.q.codebook = !a.uniform && job.q.bits == 4;
  auto size = parse_size(a.max_shard_size);
  if (!size.ok()) return report.fail(size.error());
  job.max_shard_bytes = *size;
  job.threads = resolve_threads(a.threads, report);
  if (!job.key.empty() && !job.globs.empty())
    return report.fail(make_error(ErrorKind::UsageError, {"--key (one layer) and --keys (whole model) exclude each other"}));
  run_quantize(job, report);
}

}  // namespace

void add_quantize_command(CLI::App& app, Reporter& report) {
  auto args = std::make_shared<QuantizeArgs>();
  QuantizeJob& j = args->job;
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize float weights (F32/BF16/F16) to asym_w4a8_int8 layers (comfy-kitchen 0.2.40's symmetric\n"
      "recipe: ConvRot, group scales, FP8 or F32 s_rel, channel scales, fixed 16-level codebook or uniform\n"
      "codes, 4-bit or 6-bit).\n"
      "Whole model (default): every 2-D float tensor named PREFIX.weight matching --keys (default *.weight)\n"
      "whose K fits the kernel contract is quantized; everything else is copied unchanged; the output is\n"
      "sharded with an index when larger than --max-shard-size. The summary names the consumers that load the output\n"
      "(4-bit FP8: every one, and it passes `validate --strict`; 6-bit or F32 scales: comfy-kitchen, though\n"
      "sglang's checks pass a 6-bit layer with one group (K = G), reading its rows as 4-bit codes).\n"
      "One layer: --key NAME writes that layer (and its bias) to --out.\n"
      "Exit status: 0 success, 1 input refused (a --weights file that is not a valid safetensors container;\n"
      "--key: a tensor that cannot be quantized: not a float dtype, N or K = 0, a K the layout cannot take;\n"
      "any mode: a NaN/inf weight or a row whose rotation overflows its dtype, naming the tensor and row),\n"
      "2 usage or I/O error (a --key tensor that is missing or not 2-D among them).");
  require_path(cmd->add_option("--weights", j.inputs, "the float checkpoint: safetensors shard(s), a directory or an index.json"))
      ->required()->expected(1, -1);
  require_path(cmd->add_option("--out", j.out,
                  "FILE.safetensors, or a directory (model.safetensors or model-0000i-of-0000N.safetensors + "
                  "model.safetensors.index.json), or a character device such as /dev/null (a dry run: one file, "
                  "the summary only); files are replaced atomically and never an input"))
      ->required();
  cmd->add_option("--keys", j.globs, "whole model: tensors to quantize, a glob (repeatable; default *.weight)");
  auto* key = cmd->add_option("--key", j.key, "one layer: the float weight's tensor name");
  // (an option that cannot apply is refused, never silently ignored)
  cmd->add_option("--prefix", j.prefix, "with --key: the layer prefix (default: KEY without a trailing .weight)")
      ->needs(key)
      ->check([](const std::string& v) { return v.empty() ? std::string("an empty prefix names no layer") : std::string(); });
  require_decimal<std::int64_t>(cmd->add_option("--group-size", j.q.group_size, "group size G"))->capture_default_str();
  require_decimal<std::int64_t>(
      cmd->add_option("--convrot-groupsize", j.q.convrot_groupsize, "ConvRot group size R (a power of 4)"))
      ->capture_default_str();
  add_enum_option<int>(*cmd, "--bits", j.q.bits, kBits,
                       "code width: 4 (every consumer) or 6 (uniform codes, G a multiple of 16, K % 32 == 0; for "
                       "comfy-kitchen >= 0.2.36: sglang refuses it unless K = G, which it misreads)");
  add_enum_option<gemm::ScaleDtype>(*cmd, "--scale-dtype", j.q.scale_dtype, kScaleDtypes,
                                    "storage of the group scales weight_s_rel: fp8 (E4M3FN, every consumer) or f32 "
                                    "(comfy-kitchen only)");
  auto* cb = cmd->add_flag("--codebook", args->codebook, "fixed 16-level Lloyd-Max codebook (default at 4 bits)");
  auto* un = cmd->add_flag("--uniform", args->uniform, "uniform codes c - 8 instead of the codebook");
  cb->excludes(un);
  add_enum_option<MarkerChoice>(*cmd, "--markers", j.markers, kMarkers,
                                "where the comfy_quant markers go: PREFIX.comfy_quant tensors, the header's "
                                "_quantization_metadata, or both");
  cmd->add_option("--max-shard-size", args->max_shard_size, "whole model: largest output shard (5GB, 500MB, 2GiB, bytes)")
      ->capture_default_str()
      ->excludes(key);  // --key writes one file
  require_decimal<unsigned>(
      cmd->add_option("--threads", args->threads, "layers quantized at once (0 = all hardware threads)"))
      ->capture_default_str();
  cmd->add_flag("--quiet", j.quiet, "no progress on stderr, only the summary");
  cmd->callback([args, &report] { run(*args, report); });
}

}  // namespace w4a8::cli
