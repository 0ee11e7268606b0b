#!/usr/bin/env bash
# ck_env.sh [VERSION]: (re)creates the comfy-kitchen oracle environment under ~/.cache/w4a8check/
# (W4A8_CACHE overrides), idempotently, and prints on stdout one line "PYTHON PYTHONPATH" to run
# tools/upstream/ck_oracle.py with (log lines go to stderr, with the time taken).
#   - ck-venv: a venv with torch (CPU use; W4A8_TORCH_SPEC overrides "torch==2.15.0", e.g. to add
#     "--index-url URL" where a CPU-only index is reachable), numpy, safetensors, packaging and
#     comfy-kitchen 0.2.40 (--no-deps: its extras are GPU-only). Reused when it already imports.
#   - ck-pkgs/VERSION: another comfy-kitchen release (--no-deps, --target), put first on PYTHONPATH so
#     it shadows the venv's copy; its wheel is cached in wheels/ck-VERSION.
# Nothing of comfy-kitchen or torch enters the repository.
set -euo pipefail
start=$(date +%s)
BASE=${W4A8_CACHE:-$HOME/.cache/w4a8check}
VENV=$BASE/ck-venv
DEFAULT_CK=0.2.40
VERSION=${1:-$DEFAULT_CK}
TORCH_SPEC=${W4A8_TORCH_SPEC:-torch==2.15.0}
log() { echo "ck_env: $*" >&2; }

mkdir -p "$BASE"
if "$VENV/bin/python" -c 'import torch, numpy, safetensors, packaging, comfy_kitchen' 2>/dev/null; then
  log "reusing $VENV"
else
  # Built in $VENV.partial (resumed when an earlier run stopped) and renamed into place once it
  # imports: tests running meanwhile see either no environment (a visible skip) or a whole one.
  log "creating $VENV (torch is a large download: minutes)"
  part=$VENV.partial
  [ -x "$part/bin/python" ] || python3 -m venv "$part"
  "$part/bin/python" -m pip install -q --upgrade pip >&2
  # shellcheck disable=SC2086  # TORCH_SPEC may carry pip options on purpose
  "$part/bin/python" -m pip install -q $TORCH_SPEC numpy safetensors packaging >&2
  "$part/bin/python" -m pip install -q --no-deps "comfy-kitchen==$DEFAULT_CK" >&2
  "$part/bin/python" -c 'import torch, numpy, safetensors, packaging, comfy_kitchen' >&2
  rm -rf "$VENV"
  mv "$part" "$VENV"  # a venv runs from any path when started as bin/python (pip as python -m pip)
fi

PP=""
installed=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("comfy-kitchen"))')
if [ "$VERSION" != "$installed" ]; then
  target=$BASE/ck-pkgs/$VERSION
  if ! PYTHONPATH=$target "$VENV/bin/python" -c \
      "import importlib.metadata as m, sys; sys.exit(m.version('comfy-kitchen') != '$VERSION')" 2>/dev/null; then
    wheels=$BASE/wheels/ck-$VERSION
    mkdir -p "$wheels"
    if ! ls "$wheels"/comfy_kitchen-"$VERSION"-*.whl >/dev/null 2>&1; then
      log "downloading comfy-kitchen $VERSION"
      "$VENV/bin/python" -m pip download -q --no-deps --only-binary=:all: "comfy-kitchen==$VERSION" -d "$wheels" >&2
    fi
    rm -rf "$target.tmp"
    "$VENV/bin/python" -m pip install -q --no-deps --target "$target.tmp" "$wheels"/comfy_kitchen-"$VERSION"-*.whl >&2
    rm -rf "$target"
    mv "$target.tmp" "$target"
    log "installed comfy-kitchen $VERSION into $target"
  else
    log "reusing $target"
  fi
  PP=$target
fi
got=$(PYTHONPATH=$PP "$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("comfy-kitchen"), m.version("torch"))')
log "ready in $(( $(date +%s) - start )) s: comfy-kitchen/torch $got"
echo "$VENV/bin/python $PP"
