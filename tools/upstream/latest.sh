#!/usr/bin/env bash
# Scheduled upstream check: asks PyPI for the newest sglang (and comfy-kitchen, through
# tools/upstream/ck_drift.sh when present), fetches its wheel into the cache, and holds w4a8check's
# newest profile against it (tools/upstream/sglang_drift.py: the catalogue plus generated checkpoints,
# every verdict and marker compared). Also says whether the function's source changed since our newest
# profiled release. Exit 0: nothing changed that w4a8check mispredicts; 1: a difference (printed).
# Usage: tools/upstream/latest.sh [BUILD_DIR]   (default build/; gen_drift_cases is built when missing)
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
py=${W4A8_PYTHON:-python3}
status=0

exe="$build/tests/gen/gen_drift_cases"
if [ ! -x "$exe" ]; then
  cmake --build "$build" --target gen_drift_cases >/dev/null
fi

newest=$("$py" -m pip index versions sglang 2>/dev/null | sed -n 's/^sglang (\(.*\))$/\1/p' | head -1)
if [ -z "$newest" ]; then
  echo "FAIL: could not ask PyPI for the newest sglang (pip index versions sglang)"
  exit 1
fi
profiled=$("$py" tools/upstream/sglang_upstream.py --list | awk 'END {print $1}')
echo "== sglang: newest on PyPI $newest; newest profile $profiled"
if [ "$newest" != "$profiled" ]; then
  echo "   sglang $newest has no profile yet: comparing it with our $profiled prediction"
  "$py" - "$profiled" "$newest" <<'PYEOF' || status=1
import difflib, sys
sys.path.insert(0, "tools/upstream")
import ast, sglang_upstream as u
old, new = sys.argv[1], sys.argv[2]
def function_text(v):
    src, _ = u.module_source(v)
    tree = ast.parse(src)
    keep = [n for n in tree.body if isinstance(n, ast.FunctionDef) and
            (n.name == u.FUNCTION or n.name.startswith("_merge_comfy") or n.name.startswith("_comfy"))]
    return "\n".join(ast.get_source_segment(src, n) for n in keep).splitlines()
a, b = function_text(old), function_text(new)
diff = list(difflib.unified_diff(a, b, "sglang-%s" % old, "sglang-%s" % new, lineterm=""))
if diff:
    print("   the function's source changed since %s (%d diff lines); review before adding a profile:" % (old, len(diff)))
    print("\n".join(diff))
else:
    print("   the function's source is unchanged since %s" % old)
PYEOF
  "$py" tools/upstream/sglang_drift.py --cases-exe "$exe" --wheel "$newest" --profile "$profiled" || status=1
else
  "$py" tools/upstream/sglang_drift.py --cases-exe "$exe" --versions "$profiled" || status=1
fi

if [ -f tools/upstream/ck_drift.sh ]; then
  echo "== comfy-kitchen"
  bash tools/upstream/ck_drift.sh || status=1
else
  echo "== comfy-kitchen: tools/upstream/ck_drift.sh not present, skipped"
fi
[ "$status" -eq 0 ] && echo "latest.sh: no drift" || echo "latest.sh: DRIFT (see above)"
exit "$status"
