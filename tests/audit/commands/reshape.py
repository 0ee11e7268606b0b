#!/usr/bin/env python3
"""A test command for the audit protocol (standard library only): answers each job with
`w4a8check gemm --intermediates` (bit-exact), then optionally rewrites one tensor of its output so
the values stay right and only the layout is wrong, or misdeclares its hello:
  ok                 as computed
  flat:NAME          NAME reshaped to one dimension (same bytes)
  transpose:NAME     a 2-D NAME transposed (the transposed data under the transposed shape)
  unsqueeze:NAME     NAME with a trailing dimension of 1 (same bytes)
  policy:VALUE       the hello declares policy VALUE (JSON if it parses, else that string)
  stderr             writes a line to stderr, otherwise ok
$W4A8_TEST_WORKFILE, when set, receives the directory of the first job's `out`.
Usage: reshape.py W4A8CHECK --mode MODE
"""
import json
import os
import struct
import sys

from via_gemm import answer_with_gemm  # (this directory: the script's own)

SIZES = {"I8": 1, "I32": 4, "F32": 4, "BF16": 2, "F16": 2}


def rewrite(path, how, name):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = bytearray(raw[8 + n:])
    t = header[name]
    shape = t["shape"]
    if how == "flat":
        count = 1
        for d in shape:
            count *= d
        t["shape"] = [count]
    elif how == "unsqueeze":
        t["shape"] = shape + [1]
    elif how == "transpose":
        rows, cols = shape
        size = SIZES[t["dtype"]]
        begin = t["data_offsets"][0]
        old = bytes(data[begin:begin + rows * cols * size])
        for r in range(rows):
            for c in range(cols):
                src = (r * cols + c) * size
                dst = (c * rows + r) * size
                data[begin + dst:begin + dst + size] = old[src:src + size]
        t["shape"] = [cols, rows]
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(data))


def main():
    binary = sys.argv[1]
    mode = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--mode" else "ok"
    policy = "f32"
    if mode.startswith("policy:"):
        policy = mode[len("policy:"):]
        try:
            policy = json.loads(policy)  # 7, null, ...
        except ValueError:
            pass
    print(json.dumps({"protocol": "w4a8check-audit-1", "name": "reshape-" + mode, "policy": policy}), flush=True)
    workfile = os.environ.get("W4A8_TEST_WORKFILE")
    for line in sys.stdin:
        job = json.loads(line)
        if workfile:
            with open(workfile, "w") as f:
                f.write(os.path.dirname(job["out"]))
            workfile = None
        if mode == "stderr":
            print("reshape.py: a diagnostic on stderr", file=sys.stderr, flush=True)
        answer = answer_with_gemm(binary, job)
        how, _, name = mode.partition(":")
        if answer["status"] == "ok" and how in ("flat", "transpose", "unsqueeze"):
            rewrite(job["out"], how, name)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
