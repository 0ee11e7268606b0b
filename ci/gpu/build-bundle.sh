#!/usr/bin/env bash
# Builds the carried GPU-check folder: the CUDA test and benchmark binaries and the two kernel plugin
# modules, built HERE from an existing CUDA build directory (no rebuild of what is up to date),
# stripped, checked to need nothing beyond libc, the NVIDIA driver and cuBLAS (GoogleTest,
# RapidCheck, cudart and libstdc++ are linked in), plus ci/gpu/run.sh, which runs them on a bare
# GPU machine. Fails when the folder exceeds 64 MiB (what a device call may carry).
# Usage: ci/gpu/build-bundle.sh [--no-build] [BUILD_DIR [OUT_DIR]]
#   BUILD_DIR defaults to build (configured with CUDA), OUT_DIR to build-gpu-bundle (gitignored).
#   --no-build: collect what BUILD_DIR already holds (CI, after ci/setup.sh built everything).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_now=1
[[ ${1:-} == --no-build ]] && { build_now=0; shift; }
build=${1:-$root/build}
out=${2:-$root/build-gpu-bundle}
limit=$((64 * 1024 * 1024))
bins=(tests/kernels/kernels_cuda_test tests/kernels/kernels_numerics_device_test tests/kernels/kernels_plugin_test
      bench/cuda_bench)
mods=(lib/libw4a8check_cuda.so lib/libw4a8check_emulate.so)

if ! grep -Eq '^CMAKE_CUDA_COMPILER:[A-Z]+=/' "$build/CMakeCache.txt" 2>/dev/null ||
   [[ ! -e $build/lib/libw4a8check_cuda.so && $build_now == 0 ]]; then
  echo "build-bundle: $build has no CUDA build (configure with -DW4A8_CUDA=ON and nvcc)" >&2
  exit 1
fi
if [[ $build_now == 1 ]]; then
  nice cmake --build "$build" -j"$(nproc)" --target kernels_cuda_test kernels_numerics_device_test kernels_plugin_test \
    cuda_bench w4a8check_cuda w4a8check_emulate
fi
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for f in "${bins[@]}"; do cp "$build/$f" "$out/bin/"; done
for f in "${mods[@]}"; do cp "$build/$f" "$out/lib/"; done
strip --strip-unneeded "$out"/bin/* "$out"/lib/*
cp "$root/ci/gpu/run.sh" "$out/run.sh"
cp "$root/ci/gpu/profile.sh" "$out/profile.sh"
chmod +x "$out/run.sh" "$out/profile.sh"

# Only the C library, the driver (loaded by cudart at run time), cuBLAS and, for the plugin modules
# (loaded into a C++ program), libstdc++ may remain.
libs='linux-vdso|libc|libm|libdl|librt|libpthread|ld-linux-x86-64|libgcc_s|libcublas|libcublasLt'
status=0
for f in "$out"/bin/* "$out"/lib/*; do
  pattern="^($libs)\.so"
  [[ $f == */lib/* ]] && pattern="^($libs|libstdc\+\+)\.so"
  for lib in $(ldd "$f" | awk '{print $1}' | sed 's|.*/||'); do
    if ! grep -Eq "$pattern" <<<"$lib"; then
      echo "build-bundle: $(basename "$f") needs $lib" >&2
      status=1
    fi
  done
done
[[ $status == 0 ]] || exit 1

{
  echo "w4a8check GPU bundle: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo '+changes')"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | tail -1 || echo 'nvcc ?')"
  echo "archs: $(grep -E '^CMAKE_CUDA_ARCHITECTURES' "$build/CMakeCache.txt" | cut -d= -f2)"
  (cd "$out" && sha256sum bin/* lib/* run.sh profile.sh)
} >"$out/MANIFEST"
size=$(du -sb "$out" | cut -f1)
echo "build-bundle: $out: $((size / 1024)) KiB ($(ls "$out"/bin | wc -l) binaries, $(ls "$out"/lib | wc -l) modules)"
if ((size > limit)); then
  echo "build-bundle: FAIL: $size bytes > 64 MiB" >&2
  exit 1
fi
