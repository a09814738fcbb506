"""Inspecting an agent transcript: import and first frame for a 100 MB Claude Code log,
and the cost of each append while it is tailed.

- import: `TranscriptSource.load` on the file, split into its parts (the tail reading and
  importing every line; our projection over the whole recording; the in-memory session), with
  the process's peak RSS after it;
- first frame: the real app (`MetisInspector`, headless `run_test` at 100x30) from start until
  the dashboard shows the session's last message;
- per append: the agent writes one turn (five records, one of them a block joining an assistant
  message already shown); the cost is one source poll plus the app's `SessionData.grow`, on the
  100 MB log and on a 1 MB one: the ratio says O(new lines), not O(history). Then the same in the
  running app: from the write until the message count on screen moves.

    python tests/perf/bench_transcript.py           # 100 MB
    python tests/perf/bench_transcript.py --quick   # 5 MB (seconds)

The log is made by tests/transcript_writer.py (synthetic, Claude Code's record layout).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _util import table  # noqa: E402

from engine import CompactionConfig  # noqa: E402
from metis_compaction_tui.app import MetisInspector  # noqa: E402
from metis_compaction_tui.sources.transcript import TranscriptSource  # noqa: E402
from tests.app.transcript_helpers import consume  # noqa: E402
from tests.transcript_writer import ClaudeCodeWriter  # noqa: E402

CONFIG = CompactionConfig(
    compaction_model="local:extractive",
    compaction_threshold_tokens=150_000,
    compaction_hard_cap_tokens=190_000,
)
TARGETS = {"import_s_per_100mb": 10.0, "first_frame_s": 15.0, "ratio": 1.2}


def write_log(path: Path, size: int, seed: int = 1) -> ClaudeCodeWriter:
    writer = ClaudeCodeWriter(seed, compact_every=400)
    with path.open("w") as out:
        out.writelines(writer.turns_until(size))
    return writer


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def import_figures(path: Path, scratch: Path) -> tuple[dict[str, float], int]:
    source = TranscriptSource([path], scratch=scratch, config=CONFIG)
    recording = source.recordings[path.stem]
    started = time.perf_counter()
    update = recording.tail.poll()
    read = time.perf_counter()
    recording.apply(True, 0, update.messages)  # our token counts and the projection
    applied = time.perf_counter()
    recording.compactions = list(update.agent_compactions)
    recording.take_usage(0, update.recorded_usage)
    recording.read = True
    source._rebuild(recording)
    built = time.perf_counter()
    data = source.load(path.stem)
    loaded = time.perf_counter()
    return {
        "read and import every line": read - started,
        "token counts and projection": applied - read,
        "in-memory session": built - applied,
        "SessionData for the dashboard": loaded - built,
        "total": loaded - started,
    }, data.message_count


async def first_frame(path: Path, scratch: Path) -> tuple[float, int]:
    source = TranscriptSource([path], scratch=scratch, config=CONFIG)
    app = MetisInspector(source, poll_interval_s=0.05)
    started = time.perf_counter()
    async with app.run_test(size=(100, 30)) as pilot:
        while True:
            data = app.data
            messages = app.query("#messages")
            if data is not None and messages and messages.first().row_count() == len(data.history):
                break
            await pilot.pause(0.01)
        await pilot.pause()
        elapsed = time.perf_counter() - started
        return elapsed, len(app.data.history) if app.data else 0


def append_costs(logs: list[tuple[Path, Path, ClaudeCodeWriter]], count: int) -> list[list[float]]:
    """Seconds per append on each log: one turn written, then one poll and grow (what the feed
    and the UI thread do with it). The logs take turns, one append each, so a machine busy with
    other work weighs on every log alike and the ratio stays a ratio."""
    opened = []
    for path, scratch, writer in logs:
        source = TranscriptSource([path], scratch=scratch, config=CONFIG)
        opened.append([source, source.load(path.stem), path, writer])
    # As the app does once a session is shown (MetisInspector._settle_heap): what was loaded is
    # frozen out of the cyclic GC, whose full passes would otherwise walk all of it mid-append.
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    costs: list[list[float]] = [[] for _ in logs]
    for _ in range(count):
        for held, times in zip(opened, costs, strict=True):
            source, data, path, writer = held
            with path.open("a") as out:
                out.writelines(writer.turn())
            started = time.perf_counter()
            data = consume(source, data)
            data.plan  # noqa: B018 - the dashboard plans the turn on every update
            times.append(time.perf_counter() - started)
            held[1] = data
    return costs


async def on_screen_latency(
    path: Path, scratch: Path, writer: ClaudeCodeWriter, count: int
) -> list[float]:
    source = TranscriptSource([path], scratch=scratch, config=CONFIG)
    app = MetisInspector(source, poll_interval_s=0.05)
    latencies: list[float] = []
    async with app.run_test(size=(100, 30)) as pilot:
        while app.data is None:
            await pilot.pause(0.01)
        with path.open("a") as out:
            for _ in range(count):
                before = app.data.message_count
                out.writelines(writer.turn())
                out.flush()
                started = time.perf_counter()
                while app.data.message_count < before + 4:
                    await pilot.pause(0.002)
                latencies.append(time.perf_counter() - started)
    return latencies


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 5 MB log instead of 100 MB")
    args = parser.parse_args()
    big_mb = 5 if args.quick else 100
    appends = 20 if args.quick else 60
    with tempfile.TemporaryDirectory(prefix="bench-transcript-") as tmp:
        folder = Path(tmp)
        big, small = folder / "big.jsonl", folder / "small.jsonl"
        made = time.perf_counter()
        big_writer = write_log(big, big_mb * 1_000_000)
        small_writer = write_log(small, 1_000_000, seed=2)
        made = time.perf_counter() - made
        size_mb = big.stat().st_size / 1_000_000
        print(f"# Transcript inspection ({size_mb:.0f} MB Claude Code log)\n")
        print(f"Logs written in {made:.1f} s (not measured below).\n")

        parts, count = import_figures(big, folder / "scratch-a")
        rss = peak_rss_mb()
        print(f"## Import of {size_mb:.0f} MB: {count:,} messages\n")
        rows = [(name, f"{seconds:.2f} s") for name, seconds in parts.items()]
        rows.append(("peak RSS of this process after it", f"{rss:.0f} MB"))
        per_100 = parts["total"] * 100 / size_mb
        target = TARGETS["import_s_per_100mb"]
        rows.append(("per 100 MB", f"{per_100:.2f} s (target ≤ {target:.0f} s)"))
        print(table(["step", "time"], rows))

        frame, shown = asyncio.run(first_frame(big, folder / "scratch-b"))
        print(f"\n## First frame: the app on the {size_mb:.0f} MB log\n")
        print(
            table(
                ["figure", "value"],
                [
                    ("app start → dashboard shows the last message", f"{frame:.2f} s"),
                    ("messages in the list", f"{shown:,}"),
                    ("target", f"≤ {TARGETS['first_frame_s']:.0f} s"),
                ],
            )
        )

        big_costs, small_costs = append_costs(
            [(big, folder / "scratch-c", big_writer), (small, folder / "scratch-d", small_writer)],
            appends,
        )
        ratio = statistics.median(big_costs) / statistics.median(small_costs)
        print(f"\n## Per append while tailing ({appends} turns of 5 records each)\n")
        print(
            table(
                ["log", "median", "p95", "max"],
                [
                    (
                        f"{size_mb:.0f} MB",
                        ms(statistics.median(big_costs)),
                        ms(statistics.quantiles(big_costs, n=20)[-1]),
                        ms(max(big_costs)),
                    ),
                    (
                        "1 MB",
                        ms(statistics.median(small_costs)),
                        ms(statistics.quantiles(small_costs, n=20)[-1]),
                        ms(max(small_costs)),
                    ),
                ],
            )
        )
        print(
            f"\nratio of medians {size_mb:.0f} MB / 1 MB: {ratio:.2f} "
            f"(target ≤ {TARGETS['ratio']:.1f}: O(new lines))"
        )
        latencies = asyncio.run(
            on_screen_latency(big, folder / "scratch-e", big_writer, appends // 2)
        )
        print(
            f"\nIn the running app on the {size_mb:.0f} MB log (poll every 50 ms): write → on "
            f"screen median {ms(statistics.median(latencies))}, max {ms(max(latencies))}"
        )


if __name__ == "__main__":
    main()
