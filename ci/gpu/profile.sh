#!/usr/bin/env bash
# The second kind of device call: the whole GPU check with the full benchmark (run.sh --full-bench),
# then Nsight Compute on the fused layer's kernels of the benchmark's first W4A8 calls (M = 1,
# N = K = 8192): duration, DRAM and SM throughput, occupancy and launch statistics per kernel, to
# find where the time goes. Writes run.sh's files plus ncu.log under ${OUT:-.} (7 files).
# Usage: bash build-gpu-bundle/profile.sh
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
OUT=$out bash "$here/run.sh" --full-bench
echo "run.sh exit $?"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
if [[ ! -x $ncu ]]; then echo "profile.sh: ncu not found" | tee "$out/ncu.log"; exit 1; fi
timeout 150 "$ncu" -k regex:'w4a8|act_quant|nan_scan' --launch-count 9 --section SpeedOfLight --section LaunchStats \
  --section Occupancy --section MemoryWorkloadAnalysis "$here/bin/cuda_bench" --quick >"$out/ncu.log" 2>&1
echo "ncu exit $?"
grep -E '^\s+(w4a8|act_quant|nan_scan|void)|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Achieved Occupancy|Registers Per|Grid Size|Block Size|Theoretical Occupancy' \
  "$out/ncu.log" | head -120
