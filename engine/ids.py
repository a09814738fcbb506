"""Fresh message ids for what a compaction puts in the history (summaries, fillers, notices).

The one place that reads the clock and the pid for an id: engine.policy takes an id maker as an
argument (engine.policy.splice.NewId), so its splices are pure and a test can give fixed ids."""

from __future__ import annotations

import itertools
import os
import time

_counter = itertools.count()


def next_monotonic_id(prefix: str = "m") -> str:
    """Sortable, unique within a process and across processes: time, pid, then a counter."""
    return f"{prefix}{time.time_ns():020d}-{os.getpid():07d}-{next(_counter):06d}"
