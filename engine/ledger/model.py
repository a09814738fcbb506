"""What a work ledger holds: one entry per file touched, command run, error seen and value stated
in a compacted span, each with its identity (what makes two entries the same one), the needles
that show the summary's prose already states it, and its specificity (what goes last when room
is short)."""

from __future__ import annotations

import re

import msgspec

from engine.events import redact
from engine.ledger.values import named_file, setting_name, values_in

READ = "read"
WROTE = "wrote"
EDITED = "edited"
RAN = "ran"
ERROR = "error"
VALUE = "value"
# Rendered in this order; the file kinds share one line each.
KINDS = (EDITED, WROTE, READ, RAN, ERROR, VALUE)
FILE_KINDS = (EDITED, WROTE, READ)
# A file written or edited outranks the same file read: one entry per path, the strongest kind.
FILE_STRENGTH = {READ: 0, WROTE: 1, EDITED: 2}

_DIGITS = re.compile(r"\d+(?:[.,:]\d+)*")
OUTCOME = " → "  # between a command and what came of it
# Another instance of an error template already said (the same line but for its names: "could
# not obtain lock on relation X" for the fifth X): below a command that ran and a file read, it
# fills what room is left.
REPEAT_RANK = 58
# The most a value ranks (value_rank): below a file read and a command that ran.
TOP_VALUE_RANK = 68
# A value's more specific line kept beside its later restatement (merge): below an output's
# last error lines, it fills only the room they leave.
RESTATED_RANK = 39
# A file the conversation names and no value beside it ("Remaining: a note in CHANGELOG.md"):
# below a setting or a version an output shows, above most figures said in passing (40, 50 and
# 60 kept the same facts on the tuning sets).
NAMED_FILE_RANK = 50


class Entry(msgspec.Struct, frozen=True):
    kind: str
    text: str  # as rendered after "kind: "
    key: str  # identity: two entries with one key are one entry (the later instance wins)
    needles: tuple[str, ...]  # all present in the prose (case-insensitive): already stated
    rank: int  # specificity: higher is kept first when room is short
    order: int  # where in the span it was last seen


class Ledger(msgspec.Struct, frozen=True):
    entries: tuple[Entry, ...] = ()


class LedgerResult(msgspec.Struct, frozen=True):
    text: str  # the summary: the prose, then the ledger section when it has one
    ledger: Ledger  # every entry of the span (stated in the prose or not)
    restored: int  # entries the section adds (the prose did not state them)
    dropped: int  # entries the prose did not state and the section had no room for


def squash(text: str) -> str:
    return " ".join(text.split())  # \s+ to one space, stripped: the same, in one pass


def shape(text: str) -> str:
    """An error line's identity: digits blanked, so "3 failed in 1.2s" and "4 failed in 0.9s"
    are one error, its latest instance kept."""
    return _DIGITS.sub("#", squash(text).lower())


def command_of(text: str) -> str:
    """A RAN entry's command: its text before the outcome."""
    return text.split(OUTCOME, 1)[0]


def make_entry(kind: str, text: str, order: int, *, figure: str | None = None) -> Entry:
    """The one place an entry's identity, needles and rank are decided, so an entry parsed back
    from an earlier summary is the entry extracted from the span. `figure`: of a value line
    chosen for one figure in it (the one the conversation names, or the one far ahead of its
    column), that figure is part of its identity beside the line's most specific value: a
    crate's 143.7 s compile is not the same fact as a later line naming the crate's version.
    Read back, the line goes by its most specific value alone (merge keeps both lines)."""
    # A key or token pasted in the span stays out of the summary (§6), as from the prose.
    text = redact(squash(text))
    if kind in FILE_KINDS:
        return Entry(kind, text, f"file:{text}", (text,), 60 + 25 * FILE_STRENGTH[kind], order)
    if kind == RAN:
        command = command_of(text)
        outcome = text[len(command) + len(OUTCOME) :]
        failed = "fail" in outcome or "error" in outcome or outcome.startswith("exit ")
        failed = failed and outcome != "exit 0"
        counted = any(ch.isdigit() for ch in outcome) and outcome != "exit 0"
        rank = 70 + 12 * failed + 6 * counted
        return Entry(kind, text, f"ran:{command}", (command.rstrip("…"),), rank, order)
    if kind == ERROR:
        return Entry(kind, text, f"error:{shape(text)}", (text.rstrip("…"),), 95, order)
    needles, rank = value_needles(text)
    if figure is not None and figure in text and figure not in needles:
        needles = (*needles, figure)
    # One entry per value: the line that states it last (a reply's conclusion after the output).
    return Entry(kind, text, "value:" + "|".join(needles).lower(), needles, rank, order)


_VERSION = re.compile(r"\d+\.\d+\.\d+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_HEX = re.compile(r"(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}")


def value_rank(value: str, line: str) -> int:
    """How specific a value is: a full version, a date or a commit id says more than a bare
    number; a longer value more than a short one; a setting (name = value) more than a number
    in passing."""
    rank = 30 + min(len(value), 12)
    if _VERSION.fullmatch(value.lstrip("v")) or _DATE.fullmatch(value) or _HEX.fullmatch(value):
        rank += 15
    elif any(ch.isalpha() for ch in value):  # a unit or a name: 30s, 6380/tcp, TS2322
        rank += 8
    if setting_name(line):  # a setting read from a config file
        rank += 12
    elif "=" in line or ":" in line:
        rank += 5
    return min(rank, TOP_VALUE_RANK)


def value_needles(line: str) -> tuple[tuple[str, ...], int]:
    """A value line's most specific value (with the setting's name when the value alone is too
    short to find: "workers = 4"), and its rank."""
    # A conversation's line may state its value only as people say it ("took 22 minutes").
    found = values_in(line) or values_in(line, spoken=True)
    if not found:
        # A sentence naming a file and no value ("Remaining: a note in CHANGELOG.md") goes by
        # the file; any other line with nothing concrete in it is its own needle.
        path = named_file(line)
        return ((path,), NAMED_FILE_RANK) if path else ((line.rstrip("…"),), 30)
    best = max(found, key=lambda v: (value_rank(v, line), -found.index(v)))
    name = setting_name(line)
    needles = (name, best) if name and len(best) < 4 else (best,)
    return needles, value_rank(best, line)
