#!/usr/bin/env bash
# SASS proxies of the W4A8 GEMM kernels for sm_90a (H100 / H200), measured without a GPU: compiles
# kernels/w4a8_gemm.cu to a cubin, disassembles it with nvdisasm, and prints one markdown row per
# kernel variant (ci/sass_proxies.py): registers, shared memory, static instructions of one main-loop
# iteration per decoded weight (all of it, and the decode + MMA part alone), instruction mix,
# resident blocks per SM and bytes in flight per SM for the decode shape M <= 16, N = K = 8192,
# G = 16 on 132 SMs (the launch plan's split-K included).
# Usage: ci/sass-proxies.sh [--check] [--old REV] NVCC SOURCE_ROOT
#   --check   fail unless the small-M kernel (G >= 16, 16-byte code copies) stays within the bounds
#             docs/cuda.md records: <= 3.0 instructions per weight, >= 2 blocks and >= 64 KiB in
#             flight per SM, no local memory in the loop.
#   --old REV also measures the kernel of git revision REV (0.1's: 55bd3f9) the same way.
# Exits 77 (ctest: skipped, reported as such) when nvdisasm is not installed; ci/install-deps.sh
# installs it (PyPI nvidia-cuda-nvdisasm) wherever nvcc exists.
set -euo pipefail
check=0 old=
while [[ ${1:-} == --* ]]; do
  case $1 in
    --check) check=1; shift ;;
    --old) old=$2; shift 2 ;;
    *) echo "sass-proxies: unknown option $1" >&2; exit 2 ;;
  esac
done
nvcc=$1 root=$(cd "$2" && pwd)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

find_nvdisasm() {
  local c
  for c in "${NVDISASM:-}" "$(command -v nvdisasm || true)" "$(dirname "$nvcc")/nvdisasm" \
           "$HOME/.cache/w4a8check/nvdisasm/nvidia/cu13/bin/nvdisasm"; do
    [[ -n $c && -x $c ]] && { echo "$c"; return; }
  done
  python3 - <<'EOF' 2>/dev/null || true
import glob, os, site, sys
for d in site.getsitepackages() + [site.getusersitepackages()]:
    for p in glob.glob(os.path.join(d, 'nvidia', '*', 'bin', 'nvdisasm')):
        print(p); sys.exit(0)
EOF
}
nvdisasm=$(find_nvdisasm | head -1)
if [[ -z $nvdisasm ]]; then
  echo "sass-proxies: SKIPPED: nvdisasm not found (pip install nvidia-cuda-nvdisasm, or set NVDISASM)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Launch-plan facts of the decode shape, from the project's own headers: per variant, the block
# shape, its dynamic shared memory for G = 16, global bytes one k tile requests, and the split-K
# factor for 1..8 resident blocks per SM on 132 SMs.
cat >"$tmp/shapes.cpp" <<'EOF'
#include <cstdio>
#include "kernels/problem.cpp"
using namespace w4a8::kern;
int main() {
  for (TileKind kind : {TileKind::kSmallM, TileKind::kLargeM}) {
    w4a8_problem p{};
    p.m = kind == TileKind::kSmallM ? 16 : 4096, p.n = 8192, p.k = 8192, p.group_size = 16;
    const TileConfig c = tile_config(kind);
    const GemmPlan plan = plan_gemm(p, DeviceShape{132, 1});
    const int stage_global = c.a_bytes() + c.code_bytes() + c.bn * 4 * plan.scale_words;
    std::printf("%d %d %d %d %d %d %d %d %lld", int(kind), c.bm, c.bn, c.bk, c.threads(), c.stages, plan.smem_bytes,
                stage_global, plan.tiles_m * plan.tiles_n);
    for (int occ = 1; occ <= 8; ++occ) std::printf(" %d", plan_gemm(p, DeviceShape{132, occ}).splits);
    std::printf("\n");
  }
}
EOF
g++ -std=c++20 -O1 -I"$root" -I"$root/src" "$tmp/shapes.cpp" -o "$tmp/shapes"
"$tmp/shapes" >"$tmp/shapes.txt"

