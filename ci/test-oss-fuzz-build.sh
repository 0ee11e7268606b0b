#!/usr/bin/env bash
# Tests .clusterfuzzlite/build.sh the way OSS-Fuzz / ClusterFuzzLite run it:
#  1. libFuzzer + ASan with OSS-Fuzz's own variables and flags (CFLAGS/CXXFLAGS incl. -stdlib=libc++,
#     LIB_FUZZING_ENGINE, FUZZING_ENGINE, SANITIZER, $SRC/w4a8check, $OUT, $WORK); every installed
#     fuzzer runs over its unzipped seed corpus, then fuzzes OSS_FUZZ_TEST_SECONDS (default 5) with
#     the flags of its .options file and its dictionary, as ClusterFuzz reads them from $OUT.
#  2. libFuzzer + UBSan, OSS-Fuzz's `undefined` flags (project.yaml lists that sanitizer): the same
#     replay and fuzzing, UBSAN_OPTIONS as ClusterFuzz sets them (unsigned overflow silenced: it is
#     there as coverage feedback only, and the hashes wrap on purpose).
#  3. The coverage build (SANITIZER=coverage: clang's source-based profile instead of a sanitizer,
#     what ClusterFuzzLite's coverage reports run): every fuzzer replays its seeds and must leave a
#     profile behind.
#  4. AFL++ (Debian's afl++: afl-clang-fast, libAFLDriver.a), without sanitizers: every fuzzer
#     replays its seeds, then afl-fuzz runs AFL_TEST_SECONDS (default 3) on each.
# Needs clang, libc++-14-dev, libc++abi-14-dev and afl++ (ci/install-deps.sh); without afl++ step 4
# is skipped with a visible message.
source "$(dirname "$0")/help.sh" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/fuzz/common.sh
ROOT=$(pwd)
tmp=$(mktemp -d /tmp/w4a8-ossfuzz-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src" "$tmp/out-afl" "$tmp/work-afl"
ln -s "$ROOT" "$tmp/src/w4a8check"  # the $SRC/<project> layout of the builder image

# $1: the .options file; prints its [libfuzzer] flags with dict resolved against $OUT.
options_flags() {
  [ -f "$1" ] || return 0
  awk -F' *= *' -v out="$(dirname "$1")" '/^\[/{s=($0=="[libfuzzer]")} s && NF==2 && $1!~/^[#;]/ {
      if ($1 == "dict") printf "-dict=%s/%s\n", out, $2; else printf "-%s=%s\n", $1, $2 }' "$1"
}

# OSS-Fuzz's flags per $SANITIZER (its base-builder image's SANITIZER_FLAGS_* and COVERAGE_FLAGS_*).
common_cflags="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
ubsan_checks="array-bounds,bool,builtin,enum,float-divide-by-zero,function,integer-divide-by-zero,null,object-size,\
return,returns-nonnull-attribute,shift,signed-integer-overflow,unreachable,vla-bound,vptr"
declare -A sanitizer_flags=(
  [address]="-fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link"
  [undefined]="-fsanitize=$ubsan_checks,unsigned-integer-overflow -fno-sanitize-recover=$ubsan_checks -fsanitize=fuzzer-no-link"
  [coverage]="-fprofile-instr-generate -fcoverage-mapping -pthread -Wl,--no-as-needed -Wl,-ldl -Wl,-lm -Wno-unused-command-line-argument"
)

# What only an instrumented binary holds: code calling the sanitizer's reports (every libFuzzer binary
# here carries UBSan's runtime, called or not), or the profile runtime.
declare -A instrumented=([address]='call.*<__asan_report_' [undefined]='call.*<__ubsan_handle_[a-z0-9_]*_abort>'
                         [coverage]='<__llvm_profile_write_file>:')

# $1: SANITIZER. Runs .clusterfuzzlite/build.sh into $tmp/out-$1 with libFuzzer as the engine.
build_libfuzzer() {
  mkdir -p "$tmp/out-$1" "$tmp/work-$1"
  (
    export SRC="$tmp/src" OUT="$tmp/out-$1" WORK="$tmp/work-$1" CC=${CC:-clang} CXX=${CXX:-clang++}
    export SANITIZER=$1 FUZZING_ENGINE=libfuzzer ARCHITECTURE=x86_64
    export CFLAGS="$common_cflags ${sanitizer_flags[$1]}"
    export CXXFLAGS="$CFLAGS -stdlib=libc++"
    # Debian's libclang_rt.fuzzer was built against libstdc++ (OSS-Fuzz's image builds it against a
    # private libc++), so here the engine brings libstdc++ along; our code still uses only libc++.
    export LIB_FUZZING_ENGINE="-fsanitize=fuzzer -l:libstdc++.so.6"
    cd "$SRC/w4a8check" && bash .clusterfuzzlite/build.sh
  )
}

