// `gemm --kernel PATH.so` and `--impl cuda` through the binary: the example C plugin and a pretend
// device module give the reference's output and intermediates bit for bit; a missing module, a
// missing driver/device and an unsupported problem are clear errors (exit 2).
#include <sys/stat.h>

#include <chrono>
#include <csignal>

#include "cli_fixture.hpp"
#include "gemm/quantizer.hpp"
#include "json/parse.hpp"

namespace w4a8::testing {
namespace {

std::vector<float> ramp(std::size_t n, float scale, int salt = 0) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(int((i + std::size_t(salt)) * 53 % 97) - 48) / 48.0f;
  return v;
}

class PluginCli : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    gemm::QuantizeOptions q;
    q.convrot_groupsize = 64;
    q.group_size = 32;
    auto l = gemm::quantize_weights(ramp(40 * 128, 1.0f), 40, 128, q);
    ASSERT_TRUE(l.ok());
    l->bias_shape = gemm::Shape{40};
    l->bias_dtype = gemm::FloatDtype::F16;
    l->bias = std::vector<float>(40, 0.75f);
    write(p("ck.safetensors"), gemm::layer_tensors(*l, "blk"));
  }
  // Every tensor of two gemm outputs, byte for byte (metadata differs: impl, isa).
  void expect_same_tensors(const std::string& a, const std::string& b) {
    auto fa = st::File::open(a), fb = st::File::open(b);
    ASSERT_TRUE(fa.ok() && fb.ok());
    ASSERT_EQ(fa->header().tensors.size(), fb->header().tensors.size());
    for (const auto& t : fa->header().tensors) {
      const st::TensorInfo* u = fb->header().find(t.name);
      ASSERT_NE(u, nullptr) << t.name;
      EXPECT_EQ(t.shape, u->shape) << t.name;
      const auto x = fa->data(t), y = fb->data(*u);
      EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end())) << t.name << " differs between " << a << " and " << b;
    }
  }
  std::string run(const std::string& impl, const std::string& extra, const std::string& out, const std::string& env = "") {
    const CliRun r = sh(env + " exec " + kBin + " gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " +
                        p("x.safetensors") + " --out " + p(out) + " " + impl + " " + extra);
    EXPECT_EQ(r.rc, 0) << impl << " " << extra << "\n" << r.out;
    return r.out;
  }
};

TEST_F(PluginCli, ExampleCPluginMatchesTheReferenceBitForBit) {
  int cases = 0;
  for (auto xdt : {gemm::FloatDtype::F32, gemm::FloatDtype::BF16, gemm::FloatDtype::F16})
    for (const std::string odt : {"f32", "bf16", "f16"}) {
      write(p("x.safetensors"), {gemm::float_tensor("input", xdt, {5, 128}, ramp(640, 4.0f, cases))});
      const std::string extra = "--intermediates --out-dtype " + odt;
      run("--impl fast", extra, "ref.safetensors");
      const std::string said = run("--kernel " + std::string(W4A8_EXAMPLE_PLUGIN), extra, "plugin.safetensors");
      EXPECT_NE(said.find("impl=kernel (w4a8-example-c 1.0.0 (" + std::string(W4A8_EXAMPLE_PLUGIN) + "))"), std::string::npos)
          << said;
      expect_same_tensors(p("ref.safetensors"), p("plugin.safetensors"));
      ++cases;
    }
  EXPECT_EQ(cases, 9);
  auto f = st::File::open(p("plugin.safetensors"));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->header().meta("impl"), "kernel");
  EXPECT_EQ(*f->header().meta("isa"), "w4a8-example-c 1.0.0");
  EXPECT_NE(f->header().find("acc"), nullptr);
}

