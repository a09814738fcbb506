"""The ledger held against the summary a summarizer wrote: the entries its prose does not state
are added as a section, most specific first, within the summary's token budget."""

from __future__ import annotations

from collections.abc import Callable

import msgspec

from engine.ledger.extraction import error_template, extract
from engine.ledger.merge import merge
from engine.ledger.model import ERROR, REPEAT_RANK, VALUE, Entry, Ledger, LedgerResult, squash
from engine.ledger.render import render, split

# At most this share of a summary's budget is kept from the summarizer's prose for the ledger
# (ledger_reserve); a prose shorter than its budget leaves the ledger more. Tuned on the mixed
# workload (200 turns, paid stand-in): planted facts kept by summarize/cached 11/12 with no
# reserve, 10/12 at 0.1, 9/12 at 0.2 (of the work entries' size), 7/12 reserving the whole
# ledger up to 0.35.
RESERVE_SHARE = 0.1
# A reserve that holds only a few entries costs the prose more than the section gains (set A at
# 300 tokens: artifacts kept 0.923 with no reserve, 0.904 with a tenth): below this, none.
MIN_RESERVE_TOKENS = 100
# Entries past the first that did not fit tried for the room left (each a count of the summary).
_MORE_TRIES = 32


def stated(entry: Entry, prose: str) -> bool:
    """The prose already says it: each needle appears (case and spacing aside)."""
    return all(squash(needle).lower() in prose for needle in entry.needles)


def _repeats_ranked_down(missing: list[Entry], said: list[Entry]) -> list[Entry]:
    """An error whose template the prose already states with another instance ("could not
    obtain lock on relation X" for another X) tells less than a command that ran: it ranks as a
    repeat within one output does (extraction._errors), filling what room is left."""
    templates = {error_template(e.text) for e in said if e.kind == ERROR}
    return [
        msgspec.structs.replace(e, rank=min(e.rank, REPEAT_RANK))
        if e.kind == ERROR and error_template(e.text) in templates
        else e
        for e in missing
    ]


def _ranked(entries: list[Entry]) -> list[Entry]:
    # Most specific first; of equals, the latest (closest to where work resumes).
    return sorted(entries, key=lambda e: (-e.rank, -e.order, e.key))


def apply_ledger(
    summary_text: str,
    span_messages: tuple,
    prior_ledger: Ledger | None,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
) -> LedgerResult:
    """`summary_text` with a "Work ledger:" section of what its prose leaves out, never over
    `budget_tokens` as `count_tokens` counts the whole summary. When the section cannot hold
    every entry, the least specific go (a shorter one ranked below an entry too long for the
    room left still goes in) and its last line says how many. No section when the prose states
    everything (or when even the count line does not fit). A prose that is already over the
    budget is returned as it is: holding it to the budget is the caller's rule."""
    prose = split(summary_text).prose.rstrip()
    entries = extract(tuple(span_messages))
    if prior_ledger is not None:
        entries = merge(prior_ledger.entries, entries)
    ledger = Ledger(tuple(entries))
    lowered = squash(prose).lower()
    said: list[Entry] = []
    unsaid: list[Entry] = []
    for entry in entries:
        (said if stated(entry, lowered) else unsaid).append(entry)
    missing = _ranked(_repeats_ranked_down(unsaid, said))
    if not missing or not prose.strip():
        # An empty summary is the summarizer's failure, reported as one (not a bare ledger).
        return LedgerResult(prose, ledger, 0, len(missing) if not prose.strip() else 0)

    def with_entries(kept: list[Entry]) -> str:
        return f"{prose}\n\n{render(kept, left_out=len(missing) - len(kept))}"

    def fits(count: int) -> bool:
        return count_tokens(with_entries(missing[:count])) <= budget_tokens

    if not fits(0):  # not even the count line
        return LedgerResult(prose, ledger, 0, len(missing))
    # The largest prefix of the ranking that fits (a section grows with its entries).
    low, high = 0, len(missing)
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    # The room the next entry was too long for still holds shorter ones further down the
    # ranking (a file beside a long command): each that fits goes in, in rank order.
    kept = missing[:low]
    for entry in missing[low + 1 : low + 1 + _MORE_TRIES]:
        tried = [*kept, entry]
        if count_tokens(with_entries(tried)) <= budget_tokens:
            kept = tried
    return LedgerResult(with_entries(kept), ledger, len(kept), len(missing) - len(kept))


def ledger_reserve(
    span_messages: tuple, budget_tokens: int, count_tokens: Callable[[str], int]
) -> int:
    """Tokens to leave out of the summarizer's own budget for the ledger: the size of its work
    entries (files, commands, errors: what prose loses first and cannot be asked again), at most
    RESERVE_SHARE of the budget. Values are not reserved for: a summary's prose states most of
    them, and the room it leaves holds the rest. A function of the span alone, so the same span
    asks the same of the summarizer (and hits the same cache row)."""
    room = int(budget_tokens * RESERVE_SHARE)
    work = [e for e in extract(tuple(span_messages)) if e.kind != VALUE]
    if not work or room < MIN_RESERVE_TOKENS:
        return 0
    return min(count_tokens(render(work)), room)
