#include "io/output_guard.hpp"

#include <sys/stat.h>

namespace w4a8::io {

void InputGuard::add(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  inputs_.push_back({st.st_dev, st.st_ino, path});
}

Status InputGuard::check_output(const std::string& out) const {
  struct stat st {};
  if (::stat(out.c_str(), &st) != 0) return Ok{};  // does not exist (yet): cannot be an input
  // A character device (/dev/null) is written in place, replacing nothing; as an input it is refused
  // on its own (io.not_regular_file), which is the error to report, not this one.
  if (S_ISCHR(st.st_mode)) return Ok{};
  for (const Id& in : inputs_)
    if (in.dev == st.st_dev && in.ino == st.st_ino) return make_error(ErrorKind::IoOutputIsInput, {out, in.path});
  return Ok{};
}

}  // namespace w4a8::io
