// The CLI with the user's files and time: outputs never replace inputs (any spelling, symlinks,
// shards, the index), a failed write leaves the old file byte-identical and no temporary behind,
// FIFOs and devices fail at once, thread and memory limits end cleanly, no CUDA library is linked,
// non-finite activations are reported by row, and every error names its file.
#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <unistd.h>

#include "cli_fixture.hpp"
#include "core/upstream.hpp"
#include "gemm/quantizer.hpp"
#include "json/parse.hpp"
#include "support/python.hpp"

namespace w4a8::testing {
namespace {

std::vector<float> ramp(std::size_t n, float scale) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * float(int(i * 37 % 101) - 50) / 50.0f;
  return v;
}

CliRun make_float(const std::string& dir) {
  return run_command(std::string(W4A8_PYTHON) + " " + kRoot + "/examples/make_float_checkpoint.py " + dir + " 2>&1");
}

class SafetyCli : public CliFixture {
 protected:
  void SetUp() override {
    CliFixture::SetUp();
    gemm::QuantizeOptions q;
    q.convrot_groupsize = 16;
    auto layer = gemm::quantize_weights(ramp(32 * 64, 1.0f), 32, 64, q);
    ASSERT_TRUE(layer.ok());
    ckpt_ = p("ckpt.safetensors");
    input_ = p("x.safetensors");
    weights_ = p("w.safetensors");
    write(ckpt_, gemm::layer_tensors(*layer, "blk.0"));
    write(input_, {gemm::float_tensor("input", gemm::FloatDtype::F32, {4, 64}, ramp(256, 3.0f))});
    write(weights_, {gemm::float_tensor("fc.weight", gemm::FloatDtype::F32, {32, 64}, ramp(32 * 64, 1.0f)),
                     gemm::float_tensor("fc.bias", gemm::FloatDtype::BF16, {32}, std::vector<float>(32, 0.5f))});
  }
  std::string gemm_args(const std::string& out) const {
    return "gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + input_ + " --out " + out;
  }
  std::string quantize_args(const std::string& out) const {
    return "quantize --weights " + weights_ + " --key fc.weight --convrot-groupsize 16 --out " + out;
  }
  std::string ckpt_, input_, weights_;
};

TEST_F(SafetyCli, OutputThatIsAnInputIsRefusedAndUntouched) {
  ASSERT_EQ(::symlink(ckpt_.c_str(), p("alias.safetensors").c_str()), 0);
  ASSERT_EQ(::symlink(weights_.c_str(), p("walias.safetensors").c_str()), 0);
  const std::string ck = slurp(ckpt_), in = slurp(input_), w = slurp(weights_);
  struct Case {
    std::string args, out, input;
  } cases[] = {
      {gemm_args(ckpt_), ckpt_, ckpt_},
      {gemm_args(p("alias.safetensors")), p("alias.safetensors"), ckpt_},
      {gemm_args(p("./sub/../x.safetensors")), p("./sub/../x.safetensors"), input_},
      {quantize_args(weights_), weights_, weights_},
      {quantize_args(p("walias.safetensors")), p("walias.safetensors"), weights_},
  };
  ::mkdir(p("sub").c_str(), 0755);
  for (const Case& c : cases) {
    const CliRun r = cli(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find("refusing to write " + c.out + ": it is the input " + c.input + " (same file)"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("[io.output_is_input]"), std::string::npos) << r.out;
  }
  EXPECT_EQ(slurp(ckpt_), ck);
  EXPECT_EQ(slurp(input_), in);
  EXPECT_EQ(slurp(weights_), w);
}

TEST_F(SafetyCli, WholeModelOutputOverItsOwnShardsOrIndexIsRefused) {
  // A float checkpoint directory with model.safetensors: quantizing into the same directory would
  // replace it (single shard), or its index and shards (sharded output).
  ::mkdir(p("m").c_str(), 0755);
  ASSERT_EQ(std::rename(weights_.c_str(), p("m/model.safetensors").c_str()), 0);
  const std::string before = slurp(p("m/model.safetensors"));
  CliRun r = cli("quantize --weights " + p("m") + " --out " + p("m") + " --convrot-groupsize 16");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("refusing to write " + p("m") + "/model.safetensors"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(p("m/model.safetensors")), before);
  // Sharded: the output index is the input index.
  r = make_float(p("f"));
  ASSERT_EQ(r.rc, 0) << r.out;
  const std::string idx = slurp(p("f/model.safetensors.index.json"));
  r = cli("quantize --weights " + p("f") + " --out " + p("f") + " --max-shard-size 600KB --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("it is the input " + p("f") + "/model-0000"), std::string::npos) << r.out;
  EXPECT_EQ(slurp(p("f/model.safetensors.index.json")), idx);
  EXPECT_EQ(names("f"), (std::vector<std::string>{"input.safetensors", "model-00001-of-00002.safetensors",
                                                  "model-00002-of-00002.safetensors", "model.safetensors.index.json"}));
}

TEST_F(SafetyCli, WriteFailingUnderUlimitKeepsTheOldFileAndNoTemporary) {
  const std::string out = p("out.safetensors");
  ASSERT_EQ(cli(quantize_args(out)).rc, 0);
  const std::string old = slurp(out);
  ASSERT_GT(old.size(), 1024u);
  for (const std::string& args : {quantize_args(out) + " --uniform", gemm_args(out) + " --intermediates"}) {
    const CliRun r = sh("ulimit -f 1; exec " + kBin + " " + args);  // 1 block = 1024 bytes  NOLINT(performance-inefficient-string-concatenation)
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    EXPECT_NE(r.out.find("cannot write " + out + ": File too large"), std::string::npos) << r.out;
    EXPECT_EQ(slurp(out), old) << "the previous output must survive byte for byte";
    for (const std::string& n : names()) EXPECT_EQ(n.find(".w4a8tmp-"), std::string::npos) << "temporary left: " << n;
  }
  // Sharded output: nothing published when any shard fails.
  ASSERT_EQ(make_float(p("f")).rc, 0);
  const CliRun r = sh("ulimit -f 100; exec " + kBin + " quantize --weights " + p("f") + " --out " + p("q") +
                      " --max-shard-size 150KB --quiet");
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_FALSE(fs::exists(p("q"))) << "partial shards published, or the directory the run made left behind";
}

// --out through /dev/stdout or /dev/stderr (links into /proc/self/fd) names the stream, not a file in
// a directory. A log the shell opened for appending is not replaced by the safetensors file (that
// lost the log's lines and the command's own report, exit 0); a pipe is called one (it was "No such
// file or directory"); naming the redirected file itself is refused too. /dev/null still works.
TEST_F(SafetyCli, OutputThatIsTheCommandsOwnStreamIsRefused) {
  const std::string log = p("run.log");
  const std::string before = "line1\n";
  const auto write_log = [&] { std::ofstream(log, std::ios::binary) << before; };
  const std::string stdout_msg = "the file this command's standard output is writing";
  const std::string stderr_msg = "the file this command's standard error is writing";
  struct Case {
    std::string cmd, why;
  };
  for (const Case& c : {Case{gemm_args("/dev/stdout") + " >> " + log + " 2>" + p("err"), stdout_msg},
                        // (quantize takes FILE.safetensors, a directory or a device; a log is none, and it said
                        // only "not a directory")
                        Case{quantize_args("/dev/stdout") + " >> " + log + " 2>" + p("err"), stdout_msg},
                        Case{quantize_args(p("q.safetensors")) + " >> " + p("q.safetensors") + " 2>" + p("err"), stdout_msg},
                        Case{gemm_args("/dev/stderr") + " 2>> " + log + " >" + p("err"), stderr_msg},
                        Case{gemm_args(log) + " >> " + log + " 2>" + p("err"), stdout_msg}}) {
    write_log();
    const CliRun r = sh("exec " + kBin + " " + c.cmd);  // NOLINT(performance-inefficient-string-concatenation)
    EXPECT_EQ(r.rc, 2) << c.cmd;
    const std::string log_now = slurp(log);
    EXPECT_EQ(log_now.substr(0, before.size()), before) << c.cmd << ": the log was replaced";
    EXPECT_NE((log_now + slurp(p("err"))).find(c.why), std::string::npos) << c.cmd << "\n" << log_now << slurp(p("err"));
    for (const std::string& n : names()) EXPECT_EQ(n.find(".w4a8tmp-"), std::string::npos) << "temporary left: " << n;
  }
  const CliRun piped = sh("exec " + kBin + " " + gemm_args("/dev/stdout") + " 2>&1 | cat");
  EXPECT_NE(piped.out.find("cannot write /dev/stdout: a FIFO, not a regular file"), std::string::npos) << piped.out;
  EXPECT_EQ(cli(gemm_args("/dev/null")).rc, 0);
}

// A failed whole-model run removes the output directory it made (empty: nothing was published), never
// one that was there before.
TEST_F(SafetyCli, AFailedRunRemovesOnlyTheDirectoryItMade) {
  ASSERT_EQ(make_float(p("f")).rc, 0);
  const std::string run = "ulimit -f 100; exec " + kBin + " quantize --quiet --weights " + p("f") + " --max-shard-size 150KB --out ";
  CliRun r = sh(run + p("new"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write " + p("new") + "/model-"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(p("new")));
  fs::create_directory(p("mine"));
  r = sh(run + p("mine"));
  EXPECT_EQ(r.rc, 2) << r.out;
  ASSERT_TRUE(fs::is_directory(p("mine")));
  EXPECT_TRUE(names("mine").empty());
}

// Output names up to NAME_MAX (255 bytes): the temporary beside the target has a longer name, which is
// cut to fit. gemm --out and quantize --out (new, then replaced) write a 250-byte name; 256 bytes is
// a clean error.
TEST_F(SafetyCli, OutputNamesUpToNameMaxAreWritten) {
  const std::string name = std::string(238, 'o') + ".safetensors";
  for (const std::string& args : {gemm_args(p(name)), quantize_args(p(name)) + " --uniform", quantize_args(p(name))}) {
    const CliRun r = cli(args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out;
    EXPECT_TRUE(fs::is_regular_file(p(name))) << args;
  }
  const CliRun v = cli("validate --quiet " + p(name));
  EXPECT_EQ(v.rc, 0) << "the last output, whole: " << v.out;
  const std::string too_long = p(std::string(244, 'o') + ".safetensors");
  const CliRun r = cli(quantize_args(too_long));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("cannot write " + too_long + ": File name too long"), std::string::npos) << r.out;
  for (const std::string& n : names()) EXPECT_EQ(n.find(".w4a8tmp-"), std::string::npos) << "temporary left: " << n;
}

// Finished shards stay open until all are published, but at most a quarter of the open-file limit
// (once a fixed 64): 48 one-layer shards are written under `ulimit -n 32`, and under 8.
TEST_F(SafetyCli, ShardedQuantizeUnderALowOpenFileLimit) {
  constexpr int kLayers = 48;
  std::vector<st::TensorSpec> t;
  t.reserve(kLayers);
  for (int i = 0; i < kLayers; ++i)
    t.push_back(gemm::float_tensor("l" + std::to_string(100 + i) + ".weight", gemm::FloatDtype::F32, {16, 16}, ramp(256, 1.0f)));
  write(weights_, t);
  for (const char* limit : {"32", "8"}) {
    const std::string out = p(std::string("q") + limit);
    std::string script = std::string("ulimit -n ") + limit + "; exec " + kBin;
    script += " quantize --quiet --weights " + weights_ + " --max-shard-size 1 --convrot-groupsize 16 --out " + out;
    const CliRun r = sh(script);
    ASSERT_EQ(r.rc, 0) << "ulimit -n " << limit << "\n" << r.out;
    EXPECT_NE(r.out.find("OK: quantized 48 layer(s), skipped 0, copied 0 other tensor(s) -> 48 shards"), std::string::npos) << r.out;
    const auto files = names(std::string("q") + limit);
    ASSERT_EQ(files.size(), std::size_t(kLayers) + 1);
    EXPECT_EQ(files.front(), "model-00001-of-00048.safetensors");
    EXPECT_EQ(files.back(), "model.safetensors.index.json");
    const CliRun v = cli("validate --summary " + out);
    EXPECT_EQ(v.rc, 0) << v.out;
    EXPECT_NE(v.out.find("OK: 48 quantized layer(s)"), std::string::npos) << v.out;
  }
}

TEST_F(SafetyCli, FifoAndDeviceInputsFailAtOnceNamingTheFile) {
  const std::string fifo = p("pipe.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string forms[] = {
      "validate " + fifo,
      "validate /dev/zero",
      "gemm --checkpoint " + fifo + " --layer blk.0 --input " + input_ + " --out " + p("o.safetensors"),
      "gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + fifo + " --out " + p("o.safetensors"),
      "quantize --weights " + fifo + " --out " + p("q.safetensors"),
      "quantize --weights " + fifo + " --key a --out " + p("q.safetensors"),
  };
  for (const std::string& args : forms) {
    const auto t0 = std::chrono::steady_clock::now();
    const CliRun r = sh("timeout 10 " + kBin + " " + args);  // timeout: a hang fails instead of blocking ctest  NOLINT(performance-inefficient-string-concatenation)
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 1.0) << args;
    EXPECT_EQ(r.rc, 2) << args << "\n" << r.out;
    const std::string file = args.find("/dev/zero") != std::string::npos ? "/dev/zero" : fifo;
    const std::string kind = file == fifo ? "a FIFO" : "a character device";
    EXPECT_NE(r.out.find("cannot read " + file + ": it is " + kind + ", not a regular file"), std::string::npos) << r.out;  // NOLINT(performance-inefficient-string-concatenation)
  }
}

// Files that report size 0 but are not empty (most of /proc and /sys): the safetensors package maps
// max(size, 1) bytes, so mmap's error (ENODEV, EIO) is its OSError, and only a truly empty file is
// "header too small". The errors come from the real package (tools/oracle/safetensors_verdict.py).
TEST_F(SafetyCli, UnmappableSizeZeroFilesAreMmapErrorsAsSafetensorsSays) {
  const std::string empty = p("empty.safetensors");
  spit(empty, "");
  std::vector<std::string> files = {empty};
  for (const char* f : {"/proc/self/status", "/proc/version"})
    if (::access(f, R_OK) == 0) files.emplace_back(f);
  if (files.size() == 1) GTEST_SKIP() << "no readable /proc files on this machine";
  std::string list;
  for (const std::string& f : files) list += f + "\n";
  spit(p("list"), list);
  const auto oracle = PythonCall::script("tools/oracle/safetensors_verdict.py").stdin_from(p("list")).run();
  ASSERT_TRUE(oracle.ok()) << oracle.command;
  ASSERT_EQ(oracle.lines.size(), files.size()) << oracle.command;
  for (std::size_t k = 0; k < files.size(); ++k) {
    const std::string& f = files[k];
    const std::string& line = oracle.lines[k];
    auto v = json::loads_str(line);
    ASSERT_TRUE(v.ok()) << line;
    const std::string kind = v->get("kind")->text, message = v->get("message")->text;
    const CliRun r = sh(kBin + " validate " + f);  // NOLINT(performance-inefficient-string-concatenation)
    if (f == empty) {
      EXPECT_EQ(kind, "HeaderTooSmall") << line;
      EXPECT_EQ(r.rc, 1) << r.out;
      EXPECT_NE(r.out.find("header too small"), std::string::npos) << r.out;
      continue;
    }
    // "No such device (os error 19)": the same strerror text, an I/O error of ours (exit 2).
    ASSERT_EQ(kind, "Python:OSError") << line;
    const std::string text = message.substr(0, message.find(" (os error"));
    EXPECT_EQ(r.rc, 2) << f << "\n" << r.out;
    EXPECT_NE(r.out.find("cannot read " + f + ": " + text + "\n"), std::string::npos) << r.out << "\noracle: " << line;  // NOLINT(performance-inefficient-string-concatenation)
  }
}

TEST_F(SafetyCli, ThreadsAreCappedWithANote) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  for (const std::string& args : {gemm_args(p("o.safetensors")), quantize_args(p("q.safetensors"))}) {
    const CliRun r = cli(args + " --threads 100000");
    EXPECT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("note: --threads 100000 capped at " + std::to_string(hw)), std::string::npos) << r.out;
  }
  // Threads apply to --impl fast only: given elsewhere, a usage error (it was ignored without a word),
  // and no note where they are not given.
  for (const char* impl : {"--impl literal", "--impl emulate", "--kernel /nonexistent.so"}) {
    const CliRun r = cli(gemm_args(p("o.safetensors")) + " " + std::string(impl) + " --threads 2");
    EXPECT_EQ(r.rc, 2) << impl << "\n" << r.out;
    EXPECT_NE(r.out.find("--threads applies to --impl fast only"), std::string::npos) << impl << "\n" << r.out;
  }
  const CliRun r = cli(gemm_args(p("o.safetensors")) + " --impl literal");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(r.out.find("capped"), std::string::npos) << r.out;
}

TEST_F(SafetyCli, RefusedThreadsAndExhaustedMemoryEndCleanly) {
#ifdef W4A8_SANITIZED
  GTEST_SKIP() << "address-space limits (ulimit -v) cannot apply to a sanitizer build: ASan reserves terabytes of "
                  "shadow memory at start-up; the non-sanitizer build runs this test";
#endif
  // A 2 GB stack limit makes every new thread ask for 2 GB, which a 600 MB address space refuses.
  ASSERT_EQ(make_float(p("f")).rc, 0);
  const std::string limits = "ulimit -v 600000; ulimit -s 2000000; exec " + kBin + " ";
  CliRun r = sh(limits + "quantize --weights " + p("f") + " --out " + p("q") + " --threads 2 --quiet");
  EXPECT_EQ(r.rc, 0) << r.out;
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_NE(r.out.find("note: started 0 of 2 threads (the system refused more); continuing with those"),
              std::string::npos)
        << r.out;
  }
  r = sh(limits + gemm_args(p("o.safetensors")) + " --threads 2");
  EXPECT_EQ(r.rc, 0) << r.out;
  // Out of memory: a clean message and exit 2, never an abort.
  std::vector<std::uint8_t> quarter(std::size_t(64) << 19);  // BF16 [2^18, 64] of 0.25 (32 MB)
  for (std::size_t i = 0; i < quarter.size(); i += 2) quarter[i] = 0x80, quarter[i + 1] = 0x3E;
  write(input_, {{"input", st::Dtype::BF16, {1u << 18, 64}, std::move(quarter)}});
  r = sh("ulimit -v 80000; exec " + kBin + " " + gemm_args(p("o.safetensors")));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("w4a8check: out of memory: std::bad_alloc"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("terminate"), std::string::npos) << r.out;
}

TEST_F(SafetyCli, NoCudaLibraryIsLinkedAndValidateRunsWithoutThem) {
  const CliRun ldd = run_command("ldd " + kBin + " 2>&1");
  ASSERT_EQ(ldd.rc, 0) << ldd.out;
  for (const char* lib : {"libcuda", "libcudart", "libcublas", "libnvrtc"})
    EXPECT_EQ(ldd.out.find(lib), std::string::npos) << lib << " linked:\n" << ldd.out;
  const CliRun r = sh("LD_LIBRARY_PATH=/nonexistent CUDA_VISIBLE_DEVICES= exec " + kBin + " validate --strict " +
                      kRoot + "/examples/flux-tiny-w4a8.safetensors");
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_EQ(cli("--version").out, "w4a8check " W4A8_VERSION "\n");
}

TEST_F(SafetyCli, NonFiniteActivationRowsAreNamed) {
  std::vector<float> x = ramp(4 * 64, 3.0f);
  x[1 * 64 + 5] = std::numeric_limits<float>::quiet_NaN();
  x[3 * 64 + 0] = -std::numeric_limits<float>::infinity();
  write(input_, {gemm::float_tensor("input", gemm::FloatDtype::F32, {4, 64}, x)});
  const std::string what = input_ + " [input] has NaN or infinite values in 2 row(s): 1, 3";
  CliRun r = cli(gemm_args(p("o.safetensors")));
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("w4a8check: warning: " + what), std::string::npos) << r.out;
  r = cli(gemm_args(p("o2.safetensors")) + " --strict");
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("REJECTED: ValueError: " + what + "\n  [gemm.input_nonfinite]"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(p("o2.safetensors")));
}

