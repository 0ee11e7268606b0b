#include "plugin/call_guard.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <mutex>
#include <new>
#include <thread>
#include <typeinfo>

#include <cxxabi.h>
#include <dlfcn.h>
#include <unistd.h>

#include "io/atomic_file.hpp"
#include "io/fatal_report.hpp"

namespace w4a8::plugin {
namespace {

constexpr int kCrashSignals[] = {SIGSEGV, SIGILL, SIGFPE, SIGABRT};
constexpr int kLevels = 4;  // nesting levels with a report of their own (deeper ones share the last)

int g_depth = 0;  // guards alive (one thread calls plugins)
// One report per nesting level, rendered when its guard starts (the hole is what the plugin did);
// g_top is the innermost live one, which the handlers and the watchdog read.
io::FatalReport g_reports[kLevels];
std::atomic<int> g_top{0};
std::string g_context;    // set_call_context
std::atomic<bool> g_active{false};  // a guarded call is running and nobody has reported on it yet
// The watchdog took the report (g_active): a crash or exit() of the plugin meanwhile must not end
// the process before the watchdog's _exit(2) (an exit(0) would be a silent pass again).
std::atomic<bool> g_watchdog_reports{false};
std::atomic<bool> g_progress_line{false};  // set_progress_line
std::atomic<int> g_stdout{STDOUT_FILENO};  // the real stdout while fd 1 is stderr (the JSON report goes there)
struct sigaction g_old[std::size(kCrashSignals)];
bool g_installed[std::size(kCrashSignals)];
std::terminate_handler g_old_terminate = nullptr;

const char* signal_text(int sig) {
  switch (sig) {
    case SIGSEGV: return "it crashed (SIGSEGV, an invalid memory access)";
    case SIGILL: return "it crashed (SIGILL, an illegal instruction)";
    case SIGFPE: return "it crashed (SIGFPE, an arithmetic fault)";
    case SIGABRT: return "it aborted (SIGABRT)";
    default: return "it crashed";
  }
}

// A plugin written in C++ brings its own C++ runtime (libstdc++.so.6, loaded with it; this binary
// links its runtime statically). An exception it throws and nothing catches ends in that runtime's
// std::terminate, which this binary's set_terminate does not reach: its own handler is set too, and
// the exception in flight is read through its functions. Resolved when the outermost guard starts.
struct ForeignExceptionPtr {  // libstdc++'s std::exception_ptr: one pointer to the thrown object,
  void* object = nullptr;     // returned through a hidden pointer (it is not trivially copyable)
  ForeignExceptionPtr() = default;
  ForeignExceptionPtr(const ForeignExceptionPtr& o) : object(o.object) {}
  ForeignExceptionPtr& operator=(const ForeignExceptionPtr&) = delete;
  ~ForeignExceptionPtr() {}  // (its reference is never released: the process is ending)
};
struct ForeignRuntime {
  std::type_info* (*current_type)() = nullptr;             // __cxa_current_exception_type
  ForeignExceptionPtr (*current)() = nullptr;              // std::current_exception
  std::terminate_handler (*set_terminate)(std::terminate_handler) noexcept = nullptr;
  int (*uncaught)() noexcept = nullptr;                    // std::uncaught_exceptions
  std::terminate_handler old = nullptr;
};
ForeignRuntime g_foreign;

void find_foreign_runtime() {
  g_foreign = {};
  void* h = ::dlopen("libstdc++.so.6", RTLD_NOW | RTLD_NOLOAD);  // only if something loaded it
  if (h == nullptr) return;
  // A build linked with the shared runtime (clang, sanitizers) has the plugin's runtime as its own:
  // std::set_terminate and a catch here reach it already.
  if (::dlsym(RTLD_DEFAULT, "_ZSt13set_terminatePFvvE") == ::dlsym(h, "_ZSt13set_terminatePFvvE")) {
    ::dlclose(h);
    return;
  }
  g_foreign.current_type = reinterpret_cast<std::type_info* (*)()>(::dlsym(h, "__cxa_current_exception_type"));
  g_foreign.current = reinterpret_cast<ForeignExceptionPtr (*)()>(::dlsym(h, "_ZSt17current_exceptionv"));
  g_foreign.set_terminate = reinterpret_cast<std::terminate_handler (*)(std::terminate_handler) noexcept>(
      ::dlsym(h, "_ZSt13set_terminatePFvvE"));
  g_foreign.uncaught = reinterpret_cast<int (*)() noexcept>(::dlsym(h, "_ZSt19uncaught_exceptionsv"));
  ::dlclose(h);  // (NOLOAD took a reference; the plugin keeps the library loaded)
}

// The report on stderr, and with --json as the JSON error object on the real stdout too. A progress
// line on a terminal (the audit's, naming the case) is ended first, not written over.
void report_now(const char* what) {
  const io::FatalReport& r = g_reports[g_top.load()];
  if (io::fatal_reports_json()) r.write_json(g_stdout.load(), what);
  if (g_progress_line.load() && ::isatty(STDERR_FILENO) == 1) io::write_now(STDERR_FILENO, "\n");
  r.write_text(STDERR_FILENO, what);
}

// The watchdog is reporting a timeout: this thread waits for its _exit(2).
void yield_to_watchdog() {
  if (g_watchdog_reports.load())
    for (;;) ::pause();
}

extern "C" void crashed_in_plugin(int sig) {
  if (!g_active.exchange(false)) yield_to_watchdog();
  else {
    // An exception the plugin threw, unwinding into this binary's frames: their personality routine
    // is this binary's (libgcc linked in) and aborts on the plugin's unwinder's context.
    const bool unwinding = sig == SIGABRT && g_foreign.uncaught != nullptr && g_foreign.uncaught() > 0;
    report_now(unwinding ? "it threw a C++ exception across the C ABI (it aborted while unwinding into the caller: catch "
                           "it in the plugin and return an error status)"
                         : signal_text(sig));
    io::remove_live_outputs();
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal says
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d != nullptr ? d : name;
  std::free(d);
  return out;
}

// What an exception in flight says of itself: what() of a std::exception, else its type (printable,
// at most 300 bytes). This runtime's first, then the plugin's.
std::string exception_text() {
  std::string what;
  try {
    if (const std::exception_ptr e = std::current_exception()) std::rethrow_exception(e);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
    what = "not a std::exception";
  }
  if (what.empty() && g_foreign.current_type != nullptr) {
    if (const std::type_info* t = g_foreign.current_type()) {
      what = "a " + demangled(t->name());
      void* object = g_foreign.current != nullptr ? g_foreign.current().object : nullptr;
      // Type infos compare by name across runtimes: the upcast finds the std::exception base.
      if (object != nullptr && t->__do_upcast(static_cast<const abi::__class_type_info*>(&typeid(std::exception)), &object))
        what = static_cast<const std::exception*>(object)->what();
    }
  }
  if (what.empty()) what = "not a std::exception";
  if (what.size() > 300) what = what.substr(0, 300) + "...";
  for (char& c : what)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) c = '?';
  return "it let a C++ exception escape across the C ABI (" + what + "); nothing it computed is used";
}

// An exception nothing can catch (it left a noexcept frame, or unwinding found no handler): said,
// then the abort std::terminate would do.
[[noreturn]] void terminated_in_plugin() {
  if (g_active.exchange(false)) {
    report_now(exception_text().c_str());
    io::remove_live_outputs();
  }
  ::signal(SIGABRT, SIG_DFL);
  std::abort();
}

double g_limit = 0;           // set_call_time_limit
char g_limit_text[128] = {};  // the hole for a call that overran it, rendered when the limit is set

// The time limit's clock: a thread of its own, so that nothing the plugin does to signals in its
// thread can stop it. Never destroyed (it may still wait when the process exits).
struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false;
  std::uint64_t generation = 0;  // one per armed call: a late wake-up never ends the next call
  std::chrono::steady_clock::time_point deadline;
};
Watchdog& watchdog() {
  static Watchdog* const w = new Watchdog;  // NOLINT(cppcoreguidelines-owning-memory): outlives exit on purpose
  return *w;
}

[[noreturn]] void watch() {
  Watchdog& w = watchdog();
  std::unique_lock<std::mutex> lock(w.mu);
  while (true) {
    w.cv.wait(lock, [&w] { return w.armed; });
    const std::uint64_t gen = w.generation;
    if (w.cv.wait_until(lock, w.deadline, [&w, gen] { return !w.armed || w.generation != gen; })) continue;
    // The time ran out. A crash or exit() handler that took the report first ends the process; wait
    // for this call's end rather than spin on the passed deadline.
    if (!g_active.exchange(false)) {
      w.cv.wait(lock, [&w, gen] { return !w.armed || w.generation != gen; });
      continue;
    }
    g_watchdog_reports.store(true);
    report_now(g_limit_text);
    io::remove_live_outputs();
    ::_exit(2);
  }
}

void arm(bool on) {
  Watchdog& w = watchdog();
  {
    const std::lock_guard<std::mutex> lock(w.mu);
    w.armed = on;
    ++w.generation;
    if (on) w.deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                std::chrono::duration<double>(g_limit));
  }
  w.cv.notify_one();
}

