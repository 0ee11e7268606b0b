# Sourced by ci/fuzz-*.sh, ci/test-oss-fuzz-build.sh, ci/coverage.sh and tools/fuzz/*.sh:
# the fuzz target list (fuzz/targets.txt, the only one) and each target's libFuzzer flags.
W4A8_ROOT=${W4A8_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}

# The target names, one a line.
fuzz_targets() { grep -E '^[a-z_0-9]+$' "$W4A8_ROOT/fuzz/targets.txt"; }

# libFuzzer flags for target $1: every "key = value" of the [libfuzzer] section of
# corpus/$1.options as -key=value (except dict, whose path there is OSS-Fuzz's), plus
# -dict=corpus/$1.dict when that exists.
fuzz_flags() {
  local t=$1 opts="$W4A8_ROOT/corpus/$1.options"
  if [ -f "$opts" ]; then
    awk -F' *= *' '/^\[/{s=($0=="[libfuzzer]")} s && NF==2 && $1!="dict" && $1!~/^[#;]/ {printf "-%s=%s\n", $1, $2}' "$opts"
  fi
  [ -f "$W4A8_ROOT/corpus/$t.dict" ] && echo "-dict=$W4A8_ROOT/corpus/$t.dict"
  return 0
}
