// An external command as an audit implementation, through the line protocol of docs/audit.md:
// the command (run once through /bin/sh -c) prints a hello line, then for each job line on its
// stdin writes its outputs as safetensors and answers one status line on stdout.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include <filesystem>
#include <fstream>

#include "audit/implementation.hpp"
#include "audit/tensor_compare.hpp"
#include "gemm/tensor_io.hpp"
#include "json/dump.hpp"
#include "json/parse.hpp"
#include "json/wtf8.hpp"
#include "safetensors/reader.hpp"

extern char** environ;

namespace w4a8::audit {

namespace {

constexpr const char* kProtocol = "w4a8check-audit-1";

class CommandImpl final : public Implementation {
 public:
  CommandImpl(std::string cmd, std::string work, bool keep, double timeout)
      : cmd_(std::move(cmd)), work_(std::move(work)), keep_(keep), timeout_(timeout) {}
  ~CommandImpl() override { stop(fatal_.empty()); }

  std::string name() const override { return name_.empty() ? "command" : name_; }
  // A command that cannot start is broken, not unavailable: every case reports it as Failed.
  std::string unavailable_reason() const override { return ""; }
  gemm::ActPolicy natural_policy() const override { return policy_; }
  double setup_seconds() const override { return setup_seconds_; }
  // The first start, before any case: its seconds are setup_seconds() (a restart after a failed case
  // is part of that case's time).
  void first_start() {
    const auto t0 = std::chrono::steady_clock::now();
    start();
    setup_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  // Starts the command and reads its hello line; fatal_ is set when it cannot start.
  void start() {
    if (pid_ > 0 || !fatal_.empty()) return;
    ::signal(SIGPIPE, SIG_IGN);  // a dead command must give EPIPE, not kill the audit
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
      fatal_ = std::string("pipe: ") + std::strerror(errno);
      return;
    }
    const std::string err_log = log_path();
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, err_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    // Its own process group, so stop() reaches whatever the shell started (an interpreter under
    // `sh -c` outlived a timeout before: only the shell was killed).
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    const char* argv[] = {"/bin/sh", "-c", cmd_.c_str(), nullptr};
    const int rc = ::posix_spawn(&pid_, "/bin/sh", &fa, &attr, const_cast<char**>(argv), environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    ::close(in[0]);
    ::close(out[1]);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      pid_ = -1;
      fatal_ = std::string("cannot start /bin/sh: ") + std::strerror(rc);
      return;
    }
    to_ = in[1], from_ = out[0];
    group_ = pid_;
    std::string line;
    if (const LineEnd e = read_line(line, timeout_); e != LineEnd::Line) {  // --timeout bounds the hello too (docs/audit.md)
      fatal_ = "the command did not print its hello line: " + died_text(e);
      stop();
      return;
    }
    auto p = json::loads_str(line);
    const json::Value* proto = p.ok() ? p->get("protocol") : nullptr;
    if (!proto || !proto->is_string() || proto->text != kProtocol) {
      fatal_ = "the command's first line is not a " + std::string(kProtocol) + " hello: " + line.substr(0, 200);
      stop();
      return;
    }
    // The command's strings are json.loads strs; the report holds system text (audit JSON writes it
    // as Python's os.fsdecode would): converted once, here.
    if (const auto* n = p->get("name"); n && n->is_string()) name_ = json::os_from_wtf8(n->text);
    // The expected values follow the declared policy: one the audit does not know would silently be
    // judged as f32, so the command cannot run any case.
    if (const auto* pol = p->get("policy")) {
      if (!pol->is_string() || (pol->text != "f32" && pol->text != "eager")) {
        fatal_ = "the command's hello declares an unknown policy " + json::dump(*pol).substr(0, 200) +
                 " (f32 or eager): " + line.substr(0, 200);
        stop();
        return;
      }
      if (pol->text == "eager") policy_ = gemm::ActPolicy::Eager;
    }
  }

