"""Oracle for tests/py: CPython's own repr(), int() and str predicates.

stdin: one request per line, "<op> x<hex> ..."; stdout: one line per request, "x" + hex of the
UTF-8 answer (answers may hold any printable code point).
  repr x<wtf8>         -> repr(s)
  repr_list x<a> x<b>  -> repr([a, b, ...])
  shape <n> <n> ...    -> repr(tuple of ints)
  int x<wtf8>          -> "ok <int(s)>" or "<ExceptionType> <message>"
  int_json x<doc>      -> the same for int(json.loads(doc))
  props                -> "<hex bitmap of isprintable> <hex bitmap of isspace> <cp:value,...>"
                          over all code points, bit cp at byte cp // 8, bit cp % 8
  props_ucd            -> the same computed from PyPI unicodedata2 (whatever version is installed)
                          with CPython's own rules (Tools/unicode/makeunicodedata.py): printable
                          unless the category is C* or Z* (space excepted); space for bidi
                          WS/B/S or category Zs. For a Python that is not installed here.
  unidata              -> unicodedata2.unidata_version (props_ucd's source)
"""
import json
import sys
import unicodedata


def text(arg):
    return bytes.fromhex(arg[1:]).decode("utf-8", "surrogatepass")


def outcome(fn):
    try:
        return "ok " + str(fn())
    except Exception as e:  # noqa: BLE001 - the exception is the answer
        return type(e).__name__ + " " + str(e)


def bitmap(pred):
    out = bytearray(0x110000 // 8)
    for cp in range(0x110000):
        if pred(chr(cp)):
            out[cp >> 3] |= 1 << (cp & 7)
    return out.hex()


def answer(parts):
    op = parts[0]
    if op == "repr":
        return repr(text(parts[1]))
    if op == "repr_list":
        return repr([text(p) for p in parts[1:]])
    if op == "shape":
        return repr(tuple(int(p) for p in parts[1:]))
    if op == "int":
        s = text(parts[1])
        return outcome(lambda: int(s))
    if op == "int_json":
        v = json.loads(text(parts[1]))
        return outcome(lambda: int(v))
    if op == "props":
        decimals = ",".join("%x:%d" % (cp, unicodedata.decimal(chr(cp)))
                            for cp in range(0x110000) if chr(cp).isdecimal())
        return " ".join([bitmap(str.isprintable), bitmap(str.isspace), decimals])
    if op == "props_ucd":
        import unicodedata2 as u

        def printable(c):
            return c == " " or u.category(c)[0] not in "CZ"

        def space(c):
            return u.bidirectional(c) in ("WS", "B", "S") or u.category(c) == "Zs"

        decimals = ",".join("%x:%d" % (cp, u.decimal(chr(cp)))
                            for cp in range(0x110000) if u.decimal(chr(cp), None) is not None)
        return " ".join([bitmap(printable), bitmap(space), decimals])
    if op == "unidata":
        import unicodedata2
        return unicodedata2.unidata_version
    return "bad-op " + op


def main():
    out = []
    for line in sys.stdin:
        parts = line.split()
        if parts:
            out.append("x" + answer(parts).encode("utf-8", "surrogatepass").hex())
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
