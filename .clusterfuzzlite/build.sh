#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script (the standard contract): compiles with $CC/$CXX and
# $CFLAGS/$CXXFLAGS (libc++ included, as OSS-Fuzz passes it), links $LIB_FUZZING_ENGINE, and
# installs into $OUT, for every target N of fuzz/targets.txt: fuzz_N, fuzz_N_seed_corpus.zip,
# fuzz_N.dict and fuzz_N.options. Needs no CMake, GoogleTest or RapidCheck.
# Only the code under test (src/json, src/py, src/safetensors, src/validate, src/plugin/elf_check.cpp) gets coverage
# instrumentation: the harness (src/core, src/gen, fuzz/, the writer) is compiled without
# -fsanitize=fuzzer-no-link (and, under AFL++, with a deny-all list), so the engine's feedback is
# about the validator, not about the generator feeding it.
# Source root: $SRC/w4a8check as OSS-Fuzz lays it out, else the checkout holding this script.
set -eu  # also when run as "bash build.sh" (the shebang flags apply only to ./build.sh)
SRC_ROOT=${W4A8_SRC:-${SRC:+$SRC/w4a8check}}
if [ -z "$SRC_ROOT" ] || [ ! -f "$SRC_ROOT/fuzz/targets.txt" ]; then
  SRC_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fi
: "${CXX:?}" "${OUT:?}" "${LIB_FUZZING_ENGINE:?}"
CXXFLAGS=${CXXFLAGS:-}
ENGINE=${FUZZING_ENGINE:-libfuzzer}
WORK_DIR=${WORK:-/tmp}/w4a8-ossfuzz-build
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR/obj" "$OUT"

base="-std=c++20 -I$SRC_ROOT/src -I$SRC_ROOT"
under_test_flags="$CXXFLAGS $base"
if [[ " $CXXFLAGS " == *" -fsanitize=fuzzer-no-link "* ]]; then
  under_test_flags+=" -fsanitize-coverage-ignorelist=$SRC_ROOT/fuzz/coverage_ignore.txt"
fi
harness_flags="${CXXFLAGS//-fsanitize=fuzzer-no-link/} $base"
echo "src: *" >"$WORK_DIR/deny_all.txt"  # AFL++ instruments in its compiler: deny the harness there

compile() {  # $1 flags, $2 extra environment assignment, then sources
  local flags=$1 env=$2
  shift 2
  printf '%s\n' "$@" | xargs -P "${JOBS:-$(nproc)}" -I{} sh -c \
    'o="$1/obj/$(echo "$2" | sed "s|^$3/||; s|/|_|g").o"; env $6 $4 $5 -c "$2" -o "$o"' \
    _ "$WORK_DIR" {} "$SRC_ROOT" "$CXX" "$flags" "$env"
}
under_test=() harness=()
for m in py json safetensors validate; do
  for f in "$SRC_ROOT"/src/$m/*.cpp; do
    case $f in */writer.cpp | */file.cpp) harness+=("$f") ;; *) under_test+=("$f") ;; esac
  done
done
under_test+=("$SRC_ROOT/src/plugin/elf_check.cpp")  # the plugin preflight (plugin_elf), alone of src/plugin
for m in core gen; do harness+=("$SRC_ROOT"/src/$m/*.cpp); done
harness+=("$SRC_ROOT/fuzz/targets.cpp")
if [ "$ENGINE" = libfuzzer ]; then harness+=("$SRC_ROOT/fuzz/container_mutator.cpp" "$SRC_ROOT/fuzz/container_mutator_tree.cpp"); fi
compile "$under_test_flags" "W4A8_NONE=1" "${under_test[@]}"
compile "$harness_flags" "AFL_LLVM_DENYLIST=$WORK_DIR/deny_all.txt" "${harness[@]}"
ar rcs "$WORK_DIR/libw4a8.a" "$WORK_DIR"/obj/*.o
# fuzz_validator_struct's bytes are generator choices the validator never compares with anything,
# so under libFuzzer it links its own copy of the code under test without comparison tracing (as
# fuzz/CMakeLists.txt does): the hooks only cost it time. Objects before the archive on the link
# line, so the traced members are never pulled in.
nocmp_objs=()
if [[ " $CXXFLAGS " == *" -fsanitize=fuzzer-no-link "* ]]; then
  mkdir -p "$WORK_DIR/nocmp/obj"
  (WORK_DIR=$WORK_DIR/nocmp compile "$under_test_flags -fno-sanitize-coverage=trace-cmp" "W4A8_NONE=1" "${under_test[@]}")
  nocmp_objs=("$WORK_DIR"/nocmp/obj/*.o)
fi

for t in $(grep -E '^[a-z_0-9]+$' "$SRC_ROOT/fuzz/targets.txt"); do
  srcs=("$SRC_ROOT/fuzz/entry.cpp")
  # libFuzzer's custom mutator hooks, where a target has them (AFL++ has no LLVMFuzzerMutate).
  if [ "$ENGINE" = libfuzzer ] && [ -f "$SRC_ROOT/fuzz/${t}_mutator_entry.cpp" ]; then
    srcs+=("$SRC_ROOT/fuzz/${t}_mutator_entry.cpp")
  fi
  objs=()
  for s in "${srcs[@]}"; do
    o="$WORK_DIR/${t}_$(basename "$s" .cpp).o"
    AFL_LLVM_DENYLIST="$WORK_DIR/deny_all.txt" $CXX $harness_flags -DW4A8_FUZZ_TARGET="\"$t\"" -c "$s" -o "$o"
    objs+=("$o")
  done
  [ "$t" = validator_struct ] && objs+=(${nocmp_objs[@]+"${nocmp_objs[@]}"})
  $CXX $CXXFLAGS "${objs[@]}" "$WORK_DIR/libw4a8.a" $LIB_FUZZING_ENGINE -o "$OUT/fuzz_$t"
  rm -f "$OUT/fuzz_${t}_seed_corpus.zip"
  (cd "$SRC_ROOT/corpus/$t" && zip -q -j "$OUT/fuzz_${t}_seed_corpus.zip" ./*)
  [ -f "$SRC_ROOT/corpus/$t.dict" ] && cp "$SRC_ROOT/corpus/$t.dict" "$OUT/fuzz_$t.dict"
  [ -f "$SRC_ROOT/corpus/$t.options" ] && cp "$SRC_ROOT/corpus/$t.options" "$OUT/fuzz_$t.options"
done
echo "built: $(cd "$OUT" && ls | tr '\n' ' ')"
