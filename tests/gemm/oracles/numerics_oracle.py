"""Independent oracle for tests/gemm/numerics_test.cpp, written from w4a8-gemm.md with Python floats
and numpy (never from the C++ code). Prints one table per section:
  fp8 <byte> <float32 bits hex>            all 256 FP8 E4M3FN patterns
  dec <book> <code> <byte> <w_q|nan>       the 16 x 256 decode table, book in {uniform, lut}
  f16 <f32 bits> <f16 bits>                numpy float32 -> float16 (round to nearest even)
  bf16 <f32 bits> <bf16 bits>              exact rational rounding to bfloat16, ties to even
"""
import struct
import sys
from fractions import Fraction

import numpy as np

LUT = [-0.980602, -0.794529, -0.638165, -0.500986, -0.377321, -0.263187, -0.155210, -0.050720,
       0.052541, 0.156985, 0.265284, 0.379533, 0.502636, 0.638953, 0.794876, 0.980671]


def fp8(b):
    sign = -1.0 if b & 0x80 else 1.0
    e, m = (b >> 3) & 0xF, b & 7
    if e == 0xF and m == 7:
        return float("nan")
    if e == 0:
        return sign * (m / 8.0) * 2.0 ** -6
    return sign * (1 + m / 8.0) * 2.0 ** (e - 7)


def f32bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bf16_round(bits):
    x = struct.unpack("<f", struct.pack("<I", bits))[0]
    if x != x:
        return None
    if x in (float("inf"), float("-inf")):
        return (bits >> 16)
    # Candidates: the bf16 values just below and above (as truncated patterns), by exact comparison.
    lo = bits >> 16
    v = Fraction(x)

    def val(h):
        y = struct.unpack("<f", struct.pack("<I", (h & 0xFFFF) << 16))[0]
        return y

    hi = lo + 1
    a, b = val(lo), val(hi)
    if b != b:
        return lo
    if a == float("inf") or a == float("-inf"):
        return lo
    fb = Fraction(b) if b not in (float("inf"), float("-inf")) else None
    da = abs(v - Fraction(a))
    if fb is None:
        # Rounding up would overflow: compare against the midpoint towards 2^128.
        limit = Fraction(2) ** 128 * (1 if x > 0 else -1)
        db = abs(limit - v)
    else:
        db = abs(fb - v)
    if da < db:
        return lo
    if db < da:
        return hi & 0xFFFF
    return lo if lo % 2 == 0 else hi & 0xFFFF


def main():
    out = sys.stdout
    for b in range(256):
        v = fp8(b)
        out.write("fp8 %d %08x\n" % (b, f32bits(v) if v == v else 0x7FC00000))
    for book in ("uniform", "lut"):
        cb = np.array(LUT, dtype=np.float32)
        for c in range(16):
            val = np.float32(c - 8) if book == "uniform" else cb[c]
            for b in range(256):
                s = np.float32(fp8(b))
                with np.errstate(invalid="ignore"):
                    prod = np.float32(val * s)  # float32 product
                if np.isnan(prod):
                    out.write("dec %s %d %d nan\n" % (book, c, b))
                    continue
                w = int(np.clip(np.rint(prod), -127, 127))
                out.write("dec %s %d %d %d\n" % (book, c, b, w))
    rng = np.random.default_rng(1234)
    bits = list(rng.integers(0, 2**32, size=20000, dtype=np.uint64))
    # Edge patterns: ties, subnormal boundaries, overflow thresholds.
    bits += [0x477FEFFF, 0x477FF000, 0x477FE000, 0x33000000, 0x33000001, 0x387FC000, 0x38800000,
             0x7F7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x3F808000, 0x3F818000, 0x00000001, 0x80000000]
    for u in bits:
        u = int(u)
        x = np.frombuffer(struct.pack("<I", u), dtype=np.float32)[0]
        if np.isnan(x):
            continue
        with np.errstate(over="ignore"):
            h = np.float16(x).view(np.uint16)
        out.write("f16 %08x %04x\n" % (u, int(h)))
        r = bf16_round(u)
        if r is not None:
            out.write("bf16 %08x %04x\n" % (u, r))


if __name__ == "__main__":
    main()
