// Calls into a kernel plugin's code (its load, entry and table functions) run under a guard, because
// that code is the user's and may misbehave in ways no return status reports:
//  - it may write to stdout: while it runs, file descriptor 1 is the process's stderr, so a `--json`
//    report stays JSON (what it printed is flushed there before stdout is given back);
//  - it may crash (SIGSEGV, SIGILL, SIGFPE, SIGABRT): the run ends naming the plugin and the call,
//    after the same cleanup of outputs as a fatal signal, then dies of that signal;
//  - it may call exit(): the run ends with exit status 2 and a message (an exit(0) was a silent pass).
//  - it may never return: with a time limit set (set_call_time_limit), a call that runs longer ends
//    the run with exit status 2 and a message naming the plugin, the call and the limit.
// _exit() and kill() cannot be seen. Guards nest (only the outermost acts); one thread at a time.
#pragma once

#include <string>
#include <string_view>

namespace w4a8::plugin {

// Seconds each outermost guarded call may take (0: no limit, the default). Not thread-safe: set it
// before calling plugins.
void set_call_time_limit(double seconds);

class CallGuard {
 public:
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
