// Calls into a kernel plugin's code (its load, entry and table functions) run under a guard, because
// that code is the user's and may misbehave in ways no return status reports:
//  - it may write to stdout: while it runs, file descriptor 1 is the process's stderr, so a `--json`
//    report stays JSON (what it printed is flushed there before stdout is given back);
//  - it may crash (SIGSEGV, SIGILL, SIGFPE, SIGABRT): the run ends naming the plugin, the call and
//    the context (the audit's case), after the same cleanup of outputs as a fatal signal, then dies of
//    that signal;
//  - it may let a C++ exception escape: where this binary links its own C++ runtime and unwinder
//    (the GCC release build), unwinding into its frames aborts, and the abort says what it was; an
//    exception that ends in the plugin's own std::terminate is named with its what(); where both
//    share the runtime (clang, sanitizer builds) it is caught around the call (escaped_exception);
//  - it may call exit(): the run ends with exit status 2 and a message (an exit(0) was a silent pass).
//  - it may never return: with a time limit set (set_call_time_limit), a watchdog thread ends the
//    run with exit status 2 and a message naming the plugin, the call and the limit. A thread of its
//    own, so nothing the plugin does to its signals (blocking them, ignoring SIGALRM, its own
//    alarm()) keeps the limit from acting.
// _exit() and kill() cannot be seen. Guards nest: the innermost names the call, the outermost sets
// the clock; one thread at a time.
#pragma once

#include <string>
#include <string_view>

#include "core/result.hpp"

namespace w4a8::plugin {

// Seconds each outermost guarded call may take (0: no limit, the default). Not thread-safe: set it
// before calling plugins.
void set_call_time_limit(double seconds);

// What the calls are made for, named in every report after the call ("case 0007_m13..."); empty:
// nothing. Set between calls.
void set_call_context(std::string_view context);

// Whether a progress line (no newline yet) may be on stderr: a report then starts on a line of its own.
void set_progress_line(bool open);

class CallGuard {
 public:
  // The plugin's failure for the C++ exception in flight (call it in a catch (...) around the
  // guarded call `call`): its what() where it is a std::exception.
  static Error escaped_exception(std::string_view plugin, std::string_view call);


  // plugin: the plugin as messages name it (Plugin::describe(), or its path while loading); call:
  // what is running ("run", "check_problem", "loading").
  CallGuard(std::string_view plugin, std::string_view call);
  ~CallGuard();
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  bool outermost_ = false;
  int saved_stdout_ = -1;
};

}  // namespace w4a8::plugin
