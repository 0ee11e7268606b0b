#!/usr/bin/env python3
"""Builds corpus/validator/: crafted checkpoints, one concern per case, for the validator replay test.

Deterministic: the same script writes the same bytes. Each case is corpus/validator/<NNN-name>/ with
its .safetensors file(s) and case.json:
  {"files": [...], "strict": bool, "expected": {"ok", "type", "message", ["code"], ["layers"]},
   ["expected_by_sglang": {version: verdict}], ["sglang": verdict without --strict],
   ["sglang_versions": [version, ...]]}
Paths in messages are the file names as listed (the oracle runs inside the case directory).
Non-strict expectations come from sglang's REAL inspect_comfy_quant_markers, run from the PyPI wheel of
every profiled release (tools/upstream/sglang_upstream.py; src/core/sglang_versions.def lists them):
"expected" is the newest release's verdict, "expected_by_sglang" the releases whose verdict differs
from it. "sglang_versions" (random cases only) limits the releases a case speaks for; absent: all.
Strict expectations are written here by hand from docs/validator.md; for those cases "sglang" holds
upstream's verdict, which every release must share (and which must accept the checkpoint).

Usage: make_validator_catalogue.py [OUT_DIR]   (default: corpus/validator next to this repo's tools/)
       make_validator_catalogue.py --check [DIR]
         rebuilds the catalogue in a temporary directory (re-running the oracle) and fails unless
         every file, case.json expectations included, equals the stored one byte for byte.
       make_validator_catalogue.py --random N SEED OUT_DIR [VERSION]
         writes N seeded random checkpoints (near-valid layers of every format with one or more
         random defects) in the same layout, expectations from release VERSION's wheel (default the
         newest); for differential tests.
Exit status 3: a wheel could not be had (the message says why; W4A8_OFFLINE=1 forbids downloads).
"""
import json
import math
import os
import random
import shutil
import struct
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools", "upstream"))
sys.path.insert(0, os.path.join(ROOT, "tools", "oracle"))
import sglang_upstream as upstream  # noqa: E402
from sglang_spec import container_code  # noqa: E402  (the crate's error name from safe_open's text)