measure() {  # measure SRC_ROOT LABEL_PREFIX
  local src=$1 prefix=$2
  "$nvcc" -std=c++17 -arch=sm_90a -cubin -O3 -I"$src" -I"$src/src" --expt-relaxed-constexpr -Xptxas=-v \
    "$src/kernels/w4a8_gemm.cu" -o "$tmp/k.cubin" >"$tmp/ptxas.log" 2>&1 || { cat "$tmp/ptxas.log" >&2; return 1; }
  "$nvdisasm" -c "$tmp/k.cubin" >"$tmp/k.sass"
}

echo "| kernel (sm_90a) | regs | smem B | loop instr | weights/thread/iter | instr/weight | decode+MMA instr/weight | PRMT | LDS | LDG/LDGSTS | IMMA | STL/LDL | blocks/SM | bytes in flight/SM |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
status=0
if [[ -n $old ]]; then
  mkdir -p "$tmp/old"
  git -C "$root" archive "$old" kernels src/core src/gemm | tar -x -C "$tmp/old"
  measure "$tmp/old" old
  # 0.1's kernel: 16 x 64 x 128 (M <= 32) and 128 x 128 x 64 tiles, synchronous loads of one k tile
  # (x_q 16 B, codes 8 B, scales 1 B per thread), grid N / 64 = 128 blocks for the decode shape.
  python3 "$here/sass_proxies.py" "$tmp/k.sass" "$tmp/ptxas.log" --kernel 'w4a8_gemm_kernelILNS0_8TileKindE0EE' \
    --label "0.1 small-M (16x64x128)" --bn 64 --bk 128 --threads 128 --stages 1 --smem 0 \
    --stage-bytes $((16 * 128 + 64 * 64 + 64 * 8)) --grid-blocks 128 || status=1
  python3 "$here/sass_proxies.py" "$tmp/k.sass" "$tmp/ptxas.log" --kernel 'w4a8_gemm_kernelILNS0_8TileKindE1EE' \
    --label "0.1 large-M (128x128x64)" --bn 128 --bk 64 --threads 256 --stages 1 --smem 0 \
    --stage-bytes $((128 * 64 + 128 * 32 + 128 * 4)) --grid-blocks $((32 * 64)) || status=1
fi
measure "$root" new
while read -r kind bm bn bk threads stages smem stage_bytes tiles s1 s2 s3 s4 s5 s6 s7 s8; do
  splits=($s1 $s2 $s3 $s4 $s5 $s6 $s7 $s8)
  name=$([[ $kind == 0 ]] && echo small-M || echo large-M)
  for variant in "Lb0ELb1:G>=16, 16-byte codes" "Lb0ELb0:G>=16, 8-byte codes" "Lb1ELb0:G<16"; do
    tag=${variant%%:*} what=${variant#*:}
    # Occupancy first (the split count depends on it), then the row with the planned grid.
    occ=$(python3 "$here/sass_proxies.py" "$tmp/k.sass" "$tmp/ptxas.log" --kernel "TileKindE${kind}E${tag}E" \
            --bn "$bn" --bk "$bk" --threads "$threads" --stages "$stages" --smem "$smem" --stage-bytes "$stage_bytes" \
            --grid-blocks 1000000 --pipelined --print-occupancy)
    grid=$((tiles * ${splits[$((occ > 8 ? 7 : occ - 1))]}))
    args=(--check-max-ipw 3.0 --check-min-bps 2 --check-min-bytes 65536)
    [[ $check == 1 && $kind == 0 && $tag == Lb0ELb1 ]] || args=()
    python3 "$here/sass_proxies.py" "$tmp/k.sass" "$tmp/ptxas.log" --kernel "TileKindE${kind}E${tag}E" \
      --label "0.2 $name ${bm}x${bn} (k ${bk}/stage), $what" --bn "$bn" --bk "$bk" --threads "$threads" --stages "$stages" \
      --smem "$smem" --stage-bytes "$stage_bytes" --grid-blocks "$grid" --pipelined "${args[@]}" || status=1
  done
done <"$tmp/shapes.txt"
exit $status
