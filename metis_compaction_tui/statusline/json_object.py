"""One JSON object from bytes, for the status line's every-call path: stdin and its saved figures.

`import json` costs about 2 ms (its decoder, encoder and regular expressions; `re` itself more
where nothing imported it yet), and this path parses a few hundred bytes twice per call. CPython's
C scanner (`_json`, what `json.loads` runs underneath) is used directly; where it is missing,
`json.loads`. Same grammar, same errors as `json.loads`, except NaN and Infinity: not numbers here.
"""

from __future__ import annotations

_JSON_SPACE = " \t\n\r"


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number we read")


class _Context:
    """What the C scanner reads off `json.JSONDecoder`, as plain attributes."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = staticmethod(_no_constant)


try:
    from _json import make_scanner as _make_scanner

    _scan = _make_scanner(_Context())
except (ImportError, TypeError):  # another interpreter: the json module's own path
    _scan = None


def load_object(raw: bytes) -> dict[str, object] | None:
    """The JSON object `raw` holds, or None: not UTF-8, not JSON, trailing data, not an object,
    nested too deep."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    start = len(text) - len(text.lstrip(_JSON_SPACE))
    try:
        if _scan is None:
            import json

            value = json.loads(text, parse_constant=_no_constant)
        else:
            value, end = _scan(text, start)
            if text[end:].strip(_JSON_SPACE):
                return None  # "Extra data"
    except (ValueError, StopIteration, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def read_object(path: str) -> dict[str, object] | None:
    """The JSON object saved at `path` (at most 64 KiB read), or None when it is absent,
    unreadable or not one object. os.open and os.read: open() would add an fstat and an ioctl,
    three syscalls on the line's every-call path."""
    import os

    try:
        fd = os.open(path, os.O_RDONLY)
    except (OSError, ValueError):
        return None
    try:
        raw = os.read(fd, 1 << 16)
    except OSError:
        return None
    finally:
        os.close(fd)
    return load_object(raw)