extern "C" void exit_in_plugin() {
  if (!g_active.exchange(false)) {
    yield_to_watchdog();
    return;
  }
  report_now("it called exit(); nothing it computed is used");
  io::remove_live_outputs();
  ::_exit(2);
}

// "run", or "run (case 0007_...)" with a context set.
std::string named_call(std::string_view call) {
  return g_context.empty() ? std::string(call) : std::string(call) + " (" + g_context + ")";
}

}  // namespace

void set_call_time_limit(double seconds) {
  g_limit = seconds > 0 ? std::min(seconds, 1e9) : 0;
  std::snprintf(g_limit_text, sizeof g_limit_text, "it did not return within %g s (--timeout); nothing it computed is used",
                g_limit);
  if (g_limit > 0) {
    static const bool started = [] {
      std::thread(watch).detach();
      return true;
    }();
    (void)started;
  }
}

void set_call_context(std::string_view context) { g_context = context; }

void set_progress_line(bool open) { g_progress_line.store(open); }

Error CallGuard::escaped_exception(std::string_view plugin, std::string_view call) {
  const std::string named = named_call(call);
  return make_error(ErrorKind::PluginFailed, {plugin, named, exception_text()});
}

CallGuard::CallGuard(std::string_view plugin, std::string_view call) {
  const int level = g_depth++;
  if (level < kLevels) {
    const std::string named = named_call(call);
    // Under the watchdog's lock while it may be writing the report out (it holds the lock then).
    std::unique_lock<std::mutex> lock(watchdog().mu, std::defer_lock);
    if (level > 0 && g_limit > 0) lock.lock();
    g_reports[level].render(ErrorKind::PluginFailed, {plugin, named, io::FatalReport::kHole});
    g_top.store(level);
  }
  if (level > 0) return;
  outermost_ = true;
  static const bool registered = std::atexit(exit_in_plugin) == 0;
  (void)registered;
  for (std::size_t i = 0; i < std::size(kCrashSignals); ++i) {
    g_installed[i] = false;
    if (::sigaction(kCrashSignals[i], nullptr, &g_old[i]) != 0 || g_old[i].sa_handler != SIG_DFL) continue;  // a sanitizer's stays
    struct sigaction sa {};
    sa.sa_handler = crashed_in_plugin;
    sigemptyset(&sa.sa_mask);
    g_installed[i] = ::sigaction(kCrashSignals[i], &sa, nullptr) == 0;
  }
  g_old_terminate = std::set_terminate(terminated_in_plugin);
  find_foreign_runtime();
  if (g_foreign.set_terminate != nullptr) g_foreign.old = g_foreign.set_terminate(terminated_in_plugin);
  if (g_foreign.uncaught != nullptr) (void)g_foreign.uncaught();  // its thread-local block made now, not in a handler
  // What this process has buffered for stdout goes there first; then fd 1 is stderr until the end.
  std::cout.flush();
  std::fflush(stdout);
  saved_stdout_ = ::dup(STDOUT_FILENO);
  if (saved_stdout_ >= 0) ::dup2(STDERR_FILENO, STDOUT_FILENO);
  g_stdout.store(saved_stdout_ >= 0 ? saved_stdout_ : STDOUT_FILENO);
  g_active.store(true);
  if (g_limit > 0) arm(true);
}

CallGuard::~CallGuard() {
  --g_depth;
  if (!outermost_) {
    g_top.store(std::min(g_depth, kLevels) - 1);  // the enclosing call's report again
    return;
  }
  if (g_limit > 0) arm(false);
  g_active.store(false);
  if (g_foreign.set_terminate != nullptr) g_foreign.set_terminate(g_foreign.old);  // (the reverse of the constructor)
  std::set_terminate(g_old_terminate);
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
