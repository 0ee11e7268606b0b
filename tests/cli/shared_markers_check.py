"""Every layer's report shows its own marker when many layers share one marker object.

The validator shares one parsed marker between layers with the same marker bytes (and the same
derived keys), and the report formats a shared marker once. This builds layers whose markers repeat,
alternate, differ only in a derived key (a codebook) or differ in value, then checks `validate
--json` against the independent oracle (tools/oracle/sglang_spec.py) and each text line against one
formatted here from the oracle's markers. A second file carries its markers in
_quantization_metadata, where format-less flat markers are kept as their text until printed
(validate/marker.hpp): repeated, alternating, with brackets and braces inside strings, a repeated
key, non-ASCII, beside markers that are parsed (nested, naming a format, a value "format"); its
`--summary --json` format counts are checked too.

usage: shared_markers_check.py W4A8CHECK ORACLE DIR   (exit 0: match; 1: the first difference)
"""
import json
import os
import struct
import subprocess
import sys

A = b'{"format": "asym_w4a8_int8", "group_size": 16}'
B = b'{"format": "asym_w4a8_int8", "group_size": 32, "convrot": false}'
C = b'{"format": "int8_tensorwise"}'


def build(path):
    """Layers m.00..m.11 in name order; markers A A B A A(codebook) A C A B B A A."""
    plan = [A, A, B, A, A, A, C, A, B, B, A, A]
    tensors = []  # (name, dtype, shape, bytes)
    for i, marker in enumerate(plan):
        p = "m.%02d" % i
        if marker == C:
            tensors += [(p + ".weight", "I8", [4, 8], bytes(32)), (p + ".weight_scale", "F32", [], bytes(4))]
        else:
            g = 32 if marker == B else 16
            tensors += [(p + ".weight", "I8", [4, 64], bytes(256)),
                        (p + ".weight_s_rel", "F8_E4M3", [4, 128 // g], b"\x38" * (4 * 128 // g)),
                        (p + ".weight_s_channel", "F32", [4], struct.pack("<4f", 1, 1, 1, 1))]
            if i == 4:
                tensors.append((p + ".weight_codebook", "F32", [16], bytes(64)))
        tensors.append((p + ".comfy_quant", "U8", [len(marker)], marker))
    header, data = {}, b""
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


# Metadata markers, spelled exactly (a repeated key, spacing, a float written with an exponent).
META_LAYERS = [
    ("m.00", A.decode()),
    ("x.01", '{"a": 1}'),
    ("x.02", '{"a": 1}'),
    ("x.03", '{"a": 2, "b": "[{}]"}'),
    ("x.04", '{"a": 1}'),
    ("m.05", A.decode()),
    ("x.06", '{"s": "}", "f": 1.0e5, "u": "\u00e9"}'),  # (an é in the text, not an escape)
    ("x.07", '{"k": 1,"k" :2}'),
    ("x.08", '{"n": [1, 2]}'),
    ("x.09", '{"v": "format"}'),
    ("x.10", '{}'),
    ("x.11", '{"Format": "asym_w4a8_int8", "t": true, "z": null}'),
    ("x.12", '{}'),
]


def build_metadata(path):
    """The layers above in _quantization_metadata (non-ASCII as UTF-8 bytes); m.* have tensors."""
    meta = "{" + ", ".join('"%s": %s' % (k, v) for k, v in META_LAYERS) + "}"
    header = {"__metadata__": {"_quantization_metadata": '{"format_version": "1.0", "layers": %s}' % meta}}
    data = b""
    for p in ("m.00", "m.05"):
        for name, dtype, shape, blob in [(p + ".weight", "I8", [4, 64], bytes(256)),
                                         (p + ".weight_s_rel", "F8_E4M3", [4, 8], b"\x38" * 32),
                                         (p + ".weight_s_channel", "F32", [4], struct.pack("<4f", 1, 1, 1, 1))]:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
            data += blob
    h = json.dumps(header, ensure_ascii=False).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def text_line(prefix, marker):
    """print_layers' marker line: repr(prefix), format as str, the other keys as json.dumps."""
    f = marker.get("format")
    fmt = "(no format)" if f is None else f if isinstance(f, str) else json.dumps(f)
    rest = "".join(" %s=%s" % (k, json.dumps(v)) for k, v in marker.items() if k != "format")
    return "  %r  format=%s%s" % (prefix, fmt, rest)


def check(binary, oracle_py, path):
    """(None, the oracle's layers) when --json, text and --summary --json agree with the oracle,
    else (the first difference, None)."""
    want = json.loads(subprocess.run([sys.executable, oracle_py, path], capture_output=True, text=True,
                                     check=True).stdout)
    if not want["ok"]:
        return "the oracle rejects the test file: %s" % want, None
    got = json.loads(subprocess.run([binary, "validate", "--json", path], capture_output=True, text=True).stdout)
    if list(got["layers"].items()) != list(want["layers"].items()):
        return "--json layers differ from the oracle:\n  ours   %s\n  oracle %s" % (got["layers"], want["layers"]), None
    text = subprocess.run([binary, "validate", path], capture_output=True, text=True).stdout
    lines = [ln for ln in text.splitlines() if ln.startswith("  '")]
    expected = [text_line(p, m) for p, m in want["layers"].items()]
    if lines != expected:
        for a, b in zip(lines + [""] * len(expected), expected + [""] * len(lines)):
            if a != b:
                return "text differs:\n  ours     %s\n  expected %s" % (a, b), None
    formats = {}
    for m in want["layers"].values():
        f = m.get("format")
        f = "(no format)" if f is None else f if isinstance(f, str) else json.dumps(f)
        formats[f] = formats.get(f, 0) + 1
    summary = json.loads(subprocess.run([binary, "validate", "--summary", "--json", path], capture_output=True,
                                        text=True).stdout)
    if list(summary["formats"].items()) != list(formats.items()):
        return "--summary --json formats differ:\n  ours     %s\n  expected %s" % (summary["formats"], formats), None
    return None, want["layers"]


def main():
    binary, oracle_py, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    counts = []
    for name, make in (("shared-markers", build), ("metadata-markers", build_metadata)):
        path = os.path.join(work, name + ".safetensors")
        make(path)
        problem, layers = check(binary, oracle_py, path)
        if problem:
            print("%s: %s" % (name, problem))
            return 1
        counts.append((len(layers), len({json.dumps(m) for m in layers.values()})))
    print("OK: %d layers, %d distinct markers; in metadata: %d layers, %d distinct markers" % (counts[0] + counts[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
