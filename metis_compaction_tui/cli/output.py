"""The CLI's one output layer. Every subcommand writes through it.

- Data read back (titles, ids, summaries, model names, error text) never reaches the terminal as
  a control sequence: the app's rule, `safe_text.neutralise`, is applied to everything written as
  text (ESC shows as `␛`), and `one_line()` also folds newlines for single-line fields so a title
  cannot forge a line. JSON keeps the data exact: controls, C1 and bidi code points are written as
  `\\uXXXX` escapes, which a JSON reader decodes back and a terminal never acts on.
- A closed pipe (`status | head -1`) or a full disk (`cache list > /dev/full`) is not a
  traceback: the stream is pointed at /dev/null (so the interpreter's last flush is quiet too)
  and `OutputLost` ends the command; main maps it to an exit code (exit_codes.py).
"""

from __future__ import annotations

import errno
import os
import re
import sys

from metis_compaction_tui.safe_text import neutralise

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, TextIO

# msgspec is imported by the JSON writer: text from a command that reads no store (`cache list`
# on a workspace without a cache) does not load it.

JSON_SHAPE_VERSION = 2  # 2: `watermark` -> `floor`, span `watermark` -> `compaction_watermark`


def format_time(ms: int) -> str:
    """A stored time (ms since the epoch), as the CLI prints it: ISO 8601 in UTC, or "-"."""
    if not ms:
        return "-"
    import datetime

    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# What a closed reader or a full disk raises; anything else is a real error and propagates.
_LOST_ERRNOS = frozenset({errno.EPIPE, errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})
# Inside encoded JSON these can only be in strings (the structure is ASCII), so escaping them
# keeps it valid JSON that decodes to the same data.
# Bidi controls, zero-width and other invisible characters, tag characters, variation selectors
# and blank fillers (safe_text's list) included: an astral one as its UTF-16 pair of escapes.
# Both patterns are compiled by `re` on first use (and kept in its cache): text output needs
# neither.
_JSON_UNSAFE = (
    "[\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f"
    "\u2028-\u202e\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb"
    "\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_SURROGATES = "[\ud800-\udfff]"


class OutputLost(Exception):
    """stdout could not be written (closed pipe, full disk); the stream is now /dev/null."""


def one_line(value: object) -> str:
    """A data field shown on one line: controls and hiding characters visible, newline and tab
    folded, and (safe_text's `exact`) two different values never shown the same."""
    return neutralise(str(value), single_line=True, exact=True)


def block(value: object) -> str:
    """A data block (a summary): controls visible, newlines kept."""
    return neutralise(str(value))


def _silence(stream: TextIO) -> None:
    """Point the stream's file descriptor at /dev/null, so buffered bytes and the interpreter's
    flush at exit go nowhere instead of raising again ("Exception ignored ... BrokenPipeError")."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)


class Output:
    """A text stream that neutralises what it writes and turns a lost reader into OutputLost."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.lost = False

    def write(self, text: str) -> int:
        if self.lost:
            raise OutputLost
        self._guard(lambda: self.stream.write(neutralise(text)))
        return len(text)

    def flush(self) -> None:
        if not self.lost:
            self._guard(self.stream.flush)

    def isatty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def _guard(self, call: Any) -> None:
        try:
            call()
        except OSError as error:  # BrokenPipeError is one (EPIPE)
            if error.errno not in _LOST_ERRNOS:
                raise
            self.lost = True
            _silence(self.stream)
            raise OutputLost from None


def _scrub(data: Any) -> Any:
    """Lone surrogates (undecodable bytes read back) as U+FFFD: JSON cannot carry them."""
    if isinstance(data, str):
        return re.sub(_SURROGATES, "\ufffd", data)
    if isinstance(data, dict):
        return {_scrub(k): _scrub(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_scrub(v) for v in data]
    return data


def json_text(data: object) -> str:
    import msgspec

    try:
        encoded = msgspec.json.encode(data)
    except UnicodeEncodeError:
        encoded = msgspec.json.encode(_scrub(msgspec.to_builtins(data)))
    text = msgspec.json.format(encoded, indent=2).decode()
    return re.sub(_JSON_UNSAFE, lambda m: _json_escape(ord(m.group())), text)


def _json_escape(code: int) -> str:
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def emit_json(data: object, out: TextIO) -> None:
    out.write(json_text(data) + "\n")


def warn(text: str) -> None:
    """One message on stderr, redacted (engine.redaction: an error may quote what a server echoed)
    and neutralised; a lost stderr is ignored (there is nowhere to say so)."""
    from engine import redact

    err = Output(sys.stderr)
    try:
        err.write(redact(text) + "\n")
        err.flush()
    except OutputLost:
        pass
