#!/usr/bin/env bash
# measure.sh BUILD_DIR WORK_DIR [CK_PYTHON]: the measurements of docs/audit.md "Measured", one run
# each: `audit make --grid standard`, then `audit check` of the built-ins, the test plugins (correct,
# storage-capable, eager-capable, seven broken), the emulation plugin module and, when CK_PYTHON imports torch and
# comfy_kitchen, comfy-kitchen's eager backend through tools/audit/ck_adapter.py. Prints the machine,
# its load, one line of wall time per run and the results table (Markdown); the JSON of each run
# stays in WORK_DIR. Long (about 15 minutes on 2 cores): a documented command, not a CI step.
set -euo pipefail
BUILD=$(cd "${1:?BUILD_DIR}" && pwd)
WORK=${2:?WORK_DIR}
PY=${3:-$HOME/.cache/w4a8check/ck-venv/bin/python}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$BUILD/w4a8check
mkdir -p "$WORK"
SUITE=$WORK/standard
[ -e "$SUITE/manifest.json" ] && { echo "measure.sh: $SUITE already holds a suite; give a new WORK_DIR" >&2; exit 2; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores," \
     "$(free -g | awk '/Mem:/ {print $2}') GiB; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
timed() {  # NAME CMD...: runs CMD, prints "NAME: wall s (user+sys s)"
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$WORK/$name.time" "$@" > "$WORK/$name.out" 2> "$WORK/$name.err" || true
  t1=$(date +%s.%N)
  printf '%-16s %7.1f s wall, %7.1f s CPU\n' "$name:" "$(echo "$t1 - $t0" | bc)" \
    "$(awk 'END {print $1 + $2}' "$WORK/$name.time")"
}
timed make "$BIN" audit make --out "$SUITE" --grid standard
tail -1 "$WORK/make.out"
du -sh "$SUITE" | cut -f1 | sed 's/^/suite size: /'

P=$BUILD/audit_plugins
runs=(fast "--impl fast"
      emulate "--impl emulate"
      literal "--impl literal"
      emulate-plugin "--kernel $BUILD/lib/libw4a8check_emulate.so"
      plugin-correct "--kernel $P/audit_plugin_correct.so"
      plugin-storage "--kernel $P/audit_plugin_storage.so"
      nibble-order "--kernel $P/audit_plugin_nibble_order.so"
      epilogue-n+1 "--kernel $P/audit_plugin_epilogue_off_by_one.so"
      bias-m-gt-1 "--kernel $P/audit_plugin_drop_bias_m_gt_1.so"
      half-away "--kernel $P/audit_plugin_half_away.so"
      reciprocal "--kernel $P/audit_plugin_reciprocal.so"
      float-acc "--kernel $P/audit_plugin_float_acc.so"
      eager "--kernel $P/audit_plugin_eager.so --act-policy eager"
      eager-as-f32 "--kernel $P/audit_plugin_eager_as_f32.so --act-policy eager")
for ((i = 0; i < ${#runs[@]}; i += 2)); do
  # shellcheck disable=SC2086  # the options are words on purpose
  timed "${runs[i]}" "$BIN" audit check "$SUITE" ${runs[i + 1]} --json --no-progress
done
if "$PY" -c 'import torch, comfy_kitchen' 2>/dev/null; then
  timed ck-eager "$BIN" audit check "$SUITE" --json --no-progress --work-dir "$WORK/ck-work" \
    --command "$PY $SRC/tools/audit/ck_adapter.py --backend eager"
else
  echo "ck-eager: skipped ($PY does not import torch and comfy_kitchen)"
fi
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

python3 - "$WORK" <<'EOF'
import collections, json, os, sys
work = sys.argv[1]
print("\n| implementation | exact | order-explained | failed | unsupported | skipped | upstream errors | broken | failing stage |")
print("|---|---|---|---|---|---|---|---|---|")
for name in ["fast", "emulate", "literal", "emulate-plugin", "plugin-correct", "plugin-storage", "nibble-order",
             "epilogue-n+1", "bias-m-gt-1", "half-away", "reciprocal", "float-acc", "eager", "eager-as-f32", "ck-eager"]:
    path = os.path.join(work, name + ".out")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        continue
    r = json.load(open(path))
    c = r["counts"]
    stages = collections.Counter(x.get("failing_stage") for x in r["cases"] if x.get("verdict") == "fail")
    st = ", ".join(f"{k} ({v} of {c['failed']})" for k, v in stages.most_common())
    print(f"| {name}: {r['implementation']} | {c['exact']} | {c['order']} | {c['failed']} | {c['unsupported']} | "
          f"{c['skipped']} | {c['upstream_errors']} | {c['broken']} | {st} |")
EOF
