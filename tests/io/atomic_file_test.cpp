// AtomicFile: the previous file survives every failure byte for byte and no temporary remains.
// Failures are real: a file-size limit (setrlimit RLIMIT_FSIZE, as `ulimit -f`), a fatal signal in
// the middle of a write, a full device (/dev/full), a missing directory.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <span>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/atomic_file.hpp"
#include "safetensors/reader.hpp"
#include "io_test_util.hpp"

namespace w4a8::io {
namespace {

using test::as_bytes;
using test::slurp;
using test::spit;
using test::TempDir;

// Whether `dir`'s filesystem makes unnamed temporaries (O_TMPFILE) and /proc can name them: then
// AtomicFile's temporary has no name until published.
bool unnamed_temporaries(const TempDir& d) {
#ifdef O_TMPFILE
  if (::access("/proc/self/fd", X_OK) != 0) return false;
  const int fd = ::open(d.path.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::close(fd);
  return true;
#else
  (void)d;
  return false;
#endif
}

TEST(AtomicFile, CreatesAndReplacesWithNoTemporaryLeft) {
  TempDir d("create");
  const std::string p = d / "out.bin";
  ASSERT_TRUE(write_file_atomic(p, as_bytes("first")).ok());
  EXPECT_EQ(slurp(p), "first");
  ASSERT_TRUE(write_file_atomic(p, as_bytes("second, longer")).ok());
  EXPECT_EQ(slurp(p), "second, longer");
  EXPECT_EQ(d.names(), std::vector<std::string>{"out.bin"});
}

TEST(AtomicFile, NewFilesFollowTheUmaskAndReplacedFilesKeepTheirMode) {
  TempDir d("mode");
  const std::string p = d / "f";
  const mode_t old = ::umask(022);
  ASSERT_TRUE(write_file_atomic(p, as_bytes("x")).ok());
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
  ASSERT_TRUE(write_file_atomic(p, as_bytes("y")).ok());
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(AtomicFile, DroppedWithoutPublishLeavesTheOldFile) {
  TempDir d("drop");
  const std::string p = d / "keep";
  spit(p, "old bytes");
  {
    auto f = AtomicFile::create(p);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE(f->write(as_bytes("new")).ok());
    ASSERT_TRUE(f->finish().ok());
    // The temporary is unnamed where the filesystem allows, else beside the target.
    EXPECT_EQ(d.names().size(), unnamed_temporaries(d) ? 1u : 2u);
  }
  EXPECT_EQ(slurp(p), "old bytes");
  EXPECT_EQ(d.names(), std::vector<std::string>{"keep"});
}

TEST(AtomicFile, FileSizeLimitFailsCleanly) {
  TempDir d("fsize");
  const std::string p = d / "big";
  const std::string old(3000, 'o');
  spit(p, old);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_output_cleanup();  // SIGXFSZ ignored: the write returns EFBIG
    struct rlimit rl {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    const std::string big(100000, 'n');
    const Status s = write_file_atomic(p, as_bytes(big));
    const bool named = !s.ok() && s.error().kind == ErrorKind::IoWriteFailed && s.error().message.find(p) != std::string::npos &&
                       s.error().message.find("File too large") != std::string::npos;
    ::_exit(named ? 0 : 1);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "child died of signal " << WTERMSIG(st);
  EXPECT_EQ(WEXITSTATUS(st), 0) << "expected IoWriteFailed naming the file and EFBIG";
  EXPECT_EQ(slurp(p), old);
  EXPECT_EQ(d.names(), std::vector<std::string>{"big"});
}

// A child process that starts writing `p` (and finishes the temporary when `finished`), then raises
// `sig`. @return its wait status.
int status_after_signal_mid_write(const std::string& p, int sig, bool finished) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};  // SIGQUIT and SIGXCPU would dump core
    ::setrlimit(RLIMIT_CORE, &no_core);
    install_output_cleanup();
    auto f = AtomicFile::create(p);
    if (!f.ok()) ::_exit(3);
    (void)f->write(as_bytes(std::string(5000, 'p')));
    if (finished && !f->finish().ok()) ::_exit(4);
    ::raise(sig);
    ::_exit(5);  // not reached: the signal ends the process
  }
  int st = 0;
  if (pid < 0 || ::waitpid(pid, &st, 0) != pid) return -1;
  return st;
}

TEST(AtomicFile, FatalSignalMidWriteRemovesTheTemporary) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGALRM, SIGXCPU, SIGVTALRM, SIGPROF, SIGUSR1, SIGUSR2}) {
    TempDir d("signal");
    const std::string p = d / "model.safetensors";
    spit(p, "the user's file");
    const int st = status_after_signal_mid_write(p, sig, false);
    ASSERT_NE(st, -1) << "fork/waitpid failed";
    ASSERT_TRUE(WIFSIGNALED(st)) << "the child must die of the signal, as without the handler";
    EXPECT_EQ(WTERMSIG(st), sig);
    EXPECT_EQ(slurp(p), "the user's file");
    EXPECT_EQ(d.names(), std::vector<std::string>{"model.safetensors"});
  }
}

