#!/usr/bin/env bash
# GPU check of the W4A8 CUDA kernels, for a machine with an NVIDIA GPU (sized for one H200 with 16
# cores: under 8 minutes). Builds with CUDA, checks ptxas resource usage, runs the CUDA differential
# tests (which must RUN here, not skip), compute-sanitizer memcheck/racecheck/synccheck on the
# small-shape tests, and prints the benchmark table vs cuBLASLt int8 and cuBLAS bf16.
# Logs and the summary go to ${OUT:-./gpu-out}. Usage: ci/gpu-check.sh [--quick-bench]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$PWD/gpu-out}
build=${W4A8_GPU_BUILD_DIR:-$root/build-gpu}
jobs=${W4A8_JOBS:-$(nproc)}
bench_args=()
[[ ${1:-} == --quick-bench ]] && bench_args=(--quick)
mkdir -p "$out"
summary=$out/summary.md
: >"$summary"
t0=$SECONDS
say() { echo "[gpu-check +$((SECONDS - t0))s] $*" | tee -a "$summary"; }
fail() { say "FAIL: $*"; exit 1; }
# run NAME LIMIT_S CMD...: runs CMD with a time limit, output to $out/NAME.log.
run() {
  local name=$1 limit=$2
  shift 2
  say "$name: $*"
  if ! timeout "$limit" "$@" >"$out/$name.log" 2>&1; then
    tail -n 40 "$out/$name.log" || true
    fail "$name (see $out/$name.log)"
  fi
}

{ nvidia-smi || true; nvcc --version || true; } >"$out/machine.txt" 2>&1
say "machine: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1 || echo unknown)"

run configure 120 cmake -S "$root" -B "$build" -DW4A8_CUDA=ON -DW4A8_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
run build 300 cmake --build "$build" -j"$jobs" --target w4a8_kernels_cuda kernels_cuda_test kernels_emulate_test \
  kernels_index_math_test kernels_numerics_test cuda_bench
run ptxas 30 "$root/ci/check-ptxas.sh" "$build/ptxas"
tail -n 1 "$out/ptxas.log" | tee -a "$summary"

tests=$build/tests/kernels
run host-tests 120 bash -c "'$tests/kernels_index_math_test' && '$tests/kernels_numerics_test' && '$tests/kernels_emulate_test'"
run cuda-tests 300 ctest --test-dir "$build" -L cuda -V --timeout 280
if grep -qE 'Skipped|no CUDA device' "$out/cuda-tests.log"; then
  grep -E 'Skipped|no CUDA device' "$out/cuda-tests.log" | head -5
  fail "CUDA tests skipped on a GPU machine"
fi
grep -E 'tests passed' "$out/cuda-tests.log" | tee -a "$summary"

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[[ -x $sanitizer ]] || fail "compute-sanitizer not found"
small='CudaDiffSmall.MatchesEmulation:CudaDiffSmall.RowsIndependent:CudaDiffSmall.NanScaleByteIsFlagged:CudaDiffSmall.CorrectionPath'
run memcheck 150 "$sanitizer" --tool memcheck --error-exitcode 86 "$tests/kernels_cuda_test" --gtest_filter="$small"
run racecheck 120 "$sanitizer" --tool racecheck --error-exitcode 86 "$tests/kernels_cuda_test" --gtest_filter='CudaDiffSmall.MatchesEmulation'
run synccheck 90 "$sanitizer" --tool synccheck --error-exitcode 86 "$tests/kernels_cuda_test" --gtest_filter='CudaDiffSmall.MatchesEmulation'
for t in memcheck racecheck synccheck; do
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$t.log" | tail -1 | sed "s/^/$t: /" | tee -a "$summary"
done

run bench 150 "$build/bench/cuda_bench" "${bench_args[@]}"
cat "$out/bench.log" | tee -a "$summary"
say "OK in $((SECONDS - t0))s"