TEST_F(PluginCli, ImplCudaLoadsTheModuleAtRunTime) {
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::BF16, {3, 128}, ramp(384, 2.0f))});
  run("--impl fast", "--intermediates", "ref.safetensors");
  // A module named by the environment (here a pretend device: the device code path, no GPU).
  run("--impl cuda", "--intermediates", "dev.safetensors", "W4A8CHECK_CUDA_MODULE=" + std::string(W4A8_FAKE_DEVICE_PLUGIN));
  expect_same_tensors(p("ref.safetensors"), p("dev.safetensors"));
  const std::string args = " gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " + p("x.safetensors") +
                           " --out " + p("o.safetensors") + " --impl cuda";
  // The device module present but no device / driver.
  CliRun r = sh("W4A8CHECK_CUDA_MODULE=" + std::string(W4A8_FAKE_DEVICE_PLUGIN) + " W4A8_FAKE_DEVICE_COUNT=0 exec " + kBin + args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("no CUDA device: cudaGetDeviceCount returned 100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[cuda.no_device]"), std::string::npos) << r.out;
  // A module path that does not exist.
  r = sh("W4A8CHECK_CUDA_MODULE=" + p("nowhere.so") + " exec " + kBin + args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot load kernel plugin " + p("nowhere.so") + ": "), std::string::npos) << r.out;
  // No module anywhere: a copy of the binary in an empty directory.
  ::mkdir(p("bin").c_str(), 0755);
  fs::copy_file(kBin, p("bin/w4a8check"));
  fs::permissions(p("bin/w4a8check"), fs::perms::owner_all);
  r = sh("unset W4A8CHECK_CUDA_MODULE; exec " + p("bin/w4a8check") + args);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("--impl cuda needs the CUDA kernel module libw4a8check_cuda.so, which was not found (looked in: " +
                       p("bin/libw4a8check_cuda.so")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[cuda.module_missing]"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(p("o.safetensors")));
}

TEST_F(PluginCli, WhatAPluginCannotRunIsRefusedBeforeCallingIt) {
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::BF16, {3, 128}, ramp(384, 2.0f))});
  const std::string base = "gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " + p("x.safetensors") +
                           " --out " + p("o.safetensors") + " --kernel " + W4A8_EXAMPLE_PLUGIN;
  CliRun r = cli(base + " --policy eager");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot run this problem: it lacks eager policy (it offers integer path, intermediates)\n"
                       "  [plugin.unsupported]"),
            std::string::npos)
      << r.out;
  // With F32 activations both policies are one computation: it runs (it was refused for lacking eager).
  write(p("x32.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::F32, {3, 128}, ramp(384, 2.0f))});
  r = cli("gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " + p("x32.safetensors") + " --out " +
          p("o.safetensors") + " --kernel " + W4A8_EXAMPLE_PLUGIN + " --policy eager");
  EXPECT_EQ(r.rc, 0) << r.out;
  fs::remove(p("o.safetensors"));
  r = cli(base + " --impl fast");
  EXPECT_EQ(r.rc, 2) << "--kernel and --impl exclude each other\n" << r.out;
  r = cli("gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " + p("x.safetensors") + " --out " +
          p("o.safetensors") + " --kernel " + kRoot + "/README.md");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("[plugin.load_failed]"), std::string::npos) << r.out;
}

// The module is an input like the others: an --out naming it is refused with the module untouched;
// a FIFO given as --kernel fails at once (dlopen would block on it); a name without '/' is the file
// in the current directory (as `audit check --kernel`), not a library-path search.
TEST_F(PluginCli, TheModuleIsAnInputAndAFile) {
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::F32, {2, 128}, ramp(256, 1.0f))});
  const std::string copy = p("plug.so");
  fs::copy_file(W4A8_EXAMPLE_PLUGIN, copy);
  const std::string before = slurp(copy);
  const std::string head = "gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " + p("x.safetensors");
  CliRun r = cli(head + " --kernel " + copy + " --out " + copy);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("[io.output_is_input]"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(copy), before) << "the plugin was overwritten";
  const std::string fifo = p("fifo.so");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = sh("timeout 10 " + kBin + " " + head + " --out " + p("o.safetensors") + " --kernel " + fifo);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot read " + fifo + ": it is a FIFO, not a regular file"), std::string::npos) << r.out;
  r = sh("cd " + p("") + " && exec " + kBin + " " + head + " --out " + p("o.safetensors") + " --kernel plug.so");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("impl=kernel (w4a8-example-c"), std::string::npos) << r.out;
}

