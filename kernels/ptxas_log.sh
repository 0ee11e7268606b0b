#!/usr/bin/env bash
# CUDA compiler launcher: runs the compile command unchanged, echoes its stderr (ptxas -v resource
# usage lands in the build log) and keeps a copy per object under LOG_DIR for ci/check-ptxas.sh.
# Usage (CMake CUDA_COMPILER_LAUNCHER): ptxas_log.sh LOG_DIR nvcc ARGS...
set -uo pipefail
log_dir=$1
shift
mkdir -p "$log_dir"
obj=unknown
prev=
for a in "$@"; do
  if [[ $prev == -o ]]; then obj=$(basename "$a"); fi
  prev=$a
done
"$@" 2> >(tee "$log_dir/$obj.ptxas.log" >&2)
rc=$?
wait
exit $rc
