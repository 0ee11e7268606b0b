#!/usr/bin/env bash
# The README's first command: install dependencies, build everything into build/, and run the main
# job (w4a8check validate) on the bundled example checkpoints, then the README's worked example.
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# nvcc is often installed outside PATH (/usr/local/cuda/bin).
[ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null && export PATH=/usr/local/cuda/bin:$PATH
# -Werror when CI=true (W4A8_WERROR overrides): CI keeps the tree warning-free; other compilers
# than the ones CI uses (g++ 12, clang 14) may warn where these do not, so it is off for users.
werror=${W4A8_WERROR:-$([ "${CI:-}" = true ] && echo ON || echo OFF)}
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DW4A8_WERROR="$werror"
cmake --build build -j"$(nproc)"
echo
echo "== build/w4a8check validate examples/flux-tiny-w4a8.safetensors"
./build/w4a8check validate examples/flux-tiny-w4a8.safetensors
echo
echo "== build/w4a8check validate --strict --json examples/flux-tiny-w4a8.safetensors"
./build/w4a8check validate --strict --json examples/flux-tiny-w4a8.safetensors
echo
echo "== build/w4a8check validate examples/broken-rank.safetensors   (expected: rejected, exit 1)"
rc=0; ./build/w4a8check validate examples/broken-rank.safetensors || rc=$?
[ "$rc" -eq 1 ] || { echo "expected exit status 1, got $rc"; exit 1; }
echo
echo "== the README's worked example: float checkpoint -> quantize -> validate --strict -> gemm"
python3 examples/worked_example_test.py README.md build
