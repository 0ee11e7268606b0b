#!/usr/bin/env bash
# The documented long fuzzing run (docs/fuzzing.md): every target of fuzz/targets.txt for
# FUZZ_SECONDS (default 300 s) WITHOUT sanitizers (several times faster: tools/fuzz/bench.sh),
# keeping the growing corpus in fuzz-corpus/<target>/ between runs, with -jobs/-workers from
# FUZZ_JOBS (default 1); then the whole corpus is replayed under ASan+UBSan, so memory errors and
# undefined behaviour the fast run cannot see are still caught on everything it found.
#   FUZZ_SECONDS=3600 FUZZ_JOBS=4 ci/fuzz-long.sh
# New crashes land in fuzz-artifacts/<target>/; read one with build/fuzz/fuzz_decode <target> FILE,
# minimize it with build-fuzz/fuzz/fuzz_<target> -minimize_crash=1 -runs=10000 FILE, then keep it as
# corpus/<target>/regress-<what> and fix the bug (the ctest replay keeps it fixed; choice-byte
# inputs of validator_struct are also pinned: see docs/fuzzing.md).
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/fuzz/common.sh
SECONDS_EACH=${FUZZ_SECONDS:-300}
JOBS=${FUZZ_JOBS:-1}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
ASAN_BUILD=${FUZZ_ASAN_BUILD_DIR:-build-fuzz-asan}
CORPUS=${FUZZ_CORPUS_DIR:-fuzz-corpus}
ARTIFACTS=${FUZZ_ARTIFACT_DIR:-fuzz-artifacts}
targets=${FUZZ_TARGETS:-$(fuzz_targets)}
bins=$(for t in $targets; do echo "fuzz_$t"; done)
build() {  # $1 dir, $2 sanitizers ON/OFF
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DW4A8_FUZZ=ON -DW4A8_SANITIZE="$2" -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF >/dev/null
  cmake --build "$1" -j"$(nproc)" --target $bins
}
build "$BUILD" OFF
status=0
for t in $targets; do
  mkdir -p "$CORPUS/$t" "$ARTIFACTS/$t"
  mapfile -t flags < <(fuzz_flags "$t")
  par=()
  [ "$JOBS" -gt 1 ] && par=(-jobs="$JOBS" -workers="$JOBS")
  echo "== fuzz_$t for ${SECONDS_EACH}s (jobs=$JOBS, no sanitizers)"
  if ! "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$t/" "${par[@]}" "${flags[@]}" \
      "$CORPUS/$t" "corpus/$t" >"$ARTIFACTS/$t.log" 2>&1; then
    status=1
    echo "fuzz_$t FOUND A PROBLEM:"
    tail -n 60 "$ARTIFACTS/$t.log"
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|DONE" "$ARTIFACTS/$t.log" | tail -3 || true
done
echo "== replaying the corpora under ASan+UBSan"
build "$ASAN_BUILD" ON
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
for t in $targets; do
  mapfile -t flags < <(fuzz_flags "$t")
  if "$ASAN_BUILD/fuzz/fuzz_$t" -runs=0 -rss_limit_mb=2048 -timeout=25 "${flags[@]}" \
      -artifact_prefix="$ARTIFACTS/$t/asan-" "$CORPUS/$t" "corpus/$t" >"$ARTIFACTS/$t-asan.log" 2>&1; then
    echo "fuzz_$t: $(ls "$CORPUS/$t" | wc -l) corpus inputs clean under ASan+UBSan"
  else
    status=1
    echo "fuzz_$t: the ASan+UBSan replay FAILED:"
    tail -n 60 "$ARTIFACTS/$t-asan.log"
  fi
done
exit $status
