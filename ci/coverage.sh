#!/usr/bin/env bash
# Clang source-based coverage of src/validate, src/safetensors, src/json and src/py reached by the
# property suite (props_validator), the generator tests (incl. the Python differential, 1000 cases,
# which also reads the files through inspect_paths) and the committed corpus replays
# (fuzz_<t>_replay over corpus/<t>/, every target of fuzz/targets.txt). Prints llvm-cov's
# line/branch/region summary per file and in total; the HTML report goes to $COV_BUILD/coverage-html/.
#   ci/coverage.sh            (build-coverage/, W4A8_PROP_SCALE=1)
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/fuzz/common.sh
BUILD=${COV_BUILD:-build-coverage}
JOBS=${JOBS:-$(nproc)}
PROFDATA=${LLVM_PROFDATA:-$(command -v llvm-profdata || command -v llvm-profdata-14)}
COV=${LLVM_COV:-$(command -v llvm-cov || command -v llvm-cov-14)}
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Debug -DW4A8_COVERAGE=ON -DW4A8_CUDA=OFF \
  -DW4A8_BENCH=OFF >/dev/null
bins=(props/props_validator tests/gen/gen_reach_test tests/gen/gen_differential_test)
for t in $(fuzz_targets); do bins+=("fuzz/fuzz_${t}_replay"); done
targets=()
for b in "${bins[@]}"; do targets+=("$(basename "$b")"); done
cmake --build "$BUILD" -j"$JOBS" --target "${targets[@]}"
prof="$BUILD/coverage-profiles"
rm -rf "$prof" && mkdir -p "$prof"
export LLVM_PROFILE_FILE="$prof/%p-%m.profraw"
"$BUILD/props/props_validator" --gtest_brief=1 >/dev/null
"$BUILD/tests/gen/gen_reach_test" --gtest_brief=1 >/dev/null
W4A8_DIFF_CASES=${W4A8_DIFF_CASES:-1000} "$BUILD/tests/gen/gen_differential_test" --gtest_brief=1 >/dev/null
for t in $(fuzz_targets); do
  "$BUILD/fuzz/fuzz_${t}_replay" -quiet "corpus/$t" >/dev/null
  # Optionally also a corpus grown by ci/fuzz-long.sh (FUZZ_CORPUS_DIR=fuzz-corpus ci/coverage.sh).
  if [ -n "${FUZZ_CORPUS_DIR:-}" ] && [ -d "$FUZZ_CORPUS_DIR/$t" ]; then
    "$BUILD/fuzz/fuzz_${t}_replay" -quiet "$FUZZ_CORPUS_DIR/$t" >/dev/null
  fi
done
"$PROFDATA" merge -sparse "$prof"/*.profraw -o "$prof/merged.profdata"
objs=()
for b in "${bins[@]}"; do objs+=(-object "$BUILD/$b"); done
"$COV" report "${objs[@]:1}" -instr-profile="$prof/merged.profdata" src/validate src/safetensors src/json src/py
"$COV" show "${objs[@]:1}" -instr-profile="$prof/merged.profdata" -format=html -output-dir="$BUILD/coverage-html" \
  src/validate src/safetensors src/json src/py >/dev/null
echo "HTML report: $BUILD/coverage-html/index.html"
