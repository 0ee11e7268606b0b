#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build script (the standard contract): compiles the libraries and the
# fuzz targets with $CC/$CXX and $CFLAGS/$CXXFLAGS, links $LIB_FUZZING_ENGINE, and installs into
# $OUT the binaries fuzz_<target>, their seed corpora (fuzz_<target>_seed_corpus.zip) and
# dictionaries (fuzz_<target>.dict). Needs no CMake, GoogleTest or RapidCheck.
# Source root: $SRC/w4a8check when run by OSS-Fuzz, else the checkout this script lives in.
SRC_ROOT=${W4A8_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
: "${CXX:?}" "${OUT:?}" "${LIB_FUZZING_ENGINE:?}"
CXXFLAGS=${CXXFLAGS:-}
WORK_DIR=${WORK:-/tmp}/w4a8-ossfuzz-build
rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR/obj" "$OUT"
FLAGS="$CXXFLAGS -std=c++20 -I$SRC_ROOT/src -I$SRC_ROOT"

sources=()
for m in core py json safetensors validate gen; do
  for f in "$SRC_ROOT"/src/$m/*.cpp; do sources+=("$f"); done
done
# Compile in parallel (the library is the bulk of the work).
printf '%s\n' "${sources[@]}" | xargs -P "${JOBS:-$(nproc)}" -I{} sh -c \
  'o="$1/obj/$(echo "$2" | sed "s|^$3/||; s|/|_|g").o"; $4 $5 -c "$2" -o "$o"' _ "$WORK_DIR" {} "$SRC_ROOT" "$CXX" "$FLAGS"
ar rcs "$WORK_DIR/libw4a8.a" "$WORK_DIR"/obj/*.o

for t in container marker_json validator_struct; do
  $CXX $FLAGS -c "$SRC_ROOT/fuzz/${t}_fuzzer.cpp" -o "$WORK_DIR/${t}_fuzzer.o"
  $CXX $CXXFLAGS "$WORK_DIR/${t}_fuzzer.o" "$WORK_DIR/libw4a8.a" $LIB_FUZZING_ENGINE -o "$OUT/fuzz_$t"
  (cd "$SRC_ROOT/corpus/$t" && zip -q -j "$OUT/fuzz_${t}_seed_corpus.zip" ./*)
  if [ -f "$SRC_ROOT/corpus/$t.dict" ]; then cp "$SRC_ROOT/corpus/$t.dict" "$OUT/fuzz_$t.dict"; fi
done
echo "built: $(cd "$OUT" && ls fuzz_* | tr '\n' ' ')"
