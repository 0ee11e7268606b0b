#!/usr/bin/env bash
# Fails when a CUDA kernel spills registers. Reads the ptxas -v logs that kernels/ptxas_log.sh keeps
# per object (build-dir/ptxas/*.ptxas.log) and prints a resource table.
# Usage: ci/check-ptxas.sh [LOG_DIR]   (default: build-cuda/ptxas)
#        ci/check-ptxas.sh --no-fma NVCC SOURCE_ROOT
#   The second form compiles the kernels to PTX and fails if any float multiply-add was contracted
#   into an fma: the kernels' rounding must be the host emulation's, one IEEE op at a time.
set -euo pipefail
if [[ ${1:-} == --no-fma ]]; then
  nvcc=$2 root=$3 tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  status=0
  for f in w4a8_gemm act_quant correction; do
    "$nvcc" -std=c++17 -arch=sm_80 -I"$root" -I"$root/src" --expt-relaxed-constexpr -ptx "$root/kernels/$f.cu" -o "$tmp/$f.ptx"
    n=$(grep -c 'fma\.rn\.f32' "$tmp/$f.ptx" || true)
    echo "check-ptxas: $f.cu: $n fma.rn.f32 in PTX"
    [[ $n == 0 ]] || status=1
  done
  grep -q 'mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32' "$tmp/w4a8_gemm.ptx" || { echo "check-ptxas: no s8 mma in w4a8_gemm.ptx" >&2; status=1; }
  # The 0.2 design's instructions: the register-table decode (prmt) and the cp.async pipeline.
  for op in prmt.b32 cp.async.cg.shared.global cp.async.wait_group; do
    grep -q "$op" "$tmp/w4a8_gemm.ptx" || { echo "check-ptxas: no $op in w4a8_gemm.ptx" >&2; status=1; }
  done
  exit $status
fi
log_dir=${1:-build-cuda/ptxas}
shopt -s nullglob
logs=("$log_dir"/*.ptxas.log)
if ((${#logs[@]} == 0)); then
  echo "check-ptxas: no ptxas logs in $log_dir (build w4a8_kernels_cuda first)" >&2
  exit 1
fi
# ptxas prints, per entry and arch: "Compiling entry function 'NAME' for 'sm_XX'", then
# "N bytes stack frame, S bytes spill stores, L bytes spill loads", then "Used R registers ...".
awk '
  /Compiling entry function/ { match($0, /entry function \x27[^\x27]+\x27/); fn = substr($0, RSTART + 16, RLENGTH - 17);
                               match($0, /for \x27[^\x27]+\x27/); arch = substr($0, RSTART + 5, RLENGTH - 6); next }
  /Function properties for/ { what = $0; sub(/.*Function properties for /, "", what); next }
  /bytes spill stores/ { for (i = 1; i <= NF; ++i) { if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "stores,") st = $i;
                                                     if ($(i+1) == "bytes" && $(i+2) == "spill" && $(i+3) == "loads") ld = $i }
                         # Any function (entry or called device function) that spills fails the check.
                         if (st + 0 > 0 || ld + 0 > 0) { bad += 1; printf "SPILL %s (%s): %s\n", what, arch, $0 } next }
  /Used [0-9]+ registers/ { match($0, /Used [0-9]+ registers/); regs = substr($0, RSTART + 5, RLENGTH - 15);
                            printf "%-8s %5s regs  spill st/ld %s/%s  %s\n", arch, regs, st, ld, fn;
                            n += 1; st = ld = "?" }
  END { printf "check-ptxas: %d kernel builds, %d spilling functions\n", n, bad; if (n == 0 || bad > 0) exit 1 }
' "${logs[@]}"
for arch in sm_80 sm_89 sm_90a; do
  if ! grep -q "for '$arch'" "${logs[@]}"; then
    echo "check-ptxas: no kernel was compiled for $arch" >&2
    exit 1
  fi
done
