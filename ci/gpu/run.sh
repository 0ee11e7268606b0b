#!/usr/bin/env bash
# The one-call GPU check of the W4A8 CUDA kernels, run from the carried bundle (ci/gpu/build-bundle.sh)
# on a bare GPU machine (nvcc's toolkit or PyTorch's NVIDIA wheels for cuBLAS, compute-sanitizer; no
# GoogleTest, no package installs). Each test binary / filter runs in its own process (a failure
# does not stop the rest), then the benchmark, then compute-sanitizer memcheck, racecheck, synccheck
# and initcheck on small shapes, within a global 7.5-minute budget. Writes at most 6 files under
# ${OUT:-./gpu-out}: summary.md (one row per step: PASS / FAIL / SKIPPED with the reason), tests.log,
# bench.log, sanitizer.log, machine.txt, MANIFEST.
# Without a GPU (or with --dry-run) every GPU step is reported SKIPPED and the script exits 0: CI
# runs it that way. On a GPU machine a test that skips for want of a device counts as a FAIL.
# Usage: bash build-gpu-bundle/run.sh [--dry-run] [--full-bench]
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/gpu-out}
dry=0 bench_args=(--quick)
for a in "$@"; do
  case $a in
    --dry-run) dry=1 ;;
    --full-bench) bench_args=() ;;
    *) echo "run.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
summary=$out/summary.md tests=$out/tests.log bench=$out/bench.log san=$out/sanitizer.log machine=$out/machine.txt
: >"$tests"; : >"$bench"; : >"$san"
cp "$here/MANIFEST" "$out/MANIFEST" 2>/dev/null || true
t0=$SECONDS budget=450 failed=0
echo "| step | status | seconds | detail |" >"$summary"
echo "|---|---|---|---|" >>"$summary"
row() { echo "| $1 | $2 | $3 | $4 |" >>"$summary"; echo "[run.sh +$((SECONDS - t0))s] $1: $2 ${4:+($4)}"; }

# ---- CUDA libraries: the toolkit's, else PyTorch's bundled NVIDIA wheels, else the loader's ----------
libdirs=()
for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
  [[ -e $d/libcublas.so.13 ]] && libdirs+=("$d")
