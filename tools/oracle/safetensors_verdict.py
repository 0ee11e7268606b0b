#!/usr/bin/env python3
"""Oracle for the safetensors container reader: the Python `safetensors` package's verdict per file.

Reads file paths on stdin (one per line) and prints one JSON line per file:
  {"ok": bool, "kind": <crate error name or null>, "name": <InvalidOffset tensor name or null>,
   "keys": [...], "info": [[dtype, shape], ...], "metadata": {...} or null, "message": str}
`kind` is the Rust crate's SafeTensorError variant, recovered from the message: 0.8.x prints
Display texts ("header too small"), older versions print the Debug name ("HeaderTooSmall").
Used by tests/safetensors/differential_test.cpp; exits non-zero if the package is missing.
"""
import json
import sys

from safetensors import safe_open

# Display text prefix (safetensors >= 0.5) -> variant.
DISPLAY = [
    ("header too small", "HeaderTooSmall"),
    ("header too large", "HeaderTooLarge"),
    ("invalid header length", "InvalidHeaderLength"),
    ("invalid UTF-8 in header", "InvalidHeader"),
    ("invalid start character in header", "InvalidHeaderStart"),
    ("invalid JSON in header", "InvalidHeaderDeserialization"),
    ("invalid offset for tensor", "InvalidOffset"),
    ("overflow computing buffer size", "ValidationOverflow"),
    ("The slice is slicing for subbytes dtypes", "MisalignedSlice"),
    ("invalid shape, data type, or offset for tensor", "TensorInvalidInfo"),
    ("incomplete metadata, file not fully covered", "MetadataIncompleteBuffer"),
]
DEBUG_NAMES = {v for _, v in DISPLAY}
PREFIX = "Error while deserializing header: "


def classify(exc):
    """(kind, offset tensor name) for an exception raised by safe_open."""
    msg = str(exc)
    if type(exc).__name__ != "SafetensorError":
        return "Python:" + type(exc).__name__, None
    body = msg[len(PREFIX):] if msg.startswith(PREFIX) else msg
    for text, kind in DISPLAY:
        if body.startswith(text):
            name = None
            if kind == "InvalidOffset":
                start = body.find("`")
                name = body[start + 1:body.rfind("`")] if start >= 0 else None
            return kind, name
    for kind in DEBUG_NAMES:
        if body == kind or body.startswith(kind + "("):
            return kind, None
    return "Unknown", None


def verdict(path):
    try:
        with safe_open(path, "numpy") as f:
            keys = list(f.keys())
            info = []
            for k in keys:
                s = f.get_slice(k)
                info.append([s.get_dtype(), list(s.get_shape())])
            return {"ok": True, "kind": None, "name": None, "keys": keys, "info": info,
                    "metadata": f.metadata(), "message": ""}
    except BaseException as exc:  # PanicException derives from BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        kind, name = classify(exc)
        return {"ok": False, "kind": kind, "name": name, "keys": [], "info": [], "metadata": None,
                "message": str(exc)}


def main():
    out = sys.stdout
    for line in sys.stdin:
        path = line.rstrip("\n")
        if path:
            out.write(json.dumps(verdict(path)) + "\n")
    out.flush()


if __name__ == "__main__":
    main()
