// Progress of a long command on stderr: a redrawn bar when stderr is a terminal, one plain line per
// step otherwise, nothing with --quiet. Called from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace w4a8::cli {

class Progress {
 public:
  enum class Mode : std::uint8_t { Bar, Lines, Off };
  // Bar when `err` is stderr and stderr is a terminal, else Lines; Off when quiet.
  static Mode pick(bool quiet);

  Progress(std::ostream& err, Mode mode, std::uint64_t total, std::string_view unit);
  ~Progress();  // ends the bar's line
  // One step done; `line` is what Lines mode prints for it.
  void step(std::string_view line);

 private:
  std::ostream& err_;
  Mode mode_;
  std::uint64_t total_, done_ = 0;
  std::string_view unit_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace w4a8::cli
