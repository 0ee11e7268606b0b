#include "plugin/call_guard.hpp"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <sys/time.h>
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
std::atomic<int> g_stdout{STDOUT_FILENO};  // the real stdout while fd 1 is stderr (the JSON report goes there)
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

// The report on stderr, and with --json as the JSON error object on the real stdout too.
void report_now(const char* what) {
  if (io::fatal_reports_json()) g_report.write_json(g_stdout.load(), what);
  g_report.write_text(STDERR_FILENO, what);
}

extern "C" void crashed_in_plugin(int sig) {
  if (g_active.exchange(false)) {
    report_now(signal_text(sig));
    io::remove_live_outputs();
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

double g_limit = 0;        // set_call_time_limit
char g_limit_text[128] = {};  // the hole for a call that overran it, rendered when the limit is set
struct sigaction g_old_alarm;
bool g_alarm_installed = false;

// A SIGALRM that is not the limit's timer (kill(), sigqueue(), a supervisor's `timeout -s ALRM`)
// goes where it went before the guard.
void forward_alarm(int sig, siginfo_t* info, void* context) {
  const struct sigaction& o = g_old_alarm;
  if ((o.sa_flags & SA_SIGINFO) != 0) {
    if (o.sa_sigaction != nullptr) o.sa_sigaction(sig, info, context);
    return;
  }
  if (o.sa_handler == SIG_IGN) return;
  if (o.sa_handler == SIG_DFL) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);  // delivered when the handler returns
    return;
  }
  o.sa_handler(sig);
}

extern "C" void overran_in_plugin(int sig, siginfo_t* info, void* context) {
  // ITIMER_REAL's expiry comes from the kernel (SI_KERNEL); anything else was sent by someone.
  if (info == nullptr || info->si_code != SI_KERNEL) return forward_alarm(sig, info, context);
  if (!g_active.exchange(false)) return;  // the call returned just as the timer fired
  report_now(g_limit_text);
  io::remove_live_outputs();
  ::_exit(2);
}

void arm(double seconds) {
  itimerval t{};
  t.it_value.tv_sec = static_cast<time_t>(seconds);
  t.it_value.tv_usec = static_cast<suseconds_t>((seconds - double(t.it_value.tv_sec)) * 1e6);
  if (t.it_value.tv_sec == 0 && t.it_value.tv_usec == 0 && seconds > 0) t.it_value.tv_usec = 1;
  ::setitimer(ITIMER_REAL, &t, nullptr);
}

extern "C" void exit_in_plugin() {
  if (!g_active.exchange(false)) return;
  report_now("it called exit(); nothing it computed is used");
  io::remove_live_outputs();
  ::_exit(2);
}

}  // namespace

void set_call_time_limit(double seconds) {
  g_limit = seconds > 0 ? seconds : 0;
  std::snprintf(g_limit_text, sizeof g_limit_text, "it did not return within %g s (--timeout); nothing it computed is used",
                g_limit);
}

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
  g_stdout.store(saved_stdout_ >= 0 ? saved_stdout_ : STDOUT_FILENO);
  g_alarm_installed = false;
  if (g_limit > 0) {
    struct sigaction sa {};
    sa.sa_sigaction = overran_in_plugin;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    g_alarm_installed = ::sigaction(SIGALRM, &sa, &g_old_alarm) == 0;
  }
  g_active.store(true);
  if (g_alarm_installed) arm(g_limit);
}

CallGuard::~CallGuard() {
  --g_depth;
  if (!outermost_) return;
  if (g_alarm_installed) {
    arm(0);
    ::sigaction(SIGALRM, &g_old_alarm, nullptr);
  }
  g_active.store(false);
  std::fflush(stdout);  // what the plugin printf'ed is still the stdio buffer's: to stderr with the rest
  g_stdout.store(STDOUT_FILENO);
  if (saved_stdout_ >= 0) {
    ::dup2(saved_stdout_, STDOUT_FILENO);
    ::close(saved_stdout_);
  }
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i)
    if (g_installed[i]) ::sigaction(kCrashSignals[i], &g_old[i], nullptr);
}

}  // namespace w4a8::plugin
