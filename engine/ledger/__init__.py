"""The work ledger (DESIGN: summaries that keep the work): files, commands, errors and values a
compacted span held, kept by the engine beside whatever prose the summarizer wrote. Pure
functions over messages; no store, no model, no clock.

Reading a ledger back (`render`: what `status --json` and `cache show` count) loads with the
package; extracting one from a span (`extraction`, `apply`: the tool-output rules and their
patterns) loads on first use of its names (PEP 562)."""

from __future__ import annotations

import importlib

from engine.ledger.merge import merge
from engine.ledger.model import Entry, Ledger, LedgerResult
from engine.ledger.render import HEADING, LedgerCounts, Section, counts, render, split

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from engine.ledger.apply import apply_ledger, ledger_reserve, stated
    from engine.ledger.extraction import extract

# module -> the names it defines, loaded when first asked for
_LAZY: dict[str, tuple[str, ...]] = {
    "engine.ledger.apply": ("apply_ledger", "ledger_reserve", "stated"),
    "engine.ledger.extraction": ("extract",),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once loaded, a plain module attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOME))
