#include "cli/progress.hpp"

#include <cstdio>
#include <ostream>
#include <string>

#include <unistd.h>

namespace w4a8::cli {

Progress::Mode Progress::pick(bool quiet) {
  if (quiet) return Mode::Off;
  return ::isatty(STDERR_FILENO) ? Mode::Bar : Mode::Lines;
}

Progress::Progress(std::ostream& err, Mode mode, std::uint64_t total, std::string_view unit)
    : err_(err), mode_(mode), total_(total), unit_(unit), start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  if (mode_ == Mode::Bar && done_ > 0) err_ << "\n" << std::flush;
}

void Progress::step(std::string_view line) {
  ++done_;
  if (mode_ == Mode::Off) return;
  if (mode_ == Mode::Lines) {
    err_ << "[" << done_ << "/" << total_ << "] " << line << "\n";
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (done_ != total_ && now - last_draw_ < std::chrono::milliseconds(100)) return;  // redraw at most 10x a second
  last_draw_ = now;
  constexpr int kWidth = 30;
  const int filled = total_ ? int(done_ * kWidth / total_) : kWidth;
  const double secs = std::chrono::duration<double>(now - start_).count();
  char tail[64];
  std::snprintf(tail, sizeof tail, "] %llu/%llu %.*s  %.1f s", (unsigned long long)done_, (unsigned long long)total_,
                int(unit_.size()), unit_.data(), secs);
  err_ << "\r[" << std::string(std::size_t(filled), '#') << std::string(std::size_t(kWidth - filled), '.') << tail
       << "\x1b[K" << std::flush;
}

}  // namespace w4a8::cli
