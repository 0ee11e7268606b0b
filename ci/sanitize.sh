#!/usr/bin/env bash
# Builds every target with clang under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/,
# Debug at -O1) and runs every test. It is also CI's clang build: with W4A8_WERROR=ON (CI) any
# clang warning fails it, so g++ (ci/setup.sh) and clang both keep the whole tree warning-free.
# With clang the build includes the libFuzzer targets (-DW4A8_FUZZ=ON; the code under test carries
# coverage hooks, which the ASan runtime answers when no fuzzer is linked), so ci/fuzz-smoke.sh
# fuzzes from this tree instead of compiling the library a second time (about 3 minutes of CI);
# fuzz_validator_struct there links the traced libraries, not its untraced copy (W4A8_FUZZ_NOCMP).
# -gline-tables-only: file:line in sanitizer reports is all CI reads; full -g made every compile
# about 25 % slower (39 -> 31 s for tests/gemm/reference_test.cpp). Override with ASAN_DEBUG_FLAGS.
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${ASAN_BUILD_DIR:-build-asan}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CC=${CC:-clang} CXX=${CXX:-clang++}
fuzz=OFF
[[ $("$CXX" --version) == *clang* ]] && fuzz=ON
debug=${ASAN_DEBUG_FLAGS:--O1 -gline-tables-only}
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DW4A8_SANITIZE=ON -DW4A8_FUZZ=$fuzz -DW4A8_FUZZ_NOCMP=OFF \
  -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF -DCMAKE_CXX_FLAGS_DEBUG="$debug" -DCMAKE_C_FLAGS_DEBUG="$debug" \
  -DW4A8_WERROR="${W4A8_WERROR:-OFF}" >/dev/null
cmake --build "$BUILD" -j"$(nproc)"
ctest --test-dir "$BUILD" --output-on-failure -j"$(nproc)" --timeout 600
