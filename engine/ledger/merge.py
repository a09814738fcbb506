"""Entries merged by identity: a re-compaction's ledger is the earlier one with the span's new
entries over it, so nothing the earlier summary kept is dropped for being old."""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from engine.ledger.model import FILE_STRENGTH, RESTATED_RANK, VALUE, Entry


def merge(earlier: Iterable[Entry], later: Iterable[Entry]) -> list[Entry]:
    """One entry per key, in the order each key was last seen: the later instance of an error or
    a command (its latest outcome) wins; a file keeps its strongest kind (edited over read). A
    value said again no more specifically (a recap's "a 3200 requests per second throttle"
    after "requests_per_second=3200", a crate's version in a tree after its compile time) wins
    too, and the earlier line stays beside it, ranked to fill only the room left."""
    merged: dict[str, Entry] = {}
    key_of: dict[str, str] = {}  # a value's text -> its key
    for entry in (*earlier, *later):
        if entry.kind == VALUE:
            # The same line under another key (one chosen for a figure in it, read back from
            # an earlier summary as its most specific value) is one entry: the later one, as
            # specific as the more specific of the two.
            other = key_of.get(entry.text, entry.key)
            if other != entry.key and other in merged and merged[other].text == entry.text:
                entry = msgspec.structs.replace(entry, rank=max(entry.rank, merged[other].rank))
                del merged[other]
            key_of[entry.text] = entry.key
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
        elif (
            previous is not None
            and entry.kind == VALUE
            and previous.rank >= entry.rank
            and previous.text != entry.text
        ):
            kept = msgspec.structs.replace(
                previous,
                key=f"{previous.key}@{previous.order}",
                rank=min(previous.rank, RESTATED_RANK),
            )
            merged[kept.key] = kept
            key_of[kept.text] = kept.key
        merged[entry.key] = entry
    return list(merged.values())
