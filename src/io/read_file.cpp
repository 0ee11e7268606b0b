#include "io/read_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace w4a8::io {

const char* file_type_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

Result<std::string> read_small_file(const std::string& path, std::uint64_t max_bytes) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return make_error(ErrorKind::IoOpenFailed, {path, std::strerror(errno)});
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(ErrorKind::IoReadFailed, {path, std::strerror(errno)});
  if (!S_ISREG(st.st_mode)) return make_error(ErrorKind::IoNotRegularFile, {path, file_type_name(st.st_mode)});
  if (std::uint64_t(st.st_size) > max_bytes)
    return make_error(ErrorKind::IoReadFailed, {path, "larger than " + std::to_string(max_bytes) + " bytes"});
  std::string out(std::size_t(st.st_size), '\0');
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorKind::IoReadFailed, {path, std::strerror(errno)});
    }
    if (n == 0) break;  // shrank while reading
    got += std::size_t(n);
  }
  out.resize(got);
  return out;
}

}  // namespace w4a8::io
