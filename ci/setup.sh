#!/usr/bin/env bash
# The README's first command: install dependencies, build everything into build/, and run the main
# job (w4a8check validate) on the bundled example checkpoints, then the README's worked example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
# nvcc is often installed outside PATH (/usr/local/cuda/bin).
[ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null && export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
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
