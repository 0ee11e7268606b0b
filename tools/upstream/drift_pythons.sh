#!/usr/bin/env bash
# drift_pythons.sh: the real-sglang drift check (sglang_drift.py) under every other Python this
# machine has. The validator predicts upstream's errors per interpreter (--python 3.10 ... 3.14:
# json.loads' nesting limit, int()'s digit-limit wording and its order against junk, repr's Unicode
# data); ctest's upstream_sglang_drift holds them against the configured interpreter only. Here each
# other interpreter runs sglang's real function itself and our verdicts are predicted for it.
#
#   tools/upstream/drift_pythons.sh --cases-exe BUILD/tests/gen/gen_drift_cases [--n N] [--seed S]
#                                   [--except PYTHON] [PYTHON...]
#   PYTHON...   interpreters to use (default: every python3.X on PATH and under ~/.pyenv/versions)
#   --except    leave out the interpreter of this minor version (ctest passes the configured one)
#
# One interpreter per minor version, and only versions the validator models. Each gets a venv with
# safetensors and numpy (what the drift check imports) under ~/.cache/w4a8check/py-X.Y.Z
# (W4A8_CACHE overrides), made once. Exit status: 0 every interpreter run agrees; 1 a difference or
# a failed run; 77 none could run (none found, or no venv could be made: pip offline), said plainly.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${W4A8_CACHE:-$HOME/.cache/w4a8check}
exe="" n=1000 seed=20261207 except="" given=()
while (($#)); do
  case $1 in
    --cases-exe) exe=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --except) except=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "drift_pythons: unknown option $1 (--help)" >&2; exit 2 ;;
    *) given+=("$1"); shift ;;
  esac
done
[ -x "$exe" ] || { echo "drift_pythons: --cases-exe must name the built gen_drift_cases ('$exe' is not executable)" >&2; exit 2; }

# "X.Y.Z" of an interpreter, empty when it does not run.
full_version() { "$1" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null; }
minor() { echo "${1%.*}"; }
# The minor versions the validator models, from the validator itself (src/py/version.hpp).
models=$("$exe" pythons) || { echo "drift_pythons: $exe pythons failed" >&2; exit 2; }
modelled() { grep -qxF "$1" <<<"$models"; }

candidates=("${given[@]}")
if ((${#given[@]} == 0)); then
  for p in $(compgen -c python3. | grep -E '^python3\.[0-9]+$' | sort -u) "$HOME"/.pyenv/versions/*/bin/python; do
    [[ $p == */* ]] || p=$(command -v "$p")
    # (pyenv's shims of versions not selected exit non-zero: dropped below, found again under versions/)
    [ -x "$p" ] && [ -n "$(full_version "$p")" ] && candidates+=("$p")
  done
fi
skip_minor=""
[ -n "$except" ] && skip_minor=$(minor "$(full_version "$except")")

declare -A seen=()
ran=0 failed=0 results=()
for py in "${candidates[@]}"; do
  v=$(full_version "$py")
  [ -n "$v" ] || { results+=("$py: does not run"); continue; }
  m=$(minor "$v")
  [ -n "${seen[$m]:-}" ] && continue
  seen[$m]=1
  if [ "$m" = "$skip_minor" ]; then results+=("Python $v ($py): the configured interpreter (upstream_sglang_drift)"); continue; fi
  modelled "$m" || { results+=("Python $v ($py): not a version the validator models"); continue; }
  venv=$cache/py-$v
  mkdir -p "$cache"
  if ! "$venv/bin/python" -c 'import safetensors, numpy' 2>/dev/null; then
    echo "== Python $v: making $venv (safetensors, numpy)"
    if ! { "$py" -m venv "$venv" && "$venv/bin/python" -m pip install -q --disable-pip-version-check safetensors numpy; } >"$cache/py-$v.log" 2>&1; then
      results+=("Python $v ($py): NOT RUN, its venv could not be made ($(tail -n 1 "$cache/py-$v.log"))")
      continue
    fi
  fi
  echo "== Python $v ($py)"
  "$venv/bin/python" "$here/sglang_drift.py" --cases-exe "$exe" --n "$n" --seed "$seed" | grep -v " 0 differ"
  rc=${PIPESTATUS[0]}
  case $rc in
    0) ran=$((ran + 1)); results+=("Python $v: agrees") ;;
    77) results+=("Python $v: NOT RUN (the drift check skipped: W4A8_OFFLINE=1 and a wheel not cached)") ;;
    *) ran=$((ran + 1)); failed=1; results+=("Python $v: DIFFERS or failed (exit $rc)") ;;
  esac
done
echo
printf '%s\n' "${results[@]}"
if ((ran == 0)); then
  echo "SKIPPED: no other interpreter could run the drift check (install one, e.g. with pyenv, to hold its facts against sglang)"
  exit 77
fi
exit $failed