// An output directory the run made goes with its temporaries when a signal ends the run (a whole-model
// quantize interrupted with Ctrl-C left `--out DIR` behind, empty); one that holds anything else, or
// that existed before, stays.
TEST(AtomicFile, FatalSignalRemovesTheEmptyOutputDirectoryItMade) {
  enum class Inside { Temporary, PublishedFile, ExistedBefore };
  for (const Inside inside : {Inside::Temporary, Inside::PublishedFile, Inside::ExistedBefore}) {
    TempDir d("madedir");
    const std::string out = d / "out";
    if (inside == Inside::ExistedBefore) {
      ASSERT_EQ(::mkdir(out.c_str(), 0777), 0);
    }
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      install_output_cleanup();
      bool made = false;
      if (make_output_dir(out, made) != 0 || made != (inside != Inside::ExistedBefore)) ::_exit(3);
      if (inside == Inside::PublishedFile && !write_file_atomic(out + "/done.safetensors", as_bytes(std::string("x"))).ok())
        ::_exit(4);
      auto f = AtomicFile::create(out + "/model.safetensors");
      if (!f.ok()) ::_exit(5);
      (void)f->write(as_bytes(std::string(5000, 'p')));
      ::raise(SIGTERM);
      ::_exit(6);
    }
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
    struct stat sb {};
    const bool exists = ::stat(out.c_str(), &sb) == 0;
    if (inside == Inside::Temporary) {
      EXPECT_FALSE(exists) << "the directory the run made is left behind";
    } else {
      ASSERT_TRUE(exists);
      std::vector<std::string> left;
      for (const auto& e : std::filesystem::directory_iterator(out)) left.push_back(e.path().filename().string());
      const std::vector<std::string> expect =
          inside == Inside::PublishedFile ? std::vector<std::string>{"done.safetensors"} : std::vector<std::string>{};
      EXPECT_EQ(left, expect) << "the temporary is removed, anything else stays";
    }
  }
}

