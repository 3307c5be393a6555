#!/usr/bin/env python3
"""Writes a JSON request in the form Metacontroller sends it: Go's encoding/json.

usage: compact.py IN.json OUT.json

No whitespace between tokens, UTF-8 as is, and `<`, `>`, `&`, U+2028 and U+2029 escaped as
`\\u003c` and so on (encoding/json's HTML-safe default). Keys keep the order of IN.
"""

import json
import sys

GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))


def go_json(value):
    """`value` as Go's json.Marshal writes it (object keys in the order given)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    for raw, escaped in GO_ESCAPES:
        text = text.replace(raw, escaped)
    return text


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip())
    with open(sys.argv[1], encoding="utf-8") as f:
        value = json.load(f)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(go_json(value))


if __name__ == "__main__":
    main()
