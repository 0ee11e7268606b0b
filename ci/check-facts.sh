#!/usr/bin/env bash
# One source for each fact (ctest repo_facts; also run by hand): fails when a fact is spelled twice.
#   - the project version: project(VERSION) in CMakeLists.txt (and CHANGELOG.md's headings) only;
#   - the hex digit table: src/core/hex.hpp only;
#   - running Python from C++ tests: tests/support/python.{hpp,cpp} (tests/cli and tests/audit run
#     the CLI through their own shell helpers, which may start Python as a command);
#   - the fuzz target list: fuzz/targets.txt (no script spells the list), once that file exists;
#   - nothing points at the team's shared notes (../shared, shared/spec): docs/ holds the facts.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
bad() { echo "repo facts: $*"; fail=1; }
files() { git ls-files -- "$@" 2>/dev/null; }

v=$(sed -n 's/^project(w4a8check VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$v" ] || bad "no project(w4a8check VERSION x.y.z) in CMakeLists.txt"
for ver in "$v" 0.1.0; do
  re="(^|[^0-9.])${ver//./\\.}([^0-9]|$)"
  while IFS= read -r f; do
    case $f in CHANGELOG.md|CMakeLists.txt|ci/check-facts.sh) continue ;; esac
    bad "$f spells the version $ver (read it from core/version.hpp or PROJECT_VERSION)"
  done < <(files | grep -v '^corpus/' | xargs -d '\n' grep -lE "$re" 2>/dev/null)
done
grep -q "^## $v\$" CHANGELOG.md || bad "CHANGELOG.md has no '## $v' entry"

while IFS= read -r f; do
  [ "$f" = src/core/hex.hpp ] || bad "$f has its own hex digit table (use core/hex.hpp)"
done < <(files '*.cpp' '*.hpp' '*.h' '*.c' '*.cu' | xargs -d '\n' grep -liF '0123456789abcdef' 2>/dev/null)

while IFS= read -r f; do
  case $f in tests/support/*|tests/cli/*|tests/audit/*) continue ;; esac
  bad "$f runs a process itself (use tests/support/python.hpp)"
done < <(files 'tests/*.cpp' 'tests/*.hpp' 'props/*.cpp' 'props/*.hpp' |
         xargs -d '\n' grep -lE '(popen|std::system)\(' 2>/dev/null)

if [ -f fuzz/targets.txt ]; then
  while IFS= read -r f; do
    bad "$f spells the fuzz target list (read fuzz/targets.txt)"
  done < <(files 'ci/*' 'tools/*' 'fuzz/CMakeLists.txt' | xargs -d '\n' grep -lE 'container[ ]+marker_json' 2>/dev/null)
  fuzz_note="one fuzz target list"
else
  fuzz_note="fuzz target list not checked (no fuzz/targets.txt yet)"
fi

while IFS= read -r f; do
  [ "$f" = ci/check-facts.sh ] && continue
  bad "$f points at the shared notes (write the facts into docs/)"
done < <(files | grep -v '^corpus/.*/' | xargs -d '\n' grep -lE '\.\./shared|shared/spec|/work/shared' 2>/dev/null)

[ $fail -eq 0 ] && echo "repo facts: version $v from CMakeLists.txt; one hex table, one Python runner, $fuzz_note, no shared/ references"
exit $fail