// A mapped input that another process truncates while it is read (a checkpoint still being copied):
// the read past its new end raises SIGBUS, which ends the run as an I/O error naming the file
// (stderr, exit status 2) after removing the run's temporaries and the directory it made, instead of
// dying of "Bus error". A SIGBUS sent by kill() (no mapped input there) still kills.
TEST(AtomicFile, ReadingATruncatedMappedInputIsAnIoErrorNamingIt) {
  struct sigaction current {};
  ASSERT_EQ(::sigaction(SIGBUS, nullptr, &current), 0);
  if (current.sa_handler != SIG_DFL) GTEST_SKIP() << "a sanitizer's runtime handles SIGBUS in this build (it is kept)";
  for (const auto& [truncate, json] : {std::pair{true, false}, std::pair{true, true}, std::pair{false, false}}) {
    TempDir d("sigbus");
    const std::string in = d / "in.safetensors";
    const std::string header = R"({"t":{"dtype":"U8","shape":[16384],"data_offsets":[0,16384]}})";
    std::string file(8, '\0');
    file[0] = static_cast<char>(header.size());
    spit(in, file + header + std::string(16384, 'd'));
    const std::string err = d / "stderr";
    const std::string std_out = d / "stdout";
    const std::string out = d / "out";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const int ofd = ::open(std_out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd < 0 || ofd < 0 || ::dup2(fd, STDERR_FILENO) < 0 || ::dup2(ofd, STDOUT_FILENO) < 0) ::_exit(3);
      install_output_cleanup();
      set_read_fault_json(json);
      bool made = false;
      if (make_output_dir(out, made) != 0 || !made) ::_exit(4);
      auto o = AtomicFile::create(out + "/model.safetensors");
      if (!o.ok() || !o->write(as_bytes(std::string(100, 'o'))).ok()) ::_exit(5);
      auto f = st::File::open(in);
      if (!f.ok()) ::_exit(6);
      const auto bytes = f->data(f->header().tensors.at(0));
      if (!truncate) ::raise(SIGBUS);
      if (::truncate(in.c_str(), 8 + std::int64_t(header.size())) != 0) ::_exit(7);
      volatile std::uint8_t sink = 0;
      for (std::size_t i = 0; i < bytes.size(); i += 4096) sink = sink + bytes[bytes.size() - 1 - i];
      ::_exit(8);  // every page read: the truncation did not reach the mapping
    }
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    if (truncate) {
      ASSERT_TRUE(WIFEXITED(st)) << "killed by signal " << WTERMSIG(st);
      EXPECT_EQ(WEXITSTATUS(st), 2);
      const std::string why = ": the file shrank while it was being read (another process truncated or rewrote it)";
      const std::string message = "cannot read " + in + why;  // NOLINT(performance-inefficient-string-concatenation)
      EXPECT_EQ(slurp(err), "w4a8check: " + message + "\n  [io.read_failed]\n");
      // With --json, stdout holds the JSON error object as the reporter writes it.
      std::string want_json;
      if (json) want_json.append(R"({"ok": false, "error": {"type": "OSError", "message": ")").append(message)
                    .append(R"(", "code": "io.read_failed"}})" "\n");
      EXPECT_EQ(slurp(std_out), want_json);
    } else {
      ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
      EXPECT_EQ(WTERMSIG(st), SIGBUS);
    }
    struct stat sb {};
    EXPECT_NE(::stat(out.c_str(), &sb), 0) << "the directory the run made (and its temporary) is left behind";
  }
}

// After forget_output_dir() (the run finished) a signal leaves the directory alone.
TEST(AtomicFile, AForgottenOutputDirectoryStays) {
  TempDir d("forgot");
  const std::string out = d / "out";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    install_output_cleanup();
    bool made = false;
    if (make_output_dir(out, made) != 0 || !made) ::_exit(3);
    forget_output_dir();
    ::raise(SIGTERM);
    ::_exit(6);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(st));
  struct stat sb {};
  EXPECT_EQ(::stat(out.c_str(), &sb), 0);
}

// SIGKILL cannot be caught: only a temporary without a name leaves nothing behind. Killed while
// writing and after finish() (a whole-model quantize finishes every shard before publishing).
TEST(AtomicFile, SigkillLeavesNoTemporaryWhereTheFilesystemAllows) {
  {
    TempDir probe("probe");
    if (!unnamed_temporaries(probe))
      GTEST_SKIP() << "no O_TMPFILE on " << probe.path << " (or no /proc): a named temporary survives SIGKILL there";
  }
  for (const bool finished : {false, true}) {
    TempDir d("kill");
    const std::string p = d / "model.safetensors";
    spit(p, "the user's file");
    const int st = status_after_signal_mid_write(p, SIGKILL, finished);
    ASSERT_NE(st, -1) << "fork/waitpid failed";
    ASSERT_TRUE(WIFSIGNALED(st)) << "exit " << WEXITSTATUS(st);
    EXPECT_EQ(WTERMSIG(st), SIGKILL);
    EXPECT_EQ(slurp(p), "the user's file");
    EXPECT_EQ(d.names(), std::vector<std::string>{"model.safetensors"}) << (finished ? "after finish()" : "mid-write");
  }
}