BITS = {"BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
        "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
        "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64}


# ---- container writing ---------------------------------------------------------------------------
def nbytes(dtype, shape):
    return math.prod(shape) * BITS[dtype] // 8


def T(name, dtype, shape, data=None):
    """A tensor; data defaults to zeros."""
    shape = list(shape)
    if data is None:
        data = bytes(nbytes(dtype, shape))
    assert len(data) == nbytes(dtype, shape), (name, len(data))
    return (name, dtype, shape, bytes(data))


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


def container(tensors, metadata=None, ascii_names=True):
    """A valid safetensors file: tensors laid out in the given order, header padded to 8."""
    header, data, off = {}, b"", 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        data += raw
        off += len(raw)
    text = json.dumps(header, ensure_ascii=ascii_names, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def raw_container(header_text, data=b""):
    if isinstance(header_text, str):
        header_text = header_text.encode("utf-8")
    return struct.pack("<Q", len(header_text)) + header_text + data


def marker(prefix, obj, dtype="U8"):
    raw = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    size = BITS[dtype] // 8
    assert len(raw) % size == 0, prefix
    return T(prefix + ".comfy_quant", dtype, [len(raw) // size], raw)


# ---- layers --------------------------------------------------------------------------------------
def w4a8(p, n=4, cols=128, g=16, srel_shape=None, srel=None, channel=None, codebook=None,
         correction=None, bias=None, mark=None, dtypes=("I8", "F8_E4M3", "F32")):
    """asym_w4a8_int8 tensors: weight I8 (n, cols) packs K = 2 * cols inputs."""
    k = 2 * cols
    groups = k // g if isinstance(g, int) and g > 0 else 0
    srel_shape = srel_shape if srel_shape is not None else (n, groups)
    out = [T(p + ".weight", dtypes[0], (n, cols)),
           T(p + ".weight_s_rel", dtypes[1], srel_shape, srel if srel is not None else
             (bytes([0x38]) * nbytes(dtypes[1], srel_shape) if dtypes[1] == "F8_E4M3" else None)),
           T(p + ".weight_s_channel", dtypes[2], (n,), channel if channel is not None else
             (f32(*[1.0] * n) if dtypes[2] == "F32" else None))]
    if codebook is not None:
        out.append(T(p + ".weight_codebook", "F32", (16,), codebook))
    if correction is not None:
        out.append(T(p + ".weight_correction", "F32", (groups, n), correction))
    if bias is not None:
        out.append(bias)
    if mark is not False:
        out.append(marker(p, mark if mark is not None else {"format": "asym_w4a8_int8", "group_size": g}))
    return out


def codebook16():
    return f32(*[float(i - 8) for i in range(16)])


# ---- cases ---------------------------------------------------------------------------------------
CASES = []  # (name, files [(fname, bytes)], strict expectation or None)


def case(name, *files, strict=None):
    if files and isinstance(files[0], bytes):
        files = [("model.safetensors", files[0])]
    CASES.append((name, list(files), strict))


def strict_err(kind_code, message):
    return {"ok": False, "type": "ValueError", "message": message, "code": kind_code}


def one(tensors, metadata=None, ascii_names=True):
    return container(tensors, metadata, ascii_names)


def build_valid():
    case("valid-w4a8", one(w4a8("blk.0.attn")))
    case("valid-w4a8-codebook-correction-bias",
         one(w4a8("blk.0.mlp", codebook=codebook16(), correction=f32(*[0.5] * 64),
                  bias=T("blk.0.mlp.bias", "BF16", (4,)))))
    case("valid-w4a8-metadata-layers",
         one(w4a8("m.l", mark=False),
             {"_quantization_metadata": json.dumps({"layers": {"m.l": {"format": "asym_w4a8_int8"}}})}))
    case("valid-float8-dynamic", one([T("f.weight", "F8_E4M3", (4, 8)), T("f.weight_scale", "F32", ()),
                                      marker("f", {"format": "float8_e4m3fn"})]))
    case("valid-float8-static", one([T("f.weight", "F8_E4M3", (4, 8)), T("f.weight_scale", "F32", ()),
                                     T("f.input_scale", "F32", ()), marker("f", {"format": "float8_e4m3fn"})]))
    case("valid-int8-tensorwise", one([T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", ()),
                                       marker("i", {"format": "int8_tensorwise"})]))
    case("valid-int8-rowwise", one([T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", (4, 1)),
                                    marker("i", {"format": "int8_tensorwise"})]))
    case("valid-w4a4", one([T("c.weight", "I8", (4, 128)), T("c.weight_scale", "F32", (4,)),
                            marker("c", {"format": "convrot_w4a4", "convrot_groupsize": 64})]))
    case("valid-nvfp4", one([T("v.weight", "U8", (4, 8)), T("v.weight_scale", "F8_E4M3", (4, 1)),
                             T("v.weight_scale_2", "F32", (1,)), T("v.pre_quant_scale", "BF16", (16,)),
                             marker("v", {"format": "nvfp4"})]))
    case("valid-mxfp8", one([T("x.weight", "F8_E4M3", (4, 64)), T("x.weight_scale", "U8", (4, 2)),
                             T("b.weight", "F8_E4M3", (1, 32)), T("b.weight_scale", "U8", (1, 1)),
                             marker("b", {"format": "kept"})], {"quant_format": "MXfp8"}))
    case("mxfp8-marked-u8-layer-still-checked",
         one([T("x.weight", "F8_E4M3", (4, 64)), T("x.weight_scale", "U8", (4, 2)),
              T("y.weight", "U8", (2, 32)), T("y.weight_scale", "U8", (2, 1)),
              marker("y", {"format": "custom"})], {"quant_format": "MXfp8"}))
    case("valid-mxfp8-two-shards-empty-format",
         ("a.safetensors", one([T("x.weight", "F8_E4M3", (4, 64)), T("x.weight_scale", "U8", (4, 2))],
                               {"quant_format": "mxfp8"})),
         ("b.safetensors", one([T("z", "F32", (1,))], {"quant_format": ""})))
    case("valid-unknown-formats", one([T("u.weight", "I8", (2, 2)), marker("u", {"format": "w2a2"}),
                                       T("n.weight", "I8", (2, 2)), marker("n", {"format": 5}),
                                       T("o.weight", "U8", (2, 2)), marker("o", {"other": 1})]))
    case("valid-unquantized-only", one([T("a.weight", "F32", (2, 2)), T("a.bias", "BF16", (2,))]))
    case("valid-no-tensors", one([], {"quant_format": "fp8"}))
    case("valid-multi-file-split",
         ("shard-1.safetensors", one([T("s.weight", "I8", (4, 128)), marker("s", {"format": "asym_w4a8_int8"})])),
         ("shard-2.safetensors", one(w4a8("s", mark=False)[1:])))
    case("valid-equal-markers-16-16.0-true",
         ("a.safetensors", one(w4a8("e", mark={"format": "asym_w4a8_int8", "group_size": 16, "f": True}))),
         ("b.safetensors", one([marker("e", {"group_size": 16.0, "f": 1, "format": "asym_w4a8_int8"})]),),
         ("c.safetensors", one([], {"_quantization_metadata": json.dumps(
             {"layers": {"e": {"f": 1.0, "group_size": 16, "format": "asym_w4a8_int8"}}})})))
    case("valid-nan-markers-equal",
         ("a.safetensors", one([marker("q", b'{"x": NaN, "y": [NaN]}')])),
         ("b.safetensors", one([marker("q", b'{"y": [NaN], "x": NaN}')])))
    case("valid-mixed-formats", one(w4a8("a") + [T("b.weight", "I8", (4, 8)), T("b.weight_scale", "F32", ()),
                                                  marker("b", {"format": "int8_tensorwise"})]))
    case("valid-derived-key-overwritten",
         one(w4a8("d", mark={"format": "asym_w4a8_int8", "_has_codebook": "yes", "zz": 1})))
    # int() edge cases that upstream accepts.
    for label, gs, cols in [("space-16", "  16 ", 128), ("underscore", "1_6", 128), ("arabic-32", "\u0663\u0662", 128),
                            ("float-16.9", 16.9, 128), ("exp-1e1", 1e1, 40), ("neg-zero-str", "+16", 128),
                            ("huge-1e30", 10**30, 128)]:
        case("valid-group-size-" + label, one(w4a8("g", cols=cols, g=int(str(gs).strip().replace("_", ""))
                                                     if isinstance(gs, str) else int(gs),
                                                     mark={"format": "asym_w4a8_int8", "group_size": gs})))


def build_encodings():
    obj = '{"format": "int8_tensorwise", "n\u00e9": "\U0001F600"}'
    base = [T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", ())]
    for label, raw in [("utf8-bom", b"\xef\xbb\xbf" + obj.encode()),
                       ("utf16-le-bom", obj.encode("utf-16")),  # little-endian BOM on this platform
                       ("utf16-be-bom", b"\xfe\xff" + obj.encode("utf-16-be")),
                       ("utf16-le", obj.encode("utf-16-le")), ("utf16-be", obj.encode("utf-16-be")),
                       ("utf32-le-bom", b"\xff\xfe\x00\x00" + obj.encode("utf-32-le")),
                       ("utf32-be-bom", b"\x00\x00\xfe\xff" + obj.encode("utf-32-be")),
                       ("utf32-le", obj.encode("utf-32-le")), ("utf32-be", obj.encode("utf-32-be"))]:
        case("marker-encoding-" + label, one(base + [marker("i", raw)]))
    case("marker-utf8-surrogate-bytes", one(base + [marker("i", b'{"format": "int8_tensorwise", "s": "\xed\xa0\x80"}')]))
    case("marker-utf16-lone-surrogate", one(base + [marker("i", '{"format": "int8_tensorwise", "s": "'.encode("utf-16-le")
                                                           + b"\x00\xd8" + '"}'.encode("utf-16-le"))]))
    case("marker-invalid-utf8", one(base + [marker("i", b'{"format": "\xc3("}')]))
    case("marker-utf16-odd-length", one(base + [marker("i", '{"a":1}'.encode("utf-16-le") + b"\x00")]))
    case("marker-dtype-i8", one(base + [marker("i", {"format": "int8_tensorwise"}, "I8")]))
    case("marker-dtype-bool", one(base + [marker("i", {"format": "int8_tensorwise"}, "BOOL")]))
    case("marker-dtype-i16", one(base + [marker("i", b'{"format": "int8_tensorwise"} ', "I16")]))
    case("marker-dtype-f32", one(base + [marker("i", b'{"format": "int8_tensorwise"}   ', "F32")]))
    case("marker-dtype-u64", one(base + [marker("i", b'{"format": "int8_tensorwise"}   ', "U64")]))
    for dt in ["BF16", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"]:
        raw = b'{"format": "int8_tensorwise"}   '
        case("marker-dtype-torch-unsupported-" + dt.lower(),
             one(base + [T("i.comfy_quant", dt, (len(raw) * 8 // BITS[dt],), raw)]))
    case("marker-empty", one(base + [T("i.comfy_quant", "U8", (0,))]))
    case("marker-trailing-nul", one(base + [marker("i", b'{"format": "int8_tensorwise"}\x00')]))
    case("marker-whitespace-around", one(base + [marker("i", b' \n\t{"format": "int8_tensorwise"}\r\n ')]))
    case("marker-duplicate-keys", one(base + [marker("i", b'{"format": "nvfp4", "format": "int8_tensorwise"}')]))
    case("marker-not-object", one(base + [marker("i", b'[{"format": "int8_tensorwise"}]')]))
    case("marker-string", one(base + [marker("i", b'"int8_tensorwise"')]))
    case("marker-syntax", one(base + [marker("i", b"{format: int8}")]))
    case("marker-4301-digit-int", one(base + [marker("i", b'{"x": ' + b"7" * 4301 + b"}")]))
    case("marker-4300-digit-int", one(base + [marker("i", b'{"format": "int8_tensorwise", "x": ' + b"7" * 4300 + b"}")]))
    case("marker-deep-array", one(base + [marker("i", b"[" * 5000 + b"]" * 5000)]))
    case("marker-deep-object", one(base + [marker("i", b'{"a":' * 5000 + b"1" + b"}" * 5000)]))
    case("marker-nan-infinity", one(base + [marker("i", b'{"format": "int8_tensorwise", "a": NaN, "b": -Infinity}')]))


def build_metadata():
    w = w4a8("m", mark=False)
    for label, text in [("syntax", "{layers"), ("empty", ""), ("bom", "\ufeff{}"), ("trailing-nul", "{}\x00"),
                        ("not-object", "[]"), ("no-layers", "{}"), ("layers-list", '{"layers": []}'),
                        ("layers-null", '{"layers": null}'), ("deep", "[" * 5000 + "]" * 5000),
                        ("big-int", '{"layers": {}, "n": ' + "1" * 4301 + "}"),
                        ("marker-not-object", '{"layers": {"m": "asym_w4a8_int8"}}')]:
        case("metadata-" + label, one(w, {"_quantization_metadata": text}))
    case("metadata-surrogate-name",
         one(w, {"_quantization_metadata": '{"layers": {"m": {"format": "asym_w4a8_int8"}, "bad\\ud800x": 3}}'}))
    case("metadata-conflict-with-marker",
         one(w + [marker("m", {"format": "asym_w4a8_int8", "group_size": 32})],
             {"_quantization_metadata": json.dumps({"layers": {"m": {"format": "asym_w4a8_int8"}}})}))
    case("metadata-duplicate-layer-keys-last-wins",
         one(w, {"_quantization_metadata": '{"layers": {"m": {"format": "bad"}, "m": {"format": "asym_w4a8_int8"}}}'}))
    case("conflict-across-files",
         ("a.safetensors", one(w4a8("c"))),
         ("b.safetensors", one([marker("c", {"format": "asym_w4a8_int8", "group_size": 16.5})])))


def build_names():
    names = {"quote": "it's", "both-quotes": "say \"it's\"", "newline": "a\nb", "del": "x\x7fy",
             "nel": "p\u0085q", "line-sep": "u\u2028v", "emoji": "l\U0001F600", "tab-backslash": "t\t\\",
             "nbsp": "a\u00a0b", "private-use": "z\ue000", "cjk": "\u5c42.0"}
    for label, name in names.items():
        # A w4a8 marker whose tensors are missing: the message prints the prefix and the names.
        case("name-" + label, one([marker(name, {"format": "asym_w4a8_int8"}), T(name + ".weight", "I8", (4, 8))],
                                  ascii_names=(label != "cjk")))
    case("name-missing-markers-seven", one([T("w%d.weight" % i, "I8", (2, 2)) for i in (7, 3, 1, 6, 2, 5, 4)] +
                                           [T("\u00e9.weight", "U8", (1,)), T("Z.weight", "F8_E4M3", (1,))]))


def build_rules():
    # mxfp8
    case("mxfp8-no-scale", one([T("x.weight", "F8_E4M3", (4, 64))], {"quant_format": "mxfp8"}))
    case("mxfp8-bad-scale-shape", one([T("x.weight", "F8_E4M3", (4, 64)), T("x.weight_scale", "U8", (4, 3))],
                                      {"quant_format": "mxfp8"}))
    case("mxfp8-i8-weight-rank1", one([T("x.weight", "I8", (64,)), T("x.weight_scale", "U8", (2,))],
                                      {"quant_format": "MXFP8"}))
    case("mxfp8-cols-not-32", one([T("x.weight", "F8_E4M3", (2, 48)), T("x.weight_scale", "U8", (2, 1))],
                                  {"quant_format": "mxfp8"}))
    case("mxfp8-other-format-too", ("a.safetensors", one([T("x.weight", "F8_E4M3", (4, 64))], {"quant_format": "mxfp8"})),
         ("b.safetensors", one([T("y", "F32", (1,))], {"quant_format": "nvfp4"})))
    # missing tensors
    case("missing-w4a8-tensors", one([T("m.weight", "I8", (4, 8)), marker("m", {"format": "asym_w4a8_int8"})]))
    case("missing-nvfp4-scale-2", one([T("v.weight", "U8", (4, 8)), T("v.weight_scale", "F8_E4M3", (4, 1)),
                                       marker("v", {"format": "nvfp4"})]))
    case("missing-weight-float8", one([marker("f", {"format": "float8_e4m3fn"})]))
    # w4a8
    for label, gs in [("2", 2), ("true", True), ("3.9", 3.9), ("neg", -16), ("str-3", " 3 "), ("zero", 0)]:
        case("w4a8-group-size-" + label, one(w4a8("g", mark={"format": "asym_w4a8_int8", "group_size": gs})))
    for label, gs in [("nan", "NaN"), ("inf", "Infinity"), ("neg-inf", "-Infinity"), ("null", "null"),
                      ("list", "[]"), ("dict", "{}"), ("str-abc", '"abc"'), ("str-double-underscore", '"1__6"'),
                      ("str-4301-digits", '"' + "1" * 4301 + '"'), ("str-empty", '""'), ("str-float", '"16.0"'),
                      ("str-repr-stress", '"\\u2028x\\n\'"')]:
        case("w4a8-group-size-" + label,
             one(w4a8("g", mark=('{"format": "asym_w4a8_int8", "group_size": %s}' % gs).encode())))
    case("w4a8-dtypes", one(w4a8("d", dtypes=("U8", "F8_E4M3", "F32"))))
    case("w4a8-dtypes-srel", one(w4a8("d", dtypes=("I8", "BF16", "F32"))))
    case("w4a8-channel-dtype", one(w4a8("d", dtypes=("I8", "F8_E4M3", "F16"))))
    case("w4a8-rank", one([T("r.weight", "I8", (4, 8, 2)), T("r.weight_s_rel", "F8_E4M3", (4, 1)),
                           T("r.weight_s_channel", "F32", (4,)), marker("r", {"format": "asym_w4a8_int8"})]))
    case("w4a8-rank-0", one([T("r.weight", "I8", ()), T("r.weight_s_rel", "F8_E4M3", ()),
                             T("r.weight_s_channel", "F32", ()), marker("r", {"format": "asym_w4a8_int8"})]))
    case("w4a8-shapes-srel", one(w4a8("s", srel_shape=(4, 15))))
    case("w4a8-shapes-channel", one([t if not t[0].endswith("s_channel") else T(t[0], "F32", (4, 1))
                                     for t in w4a8("s")]))
    case("w4a8-codebook-shape", one(w4a8("c") + [T("c.weight_codebook", "F32", (15,))]))
    case("w4a8-codebook-dtype", one(w4a8("c") + [T("c.weight_codebook", "F16", (16,))]))
    case("w4a8-correction", one(w4a8("c") + [T("c.weight_correction", "F32", (4, 16))]))
    case("w4a8-huge-k", one([T("h.weight", "I8", (0, 2**63)), T("h.weight_s_rel", "F8_E4M3", (0, 2**60)),
                             T("h.weight_s_channel", "F32", (0,)), marker("h", {"format": "asym_w4a8_int8"})]))
    case("w4a8-huge-k-mismatch", one([T("h.weight", "I8", (0, 2**64 - 1)), T("h.weight_s_rel", "F8_E4M3", (0, 3)),
                                      T("h.weight_s_channel", "F32", (0,)),
                                      marker("h", {"format": "asym_w4a8_int8", "group_size": 2**63})]))
    # w4a4
    case("w4a4-dtypes", one([T("c.weight", "U8", (4, 128)), T("c.weight_scale", "F32", (4,)),
                             marker("c", {"format": "convrot_w4a4"})]))
    case("w4a4-shapes", one([T("c.weight", "I8", (4, 128)), T("c.weight_scale", "F32", (4, 1)),
                             marker("c", {"format": "convrot_w4a4"})]))
    case("w4a4-convrot-groupsize", one([T("c.weight", "I8", (4, 128)), T("c.weight_scale", "F32", (4,)),
                                        marker("c", {"format": "convrot_w4a4", "convrot_groupsize": 32})]))
    case("w4a4-convrot-groupsize-null", one([T("c.weight", "I8", (4, 128)), T("c.weight_scale", "F32", (4,)),
                                             marker("c", {"format": "convrot_w4a4", "convrot_groupsize": None})]))
    case("w4a4-input-size", one([T("c.weight", "I8", (4, 96)), T("c.weight_scale", "F32", (4,)),
                                 marker("c", {"format": "convrot_w4a4"})]))
    # nvfp4
    nv = lambda w=("U8", (4, 8)), s=("F8_E4M3", (4, 1)), s2=("F32", ()), extra=(): one(
        [T("v.weight", *w), T("v.weight_scale", *s), T("v.weight_scale_2", *s2), *extra, marker("v", {"format": "nvfp4"})])
    case("nvfp4-dtypes", nv(w=("I8", (4, 8))))
    case("nvfp4-scale-2", nv(s2=("F32", (2,))))
    case("nvfp4-scale-2-dtype", nv(s2=("F16", ())))
    case("nvfp4-rank", nv(w=("U8", (32,))))
    case("nvfp4-shapes", nv(s=("F8_E4M3", (4, 2))))
    case("nvfp4-k-not-16", nv(w=("U8", (4, 4)), s=("F8_E4M3", (4, 0))))
    case("nvfp4-pre-quant-scale", nv(extra=[T("v.pre_quant_scale", "F32", (8,))]))
    case("nvfp4-pre-quant-scale-dtype", nv(extra=[T("v.pre_quant_scale", "F64", (16,))]))
    # int8
    case("int8-tensorwise-rank", one([T("i.weight", "I8", (4, 8, 1)), T("i.weight_scale", "F32", ()),
                                      marker("i", {"format": "int8_tensorwise"})]))
    case("int8-dtypes", one([T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F16", ()),
                             marker("i", {"format": "int8_tensorwise"})]))
    case("int8-shapes", one([T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", (4,)),
                             marker("i", {"format": "int8_tensorwise"})]))
    case("first-failure-in-marker-order", one(
        [marker("z", {"format": "int8_tensorwise"}), T("z.weight", "I8", (4, 8)), T("z.weight_scale", "F16", ())],
        {"_quantization_metadata": json.dumps({"layers": {"z": {"format": "int8_tensorwise"},
                                                          "a": {"format": "nvfp4"}}})}))
    case("multi-file-later-overwrites", ("a.safetensors", one(w4a8("o"))),
         ("b.safetensors", one([T("o.weight_s_channel", "F64", (4,))])))


def build_container():
    good = one(w4a8("a"))
    n = struct.unpack("<Q", good[:8])[0]
    case("st-header-too-small", b"\x01\x02\x03")
    case("st-header-too-large", struct.pack("<Q", 100_000_001) + b"{}")
    case("st-invalid-header-length", struct.pack("<Q", 64) + b"{}")
    case("st-invalid-header-utf8", raw_container(b'{"\xff": 1}'))
    case("st-invalid-header-deserialization", raw_container("[]"))
    case("st-invalid-offset", raw_container('{"a":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', b"xxx"))
    case("st-validation-overflow", raw_container('{"a":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,2]}}', b"xx"))
    case("st-misaligned-slice", raw_container('{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', b"xx"))
    case("st-tensor-invalid-info", raw_container('{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,3]}}', b"xxx"))
    case("st-metadata-incomplete-buffer", good + b"extra")
    case("st-error-in-second-file-after-marker-error",
         ("a.safetensors", one([marker("i", b"{bad")])), ("b.safetensors", b"\x00"))
    case("st-error-in-second-file", ("a.safetensors", good), ("b.safetensors", good[: 8 + n]))



def build_container_messages():
    """Container errors whose text varies: Rust's Utf8Error, serde_json's message and position, the
    raw tensor name (appended last so earlier case numbers stay put)."""
    x4 = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    case("st-utf8-incomplete-at-end", raw_container(b'{"a":1}\xe2\x82'))
    case("st-utf8-invalid-3-bytes", raw_container(b'{"\xf0\x9f\x98x":1}'))
    case("st-json-eof-object", raw_container("{"))
    case("st-json-eof-empty", raw_container(""))
    case("st-json-key-must-be-string", raw_container("{1:2}"))
    case("st-json-expected-colon", raw_container('{"a" 1}'))
    case("st-json-expected-comma-object-multiline", raw_container('{\n "a":' + x4 + '\n "b"}'))
    case("st-json-trailing-comma", raw_container('{"a":' + x4 + ',}', b"xxxx"))
    case("st-json-trailing-characters", raw_container('{"a":' + x4 + '} x', b"xxxx"))
    case("st-json-expected-ident", raw_container('{\r\n"a":\r\n  nul}'))
    case("st-json-invalid-escape", raw_container('{"a\\q":1}'))
    case("st-json-control-character", raw_container('{"a\x01":1}'))
    case("st-json-lone-surrogate", raw_container('{"\\udc00":1}'))
    case("st-json-end-of-hex-escape", raw_container('{"\\ud800x":1}'))
    case("st-json-number-out-of-range", raw_container('{"a":1e999}'))
    case("st-json-recursion-limit", raw_container('{"a":' + "[" * 130))
    case("st-json-invalid-type-root-string", raw_container('"a\\u2028b"  x'))
    case("st-json-invalid-type-float", raw_container('{"a":{"dtype":"F32","shape":[1e16],"data_offsets":[0,4]}}', b"xxxx"))
    case("st-json-invalid-value-negative", raw_container('{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', b"xxxx"))
    case("st-json-missing-field", raw_container('{"a":{"dtype":"F32","shape":[1]}}'))
    case("st-json-duplicate-field", raw_container('{"a":{"dtype":"F32","shape":[1],"dtype":"F16","data_offsets":[0,4]}}'))
    case("st-json-unknown-variant", raw_container('{"a":{"dtype":"F31","shape":[1],"data_offsets":[0,4]}}', b"xxxx"))
    case("st-json-invalid-length", raw_container('{"a":["F32",[1],[0,4],1]}', b"xxxx"))
    case("st-json-metadata-streamed-first", raw_container('{"a":' + x4 + ',"__metadata__":{"k":1}, "b" 2}'))
    case("st-json-metadata-duplicate", raw_container('{"__metadata__":null, "__metadata__":{}}'))
    case("st-invalid-offset-raw-name", raw_container('{"a\\"b\\n\\u00e9`":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}', b"xx"))

def build_merge():
    """A prefix recorded twice: 0.5.19 compares whole markers, 0.5.20+ merge them key by key
    (expectations per release come from the wheels; docs/validator.md "Upstream versions")."""
    qm = lambda layers: {"_quantization_metadata": json.dumps(layers and {"layers": layers})}
    w4 = {"format": "asym_w4a8_int8"}
    # Header a subset of the tensor marker (it summarizes it).
    case("merge-header-subset", one(w4a8("m", g=32, mark={"format": "asym_w4a8_int8", "group_size": 32}),
                                    qm({"m": w4})))
    # Header a superset: a key only the header has.
    case("merge-header-superset", one(w4a8("m", g=32, mark=w4),
                                      qm({"m": {"format": "asym_w4a8_int8", "group_size": 32, "note": "calibrated"}})))
    # A key only in the header, the format only in the tensor marker (the header's key comes first).
    case("merge-key-only-in-header", one(w4a8("m", g=64, mark=w4), qm({"m": {"group_size": 64}})))
    # Equal markers, keys reordered, numbers spelled differently (16 == 16.0, 1 == true).
    case("merge-reordered-equal", one(w4a8("m", mark={"group_size": 16.0, "f": 1, "format": "asym_w4a8_int8"}),
                                      qm({"m": {"format": "asym_w4a8_int8", "f": True, "group_size": 16}})))
    # A shared key with a different value: a conflict under every release.
    case("merge-shared-key-differs", one(w4a8("m", mark={"format": "asym_w4a8_int8", "group_size": 16}),
                                         qm({"m": {"group_size": 32}})))
    case("merge-shared-key-str-vs-int", one(w4a8("m", mark={"format": "asym_w4a8_int8", "group_size": 16}),
                                            qm({"m": {"group_size": "16"}})))
    # The merged marker fails a later rule (0.5.19: the conflict comes first).
    case("merge-then-rule-fails", one(w4a8("m", mark=w4), qm({"m": {"group_size": 2}})))
    # An empty header marker.
    case("merge-empty-header-marker", one(w4a8("m"), qm({"m": {}})))
    # Two shards, each holding part of the marker.
    case("merge-two-shards-parts",
         ("shard-1.safetensors", one([T("m.weight", "I8", (4, 128)), marker("m", w4)])),
         ("shard-2.safetensors", one(w4a8("m", g=64, mark={"group_size": 64, "convrot": True})[1:])))
    # Two files, each with a _quantization_metadata holding part of the marker.
    case("merge-two-metadata-headers",
         ("shard-1.safetensors", one(w4a8("m", g=64, mark=False)[:1], qm({"m": {"group_size": 64}}))),
         ("shard-2.safetensors", one(w4a8("m", g=64, mark=False)[1:],
                                     qm({"m": {"format": "asym_w4a8_int8", "group_size": 64.0}}))))
    # Three sources: header of file 1, tensor of file 1, header of file 2.
    case("merge-three-sources",
         ("shard-1.safetensors", one(w4a8("m", g=32, mark={"group_size": 32}), qm({"m": w4}))),
         ("shard-2.safetensors", one([T("x", "F32", (1,))], qm({"m": {"convrot": True, "format": "asym_w4a8_int8"}}))))
    # NaN at the top level of both markers: equal as whole dicts (identity), != key by key.
    case("merge-nan-top-level",
         ("a.safetensors", one([marker("q", b'{"format": "other", "x": NaN}')])),
         ("b.safetensors", one([marker("q", b'{"x": NaN, "format": "other"}')])))
    # NaN nested in a list and an object: equal under every release.
    case("merge-nan-nested",
         ("a.safetensors", one([marker("q", b'{"y": [NaN, 1], "z": {"w": NaN}}')])),
         ("b.safetensors", one([marker("q", b'{"z": {"w": NaN}, "y": [NaN, 1.0]}')])))
    # NaN in one marker only, the other marker without that key.
    case("merge-nan-once", ("a.safetensors", one([marker("q", b'{"x": NaN}')])),
         ("b.safetensors", one([marker("q", b'{"y": Infinity}')])))
    # Derived keys written in the header: merged, then overwritten in place by the W4A8 rule.
    case("merge-derived-key-in-header", one(w4a8("m", mark=w4),
                                            qm({"m": {"_has_codebook": "yes", "_has_correction": True}})))
    case("merge-derived-key-other-format", one(
        [T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", ()), marker("i", {"format": "int8_tensorwise"})],
        qm({"i": {"_is_rowwise": True, "_activation_scheme": "static"}})))
    # Conflict message with a prefix repr'd by Python.
    case("merge-conflict-quoted-prefix", one(w4a8("it's", mark=w4), qm({"it's": {"group_size": 8}})))
    # Whole-marker replace vs merge: which marker's spelling ends up in the result.
    case("merge-value-spelling-last-wins",
         ("a.safetensors", one(w4a8("m", mark={"format": "asym_w4a8_int8", "group_size": 16}))),
         ("b.safetensors", one([marker("m", {"group_size": 16.0})])),
         ("c.safetensors", one([], qm({"m": {"group_size": True + 15, "format": "asym_w4a8_int8"}}))))
    # MXFP8 adds {"format": "mxfp8"} only where no marker exists (setdefault: no merge).
    case("merge-mxfp8-keeps-header-marker", one([T("x.weight", "F8_E4M3", (4, 64)), T("x.weight_scale", "U8", (4, 2))],
                                                {"quant_format": "mxfp8",
                                                 "_quantization_metadata": json.dumps({"layers": {"x": {"k": 1}}})}))
    # Marker dtypes torch cannot hand to numpy (F4) or has no dtype for (F6): torch 2.15 facts.
    base = [T("i.weight", "I8", (4, 8)), T("i.weight_scale", "F32", ())]
    raw = b'{"format": "int8_tensorwise"}   '
    case("marker-dtype-torch-unsupported-f4", one(base + [T("i.comfy_quant", "F4", (64,), raw)]))
    case("marker-dtype-f6-e2m3", one(base + [T("i.comfy_quant", "F6_E2M3", (32,), raw[:24])]))


def build_strict():
    ok_sg = None  # strict cases: upstream must accept (checked against the oracle below)
    p = "'blk'"
    case("strict-valid", one(w4a8("blk", codebook=codebook16(), correction=f32(*[0.25] * 64),
                                  bias=T("blk.bias", "F32", (4,)))), strict={"ok": True})
    case("strict-zero-n", one(w4a8("blk", n=0)),
         strict=strict_err("strict.w4a8.zero_sized", f"Comfy W4A8 layer {p} is empty: N=0 and K=256 must both be positive"))
    case("strict-zero-k", one(w4a8("blk", cols=0)),
         strict=strict_err("strict.w4a8.zero_sized", f"Comfy W4A8 layer {p} is empty: N=4 and K=0 must both be positive"))
    case("strict-k-not-16", one(w4a8("blk", cols=4, g=4)),
         strict=strict_err("strict.w4a8.k_multiple_16", f"Comfy W4A8 layer {p} has K=8, which the W4A8 kernels need divisible by 16"))
    case("strict-group-size-24", one(w4a8("blk", g=24)),
         strict=strict_err("strict.w4a8.group_size_shape", f"Comfy W4A8 layer {p} has group_size=24, which must divide 16 or be a multiple of 16"))
    case("strict-group-size-5", one(w4a8("blk", g=5)),
         strict=strict_err("strict.w4a8.group_size_shape", f"Comfy W4A8 layer {p} has group_size=5, which must divide 16 or be a multiple of 16"))
    case("strict-k-not-group", one(w4a8("blk", cols=24, g=32)),
         strict=strict_err("strict.w4a8.k_multiple_group",
                           f"Comfy W4A8 layer {p} has K=48 not divisible by group_size=32 (floor division hides 16 trailing inputs)"))
    case("strict-huge-group-size", one(w4a8("blk", g=10**30, mark={"format": "asym_w4a8_int8", "group_size": 10**30})),
         strict=strict_err("strict.w4a8.k_multiple_group",
                           f"Comfy W4A8 layer {p} has K=256 not divisible by group_size=1000000000000000000000000000000 "
                           "(floor division hides 256 trailing inputs)"))
    case("strict-convrot-false", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot": False})),
         strict=strict_err("strict.w4a8.convrot_not_true",
                           f"Comfy W4A8 layer {p} has convrot=false, but the W4A8 kernels always rotate (convrot must be true)"))
    case("strict-convrot-one", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot": 1})),
         strict=strict_err("strict.w4a8.convrot_not_true",
                           f"Comfy W4A8 layer {p} has convrot=1, but the W4A8 kernels always rotate (convrot must be true)"))
    case("strict-convrot-groupsize-32", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot_groupsize": 32})),
         strict=strict_err("strict.w4a8.convrot_groupsize",
                           f"Comfy W4A8 layer {p} has convrot_groupsize=32, which must be a power of 4 >= 4"))
    case("strict-convrot-groupsize-1", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot_groupsize": 1})),
         strict=strict_err("strict.w4a8.convrot_groupsize",
                           f"Comfy W4A8 layer {p} has convrot_groupsize=1, which must be a power of 4 >= 4"))
    case("strict-convrot-groupsize-abc", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot_groupsize": "abc"})),
         strict={"ok": False, "type": "ValueError", "code": "python.int.invalid_literal",
                 "message": "invalid literal for int() with base 10: 'abc'"})
    case("strict-convrot-groupsize-null", one(w4a8("blk", mark={"format": "asym_w4a8_int8", "convrot_groupsize": None})),
         strict={"ok": False, "type": "TypeError", "code": "python.int.bad_type",
                 "message": "int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"})
    case("strict-k-not-convrot", one(w4a8("blk", cols=32)),
         strict=strict_err("strict.w4a8.k_multiple_convrot",
                           f"Comfy W4A8 layer {p} has K=64 not divisible by convrot_groupsize=256"))
    case("strict-k-convrot-16-ok", one(w4a8("blk", cols=32, mark={"format": "asym_w4a8_int8", "convrot_groupsize": 16.0})),
         strict={"ok": True})
    case("strict-bias-shape", one(w4a8("blk", bias=T("blk.bias", "F32", (5,)))),
         strict=strict_err("strict.w4a8.bias",
                           f"Comfy W4A8 layer {p} has an incompatible bias: F32(5,), expected a BF16/F16/F32 tensor of shape (4,)"))
    case("strict-bias-dtype", one(w4a8("blk", bias=T("blk.bias", "I8", (4,)))),
         strict=strict_err("strict.w4a8.bias",
                           f"Comfy W4A8 layer {p} has an incompatible bias: I8(4,), expected a BF16/F16/F32 tensor of shape (4,)"))
    srel = bytearray([0x38] * 64)
    srel[1 * 16 + 3] = 0x7F
    case("strict-srel-nan-7f", one(w4a8("blk", srel=bytes(srel))),
         strict=strict_err("strict.w4a8.nan_group_scale", f"Comfy W4A8 layer {p} has a NaN FP8 group scale (byte 0x7f) at weight_s_rel[1, 3]"))
    srel = bytearray([0x38] * 64)
    srel[63] = 0xFF
    srel[62] = 0xFE  # -448, a valid (if odd) scale
    case("strict-srel-nan-ff", one(w4a8("blk", srel=bytes(srel))),
         strict=strict_err("strict.w4a8.nan_group_scale", f"Comfy W4A8 layer {p} has a NaN FP8 group scale (byte 0xff) at weight_s_rel[3, 15]"))
    case("strict-channel-negative", one(w4a8("blk", channel=f32(1.0, 0.0, -1.5, float("nan")))),
         strict=strict_err("strict.w4a8.channel_scale", f"Comfy W4A8 layer {p} has a non-finite or negative channel scale -1.5 at weight_s_channel[2]"))
    case("strict-channel-nan", one(w4a8("blk", channel=f32(1.0, -0.0, 2.0, float("nan")))),
         strict=strict_err("strict.w4a8.channel_scale", f"Comfy W4A8 layer {p} has a non-finite or negative channel scale nan at weight_s_channel[3]"))
    case("strict-channel-inf", one(w4a8("blk", channel=f32(float("inf"), 1.0, 1.0, 1.0))),
         strict=strict_err("strict.w4a8.channel_scale", f"Comfy W4A8 layer {p} has a non-finite or negative channel scale inf at weight_s_channel[0]"))
    cb = list(range(16))
    cb[7] = float("-inf")
    case("strict-codebook-inf", one(w4a8("blk", codebook=f32(*cb))),
         strict=strict_err("strict.w4a8.codebook", f"Comfy W4A8 layer {p} has a non-finite codebook entry -inf at weight_codebook[7]"))
    corr = [0.0] * 64
    corr[3 * 4 + 1] = float("nan")
    case("strict-correction-nan", one(w4a8("blk", correction=f32(*corr))),
         strict=strict_err("strict.w4a8.correction", f"Comfy W4A8 layer {p} has a non-finite correction nan at weight_correction[3, 1]"))
    case("strict-second-layer", one(w4a8("a") + w4a8("b", cols=32)),
         strict=strict_err("strict.w4a8.k_multiple_convrot",
                           "Comfy W4A8 layer 'b' has K=64 not divisible by convrot_groupsize=256"))
    return ok_sg


def run_wheel(cases_dir, entries, version):
    """Runs release `version`'s real function over all cases (each inside its own directory)."""
    fn = upstream.upstream_function(version)
    out = []
    for name, files in entries:
        v = upstream.verdict(fn, files, os.path.join(cases_dir, name))
        if v["type"] == "SafetensorError" and v["message"].startswith("Error while deserializing header: "):
            v["code"] = container_code(v["message"])
        elif v["type"] == "SafetensorError" and v["message"].startswith("Dtype not understood: "):
            v["code"] = "safetensors.dtype_not_understood"
        out.append(json.loads(json.dumps(v)))  # plain JSON values, as stored
    return out


def run_wheels(cases_dir, entries):
    """{version: verdicts} for every profiled release, oldest first."""
    return {v: run_wheel(cases_dir, entries, v) for v, _ in upstream.profiles()}


def same_verdict(a, b):
    return json.dumps(a, sort_keys=False) == json.dumps(b, sort_keys=False)


# ---- seeded random cases (differential testing against the oracle) -----------------------------
RANDOM_NAMES = ["l", "blk.0.attn", "a'b", "a\nb", "\u00e9", "\U0001F600", "x\u2028", "z.weight"]
GROUP_SIZES = [16, 16, 32, 4, 8, 3, 5, 24, 64, 16.0, 16.5, True, "16", " 32 ", "1_6", "x", None, [], 10**20,
               float("nan"), float("inf"), -16]
CONVROT = [256, 64, 16, 32, 1, "64", None, 256.0, 4]
DTYPES = ["I8", "U8", "F8_E4M3", "F32", "F16", "BF16", "F8_E5M2", "I16"]


def random_layer(rng, p):
    """Tensors and marker of one layer, mostly valid, with random defects."""
    fmt = rng.choice(["asym_w4a8_int8"] * 4 + ["convrot_w4a4", "nvfp4", "int8_tensorwise", "float8_e4m3fn",
                                               "mxfp8", "other", 7])
    n, cols = rng.choice([0, 1, 2, 4]), rng.choice([0, 4, 8, 16, 24, 32, 64, 128])
    k = 2 * cols
    marker = {"format": fmt}
    pick = lambda good: good if rng.random() < 0.85 else rng.choice(DTYPES)
    jitter = lambda shape: shape if rng.random() < 0.85 else tuple(
        d + rng.choice([-1, 1]) if d > 0 and rng.random() < 0.5 else d for d in shape) + (
        (1,) if rng.random() < 0.2 else ())
    out = []
    if fmt == "asym_w4a8_int8":
        g = rng.choice(GROUP_SIZES) if rng.random() < 0.5 else 16
        if g != 16 or rng.random() < 0.5:
            marker["group_size"] = g
        try:
            gi = int(g) if not isinstance(g, list) else 16
        except (TypeError, ValueError, OverflowError):
            gi = 16
        groups = k // gi if gi >= 4 else 0
        out += [T(p + ".weight", pick("I8"), jitter((n, cols))),
                T(p + ".weight_s_rel", pick("F8_E4M3"), jitter((n, groups))),
                T(p + ".weight_s_channel", pick("F32"), jitter((n,)))]
        if rng.random() < 0.3:
            out.append(T(p + ".weight_codebook", pick("F32"), jitter((16,))))
        if rng.random() < 0.3:
            out.append(T(p + ".weight_correction", pick("F32"), jitter((groups, n))))
    elif fmt == "convrot_w4a4":
        if rng.random() < 0.5:
            marker["convrot_groupsize"] = rng.choice(CONVROT)
        out += [T(p + ".weight", pick("I8"), jitter((n, cols))), T(p + ".weight_scale", pick("F32"), jitter((n,)))]
    elif fmt == "nvfp4":
        out += [T(p + ".weight", pick("U8"), jitter((n, cols))),
                T(p + ".weight_scale", pick("F8_E4M3"), jitter((n, k // 16))),
                T(p + ".weight_scale_2", pick("F32"), jitter(rng.choice([(), (1,)])))]
        if rng.random() < 0.4:
            out.append(T(p + ".pre_quant_scale", pick(rng.choice(["BF16", "F16", "F32"])), jitter((k,))))
    elif fmt == "int8_tensorwise":
        out += [T(p + ".weight", pick("I8"), jitter((n, cols))),
                T(p + ".weight_scale", pick("F32"), jitter(rng.choice([(), (n, 1)])))]
    elif fmt == "mxfp8":
        out += [T(p + ".weight", pick("F8_E4M3"), jitter((n, cols * 4))),
                T(p + ".weight_scale", pick("U8"), jitter((n, cols * 4 // 32)))]
    else:
        out += [T(p + ".weight", pick("F8_E4M3"), jitter((n, cols))), T(p + ".weight_scale", "F32", ())]
        if rng.random() < 0.5:
            out.append(T(p + ".input_scale", "F32", ()))
    if rng.random() < 0.15 and out:
        out.pop(rng.randrange(len(out)))  # a missing tensor
    return fmt, marker, out


def random_case(rng):
    names = rng.sample(RANDOM_NAMES, rng.choice([1, 1, 2, 3]))
    files = [([], {}) for _ in range(rng.choice([1, 1, 2]))]
    any_mx = False
    for p in names:
        fmt, marker, tensors = random_layer(rng, p)
        any_mx |= fmt == "mxfp8"
        for t in tensors:
            rng.choice(files)[0].append(t)
        where = rng.random()
        if fmt == "mxfp8" and where < 0.6:
            continue  # let the mxfp8 shortcut add it (or the missing-marker check fire)
        if where < 0.6:
            rng.choice(files)[0].append(marker_tensor(rng, p, marker))
        elif where < 0.9:
            layers = rng.choice(files)[1].setdefault("layers", {})
            layers[p] = marker
        else:  # twice: equal or conflicting
            files[0][0].append(marker_tensor(rng, p, marker))
            other = dict(marker)
            if rng.random() < 0.5:
                other["group_size"] = rng.choice([16, 16.0, 32])
            files[-1][1].setdefault("layers", {})[p] = other
    out = []
    for i, (tensors, qmeta) in enumerate(files):
        seen, uniq = set(), []
        for t in tensors:  # a name appears once per file
            if t[0] not in seen:
                seen.add(t[0])
                uniq.append(t)
        meta = {}
        if qmeta:
            meta["_quantization_metadata"] = json.dumps(qmeta)
        if any_mx and rng.random() < 0.8:
            meta["quant_format"] = rng.choice(["mxfp8", "MXFP8", "mxfp8", "nvfp4", ""])
        out.append(("part-%d.safetensors" % i, container(uniq, meta or None, ascii_names=rng.random() < 0.5)))
    return out


def marker_tensor(rng, p, marker):
    raw = json.dumps(marker).encode()
    enc = rng.random()
    if enc < 0.1:
        raw = json.dumps(marker).encode("utf-16")
    elif enc < 0.15:
        raw = b"{" + raw
    return T(p + ".comfy_quant", "U8", (len(raw),), raw)


def build_random(out_dir, count, seed, version):
    rng = random.Random(seed)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    entries = []
    for i in range(count):
        dname = "%04d-random" % i
        os.makedirs(os.path.join(out_dir, dname))
        files = random_case(rng)
        for fname, data in files:
            with open(os.path.join(out_dir, dname, fname), "wb") as f:
                f.write(data)
        entries.append((dname, [f for f, _ in files]))
    for (dname, fnames), v in zip(entries, run_wheel(out_dir, entries, version)):
        with open(os.path.join(out_dir, dname, "case.json"), "w") as f:
            json.dump({"files": fnames, "strict": False, "expected": v, "sglang_versions": [version]}, f, indent=1)
    return len(entries)


def build_all(out_dir):
    for build in (build_valid, build_encodings, build_metadata, build_names, build_rules, build_container,
                  build_strict, build_container_messages, build_merge):
        build()
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    entries = []
    for i, (name, files, strict) in enumerate(CASES):
        dname = "%03d-%s" % (i + 1, name)
        os.makedirs(os.path.join(out_dir, dname))
        for fname, data in files:
            with open(os.path.join(out_dir, dname, fname), "wb") as f:
                f.write(data)
        entries.append((dname, [f for f, _ in files]))
    by_version = run_wheels(out_dir, entries)
    latest = list(by_version)[-1]
    for i, ((dname, fnames), (_, _, strict)) in enumerate(zip(entries, CASES)):
        doc = {"files": fnames, "strict": strict is not None}
        v = by_version[latest][i]
        others = {ver: vs[i] for ver, vs in by_version.items() if not same_verdict(vs[i], v)}
        if strict is None:
            doc["expected"] = v
            if others:
                doc["expected_by_sglang"] = others
        else:
            if not v["ok"] or others:
                sys.exit("strict case %s: some release rejects it or differs: %s %s" % (dname, v, others))
            doc["expected"] = strict
            doc["sglang"] = v
        with open(os.path.join(out_dir, dname, "case.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return len(entries)


def tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            path = os.path.join(d, f)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, root)] = fh.read()
    return out


def check(stored_dir):
    with tempfile.TemporaryDirectory() as tmp:
        n = build_all(os.path.join(tmp, "validator"))
        fresh, stored = tree(os.path.join(tmp, "validator")), tree(stored_dir)
    bad = sorted(k for k in fresh.keys() | stored.keys() if fresh.get(k) != stored.get(k))
    for k in bad[:20]:
        print("differs: %s" % k, file=sys.stderr)
    if bad:
        print("%d of %d files differ from a fresh build (oracle verdicts included)" % (len(bad), len(fresh)),
              file=sys.stderr)
        return 1
    print("catalogue ok: %d cases, %d files reproduced" % (n, len(fresh)))
    return 0


def main(argv):
    default = os.path.join(ROOT, "corpus", "validator")
    if len(argv) in (5, 6) and argv[1] == "--random":
        version = argv[5] if len(argv) == 6 else upstream.profiles()[-1][0]
        n = build_random(argv[4], int(argv[2]), int(argv[3]), version)
        print("wrote %d random cases to %s (sglang %s)" % (n, argv[4], version))
        return 0
    if len(argv) > 1 and argv[1] == "--check":
        return check(argv[2] if len(argv) > 2 else default)
    out_dir = argv[1] if len(argv) > 1 else default
    n = build_all(out_dir)
    print("wrote %d cases to %s" % (n, out_dir))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except upstream.WheelUnavailable as e:
        print("error: the real sglang wheel is needed for expectations: %s" % e, file=sys.stderr)
        sys.exit(3)