  ImplOutput run(const CaseInput& in) override {
    // A line no job asked for (a second status after the last case's, say) would be read as this
    // job's answer, and every later case judged on the one before's: out of step, so restarted first.
    if (pid_ > 0 && pending_output()) stop();
    start();
    if (!fatal_.empty()) return ImplOutput::failed(fatal_);
    const std::string out_path = (std::filesystem::path(work_) / (in.spec.id + ".out.safetensors")).string();
    json::Value job = json::Value::object();
    job.set("case", json::Value::from_os_string(in.case_path));
    job.set("entry", case_to_json(in.spec));
    job.set("policy", json::Value::from_string(in.policy == gemm::ActPolicy::Eager ? "eager" : "f32"));
    job.set("layer_prefix", json::Value::from_string("layer"));
    job.set("input_key", json::Value::from_string("input"));
    job.set("out", json::Value::from_os_string(out_path));
    const std::string text = json::dump(job) + "\n";
    // An output left from an earlier run (a reused --work-dir, --keep-outputs) would be read as this
    // run's answer if the command writes nothing: it goes first.
    if (::unlink(out_path.c_str()) != 0 && errno != ENOENT)
      return ImplOutput::failed("cannot remove the old output " + out_path + ": " + std::strerror(errno));
    const auto t0 = std::chrono::steady_clock::now();
    job_started_ = t0;
    if (!write_all(text)) return restart_failed("cannot send the job", LineEnd::Closed);
    std::string line;
    if (const LineEnd e = read_line(line, timeout_); e != LineEnd::Line) return restart_failed("no status line", e);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto p = json::loads_str(line);
    const json::Value* st = p.ok() ? p->get("status") : nullptr;
    const json::Value* msg = p.ok() ? p->get("message") : nullptr;
    const std::string message = msg && msg->is_string() ? json::os_from_wtf8(msg->text) : "";
    // A command out of step with the protocol would answer the next job with this one's leftovers:
    // it is restarted, as after a crash.
    if (!st || !st->is_string())
      return restart_failed("protocol: bad status line: " + line.substr(0, 200), LineEnd::Line, kOutOfStep);
    if (st->text == "skip") return ImplOutput::skip(message);
    if (st->text == "error") return ImplOutput::upstream(message);
    if (st->text != "ok") return restart_failed("protocol: unknown status '" + st->text + "'", LineEnd::Line, kOutOfStep);
    // "ok" with no output written: most likely a line meant for another job (a stray "ok" after the
    // previous answer, printed too late to be seen before this job went out). Restarted, or the
    // command stays one answer behind for the rest of the run.
    if (::access(out_path.c_str(), F_OK) != 0)
      return restart_failed("protocol: status ok, but no output at " + out_path, LineEnd::Line, kOutOfStep);
    ImplOutput o = read_outputs(out_path, in.spec);
    o.seconds = secs;
    if (!keep_) ::unlink(out_path.c_str());
    return o;
  }