// More finished files than stay open unnamed (64): the rest are named and closed; all publish, and
// dropped unpublished all vanish.
TEST(AtomicFile, ManyFinishedFilesPublishOrVanishTogether) {
  TempDir d("many");
  constexpr int kFiles = 150;
  std::vector<std::string> names;
  names.reserve(kFiles);
  for (int i = 0; i < kFiles; ++i) names.push_back("shard-" + std::to_string(1000 + i));
  {
    std::vector<AtomicFile> files;
    files.reserve(kFiles);
    for (int i = 0; i < kFiles; ++i) {
      auto f = AtomicFile::create(d / names[std::size_t(i)]);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE(f->write(as_bytes("v1 " + std::to_string(i))).ok());
      ASSERT_TRUE(f->finish().ok());
      files.push_back(std::move(*f));
    }
    for (AtomicFile& f : files) ASSERT_TRUE(f.publish().ok());
  }
  EXPECT_EQ(d.names(), names);
  for (int i = 0; i < kFiles; ++i) EXPECT_EQ(slurp(d / names[std::size_t(i)]), "v1 " + std::to_string(i));
  {
    std::vector<AtomicFile> files;
    files.reserve(kFiles);
    for (int i = 0; i < kFiles; ++i) {
      auto f = AtomicFile::create(d / names[std::size_t(i)]);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE(f->write(as_bytes("v2")).ok());
      ASSERT_TRUE(f->finish().ok());
      files.push_back(std::move(*f));
    }
  }  // dropped: nothing published
  EXPECT_EQ(d.names(), names);
  for (int i = 0; i < kFiles; ++i) EXPECT_EQ(slurp(d / names[std::size_t(i)]), "v1 " + std::to_string(i));
}

