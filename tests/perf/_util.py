"""Shared by the tests/perf scripts: Markdown tables and a side-by-side timer.

Not a benchmark itself (run_all.py skips files whose name starts with "_").
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A Markdown pipe table, padded so it also reads well in a terminal."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def per_call_seconds(
    fn: Callable[[], object], *, min_time: float = 0.2, repeat: int = 5, max_number: int = 10**6
) -> float:
    """Best of `repeat` runs of the mean time per call, the call count calibrated so each run
    lasts about `min_time` (timeit's method; the best run is the least disturbed one)."""
    number = 1
    while True:
        elapsed = _run(fn, number)
        if elapsed >= min_time / 10 or number >= max_number:
            break
        number = min(max_number, number * 10)
    number = max(1, min(max_number, round(number * min_time / max(elapsed, 1e-9))))
    return min(_run(fn, number) / number for _ in range(repeat))


def side_by_side(
    fns: Sequence[Callable[[], object]], *, min_time: float = 0.2, repeat: int = 5
) -> list[float]:
    """Per-call seconds of each fn, their runs interleaved so drift hits them alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for index, fn in enumerate(fns):
            best[index] = min(best[index], per_call_seconds(fn, min_time=min_time, repeat=1))
    return best


def _run(fn: Callable[[], object], number: int) -> float:
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(number):
            fn()
        return time.perf_counter() - start
    finally:
        if enabled:
            gc.enable()


def fmt_seconds(seconds: float) -> str:
    """A duration with a unit a reader can compare at a glance."""
    if seconds < 1e-6:
        return f"{seconds * 1e9:.0f} ns"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_usd(value: object) -> str:
    return f"${float(value):.4f}"  # type: ignore[arg-type]
