#!/usr/bin/env bash
# clang-tidy (.clang-tidy: bugprone-*, performance-*, findings are errors) on the C++ files a change
# touches, with the build's compile_commands.json (TIDY_BUILD, default build/).
#   ci/tidy.sh [BASE]        files changed between BASE and HEAD (default HEAD^1: on main, the last
#                            landing, whatever it merged)
#   ci/tidy.sh --all [DIR]   every C++ source under DIR (default src/)
# A changed header is checked through one translation unit that includes it (diagnostics inside
# the header are reported: HeaderFilterRegex). Prints the time per file; exits 1 on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${TIDY_BUILD:-build}
JOBS=${JOBS:-$(nproc)}
TIDY=${CLANG_TIDY:-$(command -v clang-tidy-14 || command -v clang-tidy || true)}
[ -n "$TIDY" ] || { echo "tidy: clang-tidy not found (apt-get install clang-tidy)"; exit 2; }
db=$BUILD/compile_commands.json
[ -f "$db" ] || { echo "tidy: $db missing (configure the build first)"; exit 2; }

# Translation units the build compiles (C++ only; CUDA files are compiled by nvcc).
mapfile -t units < <(python3 - "$db" <<'PY'
import json, os, sys
root = os.getcwd()
for e in json.load(open(sys.argv[1])):
    f = os.path.relpath(os.path.join(e["directory"], e["file"]), root)
    if f.endswith((".cpp", ".cc")) and not f.startswith(".."):
        print(f)
PY
)
mapfile -t units < <(printf '%s\n' "${units[@]}" | sort -u)

if [ "${1:-}" = "--all" ]; then
  dir=${2:-src}
  mapfile -t changed < <(printf '%s\n' "${units[@]}" | grep "^$dir/" || true)
  what="every C++ file under $dir/"
else
  base=${1:-HEAD^1}
  if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
    echo "tidy: no commit $base (a single-commit history?): nothing to compare"; exit 0
  fi
  mapfile -t changed < <(git diff --name-only --diff-filter=ACMR "$base" HEAD -- '*.cpp' '*.cc' '*.hpp' '*.h')
  what="C++ files changed in $base..HEAD"
fi

# Each changed file -> the translation unit to run on.
targets=()
for f in "${changed[@]}"; do
  case $f in
    *.cpp|*.cc)
      if printf '%s\n' "${units[@]}" | grep -qxF "$f"; then targets+=("$f")
      else echo "tidy: $f is not compiled in $BUILD (skipped)"; fi ;;
    *.hpp|*.h)
      inc=$(basename "$(dirname "$f")")/$(basename "$f")
      tu=""
      for u in "${units[@]}"; do
        if grep -qE "#include \"($inc|$(basename "$f"))\"" "$u"; then tu=$u; break; fi
      done
      if [ -n "$tu" ]; then targets+=("$tu")
      else echo "tidy: no compiled file includes $f (skipped)"; fi ;;
  esac
done
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | grep . | sort -u || true)
echo "tidy: $what: ${#changed[@]} files, ${#targets[@]} translation units, $JOBS jobs ($("$TIDY" --version | grep -o 'version [0-9.]*'))"
((${#targets[@]})) || exit 0

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export TIDY BUILD out
start=$EPOCHREALTIME
printf '%s\n' "${targets[@]}" | xargs -P "$JOBS" -I{} bash -c '
  f={}; log=$out/$(echo "$f" | tr / _).log
  s=$EPOCHREALTIME
  if "$TIDY" -p "$BUILD" --quiet "$f" >"$log" 2>&1; then r=ok; else r=FAIL; fi
  awk -v a="$s" -v b="$EPOCHREALTIME" -v r="$r" -v f="$f" "BEGIN {printf \"%6.1f s  %-4s %s\\n\", b - a, r, f}" >"$log.time"'
cat "$out"/*.time | sort -k4
fail=0
for t in "$out"/*.time; do
  if grep -q FAIL "$t"; then fail=1; grep -v '^[0-9]* warnings* generated' "${t%.time}" || true; fi
done
cat "$out"/*.time | awk -v a="$start" -v b="$EPOCHREALTIME" -v n="${#targets[@]}" \
  '{s += $1} END {printf "tidy: %d translation units in %.1f s wall (%.1f s of clang-tidy, %.1f s a file)\n", n, b - a, s, s / n}'
[ $fail -eq 0 ] && echo "tidy: clean" || { echo "tidy: findings above"; exit 1; }
