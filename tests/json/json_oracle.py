"""Oracle for tests/json: answers batches of questions with CPython's own json module.

stdin: one request per line, "<op> x<hex> [x<hex>]" (x keeps empty arguments visible); stdout: one answer per line.
  loads_str HEX    -> json.loads(bytes.fromhex(HEX).decode('utf-8', 'surrogatepass'))
  loads_bytes HEX  -> json.loads(bytes.fromhex(HEX))
      answer: "ok <json.dumps(value)>" | "JSONDecodeError" | "UnicodeDecodeError"
              | "IntTooLong <digits>" | "RecursionError <array|object>" | "other <type>"
  eq HEX HEX       -> "1" / "0": json.loads(a) == json.loads(b) (both str documents)
  same HEX HEX     -> "1" / "0": repr(json.loads(a)) == repr(json.loads(b)): the same value in
                      everything a reader can see (type, float bits, key order)
  repr_float HEX   -> repr(struct.unpack('<d', bytes.fromhex(HEX))[0])
  float HEX        -> repr(float(text)) for a JSON number literal
  exact_int HEX    -> str(int(d)) for an integral double given as 8 little-endian bytes
  serde HEX        -> the safetensors crate (PyPI `safetensors`, serde_json inside) reading a
                      file whose header is HEX and which has no data: "parsed" (the JSON was
                      accepted; any later error is about types/offsets), "error" (serde_json
                      rejected the JSON), "unicode" (header not UTF-8)
"""
import json
import re
import struct
import sys

_DIGITS = re.compile(r"value has (\d+) digits")


def loads_answer(obj):
    try:
        value = json.loads(obj)
    except json.JSONDecodeError:
        return "JSONDecodeError"
    except UnicodeDecodeError:
        return "UnicodeDecodeError"
    except RecursionError as e:
        return "RecursionError " + ("array" if "JSON array" in str(e) else "object")
    except ValueError as e:
        m = _DIGITS.search(str(e))
        if m and str(e).startswith("Exceeds the limit (4300 digits)"):
            return "IntTooLong " + m.group(1)
        return "other ValueError"
    except Exception as e:  # noqa: BLE001 - any other outcome is a finding
        return "other " + type(e).__name__
    # Encoding deep values needs more room than decoding them did.
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)
    try:
        return "ok " + json.dumps(value)
    finally:
        sys.setrecursionlimit(old)


_SEMANTIC = ("invalid type", "missing field", "unknown field", "invalid value", "invalid length",
             "duplicate field", "unknown variant")


def serde_answer(header):
    import safetensors.numpy  # imported here: only the serde tests need it

    try:
        safetensors.numpy.load(struct.pack("<Q", len(header)) + header)
        return "parsed"
    except Exception as e:  # noqa: BLE001 - classify the crate's message
        msg = str(e)
        if "invalid UTF-8" in msg or "InvalidHeader)" in msg or msg.endswith("InvalidHeader"):
            return "unicode"
        if "invalid JSON in header" in msg or "InvalidHeaderDeserialization" in msg:
            return "parsed" if any(k in msg for k in _SEMANTIC) else "error"
        return "parsed"


def main():
    out = []
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        op, args = parts[0], [bytes.fromhex(p[1:]) for p in parts[1:]]
        if op == "loads_str":
            try:
                text = args[0].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:  # not WTF-8: no Python str has these bytes
                out.append("UnicodeDecodeError")
                continue
            out.append(loads_answer(text))
        elif op == "loads_bytes":
            out.append(loads_answer(args[0]))
        elif op == "eq":
            a = json.loads(args[0].decode("utf-8", "surrogatepass"))
            b = json.loads(args[1].decode("utf-8", "surrogatepass"))
            out.append("1" if a == b else "0")
        elif op == "same":
            a = json.loads(args[0].decode("utf-8", "surrogatepass"))
            b = json.loads(args[1].decode("utf-8", "surrogatepass"))
            out.append("1" if repr(a) == repr(b) else "0")
        elif op == "repr_float":
            out.append(repr(struct.unpack("<d", args[0])[0]))
        elif op == "float":
            out.append(repr(float(args[0].decode("ascii"))))
        elif op == "serde":
            out.append(serde_answer(args[0]))
        elif op == "exact_int":
            out.append(str(int(struct.unpack("<d", args[0])[0])))
        else:
            out.append("bad-op " + op)
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