 private:
  static constexpr const char* kOutOfStep = "the command is restarted for the next case";
  static std::string seconds_text(double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", s);
    return b;
  }
  // How a wait for a line ended.
  enum class LineEnd { Line, TimedOut, Closed, TooLong };
  // end: how the read of the line that did not come ended; alive: what a command still running
  // means when a line did come (kOutOfStep).
  ImplOutput restart_failed(const std::string& what, LineEnd end, const char* alive = nullptr) {
    std::string why = what + ": " + died_text(end, alive);
    stop();
    ImplOutput o = ImplOutput::failed(why);
    // The case's time counts what it cost, a timeout included (it was 0 for a broken case).
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - job_started_).count();
    return o;
  }
  // What became of the command: its exit status when it ended; else why the line is missing. A
  // command that closed its output is given a moment to be reaped (the pipe closes before the
  // process is gone: "still running (timed out)" was reported for commands that had exited).
  std::string died_text(LineEnd end, const char* alive = nullptr) {
    std::string s;
    if (pid_ > 0) {
      int st = 0;
      pid_t r = ::waitpid(pid_, &st, WNOHANG);
      for (int i = 0; r == 0 && end == LineEnd::Closed && i < 100; ++i) {
        ::usleep(10000);
        r = ::waitpid(pid_, &st, WNOHANG);
      }
      if (r == pid_) {
        pid_ = -1;
        s = WIFEXITED(st) ? "command exited with status " + std::to_string(WEXITSTATUS(st))
                          : "command killed by signal " + std::to_string(WTERMSIG(st));
        // /bin/sh (dash) runs a command it was given as a child and reports its death by signal N
        // as status 128 + N: said so, with the way to see the signal itself.
        if (WIFEXITED(st) && WEXITSTATUS(st) > 128 && WEXITSTATUS(st) <= 128 + 64)
          s += " (how a shell reports a command killed by signal " + std::to_string(WEXITSTATUS(st) - 128) +
               ": start --command with exec)";
      } else if (alive != nullptr) {
        s = alive;
      } else {
        switch (end) {
          case LineEnd::TimedOut: s = "command still running (timed out after " + seconds_text(timeout_) + " s)"; break;
          case LineEnd::TooLong: s = "the command wrote a line longer than 1 MiB"; break;
          case LineEnd::Closed: s = "the command closed its output but is still running"; break;
          case LineEnd::Line: s = "command still running"; break;
        }
      }
    }
    if (const std::string tail = log_tail(600); !tail.empty()) s += "; stderr ends: " + tail;
    return s;
  }
  std::string log_path() const { return (std::filesystem::path(work_) / "command.stderr.log").string(); }
  // The last `bytes` of the command's stderr log ("" when there is none).
  std::string log_tail(std::size_t bytes) const {
    std::ifstream f(log_path(), std::ios::binary | std::ios::ate);
    if (!f) return "";
    const std::streamoff size = f.tellg();
    if (size <= 0) return "";
    const std::streamoff from = size > std::streamoff(bytes) ? size - std::streamoff(bytes) : 0;
    std::string tail(std::size_t(size - from), '\0');
    f.seekg(from);
    f.read(tail.data(), std::streamsize(tail.size()));
    tail.resize(std::size_t(f.gcount()));
    return tail;
  }
  // graceful: the session ended well, so the command gets up to 5 s to exit on EOF; a command that
  // failed, timed out or broke the protocol is killed at once (a hung one cost 5 s more).
  void stop(bool graceful = false) {
    buf_.clear();  // (a restarted command's hello must not be read after the old one's leftovers)
    if (to_ >= 0) ::close(to_), to_ = -1;  // EOF on stdin: the command should exit
    if (from_ >= 0) ::close(from_), from_ = -1;
    if (pid_ > 0 && graceful) {
      int st = 0;
      for (int i = 0; i < 50 && ::waitpid(pid_, &st, WNOHANG) == 0; ++i) ::usleep(100000);
    }
    // The whole group, the shell's children included, whether the shell exited or not: nothing the
    // command started keeps running once the audit is done with it (ESRCH when none is left).
    if (group_ > 0) ::kill(-group_, SIGKILL), group_ = -1;
    if (pid_ > 0) {
      int st = 0;
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
    }
  }
  bool write_all(const std::string& s) {
    std::size_t done = 0;
    while (done < s.size()) {
      const ssize_t w = ::write(to_, s.data() + done, s.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += std::size_t(w);
    }
    return true;
  }
  // One '\n'-terminated line within timeout seconds (lines are bounded to 1 MiB).
  LineEnd read_line(std::string& line, double timeout) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    while (true) {
      if (const auto nl = buf_.find('\n'); nl != std::string::npos) {
        line = buf_.substr(0, nl);
        buf_.erase(0, nl + 1);
        return LineEnd::Line;
      }
      if (buf_.size() > (1u << 20)) return LineEnd::TooLong;
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count();
      if (left <= 0) return LineEnd::TimedOut;
      pollfd pfd{from_, POLLIN, 0};
      const int pr = ::poll(&pfd, 1, int(std::min<long long>(left, 1000)));
      if (pr < 0 && errno == EINTR) continue;
      if (pr <= 0) continue;
      char tmp[65536];
      const ssize_t n = ::read(from_, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return LineEnd::Closed;
      buf_.append(tmp, std::size_t(n));
    }
  }
  // Output is waiting that no job asked for (already read, or readable now). End of file is not
  // (a command that exited is reported by the job's own read).
  bool pending_output() {
    if (!buf_.empty()) return true;
    if (from_ < 0) return false;
    pollfd pfd{from_, POLLIN, 0};
    if (::poll(&pfd, 1, 0) <= 0 || (pfd.revents & POLLIN) == 0) return false;
    char tmp[4096];
    const ssize_t n = ::read(from_, tmp, sizeof tmp);
    if (n > 0) buf_.append(tmp, std::size_t(n));
    return n > 0;
  }

  ImplOutput read_outputs(const std::string& path, const CaseSpec& c) {
    auto f = st::File::open(path);
    if (!f.ok()) return ImplOutput::failed("protocol: cannot read " + path + ": " + f.error().message);
    const st::Header& h = f->header();
    // Each tensor exactly as the protocol says, dtype and shape: a transposed or flattened
    // intermediate would otherwise be read in the wrong element order (or pass when M = 1).
    auto wrong = [](const char* name, const std::string& want, const st::TensorInfo& t) {
      return ImplOutput::failed("protocol: '" + std::string(name) + "' must be " + want + ", got " +
                                std::string(st::dtype_name(t.dtype)) + " " + index_text(t.shape));
    };
    ImplOutput o;
    const st::TensorInfo* out = h.find("output");
    if (!out) return ImplOutput::failed("protocol: " + path + " has no tensor 'output'");
    // The case's own dtype (its out_dtype), named: any float dtype used to pass here, and a wrong one
    // then failed later with a message naming neither.
    std::string want_dtype(gemm::float_dtype_name(c.out_dtype));
    for (char& ch : want_dtype) ch = char(std::toupper(static_cast<unsigned char>(ch)));
    const std::string out_want = want_dtype + " [M, N] = " + index_text({c.m, c.n}) + " (the case's out_dtype and shape)";
    if (!gemm::float_dtype_of(out->dtype, o.out_dtype) || o.out_dtype != c.out_dtype || out->shape != st::Shape{c.m, c.n})
      return wrong("output", out_want, *out);
    auto ov = gemm::read_floats(*f, *out, "output");
    if (!ov.ok()) return ImplOutput::failed("protocol: " + ov.error().message);
    o.out = std::move(*ov);
    auto ints = [&](const char* name, st::Dtype dt, const char* dims, const st::Shape& shape,
                    auto& dst) -> std::optional<ImplOutput> {
      const st::TensorInfo* t = h.find(name);
      if (!t) return std::nullopt;
      if (t->dtype != dt || t->shape != shape)
        return wrong(name, std::string(st::dtype_name(dt)) + " " + dims + " = " + index_text(shape), *t);
      auto bytes = f->data(*t);
      using V = typename std::remove_reference_t<decltype(dst)>::value_type::value_type;
      std::vector<V> v(bytes.size() / sizeof(V));
      if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(V));
      dst = std::move(v);
      return std::nullopt;
    };
    if (auto e = ints("w_q", st::Dtype::I8, "[N, K]", {c.n, c.k}, o.w_q)) return *e;
    if (auto e = ints("x_q", st::Dtype::I8, "[M, K]", {c.m, c.k}, o.x_q)) return *e;
    if (auto e = ints("acc", st::Dtype::I32, "[M, N]", {c.m, c.n}, o.acc)) return *e;
    if (const st::TensorInfo* t = h.find("x_scale")) {
      if (t->dtype != st::Dtype::F32 || t->shape != st::Shape{c.m}) return wrong("x_scale", "F32 [M] = " + index_text({c.m}), *t);
      auto v = gemm::read_floats(*f, *t, "x_scale");
      if (!v.ok()) return ImplOutput::failed("protocol: " + v.error().message);
      o.x_scale = std::move(*v);
    }
    return o;
  }

  std::string cmd_, work_;
  bool keep_;
  double timeout_;
  pid_t pid_ = -1;
  pid_t group_ = -1;  // the command's process group (its shell's pid), kept after the shell is reaped
  int to_ = -1, from_ = -1;
  std::string buf_, name_, fatal_;
  std::chrono::steady_clock::time_point job_started_ = std::chrono::steady_clock::now();  // the current job's send
  gemm::ActPolicy policy_ = gemm::ActPolicy::F32;
  double setup_seconds_ = 0;
};

}  // namespace

Result<std::unique_ptr<Implementation>> make_command(const std::string& command, const std::string& work_dir,
                                                     bool keep_outputs, double case_timeout_s) {
  if (command.empty()) return make_error(ErrorKind::AuditImplementation, {" (--command is empty)"});
  std::error_code ec;
  if (std::filesystem::create_directories(work_dir, ec); ec)
    return make_error(ErrorKind::IoWriteFailed, {work_dir, ec.message()});
  auto impl = std::make_unique<CommandImpl>(command, work_dir, keep_outputs, case_timeout_s);
  impl->first_start();
  return std::unique_ptr<Implementation>(std::move(impl));
}

}  // namespace w4a8::audit