// Plugin code is the user's: what it does outside its return statuses is reported, never silent.
// Its stdout chatter goes to stderr (a --json report stays JSON); exit(0) inside it is an error (it
// ended the run with status 0 and no output); a crash names the plugin and the call (it died
// without a word); a name that is not UTF-8 is refused at load (it failed after the GEMM, as a
// usage error about metadata).
TEST_F(PluginCli, MisbehavingPluginsAreReported) {
  const std::string plugin = W4A8_MISBEHAVING_PLUGIN;
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::F32, {5, 128}, ramp(640, 4.0f))});
  const std::string gemm_cmd = kBin + " gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " +
                               p("x.safetensors") + " --out " + p("o.safetensors") + " --kernel " + plugin;
  ASSERT_EQ(cli("audit make --out " + p("suite") + " --grid small").rc, 0);
  const std::string audit_cmd = kBin + " audit check " + p("suite") + " --kernel " + plugin + " --json";
  for (const std::string where : {"entry", "check", "run"}) {
    const CliRun r = sh("W4A8_TEST_MISBEHAVE=stdout_" + where + " exec " + audit_cmd + " 2>" + p("err"));  // NOLINT(performance-inefficient-string-concatenation)
    EXPECT_TRUE(json::parse_serde(r.out).ok()) << where << ": stdout is not one JSON document:\n" << r.out.substr(0, 2000);
    EXPECT_NE(slurp(p("err")).find("plugin chatter on stdout from " + where), std::string::npos) << where;
  }
  struct Case {
    std::string mode, says;
    int rc;
  };
  const std::string sig_segv = "it crashed (SIGSEGV, an invalid memory access)";
  for (const Case& c : {Case{"exit_run", "failed in run: it called exit(); nothing it computed is used", 2},
                        Case{"exit_entry", "failed in dlopen and its entry function: it called exit()", 2},
                        Case{"abort_run", "failed in run: it aborted (SIGABRT)", 128 + 6},
#ifndef W4A8_SANITIZED  // (a sanitizer's runtime keeps SIGSEGV: its own report then)
                        Case{"segv_check", "failed in check_problem: " + sig_segv, 128 + 11},
                        Case{"segv_run", "failed in run: " + sig_segv, 128 + 11},
#endif
                        Case{"bad_name", "is incompatible with this w4a8check: its name or version is not UTF-8 text", 2}}) {
    const CliRun r = sh("W4A8_TEST_MISBEHAVE=" + c.mode + " " + gemm_cmd);
    EXPECT_EQ(r.rc, c.rc) << c.mode << "\n" << r.out;
    EXPECT_NE(r.out.find(c.says), std::string::npos) << c.mode << "\n" << r.out;
    EXPECT_FALSE(fs::exists(p("o.safetensors"))) << c.mode;
  }
  // A plugin call that never returns ends the audit under --timeout (it hung it forever); without a
  // plugin or command to bound, --timeout is refused.
  // (audit_cmd has --json: the error object is on stdout, the text on stderr.)
  const auto t0 = std::chrono::steady_clock::now();
  const CliRun hung = sh("W4A8_TEST_MISBEHAVE=hang_run exec " + audit_cmd + " --timeout 3 2>" + p("err"));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(hung.rc, 2) << hung.out;
  EXPECT_NE(slurp(p("err")).find("it did not return within 3 s (--timeout); nothing it computed is used"), std::string::npos)
      << slurp(p("err"));
  auto doc = json::parse_serde(hung.out);
  ASSERT_TRUE(doc.ok()) << "stdout is not one JSON document: " << hung.out;
  EXPECT_NE(hung.out.find("\"code\": \"plugin.failed\""), std::string::npos) << hung.out;
  EXPECT_LT(secs, 30.0);
  // A SIGALRM someone else sends (kill, a supervisor) is not the limit: it acts as it would without
  // the guard (the process dies of it), not as "did not return within 100 s".
  const CliRun killed = sh("W4A8_TEST_MISBEHAVE=hang_run " + audit_cmd + " --timeout 100 >/dev/null 2>" + p("err") +
                           " & pid=$!; sleep 1; kill -ALRM $pid; wait $pid");
  EXPECT_EQ(killed.rc, 128 + SIGALRM) << slurp(p("err"));
  EXPECT_EQ(slurp(p("err")).find("did not return within"), std::string::npos) << slurp(p("err"));
  EXPECT_EQ(cli("audit check " + p("suite") + " --impl fast --timeout 1").rc, 2);
  // The limit is a thread of its own: a plugin that blocks every signal or ignores SIGALRM still ends
  // at it (a SIGALRM timer hung the audit forever there). The message names the case.
  for (const char* mode : {"hang_masked_run", "hang_no_alarm_run"}) {
    const auto start = std::chrono::steady_clock::now();
    const CliRun r = sh("W4A8_TEST_MISBEHAVE=" + std::string(mode) + " exec timeout -s KILL 60 " + kBin + " audit check " +
                        p("suite") + " --kernel " + plugin + " --timeout 2 2>&1");
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.rc, 2) << mode << "\n" << r.out;
    EXPECT_LT(took, 30.0) << mode;
    EXPECT_NE(r.out.find("failed in run (case 0000_"), std::string::npos) << mode << "\n" << r.out;
    EXPECT_NE(r.out.find("it did not return within 2 s (--timeout)"), std::string::npos) << mode << "\n" << r.out;
  }
  // A plugin that writes nothing: the result's own gap is named first (out, element by element), as
  // the checks' documented order says, not an intermediate left whole (x_q was named).
  const CliRun nothing = sh("W4A8_TEST_MISBEHAVE=nothing_intermediates " + gemm_cmd + " --intermediates 2>&1");
  EXPECT_EQ(nothing.rc, 2) << nothing.out;
  EXPECT_NE(nothing.out.find("failed in run: it left 200 of 200 elements of out unwritten (the first at row 0, column 0)"),
            std::string::npos)
      << nothing.out;
  // A crash in another table function is named as that function, not as the run around it.
