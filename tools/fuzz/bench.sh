#!/usr/bin/env bash
# Fuzz benchmark: every target of fuzz/targets.txt, and libFuzzer's trivial target (an empty
# LLVMFuzzerTestOneInput built with the same compiler and flags), each fuzzed for BENCH_SECONDS
# (default 30) from its committed seeds, first without sanitizers, then under ASan+UBSan. Prints
# executions per CPU-second (libFuzzer's stat::number_of_executed_units over the process's user +
# system time, so a machine shared with other jobs does not skew it) side by side.
#   tools/fuzz/bench.sh                  (builds build-fuzz/ and build-fuzz-asan/)
#   BENCH_SECONDS=60 BENCH_TARGETS="container" tools/fuzz/bench.sh
source "$(dirname "$0")/../../ci/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/fuzz/common.sh
SECS=${BENCH_SECONDS:-30}
JOBS=${JOBS:-$(nproc)}
TARGETS=${BENCH_TARGETS:-$(fuzz_targets | tr '\n' ' ')}
CC=${CC:-clang} CXX=${CXX:-clang++}
work=$(mktemp -d /tmp/w4a8-fuzzbench-XXXXXX)
trap 'rm -rf "$work"' EXIT

build() {  # $1 build dir, $2 ON/OFF sanitizers
  CC=$CC CXX=$CXX cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DW4A8_FUZZ=ON -DW4A8_SANITIZE="$2" \
    -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF >/dev/null
  local ts=()
  for t in $TARGETS; do ts+=("fuzz_$t"); done
  nice cmake --build "$1" -j"$JOBS" --target "${ts[@]}" >/dev/null
}
# Same optimisation flags as the CMake RelWithDebInfo build.
trivial_flags=(-O2 -g -DNDEBUG -std=c++20 -fsanitize=fuzzer)
build build-fuzz OFF
$CXX "${trivial_flags[@]}" tools/fuzz/trivial_fuzzer.cpp -o "$work/trivial"
build build-fuzz-asan ON
$CXX "${trivial_flags[@]}" -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
  tools/fuzz/trivial_fuzzer.cpp -o "$work/trivial-asan"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
# $1 binary, $2 seeds dir, $3 name, then libFuzzer flags. Prints "execs cpu_seconds".
measure() {
  local bin=$1 seeds=$2 name=$3
  shift 3
  rm -rf "$work/corpus" && mkdir -p "$work/corpus"
  local TIMEFORMAT='%U %S'
  { time "$bin" -max_total_time="$SECS" -print_final_stats=1 -rss_limit_mb=2048 -timeout=25 "$@" \
      "$work/corpus" "$seeds" >"$work/$name.log" 2>&1; } 2>"$work/$name.time" || true
  local execs cpu
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/$name.log" | grep -Eo '[0-9]+$' || echo 0)
  cpu=$(awk '{print $1 + $2}' "$work/$name.time")
  echo "$execs $cpu"
}
rate() { awk -v e="$1" -v c="$2" 'BEGIN { if (c > 0) printf "%.0f", e / c; else print "n/a" }'; }

echo "fuzz benchmark: ${SECS}s each, $(nproc) CPUs: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
printf '%-18s %16s %16s %12s %10s\n' target "exec/CPU-s" "ASan+UBSan" "slowdown" "units"
for t in trivial $TARGETS; do
  if [ "$t" = trivial ]; then
    plain=$(measure "$work/trivial" corpus/container trivial)
    asan=$(measure "$work/trivial-asan" corpus/container trivial-asan)
  else
    mapfile -t flags < <(fuzz_flags "$t")
    plain=$(measure "build-fuzz/fuzz/fuzz_$t" "corpus/$t" "$t" "${flags[@]}")
    asan=$(measure "build-fuzz-asan/fuzz/fuzz_$t" "corpus/$t" "$t-asan" "${flags[@]}")
  fi
  p=$(rate $plain)
  a=$(rate $asan)
  units=$(grep -Eo 'corp: [0-9]+' "$work/$t.log" | tail -1 | grep -Eo '[0-9]+' || echo '?')
  printf '%-18s %16s %16s %12s %10s\n' "$t" "$p" "$a" "$(awk -v p="$p" -v a="$a" 'BEGIN { if (a > 0) printf "%.1fx", p / a; else print "n/a" }')" "$units"
done