// Target names up to NAME_MAX (255 bytes here): the temporary's name, which is longer than the
// target's, is cut to fit (never inside a UTF-8 character). One byte more is refused at create().
TEST(AtomicFile, NamesUpToNameMaxAreWritten) {
  TempDir d("namemax");
  std::vector<std::string> want;
  for (const std::size_t len : {std::size_t(240), std::size_t(250), std::size_t(255)}) {
    const std::string name = std::string(len - 12, 'n') + ".safetensors";
    ASSERT_TRUE(write_file_atomic(d / name, as_bytes("first")).ok()) << len;
    ASSERT_TRUE(write_file_atomic(d / name, as_bytes("second")).ok()) << len;  // replacing: same path
    EXPECT_EQ(slurp(d / name), "second");
    want.push_back(name);
  }
  std::string utf8;  // 2-byte characters: a cut at an odd byte would split one
  while (utf8.size() < 242) utf8 += "\xc3\xa9";
  utf8 += ".safetensors";  // 254 bytes
  ASSERT_TRUE(write_file_atomic(d / utf8, as_bytes("e")).ok());
  want.push_back(utf8);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(d.names(), want);
  const std::string too_long = d / std::string(256, 'x');
  const Status s = write_file_atomic(too_long, as_bytes("x"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().kind, ErrorKind::IoWriteFailed);
  EXPECT_NE(s.error().message.find("File name too long"), std::string::npos) << s.error().message;
  EXPECT_EQ(d.names(), want);
}

// Under a low open-file limit (`ulimit -n 16`) only a quarter of what is left beside stdin/stdout/
// stderr stays open unnamed: the other finished files are named `.NAME.w4a8tmp-*` (cut to fit 255
// bytes for 250-byte targets) and closed, so many outputs never run out of descriptors.
TEST(AtomicFile, LowOpenFileLimitNamesFinishedTemporariesThatFit) {
  TempDir d("nofile");
  constexpr int kFiles = 40;
  std::vector<std::string> names;
  names.reserve(kFiles);
  for (int i = 0; i < kFiles; ++i) names.push_back(std::string(238, 'm') + "-" + std::to_string(10 + i) + ".safetensors");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit nofile{16, 16};
    if (::setrlimit(RLIMIT_NOFILE, &nofile) != 0) ::_exit(2);
    std::vector<AtomicFile> files;
    files.reserve(kFiles);
    for (int i = 0; i < kFiles; ++i) {
      auto f = AtomicFile::create(d / names[std::size_t(i)]);
      if (!f.ok() || !f->write(as_bytes("v" + std::to_string(i))).ok() || !f->finish().ok()) ::_exit(10 + i);
      files.push_back(std::move(*f));
    }
    // Every temporary that has a name is recognizable and fits (unnamed ones have none).
    std::size_t named = 0;
    for (const std::string& n : d.names()) {
      if (n.size() > 255 || n.rfind(".mmm", 0) != 0 || n.find(".w4a8tmp-") == std::string::npos) ::_exit(3);
      ++named;
    }
    if (named < kFiles - 3) ::_exit(5);  // at most (16 - 3) / 4 = 3 stay open unnamed
    for (AtomicFile& f : files)
      if (!f.publish().ok()) ::_exit(4);
    ::_exit(0);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "child died of signal " << WTERMSIG(st);
  ASSERT_EQ(WEXITSTATUS(st), 0) << "2: setrlimit, 3: a temporary's name, 4: publish, 5: too few named, 10+i: file i";
  std::sort(names.begin(), names.end());
  EXPECT_EQ(d.names(), names);
  for (int i = 0; i < kFiles; ++i)
    EXPECT_EQ(slurp(d / (std::string(238, 'm') + "-" + std::to_string(10 + i) + ".safetensors")), "v" + std::to_string(i));
}

TEST(AtomicFile, FollowsASymlinkAndKeepsIt) {
  TempDir d("symlink");
  const std::string target = d / "real.bin", link = d / "link.bin";
  spit(target, "old");
  ASSERT_EQ(::symlink("real.bin", link.c_str()), 0);
  ASSERT_TRUE(write_file_atomic(link, as_bytes("new")).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(target), "new");
  EXPECT_EQ(d.names(), (std::vector<std::string>{"link.bin", "real.bin"}));
}

// A dangling link is written through, as `cp` or a shell's `>` would: its target is created and the
// link kept; a chain of links is followed to its end.
TEST(AtomicFile, ADanglingSymlinkCreatesItsTarget) {
  TempDir d("dangling");
  ASSERT_EQ(::mkdir((d / "sub").c_str(), 0755), 0);
  const std::string link = d / "link.bin", hop = d / "sub/hop.bin";
  ASSERT_EQ(::symlink("sub/hop.bin", link.c_str()), 0);
  ASSERT_EQ(::symlink("../made.bin", hop.c_str()), 0);  // relative to the directory of the link
  ASSERT_TRUE(write_file_atomic(link, as_bytes("new")).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  ASSERT_EQ(::lstat(hop.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(slurp(d / "made.bin"), "new");
  EXPECT_EQ(slurp(link), "new");
  EXPECT_EQ(d.names(), (std::vector<std::string>{"link.bin", "made.bin", "sub"}));
}

// A link into a directory that does not exist, or a cycle of links: an error naming the output,
// nothing created.
TEST(AtomicFile, ADanglingSymlinkIntoNowhereOrALoopIsAnError) {
  TempDir d("dangling-bad");
  const std::string nowhere = d / "nowhere.bin", a = d / "a.bin", b = d / "b.bin";
  ASSERT_EQ(::symlink("missing/x.bin", nowhere.c_str()), 0);
  ASSERT_EQ(::symlink("b.bin", a.c_str()), 0);
  ASSERT_EQ(::symlink("a.bin", b.c_str()), 0);
  const Status n = write_file_atomic(nowhere, as_bytes("x"));
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message, "cannot write " + nowhere + ": a symbolic link to " + d / "missing/x.bin" +
                                   ", whose directory cannot be opened: No such file or directory");
  const Status l = write_file_atomic(a, as_bytes("x"));
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message.find("Too many levels of symbolic links"), std::string::npos) << l.error().message;
  EXPECT_EQ(d.names(), (std::vector<std::string>{"a.bin", "b.bin", "nowhere.bin"}));
}

TEST(AtomicFile, CharacterDeviceIsWrittenInPlace) {
  EXPECT_TRUE(write_file_atomic("/dev/null", as_bytes("discarded")).ok());
  struct stat st {};
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));  // still the device, not replaced by a file
  const Status full = write_file_atomic("/dev/full", as_bytes("x"));
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find("No space left on device"), std::string::npos) << full.error().message;
}

TEST(AtomicFile, RefusesDirectoriesAndMissingDirectories) {
  TempDir d("dirs");
  const Status a = write_file_atomic(d.path.string(), as_bytes("x"));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().kind, ErrorKind::IoWriteFailed);
  const Status b = write_file_atomic(d / "no/such/dir/f", as_bytes("x"));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find(d / "no/such/dir/f"), std::string::npos);
}

}  // namespace
}  // namespace w4a8::io
