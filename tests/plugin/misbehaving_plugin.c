/* A kernel plugin that misbehaves where no return status reports it, as $W4A8_TEST_MISBEHAVE says:
 * stdout_run / stdout_entry (prints to stdout), exit_run / exit_entry (exit(0)), segv_run / segv_check
 * (SIGSEGV), abort_run (abort()), hang_run (sleeps 300 s), hang_masked_run (blocks every signal, then
 * sleeps), hang_no_alarm_run (ignores SIGALRM, then sleeps), segv_ws (SIGSEGV in workspace_size),
 * bad_name (a name that is not UTF-8), nothing_intermediates (offers intermediates, writes nothing).
 * Otherwise it is a well-behaved
 * plugin that computes nothing (its output stays as the host left it). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "w4a8_cuda.h"

static int is(const char* what) {
  const char* m = getenv("W4A8_TEST_MISBEHAVE");
  return m != NULL && strcmp(m, what) == 0;
}

static void misbehave(const char* where) {
  char what[32];
  snprintf(what, sizeof what, "stdout_%s", where);
  if (is(what)) printf("plugin chatter on stdout from %s\n", where);  /* buffered: flushed later */
  snprintf(what, sizeof what, "exit_%s", where);
  if (is(what)) exit(0);
  snprintf(what, sizeof what, "segv_%s", where);
  if (is(what)) raise(SIGSEGV);
  snprintf(what, sizeof what, "abort_%s", where);
  if (is(what)) abort();
}

static w4a8_status check(const w4a8_problem* p) {
  (void)p;
  misbehave("check");
  return W4A8_OK;
}
static size_t ws(const w4a8_problem* p) {
  (void)p;
  misbehave("ws");
  return 0;
}
static w4a8_status run(const w4a8_problem* p, void* w, size_t b, void* s) {
  (void)p, (void)w, (void)b, (void)s;
  misbehave("run");
  if (is("hang_masked_run")) {
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
  }
  if (is("hang_no_alarm_run")) signal(SIGALRM, SIG_IGN);
  if (is("hang_run") || is("hang_masked_run") || is("hang_no_alarm_run")) sleep(300);
  return W4A8_OK;
}
static const char* last(void) { return ""; }

static w4a8_kernel_plugin table = {W4A8_KERNEL_ABI_VERSION, (uint32_t)sizeof(w4a8_kernel_plugin), "misbehaving", "1",
                                   W4A8_MEMORY_HOST, W4A8_CAP_INTEGER_PATH, check, ws, run, last,
                                   NULL, NULL, NULL, NULL, NULL, NULL};

__attribute__((visibility("default"))) const w4a8_kernel_plugin* w4a8_kernel_plugin_v1(void) {
  misbehave("entry");
  if (is("bad_name")) table.name = "bad\xff";
  if (is("nothing_intermediates")) table.caps |= W4A8_CAP_INTERMEDIATES;
  return &table;
}