# $1: SANITIZER, $2: seconds of fuzzing after the seeds (0: the seeds only). Every installed fuzzer
# replays its unzipped seed corpus, then fuzzes with the flags of its .options file and its
# dictionary, as ClusterFuzz reads them from $OUT.
run_libfuzzer() {
  local out="$tmp/out-$1" work="$tmp/work-$1"
  for t in $(fuzz_targets); do
    f="$out/fuzz_$t"
    for need in "$f" "$out/fuzz_${t}_seed_corpus.zip" "$out/fuzz_$t.options"; do
      [ -e "$need" ] || { echo "missing $need"; exit 1; }
    done
    libs=$(ldd "$f")
    if [[ $libs == *libc++.so* ]]; then echo "fuzz_$t links libc++"; else echo "fuzz_$t does not link libc++"; exit 1; fi
    # Instrumented for this build (a flag lost on the way would build a plain fuzzer). The whole
    # disassembly first: grep -q quitting early would fail the pipe under pipefail.
    grep -qE "${instrumented[$1]}" <<<"$(objdump -d --no-show-raw-insn "$f")" ||
      { echo "fuzz_$t ($1): no ${instrumented[$1]} in its code: not instrumented"; exit 1; }
    mkdir -p "$work/seeds-$t" "$work/corpus-$t"
    unzip -q -o "$out/fuzz_${t}_seed_corpus.zip" -d "$work/seeds-$t"
    mapfile -t flags < <(options_flags "$out/fuzz_$t.options")
    echo "== fuzz_$t ($1): $(ls "$work/seeds-$t" | wc -l) seeds, then ${2}s (${flags[*]})"
    LLVM_PROFILE_FILE="$work/$t-%p.profraw" "$f" -runs=0 "${flags[@]}" -artifact_prefix="$work/" "$work/seeds-$t" \
      >"$work/$t-seeds.log" 2>&1 || { tail -n 40 "$work/$t-seeds.log"; exit 1; }
    [ "$2" -gt 0 ] || continue
    "$f" -max_total_time="$2" -rss_limit_mb=2560 -timeout=25 "${flags[@]}" -artifact_prefix="$work/" \
      "$work/corpus-$t" "$work/seeds-$t" >"$work/$t-fuzz.log" 2>&1 || { tail -n 40 "$work/$t-fuzz.log"; exit 1; }
    grep -E "DONE|Done" "$work/$t-fuzz.log" | tail -1
  done
}

echo "== libFuzzer + ASan, OSS-Fuzz flags with -stdlib=libc++"
build_libfuzzer address
(export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
 run_libfuzzer address "${OSS_FUZZ_TEST_SECONDS:-5}")

echo "== libFuzzer + UBSan, OSS-Fuzz's undefined flags with -stdlib=libc++"
build_libfuzzer undefined
(export UBSAN_OPTIONS=${UBSAN_OPTIONS:-silence_unsigned_overflow=1:halt_on_error=1:print_stacktrace=1}
 run_libfuzzer undefined "${OSS_FUZZ_TEST_SECONDS:-5}")

echo "== coverage build (source-based profiles), seeds replayed"
build_libfuzzer coverage
run_libfuzzer coverage 0
for t in $(fuzz_targets); do
  n=$(find "$tmp/work-coverage" -name "$t-*.profraw" -size +0 | wc -l)
  [ "$n" -gt 0 ] || { echo "fuzz_$t (coverage) left no profile"; exit 1; }
  echo "fuzz_$t (coverage): $n profile(s) written"
done

if ! command -v afl-clang-fast++ >/dev/null || [ ! -f /usr/lib/afl/libAFLDriver.a ]; then
  echo "== AFL++ SKIPPED: afl++ is not installed (ci/install-deps.sh installs it)"
  echo "OSS-Fuzz build test passed (libFuzzer: ASan, UBSan, coverage)"
  exit 0
fi
echo "== AFL++ build (afl-clang-fast, libAFLDriver.a, libc++), seeds replayed"
(
  export SRC="$tmp/src" OUT="$tmp/out-afl" WORK="$tmp/work-afl" CC=afl-clang-fast CXX=afl-clang-fast++
  export SANITIZER=none FUZZING_ENGINE=afl ARCHITECTURE=x86_64 AFL_QUIET=1
  export CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION"
  export CXXFLAGS="$CFLAGS -stdlib=libc++"
  export LIB_FUZZING_ENGINE=/usr/lib/afl/libAFLDriver.a
  cd "$SRC/w4a8check" && bash .clusterfuzzlite/build.sh
)
export AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 AFL_NO_UI=1 AFL_NO_AFFINITY=1
unset ASAN_OPTIONS UBSAN_OPTIONS  # no sanitizers in this build; afl-fuzz rejects ASAN_OPTIONS without symbolize=0
for t in $(fuzz_targets); do
  f="$tmp/out-afl/fuzz_$t"
  mkdir -p "$tmp/work-afl/seeds-$t"
  unzip -q -o "$tmp/out-afl/fuzz_${t}_seed_corpus.zip" -d "$tmp/work-afl/seeds-$t"
  # The driver runs each file named on its command line once.
  "$f" "$tmp/work-afl/seeds-$t"/* >"$tmp/work-afl/$t-replay.log" 2>&1 || { tail -n 40 "$tmp/work-afl/$t-replay.log"; exit 1; }
  dict=()
  [ -f "$tmp/out-afl/fuzz_$t.dict" ] && dict=(-x "$tmp/out-afl/fuzz_$t.dict")
  timeout $(( ${AFL_TEST_SECONDS:-3} + 30 )) afl-fuzz -V "${AFL_TEST_SECONDS:-3}" -i "$tmp/work-afl/seeds-$t" \
    -o "$tmp/work-afl/findings-$t" "${dict[@]}" -- "$f" >"$tmp/work-afl/$t-afl.log" 2>&1 || { tail -n 40 "$tmp/work-afl/$t-afl.log"; exit 1; }
  stats="$tmp/work-afl/findings-$t/default/fuzzer_stats"
  crashes=$(awk -F' *: *' '$1=="saved_crashes"{print $2}' "$stats")
  echo "fuzz_$t (AFL++): $(ls "$tmp/work-afl/seeds-$t" | wc -l) seeds replayed; afl-fuzz $(awk -F' *: *' '$1=="execs_done"{print $2}' "$stats") execs, $crashes crashes"
  [ "$crashes" = 0 ] || { echo "AFL++ found a crash in fuzz_$t"; exit 1; }
done
echo "OSS-Fuzz build test passed (libFuzzer with libc++: ASan, UBSan, coverage; AFL++)"
