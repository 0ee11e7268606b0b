#!/usr/bin/env python3
"""Replays the validator catalogue through sglang's REAL inspect_comfy_quant_markers.

Usage: upstream_crosscheck.py --sglang-source PATH/TO/quantization_utils.py [corpus/validator]

PATH is your own copy of sglang's python/sglang/multimodal_gen/runtime/utils/quantization_utils.py
(nothing of sglang ships with w4a8check). The function is extracted with `ast` and run with
safetensors' numpy backend standing in for torch: `get_tensor(k).numpy()` raises torch's
"Got unsupported ScalarType ..." TypeError for BF16/FP8 dtypes, as torch does. Strict cases are
skipped (sglang has no strict mode). Container errors are compared by verdict and message.
Exit status 0 when every case agrees with the stored expectation.
"""
import argparse
import ast
import json
import os
import sys
from typing import Any, Callable  # noqa: F401  (names the extracted function's annotations use)

from safetensors import safe_open as _numpy_safe_open

_TORCH_NAMES = {"BF16": "BFloat16", "F8_E4M3": "Float8_e4m3fn", "F8_E5M2": "Float8_e5m2",
                "F8_E4M3FNUZ": "Float8_e4m3fnuz", "F8_E5M2FNUZ": "Float8_e5m2fnuz",
                "F8_E8M0": "Float8_e8m0fnu"}


class _Tensor:
    def __init__(self, array, dtype):
        self._array, self._dtype = array, dtype

    def numpy(self):
        if self._dtype in _TORCH_NAMES:
            raise TypeError(f"Got unsupported ScalarType {_TORCH_NAMES[self._dtype]}")
        return self._array


class _File:
    """safe_open(path, framework="pt") as far as inspect_comfy_quant_markers uses it."""

    def __init__(self, path):
        self._f = _numpy_safe_open(path, "numpy")

    def __enter__(self):
        self._f.__enter__()
        return self

    def __exit__(self, *exc):
        return self._f.__exit__(*exc)

    def metadata(self):
        return self._f.metadata()

    def keys(self):
        return self._f.keys()

    def get_slice(self, key):
        return self._f.get_slice(key)

    def get_tensor(self, key):
        dtype = self._f.get_slice(key).get_dtype()
        return _Tensor(None if dtype in _TORCH_NAMES else self._f.get_tensor(key), dtype)


def safe_open(path, framework, device="cpu"):  # noqa: ARG001  (signature of the real one)
    return _File(path)


def load_upstream(source_path):
    tree = ast.parse(open(source_path, encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "inspect_comfy_quant_markers":
            module = ast.Module(body=[node], type_ignores=[])
            namespace = {"json": json, "safe_open": safe_open, "Any": Any, "Callable": Callable}
            exec(compile(module, source_path, "exec"), namespace)  # the user's own sglang code
            return namespace["inspect_comfy_quant_markers"]
    sys.exit(f"{source_path}: no inspect_comfy_quant_markers function")


def _comparable(value):
    # NaN never equals itself outside containers; compare through JSON text instead.
    return json.dumps(value, allow_nan=True, sort_keys=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sglang-source", required=True)
    ap.add_argument("catalogue", nargs="?", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "corpus", "validator"))
    args = ap.parse_args()
    inspect = load_upstream(args.sglang_source)
    agree, differ, skipped = 0, 0, 0
    for case in sorted(os.listdir(args.catalogue)):
        case_dir = os.path.join(args.catalogue, case)
        spec = json.load(open(os.path.join(case_dir, "case.json"), encoding="utf-8"))
        if spec.get("strict"):
            skipped += 1
            continue
        cwd = os.getcwd()
        os.chdir(case_dir)  # paths appear in messages exactly as the case lists them
        try:
            got = {"ok": True, "layers": inspect(spec["files"])}
        except Exception as exc:  # noqa: BLE001  (upstream's exception is the verdict)
            got = {"ok": False, "type": type(exc).__name__, "message": str(exc)}
        finally:
            os.chdir(cwd)
        exp = spec["expected"]
        if got["ok"] != exp["ok"]:
            same = False
        elif got["ok"]:
            same = _comparable(got["layers"]) == _comparable(exp.get("layers"))
        else:
            same = (got["type"], got["message"]) == (exp["type"], exp["message"])
        if same:
            agree += 1
        else:
            differ += 1
            print(f"DIFF {case}: upstream {got!r:.400}\n     stored   {exp!r:.400}")
    print(f"sglang's inspect_comfy_quant_markers vs catalogue: {agree} agree, {differ} differ, "
          f"{skipped} strict cases skipped")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
