#!/usr/bin/env bash
# Mutation check of the property suite (issue #3 acceptance): copies the tree to a temp dir, applies
# each deliberate bug below to src/validate (or src/py, named ../py) with sed (one at a time),
# rebuilds props_validator, runs it (seeded, RC_PARAMS=seed=$SEED, W4A8_PROP_SCALE=$SCALE) and
# reports which mutants the properties caught. Exit status 1 when any mutant survives (or did not apply).
#   tools/mutation_check.sh              (SCALE=0.5 SEED=1 JOBS=2)
source "$(dirname "$0")/../ci/help.sh" "$@"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SCALE=${SCALE:-0.5}
SEED=${SEED:-1}
JOBS=${JOBS:-2}
WORK=$(mktemp -d /tmp/w4a8-mutation-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/tree"
tar -C "$ROOT" --exclude='./build*' --exclude='./.git' --exclude='./corpus' -cf - . | tar -C "$WORK/tree" -xf -
T="$WORK/tree/src/validate"
cmake -S "$WORK/tree" -B "$WORK/build" -G Ninja -DW4A8_CUDA=OFF -DW4A8_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$WORK/build" --target props_validator -j"$JOBS" >/dev/null
run_props() {
  RC_PARAMS="seed=$SEED" W4A8_PROP_SCALE="$SCALE" timeout 600 "$WORK/build/props/props_validator" --gtest_brief=1 \
    >"$WORK/props.log" 2>&1
}
run_props || { echo "baseline property run FAILED; fix that first"; tail -n 40 "$WORK/props.log"; exit 1; }

# file @ sed expression @ what the bug is
MUTANTS=(
  "rules_w4a8.cpp@s/if (weight.shape.size() != 2)\$/if (false)/@W4A8 rank check removed"
  "rules_w4a8.cpp@s/shape_is(s_rel.shape, {rows, groups})/shape_is(s_rel.shape, {rows, groups + 1})/@off-by-one in the s_rel shape"
  "rules_w4a8.cpp@s/st::dtype_name(weight.dtype), st::dtype_name(s_rel.dtype)/st::dtype_name(s_rel.dtype), st::dtype_name(weight.dtype)/@wrong message (dtype arguments swapped)"
  "rules_w4a8.cpp@s/group->compare(4) < 0/group->compare(3) < 0/@group_size bound 4 -> 3"
  "rules_w4a8.cpp@s/!meta_is(codebook, st::Dtype::F32, {16})/!meta_is(codebook, st::Dtype::F32, {16}) \&\& false/@codebook check removed"
  "rules_w4a8.cpp@s/meta_is(correction, st::Dtype::F32, {groups, rows})/meta_is(correction, st::Dtype::F32, {rows, groups})/@correction shape transposed"
  "rules_w4a8.cpp@s/\"_has_codebook\", codebook != nullptr)/\"_has_codebook\", codebook == nullptr)/@derived _has_codebook inverted"
  "rules_w4a8.cpp@s|static_cast<std::uint64_t>(k / g)|static_cast<std::uint64_t>((k + 2) / g)|@K // G computed from K + 2"
  "mxfp8.cpp@s/weight->shape\[1\] % 32 == 0/weight->shape[1] % 16 == 0/@MXFP8 block 32 -> 16"
  "inspect.cpp@s/kMissingMarkersShown = 5/kMissingMarkersShown = 4/@missing-marker list cut at 4"
  "../py/int.cpp@s/  const bool limit_last = interpreter_facts(pv).int_limit_after_trailing;/  const bool limit_last = false;/@int() of junk after > 4300 digits: 3.11's order under every Python"
  "../py/int.cpp@s/  const std::string_view s(ascii.c_str());/  const std::string_view s(ascii);/@int() reads past an embedded NUL"
  "../py/version.hpp@s|/\* 3.12 \*/ {1497, |/* 3.12 */ {1498, |@json.loads under 3.12 reads one level too deep"
  "../py/version.hpp@s|/\* 3.13 \*/ {9998, |/* 3.13 */ {9997, |@json.loads under 3.13 stops one level short"
  "inspect.cpp@s/^  State s(opt);/  Options o = opt; o.python = py::kDefaultVersion; State s(o);/@--python ignored (the default interpreter's repr and int() facts)"
  "comfy_formats.def@s/\".weight_scale\", \".weight_scale_2\"/\".weight_scale\"/@NVFP4 weight_scale_2 not required"
  "collect.cpp@s/if (!json::py_equal(previous, marker))/if (false)/@conflicting markers accepted"
  "collect.cpp@s/old != nullptr \&\& !json::py_equal(\*old, value)/false/@per-key conflicts accepted (0.5.20+)"
  "collect.cpp@s/\*old = std::move(value);/(void)old;/@per-key merge keeps the first spelling of an equal value"
  "collect.cpp@s/case upstream::MarkerMerge::PerKey:/case upstream::MarkerMerge::PerKey: return Ok{};/@per-key profiles ignore a second marker"
  "collect.cpp@s/ || d == st::Dtype::U8;/;/@U8 weights not treated as quantized"
  "collect.cpp@s/\"BFloat16\"/\"Bfloat16\"/@wrong torch dtype name in a message"
  "collect.cpp@s/if (text.front() != '{')/if (false)/@non-object metadata marker accepted"
  "rules_other.cpp@s/cg != 16 \&\& cg != 64 \&\& cg != 256/cg != 64 \&\& cg != 256/@W4A4 convrot_groupsize 16 rejected"
  "rules_other.cpp@s/shape_is(scale.shape, {weight.shape\[0\], 1})/shape_is(scale.shape, {weight.shape[0]})/@rowwise INT8 scale shape (rows,) instead of (rows, 1)"
  "rules_other.cpp@s/if (k % 16 != 0 || !shape_is/if (!shape_is/@NVFP4 K % 16 check removed"
  "strict.cpp@s/if (k % 16 != 0) return/if (k % 8 != 0) return/@strict K % 16 relaxed to K % 8"
  "strict.cpp@s/return (b \& 0x7F) == 0x7F;/return b == 0xFF;/@strict misses the 0x7F NaN scale"
  "strict.cpp@s/!std::isfinite(v) || v < 0)/!std::isfinite(v))/@strict accepts negative channel scales"
  "strict.cpp@s/std::to_string(i \/ groups),/std::to_string(i \/ groups + 1),/@strict NaN position off by one row"
)
caught=0
missed=0
printf '%-8s %-18s %s\n' RESULT FILE MUTANT
for m in "${MUTANTS[@]}"; do
  IFS='@' read -r file expr what <<<"$m"
  cp "$T/$file" "$WORK/orig"
  sed -i -e "$expr" "$T/$file" || true
  if cmp -s "$T/$file" "$WORK/orig"; then
    printf '%-8s %-18s %s\n' "NOAPPLY" "$file" "$what"
    missed=$((missed + 1))
    continue
  fi
  if ! cmake --build "$WORK/build" --target props_validator -j"$JOBS" >"$WORK/build.log" 2>&1; then
    result="NOBUILD"
    missed=$((missed + 1))
  elif run_props; then
    result="MISSED"
    missed=$((missed + 1))
  else
    result="caught"
    caught=$((caught + 1))
  fi
  printf '%-8s %-18s %s\n' "$result" "$file" "$what"
  cp "$WORK/orig" "$T/$file"  # a fresh mtime, so the next build recompiles it
done
echo "caught $caught of $((caught + missed)) mutants (props_validator, seed $SEED, scale $SCALE)"
[ "$missed" -eq 0 ]
