#!/usr/bin/env python3
"""Runs sglang's REAL inspect_comfy_quant_markers, taken from the released PyPI wheels, as a test oracle.

Nothing of sglang ships with w4a8check: the wheel is fetched at test time (`pip download --no-deps`)
into a cache outside the repository (~/.cache/w4a8check/wheels/sglang-<version>/, or
$W4A8_WHEEL_CACHE/sglang-<version>/), the function's module is read from it, and the function plus
the module-level helpers it references are executed with everything else stubbed:
  - `safe_open` is a torch-free stand-in built on the `safetensors` package (container checks, keys()
    in sorted order, metadata(), get_slice() dtype/shape) that returns a marker's raw stored bytes for
    `get_tensor(k).numpy().tobytes()` and raises what torch 2.15 + safetensors 0.8.0 raise for the
    dtypes torch cannot hand to numpy (checked with --real-torch, which uses the real `safe_open`
    with framework="pt" and needs torch installed);
  - other non-standard-library imports (torch, sglang.*) become stubs that fail loudly when used, so a
    release whose function starts needing them shows up as a difference, never as a silent pass;
  - `set()` made by the function iterates in sorted order. Upstream walks the MXFP8 prefixes in Python
    set order, which string-hash randomization makes different in every process, so with several
    incompatible MXFP8 layers it reports a random one; w4a8check reports the first in sorted order,
    and the harness pins upstream to that order so verdicts compare deterministically.

Usage (library: tools/upstream/sglang_drift.py, tools/make_validator_catalogue.py):
  sglang_upstream.py --sglang VERSION --batch   stdin: one job a line, {"dir": D, "files": [...]}
                                                 (D becomes the working directory: paths in messages
                                                 are the names as listed); stdout: one verdict a line
  sglang_upstream.py --sglang VERSION FILE...    one checkpoint; prints its verdict
  sglang_upstream.py --list                      the profiled versions (src/core/sglang_versions.def)
Verdict: {"ok": bool, "type": str|null, "message": str|null, "layers": {prefix: marker}} (ok only;
NaN is written as the bare NaN Python's json emits and reads).
Environment: W4A8_OFFLINE=1 never downloads (a missing wheel is then an error the caller reports).
"""
import ast
import contextlib
import glob
import json
import os
import re
import subprocess
import sys
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERSIONS_DEF = os.path.join(ROOT, "src", "core", "sglang_versions.def")
MODULE = "sglang/multimodal_gen/runtime/utils/quantization_utils.py"
FUNCTION = "inspect_comfy_quant_markers"

# dtype -> what safe_open(framework="pt").get_tensor(k).numpy() raises (torch 2.15, safetensors 0.8.0).
TORCH_NO_NUMPY = {"BF16": "BFloat16", "F8_E4M3": "Float8_e4m3fn", "F8_E5M2": "Float8_e5m2",
                  "F8_E4M3FNUZ": "Float8_e4m3fnuz", "F8_E5M2FNUZ": "Float8_e5m2fnuz",
                  "F8_E8M0": "Float8_e8m0fnu", "F4": "Float4_e2m1fn_x2"}
# dtypes safetensors' torch binding has no torch dtype for: get_tensor itself raises.
NO_TORCH_DTYPE = ("F6_E2M3", "F6_E3M2")


class WheelUnavailable(Exception):
    pass


def profiles():
    """[(version, merge rule)] from src/core/sglang_versions.def, oldest first."""
    rows = re.findall(r'^W4A8_SGLANG\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*(\w+)\s*,', open(VERSIONS_DEF).read(), re.M)
    if not rows:
        raise SystemExit("no W4A8_SGLANG rows in " + VERSIONS_DEF)
    return rows


def cache_dir():
    return os.environ.get("W4A8_WHEEL_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "w4a8check", "wheels")


def ensure_wheel(version, log=sys.stderr):
    """Path of sglang==version's wheel (or sdist) in the cache, downloading it when absent."""
    d = os.path.join(cache_dir(), "sglang-" + version)
    found = sorted(glob.glob(os.path.join(d, "sglang-%s*.whl" % version)) +
                   glob.glob(os.path.join(d, "sglang-%s.tar.gz" % version)))
    if found:
        return found[0]
    if os.environ.get("W4A8_OFFLINE") == "1":
        raise WheelUnavailable("sglang %s is not in %s and W4A8_OFFLINE=1 forbids downloading it" % (version, d))
    os.makedirs(d, exist_ok=True)
    base = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
            "sglang==" + version, "-d", d]
    # The module is pure Python: any wheel will do. This host's own first, then a fixed Linux wheel.
    attempts = [base, base + ["--only-binary=:all:", "--platform", "manylinux_2_34_x86_64",
                              "--python-version", "3.11", "--implementation", "cp"]]
    errors = []
    for cmd in attempts:
        print("fetching sglang %s: %s" % (version, " ".join(cmd[2:])), file=log)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            return ensure_wheel(version, log)
        errors.append(r.stderr.strip()[-800:])
    raise WheelUnavailable("pip could not download sglang==%s:\n%s" % (version, "\n".join(errors)))


def module_source(version):
    path = ensure_wheel(version)
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            return z.read(MODULE).decode("utf-8"), path
    import tarfile
    with tarfile.open(path) as t:
        for m in t.getmembers():
            if m.name.endswith("/python/" + MODULE) or m.name.endswith("/" + MODULE):
                return t.extractfile(m).read().decode("utf-8"), path
    raise WheelUnavailable("%s has no %s" % (path, MODULE))


# ---- the safe_open stand-in ---------------------------------------------------------------------
class _Array:
    def __init__(self, raw):
        self._raw = raw

    def tobytes(self):
        return self._raw


