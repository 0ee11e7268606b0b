#include "plugin/call_guard.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <unistd.h>

#include "core/result.hpp"
#include "io/atomic_file.hpp"
#include "io/fatal_report.hpp"

namespace w4a8::plugin {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGILL, SIGFPE, SIGABRT};

int g_depth = 0;  // guards alive (one thread calls plugins)
// The report, rendered when the outermost guard starts; the hole is what the plugin did.
io::FatalReport g_report;
std::atomic<bool> g_active{false};
struct sigaction g_old[std::size(kCrashSignals)];
bool g_installed[std::size(kCrashSignals)];

const char* signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "it crashed (SIGSEGV, an invalid memory access)";
    case SIGILL: return "it crashed (SIGILL, an illegal instruction)";
    case SIGFPE: return "it crashed (SIGFPE, an arithmetic fault)";
    case SIGABRT: return "it aborted (SIGABRT)";
    default: return "it crashed";
  }
}

extern "C" void crashed_in_plugin(int sig) {
  if (g_active.exchange(false)) {
    g_report.write_text(STDERR_FILENO, signal_text(sig));
    io::remove_live_outputs();
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

extern "C" void exit_in_plugin() {
  if (!g_active.exchange(false)) return;
  g_report.write_text(STDERR_FILENO, "it called exit(); nothing it computed is used");
  io::remove_live_outputs();
  ::_exit(2);
}

}  // namespace

CallGuard::CallGuard(std::string_view plugin, std::string_view call) {
  if (g_depth++ > 0) return;
  outermost_ = true;
  static const bool registered = std::atexit(exit_in_plugin) == 0;
  (void)registered;
  g_report.render(ErrorKind::PluginFailed, {plugin, call, io::FatalReport::kHole});
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i) {
    g_installed[i] = false;
    if (::sigaction(kCrashSignals[i], nullptr, &g_old[i]) != 0 || g_old[i].sa_handler != SIG_DFL) continue;  // a sanitizer's stays
    struct sigaction sa {};
    sa.sa_handler = crashed_in_plugin;
    sigemptyset(&sa.sa_mask);
    g_installed[i] = ::sigaction(kCrashSignals[i], &sa, nullptr) == 0;
  }
  // What this process has buffered for stdout goes there first; then fd 1 is stderr until the end.
  std::cout.flush();
  std::fflush(stdout);
  saved_stdout_ = ::dup(STDOUT_FILENO);
  if (saved_stdout_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  g_active.store(true);
}

CallGuard::~CallGuard() {
  --g_depth;
  if (!outermost_) return;
  g_active.store(false);
  std::fflush(stdout);  // what the plugin printf'ed is still the stdio buffer's: to stderr with the rest
  if (saved_stdout_ >= 0) {
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::close(saved_stdout_);
  }
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i)
    if (g_installed[i]) ::sigaction(kCrashSignals[i], &g_old[i], nullptr);
}

}  // namespace w4a8::plugin
