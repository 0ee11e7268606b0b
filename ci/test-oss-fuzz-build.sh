#!/usr/bin/env bash
# Tests ci/oss-fuzz/build.sh the way OSS-Fuzz runs it for libFuzzer + ASan: exports CC, CXX,
# CFLAGS, CXXFLAGS, LIB_FUZZING_ENGINE and OUT (OSS-Fuzz's flags, minus -stdlib=libc++, which its
# image provides and this machine may not), builds, then runs every installed fuzzer over its
# unzipped seed corpus and for a few seconds of fuzzing with its dictionary.
set -euo pipefail
cd "$(dirname "$0")/.."
export CC=${CC:-clang} CXX=${CXX:-clang++}
export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION \
-fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
export CXXFLAGS="$CFLAGS"
export LIB_FUZZING_ENGINE="-fsanitize=fuzzer"
OUT=$(mktemp -d /tmp/w4a8-ossfuzz-out-XXXXXX)
export OUT WORK=$(mktemp -d /tmp/w4a8-ossfuzz-work-XXXXXX)
trap 'rm -rf "$OUT" "$WORK"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
bash ci/oss-fuzz/build.sh
for t in container marker_json validator_struct; do
  f="$OUT/fuzz_$t"
  [ -x "$f" ] || { echo "missing $f"; exit 1; }
  [ -f "$OUT/fuzz_${t}_seed_corpus.zip" ] || { echo "missing seed corpus for $t"; exit 1; }
  mkdir -p "$WORK/seeds-$t"
  unzip -q -o "$OUT/fuzz_${t}_seed_corpus.zip" -d "$WORK/seeds-$t"
  dict=()
  [ -f "$OUT/fuzz_$t.dict" ] && dict=(-dict="$OUT/fuzz_$t.dict")
  echo "== $f: seeds + ${OSS_FUZZ_TEST_SECONDS:-5}s"
  "$f" -runs=0 -artifact_prefix="$WORK/" "$WORK/seeds-$t" >"$WORK/$t-seeds.log" 2>&1 || { tail -n 40 "$WORK/$t-seeds.log"; exit 1; }
  mkdir -p "$WORK/corpus-$t"
  "$f" -max_total_time="${OSS_FUZZ_TEST_SECONDS:-5}" -rss_limit_mb=2048 -artifact_prefix="$WORK/" "${dict[@]}" "$WORK/corpus-$t" "$WORK/seeds-$t" \
    >"$WORK/$t-fuzz.log" 2>&1 || { tail -n 40 "$WORK/$t-fuzz.log"; exit 1; }
  grep -E "DONE|Done" "$WORK/$t-fuzz.log" | tail -1
done
echo "OSS-Fuzz build test passed"
