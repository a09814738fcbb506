"""The CLI's one rule for exit codes: a code says whether anything was
committed, and it is true. README "Exit codes" is this table.

    0    done. For compact, undo, cache evict/trim/clear and simulate: committed. Anything that
         went wrong after the commit (the report could not be written, a read-back failed) is a
         line on stderr, never a different code: the write happened.
    1    nothing done: nothing to compact, undo refused, a prompt declined, the compaction call
         failed, the span changed under us. Nothing written.
    2    bad usage, workspace, store, cache or input. Nothing written.
    3    the output could not be written (closed pipe, full disk). Nothing written.
    70   reserved for an unexpected error (no catch-all maps to it yet).
    130  interrupted (Ctrl-C) before any commit. Nothing written.

Every nonzero code means nothing was committed: `settle` turns any code into 0 once a commit was
noted, because a commit is atomic and a later failure does not undo it.
"""

from __future__ import annotations

OK = 0
NOTHING_DONE = 1
USAGE = 2
OUTPUT_LOST = 3
INTERNAL = 70
INTERRUPTED = 130


class _Ledger:
    """Whether this run has committed a write. One run per process (main resets it), so a plain
    object: a ContextVar set inside asyncio.run's task would not be seen outside it."""

    committed = False


_LEDGER = _Ledger()


def reset() -> None:
    _LEDGER.committed = False


def note_commit() -> None:
    """Call right after a write commits, before reporting it."""
    _LEDGER.committed = True


def committed() -> bool:
    return _LEDGER.committed


def settle(code: int) -> int:
    """The code to exit with: 0 once anything was committed, else `code`."""
    return OK if _LEDGER.committed else code
