"""Entries merged by identity: a re-compaction's ledger is the earlier one with the span's new
entries over it, so nothing the earlier summary kept is dropped for being old."""

from __future__ import annotations

from collections.abc import Iterable

from engine.ledger.model import FILE_STRENGTH, Entry


def merge(earlier: Iterable[Entry], later: Iterable[Entry]) -> list[Entry]:
    """One entry per key, in the order each key was last seen: the later instance of an error or
    a command (its latest outcome) wins; a file keeps its strongest kind (edited over read)."""
    merged: dict[str, Entry] = {}
    for entry in (*earlier, *later):
        previous = merged.pop(entry.key, None)
        if (
            previous is not None
            and previous.kind in FILE_STRENGTH
            and entry.kind in FILE_STRENGTH
            and FILE_STRENGTH[previous.kind] > FILE_STRENGTH[entry.kind]
        ):
            entry = previous.__class__(
                previous.kind, previous.text, previous.key, previous.needles, previous.rank,
                max(previous.order, entry.order),
            )  # fmt: skip
        merged[entry.key] = entry
    return list(merged.values())
