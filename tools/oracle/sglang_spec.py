#!/usr/bin/env python3
"""Independent oracle for sglang's inspect_comfy_quant_markers, written from the behaviour described
in docs/validator.md (the real function, from the PyPI wheels, is run by tools/upstream/).

It uses Python's own json.loads, repr(), int() and the `safetensors` package, so the C++ validator's
messages can be compared with real Python behaviour byte for byte.

Usage:
  sglang_spec.py [--sglang V] FILE...   one checkpoint (its shards in order); prints one JSON line
  sglang_spec.py [--sglang V] --batch   stdin, one case per line: a JSON list of paths, or
                                {"dir": D, "files": [...], ["sglang": V]} (paths relative to D, which
                                becomes the working directory); one JSON line out per case
V: the sglang release predicted (src/core/sglang_versions.def); default the newest.

Output: {"ok": bool, "type": str|null, "message": str|null, "code": str (container errors only),
         "layers": {prefix: marker} (ok only)}.

Deliberate choices where upstream is not deterministic or needs torch (not installed here):
 - MXFP8 prefixes are visited sorted (upstream: Python set order, hash-randomized per process).
 - Markers are read as numpy bytes; dtypes numpy/torch cannot convert raise the TypeError torch's
   .numpy() raises ("Got unsupported ScalarType <name>"), emulated by dtype name. F4/F6 use
   approximate names (torch has no such .numpy() path).
 --strict is not supported here: strict expectations are derived by hand from the spec.
"""
import json
import os
import re
import sys

from safetensors import safe_open

_DEF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "core", "sglang_versions.def")
# version -> "WholeMarker" | "PerKey", oldest first (the table the C++ validator reads).
MERGE_RULES = dict(re.findall(r'^W4A8_SGLANG\(\s*\w+\s*,\s*"([^"]+)"\s*,\s*(\w+)', open(_DEF).read(), re.M))
LATEST = list(MERGE_RULES)[-1]

TORCH_UNSUPPORTED = {
    "BF16": "BFloat16",
    "F8_E4M3": "Float8_e4m3fn",
    "F8_E5M2": "Float8_e5m2",
    "F8_E4M3FNUZ": "Float8_e4m3fnuz",
    "F8_E5M2FNUZ": "Float8_e5m2fnuz",
    "F8_E8M0": "Float8_e8m0fnu",
    "F4": "Float4_e2m1fn_x2",
}
NO_TORCH_DTYPE = ("F6_E2M3", "F6_E3M2")  # safetensors' get_tensor refuses them (torch has no F6)

# safe_open's messages are "Error while deserializing header: " + the crate's Display text; our code
# is the crate's error name (SafeTensorError variant), recovered from the text's start.
CONTAINER_PREFIX = "Error while deserializing header: "
CONTAINER_ERRORS = [
    ("header too small", "safetensors.HeaderTooSmall"),
    ("header too large", "safetensors.HeaderTooLarge"),
    ("invalid header length", "safetensors.InvalidHeaderLength"),
    ("invalid UTF-8 in header: ", "safetensors.InvalidHeader"),
    ("invalid JSON in header: ", "safetensors.InvalidHeaderDeserialization"),
    ("invalid offset for tensor `", "safetensors.InvalidOffset"),
    ("overflow computing buffer size", "safetensors.ValidationOverflow"),
    ("The slice is slicing for subbytes dtypes", "safetensors.MisalignedSlice"),
    ("invalid shape, data type, or offset for tensor", "safetensors.TensorInvalidInfo"),
    ("incomplete metadata, file not fully covered", "safetensors.MetadataIncompleteBuffer"),
]


def container_code(message):
    body = message[len(CONTAINER_PREFIX):] if message.startswith(CONTAINER_PREFIX) else message
    for start, code in CONTAINER_ERRORS:
        if body.startswith(start):
            return code
    return "safetensors.Unknown"


CHECKED_FORMATS = ("float8_e4m3fn", "int8_tensorwise", "asym_w4a8_int8", "convrot_w4a4", "nvfp4")


def fail(msg):
    raise ValueError(msg)


