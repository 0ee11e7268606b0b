#include "plugin/call_guard.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <unistd.h>

#include "core/result.hpp"
#include "io/atomic_file.hpp"

namespace w4a8::plugin {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGILL, SIGFPE, SIGABRT};

int g_depth = 0;  // guards alive (one thread calls plugins)
// The report, rendered when the outermost guard starts (a handler may not format): "w4a8check: " +
// PluginFailed's message up to its reason, then the reason, then "\n  [plugin.failed]\n".
char g_head[1024];
char g_tail[64];
std::atomic<bool> g_active{false};
struct sigaction g_old[std::size(kCrashSignals)];
bool g_installed[std::size(kCrashSignals)];

void write_fd(int fd, const char* s) {
  for (std::size_t n = std::strlen(s); n > 0;) {
    const ssize_t w = ::write(fd, s, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    s += w;
    n -= std::size_t(w);
  }
}

void report(const char* why) {
  write_fd(STDERR_FILENO, g_head);
  write_fd(STDERR_FILENO, why);
  write_fd(STDERR_FILENO, g_tail);
}

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
    report(signal_text(sig));
    io::remove_live_outputs();
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

extern "C" void exit_in_plugin() {
  if (!g_active.exchange(false)) return;
  report("it called exit(); nothing it computed is used");
  io::remove_live_outputs();
  ::_exit(2);
}

}  // namespace

CallGuard::CallGuard(std::string_view plugin, std::string_view call) {
  if (g_depth++ > 0) return;
  outermost_ = true;
  static const bool registered = std::atexit(exit_in_plugin) == 0;
  (void)registered;
  const Error e = make_error(ErrorKind::PluginFailed, {std::string(plugin), std::string(call), "\x01"});
  const std::size_t at = e.message.find('\x01');
  std::snprintf(g_head, sizeof g_head, "w4a8check: %s", e.message.substr(0, at).c_str());
  std::snprintf(g_tail, sizeof g_tail, "%s\n  [%s]\n", e.message.substr(at + 1).c_str(), std::string(e.code()).c_str());
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
