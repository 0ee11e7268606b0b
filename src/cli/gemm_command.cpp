// `w4a8check gemm`: run the CPU reference W4A8 GEMM on one layer of a checkpoint and write the
// output (and optionally every intermediate) as safetensors. The checkpoint first passes the
// validator in strict mode, so an invalid layer gets the validator's exact error, never a crash.
#include <CLI/CLI.hpp>

#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "gemm/operands.hpp"
#include "gemm/reference.hpp"
#include "gemm/tensor_io.hpp"
#include "kernels/layer_problem.hpp"
#if defined(W4A8_HAVE_CUDA)
#include "kernels/cuda_layer.hpp"
#endif
#include "py/int.hpp"
#include "validate/inspect.hpp"

namespace w4a8::cli {
namespace {

struct GemmArgs {
  std::string checkpoint, layer, input, out, input_key = "input";
  std::string out_dtype = "f32", policy = "f32", impl = "fast";
  bool intermediates = false;
  unsigned threads = 1;
};

// Exit 1: the layer/input was rejected (validator or operand error); 2: usage or I/O.
void fail(CommandContext& ctx, const Error& e, int code) {
  ctx.exit_code = code;
  if (code == 2) {
    ctx.err << "w4a8check: " << e.message << "\n";
  } else {
    ctx.out << "REJECTED: " << e.type() << ": " << e.message << "\n  [" << e.code() << "]\n";
  }
}

// --impl: the CPU reference (literal/fast), the CUDA kernel's order emulated on the CPU, or the GPU.
Result<gemm::GemmResult> run_impl(const std::string& impl, const gemm::Layer& layer, const gemm::Activations& x,
                                  const gemm::GemmOptions& opt) {
  if (impl == "emulate") return kern::gemm_emulated(layer, x, opt);
  if (impl == "cuda") {
#if defined(W4A8_HAVE_CUDA)
    return kern::gemm_cuda(layer, x, opt);
#else
    return make_error(ErrorKind::UsageError, {"--impl cuda: this w4a8check was built without CUDA (nvcc not found)"});
#endif
  }
  return gemm::gemm(impl == "literal" ? gemm::Impl::Literal : gemm::Impl::Fast, layer, x, opt);
}

bool is_usage(const Error& e) {
  return e.kind == ErrorKind::IoOpenFailed || e.kind == ErrorKind::IoReadFailed || e.kind == ErrorKind::CudaNoDevice ||
         e.kind == ErrorKind::IoWriteFailed || e.kind == ErrorKind::UsageError;
}

// int(marker.get(key, dflt)) as upstream evaluates it; strict validation already bounded it.
Result<std::int64_t> marker_int(const json::Value& marker, const char* key, std::int64_t dflt) {
  const json::Value* v = marker.get(key);
  if (!v) return dflt;
  auto b = py::to_int(*v);
  W4A8_TRY(b);
  long long out = 0;
  if (!b->to_i64(out)) return make_error(ErrorKind::UsageError, {std::string(key) + " does not fit 64 bits"});
  return std::int64_t(out);
}

void run(const GemmArgs& a, CommandContext& ctx) {
  using namespace gemm;
  // 1. The checkpoint through the validator (strict: kernel contract and data checks).
  validate::Options vopt;
  vopt.strict = true;
  const std::vector<std::string> paths{a.checkpoint};
  auto report = validate::inspect_paths(paths, vopt);
  if (!report.ok()) return fail(ctx, report.error(), is_usage(report.error()) ? 2 : 1);
  const validate::Layer* vl = nullptr;
  for (const auto& l : report->layers)
    if (l.prefix == a.layer) vl = &l;
  const json::Value* fmt = vl ? vl->marker.get("format") : nullptr;
  if (!vl || !fmt || !fmt->is_string() || fmt->text != "asym_w4a8_int8")
    return fail(ctx, make_error(ErrorKind::UsageError, {"'" + a.layer + "' is not an asym_w4a8_int8 layer of " + a.checkpoint}), 2);
  auto g = marker_int(vl->marker, "group_size", 16);
  if (!g.ok()) return fail(ctx, g.error(), 1);
  auto r = marker_int(vl->marker, "convrot_groupsize", 256);
  if (!r.ok()) return fail(ctx, r.error(), 1);
  // 2. Tensors.
  auto file = st::File::open(a.checkpoint);
  if (!file.ok()) return fail(ctx, file.error(), 2);
  auto layer = load_layer(*file, a.layer, *g, *r);
  if (!layer.ok()) return fail(ctx, layer.error(), is_usage(layer.error()) ? 2 : 1);
  auto xfile = st::File::open(a.input);
  if (!xfile.ok()) return fail(ctx, xfile.error(), 2);
  const st::TensorInfo* xt = xfile->header().find(a.input_key);
  if (!xt) return fail(ctx, make_error(ErrorKind::UsageError, {a.input + " has no tensor " + a.input_key}), 2);
  Activations x;
  if (!float_dtype_of(xt->dtype, x.dtype)) {
    auto bad = read_floats(*xfile, *xt, "input");  // yields the OpDtype error
    return fail(ctx, bad.error(), 1);
  }
  x.shape = xt->shape;
  auto xv = read_floats(*xfile, *xt, "input");
  if (!xv.ok()) return fail(ctx, xv.error(), 1);
  x.values = std::move(*xv);
  // 3. The GEMM.
  GemmOptions opt;
  opt.policy = a.policy == "eager" ? ActPolicy::Eager : ActPolicy::F32;
  opt.out_dtype = a.out_dtype == "bf16" ? FloatDtype::BF16 : a.out_dtype == "f16" ? FloatDtype::F16 : FloatDtype::F32;
  opt.threads = a.threads;
  auto res = run_impl(a.impl, *layer, x, opt);
  if (!res.ok()) return fail(ctx, res.error(), is_usage(res.error()) ? 2 : 1);
  // 4. Results: output [..., N], intermediates flattened to [M, K] / [M] / [M, N] / [N, K].
  Shape out_shape(x.shape.begin(), x.shape.end() - 1);
  out_shape.push_back(res->N);
  std::vector<st::TensorSpec> t;
  t.push_back(float_tensor("output", opt.out_dtype, out_shape, res->out));
  if (a.intermediates) {
    auto i8 = [](std::string name, Shape s, const std::vector<std::int8_t>& v) {
      return st::TensorSpec{std::move(name), st::Dtype::I8, std::move(s), std::vector<std::uint8_t>(v.begin(), v.end())};
    };
    t.push_back(i8("w_q", {res->N, res->K}, res->w_q));
    if (res->correction_path) {
      t.push_back(float_tensor("w_dequant", FloatDtype::F32, {res->N, res->K}, res->w_dequant));
    } else {
      t.push_back(i8("x_q", {res->M, res->K}, res->x_q));
      t.push_back(float_tensor("x_scale", FloatDtype::F32, {res->M}, res->x_scale));
      st::TensorSpec acc{"acc", st::Dtype::I32, {res->M, res->N}, std::vector<std::uint8_t>(res->acc.size() * 4)};
      if (!res->acc.empty()) std::memcpy(acc.bytes.data(), res->acc.data(), acc.bytes.size());
      t.push_back(std::move(acc));
    }
  }
  st::WriteOptions wopt;
  std::vector<std::pair<std::string, std::string>> meta;
  meta.emplace_back("layer", a.layer);
  meta.emplace_back("path", res->correction_path ? "correction" : "integer");
  meta.emplace_back("policy", a.policy == "eager" ? "eager" : "f32");
  meta.emplace_back("impl", a.impl);
  meta.emplace_back("isa", std::string(isa_name(res->isa)));
  meta.emplace_back("out_dtype", std::string(float_dtype_name(opt.out_dtype)));
  wopt.metadata = std::move(meta);
  auto bytes = st::serialize(t, wopt);
  if (!bytes.ok()) return fail(ctx, bytes.error(), 2);
  auto w = st::write_file(a.out, *bytes);
  if (!w.ok()) return fail(ctx, w.error(), 2);
  ctx.out << "OK: " << a.layer << " M=" << res->M << " N=" << res->N << " K=" << res->K << " path="
          << (res->correction_path ? "correction" : "integer") << " policy=" << (a.policy == "eager" ? "eager" : "f32")
          << " impl=" << a.impl << " -> " << a.out << "\n";
  ctx.exit_code = 0;
}

}  // namespace

void add_gemm_command(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<GemmArgs>();
  CLI::App* cmd = app.add_subcommand(
      "gemm",
      "Run the CPU reference W4A8 GEMM (out = x @ W^T + bias) on one asym_w4a8_int8 layer and write\n"
      "`output` [M, N] (and with --intermediates w_q, x_q, x_scale, acc or w_dequant) as safetensors.\n"
      "Exit status: 0 success, 1 layer/input rejected, 2 usage or I/O error.");
  cmd->add_option("--checkpoint", args->checkpoint, "safetensors checkpoint holding the layer")->required();
  cmd->add_option("--layer", args->layer, "layer prefix P (tensors P.weight, P.weight_s_rel, ...)")->required();
  cmd->add_option("--input", args->input, "safetensors file with the activations [M, K] (F32/BF16/F16)")->required();
  cmd->add_option("--out", args->out, "safetensors file to write")->required();
  cmd->add_option("--input-key", args->input_key, "tensor name of the activations")->capture_default_str();
  cmd->add_option("--out-dtype", args->out_dtype, "output dtype")
      ->check(CLI::IsMember({"f32", "bf16", "f16"}))->capture_default_str();
  cmd->add_option("--policy", args->policy, "activation rotation/quantization: all float32, or upstream's eager dtype rounding")
      ->check(CLI::IsMember({"f32", "eager"}))->capture_default_str();
  cmd->add_option("--impl", args->impl,
                  "literal (spec-literal CPU), fast (blocked/SIMD CPU, bit-identical), emulate (the CUDA\n"
                  "kernel's computation order on the CPU), cuda (the CUDA kernel; needs a GPU)")
      ->check(CLI::IsMember({"literal", "fast", "emulate", "cuda"}))->capture_default_str();
  cmd->add_option("--threads", args->threads, "threads for --impl fast (0 = all cores)")->capture_default_str();
  cmd->add_flag("--intermediates", args->intermediates,
                "also write w_q I8 [N,K]; x_q I8 [M,K], x_scale F32 [M], acc I32 [M,N] (integer path) or "
                "w_dequant F32 [N,K] (correction path)");
  cmd->callback([args, &ctx] { run(*args, ctx); });
}

}  // namespace w4a8::cli