class Collector:
    def __init__(self, sglang=None):
        self.meta = {}          # name -> (dtype, shape tuple); later files overwrite
        self.markers = {}       # prefix -> dict, insertion ordered
        self.weights = set()    # prefixes of quantized-dtype .weight tensors
        self.formats = set()
        self.per_key = MERGE_RULES[sglang or LATEST] == "PerKey"

    def record(self, prefix, marker):
        if self.per_key:  # 0.5.20+: a shared key whose values are != conflicts; then dict.update
            merged = self.markers.setdefault(prefix, {})
            for key, value in marker.items():
                if key in merged and merged[key] != value:
                    fail(f"Conflicting Comfy quantization markers for {prefix!r}")
            merged.update(marker)
            return
        if prefix in self.markers and self.markers[prefix] != marker:  # 0.5.19: whole dicts
            fail(f"Conflicting Comfy quantization markers for {prefix!r}")
        self.markers[prefix] = marker

    def read_metadata(self, path, metadata):
        fmt = metadata.get("quant_format")
        if fmt:
            self.formats.add(fmt.lower())
        if "_quantization_metadata" not in metadata:
            return
        try:
            config = json.loads(metadata["_quantization_metadata"])
        except json.JSONDecodeError:
            fail(f"Invalid _quantization_metadata in {path}")
        if type(config) is not dict:
            fail(f"_quantization_metadata in {path} must contain an object")
        layers = config.get("layers")
        if type(layers) is not dict:
            fail(f"_quantization_metadata in {path} must contain a layers object")
        for prefix, marker in layers.items():
            if type(marker) is not dict:
                fail(f"Comfy quantization metadata for {prefix!r} must be an object")
            self.record(prefix, marker)

    def read_marker(self, path, f, key, dtype):
        if dtype in TORCH_UNSUPPORTED:
            raise TypeError(f"Got unsupported ScalarType {TORCH_UNSUPPORTED[dtype]}")
        if dtype in NO_TORCH_DTYPE:
            from safetensors import SafetensorError
            raise SafetensorError(f"Dtype not understood: {dtype}")
        raw = f.get_tensor(key).tobytes()
        try:
            marker = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            fail(f"Invalid Comfy quantization marker {key!r} in {path}")
        if type(marker) is not dict:
            fail(f"Comfy quantization marker {key!r} must contain a JSON object")
        self.record(key[: -len(".comfy_quant")], marker)

    def read_file(self, path):
        with safe_open(path, "numpy") as f:
            self.read_metadata(path, f.metadata() or {})
            for key in f.keys():
                sl = f.get_slice(key)
                dtype, shape = sl.get_dtype(), tuple(sl.get_shape())
                self.meta[key] = (dtype, shape)
                if key.endswith(".weight") and dtype in ("F8_E4M3", "I8", "U8"):
                    self.weights.add(key[: -len(".weight")])
                if key.endswith(".comfy_quant"):
                    self.read_marker(path, f, key, dtype)


