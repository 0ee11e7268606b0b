#!/usr/bin/env bash
# GPU check of the W4A8 CUDA kernels: collects the carried bundle (ci/gpu/build-bundle.sh) from a CUDA
# build and runs its ci/gpu/run.sh here. On a GPU machine that builds too, this is the whole check;
# where the GPU machine cannot build (no GoogleTest), build the bundle here and run only its run.sh
# there (docs/cuda.md, "GPU check"). Without a GPU every GPU step reports SKIPPED and the exit
# status is 0: CI runs it that way (ctest kernels_gpu_bundle) to keep the bundle and script working.
# Usage: ci/gpu-check.sh [--no-build] [--dry-run] [--full-bench] [BUILD_DIR]
#   BUILD_DIR: a CUDA build (default build); the bundle goes to ${W4A8_GPU_BUNDLE:-BUILD_DIR/../build-gpu-bundle},
#   logs and the summary to ${OUT:-./gpu-out}.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bundle_args=() run_args=()
while [[ ${1:-} == --* ]]; do
  case $1 in
    --no-build) bundle_args+=(--no-build) ;;
    --dry-run | --full-bench) run_args+=("$1") ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
build=${1:-$root/build}
bundle=${W4A8_GPU_BUNDLE:-$root/build-gpu-bundle}
"$root/ci/gpu/build-bundle.sh" "${bundle_args[@]}" "$build" "$bundle"
bash "$bundle/run.sh" "${run_args[@]}"