done
if ((${#libdirs[@]} == 0)); then
  for py in python3 /opt/torch/.venv/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || [[ -x $py ]] || continue
    while read -r d; do [[ -n $d ]] && libdirs+=("$d"); done < <("$py" - <<'EOF' 2>/dev/null
import glob, os
try:
    import nvidia
    roots = list(nvidia.__path__)
except Exception:
    roots = []
for r in roots:
    for f in glob.glob(os.path.join(r, '**', 'libcublas.so.13'), recursive=True):
        print(os.path.dirname(f))
EOF
)
    ((${#libdirs[@]})) && break
  done
fi
if ((${#libdirs[@]})); then
  export LD_LIBRARY_PATH=$(IFS=:; echo "${libdirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
export W4A8_PLUGIN_DIR=$here/lib

sanitizer=$(command -v compute-sanitizer || true)
[[ -z $sanitizer && -x /usr/local/cuda/bin/compute-sanitizer ]] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || true)
{
  echo "date: $(date -u)"; echo "host: $(uname -a)"; echo "gpu: ${gpu:-none}"
  echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; echo "compute-sanitizer: ${sanitizer:-none}"
  nvidia-smi 2>&1 || true
  for f in "$here"/bin/* "$here"/lib/*; do echo "== ldd $(basename "$f")"; ldd "$f" 2>&1; done
} >"$machine" 2>&1

reason=
if ((dry)); then reason="dry run"
elif [[ -z $gpu ]]; then reason="no GPU (nvidia-smi found none)"
elif ! ldd "$here/bin/kernels_cuda_test" | grep -q 'libcublas.so.13 => /'; then reason="libcublas.so.13 not found"
fi

# step NAME LOG LIMIT_S CMD...: runs CMD in its own process under a time limit, appends its output to
# LOG, records PASS / FAIL / SKIPPED. A gtest run that skipped for lack of a device is a FAIL here.
step() {
  local name=$1 log=$2 limit=$3
  shift 3
  if [[ -n $reason ]]; then row "$name" SKIPPED 0 "$reason"; return; fi
  local left=$((budget - (SECONDS - t0)))
  if ((left < 20)); then row "$name" SKIPPED 0 "time budget spent"; failed=1; return; fi
  ((limit > left)) && limit=$left
  local s=$SECONDS rc
  echo "===== $name: $* (limit ${limit}s)" >>"$log"
  timeout --kill-after=10 "$limit" "$@" >>"$log" 2>&1
  rc=$?
  local detail="exit $rc"
  [[ $rc == 124 || $rc == 137 ]] && detail="timed out after ${limit}s"
  local tail_lines=$(tail -n 400 "$log")
  if [[ $rc == 0 ]] && grep -q 'no CUDA device' <<<"$tail_lines"; then rc=1; detail="skipped on a GPU machine"; fi
  local passed=$(grep -Eo '\[  PASSED  \] [0-9]+ tests?' <<<"$tail_lines" | tail -1)
  local errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+ errors?|RACECHECK SUMMARY: [0-9]+ hazards? displayed' <<<"$tail_lines" | tail -1)
  [[ -n $passed ]] && detail="$detail, ${passed#*] }"
  [[ -n $errors ]] && detail="$detail, $errors"
  if [[ $rc == 0 ]]; then row "$name" PASS $((SECONDS - s)) "$detail"; else row "$name" FAIL $((SECONDS - s)) "$detail"; failed=1; fi
}

b=$here/bin
step "numerics device vs host" "$tests" 90 "$b/kernels_numerics_device_test"
step "CUDA small shapes" "$tests" 150 "$b/kernels_cuda_test" --gtest_filter='CudaDiffSmall.*:CudaEntry.*'
step "CUDA raw ABI (production config, streams, threads)" "$tests" 120 "$b/kernels_cuda_test" --gtest_filter='CudaRaw.*'
step "CUDA large shapes (K = 16384, long K, M = 4096)" "$tests" 180 "$b/kernels_cuda_test" --gtest_filter='CudaDiff.*'
step "plugin modules (dlopen)" "$tests" 60 "$b/kernels_plugin_test"
step "benchmark${bench_args[*]:+ ${bench_args[*]}}" "$bench" 150 "$b/cuda_bench" "${bench_args[@]}"
small='CudaDiffSmall.MatchesEmulation:CudaDiffSmall.CorrectionPath:CudaRaw.NanScaleByteIsFlagged:CudaRaw.RefusesSixBitAndF32Scales'
if [[ -z $reason && -z $sanitizer ]]; then reason="compute-sanitizer not found"; fi
step "memcheck" "$san" 120 "$sanitizer" --tool memcheck --error-exitcode 86 "$b/kernels_cuda_test" --gtest_filter="$small"
step "racecheck" "$san" 120 "$sanitizer" --tool racecheck --error-exitcode 86 "$b/kernels_cuda_test" --gtest_filter='CudaDiffSmall.MatchesEmulation'
step "synccheck" "$san" 60 "$sanitizer" --tool synccheck --error-exitcode 86 "$b/kernels_cuda_test" --gtest_filter='CudaDiffSmall.MatchesEmulation'
step "initcheck" "$san" 90 "$sanitizer" --tool initcheck --error-exitcode 86 "$b/kernels_cuda_test" --gtest_filter='CudaRaw.NanScaleByteIsFlagged:CudaDiffSmall.MatchesEmulation'

[[ -s $bench ]] && { echo; echo '## Benchmark'; echo; grep -E '^(Device|\|)' "$bench"; } >>"$summary"
echo "run.sh: $(grep -c '| PASS |' "$summary") passed, $(grep -c '| FAIL |' "$summary") failed, $(grep -c '| SKIPPED |' "$summary") skipped in $((SECONDS - t0))s; summary in $summary"
cat "$summary"
exit $failed
