#!/usr/bin/env bash
# Installs the build (BUILD, default build/) into a temporary prefix, checks the installed layout,
# then configures, builds and runs examples/consumer/ against it with find_package(w4a8check 0.2).
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
tmp=$(mktemp -d /tmp/w4a8-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$BUILD" --prefix "$prefix" >"$tmp/install.log"
echo "installed $(wc -l <"$tmp/install.log") files into a temporary prefix"
for f in bin/w4a8check lib/w4a8check/libw4a8check_emulate.so include/w4a8check/core/version.hpp \
         include/w4a8check/validate/inspect.hpp include/w4a8check/kernels/w4a8_cuda.h; do
  [ -e "$prefix/$f" ] || { echo "missing from the install: $f"; exit 1; }
done
ls "$prefix"/lib*/cmake/w4a8check/w4a8checkConfig.cmake "$prefix"/lib*/cmake/w4a8check/w4a8checkConfigVersion.cmake >/dev/null
# The installed executable finds its plugin module (../lib/w4a8check/) and runs.
"$prefix/bin/w4a8check" --version
"$prefix/bin/w4a8check" validate --quiet examples/flux-tiny-w4a8.safetensors
# The installed example plugin source, built against the installed header alone, runs under gemm.
cc -std=c11 -O2 -ffp-contract=off -fPIC -shared -fvisibility=hidden -I "$prefix/include/w4a8check/kernels" \
  "$prefix/share/w4a8check/examples/w4a8_example_plugin.c" -o "$tmp/libmyplugin.so" -lm
python3 - "$tmp/x.safetensors" <<'PY'
import json, struct, sys
h = json.dumps({"input": {"dtype": "F32", "shape": [2, 256], "data_offsets": [0, 2048]}}).encode()
open(sys.argv[1], "wb").write(struct.pack("<Q", len(h)) + h + struct.pack("<512f", *[(i % 7) - 3.0 for i in range(512)]))
PY
"$prefix/bin/w4a8check" gemm --checkpoint examples/flux-tiny-w4a8.safetensors --layer double_blocks.0.img_mlp.0 \
  --input "$tmp/x.safetensors" --out "$tmp/o.safetensors" --kernel "$tmp/libmyplugin.so"
# A consumer project; CXX as the build's compiler (the static libraries' C++ runtime).
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
cmake -S examples/consumer -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/consumer" -j"$(nproc)" >"$tmp/build.log" || { cat "$tmp/build.log"; exit 1; }
"$tmp/consumer/consumer" examples/flux-tiny-w4a8.safetensors examples/broken-rank.safetensors
# A request for another minor version must not be satisfied by 0.2.x.
mkdir -p "$tmp/other"
cat >"$tmp/other/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(other LANGUAGES CXX)
find_package(w4a8check 0.3 QUIET)
if(w4a8check_FOUND)
  message(FATAL_ERROR "0.3 requested, an installed 0.2 accepted")
endif()
CM
cmake -S "$tmp/other" -B "$tmp/other-build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
echo "install test passed"