def mxfp8(c):
    if c.formats != {"mxfp8"}:
        return
    for prefix in sorted(c.weights):
        w = c.meta[prefix + ".weight"]
        s = c.meta.get(prefix + ".weight_scale")
        dt, sh = w
        good = dt == "F8_E4M3" and len(sh) == 2 and sh[1] % 32 == 0 and s == ("U8", (sh[0], sh[1] // 32))
        if not good:
            fail(f"MXFP8 layer {prefix!r} has incompatible weight/scale metadata: {w} and {s}")
        if prefix not in c.markers:
            c.markers[prefix] = {"format": "mxfp8"}


def w4a8(c, p, m):
    wd, ws = c.meta[p + ".weight"]
    sd, ss = c.meta[p + ".weight_s_rel"]
    cd, cs = c.meta[p + ".weight_s_channel"]
    g = int(m.get("group_size", 16))
    if g < 4:
        fail(f"Comfy W4A8 layer {p!r} has invalid group_size={g}")
    if (wd, sd) != ("I8", "F8_E4M3"):
        fail(f"Comfy W4A8 layer {p!r} needs I8 weights and FP8 group scales, got {wd} and {sd}")
    if cd != "F32":
        fail(f"Comfy W4A8 layer {p!r} needs F32 channel scales, got {cd}")
    if len(ws) != 2:
        fail(f"Comfy W4A8 layer {p!r} needs a 2D packed weight, got {ws}")
    k = 2 * ws[1]
    if ss != (ws[0], k // g) or cs != (ws[0],):
        fail(f"Comfy W4A8 layer {p!r} has incompatible weight/scale shapes: {ws}, {ss}, and {cs}")
    cb, corr = c.meta.get(p + ".weight_codebook"), c.meta.get(p + ".weight_correction")
    m["_has_codebook"] = cb is not None
    m["_has_correction"] = corr is not None
    if cb is not None and cb != ("F32", (16,)):
        fail(f"Comfy W4A8 layer {p!r} needs an F32[16] codebook")
    if corr is not None and corr != ("F32", (k // g, ws[0])):
        fail(f"Comfy W4A8 layer {p!r} has an incompatible correction tensor")


def w4a4(c, p, m):
    wd, ws = c.meta[p + ".weight"]
    sd, ss = c.meta[p + ".weight_scale"]
    if (wd, sd) != ("I8", "F32"):
        fail(f"Comfy W4A4 layer {p!r} needs I8 packed weights and F32 scales, got {wd} and {sd}")
    if len(ws) != 2 or ss != (ws[0],):
        fail(f"Comfy W4A4 layer {p!r} has incompatible weight/scale shapes: {ws} and {ss}")
    r = int(m.get("convrot_groupsize", 256))
    if r not in (16, 64, 256):
        fail(f"Comfy W4A4 layer {p!r} has unsupported convrot_groupsize={r}")
    k = 2 * ws[1]
    if k % 64 or k % r:
        fail(f"Comfy W4A4 layer {p!r} has input size {k}, incompatible with quant_group_size=64 "
             f"and convrot_groupsize={r}")


def nvfp4(c, p, m):
    wd, ws = c.meta[p + ".weight"]
    sd, ss = c.meta[p + ".weight_scale"]
    s2d, s2s = c.meta[p + ".weight_scale_2"]
    if (wd, sd) != ("U8", "F8_E4M3"):
        fail(f"Comfy NVFP4 layer {p!r} needs U8 packed weights and FP8 block scales, got {wd} and {sd}")
    if s2d != "F32" or s2s not in ((), (1,)):
        fail(f"Comfy NVFP4 layer {p!r} needs a scalar F32 weight_scale_2, got {s2d}{s2s}")
    if len(ws) != 2:
        fail(f"Comfy NVFP4 layer {p!r} needs a 2D packed weight, got {ws}")
    k = 2 * ws[1]
    if k % 16 or ss != (ws[0], k // 16):
        fail(f"Comfy NVFP4 layer {p!r} has incompatible weight/scale shapes: {ws} and {ss}")
    pre = c.meta.get(p + ".pre_quant_scale")
    m["_has_pre_quant_scale"] = pre is not None
    if pre is not None and (pre[0] not in ("BF16", "F16", "F32") or pre[1] != (k,)):
        fail(f"Comfy NVFP4 layer {p!r} has an incompatible pre_quant_scale: {pre[0]}{pre[1]}")


def int8(c, p, m):
    wd, ws = c.meta[p + ".weight"]
    sd, ss = c.meta[p + ".weight_scale"]
    if wd == "I8" and sd == "F32" and ss == ():
        if len(ws) != 2:
            fail(f"Comfy tensorwise INT8 layer {p!r} needs a 2D weight, got {ws}")
        m["_is_tensorwise_scalar"] = True
        return
    if (wd, sd) != ("I8", "F32"):
        fail(f"Comfy INT8 layer {p!r} needs I8 weights and F32 scales, got {wd} and {sd}")
    if len(ws) != 2 or ss != (ws[0], 1):
        fail(f"Comfy INT8 layer {p!r} has incompatible weight/scale shapes: {ws} and {ss}")
    m["_is_rowwise"] = True


def per_marker(c):
    for p, m in c.markers.items():
        fmt = m.get("format")
        if not (isinstance(fmt, str) and fmt in CHECKED_FORMATS):
            continue
        if fmt == "asym_w4a8_int8":
            need = [".weight", ".weight_s_rel", ".weight_s_channel"]
        elif fmt == "nvfp4":
            need = [".weight", ".weight_scale", ".weight_scale_2"]
        else:
            need = [".weight", ".weight_scale"]
        missing = sorted(p + s for s in need if p + s not in c.meta)
        if missing:
            fail(f"Comfy layer {p!r} is missing checkpoint tensors: {missing}")
        if fmt == "float8_e4m3fn":
            m["_activation_scheme"] = "static" if p + ".input_scale" in c.meta else "dynamic"
        elif fmt == "asym_w4a8_int8":
            w4a8(c, p, m)
        elif fmt == "convrot_w4a4":
            w4a4(c, p, m)
        elif fmt == "nvfp4":
            nvfp4(c, p, m)
        else:
            int8(c, p, m)


def inspect(paths, sglang=None):
    c = Collector(sglang)
    for path in paths:
        c.read_file(path)
    mxfp8(c)
    missing = sorted(c.weights - c.markers.keys())
    if missing:
        fail(f"Quantized weights are missing comfy_quant metadata: {missing[:5]}")
    per_marker(c)
    return c.markers


def verdict(paths, sglang=None):
    try:
        layers = inspect(paths, sglang)
    except Exception as e:  # noqa: BLE001 -- every exception is a verdict
        out = {"ok": False, "type": type(e).__name__, "message": str(e)}
        if type(e).__name__ == "SafetensorError" and not str(e).startswith("Dtype not understood"):
            out["code"] = container_code(str(e))
        return out
    return {"ok": True, "type": None, "message": None, "layers": layers}


def main(argv):
    args = argv[1:]
    sglang = None
    if args[:1] == ["--sglang"] and len(args) >= 2:
        sglang, args = args[1], args[2:]
        if sglang not in MERGE_RULES:
            print("unknown sglang version %s (known: %s)" % (sglang, ", ".join(MERGE_RULES)), file=sys.stderr)
            return 2
    if args == ["--batch"]:
        home = os.getcwd()
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            version = sglang
            if isinstance(job, dict):
                os.chdir(os.path.join(home, job["dir"]))
                version = job.get("sglang", sglang)
                job = job["files"]
            print(json.dumps(verdict(job, version)))
            os.chdir(home)
        return 0
    if not args or any(a.startswith("--") for a in args):
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(verdict(args, sglang)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