TEST_F(SafetyCli, ErrorsNameTheFileTheyConcern) {
  spit(p("junk.safetensors"), "not a safetensors file at all");
  CliRun r = cli("gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + p("junk.safetensors") + " --out " + p("o.safetensors"));
  EXPECT_EQ(r.rc, 1) << r.out;
  EXPECT_NE(r.out.find("REJECTED: --input " + p("junk.safetensors") + ": SafetensorError: Error while deserializing header"),
            std::string::npos)
      << r.out;
  for (const std::string& args : {"quantize --weights " + p("junk.safetensors") + " --key a --out " + p("q.safetensors"),
                                  "gemm --checkpoint " + p("junk.safetensors") + " --layer a --input " + input_ + " --out " +
                                      p("o.safetensors"),
                                  "validate " + ckpt_ + " " + p("junk.safetensors")}) {
    r = cli(args);
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("REJECTED: " + p("junk.safetensors") + ": SafetensorError: Error while deserializing header"),
              std::string::npos)
        << r.out;
  }
  r = cli("gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + input_ + " --input-key nope --out " + p("o.safetensors"));
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find(input_ + " has no tensor 'nope' (--input-key names the activations); it holds 'input'"),
            std::string::npos)
      << r.out;
  r = cli("gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + input_ + " --input-key inptu --out " + p("o.safetensors"));
  EXPECT_NE(r.out.find("; closest: 'input'"), std::string::npos) << r.out;
  r = cli("gemm --checkpoint " + ckpt_ + " --layer blk.0 --input " + ckpt_ + " --out " + p("o.safetensors"));
  EXPECT_NE(r.out.find(" has no tensor 'input' (--input-key names the activations); it holds 'blk.0.comfy_quant', "),
            std::string::npos)
      << r.out;
}

TEST_F(SafetyCli, QuantizeRefusesEmptyWeightsAsValidateStrictWould) {
  for (const auto& shape : {std::vector<std::uint64_t>{0, 64}, std::vector<std::uint64_t>{32, 0}}) {
    write(weights_, {{"fc.weight", st::Dtype::F32, shape, {}}});
    const CliRun r = cli(quantize_args(p("q.safetensors")));
    EXPECT_EQ(r.rc, 1) << r.out;
    EXPECT_NE(r.out.find("ValueError: Comfy W4A8 layer 'fc' is empty: N=" + std::to_string(shape[0]) + " and K=" +
                         std::to_string(shape[1]) + " must both be positive\n  [strict.w4a8.zero_sized]"),
              std::string::npos)
        << r.out;
    EXPECT_FALSE(fs::exists(p("q.safetensors")));
  }
}

// An empty path (an unset shell variable) is a usage error naming the option, before anything is
// opened: it read "cannot write : its parent directory does not exist" (quantize --out ''; found by
// a new user's pass, 2026-12-07), or "cannot open : No such file or directory".
TEST_F(SafetyCli, EmptyPathsAreUsageErrorsNamingTheOption) {
  const std::string why = ": an empty path names no file (an unset variable?)\n  [usage.error]\n";
  struct Case {
    std::string args, option;
  };
  for (const Case& c : {Case{"quantize --weights " + weights_ + " --out ''", "--out"},
                        Case{"quantize --weights '' --out " + p("q.safetensors"), "--weights"},
                        Case{gemm_args("''"), "--out"}, Case{"validate ''", "checkpoint"},
                        // (audit check '' read ./manifest.json: whatever suite the working directory held)
                        Case{"audit check '' --impl fast", "suite"}, Case{"compare '' x", "expected"},
                        Case{"audit to-f32 x ''", "out"}}) {
    const CliRun r = cli(c.args);
    EXPECT_EQ(r.rc, 2) << c.args << "\n" << r.out;
    EXPECT_EQ(r.out.substr(0, r.out.find("Run w4a8check")), "w4a8check: " + c.option + why) << c.args;
  }
  for (const std::string& n : names()) EXPECT_NE(n, "q.safetensors");  // nothing written
}

TEST_F(SafetyCli, EnumOptionsListTheirValues) {
  CliRun r = cli(gemm_args(p("o.safetensors")) + " --impl gpu");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("--impl: unknown value 'gpu'; known: literal, fast, emulate, cuda"), std::string::npos) << r.out;
  r = cli("validate --sglang 0.4.0 " + ckpt_);
  EXPECT_EQ(r.rc, 2);
  std::string known;  // every row of core/sglang_versions.def
  for (const auto& v : upstream::kSglangProfiles) known += (known.empty() ? "" : ", ") + std::string(v.version);
  EXPECT_NE(r.out.find("--sglang: unknown value '0.4.0'; known: " + known), std::string::npos) << r.out;
  EXPECT_NE(known.find("0.5.23"), std::string::npos);
  r = cli(quantize_args(p("q.safetensors")) + " --markers tensors");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("known: tensor, metadata, both"), std::string::npos) << r.out;
  // audit's too (they gave CLI11's own "gpu not in {...}").
  const std::pair<std::string, std::string> audit[] = {
      {"audit make --out " + p("s") + " --grid huge", "--grid: unknown value 'huge'; known: small, standard, full"},
      {"audit check " + p("s") + " --impl gpu", "--impl: unknown value 'gpu'; known: literal, fast, emulate, cuda"},
      {"audit check " + p("s") + " --act-policy e", "--act-policy: unknown value 'e'; known: f32, eager"},
      {"audit check " + p("s") + " --reference x", "--reference: unknown value 'x'; known: fast, literal"}};
  for (const auto& [args, message] : audit) {
    r = cli(args);
    EXPECT_EQ(r.rc, 2) << args;
    EXPECT_NE(r.out.find(message), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace w4a8::testing
