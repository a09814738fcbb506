"""The ledger as a summary section, and read back from one (a re-compaction merges the earlier
ledger; the app shows prose and ledger apart).

    Work ledger:
    - edited: engine/a.py, engine/b.py
    - ran: pytest -q → 2 failed, 40 passed
    - ran ok: git status · ruff check .
    - error: FAILED tests/test_x.py::test_y - AssertionError: 2 != 3
    - value: redis_version:7.2.4
    (+3 more ledger entries left out)
"""

from __future__ import annotations

import re
from typing import NamedTuple

import msgspec

from engine.ledger.model import FILE_KINDS, KINDS, OUTCOME, RAN, Entry, make_entry

HEADING = "Work ledger:"
_LEFT_OUT = "(+{count} more ledger entries left out)"
_LEFT_OUT_LINE = re.compile(r"^\(\+(\d{1,9}) more ledger entr(?:y|ies) left out\)$")
FILE_SEPARATOR = ", "
# The line of commands whose outcome was "ok", and what stands between them (a character a
# command's first line rarely holds).
RAN_OK = f"{RAN} ok"
COMMAND_SEPARATOR = " · "
_OK = f"{OUTCOME}ok"
_LINE = re.compile(r"^- (" + "|".join([RAN_OK, *KINDS]) + r"): (.+)$")


def render(entries: list[Entry], *, left_out: int = 0) -> str:
    """The section for `entries` (none: only the left-out line, or nothing)."""
    lines: list[str] = []
    for kind in KINDS:
        of_kind = sorted((e for e in entries if e.kind == kind), key=lambda e: e.order)
        if not of_kind:
            continue
        if kind in FILE_KINDS:
            lines.append(f"- {kind}: {FILE_SEPARATOR.join(e.text for e in of_kind)}")
        elif kind == RAN:
            # Commands that merely ran share one line: their outcome said once.
            ok = [e.text[: -len(_OK)] for e in of_kind if e.text.endswith(_OK)]
            lines.extend(f"- {kind}: {e.text}" for e in of_kind if not e.text.endswith(_OK))
            if ok:
                lines.append(f"- {RAN_OK}: {COMMAND_SEPARATOR.join(ok)}")
        else:
            lines.extend(f"- {kind}: {e.text}" for e in of_kind)
    if left_out > 0:
        lines.append(_LEFT_OUT.format(count=left_out))
    return "\n".join([HEADING, *lines]) if lines else ""


class Section(NamedTuple):
    prose: str  # the summary without its ledger section
    entries: list[Entry]  # the section's entries, read back
    left_out: int  # what its "(+N ... left out)" line says


def split(summary: str, *, order: int = 0) -> Section:
    """A summary's prose and its ledger section read back. Read-back text is untrusted: a line
    that is not an entry ends the section and stays in the prose."""
    lines = summary.split("\n")
    try:
        start = max(i for i, line in enumerate(lines) if line.strip() == HEADING)
    except ValueError:
        return Section(summary, [], 0)
    entries: list[Entry] = []
    left_out = 0
    end = start + 1
    for end in range(start + 1, len(lines) + 1):
        if end == len(lines):
            break
        line = lines[end].strip()
        match = _LINE.match(line)
        counted = _LEFT_OUT_LINE.match(line)
        if match:
            kind, text = match.groups()
            if kind == RAN_OK:
                parts = [f"{part}{_OK}" for part in text.split(COMMAND_SEPARATOR.strip())]
                kind = RAN
            else:
                parts = text.split(FILE_SEPARATOR) if kind in FILE_KINDS else [text]
            entries.extend(make_entry(kind, part, order) for part in parts if part.strip())
        elif counted:
            left_out = int(counted.group(1))
        else:
            break
    prose = "\n".join(lines[:start] + lines[end:]).rstrip("\n")
    return Section(prose, entries, left_out)


class LedgerCounts(msgspec.Struct, frozen=True):
    """What a stored summary's ledger section says of itself (status --json, the cache
    browser): the entries it restored (its prose did not state them) and those it had no room
    for. Both 0: no section (the prose stated everything, or the summary predates the ledger)."""

    restored: int = 0
    dropped: int = 0


def counts(summary: str) -> LedgerCounts:
    section = split(summary)
    return LedgerCounts(len(section.entries), section.left_out)
