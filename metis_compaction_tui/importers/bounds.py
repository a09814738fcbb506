"""Limits on one transcript line, checked before it is decoded.

Every line of a transcript is untrusted. A line longer than `MAX_LINE_BYTES` is skipped without
being held in memory whole, and one nested deeper than `MAX_DEPTH` is skipped before msgspec
recurses into it (its decoder, and any Python code that walks the values it returns, would run
out of stack). Both are counted with the line's number, as any other unreadable line is.
"""

from __future__ import annotations

import re

# A Claude Code record holding a few pasted screenshots runs to a few MiB; 32 MiB leaves room
# for many more and still bounds what one line costs to read.
MAX_LINE_BYTES = 32 << 20
# Real records nest a tool's input or result about 10 levels below the record; 128 leaves room
# for odd tool inputs and keeps any recursive walk of a decoded value far from Python's limit.
MAX_DEPTH = 128

TOO_LONG = "too_long"
TOO_DEEP = "too_deep"
INCOMPLETE = "incomplete"

# A JSON string, escapes included, read in one regex step per run of plain characters.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# Openers become "(", closers ")", every other byte is dropped: the line's bracket skeleton.
_TO_PARENS = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """Does this line nest arrays/objects more than `limit` levels deep?

    Most lines hold fewer brackets than `limit` in all, which settles it in two C-speed counts.
    Otherwise the strings are cut out and each round removes the innermost "()" pairs of the
    skeleton: a line is `limit` deep at most if `limit` rounds empty it. Bounded by `limit`
    passes over the line. An unbalanced skeleton is not JSON; the decoder says so.
    """
    if raw.count(b"{") + raw.count(b"[") <= limit:
        return False
    skeleton = _STRING.sub(b"", raw).translate(_TO_PARENS, _NOT_BRACKETS)
    if skeleton.count(b"(") <= limit:
        return False
    for _ in range(limit):
        reduced = skeleton.replace(b"()", b"")
        if not reduced or reduced == skeleton:
            return False
        skeleton = reduced
    return True


def too_deep_reason(limit: int = MAX_DEPTH) -> str:
    return f"nested deeper than {limit} levels: not read"


def too_long_reason(size: int, more: bool, limit: int = MAX_LINE_BYTES) -> str:
    plus = "+" if more else ""
    return f"line of {size:,}{plus} bytes, over the {limit >> 20} MiB limit: not read"
