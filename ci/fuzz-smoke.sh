#!/usr/bin/env bash
# Fuzzing smoke run for CI: builds the libFuzzer targets of fuzz/targets.txt with clang under
# ASan+UBSan (-DW4A8_FUZZ=ON -DW4A8_SANITIZE=ON) and runs each for FUZZ_SECONDS (default 20 s) from
# the committed seeds, with its corpus/<t>.options flags and dictionary; any crash, leak, sanitizer
# report or property failure fails CI. About 3 min on 2 cores including the build.
# When ci/sanitize.sh's tree (build-asan/, or $ASAN_BUILD_DIR) was configured with the fuzz targets
# it is reused as it stands (Debug -O1 rather than RelWithDebInfo: a smoke, not a campaign), and
# nothing is compiled again; FUZZ_BUILD_DIR names a tree explicitly.
# Longer campaigns: ci/fuzz-long.sh (docs/fuzzing.md).
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/fuzz/common.sh
SECONDS_EACH=${FUZZ_SECONDS:-20}
asan_tree=${ASAN_BUILD_DIR:-build-asan}
reuse=no
if [ -z "${FUZZ_BUILD_DIR:-}" ] && grep -qx 'W4A8_FUZZ:BOOL=ON' "$asan_tree/CMakeCache.txt" 2>/dev/null &&
   grep -qx 'W4A8_SANITIZE:BOOL=ON' "$asan_tree/CMakeCache.txt"; then
  reuse=yes
fi
BUILD=${FUZZ_BUILD_DIR:-$([ $reuse = yes ] && echo "$asan_tree" || echo build-fuzz-asan)}
JOBS=${JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
targets=$(fuzz_targets)
if [ $reuse = yes ]; then
  echo "== fuzzing from $BUILD (ci/sanitize.sh's ASan+UBSan tree, built with the fuzz targets)"
else
  CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DW4A8_FUZZ=ON -DW4A8_SANITIZE=ON -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF >/dev/null
fi
cmake --build "$BUILD" -j"$JOBS" --target $(for t in $targets; do echo "fuzz_$t"; done)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for t in $targets; do
  mkdir -p "$work/$t" "$work/artifacts-$t"
  mapfile -t flags < <(fuzz_flags "$t")
  echo "== fuzz_$t for ${SECONDS_EACH}s"
  if ! "$BUILD/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=25 \
      -print_final_stats=1 -artifact_prefix="$work/artifacts-$t/" "${flags[@]}" "$work/$t" "corpus/$t" \
      >"$work/$t.log" 2>&1; then
    status=1
    tail -n 60 "$work/$t.log"
    mkdir -p fuzz-artifacts && cp -r "$work/artifacts-$t" fuzz-artifacts/ || true
    echo "fuzz_$t FAILED (artifacts copied to fuzz-artifacts/; read one with build/fuzz/fuzz_decode $t FILE;"
    echo "keep it as corpus/$t/regress-<what> once fixed; for validator_struct also re-pin:"
    echo "  build/fuzz/fuzz_decode pin validator_struct corpus/validator_struct > corpus/validator_struct.pins)"
  else
    grep -E "stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$work/$t.log" || true
    grep -E "DONE" "$work/$t.log" | tail -1 || true
  fi
done
exit $status
