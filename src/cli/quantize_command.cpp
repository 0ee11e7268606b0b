// `w4a8check quantize`: float weights [N, K] -> an asym_w4a8_int8 layer (weight, s_rel, s_channel,
// codebook, comfy_quant marker) written as safetensors; prints the relative L2 weight error.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <ostream>
#include <string>

#include "cli/commands.hpp"
#include "gemm/quantizer.hpp"
#include "gemm/tensor_io.hpp"

namespace w4a8::cli {
namespace {

struct QuantizeArgs {
  std::string weights, key, out, prefix;
  std::int64_t group_size = 16, convrot_groupsize = 256;
  bool codebook = false, uniform = false;
};

void run(const QuantizeArgs& a, CommandContext& ctx) {
  using namespace gemm;
  auto usage = [&](const Error& e) {
    ctx.exit_code = 2;
    ctx.err << "w4a8check: " << e.message << "\n";
  };
  auto file = st::File::open(a.weights);
  if (!file.ok()) return usage(file.error());
  const st::TensorInfo* t = file->header().find(a.key);
  if (!t) return usage(make_error(ErrorKind::UsageError, {a.weights + " has no tensor " + a.key}));
  if (t->shape.size() != 2)
    return usage(make_error(ErrorKind::UsageError, {a.key + " must be 2-D [N, K]"}));
  auto w = read_floats(*file, *t, "weights");
  if (!w.ok()) return usage(w.error());
  QuantizeOptions o;
  o.group_size = a.group_size;
  o.convrot_groupsize = a.convrot_groupsize;
  o.codebook = !a.uniform;
  const std::uint64_t n = t->shape[0], k = t->shape[1];
  auto layer = quantize_weights(*w, n, k, o);
  if (!layer.ok()) {
    ctx.exit_code = 1;
    ctx.out << "REJECTED: " << layer.error().type() << ": " << layer.error().message << "\n";
    return;
  }
  std::string prefix = a.prefix;
  if (prefix.empty()) {
    prefix = a.key;
    const std::string suffix = ".weight";
    if (prefix.size() > suffix.size() && prefix.compare(prefix.size() - suffix.size(), suffix.size(), suffix) == 0)
      prefix.resize(prefix.size() - suffix.size());
  }
  auto bytes = st::serialize(layer_tensors(*layer, prefix));
  if (!bytes.ok()) return usage(bytes.error());
  auto wr = st::write_file(a.out, *bytes);
  if (!wr.ok()) return usage(wr.error());
  const double err = relative_l2(dequantize_weights(*layer), *w);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", err);
  ctx.out << "OK: " << prefix << " N=" << n << " K=" << k << " group_size=" << a.group_size
          << " convrot_groupsize=" << a.convrot_groupsize << (o.codebook ? " codebook" : " uniform")
          << " relative_l2=" << buf << " -> " << a.out << "\n";
  ctx.exit_code = 0;
}

}  // namespace

void add_quantize_command(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<QuantizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Quantize float weights [N, K] (F32/BF16/F16) to an asym_w4a8_int8 layer (comfy-kitchen's\n"
      "symmetric recipe: ConvRot, group scales, FP8 s_rel, channel scales, fixed 16-level codebook or\n"
      "uniform codes). Exit status: 0 success, 1 illegal shape, 2 usage or I/O error.");
  cmd->add_option("--weights", args->weights, "safetensors file with the float weights")->required();
  cmd->add_option("--key", args->key, "tensor name of the weights")->required();
  cmd->add_option("--out", args->out, "safetensors file to write")->required();
  cmd->add_option("--prefix", args->prefix, "layer prefix (default: KEY without a trailing .weight)");
  cmd->add_option("--group-size", args->group_size, "group size G")->capture_default_str();
  cmd->add_option("--convrot-groupsize", args->convrot_groupsize, "ConvRot group size R (a power of 4)")
      ->capture_default_str();
  auto* cb = cmd->add_flag("--codebook", args->codebook, "fixed 16-level Lloyd-Max codebook (default)");
  auto* un = cmd->add_flag("--uniform", args->uniform, "uniform codes c - 8 instead of the codebook");
  cb->excludes(un);
  cmd->callback([args, &ctx] { run(*args, ctx); });
}

}  // namespace w4a8::cli