#ifndef W4A8_SANITIZED
  const CliRun ws = sh("W4A8_TEST_MISBEHAVE=segv_ws " + gemm_cmd + " 2>&1");
  EXPECT_EQ(ws.rc, 128 + 11) << ws.out;
  EXPECT_NE(ws.out.find("failed in workspace_size: " + sig_segv), std::string::npos) << ws.out;
#endif
}

// A C++ plugin that lets an exception escape is named as such (it was "it aborted (SIGABRT)"). Dying
// in a noexcept frame of its own, std::terminate of its runtime gives what() to our handler. Thrown
// into our frames: where w4a8check links its own C++ runtime (the GCC release build) the unwinding
// aborts (our personality routine is not its unwinder's), told apart by the exception its runtime
// counts as uncaught; where the runtime is shared (clang, sanitizers) it is caught around the call
// (exit 2, with what()). The audit names the case.
TEST_F(PluginCli, AnEscapedCxxExceptionIsNamed) {
  const std::string plugin = W4A8_THROWING_PLUGIN;
  write(p("x.safetensors"), {gemm::float_tensor("input", gemm::FloatDtype::F32, {5, 128}, ramp(640, 4.0f))});
  const std::string gemm_cmd = kBin + " gemm --checkpoint " + p("ck.safetensors") + " --layer blk --input " +
                               p("x.safetensors") + " --out " + p("o.safetensors") + " --kernel " + plugin;
  const std::string escaped = "it let a C++ exception escape across the C ABI (bad kernel config)";
  const CliRun terminated = sh("W4A8_TEST_THROW=noexcept " + gemm_cmd + " 2>&1");
  EXPECT_EQ(terminated.rc, 128 + 6) << terminated.out;
  EXPECT_NE(terminated.out.find("failed in run: " + escaped), std::string::npos) << terminated.out;
#ifdef W4A8_CLI_STATIC_CXX_RUNTIME
  const int thrown_rc = 128 + 6;
  const std::string thrown = "it threw a C++ exception across the C ABI (it aborted while unwinding";
#else
  const int thrown_rc = 2;
  const std::string& thrown = escaped;
#endif
  const CliRun unwound = sh("W4A8_TEST_THROW=run " + gemm_cmd + " 2>&1");
  EXPECT_EQ(unwound.rc, thrown_rc) << unwound.out;
  EXPECT_NE(unwound.out.find("failed in run: " + thrown), std::string::npos) << unwound.out;
  EXPECT_FALSE(fs::exists(p("o.safetensors")));
  ASSERT_EQ(cli("audit make --out " + p("suite") + " --grid small").rc, 0);
  const CliRun audit = sh("W4A8_TEST_THROW=run " + kBin + " audit check " + p("suite") + " --kernel " + plugin + " --json 2>/dev/null");
#ifdef W4A8_CLI_STATIC_CXX_RUNTIME
  EXPECT_EQ(audit.rc, 128 + 6) << audit.out;
#else
  EXPECT_EQ(audit.rc, 1) << audit.out;  // (an upstream error in every case)
#endif
  EXPECT_NE(audit.out.find("failed in run (case 0000_"), std::string::npos) << audit.out.substr(0, 3000);
  EXPECT_NE(audit.out.find(thrown), std::string::npos) << audit.out.substr(0, 3000);
}

}  // namespace
}  // namespace w4a8::testing
