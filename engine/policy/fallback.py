"""§3.4 the fallback policy, in one place: what a failed compaction turns into.

At the hard cap (a forced compaction) the session degrades to truncation, whatever failed: the
call (adapter_error), the result (validation_failed), or the span itself (no_valid_boundary, or
a strategy with nothing left to remove). Below it the turn fails and the next turn retries.
"""

from __future__ import annotations

from typing import Literal

Fallback = Literal["truncate", "fail"]


def fallback(*, at_hard_cap: bool) -> Fallback:
    """What the manager does after any failure: `truncate` (§3.4, one failed event carrying
    truncated_message_count) or `fail` (one failed event, the history unchanged)."""
    return "truncate" if at_hard_cap else "fail"