class _Tensor:
    def __init__(self, raw, dtype):
        self._raw, self._dtype = raw, dtype

    def numpy(self):
        if self._dtype in TORCH_NO_NUMPY:
            raise TypeError("Got unsupported ScalarType " + TORCH_NO_NUMPY[self._dtype])
        return _Array(self._raw)


class _File:
    """safe_open(path, framework="pt") as far as inspect_comfy_quant_markers uses it."""

    def __init__(self, path):
        from safetensors import safe_open as real
        self._path = path
        self._cm = real(path, "numpy")  # container errors (SafetensorError) are raised here
        self._offsets = None

    def __enter__(self):
        self._f = self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    def metadata(self):
        return self._f.metadata()

    def keys(self):
        return self._f.keys()

    def get_slice(self, key):
        return self._f.get_slice(key)

    def get_tensor(self, key):
        dtype = self._f.get_slice(key).get_dtype()
        if dtype in NO_TORCH_DTYPE:
            from safetensors import SafetensorError
            raise SafetensorError("Dtype not understood: " + dtype)
        if self._offsets is None:  # the package validated the container: these offsets are sound
            with open(self._path, "rb") as fh:
                n = int.from_bytes(fh.read(8), "little")
                header = json.loads(fh.read(n))
                self._offsets = {k: (8 + n + v["data_offsets"][0], 8 + n + v["data_offsets"][1])
                                 for k, v in header.items() if k != "__metadata__"}
        b, e = self._offsets[key]
        with open(self._path, "rb") as fh:
            fh.seek(b)
            return _Tensor(fh.read(e - b), dtype)


def stand_in_safe_open(path, framework="pt", device="cpu"):  # noqa: ARG001  (the real signature)
    return _File(path)


def real_safe_open():
    from safetensors import safe_open  # framework="pt": needs torch
    import torch  # noqa: F401
    return safe_open


# ---- extracting the function -----------------------------------------------------------------------
class _Stub:
    """A name imported from a module that is not loaded (torch, sglang.*): any use fails loudly."""

    def __init__(self, what):
        self._what = what

    def __getattr__(self, name):
        raise RuntimeError("the extracted function used %s.%s, which the harness does not load" % (self._what, name))

    def __call__(self, *a, **k):
        raise RuntimeError("the extracted function called %s, which the harness does not load" % self._what)


class _SortedSet(set):
    """A set that iterates in sorted order (see the module comment)."""

    def __iter__(self):
        return iter(sorted(set.__iter__(self)))


def _names(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(node):
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def load_function(source, filename, safe_open=None):
    """inspect_comfy_quant_markers from the module text, with the top-level definitions it needs."""
    tree = ast.parse(source, filename)
    if not any(isinstance(n, ast.FunctionDef) and n.name == FUNCTION for n in tree.body):
        raise WheelUnavailable("%s has no %s" % (filename, FUNCTION))
    need, todo = set(), [FUNCTION]
    by_name = {}
    for node in tree.body:
        for name in _bound(node):
            by_name.setdefault(name, []).append(node)
    keep = []
    while todo:
        name = todo.pop()
        if name in need:
            continue
        need.add(name)
        for node in by_name.get(name, []):
            if node not in keep:
                keep.append(node)
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    todo.extend(_names(node))
    ns = {"__name__": "sglang_wheel_extract", "__builtins__": __builtins__, "set": _SortedSet}
    body = []
    for node in tree.body:  # module order
        if node not in keep:
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mod = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
            top = (mod or "").split(".")[0]
            for a in node.names:
                bound = (a.asname or a.name).split(".")[0]
                if bound not in need:
                    continue
                if a.name == "safe_open":
                    ns[bound] = safe_open or stand_in_safe_open
                elif top in sys.stdlib_module_names:
                    exec(compile(ast.Module(body=[node], type_ignores=[]), filename, "exec"), ns)
                else:
                    ns[bound] = _Stub("%s.%s" % (mod, a.name) if isinstance(node, ast.ImportFrom) else a.name)
            continue
        body.append(node)
    exec(compile(ast.Module(body=body, type_ignores=[]), filename, "exec"), ns)
    return ns[FUNCTION]


_LOADED = {}


def upstream_function(version, real_torch=False):
    key = (version, real_torch)
    if key not in _LOADED:
        source, path = module_source(version)
        _LOADED[key] = load_function(source, "%s!%s" % (path, MODULE), real_safe_open() if real_torch else None)
    return _LOADED[key]


def verdict(fn, files, directory=None):
    """What fn(files) returns or raises, run inside `directory` (paths stay as given)."""
    cwd = os.getcwd()
    try:
        if directory:
            os.chdir(directory)
        layers = fn(list(files))
    except Exception as e:  # noqa: BLE001  (every exception upstream raises is a verdict)
        return {"ok": False, "type": type(e).__name__, "message": str(e)}
    finally:
        os.chdir(cwd)
    return {"ok": True, "type": None, "message": None, "layers": layers}


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sglang", help="released version whose function to run")
    ap.add_argument("--batch", action="store_true")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--real-torch", action="store_true", help="the real safe_open(framework='pt') (needs torch)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args(argv[1:])
    if a.list:
        for v, merge in profiles():
            print(v, merge)
        return 0
    if not a.sglang:
        ap.error("--sglang VERSION is required")
    try:
        fn = upstream_function(a.sglang, a.real_torch)
    except WheelUnavailable as e:
        print("error: %s" % e, file=sys.stderr)
        return 3
    if a.batch:
        for line in sys.stdin:
            if line.strip():
                job = json.loads(line)
                print(json.dumps(verdict(fn, job["files"], job.get("dir"))), flush=False)
        return 0
    print(json.dumps(verdict(fn, a.files)))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main(sys.argv))
