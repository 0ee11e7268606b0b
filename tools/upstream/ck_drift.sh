#!/usr/bin/env bash
# ck_drift.sh [VERSION]: runs the live comfy-kitchen oracle (the full set: every storage variant, G,
# R, dtype and M; 1500 malformed operand sets) against comfy-kitchen VERSION (default: the newest on
# PyPI) and reports how it differs from this project's NEWEST profile, and, when VERSION maps to an
# older profile, from that one too. Also says whether the eager sources changed (sha256 prefixes of
# the releases this project was checked against). Exit 0: no difference from the newest profile;
# 1: differences (drift); 2: the environment or build could not be made.
# Env: W4A8_BUILD (default build) holds tests/gemm/w4a8_ck_compare (built here when missing).
source "$(dirname "$0")/../../ci/help.sh" "$@"
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${W4A8_BUILD:-$root/build}
version=${1:-}
if [ -z "$version" ]; then
  version=$(pip index versions comfy-kitchen 2>/dev/null | sed -n 's/^comfy-kitchen (\(.*\))$/\1/p' | head -1)
  [ -n "$version" ] || { echo "ck_drift: cannot ask PyPI for the newest comfy-kitchen; pass VERSION" >&2; exit 2; }
fi
read -r py pp < <("$here/ck_env.sh" "$version") || { echo "ck_drift: no environment for $version" >&2; exit 2; }
[ -n "${py:-}" ] || exit 2
cmp=$build/tests/gemm/w4a8_ck_compare
if [ ! -x "$cmp" ]; then
  cmake --build "$build" --target w4a8_ck_compare >&2 || { echo "ck_drift: cannot build w4a8_ck_compare in $build" >&2; exit 2; }
fi
newest=$(grep -o '^W4A8_COMFY_KITCHEN([A-Z0-9_]*, "[0-9.]*"' "$root/src/core/comfy_kitchen_versions.def" | tail -1 | sed 's/.*"\(.*\)"/\1/')

# Known eager sources (sha256 prefix of backends/eager/w4a8_int8.py): a change means new code to read.
declare -A known=([7bf35449e4f3b86d]="0.2.30-0.2.35" [4863c0d3e20aa06a]="0.2.36-0.2.37" [1726550820da62bc]="0.2.38-0.2.40")
src=$(PYTHONPATH=$pp "$py" -c 'import comfy_kitchen.backends.eager.w4a8_int8 as m; print(m.__file__)')
h=$(sha256sum "$src" | cut -c1-16)
echo "comfy-kitchen $version: eager w4a8_int8.py sha256 $h (${known[$h]:-NEW: not seen before, read it})"

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PYTHONPATH=$pp "$py" "$here/ck_oracle.py" gen --set full --out "$out" >&2 || { echo "ck_drift: oracle failed" >&2; exit 2; }
echo "== against our newest profile ($newest)"
"$cmp" --profile "$newest" "$out" | grep -v '^upstream failure'
rc=${PIPESTATUS[0]}
matched=$("$cmp" --upstream-version "$version" "$out" | sed -n 's/.*reference (profile \(.*\))$/\1/p')
if [ -n "$matched" ] && [ "$matched" != "$newest" ]; then
  echo "== against the profile for $version ($matched)"
  "$cmp" --profile "$matched" "$out" | grep -v '^upstream failure'
fi
[ "$rc" -eq 0 ] && echo "ck_drift: comfy-kitchen $version behaves as profile $newest" || echo "ck_drift: comfy-kitchen $version DIFFERS from profile $newest (see above)"
[ "$rc" -le 1 ] && exit "$rc" || exit 2
