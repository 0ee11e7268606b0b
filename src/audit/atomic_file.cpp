#include "audit/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace w4a8::audit {

namespace {
Error werr(const std::string& path, int e) { return make_error(ErrorKind::IoWriteFailed, {path, std::strerror(e)}); }
}  // namespace

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

Status write_file_atomic(const std::string& path, std::span<const std::uint8_t> bytes) {
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string tmp = join_path(dir, "." + base + ".tmp.XXXXXX");
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0) return werr(path, errno);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      const int e = w < 0 ? errno : EIO;
      ::close(fd);
      ::unlink(tmp.c_str());
      return werr(path, e);
    }
    done += static_cast<std::size_t>(w);
  }
  if (::fchmod(fd, 0644) != 0 || ::fsync(fd) != 0) {
    const int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return werr(path, e);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return werr(path, e);
  }
  return Ok{};
}

Status write_text_atomic(const std::string& path, std::string_view text) {
  return write_file_atomic(path, {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

Status make_dirs(const std::string& path) {
  if (path.empty()) return Ok{};
  std::string cur;
  std::size_t i = 0;
  while (i <= path.size()) {
    const auto next = path.find('/', i);
    cur = path.substr(0, next == std::string::npos ? path.size() : next);
    i = next == std::string::npos ? path.size() + 1 : next + 1;
    if (cur.empty()) continue;
    if (::mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return werr(cur, errno);
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return werr(path, ENOTDIR);
  return Ok{};
}

Result<std::string> read_text(const std::string& path, std::uint64_t max_bytes) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(ErrorKind::IoOpenFailed, {path, std::strerror(errno)});
  std::string s;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (s.size() + n > max_bytes) {
      std::fclose(f);
      return make_error(ErrorKind::IoReadFailed, {path, "file too large"});
    }
    s.append(buf, n);
  }
  const bool err = std::ferror(f) != 0;
  std::fclose(f);
  if (err) return make_error(ErrorKind::IoReadFailed, {path, "read error"});
  return s;
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {
  }, sb{};
  if (::stat(a.c_str(), &sa) != 0 || ::stat(b.c_str(), &sb) != 0) return false;
  return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace w4a8::audit
