#include "io/atomic_file.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fatal_report.hpp"
#include "io/read_file.hpp"
#include "safetensors/reader.hpp"

namespace w4a8::io {
namespace {

// Every signal whose default action ends the process and that a user or a limit sends in practice:
// Ctrl-C/kill/hang-up/quit/broken pipe, `timeout`'s and alarm()'s SIGALRM, `ulimit -t`'s SIGXCPU,
// SIGVTALRM/SIGPROF timers and the user signals (SIGXFSZ is ignored instead: the write fails).
constexpr int kCleanupSignals[] = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGPIPE,
                                   SIGALRM, SIGXCPU, SIGVTALRM, SIGPROF, SIGUSR1, SIGUSR2};

// Temporaries alive right now, for the signal handler: malloc'd paths in lock-free slots (a handler
// may only unlink, so nothing here allocates or locks on its path).
constexpr int kSlots = 256;
std::atomic<char*> g_live[kSlots];

int register_temp(const std::string& path) {
  char* copy = ::strdup(path.c_str());
  if (!copy) return -1;
  for (int i = 0; i < kSlots; ++i) {
    char* expected = nullptr;
    if (g_live[i].compare_exchange_strong(expected, copy)) return i;
  }
  std::free(copy);  // more than kSlots live outputs: still removed on normal failure paths
  return -1;
}

void unregister_temp(int slot) {
  if (slot < 0) return;
  std::free(g_live[slot].exchange(nullptr));
}

// The output directories this run made (make_output_dir), outermost first, for the signal handler:
// malloc'd, or null.
constexpr int kMadeDirs = 4;
std::atomic<char*> g_made_dirs[kMadeDirs];

void cleanup_outputs() {
  for (auto& slot : g_live)
    if (char* p = slot.load()) ::unlink(p);
  for (int i = kMadeDirs; i-- > 0;)  // after their temporaries, innermost first; only if nothing else is there
    if (char* d = g_made_dirs[i].load()) ::rmdir(d);
}

extern "C" void cleanup_on_signal(int sig) {
  cleanup_outputs();
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

// The read-fault report, rendered when the handler is installed; the hole is the file's path.
FatalReport g_fault_report;
std::atomic<bool> g_fault_json{false};  // set_read_fault_json

// SIGBUS from a read of a mapped input past its end: another process truncated the file while it
// was read (a checkpoint still being copied or rewritten in place). Ends the run like an I/O error
// naming the file, exit status 2, after the cleanup above (with --json, stdout gets the JSON error).
// Any other SIGBUS (no mapped input there) keeps its default action.
extern "C" void read_fault(int sig, siginfo_t* info, void* /*context*/) {
  static std::atomic<bool> reporting{false};
  if (reporting.exchange(true)) {  // another thread faulted too: the first one reports and exits
    for (;;) ::pause();
  }
  // (si_code > 0: the kernel's fault, not a kill(): only then is si_addr an address)
  const char* path = info != nullptr && info->si_code > 0 ? st::mapped_file_at(info->si_addr) : nullptr;
  cleanup_outputs();
  if (path == nullptr) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  if (g_fault_json.load()) g_fault_report.write_json(STDOUT_FILENO, path);
  g_fault_report.write_text(STDERR_FILENO, path);
  ::_exit(2);
}

Error write_error(const std::string& path, int err) { return make_error(ErrorKind::IoWriteFailed, {path, std::strerror(err)}); }
Error write_error(const std::string& path, const char* why) { return make_error(ErrorKind::IoWriteFailed, {path, why}); }

mode_t process_umask() {
  static const mode_t m = [] {
    const mode_t u = ::umask(0);
    ::umask(u);
    return u;
  }();
  return m;
}

std::string dir_of(const std::string& p) {
  const auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string base_of(const std::string& p) {
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

// Where writing through the symbolic link `path` lands, as `cp` or a shell's `>` would write: the
// file it resolves to, or, for a link to a name that does not exist yet (a dangling link), that name
// in its existing directory, created there while the link is kept.
Result<std::string> link_destination(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return std::string(buf);
  if (errno != ENOENT) return write_error(path, errno);  // ELOOP: a cycle of links
  std::string at = path;
  for (int hops = 0; hops < 40; ++hops) {  // the kernel's own limit on links in a path
    const ssize_t n = ::readlink(at.c_str(), buf, sizeof buf - 1);
    if (n < 0) {
      if (errno != EINVAL) return write_error(path, errno);
      break;  // not a link: a name inside a directory that does not resolve
    }
    const std::string to(buf, std::size_t(n));
    if (to.empty() || to[0] == '/') {
      at = to;
    } else {
      at = dir_of(at);
      at += '/';
      at += to;
    }
    struct stat st {};
    if (::lstat(at.c_str(), &st) != 0) {
      if (errno != ENOENT) return write_error(path, errno);
      // The chain ends at a name that does not exist: its directory must.
      if (!::realpath(dir_of(at).c_str(), buf))
        return write_error(path, ("a symbolic link to " + at + ", whose directory cannot be opened: " +
                                  std::strerror(errno)).c_str());
      const std::string base = base_of(at);
      if (base.empty() || base == "." || base == "..") return write_error(path, EISDIR);
      return std::string(buf) + (std::string_view(buf) == "/" ? "" : "/") + base;
    }
    if (!S_ISLNK(st.st_mode)) break;
  }
  return write_error(path, "a symbolic link whose target cannot be resolved");
}

// The longest file name `dir` takes (NAME_MAX; 255 where the filesystem does not say).
long name_max_of(const std::string& dir) {
  const long n = ::pathconf(dir.c_str(), _PC_NAME_MAX);
  return n > 0 ? n : 255;
}

constexpr std::string_view kTempTag = ".w4a8tmp-";

// `dir/.NAME.w4a8tmp-SUFFIX`, with NAME cut short (never inside a UTF-8 character) so the base name
// fits `name_max`: a target whose own name is near the limit must still get a temporary. The
// ".w4a8tmp-" tag and the suffix are always whole, so the name is still recognizable and unique.
std::string temp_name(const std::string& real, long name_max, std::string_view suffix) {
  std::string base = base_of(real);
  const long fixed = 1 + long(kTempTag.size()) + long(suffix.size());  // the leading dot, tag, suffix
  const std::size_t room = name_max > fixed ? std::size_t(name_max - fixed) : 0;
  if (base.size() > room) {
    std::size_t cut = room;
    while (cut > 0 && (static_cast<unsigned char>(base[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
    base.resize(cut);
  }
  std::string name = dir_of(real);
  name.append("/.").append(base).append(kTempTag).append(suffix);
  return name;
}

// Finished unnamed temporaries kept open until published (a whole-model quantize finishes every shard
// before publishing any); past the cap, a finished one is named and closed instead.
std::atomic<int> g_open_unnamed{0};

// The cap: a quarter of the soft open-file limit left beside stdin/stdout/stderr, at most 64, read at
// each use (the limit may change). Held descriptors then never starve the inputs, the next output or
// the directory fsync: any `ulimit -n` that lets a one-file run work lets a sharded one work (at 0,
// every finished temporary is named and closed).
int max_open_unnamed() {
  constexpr rlim_t kMost = 64;
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return int(kMost);
  const rlim_t quarter = rl.rlim_cur > 3 ? (rl.rlim_cur - 3) / 4 : 0;
  return int(std::min(quarter, kMost));
}

// Blocks the cleanup signals for a scope: nothing may interrupt creating a named temporary before
// it is registered.
class CleanupSignalsBlocked {
 public:
  CleanupSignalsBlocked() {
    sigset_t block;
    sigemptyset(&block);
    for (int sig : kCleanupSignals) sigaddset(&block, sig);
    ::pthread_sigmask(SIG_BLOCK, &block, &old_);
  }
  ~CleanupSignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  CleanupSignalsBlocked(const CleanupSignalsBlocked&) = delete;
  CleanupSignalsBlocked& operator=(const CleanupSignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

}  // namespace

void install_output_cleanup() {
  ::signal(SIGXFSZ, SIG_IGN);
  for (int sig : kCleanupSignals) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep an inherited SIG_IGN
    struct sigaction sa {};
    sa.sa_handler = cleanup_on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
  struct sigaction old {};
  if (::sigaction(SIGBUS, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {  // (a sanitizer's stays)
    g_fault_report.render(ErrorKind::IoReadFailed,
                          {FatalReport::kHole, "the file shrank while it was being read (another process truncated or rewrote it)"});
    struct sigaction sa {};
    sa.sa_sigaction = read_fault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, nullptr);
  }
  (void)process_umask();  // read once now, while the process has one thread
}

int make_output_dir(const std::string& path, bool& made) {
  made = false;
  const CleanupSignalsBlocked blocked;  // made and registered, or neither, when a signal comes
  if (::mkdir(path.c_str(), 0777) != 0) return errno == EEXIST ? 0 : errno;
  made = true;
  for (auto& slot : g_made_dirs) {
    if (slot.load() != nullptr) continue;
    slot.store(::strdup(path.c_str()));
    break;
  }
  return 0;
}

void set_read_fault_json(bool json) { g_fault_json.store(json); }
bool fatal_reports_json() noexcept { return g_fault_json.load(); }

void remove_live_outputs() { cleanup_outputs(); }

void forget_output_dir() {
  for (auto& slot : g_made_dirs) std::free(slot.exchange(nullptr));
}

struct AtomicFile::State {
  std::string target;     // as given (messages)
  std::string real;       // what gets replaced (symlinks followed)
  std::string tmp;        // the temporary's name beside `real`; empty while it has none
  int fd = -1;
  int slot = -1;
  bool direct = false;    // a character device, written in place
  bool unnamed = false;   // an O_TMPFILE temporary: it has no name (a SIGKILL leaves nothing) until linked
  bool counted = false;   // finished and open: one of g_open_unnamed
  bool finished = false, published = false;
  mode_t mode = 0644;
  long name_max = 255;    // of real's directory: the temporary's name must fit it
  std::uint64_t written = 0;

  ~State() {
    if (fd >= 0) ::close(fd);  // an unnamed temporary vanishes with its last descriptor
    if (counted) g_open_unnamed.fetch_sub(1);
    if (!direct && !published && !tmp.empty()) ::unlink(tmp.c_str());
    unregister_temp(slot);
  }

  // Gives an unnamed temporary a (registered) name beside `real`. @return 0 or an errno.
  int name_temporary() {
    const std::string link = "/proc/self/fd/" + std::to_string(fd);
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = temp_name(real, name_max, std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)));
      const CleanupSignalsBlocked blocked;
      // Through /proc (any user), else by descriptor (needs CAP_DAC_READ_SEARCH).
      int rc = ::linkat(AT_FDCWD, link.c_str(), AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW);
      if (rc != 0 && errno != EEXIST) rc = ::linkat(fd, "", AT_FDCWD, name.c_str(), AT_EMPTY_PATH);
      if (rc == 0) {
        tmp = std::move(name);
        slot = register_temp(tmp);
        return 0;
      }
      if (errno != EEXIST) return errno;
    }
    return EEXIST;
  }
};

AtomicFile::AtomicFile(std::unique_ptr<State> s) : s_(std::move(s)) {}
AtomicFile::AtomicFile(AtomicFile&&) noexcept = default;
AtomicFile& AtomicFile::operator=(AtomicFile&&) noexcept = default;
AtomicFile::~AtomicFile() = default;

const std::string& AtomicFile::path() const { return s_->target; }
std::uint64_t AtomicFile::bytes_written() const { return s_->written; }

// Judged where every link leads, /proc's magic fd links (/dev/stdout -> /proc/self/fd/1) included,
// which the name-based resolution in create() cannot follow to a pipe: a FIFO or socket has no name
// to rename over; and the file this process's standard output or error is writing, as after
// `--out /dev/stdout >> run.log`: the new file would replace the log, dropping what was in it and
// what the command then reports there.
Status check_output_target(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Ok{};  // nothing there yet (or unreadable: create() says)
  if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode))
    return write_error(path, (std::string(file_type_name(st.st_mode)) + ", not a regular file").c_str());
  if (!S_ISREG(st.st_mode)) return Ok{};
  for (const int fd : {STDOUT_FILENO, STDERR_FILENO}) {
    struct stat stream {};
    if (::fstat(fd, &stream) != 0 || stream.st_dev != st.st_dev || stream.st_ino != st.st_ino) continue;
    const std::string why = std::string("the file this command's standard ") + (fd == STDOUT_FILENO ? "output" : "error") +
                            " is writing (replacing it would lose what was written there); name another file";
    return write_error(path, why.c_str());
  }
  return Ok{};
}

Result<AtomicFile> AtomicFile::create(const std::string& path) {
  if (path.empty()) return write_error(path, "empty path");
  if (auto t = check_output_target(path); !t.ok()) return std::move(t).error();
  auto s = std::make_unique<State>();
  s->target = path;
  s->real = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    auto real = link_destination(path);
    if (!real.ok()) return std::move(real).error();
    s->real = std::move(real).value();
  }
  struct stat st {};
  if (::stat(s->real.c_str(), &st) == 0) {
    if (S_ISCHR(st.st_mode)) {  // /dev/null and friends: nothing to replace
      s->direct = true;
      do {
        s->fd = ::open(s->real.c_str(), O_WRONLY | O_CLOEXEC | O_NONBLOCK);
      } while (s->fd < 0 && errno == EINTR);
      if (s->fd < 0) return write_error(path, errno);
      return AtomicFile(std::move(s));
    }
    if (S_ISDIR(st.st_mode)) return write_error(path, EISDIR);
    if (!S_ISREG(st.st_mode)) return write_error(path, "not a regular file");
    s->mode = st.st_mode & 07777;
  } else if (errno != ENOENT) {
    return write_error(path, errno);
  } else {
    s->mode = 0666 & ~process_umask();
  }
  s->name_max = name_max_of(dir_of(s->real));
  // A name the directory cannot hold fails now, not at the rename after every byte is written.
  if (base_of(s->real).size() > std::size_t(s->name_max)) return write_error(path, ENAMETOOLONG);
#ifdef O_TMPFILE
  // Unnamed until published, so even SIGKILL or a crash leaves nothing behind. Linking it needs
  // /proc; filesystems without O_TMPFILE refuse it: then a named temporary as below.
  if (::access("/proc/self/fd", X_OK) == 0) {
    do {
      s->fd = ::open(dir_of(s->real).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    } while (s->fd < 0 && errno == EINTR);
    if (s->fd >= 0) {
      s->unnamed = true;
      return AtomicFile(std::move(s));
    }
  }
#endif
  std::string pattern = temp_name(s->real, s->name_max, "XXXXXX");
  int err = 0;
  {
    const CleanupSignalsBlocked blocked;  // no cleanup signal between creating and registering it
    s->fd = ::mkostemp(pattern.data(), O_CLOEXEC);
    err = errno;
    if (s->fd >= 0) {
      s->tmp = pattern;
      s->slot = register_temp(s->tmp);
    }
  }
  if (s->fd < 0) return write_error(path, err);
  return AtomicFile(std::move(s));
}

Status AtomicFile::write(std::span<const std::uint8_t> bytes) {
  State& s = *s_;
  if (s.fd < 0 || s.finished) return write_error(s.target, "write after finish");
  const std::uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(s.fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return write_error(s.target, errno);
    }
    p += n;
    left -= std::size_t(n);
    s.written += std::uint64_t(n);
  }
  return Ok{};
}

Status AtomicFile::finish() {
  State& s = *s_;
  if (s.finished) return Ok{};
  if (!s.direct) {
    if (::fchmod(s.fd, s.mode) != 0) return write_error(s.target, errno);
    if (::fsync(s.fd) != 0) return write_error(s.target, errno);
  }
  if (s.unnamed && s.tmp.empty()) {
    if (g_open_unnamed.fetch_add(1) < max_open_unnamed()) {  // stays open and unnamed until publish()
      s.counted = true;
      s.finished = true;
      return Ok{};
    }
    g_open_unnamed.fetch_sub(1);
    if (const int err = s.name_temporary(); err != 0) return write_error(s.target, err);
  }
  const int fd = s.fd;
  s.fd = -1;
  if (::close(fd) != 0 && errno != EINTR) return write_error(s.target, errno);
  s.finished = true;
  return Ok{};
}

Status AtomicFile::publish() {
  State& s = *s_;
  if (!s.finished) return write_error(s.target, "publish before finish");
  if (s.direct || s.published) return Ok{};
  if (s.tmp.empty()) {  // unnamed and open: named only for the rename
    if (const int err = s.name_temporary(); err != 0) return write_error(s.target, err);
  }
  if (::rename(s.tmp.c_str(), s.real.c_str()) != 0) return write_error(s.target, errno);
  s.published = true;
  unregister_temp(s.slot);
  s.slot = -1;
  if (s.fd >= 0) {  // the data was fsynced by finish(); a close error cannot lose it now
    ::close(s.fd);
    s.fd = -1;
  }
  if (s.counted) {
    g_open_unnamed.fetch_sub(1);
    s.counted = false;
  }
  // The rename itself must survive a crash: fsync the directory entry.
  const std::string dir = dir_of(s.real);
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int rc = ::fsync(dfd);
    const int err = errno;
    ::close(dfd);
    if (rc != 0 && err != EINVAL) return write_error(s.target, err);
  }
  return Ok{};
}

Status AtomicFile::commit() {
  W4A8_TRY(finish());
  return publish();
}

Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes) {
  auto f = AtomicFile::create(path);
  W4A8_TRY(f);
  W4A8_TRY(f->write(bytes));
  return f->commit();
}

}  // namespace w4a8::io
