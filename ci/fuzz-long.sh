#!/usr/bin/env bash
# The documented long fuzzing run (docs/fuzzing.md): every target for FUZZ_SECONDS (default 300 s,
# at least 60 s as the acceptance asks) under ASan+UBSan, keeping the growing corpus in
# fuzz-corpus/<target>/ between runs, with -jobs/-workers from FUZZ_JOBS (default 1).
#   FUZZ_SECONDS=600 FUZZ_JOBS=4 ci/fuzz-long.sh
# New crashes land in fuzz-artifacts/<target>/; minimize one with
#   build-fuzz/fuzz/fuzz_<target> -minimize_crash=1 -runs=10000 <crash-file>
# then copy it to corpus/<target>/regress-<what> and fix the bug (the ctest replay keeps it fixed).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${FUZZ_SECONDS:-300}
JOBS=${FUZZ_JOBS:-1}
BUILD=${FUZZ_BUILD_DIR:-build-fuzz}
CORPUS=${FUZZ_CORPUS_DIR:-fuzz-corpus}
ARTIFACTS=${FUZZ_ARTIFACT_DIR:-fuzz-artifacts}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DW4A8_FUZZ=ON -DW4A8_SANITIZE=ON -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target fuzz_container fuzz_marker_json fuzz_validator_struct
status=0
for t in ${FUZZ_TARGETS:-container marker_json validator_struct}; do
  mkdir -p "$CORPUS/$t" "$ARTIFACTS/$t"
  dict=()
  [ -f "corpus/$t.dict" ] && dict=(-dict="corpus/$t.dict")
  echo "== fuzz_$t for ${SECONDS_EACH}s (jobs=$JOBS)"
  par=()
  [ "$JOBS" -gt 1 ] && par=(-jobs="$JOBS" -workers="$JOBS")
  if ! "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$ARTIFACTS/$t/" "${par[@]}" "${dict[@]}" \
      "$CORPUS/$t" "corpus/$t" >"$ARTIFACTS/$t.log" 2>&1; then
    status=1
    echo "fuzz_$t FOUND A PROBLEM:"
    tail -n 60 "$ARTIFACTS/$t.log"
  fi
  grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|DONE" "$ARTIFACTS/$t.log" | tail -3 || true
done
exit $status
