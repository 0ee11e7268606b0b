#!/usr/bin/env bash
# The sanitized build's default options (cmake/asan_default_options.c) keep LeakSanitizer's tracer
# alive when a dlopen'd module's dynamic TLS block lands 16 bytes into a page. First shows the probe
# reaches the runtime bug (the interceptor switched back on: some placement crashes the tracer),
# then that no placement crashes with the defaults. Exit 77 (skip) when the runtime lacks the bug.
set -u
probe=$1 module=$2
run_all() {  # run_all ASAN_OPTIONS: prints the first K whose run fails, or nothing
  local k
  for k in $(seq 0 191); do
    if ! ASAN_OPTIONS=$1 "$probe" "$module" "$k" >/dev/null 2>"$tmp"; then echo "$k"; return; fi
  done
}
tmp=$(mktemp) && trap 'rm -f "$tmp"' EXIT
k=$(run_all "detect_leaks=1:intercept_tls_get_addr=1")
if [ -n "$k" ] && ! grep -q "Tracer caught signal" "$tmp"; then
  echo "FAIL: the probe failed at K=$k, but not in LeakSanitizer's tracer:"
  cat "$tmp"
  exit 1
fi
if [ -z "$k" ]; then
  echo "SKIP: no placement crashes the tracer with the interceptor on (this runtime lacks the bug)"
  exit 77
fi
echo "with intercept_tls_get_addr=1, K=$k: $(head -n 1 "$tmp")"
k=$(run_all "detect_leaks=1:abort_on_error=1")
if [ -n "$k" ]; then
  echo "FAIL: with the build's default options, K=$k failed:"
  cat "$tmp"
  exit 1
fi
echo "with the build's default options: 192 placements, no failure"
