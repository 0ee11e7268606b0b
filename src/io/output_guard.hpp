// Outputs never replace inputs: every file a command reads is recorded by identity (device + inode,
// symlinks followed), and an output that resolves to one of them is refused before anything is
// written, whatever path spelling, symlink or hard link leads there.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

#include "core/result.hpp"

namespace w4a8::io {

class InputGuard {
 public:
  // Records an input (a path that cannot be stat'ed is skipped: it cannot be replaced either).
  void add(const std::string& path);
  // @return Ok, or IoOutputIsInput naming the output and the input it resolves to.
  Status check_output(const std::string& out) const;

 private:
  struct Id {
    dev_t dev;
    ino_t ino;
    std::string path;
  };
  std::vector<Id> inputs_;
};

}  // namespace w4a8::io
