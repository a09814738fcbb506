"""The work ledger (DESIGN: summaries that keep the work): files, commands, errors and values a
compacted span held, kept by the engine beside whatever prose the summarizer wrote. Pure
functions over messages; no store, no model, no clock."""

from engine.ledger.apply import apply_ledger, ledger_reserve, stated
from engine.ledger.extract import extract
from engine.ledger.merge import merge
from engine.ledger.model import Entry, Ledger, LedgerResult
from engine.ledger.render import HEADING, LedgerCounts, Section, counts, render, split

__all__ = [
    "HEADING",
    "Entry",
    "Ledger",
    "LedgerCounts",
    "LedgerResult",
    "Section",
    "apply_ledger",
    "counts",
    "extract",
    "ledger_reserve",
    "merge",
    "render",
    "split",
    "stated",
]
